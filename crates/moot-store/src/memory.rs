//! An in-process store: everything in keyed maps behind one lock, gone when the process ends.
//! Tests on paused time use it (SQLite's pool timeouts, driven by tokio timers while the
//! database thread works, would fire instantly), and so does `--store memory:`, which measures
//! the engine without a database. Every read and write is keyed (a map lookup, never a scan of
//! all calls), so a benchmark's cost per call does not grow with the calls already stored.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;

use crate::error::StoreError;
use crate::queries::lease_ms;
use crate::records::{
    sort_bench_items, Allowance, BenchItemRecord, BenchJobRecord, BenchRecord, CallBatch,
    CallCursor, CallRecord, DecisionRecord, JobCounts, JobState, RunFilter, RunOutcome, RunRecord,
    RunStatus, ValidationRecord, WholeRun, WorkerRecord,
};
use crate::store::Store;

#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

/// A call's place in its run: (round, agent, slot), the order `calls` returns them in.
type CallPlace = (u32, u32, String);
/// A job's identity: (bench, protocol, item id).
type JobKey = (String, String, String);

#[derive(Debug, Default)]
struct Inner {
    runs: HashMap<String, RunRecord>,
    /// Per run, its calls in (round, agent, slot) order.
    calls: HashMap<String, BTreeMap<CallPlace, CallRecord>>,
    /// Per run, the order its calls were written in (see [`Store::calls_after`]): each call's
    /// number, and the last number given.
    call_seqs: HashMap<String, (i64, HashMap<CallPlace, i64>)>,
    /// Per run, when its owner last said it was alive (ms since the epoch).
    heartbeats: HashMap<String, i64>,
    /// Rate allowances by key: their arrival times (µs since the epoch).
    allowances: HashMap<String, i64>,
    /// Per run, its decisions by rule.
    decisions: HashMap<String, BTreeMap<String, DecisionRecord>>,
    /// Per run, its checks by (answer, check).
    validations: HashMap<String, BTreeMap<(String, String), ValidationRecord>>,
    benches: HashMap<String, BenchRecord>,
    bench_items: BTreeMap<JobKey, BenchItemRecord>,
    /// Each response with the order it was stored in, and the keys by that order, for trimming
    /// the oldest without sorting the whole cache.
    cache: HashMap<String, (u64, serde_json::Value)>,
    cache_order: BTreeMap<u64, String>,
    cache_stored: u64,
    jobs: BTreeMap<JobKey, BenchJobRecord>,
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

fn job_key(job: &BenchJobRecord) -> JobKey {
    (job.bench.clone(), job.protocol.clone(), job.item_id.clone())
}

/// A run's records of one kind, in their key order (none for a run without any).
fn values_of<K, V: Clone>(map: &HashMap<String, BTreeMap<K, V>>, run: &str) -> Vec<V> {
    map.get(run)
        .map(|m| m.values().cloned().collect())
        .unwrap_or_default()
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

impl Inner {
    /// Records a call of a run that exists; a call with a response stays as first recorded
    /// (see [`Store::record_call`]).
    fn put_call(&mut self, call: &CallRecord) {
        let seq = self.next_seq(&call.run_id);
        self.put_call_as(call, seq);
    }

    /// The number the run's next write takes: one more than its last (see
    /// [`Store::calls_after`]).
    fn next_seq(&self, run: &str) -> i64 {
        self.call_seqs.get(run).map_or(0, |(last, _)| *last) + 1
    }

    /// Records `call` as [`Inner::put_call`] does, as write number `seq` of its run (the calls
    /// of one batch share a number, as in the databases).
    fn put_call_as(&mut self, call: &CallRecord, seq: i64) {
        let calls = self.calls.entry(call.run_id.clone()).or_default();
        let place = (call.round, call.agent, call.slot.clone());
        let answered = |c: &CallRecord| c.response_text.is_some() && !c.skipped;
        if !calls.get(&place).is_some_and(answered) {
            calls.insert(place.clone(), call.clone());
            let (last, seqs) = self.call_seqs.entry(call.run_id.clone()).or_default();
            *last = (*last).max(seq);
            seqs.insert(place, seq);
        }
    }

    /// Run `run` as a read returns it: with how long its owner has been silent.
    fn as_read(&self, run: &RunRecord) -> RunRecord {
        RunRecord {
            silent_ms: self.heartbeats.get(&run.id).map(|at| now_ms() - at),
            owner: Some(crate::owner::this_process().to_string()),
            ..run.clone()
        }
    }

    /// Marks run `id` finished with `status` and `answer` at `at`.
    fn finish(
        &mut self,
        id: &str,
        status: RunStatus,
        answer: Option<String>,
        at: String,
    ) -> Result<(), StoreError> {
        let run = self
            .runs
            .get_mut(id)
            .ok_or_else(|| StoreError::RunNotFound(id.to_string()))?;
        run.status = status;
        run.answer = answer;
        run.finished_at = Some(at);
        Ok(())
    }

    /// Caches `response` under `key` unless the key is taken.
    fn put_cached(&mut self, key: &str, response: &serde_json::Value) {
        let order = self.cache_stored;
        if let std::collections::hash_map::Entry::Vacant(e) = self.cache.entry(key.to_string()) {
            e.insert((order, response.clone()));
            self.cache_order.insert(order, key.to_string());
            self.cache_stored += 1;
        }
    }
}

/// The jobs of `bench`, mutably.
fn jobs_of<'a>(
    jobs: &'a mut BTreeMap<JobKey, BenchJobRecord>,
    bench: &'a str,
) -> impl Iterator<Item = &'a mut BenchJobRecord> {
    jobs.values_mut().filter(move |j| j.bench == bench)
}

#[async_trait]
impl Store for MemoryStore {
    async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        self.with(|i| {
            i.runs.insert(run.id.clone(), run.clone());
            i.heartbeats.insert(run.id.clone(), now_ms());
            Ok(())
        })
    }

    async fn record_call(&self, call: &CallRecord) -> Result<(), StoreError> {
        call.check_bounds()?;
        self.with(|i| {
            if !i.runs.contains_key(&call.run_id) {
                return Err(StoreError::RunNotFound(call.run_id.clone()));
            }
            i.put_call(call);
            Ok(())
        })
    }

    /// All or nothing, as the databases' transactions: every run is checked before anything is
    /// written.
    async fn record_batch(&self, batch: &CallBatch) -> Result<(), StoreError> {
        for call in &batch.calls {
            call.check_bounds()?;
        }
        self.with(|i| {
            if let Some(c) = batch.calls.iter().find(|c| !i.runs.contains_key(&c.run_id)) {
                return Err(StoreError::RunNotFound(c.run_id.clone()));
            }
            let seqs: Vec<i64> = batch.calls.iter().map(|c| i.next_seq(&c.run_id)).collect();
            for (call, seq) in batch.calls.iter().zip(seqs) {
                i.put_call_as(call, seq);
            }
            for (key, response) in &batch.cache {
                i.put_cached(key, response);
            }
            Ok(())
        })
    }

    async fn record_decision(&self, d: &DecisionRecord) -> Result<(), StoreError> {
        self.with(|i| {
            i.decisions
                .entry(d.run_id.clone())
                .or_default()
                .insert(d.rule.clone(), d.clone());
            Ok(())
        })
    }

    /// All or nothing: the run is checked before anything is written. The decisions are moved
    /// in, not copied.
    async fn record_outcome(&self, outcome: RunOutcome) -> Result<(), StoreError> {
        self.with(|i| {
            i.finish(
                &outcome.run_id,
                outcome.status,
                outcome.answer,
                outcome.finished_at,
            )?;
            let decisions = i.decisions.entry(outcome.run_id).or_default();
            for d in outcome.decisions {
                decisions.insert(d.rule.clone(), d);
            }
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
        self.with(|i| i.finish(id, status, answer.map(String::from), at.to_string()))
    }

    /// All or nothing, as the databases' transactions: every record's run is checked (this one
    /// or one stored, as their foreign keys do) before anything is written.
    async fn record_whole_run(&self, whole: &WholeRun) -> Result<bool, StoreError> {
        for call in &whole.calls {
            call.check_bounds()?;
        }
        self.with(|i| {
            let id = &whole.run.id;
            if i.runs.contains_key(id) {
                return Ok(false);
            }
            let owners = whole
                .calls
                .iter()
                .map(|c| &c.run_id)
                .chain(whole.decisions.iter().map(|d| &d.run_id))
                .chain(whole.validations.iter().map(|v| &v.run_id));
            for owner in owners {
                if owner != id && !i.runs.contains_key(owner) {
                    return Err(StoreError::RunNotFound(owner.clone()));
                }
            }
            i.runs.insert(id.clone(), whole.run.clone());
            i.heartbeats.insert(id.clone(), now_ms());
            // One write: its calls share a number, as a batch's do.
            let seqs: Vec<i64> = whole.calls.iter().map(|c| i.next_seq(&c.run_id)).collect();
            for (call, seq) in whole.calls.iter().zip(seqs) {
                i.put_call_as(call, seq);
            }
            for d in &whole.decisions {
                i.decisions
                    .entry(d.run_id.clone())
                    .or_default()
                    .insert(d.rule.clone(), d.clone());
            }
            for v in &whole.validations {
                i.validations
                    .entry(v.run_id.clone())
                    .or_default()
                    .insert((v.answer.clone(), v.check.clone()), v.clone());
            }
            Ok(true)
        })
    }

    async fn run(&self, id: &str) -> Result<RunRecord, StoreError> {
        self.with(|i| {
            i.runs
                .get(id)
                .map(|r| i.as_read(r))
                .ok_or_else(|| StoreError::RunNotFound(id.to_string()))
        })
    }

    async fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError> {
        self.with(|i| Ok(values_of(&i.calls, id)))
    }

    async fn calls_after(
        &self,
        id: &str,
        after: &CallCursor,
        limit: u32,
    ) -> Result<Vec<(CallCursor, CallRecord)>, StoreError> {
        self.with(|i| {
            let (Some(calls), Some((_, seqs))) = (i.calls.get(id), i.call_seqs.get(id)) else {
                return Ok(Vec::new());
            };
            let mut found: Vec<(CallCursor, &CallRecord)> = calls
                .iter()
                .map(|(place, call)| {
                    let cursor = CallCursor {
                        seq: seqs.get(place).copied().unwrap_or(0),
                        round: place.0,
                        agent: place.1,
                        slot: place.2.clone(),
                    };
                    (cursor, call)
                })
                .filter(|(cursor, _)| cursor > after)
                .collect();
            found.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(found
                .into_iter()
                .take(limit as usize)
                .map(|(cursor, call)| (cursor, call.clone()))
                .collect())
        })
    }

    async fn take_allowance(
        &self,
        key: &str,
        cost_us: i64,
        tolerance_us: i64,
    ) -> Result<Allowance, StoreError> {
        self.with(|i| {
            let now = now_ms().saturating_mul(1_000);
            let tat = i.allowances.get(key).copied().unwrap_or(now).max(now);
            let ahead = tat.saturating_sub(now);
            if ahead <= tolerance_us.saturating_sub(cost_us) {
                i.allowances
                    .insert(key.to_string(), tat.saturating_add(cost_us));
                Ok(Allowance::Taken)
            } else if ahead > crate::queries::allowance_suspect_after(cost_us, tolerance_us) {
                i.allowances
                    .insert(key.to_string(), now.saturating_add(cost_us));
                Ok(Allowance::Reset {
                    ahead: crate::queries::micros(ahead),
                })
            } else {
                Ok(Allowance::Wait(crate::queries::allowance_wait(
                    ahead,
                    cost_us,
                    tolerance_us,
                )))
            }
        })
    }

    async fn beat_run(&self, id: &str) -> Result<(), StoreError> {
        self.with(|i| {
            if i.runs
                .get(id)
                .is_some_and(|r| r.status == RunStatus::Running)
            {
                i.heartbeats.insert(id.to_string(), now_ms());
            }
            Ok(())
        })
    }

    async fn record_validation(&self, v: &ValidationRecord) -> Result<(), StoreError> {
        self.with(|i| {
            i.validations
                .entry(v.run_id.clone())
                .or_default()
                .insert((v.answer.clone(), v.check.clone()), v.clone());
            Ok(())
        })
    }

    async fn validations(&self, id: &str) -> Result<Vec<ValidationRecord>, StoreError> {
        self.with(|i| Ok(values_of(&i.validations, id)))
    }

    async fn decisions(&self, id: &str) -> Result<Vec<DecisionRecord>, StoreError> {
        self.with(|i| Ok(values_of(&i.decisions, id)))
    }

    async fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
        self.with(|i| {
            let benched: std::collections::HashSet<&str> = if filter.outside_benches {
                i.bench_items.values().map(|x| x.run_id.as_str()).collect()
            } else {
                Default::default()
            };
            let mut runs: Vec<&RunRecord> = i
                .runs
                .values()
                .filter(|r| filter.matches(r) && !benched.contains(r.id.as_str()))
                .collect();
            runs.sort_by(|a, b| (&b.created_at, &b.id).cmp(&(&a.created_at, &a.id)));
            Ok(runs
                .into_iter()
                .skip(filter.offset as usize)
                .take(filter.limit as usize)
                .map(|r| i.as_read(r))
                .collect())
        })
    }

    async fn forks_of(&self, parent: &str, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        self.with(|i| {
            let mut forks: Vec<RunRecord> = i
                .runs
                .values()
                .filter(|r| r.fork.as_ref().is_some_and(|f| f.parent == parent))
                .map(|r| i.as_read(r))
                .collect();
            forks.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
            forks.truncate(limit as usize);
            Ok(forks)
        })
    }

    async fn create_bench(&self, bench: &BenchRecord) -> Result<(), StoreError> {
        self.with(|i| {
            if i.benches.contains_key(&bench.name) {
                return Err(StoreError::BenchExists(bench.name.clone()));
            }
            i.benches.insert(bench.name.clone(), bench.clone());
            Ok(())
        })
    }

    async fn list_benches(&self) -> Result<Vec<BenchRecord>, StoreError> {
        self.with(|i| {
            let mut b: Vec<BenchRecord> = i.benches.values().cloned().collect();
            b.sort_by(|x, y| (&y.created_at, &x.name).cmp(&(&x.created_at, &y.name)));
            Ok(b)
        })
    }

    async fn bench(&self, name: &str) -> Result<BenchRecord, StoreError> {
        self.with(|i| {
            i.benches
                .get(name)
                .cloned()
                .ok_or_else(|| StoreError::BenchNotFound(name.to_string()))
        })
    }

    async fn record_bench_item(&self, item: &BenchItemRecord) -> Result<(), StoreError> {
        self.with(|i| {
            if !i.benches.contains_key(&item.bench) {
                return Err(StoreError::BenchNotFound(item.bench.clone()));
            }
            let key = (
                item.bench.clone(),
                item.protocol.clone(),
                item.item_id.clone(),
            );
            i.bench_items.insert(key, item.clone());
            Ok(())
        })
    }

    async fn cache_get(&self, key: &str) -> Result<Option<serde_json::Value>, StoreError> {
        self.with(|i| Ok(i.cache.get(key).map(|(_, v)| v.clone())))
    }

    async fn cache_get_many(
        &self,
        keys: &[&str],
    ) -> Result<Vec<Option<serde_json::Value>>, StoreError> {
        self.with(|i| {
            Ok(keys
                .iter()
                .map(|k| i.cache.get(*k).map(|(_, v)| v.clone()))
                .collect())
        })
    }

    async fn cache_put(&self, key: &str, response: &serde_json::Value) -> Result<(), StoreError> {
        self.with(|i| {
            i.put_cached(key, response);
            Ok(())
        })
    }

    async fn cache_trim(&self, keep: u64) -> Result<u64, StoreError> {
        self.with(|i| {
            let mut removed = 0;
            while i.cache.len() as u64 > keep {
                let Some((_, key)) = i.cache_order.pop_first() else {
                    break;
                };
                i.cache.remove(&key);
                removed += 1;
            }
            Ok(removed)
        })
    }

    async fn cache_entries(&self) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
        self.with(|i| {
            Ok(i.cache_order
                .values()
                .filter_map(|k| i.cache.get(k).map(|(_, v)| (k.clone(), v.clone())))
                .collect())
        })
    }

    async fn plan_jobs(&self, jobs: &[BenchJobRecord]) -> Result<u64, StoreError> {
        self.with(|i| {
            let mut added = 0;
            for job in jobs {
                if !i.benches.contains_key(&job.bench) {
                    return Err(StoreError::BenchNotFound(job.bench.clone()));
                }
                if let std::collections::btree_map::Entry::Vacant(e) = i.jobs.entry(job_key(job)) {
                    e.insert(job.clone());
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
            let next = jobs_of(&mut i.jobs, bench)
                .filter(|j| {
                    j.state == JobState::Pending
                        || (j.state == JobState::Running && j.lease_until.is_some_and(|l| l < now))
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
            let held = i
                .jobs
                .get_mut(&job_key(job))
                .filter(|j| j.state == JobState::Running && j.worker.as_deref() == Some(worker));
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
            let held = i
                .jobs
                .get_mut(&job_key(job))
                .filter(|j| j.state == JobState::Running && j.worker.as_deref() == Some(worker));
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
            let mut jobs: Vec<_> = jobs_of(&mut i.jobs, bench).map(|j| j.clone()).collect();
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
            for j in jobs_of(&mut i.jobs, bench) {
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
                        owner: Some(crate::owner::this_process().to_string()),
                        ..worker.clone()
                    }
                }
                None => i.workers.push(WorkerRecord {
                    started_at: now,
                    last_seen: now,
                    owner: Some(crate::owner::this_process().to_string()),
                    ..worker.clone()
                }),
            }
            Ok(())
        })
    }

    async fn claim_worker(
        &self,
        bench: &str,
        worker: &str,
        lease_ms: i64,
    ) -> Result<bool, StoreError> {
        self.with(|i| {
            let now = now_ms();
            let fresh = WorkerRecord {
                bench: bench.to_string(),
                worker: worker.to_string(),
                started_at: now,
                last_seen: now,
                debates: 0,
                calls: 0,
                output_tokens: 0,
                exited: false,
                owner: Some(crate::owner::this_process().to_string()),
            };
            match i
                .workers
                .iter_mut()
                .find(|w| w.bench == bench && w.worker == worker)
            {
                Some(w) if !w.exited && now - w.last_seen < lease_ms => Ok(false),
                Some(w) => {
                    *w = fresh;
                    Ok(true)
                }
                None => {
                    i.workers.push(fresh);
                    Ok(true)
                }
            }
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
                .get(name)
                .map(|b| b.protocols.clone())
                .unwrap_or_default();
            let mut items: Vec<_> = i
                .bench_items
                .values()
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
    async fn passes_every_store_conformance_check() {
        crate::conformance::check_whole_conformance(|| async {
            std::sync::Arc::new(super::MemoryStore::default()) as std::sync::Arc<dyn crate::Store>
        })
        .await;
    }
}
