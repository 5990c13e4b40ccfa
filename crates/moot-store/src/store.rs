//! The [`Store`] trait: the contract every store keeps (see docs/architecture.md, Storage).

use async_trait::async_trait;

use crate::error::StoreError;
use crate::records::{
    Allowance, BenchItemRecord, BenchJobRecord, BenchRecord, CallBatch, CallCursor, CallRecord,
    DecisionRecord, JobCounts, JobState, RunFilter, RunOutcome, RunRecord, RunStatus,
    ValidationRecord, WholeRun, WorkerRecord,
};

#[async_trait]
pub trait Store: Send + Sync {
    async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError>;
    /// Records one call; recording the same (run, round, agent, slot) again replaces it, except
    /// that a call that has a response stays as first recorded: a completed call is recorded
    /// once (two workers that both finished it count it once).
    async fn record_call(&self, call: &CallRecord) -> Result<(), StoreError>;
    /// Records every call of `batch` as [`Store::record_call`] does and caches its responses as
    /// [`Store::cache_put`] does. SQLite and PostgreSQL write the batch in one transaction (all
    /// or nothing, one commit), and SQLite commits the batches of debates that record at the
    /// same moment together; either way the batch is durable when this returns.
    async fn record_batch(&self, batch: &CallBatch) -> Result<(), StoreError> {
        for call in &batch.calls {
            self.record_call(call).await?;
        }
        for (key, response) in &batch.cache {
            self.cache_put(key, response).await?;
        }
        Ok(())
    }
    async fn record_decision(&self, decision: &DecisionRecord) -> Result<(), StoreError>;
    async fn finish_run(
        &self,
        id: &str,
        status: RunStatus,
        answer: Option<&str>,
        at: &str,
    ) -> Result<(), StoreError>;
    /// Records every decision of `outcome` as [`Store::record_decision`] does and finishes its
    /// run as [`Store::finish_run`] does, together: SQLite and PostgreSQL in one transaction (a
    /// run is never marked finished without its decisions, nor decided and still running), and
    /// SQLite in the same commit as the writes of debates recording at the same moment.
    async fn record_outcome(&self, outcome: RunOutcome) -> Result<(), StoreError> {
        for decision in &outcome.decisions {
            self.record_decision(decision).await?;
        }
        self.finish_run(
            &outcome.run_id,
            outcome.status,
            outcome.answer.as_deref(),
            &outcome.finished_at,
        )
        .await
    }
    /// Records a run that is not in the store yet with all its calls, decisions and checks, as
    /// they are given (its status and answer included), all or nothing: one transaction on
    /// SQLite and PostgreSQL, so a run that fails halfway (a row the database refuses, a process
    /// killed) leaves no trace and writing it again completes it. `false`, with nothing written,
    /// when a run with its id is there already: what is stored is never replaced. There is no
    /// default: written one record at a time, a failure would leave half a run that then reads
    /// as already there.
    async fn record_whole_run(&self, whole: &WholeRun) -> Result<bool, StoreError>;
    async fn run(&self, id: &str) -> Result<RunRecord, StoreError>;
    async fn calls(&self, id: &str) -> Result<Vec<CallRecord>, StoreError>;
    /// At most `limit` of run `id`'s calls written after `after`, in the order they were
    /// written, each with the cursor to continue from: what a follower of a live run reads, so
    /// it never reads a call twice nor holds more than `limit` at once. A call written again
    /// (replaced) comes again.
    async fn calls_after(
        &self,
        id: &str,
        after: &CallCursor,
        limit: u32,
    ) -> Result<Vec<(CallCursor, CallRecord)>, StoreError>;
    /// Takes `cost_us` from the rate allowance `key` shared by every process using this store:
    /// a GCRA bucket on the store's clock that refills a microsecond a microsecond and lets
    /// its arrival time run at most `tolerance_us` ahead of now (the burst). Either it is
    /// taken, or nothing is taken and the wait until it could be is returned. Processes taking
    /// at once never overdraw it (one conditional write). An arrival time further ahead than
    /// any take leaves one (past the tolerance, the cost and a minute's slack: a row written
    /// by hand, a clock stepped back) is never waited on: it is reset and the take goes ahead
    /// ([`Allowance::Reset`]), which the caller reports.
    async fn take_allowance(
        &self,
        key: &str,
        cost_us: i64,
        tolerance_us: i64,
    ) -> Result<Allowance, StoreError>;
    /// Notes, on the store's clock, that the process running debate `id` is alive (see
    /// [`RunRecord::interrupted`]); a finished run is left as it is.
    async fn beat_run(&self, id: &str) -> Result<(), StoreError>;
    async fn decisions(&self, id: &str) -> Result<Vec<DecisionRecord>, StoreError>;
    /// Records a check of a code answer; the same run, answer and check again replaces it.
    async fn record_validation(&self, v: &ValidationRecord) -> Result<(), StoreError>;
    /// A run's checks, by answer, then check.
    async fn validations(&self, id: &str) -> Result<Vec<ValidationRecord>, StoreError>;
    /// Most recent first.
    async fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError>;
    /// The runs forked from run `parent` (`moot fork`: those whose [`RunRecord::fork`] names
    /// it), oldest first, at most `limit` of them; none for a run without forks or unknown.
    async fn forks_of(&self, parent: &str, limit: u32) -> Result<Vec<RunRecord>, StoreError>;
    /// Records a new benchmark; a name already taken is refused ([`StoreError::BenchExists`]).
    async fn create_bench(&self, bench: &BenchRecord) -> Result<(), StoreError>;
    async fn bench(&self, name: &str) -> Result<BenchRecord, StoreError>;
    /// Every benchmark, newest first.
    async fn list_benches(&self) -> Result<Vec<BenchRecord>, StoreError>;
    /// Links an item's debate to its benchmark; recording the same (bench, protocol, item)
    /// again replaces the link.
    async fn record_bench_item(&self, item: &BenchItemRecord) -> Result<(), StoreError>;
    /// The benchmark's items, by protocol (in the benchmark's order) then position.
    async fn bench_items(&self, name: &str) -> Result<Vec<BenchItemRecord>, StoreError>;
    /// The benchmark's debates: each item's link with its run, in [`Store::bench_items`]'
    /// order (what reports, status and progress pages count and read).
    async fn bench_runs(
        &self,
        name: &str,
    ) -> Result<Vec<(BenchItemRecord, RunRecord)>, StoreError> {
        let mut runs = Vec::new();
        for link in self.bench_items(name).await? {
            let run = self.run(&link.run_id).await?;
            runs.push((link, run));
        }
        Ok(runs)
    }
    /// A token that changes whenever benchmark `name`'s debates do (one linked, started,
    /// finished, failed, resumed or re-decided): what a page compares before it reads them
    /// again. One query where the store can; here, from each run in turn.
    async fn bench_version(&self, name: &str) -> Result<String, StoreError> {
        let mut version = BenchVersion::default();
        for link in self.bench_items(name).await? {
            let run = self.run(&link.run_id).await?;
            version.add(&run);
        }
        Ok(version.token())
    }
    /// A cached response by its request key.
    async fn cache_get(&self, key: &str) -> Result<Option<serde_json::Value>, StoreError>;
    /// The cached responses of `keys`, in their order (`None` where nothing is cached): what a
    /// round's calls look up at once, one query instead of one a call.
    async fn cache_get_many(
        &self,
        keys: &[&str],
    ) -> Result<Vec<Option<serde_json::Value>>, StoreError> {
        let mut found = Vec::with_capacity(keys.len());
        for key in keys {
            found.push(self.cache_get(key).await?);
        }
        Ok(found)
    }
    /// Stores a response under its request key (the first one stored stays).
    async fn cache_put(&self, key: &str, response: &serde_json::Value) -> Result<(), StoreError>;
    /// Keeps the `keep` newest cached responses and removes the older ones (freemad's
    /// `cache.max_entries`); returns how many were removed.
    async fn cache_trim(&self, keep: u64) -> Result<u64, StoreError>;
    /// Adds a worked benchmark's jobs as given (a new plan's are pending; a copied store's keep
    /// their state); a job already there (same bench, protocol and item) is left as it is.
    /// Returns how many were added.
    async fn plan_jobs(&self, jobs: &[BenchJobRecord]) -> Result<u64, StoreError>;
    /// Claims the next job of `bench` in plan order for `worker` until `lease` from now: a
    /// pending one, or a running one whose lease ran out. Workers claiming at once never get
    /// the same job (`FOR UPDATE SKIP LOCKED` on PostgreSQL, one write at a time on SQLite).
    async fn claim_job(
        &self,
        bench: &str,
        worker: &str,
        lease: std::time::Duration,
    ) -> Result<Option<BenchJobRecord>, StoreError>;
    /// Extends `worker`'s lease on a job to `lease` from now; `false` when the job is no longer
    /// the worker's (another took it over after the lease ran out, or it was finished).
    async fn renew_job(
        &self,
        job: &BenchJobRecord,
        worker: &str,
        lease: std::time::Duration,
    ) -> Result<bool, StoreError>;
    /// Marks `worker`'s job done or failed; `false` (and nothing changed) when the job is no
    /// longer the worker's.
    async fn finish_job(
        &self,
        job: &BenchJobRecord,
        worker: &str,
        state: JobState,
        error: Option<&str>,
    ) -> Result<bool, StoreError>;
    /// A benchmark's jobs, in plan order.
    async fn bench_jobs(&self, bench: &str) -> Result<Vec<BenchJobRecord>, StoreError>;
    /// How many of a benchmark's jobs are in each state now.
    async fn job_counts(&self, bench: &str) -> Result<JobCounts, StoreError>;
    /// Records a worker's totals (`started_at`/`last_seen` are set by the store's clock: the
    /// first record starts the worker, every record is a sighting).
    async fn record_worker(&self, worker: &WorkerRecord) -> Result<(), StoreError>;
    /// Takes the name `worker` for `bench`, unless a live worker holds it: one that has not
    /// exited and was seen less than `lease_ms` ago. The store decides in one statement, so of
    /// two processes starting under one name at once exactly one gets it. `false`: it is held.
    /// A taken name starts afresh (started now, no totals).
    async fn claim_worker(
        &self,
        bench: &str,
        worker: &str,
        lease_ms: i64,
    ) -> Result<bool, StoreError>;
    /// A benchmark's workers, by when they started.
    async fn bench_workers(&self, bench: &str) -> Result<Vec<WorkerRecord>, StoreError>;
    /// Every cached response with its key, oldest first (for copying a store).
    async fn cache_entries(&self) -> Result<Vec<(String, serde_json::Value)>, StoreError>;
    /// Finishes what is pending and closes the store; nothing can be done through it after.
    async fn close(&self) {}
}

/// What [`Store::bench_version`] sums over a benchmark's runs, as the SQL stores sum it in one
/// query: how many, how many running and failed, the latest finishing time and the answers'
/// total length.
#[derive(Debug, Default)]
pub struct BenchVersion {
    pub debates: i64,
    pub running: i64,
    pub failed: i64,
    pub last_finished: String,
    pub answer_length: i64,
}

impl BenchVersion {
    fn add(&mut self, run: &RunRecord) {
        self.debates += 1;
        match run.status {
            RunStatus::Running => self.running += 1,
            RunStatus::Failed => self.failed += 1,
            RunStatus::Done => {}
        }
        if let Some(at) = &run.finished_at {
            if *at > self.last_finished {
                self.last_finished = at.clone();
            }
        }
        self.answer_length += run.answer.as_ref().map_or(0, |a| a.chars().count() as i64);
    }

    pub fn token(&self) -> String {
        format!(
            "{}:{}:{}:{}:{}",
            self.debates, self.running, self.failed, self.last_finished, self.answer_length
        )
    }
}
