//! An in-process store. For tests that run on paused time, where SQLite's pool timeouts (driven
//! by tokio timers while the database thread works) would fire instantly; everything else uses
//! the SQLite store.

use std::sync::Mutex;

use async_trait::async_trait;

use crate::error::StoreError;
use crate::queries::lease_ms;
use crate::records::{
    sort_bench_items, BenchItemRecord, BenchJobRecord, BenchRecord, CallRecord, DecisionRecord,
    JobCounts, JobState, RunFilter, RunRecord, RunStatus, ValidationRecord, WorkerRecord,
};
use crate::store::Store;

#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    runs: Vec<RunRecord>,
    calls: Vec<CallRecord>,
    decisions: Vec<DecisionRecord>,
    validations: Vec<ValidationRecord>,
    benches: Vec<BenchRecord>,
    bench_items: Vec<BenchItemRecord>,
    /// Each response with the order it was stored in, for trimming the oldest.
    cache: std::collections::HashMap<String, (u64, serde_json::Value)>,
    cache_stored: u64,
    jobs: Vec<BenchJobRecord>,
    workers: Vec<WorkerRecord>,
}

/// The process's clock in ms since the epoch (the memory store's "database clock").
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The records of `items` that `keep` keeps, sorted by `order`.
fn sorted_where<T: Clone>(
    items: &[T],
    keep: impl Fn(&T) -> bool,
    order: impl FnMut(&T, &T) -> std::cmp::Ordering,
) -> Vec<T> {
    let mut kept: Vec<T> = items.iter().filter(|x| keep(x)).cloned().collect();
    kept.sort_by(order);
    kept
}

/// Whether `job` is the one `other` names.
fn same_job(job: &BenchJobRecord, other: &BenchJobRecord) -> bool {
    job.bench == other.bench && job.protocol == other.protocol && job.item_id == other.item_id
}

impl MemoryStore {
    fn with<T>(
        &self,
        f: impl FnOnce(&mut Inner) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut inner = self
            .inner
            .lock()
            .map_err(|_| StoreError::Location("memory store poisoned by a panic".into()))?;
        f(&mut inner)
    }
}

#[async_trait]
impl Store for MemoryStore {
    async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        self.with(|i| {
            i.runs.push(run.clone());
            Ok(())
        })
    }

    async fn record_call(&self, call: &CallRecord) -> Result<(), StoreError> {
        self.with(|i| {
            if !i.runs.iter().any(|r| r.id == call.run_id) {
                return Err(StoreError::RunNotFound(call.run_id.clone()));
            }
            let same = |c: &CallRecord| {
                c.run_id == call.run_id
                    && c.round == call.round
                    && c.agent == call.agent
                    && c.slot == call.slot
            };
            // A call with a response stays as first recorded (see Store::record_call).
            let answered = |c: &CallRecord| c.response_text.is_some() && !c.skipped;
            if i.calls.iter().any(|c| same(c) && answered(c)) {
                return Ok(());
            }
            i.calls.retain(|c| !same(c));
            i.calls.push(call.clone());
            Ok(())
        })
    }

    async fn record_decision(&self, d: &DecisionRecord) -> Result<(), StoreError> {
        self.with(|i| {
            i.decisions
                .retain(|x| !(x.run_id == d.run_id && x.rule == d.rule));
            i.decisions.push(d.clone());
            Ok(())
        })
    }

    async fn finish_run(
        &self,
        id: &str,
        status: RunStatus,
        answer: Option<&str>,
        at: &str,
    ) -> Result<(), StoreError> {
        self.with(|i| {
            let run = i
                .runs
                .iter_mut()
                .find(|r| r.id == id)
                .ok_or_else(|| StoreError::RunNotFound(id.to_string()))?;
            run.status = status;
            run.answer = answer.map(String::from);
            run.finished_at = Some(at.to_string());
            Ok(())
        })
    }

    async fn run(&self, id: &str) -> Result<RunRecord, StoreError> {
        self.with(|i| {
            i.runs
                .iter()
                .find(|r| r.id == id)
                .cloned()
                .ok_or_else(|| StoreError::RunNotFound(id.to_string()))
        })
    }

    async fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError> {
        self.with(|i| {
            Ok(sorted_where(
                &i.calls,
                |c| c.run_id == id,
                |a, b| (a.round, a.agent, &a.slot).cmp(&(b.round, b.agent, &b.slot)),
            ))
        })
    }

    async fn record_validation(&self, v: &ValidationRecord) -> Result<(), StoreError> {
        self.with(|i| {
            i.validations
                .retain(|x| !(x.run_id == v.run_id && x.answer == v.answer && x.check == v.check));
            i.validations.push(v.clone());
            Ok(())
        })
    }

    async fn validations(&self, id: &str) -> Result<Vec<ValidationRecord>, StoreError> {
        self.with(|i| {
            Ok(sorted_where(
                &i.validations,
                |v| v.run_id == id,
                |a, b| (&a.answer, &a.check).cmp(&(&b.answer, &b.check)),
            ))
        })
    }

    async fn decisions(&self, id: &str) -> Result<Vec<DecisionRecord>, StoreError> {
        self.with(|i| {
            Ok(sorted_where(
                &i.decisions,
                |d| d.run_id == id,
                |a, b| a.rule.cmp(&b.rule),
            ))
        })
    }

    async fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
        self.with(|i| {
            let mut runs: Vec<&RunRecord> = i.runs.iter().filter(|r| filter.matches(r)).collect();
            runs.sort_by(|a, b| (&b.created_at, &b.id).cmp(&(&a.created_at, &a.id)));
            Ok(runs
                .into_iter()
                .skip(filter.offset as usize)
                .take(filter.limit as usize)
                .cloned()
                .collect())
        })
    }

    async fn create_bench(&self, bench: &BenchRecord) -> Result<(), StoreError> {
        self.with(|i| {
            if i.benches.iter().any(|b| b.name == bench.name) {
                return Err(StoreError::BenchExists(bench.name.clone()));
            }
            i.benches.push(bench.clone());
            Ok(())
        })
    }

    async fn list_benches(&self) -> Result<Vec<BenchRecord>, StoreError> {
        self.with(|i| {
            let mut b = i.benches.clone();
            b.sort_by(|x, y| (&y.created_at, &x.name).cmp(&(&x.created_at, &y.name)));
            Ok(b)
        })
    }

    async fn bench(&self, name: &str) -> Result<BenchRecord, StoreError> {
        self.with(|i| {
            i.benches
                .iter()
                .find(|b| b.name == name)
                .cloned()
                .ok_or_else(|| StoreError::BenchNotFound(name.to_string()))
        })
    }

    async fn record_bench_item(&self, item: &BenchItemRecord) -> Result<(), StoreError> {
        self.with(|i| {
            if !i.benches.iter().any(|b| b.name == item.bench) {
                return Err(StoreError::BenchNotFound(item.bench.clone()));
            }
            i.bench_items.retain(|x| {
                !(x.bench == item.bench && x.protocol == item.protocol && x.item_id == item.item_id)
            });
            i.bench_items.push(item.clone());
            Ok(())
        })
    }

    async fn cache_get(&self, key: &str) -> Result<Option<serde_json::Value>, StoreError> {
        self.with(|i| Ok(i.cache.get(key).map(|(_, v)| v.clone())))
    }

    async fn cache_put(&self, key: &str, response: &serde_json::Value) -> Result<(), StoreError> {
        self.with(|i| {
            let order = i.cache_stored;
            if let std::collections::hash_map::Entry::Vacant(e) = i.cache.entry(key.to_string()) {
                e.insert((order, response.clone()));
                i.cache_stored += 1;
            }
            Ok(())
        })
    }

    async fn cache_trim(&self, keep: u64) -> Result<u64, StoreError> {
        self.with(|i| {
            let mut order: Vec<u64> = i.cache.values().map(|(o, _)| *o).collect();
            order.sort_unstable_by(|a, b| b.cmp(a));
            let Some(&oldest_kept) = order.get(keep.saturating_sub(1) as usize) else {
                return Ok(0);
            };
            let before = i.cache.len();
            i.cache.retain(|_, (o, _)| *o >= oldest_kept && keep > 0);
            Ok((before - i.cache.len()) as u64)
        })
    }

    async fn cache_entries(&self) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
        self.with(|i| {
            let mut entries: Vec<_> = i
                .cache
                .iter()
                .map(|(k, (order, v))| (*order, k.clone(), v.clone()))
                .collect();
            entries.sort_by_key(|(order, _, _)| *order);
            Ok(entries.into_iter().map(|(_, k, v)| (k, v)).collect())
        })
    }

    async fn plan_jobs(&self, jobs: &[BenchJobRecord]) -> Result<u64, StoreError> {
        self.with(|i| {
            let mut added = 0;
            for job in jobs {
                if !i.benches.iter().any(|b| b.name == job.bench) {
                    return Err(StoreError::BenchNotFound(job.bench.clone()));
                }
                if !i.jobs.iter().any(|j| same_job(j, job)) {
                    i.jobs.push(job.clone());
                    added += 1;
                }
            }
            Ok(added)
        })
    }

    async fn claim_job(
        &self,
        bench: &str,
        worker: &str,
        lease: std::time::Duration,
    ) -> Result<Option<BenchJobRecord>, StoreError> {
        self.with(|i| {
            let now = now_ms();
            let next = i
                .jobs
                .iter_mut()
                .filter(|j| {
                    j.bench == bench
                        && (j.state == JobState::Pending
                            || (j.state == JobState::Running
                                && j.lease_until.is_some_and(|l| l < now)))
                })
                .min_by_key(|j| j.seq);
            Ok(next.map(|j| {
                j.state = JobState::Running;
                j.previous_worker = j.worker.replace(worker.to_string());
                j.lease_until = Some(now + lease_ms(lease));
                j.attempts += 1;
                j.error = None;
                j.clone()
            }))
        })
    }

    async fn renew_job(
        &self,
        job: &BenchJobRecord,
        worker: &str,
        lease: std::time::Duration,
    ) -> Result<bool, StoreError> {
        self.with(|i| {
            let held = i.jobs.iter_mut().find(|j| {
                same_job(j, job)
                    && j.state == JobState::Running
                    && j.worker.as_deref() == Some(worker)
            });
            Ok(held
                .map(|j| j.lease_until = Some(now_ms() + lease_ms(lease)))
                .is_some())
        })
    }

    async fn finish_job(
        &self,
        job: &BenchJobRecord,
        worker: &str,
        state: JobState,
        error: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.with(|i| {
            let held = i.jobs.iter_mut().find(|j| {
                same_job(j, job)
                    && j.state == JobState::Running
                    && j.worker.as_deref() == Some(worker)
            });
            Ok(held
                .map(|j| {
                    j.state = state;
                    j.error = error.map(String::from);
                    j.lease_until = None;
                })
                .is_some())
        })
    }

    async fn bench_jobs(&self, bench: &str) -> Result<Vec<BenchJobRecord>, StoreError> {
        self.with(|i| {
            let mut jobs: Vec<_> = i
                .jobs
                .iter()
                .filter(|j| j.bench == bench)
                .cloned()
                .collect();
            jobs.sort_by_key(|j| j.seq);
            Ok(jobs)
        })
    }

    async fn job_counts(&self, bench: &str) -> Result<JobCounts, StoreError> {
        self.with(|i| {
            let now = now_ms();
            let mut counts = JobCounts {
                now_ms: now,
                ..JobCounts::default()
            };
            for j in i.jobs.iter().filter(|j| j.bench == bench) {
                match j.state {
                    JobState::Pending => counts.pending += 1,
                    JobState::Running if j.lease_until.is_some_and(|l| l < now) => {
                        counts.expired += 1
                    }
                    JobState::Running => counts.running += 1,
                    JobState::Done => counts.done += 1,
                    JobState::Failed => counts.failed += 1,
                }
            }
            Ok(counts)
        })
    }

    async fn record_worker(&self, worker: &WorkerRecord) -> Result<(), StoreError> {
        self.with(|i| {
            let now = now_ms();
            match i
                .workers
                .iter_mut()
                .find(|w| w.bench == worker.bench && w.worker == worker.worker)
            {
                Some(w) => {
                    *w = WorkerRecord {
                        started_at: w.started_at,
                        last_seen: now,
                        ..worker.clone()
                    }
                }
                None => i.workers.push(WorkerRecord {
                    started_at: now,
                    last_seen: now,
                    ..worker.clone()
                }),
            }
            Ok(())
        })
    }

    async fn bench_workers(&self, bench: &str) -> Result<Vec<WorkerRecord>, StoreError> {
        self.with(|i| {
            Ok(sorted_where(
                &i.workers,
                |w| w.bench == bench,
                |a, b| (a.started_at, &a.worker).cmp(&(b.started_at, &b.worker)),
            ))
        })
    }

    async fn bench_items(&self, name: &str) -> Result<Vec<BenchItemRecord>, StoreError> {
        self.with(|i| {
            let order = i
                .benches
                .iter()
                .find(|b| b.name == name)
                .map(|b| b.protocols.clone())
                .unwrap_or_default();
            let mut items: Vec<_> = i
                .bench_items
                .iter()
                .filter(|x| x.bench == name)
                .cloned()
                .collect();
            sort_bench_items(&mut items, &order);
            Ok(items)
        })
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn follows_the_whole_store_contract() {
        crate::contract::check_whole_contract(|| async {
            std::sync::Arc::new(super::MemoryStore::default()) as std::sync::Arc<dyn crate::Store>
        })
        .await;
    }
}
