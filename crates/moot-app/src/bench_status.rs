//! How far a benchmark is — debates done, running, pending and failed — and how fast each of
//! its workers goes (`moot bench status NAME`), read from any machine sharing the store.

use anyhow::Result;
use moot_store::{BenchRecord, JobCounts, JobState, RunStatus, Store, StoreError, WorkerRecord};
use serde_json::{json, Value};

/// A worker not seen for this long is taken for stopped (killed, or cut off from the store).
const SILENT_AFTER_MS: i64 = 120_000;

/// A benchmark's progress.
#[derive(Debug, Clone)]
pub struct BenchStatus {
    pub bench: BenchRecord,
    /// Planned for workers (`moot bench --detach`): the counts are its jobs'. Otherwise they are
    /// its debates', as the one process running it left them.
    pub worked: bool,
    pub counts: JobCounts,
    pub workers: Vec<WorkerStatus>,
}

/// One worker as the status shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkerStatus {
    #[serde(flatten)]
    pub record: WorkerRecord,
    /// `working`, `exited`, `gone` (its process on this machine ended without exiting: killed
    /// or crashed), or `silent` (not seen for two minutes: gone, or cut off from the store).
    pub state: &'static str,
    pub seen_ms_ago: i64,
    pub debates_per_minute: f64,
    pub calls_per_second: f64,
}

impl WorkerStatus {
    fn new(record: WorkerRecord, now_ms: i64) -> WorkerStatus {
        let w = &record;
        let seconds = ((w.last_seen - w.started_at) as f64 / 1000.0).max(1e-3);
        let seen_ms_ago = (now_ms - w.last_seen).max(0);
        let state = if w.exited {
            "exited"
        } else if w.gone() {
            "gone"
        } else if seen_ms_ago > SILENT_AFTER_MS {
            "silent"
        } else {
            "working"
        };
        WorkerStatus {
            state,
            seen_ms_ago,
            debates_per_minute: w.debates as f64 * 60.0 / seconds,
            calls_per_second: w.calls as f64 / seconds,
            record,
        }
    }
}

impl BenchStatus {
    /// The status of the benchmark `name`; a benchmark the store does not hold is an
    /// [`crate::InputError`].
    pub async fn load(store: &dyn Store, name: &str) -> Result<BenchStatus> {
        let bench = match store.bench(name).await {
            Err(StoreError::BenchNotFound(name)) => {
                return Err(crate::not_found::NotFound::bench(&name).into())
            }
            other => other?,
        };
        let mut counts = store.job_counts(name).await?;
        let worked = counts.total() > 0;
        if !worked {
            let now_ms = counts.now_ms;
            counts = counts_from_runs(store, name).await?;
            counts.now_ms = now_ms;
        }
        let mut workers = store.bench_workers(name).await?;
        if worked {
            // The jobs say who finished what; a worker's own totals lag behind by up to a write
            // (one killed between finishing a debate and reporting it would undercount).
            let mut finished = std::collections::HashMap::new();
            for job in store.bench_jobs(name).await? {
                if let (JobState::Done, Some(worker)) = (job.state, job.worker) {
                    *finished.entry(worker).or_insert(0u64) += 1;
                }
            }
            for w in &mut workers {
                w.debates = finished.get(&w.worker).copied().unwrap_or(0);
            }
        }
        let workers = workers
            .into_iter()
            .map(|w| WorkerStatus::new(w, counts.now_ms))
            .collect();
        Ok(BenchStatus {
            bench,
            worked,
            counts,
            workers,
        })
    }

    /// As `moot bench status --json` prints it.
    pub fn json(&self) -> Value {
        json!({
            "bench": self.bench.name,
            "dataset": self.bench.dataset,
            "protocols": self.bench.protocols,
            "worked": self.worked,
            "counts": self.counts,
            "total": self.counts.total(),
            "workers": self.workers,
        })
    }
}

/// The counts of a benchmark run by one `moot bench` (no jobs): from its linked debates.
async fn counts_from_runs(store: &dyn Store, name: &str) -> Result<JobCounts, StoreError> {
    let mut counts = JobCounts::default();
    for (_, run) in store.bench_runs(name).await? {
        match run.status {
            RunStatus::Done => counts.done += 1,
            RunStatus::Running => counts.running += 1,
            RunStatus::Failed => counts.failed += 1,
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_benchmark_the_store_does_not_hold_is_the_users_error() {
        let store = moot_store::MemoryStore::default();
        let e = BenchStatus::load(&store, "b").await.expect_err("refused");
        assert_eq!(
            e.downcast_ref::<crate::not_found::NotFound>(),
            Some(&crate::not_found::NotFound::bench("b"))
        );
        assert_eq!(crate::error::kind_of(&e), crate::error::ErrorKind::Input);
    }
}
