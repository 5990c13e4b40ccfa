//! What a store holds, most recent first (`moot list`): each run asked on its own (an ask, a
//! fork, an import) as one entry and each benchmark as one entry with its accuracy, or one
//! benchmark's debates. Built on the store's own listings (`list_runs`, `list_benches`,
//! `bench_runs`), as the server's index pages are.

use anyhow::Result;
use moot_store::{BenchRecord, RunFilter, RunRecord, RunStatus, Store, StoreError};
use serde::Serialize;

use crate::not_found::NotFound;

/// The status an entry is shown with, and the one `--status` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Done,
    Running,
    /// Not finished and nothing runs it (`moot resume` goes on with it).
    Interrupted,
    Failed,
    /// A benchmark planned for workers (`moot bench --detach`) none has started: `moot work
    /// NAME` runs it.
    Planned,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Done => "done",
            Status::Running => "running",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
            Status::Planned => "planned",
        }
    }

    fn of_run(run: &RunRecord) -> Status {
        match run.status {
            _ if run.interrupted() => Status::Interrupted,
            RunStatus::Done => Status::Done,
            RunStatus::Running => Status::Running,
            RunStatus::Failed => Status::Failed,
        }
    }
}

/// What to list.
#[derive(Debug, Clone)]
pub struct ListRequest {
    /// Runs outside benchmarks.
    pub runs: bool,
    pub benches: bool,
    /// Only the debates of this benchmark (then `runs` and `benches` are not read).
    pub bench: Option<String>,
    /// Runs of this protocol, and benchmarks that ran it.
    pub protocol: Option<String>,
    pub status: Option<Status>,
    /// Created at or after this time (an RFC 3339 prefix such as `2026-11-23`).
    pub since: Option<String>,
    /// The most entries returned; `None`: all.
    pub limit: Option<usize>,
}

/// One protocol's score in a benchmark: its finished debates and how many chose the right
/// answer, re-decided as `moot report` does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Accuracy {
    pub protocol: String,
    pub correct: usize,
    pub total: usize,
}

/// One entry of the listing.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Entry {
    Run {
        id: String,
        protocol: String,
        status: Status,
        answer: Option<String>,
        question: String,
        created_at: String,
        /// The benchmark it is a debate of (`--bench`).
        #[serde(skip_serializing_if = "Option::is_none")]
        bench: Option<String>,
    },
    Benchmark {
        name: String,
        dataset: String,
        protocols: Vec<String>,
        status: Status,
        /// Debates finished, of those planned when the store knows how many (else of those
        /// started).
        done: u64,
        planned: u64,
        accuracy: Vec<Accuracy>,
        created_at: String,
    },
}

impl Entry {
    pub fn created_at(&self) -> &str {
        match self {
            Entry::Run { created_at, .. } | Entry::Benchmark { created_at, .. } => created_at,
        }
    }
}

/// What [`list`] found: the entries shown, and how many more matched.
#[derive(Debug, Clone)]
pub struct Listing {
    pub entries: Vec<Entry>,
    pub more: usize,
}

/// Runs read from the store at a time.
const PAGE: u32 = 500;

/// The entries `request` asks for, most recent first. A benchmark's accuracy is read (its
/// debates re-decided) only for the benchmarks shown.
pub async fn list(store: &dyn Store, request: &ListRequest) -> Result<Listing> {
    if let Some(name) = &request.bench {
        return bench_debates(store, name, request).await;
    }
    let limit = request.limit.unwrap_or(usize::MAX);
    // Every benchmark that matches, with its standing: there are few.
    let mut benches: Vec<(BenchRecord, Standing)> = Vec::new();
    if request.benches {
        for bench in store.list_benches().await? {
            let protocol = request
                .protocol
                .as_ref()
                .is_none_or(|p| bench.protocols.contains(p));
            let since = request
                .since
                .as_ref()
                .is_none_or(|s| bench.created_at.as_str() >= s.as_str());
            if !(protocol && since) {
                continue;
            }
            let standing = standing(store, &bench).await?;
            if request.status.is_none_or(|s| s == standing.status) {
                benches.push((bench, standing));
            }
        }
    }
    // The newest `limit` runs that match, and how many match in all.
    let (mut runs, mut matched) = (Vec::new(), benches.len());
    if request.runs {
        let mut filter = RunFilter {
            protocol: request.protocol.clone(),
            from: request.since.clone(),
            outside_benches: true,
            ..RunFilter::newest(PAGE)
        };
        loop {
            let page = store.list_runs(&filter).await?;
            let read = page.len();
            for run in page {
                if request.status.is_none_or(|s| s == Status::of_run(&run)) {
                    matched += 1;
                    if runs.len() < limit {
                        runs.push(run_entry(run, None));
                    }
                }
            }
            if read < PAGE as usize {
                break;
            }
            filter.offset += PAGE;
        }
    }
    // Newest first, runs and benchmarks together; a benchmark's accuracy only once it is shown.
    let mut found: Vec<Found> = runs
        .into_iter()
        .map(Found::Run)
        .chain(benches.into_iter().map(|(b, s)| Found::Bench(b, s)))
        .collect();
    found.sort_by(|a, b| b.created_at().cmp(a.created_at()));
    found.truncate(limit);
    let mut shown = Vec::with_capacity(found.len());
    for entry in found {
        shown.push(match entry {
            Found::Run(run) => run,
            Found::Bench(bench, standing) => Entry::Benchmark {
                accuracy: accuracy(store, &bench.name).await?,
                name: bench.name,
                dataset: bench.dataset,
                protocols: bench.protocols,
                status: standing.status,
                done: standing.done,
                planned: standing.planned,
                created_at: bench.created_at,
            },
        });
    }
    Ok(Listing {
        more: matched - shown.len(),
        entries: shown,
    })
}

/// A run entry, or a benchmark whose accuracy is not read yet.
enum Found {
    Run(Entry),
    Bench(BenchRecord, Standing),
}

impl Found {
    fn created_at(&self) -> &str {
        match self {
            Found::Run(entry) => entry.created_at(),
            Found::Bench(bench, _) => &bench.created_at,
        }
    }
}

/// Benchmark `name`'s debates, as runs.
async fn bench_debates(store: &dyn Store, name: &str, request: &ListRequest) -> Result<Listing> {
    let linked = match store.bench_runs(name).await {
        Ok(linked) => linked,
        Err(e) => return Err(e.into()),
    };
    if linked.is_empty() {
        match store.bench(name).await {
            Err(StoreError::BenchNotFound(_)) => return Err(NotFound::bench(name).into()),
            other => {
                other?;
            }
        }
    }
    let mut entries: Vec<Entry> = linked
        .into_iter()
        .filter(|(link, run)| {
            request
                .protocol
                .as_ref()
                .is_none_or(|p| &link.protocol == p)
                && request.status.is_none_or(|s| s == Status::of_run(run))
                && request
                    .since
                    .as_ref()
                    .is_none_or(|s| run.created_at.as_str() >= s.as_str())
        })
        .map(|(_, run)| run_entry(run, Some(name)))
        .collect();
    entries.sort_by(|a, b| b.created_at().cmp(a.created_at()));
    let limit = request.limit.unwrap_or(usize::MAX);
    let more = entries.len().saturating_sub(limit);
    entries.truncate(limit);
    Ok(Listing { entries, more })
}

fn run_entry(run: RunRecord, bench: Option<&str>) -> Entry {
    Entry::Run {
        status: Status::of_run(&run),
        id: run.id,
        protocol: run.protocol,
        answer: run.answer,
        question: run.question,
        created_at: run.created_at,
        bench: bench.map(str::to_string),
    }
}

/// Where a benchmark stands: its status, debates done and planned.
#[derive(Debug, Clone, Copy)]
struct Standing {
    status: Status,
    done: u64,
    planned: u64,
}

/// A benchmark's standing from its jobs when workers run it (`moot bench --detach`), else from
/// its linked debates, out of items × protocols when it has a limit. Any failed debate makes
/// it failed; else any running one running; else all planned done is done, and anything less
/// interrupted.
async fn standing(store: &dyn Store, bench: &BenchRecord) -> Result<Standing, StoreError> {
    let jobs = store.job_counts(&bench.name).await?;
    let (done, running, failed, started) = if jobs.total() > 0 {
        (jobs.done, jobs.running, jobs.failed, jobs.total())
    } else {
        let (mut done, mut running, mut failed, mut started) = (0, 0, 0, 0);
        for (_, run) in store.bench_runs(&bench.name).await? {
            started += 1;
            match Status::of_run(&run) {
                Status::Done => done += 1,
                Status::Running => running += 1,
                Status::Failed => failed += 1,
                Status::Interrupted | Status::Planned => {}
            }
        }
        (done, running, failed, started)
    };
    let planned = bench
        .limit
        // Stored numbers are data: a limit near u64::MAX must not overflow.
        .map(|l| l.saturating_mul(bench.protocols.len() as u64))
        .unwrap_or(0)
        .max(started);
    let status = if failed > 0 {
        Status::Failed
    } else if running > 0 {
        Status::Running
    } else if done >= planned {
        Status::Done
    } else if jobs.total() > 0 && done == 0 {
        Status::Planned
    } else {
        Status::Interrupted
    };
    Ok(Standing {
        status,
        done,
        planned,
    })
}

/// Each protocol's finished debates and right answers, in the benchmark's protocol order, as
/// `moot report` grades them.
async fn accuracy(store: &dyn Store, name: &str) -> Result<Vec<Accuracy>> {
    let loaded = crate::bench_report::load(store, name).await?;
    Ok(loaded
        .record
        .protocols
        .iter()
        .map(|protocol| {
            let mine = loaded.results.iter().filter(|r| &r.protocol == protocol);
            let (mut correct, mut total) = (0, 0);
            for result in mine {
                total += 1;
                let item = loaded.items.iter().find(|i| i.id == result.item_id);
                if item.is_some_and(|i| result.correct(i)) {
                    correct += 1;
                }
            }
            Accuracy {
                protocol: protocol.clone(),
                correct,
                total,
            }
        })
        .collect())
}

/// `--since`: a date or time as stored (an RFC 3339 prefix: `2026-11-23`, `2026-11-23T10:00`),
/// or a span before now (`3d`, `12h`, `1w`), as the RFC 3339 prefix it stands for. `None` when
/// it is neither.
pub fn since(given: &str, now: std::time::SystemTime) -> Option<String> {
    let given = given.trim();
    let date = given.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        date.get(r)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    if digits(0..4)
        && (date.len() == 4
            || (date.get(4) == Some(&b'-')
                && digits(5..7)
                && (date.len() == 7
                    || (date.get(7) == Some(&b'-')
                        && digits(8..10)
                        && (date.len() == 10 || date.get(10) == Some(&b'T'))))))
    {
        // A real date and time (no 13th month, no 25th hour, no 30 February): the prefix
        // completed to a whole time must read as one.
        const START: &str = "0000-01-01T00:00:00";
        let whole = if given.len() < START.len() {
            format!("{given}{}", &START[given.len()..])
        } else {
            given.to_string()
        };
        return humantime::parse_rfc3339_weak(&whole)
            .ok()
            .map(|_| given.to_string());
    }
    let span = humantime::parse_duration(given).ok()?;
    let at = now.checked_sub(span)?;
    Some(humantime::format_rfc3339_millis(at).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_date_prefix_or_a_span_before_now_and_nothing_else() {
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(86_400 * 10);
        assert_eq!(since("2026-11-23", now).as_deref(), Some("2026-11-23"));
        for impossible in [
            "2026-13-01",
            "2026-12-08T25:00",
            "2026-02-30",
            "2026-11-23T10:61",
        ] {
            assert_eq!(since(impossible, now), None, "{impossible}");
        }
        assert_eq!(
            since("2026-11-23T10:00", now).as_deref(),
            Some("2026-11-23T10:00")
        );
        assert_eq!(since("2024-02-29", now).as_deref(), Some("2024-02-29"));
        assert_eq!(since("2026-11", now).as_deref(), Some("2026-11"));
        assert_eq!(
            since("2026-11-23T10:00", now).as_deref(),
            Some("2026-11-23T10:00")
        );
        assert_eq!(
            since("2d", now).as_deref(),
            Some("1970-01-09T00:00:00.000Z")
        );
        for bad in ["yesterday", "23-11-2026", "2026/11/23", "", "2026-1"] {
            assert_eq!(since(bad, now), None, "{bad:?}");
        }
    }
}
