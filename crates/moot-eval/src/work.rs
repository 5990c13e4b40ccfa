//! Working a planned benchmark ([`crate::bench::plan_bench`]) as one of any number of workers.
//!
//! The store is the coordinator: a worker claims the next job with a lease, runs the item's
//! debate ([`crate::bench`]'s `run_item`: a new debate, or the stored one continued from its
//! recorded calls), renews the lease while the debate runs, and marks the job done or failed.
//! A worker that dies stops renewing; once its lease runs out another worker claims the job and
//! continues the debate from the calls already recorded, so only the calls the dead worker had
//! in flight are asked again. A worker that finds its lease taken (it was too slow to renew, or
//! lost the store for a while) abandons that debate at once: the job is someone else's now.
//!
//! A worker exits when every job is done or failed. While other workers hold live leases it
//! waits rather than exits, so it can take over their jobs if they die.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use moot_core::debate::{CallKey, Outcome};
use moot_engine::Observer;
use moot_store::{BenchJobRecord, JobCounts, JobState, Store, StoreError, WorkerRecord};

use crate::bench::{run_item, AgentSource, BenchError, BenchPlan, ItemResult};
use crate::item::Item;

/// How a worker works.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The worker's name in the store (`HOST:PID` by default).
    pub worker: String,
    /// Debates in flight at once.
    pub concurrency: usize,
    /// How long a claim lasts without renewal; renewed every third of it.
    pub lease: Duration,
    /// How often to look for work while other workers hold every job left.
    pub poll: Duration,
    /// Whether `on_result` is called (with the benchmark's counts, one query per debate).
    pub progress: bool,
}

/// What one worker did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkSummary {
    pub worker: String,
    /// Debates this worker finished (done), and of those, how many it took over from a worker
    /// whose lease ran out.
    pub debates: u64,
    pub taken_over: u64,
    /// Debates that ended in an error (their jobs are marked failed).
    pub failed: u64,
    /// Debates abandoned because another worker took the job over.
    pub lost: u64,
    /// Calls this worker recorded.
    pub calls: u64,
    /// Output tokens of the debates it finished (with calls a dead worker recorded before).
    pub output_tokens: u64,
    /// The benchmark's jobs when the worker exited.
    pub counts: JobCounts,
    /// The worker was stopped (a signal) before the benchmark was done, and let go of this
    /// many debates for others to continue.
    pub stopped: bool,
    pub released: u64,
}

/// How one claimed job ended.
enum JobEnd {
    Done(Box<ItemResult>),
    Failed(String),
    /// Another worker holds the job now.
    Lost,
}

/// Why the worker's loop woke up.
enum Wake<T> {
    Ended(T),
    Poll,
    Stop,
}

/// Counts the calls a worker records, across its debates.
#[derive(Default)]
struct CallCounter {
    calls: AtomicU64,
}

impl Observer for CallCounter {
    fn call_finished(&self, _call: CallKey, _outcome: Option<&Outcome>) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }
}

/// Works `plan` (its name, settings and protocols; its items are the jobs') until every job is
/// settled, or until `stop` completes (a signal): then it claims nothing more, drops the
/// debates it runs (their calls in flight are cancelled; every call already recorded stays) and
/// lets their leases end at once, so other workers take them over without waiting out the
/// lease. `on_result` hears each debate this worker finishes. Store errors end the worker (what
/// it recorded stays; its leases run out and others continue); a debate's own error fails that
/// job only.
pub async fn work(
    plan: &BenchPlan<'_>,
    store: &dyn Store,
    agents: &dyn AgentSource,
    options: &WorkerOptions,
    stop: impl std::future::Future<Output = ()>,
    mut on_result: impl FnMut(&ItemResult, &JobCounts),
) -> Result<WorkSummary, BenchError> {
    let counter = CallCounter::default();
    let mut summary = WorkSummary {
        worker: options.worker.clone(),
        ..WorkSummary::default()
    };
    let report = |summary: &WorkSummary, exited: bool| WorkerRecord {
        bench: plan.name.clone(),
        worker: options.worker.clone(),
        started_at: 0,
        last_seen: 0,
        debates: summary.debates,
        calls: counter.calls.load(Ordering::Relaxed),
        output_tokens: summary.output_tokens,
        exited,
        owner: None,
    };
    store.record_worker(&report(&summary, false)).await?;
    let mut running = FuturesUnordered::new();
    // Debates that ended while the worker awaited the store (see `alongside`).
    let mut ended = VecDeque::new();
    // The jobs this worker holds, to release if it is stopped.
    let mut held: Vec<BenchJobRecord> = Vec::new();
    let mut last_beat = Instant::now();
    let mut stop = std::pin::pin!(stop);
    loop {
        // Fill every free slot with the next job, if there is one.
        while running.len() < options.concurrency.max(1) {
            let claim = store.claim_job(&plan.name, &options.worker, options.lease);
            match alongside(&mut running, &mut ended, claim).await? {
                Some(job) => {
                    held.push(job.clone());
                    running.push(run_job(plan, store, agents, options, job, &counter));
                }
                None => break,
            }
        }
        if running.is_empty() && ended.is_empty() {
            let counts = store.job_counts(&plan.name).await?;
            if counts.settled() {
                summary.counts = counts;
                break;
            }
        }
        // Look again after `poll` even if nothing of ours ends: free slots may find work a
        // stopped worker left (or, with none running, others hold every job left), and the
        // worker's record says it is alive.
        let woke = match ended.pop_front() {
            Some(end) => Wake::Ended(end),
            None => tokio::select! {
                Some(end) = running.next() => Wake::Ended(end),
                _ = tokio::time::sleep(options.poll) => Wake::Poll,
                _ = &mut stop => Wake::Stop,
            },
        };
        let finished = match woke {
            Wake::Ended(end) => Some(end),
            Wake::Poll => None,
            Wake::Stop => {
                // Dropping the debates cancels their calls in flight; what they recorded stays.
                drop(running);
                for job in &held {
                    store
                        .renew_job(job, &options.worker, Duration::ZERO)
                        .await?;
                }
                summary.released = held.len() as u64;
                summary.stopped = true;
                summary.counts = store.job_counts(&plan.name).await?;
                break;
            }
        };
        // A finished debate is reported at once: a worker killed right after it still shows
        // the debates it did.
        let mut report_now = false;
        if let Some(finished) = finished {
            report_now = true;
            let (job, end) = finished?;
            held.retain(|h| !(h.protocol == job.protocol && h.item_id == job.item_id));
            match end {
                JobEnd::Done(result) => {
                    // Counted only if the job was still this worker's: one whose lease was
                    // taken as it finished is the new holder's debate.
                    let finish = store.finish_job(&job, &options.worker, JobState::Done, None);
                    if alongside(&mut running, &mut ended, finish).await? {
                        summary.debates += 1;
                        summary.output_tokens = summary
                            .output_tokens
                            .saturating_add(result.result.usage().output_tokens);
                        if job.previous_worker.is_some() {
                            summary.taken_over += 1;
                        }
                        if options.progress {
                            let counts = store.job_counts(&plan.name);
                            let counts = alongside(&mut running, &mut ended, counts).await?;
                            on_result(&result, &counts);
                        }
                    } else {
                        summary.lost += 1;
                    }
                }
                JobEnd::Failed(error) => {
                    summary.failed += 1;
                    let state = JobState::Failed;
                    let finish = store.finish_job(&job, &options.worker, state, Some(&error));
                    alongside(&mut running, &mut ended, finish).await?;
                }
                JobEnd::Lost => summary.lost += 1,
            }
        }
        if report_now || last_beat.elapsed() >= options.poll {
            let beat = report(&summary, false);
            alongside(&mut running, &mut ended, store.record_worker(&beat)).await?;
            last_beat = Instant::now();
        }
    }
    summary.calls = counter.calls.load(Ordering::Relaxed);
    store.record_worker(&report(&summary, true)).await?;
    Ok(summary)
}

/// Awaits `store_call` while the debates in `running` go on, keeping those that end meanwhile
/// in `ended`. A debate left unpolled in the middle of a write would hold the store's write
/// transaction (SQLite: its write lock) while `store_call` waits for it.
async fn alongside<J: std::future::Future, F: std::future::Future>(
    running: &mut FuturesUnordered<J>,
    ended: &mut VecDeque<J::Output>,
    store_call: F,
) -> F::Output {
    let mut store_call = std::pin::pin!(store_call);
    loop {
        tokio::select! {
            biased;
            out = &mut store_call => return out,
            Some(end) = running.next() => ended.push_back(end),
        }
    }
}

/// Runs a claimed job's debate while renewing its lease; the debate is dropped (its calls in
/// flight cancelled) as soon as a renewal finds the job taken over.
async fn run_job<'a>(
    plan: &'a BenchPlan<'a>,
    store: &'a dyn Store,
    agents: &'a dyn AgentSource,
    options: &'a WorkerOptions,
    job: BenchJobRecord,
    counter: &'a CallCounter,
) -> Result<(BenchJobRecord, JobEnd), BenchError> {
    let item: Item = match serde_json::from_value(job.item.clone()) {
        Ok(item) => item,
        Err(e) => {
            let why = format!("the stored item is unreadable: {e}");
            return Ok((job, JobEnd::Failed(why)));
        }
    };
    let debate = run_item(
        plan,
        store,
        agents,
        &job.protocol,
        job.position,
        &item,
        counter,
    );
    let renewals = keep_lease(store, &job, options);
    let end = tokio::select! {
        result = debate => match result {
            Ok(result) => JobEnd::Done(Box::new(result)),
            // The store failing ends the worker, not the job: another worker continues it.
            Err(e) if store_failed(&e) => return Err(e),
            Err(e) => JobEnd::Failed(e.to_string()),
        },
        lost = renewals => {
            lost?;
            JobEnd::Lost
        }
    };
    Ok((job, end))
}

/// Renews the lease on `job` every third of the lease; returns when a renewal finds the job
/// no longer the worker's (or with the store's error).
async fn keep_lease(
    store: &dyn Store,
    job: &BenchJobRecord,
    options: &WorkerOptions,
) -> Result<(), BenchError> {
    let every = (options.lease / 3).max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(every).await;
        if !store.renew_job(job, &options.worker, options.lease).await? {
            return Ok(());
        }
    }
}

/// Whether a debate failed because the store did (rather than the debate itself).
/// Damaged records (`Corrupt`) are the debate's problem: another worker would fail the same way.
fn store_failed(e: &BenchError) -> bool {
    match e {
        BenchError::Store(s) | BenchError::Engine(moot_engine::EngineError::Store(s)) => {
            !matches!(s, StoreError::Corrupt { .. })
        }
        _ => false,
    }
}
