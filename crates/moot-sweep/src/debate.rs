//! One simulated debate, built and ready to run: what the grid checks while it is planned
//! (`spec`) and what the runner runs (`run`), so that neither imports the other's module.

use std::sync::Arc;
use std::time::Duration;

use moot_backends::sim::{SimAgent, SimModel};
use moot_backends::LanguageModel;
use moot_core::answer::AnswerKind;
use moot_core::chat::SamplingParams;
use moot_core::debate::DebateSpec;
use moot_core::protocol::{build_protocol, ProtocolOptions};
use moot_engine::{Debate, EngineAgent, EngineConfig};
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

/// Sim agents answer at once: the deadlines never matter, and every agent is waited for.
fn engine_config(agents: usize) -> EngineConfig {
    EngineConfig {
        soft_timeout: Duration::from_secs(60),
        hard_timeout: Duration::from_secs(120),
        min_agents: agents,
        max_concurrent_calls: 8,
        cache: false,
        cache_max_entries: None,
        budget: Default::default(),
        reask: true,
    }
}

/// The debate of `group` among `team` with `seed`, ready to run, and its default rule.
pub(crate) fn debate<'s>(
    group: &Group,
    team: &[SimAgent],
    rounds: usize,
    seed: u64,
    store: &'s MemoryStore,
) -> Result<(Debate<'s>, &'static str), String> {
    let protocol = build_protocol(&group.protocol, &group.options).map_err(|e| e.to_string())?;
    let rule = protocol.default_rule();
    let (n, rounds) = protocol.shape(team.len(), rounds);
    let agents = team
        .iter()
        .take(n)
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
    let d = Debate::new(
        format!("sweep-{}-s{seed}", group.protocol),
        spec,
        protocol,
        agents,
        engine_config(n.min(team.len())),
        store,
    )
    .map_err(|e| e.to_string())?;
    Ok((d, rule))
}

/// Whether `group` can debate among `team` (the protocol's checks of team size and options),
/// without running anything.
pub(crate) fn check(group: &Group, team: &[SimAgent], rounds: usize) -> Result<(), String> {
    let store = MemoryStore::default();
    debate(group, team, rounds, 0, &store).map(|_| ())
}
