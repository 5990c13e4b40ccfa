//! One simulated debate, built and ready to run: what the grid checks while it is planned
//! (`spec`) and what a runner runs (`run`), so that neither imports the other's module.

use std::sync::Arc;
use std::time::Duration;

use moot_backends::sim::{SimAgent, SimModel};
use moot_backends::LanguageModel;
use moot_core::answer::AnswerKind;
use moot_core::chat::SamplingParams;
use moot_core::debate::DebateSpec;
use moot_core::decision::DecisionConfig;
use moot_core::protocol::{build_protocol, ProtocolOptions};
use moot_engine::{DebateJob, DebateSetup, EngineAgent, EngineConfig, Start};
use moot_store::MemoryStore;

/// The question every simulated debate asks (the sim does not read it).
pub const QUESTION: &str = "What is 17 * 24?";
/// Its gold answer, which every simulated agent is told.
pub const GOLD: &str = "408";

/// One protocol with its options: arms that share one share its debates.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub protocol: String,
    pub options: ProtocolOptions,
}

/// The engine's defaults, but for what a simulated debate needs otherwise.
fn engine_config(agents: usize) -> EngineConfig {
    EngineConfig {
        // Every agent is waited for: a sweep compares the same full debates in every arm, not
        // whichever answers came first (the quorum is at most the agents there are).
        min_agents: agents,
        // Sim agents answer at once, so the deadlines never matter; they are shorter than the
        // defaults so that a simulated call that did hang would be given up sooner.
        soft_timeout: Duration::from_secs(60),
        hard_timeout: Duration::from_secs(120),
        ..EngineConfig::default()
    }
}

/// The debate of `group` among `team` with `seed`, ready for a runner: a new debate under the
/// protocol's default rule, decided with the default settings (the engine fits the team to the
/// protocol when it is built).
pub(crate) fn debate<'s>(
    group: &Group,
    team: &[SimAgent],
    rounds: usize,
    seed: u64,
    store: &'s MemoryStore,
) -> Result<DebateJob<'s>, String> {
    let protocol = build_protocol(&group.protocol, &group.options).map_err(|e| e.to_string())?;
    let agents = team
        .iter()
        .enumerate()
        .map(|(i, a)| EngineAgent {
            model: Arc::new(SimModel::new(
                a.clone(),
                GOLD,
                AnswerKind::Numeric,
                seed * 100 + i as u64,
            )) as Arc<dyn LanguageModel>,
            params: SamplingParams::default(),
        })
        .collect::<Vec<_>>();
    let spec = DebateSpec::with_agents(QUESTION, AnswerKind::Numeric, agents.len(), rounds, seed);
    Ok(DebateJob {
        setup: DebateSetup {
            run_id: format!("sweep-{}-s{seed}", group.protocol),
            spec,
            protocol,
            agents,
            config: engine_config(team.len()),
            rule: None,
            store,
        },
        start: Start::New {
            config: serde_json::json!({}),
        },
        fork: None,
        decision: DecisionConfig::default(),
        bench_item: None,
    })
}

/// Whether `group` can debate among `team` (the protocol's checks of team size and options),
/// without running anything.
pub(crate) fn check(group: &Group, team: &[SimAgent], rounds: usize) -> Result<(), String> {
    let store = MemoryStore::default();
    let job = debate(group, team, rounds, 0, &store)?;
    job.setup.build().map(|_| ()).map_err(|e| e.to_string())
}
