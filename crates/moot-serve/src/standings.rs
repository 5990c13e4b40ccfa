//! Where each benchmark stands, read once and shared by every request.
//!
//! A benchmark's page, its plots and the list of benchmarks each need every debate's status
//! (and, for the report, a digest of the benchmark's state). Read per request, a 6,000-debate
//! benchmark's runs were read whole by every request: 32 plot requests at once took the server
//! from 73 MB to 2.74 GB. Here a benchmark's standing is read once per change of its debates
//! (the store's [`bench_version`](moot_store::Store::bench_version), one query) and shared by
//! every request while its debates stay as they were (those that come while it is being read
//! wait for that reading); it holds only what the pages show: each debate's link, status and
//! the first 40 characters of its answer. Each run is read and dropped in turn, so reading one
//! holds one run at a time besides the standing.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use futures::future::FutureExt;
use moot_store::{BenchItemRecord, RunStatus, Store};

use crate::shelf::Shelf;

/// The characters of an answer a page shows.
pub const ANSWER_SHOWN: usize = 40;

/// Where a benchmark stands: linked debates by status, out of the planned number when known.
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct Progress {
    pub done: usize,
    pub running: usize,
    pub failed: usize,
    /// Items × protocols when the benchmark has a limit; else unknown.
    pub planned: Option<u64>,
}

/// One debate of a benchmark, as its pages show it.
#[derive(Debug, Clone)]
pub struct Row {
    pub link: BenchItemRecord,
    pub status: RunStatus,
    /// The first line of its answer, at most [`ANSWER_SHOWN`] characters.
    pub answer: Option<String>,
}

/// Where a benchmark stands.
#[derive(Debug)]
pub struct Standing {
    pub progress: Progress,
    pub rows: Vec<Row>,
    /// A digest of each debate's link and of what its run says of it (status, whole answer,
    /// finishing time): a report made for another state is made again.
    pub state: u64,
}

/// A standing, or why it could not be read (as text: it is shared).
pub type Read = Result<Arc<Standing>, String>;

/// The standings kept.
pub struct Standings {
    store: Arc<dyn Store>,
    kept: Shelf<String, Read>,
}

impl Standings {
    pub fn new(store: Arc<dyn Store>) -> Standings {
        Standings {
            store,
            kept: Shelf::new(),
        }
    }

    /// Benchmark `name`'s standing (`planned`: its planned number of debates, when known): the
    /// one kept or being read for its debates as they are now, else a new reading.
    pub async fn get(&self, name: &str, planned: Option<u64>) -> Read {
        let version = self
            .store
            .bench_version(name)
            .await
            .map_err(|e| e.to_string())?;
        let standing = self
            .kept
            .share(name, version.clone(), Duration::MAX, || {
                Ok::<_, std::convert::Infallible>(
                    read(self.store.clone(), name.to_string(), planned).boxed(),
                )
            })
            .unwrap_or_else(|never| match never {});
        let read = standing.await;
        if read.is_err() {
            self.kept.forget(name, &version);
        }
        read
    }
}

/// Reads benchmark `name`'s standing from the store, one run at a time.
async fn read(store: Arc<dyn Store>, name: String, planned: Option<u64>) -> Read {
    let links = store.bench_items(&name).await.map_err(|e| e.to_string())?;
    let mut progress = Progress {
        done: 0,
        running: 0,
        failed: 0,
        planned,
    };
    let mut digest = DefaultHasher::new();
    links.len().hash(&mut digest);
    let mut rows = Vec::with_capacity(links.len());
    for link in links {
        let run = store.run(&link.run_id).await.map_err(|e| e.to_string())?;
        (&link.protocol, &link.item_id, link.position, &link.gold).hash(&mut digest);
        (&run.id, run.status.as_str(), &run.answer, &run.finished_at).hash(&mut digest);
        match run.status {
            RunStatus::Done => progress.done += 1,
            RunStatus::Running => progress.running += 1,
            RunStatus::Failed => progress.failed += 1,
        }
        rows.push(Row {
            link,
            status: run.status,
            answer: run.answer.as_deref().map(first_line),
        });
    }
    Ok(Arc::new(Standing {
        progress,
        rows,
        state: digest.finish(),
    }))
}

/// The first line of `text`, at most [`ANSWER_SHOWN`] characters.
pub fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(ANSWER_SHOWN)
        .collect()
}
