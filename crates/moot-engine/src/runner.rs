//! One debate to run ([`DebateJob`]) and whoever runs it ([`DebateRunner`]).
//!
//! Everything that runs debates — `moot ask`, the server, Python, a benchmark's items and forks,
//! a sweep's simulated debates — hands a `DebateJob` to a runner and gets the debate back. The
//! application's runner (`moot_app::runner::Runner`) is the one every front end uses: it adds
//! the run log and the transcript around [`run_job`], which is the one place a debate is built,
//! stored and run. The engine's own [`Surroundings`] runs a job with a redactor and a sandbox
//! and nothing else, for the crates' own tests.

use std::sync::Arc;

use moot_core::debate::AgentSpec;
use moot_core::decision::DecisionConfig;
use moot_core::redact::Redactor;
use moot_sandbox::Sandbox;
use moot_store::{BenchItemRecord, CallRecord};

use crate::debate::DebateSetup;
use crate::error::EngineError;
use crate::fork::ForkSource;
use crate::observer::Observer;
use crate::result::DebateResult;

/// How a debate starts.
pub enum Start {
    /// A new debate: its run row is written with this configuration (redacted).
    New { config: serde_json::Value },
    /// A stored debate continued from its calls (a finished one plans no call).
    Resume { calls: Vec<CallRecord> },
}

impl Start {
    pub fn is_resume(&self) -> bool {
        matches!(self, Start::Resume { .. })
    }
}

/// One debate to run: what the engine builds, how it starts, and how it decides.
pub struct DebateJob<'s> {
    pub setup: DebateSetup<'s>,
    pub start: Start,
    /// The stored debate this one is a fork of: new, or resumed with its calls in `start`.
    pub fork: Option<ForkSource>,
    pub decision: DecisionConfig,
    /// The benchmark item this debate is, linked to its benchmark once its run is stored (new)
    /// or its calls are folded back (resumed), before any call is made.
    pub bench_item: Option<BenchItemRecord>,
}

/// A debate that ran to its decision, with the agents it ran (the team fitted to the protocol).
pub struct Ran {
    pub result: DebateResult,
    pub agents: Vec<AgentSpec>,
}

/// Whoever runs debates. `observer` hears every round and call; `on_stored` is told the run id
/// once the run is stored (new) or its calls are folded back (resumed).
#[async_trait::async_trait]
pub trait DebateRunner: Send + Sync {
    async fn run(
        &self,
        job: DebateJob<'_>,
        observer: &dyn Observer,
        on_stored: &mut (dyn for<'r> FnMut(&'r str) + Send),
    ) -> Result<Ran, EngineError>;
}

/// What every debate of a runner shares: the redactor of everything stored, and the sandbox
/// that checks code answers (`None`: unchecked).
#[derive(Clone, Default)]
pub struct Surroundings {
    pub redactor: Arc<Redactor>,
    pub sandbox: Option<Arc<Sandbox>>,
}

/// Builds, stores and runs `job` to its decision: the team fitted to the protocol, the run
/// written (or its calls folded back), the benchmark link recorded, then every round.
pub async fn run_job(
    job: DebateJob<'_>,
    with: &Surroundings,
    observer: &dyn Observer,
    on_stored: &mut (dyn FnMut(&str) + Send),
) -> Result<Ran, EngineError> {
    let DebateJob {
        setup,
        start,
        fork,
        decision,
        bench_item,
    } = job;
    let store = setup.store;
    let mut debate = setup
        .build()?
        .with_redactor(with.redactor.clone())
        .with_sandbox(with.sandbox.clone());
    if let Some(fork) = fork {
        debate = debate.with_fork(fork)?;
    }
    let agents = debate.spec.agents.clone();
    match start {
        Start::Resume { calls } => debate.restore(calls),
        Start::New { config } => debate.create(config).await?,
    }
    if let Some(item) = &bench_item {
        store.record_bench_item(item).await?;
    }
    on_stored(&debate.run_id);
    let result = debate.run(&decision, observer).await?;
    Ok(Ran { result, agents })
}

#[async_trait::async_trait]
impl DebateRunner for Surroundings {
    async fn run(
        &self,
        job: DebateJob<'_>,
        observer: &dyn Observer,
        on_stored: &mut (dyn for<'r> FnMut(&'r str) + Send),
    ) -> Result<Ran, EngineError> {
        run_job(job, self, observer, on_stored).await
    }
}
