//! What `moot resume NAME` continues — an interrupted debate, or a benchmark — and whether it
//! may: a debate whose process still runs it is refused (its calls would be asked twice), as is
//! a finished one. Running what is resumed is [`crate::session`]'s and [`crate::benchmark`]'s.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use moot_config::Config;
use moot_core::debate::DebateSpec;
use moot_core::redact::Redactor;
use moot_eval::work::WorkerOptions;
use moot_store::{BenchRecord, CallRecord, RunStatus, Store};

use crate::benchmark::{BenchRequest, WorkRequest};
use crate::error::{bad_input, InputError};
use crate::prepare::{run_or_bench, Named};
use crate::session::Session;
use crate::stored::{admit, Stored, Work};

/// How to run a resumed benchmark: how, not what (what is the stored benchmark's).
#[derive(Debug, Clone)]
pub struct ResumeOptions {
    /// The front end that asked: how messages name what its user set.
    pub via: moot_config::Via,
    /// Debates in flight at once (at least 1).
    pub concurrency: usize,
    /// The benchmark data folder (default: MOOT_DATA_DIR, else ../shared/data).
    pub data_dir: Option<PathBuf>,
    /// Do not answer repeated requests from the store's request cache.
    pub no_cache: bool,
    /// Whether a benchmark resumed as a worker reports its progress
    /// ([`WorkerOptions::progress`]).
    pub progress: bool,
    /// Resume even a run whose owner looks alive (`moot resume --force`): for a human who
    /// knows the owner will not go on (a stopped process they will kill, a machine that is
    /// gone). If it does go on, both processes ask the run's remaining calls.
    pub force: bool,
    /// This machine's configuration (`--config`, else the defaults): what may run, where
    /// requests go and the limits, and agents that take the place of stored ones of the same id
    /// (see [`crate::stored`]).
    pub local: Config,
}

/// What a name resumes.
pub enum Resumption {
    /// An interrupted debate, to be finished without repeating its stored calls.
    Run(ResumedRun),
    /// A benchmark planned for workers, resumed as one more worker: its debates are claimed
    /// under leases, so one a live worker holds is never run twice (nor its calls asked twice).
    Worker {
        bench: BenchRecord,
        request: WorkRequest,
    },
    /// A benchmark run by one process, continued with the dataset, protocols, limit, seed and
    /// configuration it was started with (`request` holds that configuration, admitted on this
    /// machine).
    Bench {
        bench: BenchRecord,
        request: BenchRequest,
    },
}

/// An interrupted debate read back from the store.
pub struct ResumedRun {
    pub run_id: String,
    pub config: Config,
    pub spec: DebateSpec,
    /// The calls it completed, which are not asked again.
    pub calls: Vec<CallRecord>,
    /// What removes secrets, from the run's stored configuration.
    pub redactor: Arc<Redactor>,
    /// What the run is a fork of, when it is one: resumed, it reuses its parent's calls and
    /// resamples its round as it did when it started.
    pub fork: Option<moot_engine::ForkSource>,
    /// What the person resuming should know: a heartbeat from the future, an owner resumed over
    /// with `force`.
    pub warnings: Vec<String>,
}

impl ResumedRun {
    /// The debate ready to run on, its agents built as its configuration says (`on_message`
    /// hears about models being fetched).
    pub fn session<'a>(
        self,
        store: &'a dyn Store,
        on_message: &mut dyn FnMut(&str),
    ) -> Result<Session<'a>> {
        let protocol = self
            .config
            .build_protocol()
            .map_err(crate::error::InputError::from)?;
        let agents = crate::agents::build(&self.config, self.spec.kind, on_message)?;
        Ok(Session {
            store,
            run_id: self.run_id,
            config: self.config,
            protocol,
            spec: self.spec,
            agents,
            restore: Some(self.calls),
            redactor: self.redactor,
            fork: self.fork,
            via: moot_config::Via::Cli,
        })
    }
}

/// What `name` resumes: the run of that id, else the benchmark of that name, with its stored
/// configuration admitted on this machine ([`crate::stored::admit`]; `on_notice` hears each
/// stored limit bounded by this machine's). Refused (an [`InputError`] that says why) when
/// neither is stored, when the run is finished, when the process running it, or one of the
/// benchmark's debates, is still alive, and when its stored configuration is not admitted.
pub async fn resume(
    store: &dyn Store,
    name: &str,
    options: ResumeOptions,
    on_notice: &mut dyn FnMut(&str),
) -> Result<Resumption> {
    let run = match run_or_bench(store, name).await? {
        Named::Run(run) => run,
        Named::Bench(bench) => return resume_bench(store, bench, options, on_notice).await,
    };
    let calls = store.calls(&run.id).await?;
    if run.status == RunStatus::Done {
        return bad_input(format!(
            "run {} is already finished (answer: {}); see `moot show {}`",
            run.id,
            run.answer.as_deref().unwrap_or("none"),
            run.id
        ));
    }
    if run.status == RunStatus::Running && !run.interrupted() && !options.force {
        let force_with = options.via.switch(moot_config::Field::Force);
        return bad_input(crate::claim::still_running(&run, &force_with));
    }
    let config = admit(
        Stored::Run(&run),
        &options.local,
        Work::Debate,
        options.via,
        on_notice,
    )?;
    let spec: DebateSpec = serde_json::from_value(run.spec.clone())
        .with_context(|| format!("run {}: the stored debate spec is unreadable", run.id))?;
    let redactor = Arc::new(config.redactor().map_err(InputError::from)?);
    let fork = match &run.fork {
        Some(origin) => Some(moot_engine::ForkSource {
            intervention: serde_json::from_value(origin.intervention.clone()).with_context(
                || format!("run {}: the stored fork intervention is unreadable", run.id),
            )?,
            // A parent no longer in the store has no calls: only later reuses are lost.
            parent_calls: store.calls(&origin.parent).await?,
            parent: origin.parent.clone(),
            round: origin.round as usize,
        }),
        None => None,
    };
    let mut warnings = Vec::new();
    if run.heartbeat_from_the_future() {
        warnings.push(format!(
            "run {}: its last heartbeat is {:.0} s in the future by the store's clock (a wrong \
             clock, or a row meant to hold the run): not trusted",
            run.id,
            -(run.silent_ms.unwrap_or(0) as f64) / 1000.0
        ));
    }
    if run.status == RunStatus::Running && !run.interrupted() {
        warnings.push(format!(
            "run {}: resumed with {} although process {} looks alive; if it goes on, both \
             ask the remaining calls",
            run.id,
            options.via.switch(moot_config::Field::Force),
            run.owner.as_deref().unwrap_or("unknown")
        ));
    }
    Ok(Resumption::Run(ResumedRun {
        run_id: run.id,
        config,
        spec,
        calls,
        redactor,
        fork,
        warnings,
    }))
}

async fn resume_bench(
    store: &dyn Store,
    bench: BenchRecord,
    options: ResumeOptions,
    on_notice: &mut dyn FnMut(&str),
) -> Result<Resumption> {
    if store.job_counts(&bench.name).await?.total() > 0 {
        let request = WorkRequest {
            via: options.via,
            worker: WorkerOptions {
                worker: crate::worker::default_worker_id(),
                concurrency: options.concurrency,
                lease: crate::worker::DEFAULT_LEASE,
                poll: crate::worker::DEFAULT_POLL,
                progress: options.progress,
            },
            data_dir: options.data_dir,
            no_cache: options.no_cache,
            local: options.local,
        };
        // Its stored configuration is admitted where a worker's is (`ForWorker::new`).
        return Ok(Resumption::Worker { bench, request });
    }
    // Run by one process: refused while that process still runs one of its debates.
    let force_with = options.via.switch(moot_config::Field::Force);
    crate::claim::bench_is_free(store, &bench.name, options.force, &force_with).await?;
    let config = admit(
        Stored::Bench(&bench),
        &options.local,
        Work::Debate,
        options.via,
        on_notice,
    )?;
    let request = BenchRequest::resuming(
        &bench,
        options.via,
        config,
        options.concurrency,
        options.data_dir,
        options.no_cache,
    )?;
    Ok(Resumption::Bench { bench, request })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_name_the_store_does_not_hold_is_the_users_error() {
        let store = moot_store::MemoryStore::default();
        let options = ResumeOptions {
            via: moot_config::Via::Cli,
            concurrency: 1,
            data_dir: None,
            no_cache: false,
            progress: false,
            force: false,
            local: Config::default(),
        };
        let e = resume(&store, "nothing", options, &mut |_| {})
            .await
            .err()
            .expect("refused");
        assert_eq!(
            e.downcast_ref::<crate::not_found::NotFound>(),
            Some(&crate::not_found::NotFound::run_or_bench("nothing"))
        );
        assert_eq!(crate::error::kind_of(&e), crate::error::ErrorKind::Input);
    }
}
