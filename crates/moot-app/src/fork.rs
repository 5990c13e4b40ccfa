//! `moot fork RUN --round R`: a new debate made from a finished one, the same until round R,
//! where one thing changes (see `moot_core::fork`): nothing (a null fork: the round resampled,
//! the control), one agent's response (`--say`), or one agent's model from the round on
//! (`--model`). The fork is a run of its own that records its parent, round and intervention;
//! the engine copies the parent's calls before the round and reuses any later call whose
//! request is the parent's, at 0 tokens (see `moot_engine::ForkSource`).
//!
//! The fork's team is built from the parent's stored configuration as admitted on this machine
//! ([`crate::stored::admit`]: the configuration given with `--config` supplies what may run,
//! where requests go and the limits, and agents that take the place of stored ones of the same
//! id), as `moot resume` builds it, with the agents' seeds kept: a benchmark's debate gets back
//! the gold answer and seed its simulated agents were given. `--model M` names, in this order:
//! an agent of the configuration given with `--config` (else of the parent's), whose backend
//! and sampling agent
//! A then uses; or, for agent A's own backend, a model of it: a sim preset (`expert`, …) for a
//! simulated agent, the `model` of an `openai` or `anthropic` agent (same endpoint and key),
//! a known model name or `.gguf` path for a `local` one.

use std::sync::Arc;

use anyhow::{Context, Result};
use moot_config::{AgentConfig, Config, Field, ModelSwap, Via};
use moot_core::debate::{AgentRole, DebateSpec};
use moot_core::fork::{Intervention, MAX_SAY_BYTES};
use moot_engine::{ForkSource, Lineup};
use moot_store::{RunRecord, RunStatus, Store, StoreError};

use crate::error::{bad_input, InputError};
use crate::session::Session;
use crate::stored::{Stored, Work};

/// What a fork changes, as the user names it (agents by number from 1, or by id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Nothing: the round is asked again (the control).
    Null,
    /// Agent `agent`'s response of the round is `text`.
    Say { agent: String, text: String },
    /// Agent `agent` answers with `model` from the round on.
    Model { agent: String, model: String },
}

impl Change {
    /// The change a front end's separate fields ask for (Python's `agent=`, `say=`, `model=`),
    /// as `via`'s user wrote them: at most one change, a change with the agent it changes, and
    /// no agent without a change. (The CLI's flags say the same through clap.)
    pub fn from_parts(
        agent: Option<String>,
        say: Option<String>,
        model: Option<String>,
        via: Via,
    ) -> Result<Change, InputError> {
        let named = agent.is_some();
        let agent = changed_agent(
            agent,
            &[
                (say.is_some(), Field::ForkSay),
                (model.is_some(), Field::ForkModel),
            ],
            via,
        )?;
        Ok(match (say, model) {
            (Some(text), _) => Change::Say { agent, text },
            (None, Some(model)) => Change::Model { agent, model },
            (None, None) if named => {
                return Err(InputError(format!(
                    "{} names whom an intervention changes: give {} or {} with it",
                    via.name(Field::ForkAgent),
                    via.name(Field::ForkSay),
                    via.name(Field::ForkModel)
                )))
            }
            (None, None) => Change::Null,
        })
    }
}

/// The agent the one change among `given` (each change field, and whether it is set) is made
/// to: more than one change is refused, and so is a change without `agent`, each by its name
/// as `via`'s user wrote it. With no change, an empty name.
pub(crate) fn changed_agent(
    agent: Option<String>,
    given: &[(bool, Field)],
    via: Via,
) -> Result<String, InputError> {
    let given: Vec<Field> = given
        .iter()
        .filter_map(|&(set, field)| set.then_some(field))
        .collect();
    if given.len() > 1 {
        return Err(InputError(format!(
            "{}: give one change, not {}",
            given
                .iter()
                .map(|f| via.name(*f))
                .collect::<Vec<_>>()
                .join(" and "),
            given.len()
        )));
    }
    match (agent, given.first()) {
        (Some(agent), _) => Ok(agent),
        (None, None) => Ok(String::new()),
        (None, Some(field)) => Err(InputError(format!(
            "{} needs {}: the agent it changes (its number from 1, or its id)",
            via.name(*field),
            via.name(Field::ForkAgent)
        ))),
    }
}

/// A fork to make.
#[derive(Debug, Clone)]
pub struct ForkRequest {
    /// The front end that asked: how messages name what its user set.
    pub via: moot_config::Via,
    /// The parent run's id.
    pub parent: String,
    pub round: usize,
    pub change: Change,
    /// This machine's configuration (`--config`): what may run, where requests go and the
    /// limits (see [`crate::stored`]), agents that take the place of the parent's agents of the
    /// same id, and the agents `--model` may name. Without one: the defaults, and `--model`
    /// names the parent's own agents.
    pub local: Option<Config>,
    /// The fork's run id; a new one when `None`.
    pub run_id: Option<String>,
}

/// A fork ready to run, and what it was made from.
pub struct Forked<'a> {
    pub session: Session<'a>,
    pub parent: String,
    pub round: usize,
    pub intervention: Intervention,
    /// The parent's calls before the round, which the fork starts with.
    pub copied: usize,
}

/// The fork `request` asks for, ready to run: refused (an [`InputError`] that says why) when
/// the parent is not a finished run, the agent or model names nothing, or the text is too long.
/// The protocol's own refusals (intervention, round) come when the session builds the debate.
pub async fn prepare<'a>(
    store: &'a dyn Store,
    request: ForkRequest,
    on_message: &mut dyn FnMut(&str),
) -> Result<Forked<'a>> {
    let parent = finished_parent(store, &request.parent).await?;
    let spec: DebateSpec = serde_json::from_value(parent.spec.clone())
        .with_context(|| format!("run {}: the stored debate spec is unreadable", parent.id))?;
    let local = request.local.clone().unwrap_or_default();
    let mut config = parent_config(store, &parent, &spec, &local, request.via, on_message).await?;
    let redactor = Arc::new(config.redactor().map_err(InputError::from)?);
    let intervention = match &request.change {
        Change::Null => Intervention::Null,
        Change::Say { agent, text } => {
            if text.len() > MAX_SAY_BYTES {
                return bad_input(format!(
                    "{}: the text is {} bytes; at most {MAX_SAY_BYTES} may replace a response",
                    request.via.name(Field::ForkSay),
                    text.len()
                ));
            }
            Intervention::Say {
                agent: agent_index(&spec, agent, request.via)?,
                text: text.clone(),
            }
        }
        Change::Model { agent, model } => {
            let agent = agent_index(&spec, agent, request.via)?;
            let at = config
                .agents
                .iter()
                .position(|a| a.id == spec.agents[agent].id)
                .with_context(|| {
                    format!(
                        "run {}: agent {} ({}) is not in its stored configuration",
                        parent.id,
                        agent + 1,
                        spec.agents[agent].id
                    )
                })?;
            let catalog = request.local.as_ref().unwrap_or(&config);
            config.agents[at] = swapped(&config.agents[at], model, &catalog.agents, request.via)?;
            Intervention::Model {
                agent,
                model: model.clone(),
                backend: String::new(),
            }
        }
    };
    let mut built = crate::agents::build(&config, spec.kind, on_message)?;
    let intervention = match intervention {
        Intervention::Model { agent, model, .. } => {
            // The backend as the fork's calls record it.
            let backend = built
                .specs
                .iter()
                .position(|s| s.id == spec.agents[agent].id)
                .map(|i| built.engine[i].model.name())
                .unwrap_or_default();
            Intervention::Model {
                agent,
                model,
                backend,
            }
        }
        other => other,
    };
    // The team fitted as the parent's debate was, and checked to be the one it ran.
    let protocol = config.build_protocol().map_err(InputError::from)?;
    let roles: Vec<AgentRole> = built.specs.iter().map(|a| a.role).collect();
    let lineup = Lineup::fit(&*protocol, &roles, config.debate.rounds);
    built.specs = lineup.keep(std::mem::take(&mut built.specs));
    built.engine = lineup.keep(std::mem::take(&mut built.engine));
    let ids = |agents: &[moot_core::debate::AgentSpec]| -> Vec<String> {
        agents.iter().map(|a| a.id.clone()).collect()
    };
    if ids(&built.specs) != ids(&spec.agents) || lineup.rounds != spec.rounds {
        return bad_input(format!(
            "run {}'s stored configuration no longer builds the debate it ran (agents {} for {} rounds; it ran {} for {})",
            parent.id,
            ids(&built.specs).join(", "),
            lineup.rounds,
            ids(&spec.agents).join(", "),
            spec.rounds
        ));
    }
    // Stored fitted, each agent's seed pinned, so that resuming the fork builds this team.
    config.agents = lineup
        .keep(config.agents.clone().into_iter().enumerate().collect())
        .into_iter()
        .map(|(i, mut a)| {
            a.sampling.seed = Some(config.agent_seed(i, &a));
            a
        })
        .collect();
    config.debate.rounds = lineup.rounds;
    let parent_calls = store.calls(&parent.id).await?;
    let copied = parent_calls
        .iter()
        .filter(|c| (c.round as usize) < request.round)
        .count();
    let run_id = request
        .run_id
        .clone()
        .unwrap_or_else(moot_engine::new_run_id);
    let session = Session {
        store,
        run_id,
        config,
        protocol,
        spec,
        agents: built,
        restore: None,
        redactor,
        via: request.via,
        fork: Some(ForkSource {
            parent: parent.id.clone(),
            parent_calls,
            round: request.round,
            intervention: intervention.clone(),
        }),
    };
    Ok(Forked {
        session,
        parent: parent.id,
        round: request.round,
        intervention,
        copied,
    })
}

/// Why a fork of `parent` with an intervention of `kind` at `round` is refused by its protocol
/// (see `moot_core::protocol::check_fork`), if it is; checked before anything is built, as
/// `moot bench --fork-of` does for each protocol of a benchmark.
pub fn refusal(
    parent: &RunRecord,
    round: usize,
    kind: moot_core::fork::InterventionKind,
) -> Result<Option<String>> {
    let spec: DebateSpec = serde_json::from_value(parent.spec.clone())
        .with_context(|| format!("run {}: the stored debate spec is unreadable", parent.id))?;
    let Some(protocol) = Config::protocol_of_run(&parent.config, &parent.protocol) else {
        return Ok(Some(format!(
            "protocol {} no longer builds from run {}'s configuration",
            parent.protocol, parent.id
        )));
    };
    Ok(
        moot_core::protocol::check_fork(&*protocol, kind, round, spec.rounds)
            .err()
            .map(|e| e.to_string()),
    )
}

/// The run `id`, which must be finished: a fork starts from a whole debate.
async fn finished_parent(store: &dyn Store, id: &str) -> Result<RunRecord> {
    let run = match store.run(id).await {
        Ok(run) => run,
        Err(StoreError::RunNotFound(_)) => return Err(crate::not_found::NotFound::run(id).into()),
        Err(e) => return Err(e.into()),
    };
    if run.status != RunStatus::Done {
        return bad_input(format!(
            "run {id} is {}: a fork starts from a finished debate (moot resume {} finishes it)",
            run.shown_status(),
            crate::shell::shell_word(id)
        ));
    }
    Ok(run)
}

/// The parent's configuration as its debate ran, admitted on this machine (`local`; see
/// [`crate::stored::admit`], which also gives it the protocol it ran with only the options that
/// protocol reads: a benchmark stores one configuration for all its protocols), with the
/// debate's seed, and for a benchmark's debate of simulated agents the item's gold answer (its
/// link says it).
async fn parent_config(
    store: &dyn Store,
    parent: &RunRecord,
    spec: &DebateSpec,
    local: &Config,
    via: Via,
    on_notice: &mut dyn FnMut(&str),
) -> Result<Config> {
    let mut config =
        crate::stored::admit(Stored::Run(parent), local, Work::Debate, via, on_notice)?;
    // A benchmark builds configured (not simulated) agents once, seeded from its
    // configuration's seed, and only simulated ones per item from the item's seed (see
    // `benchmark::ItemAgents`): pin the seeds the parent's agents asked with before the debate's
    // seed replaces the configuration's, or no request of the fork would be the parent's and
    // nothing from its round on could be reused. For a `moot ask` run the two seeds are one.
    if !config.agents.iter().all(AgentConfig::is_sim) {
        let seeds: Vec<u64> = config
            .agents
            .iter()
            .enumerate()
            .map(|(i, a)| config.agent_seed(i, a))
            .collect();
        for (agent, seed) in config.agents.iter_mut().zip(seeds) {
            agent.sampling.seed = Some(seed);
        }
    }
    config.debate.seed = spec.seed;
    if config.debate.gold.is_none() && config.agents.iter().any(AgentConfig::is_sim) {
        config.debate.gold = bench_gold(store, &parent.id).await?;
    }
    Ok(config)
}

/// The gold answer a benchmark linked to its debate `run_id` (`<bench>/<protocol>/<item>`).
async fn bench_gold(store: &dyn Store, run_id: &str) -> Result<Option<String>> {
    let Some((bench, _)) = run_id.split_once('/') else {
        return Ok(None);
    };
    match store.bench_items(bench).await {
        Ok(items) => Ok(items
            .into_iter()
            .find(|i| i.run_id == run_id)
            .map(|i| i.gold)),
        Err(StoreError::BenchNotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The agent `name` stands for: a number from 1, or an agent's id.
pub fn agent_index(spec: &DebateSpec, name: &str, via: Via) -> Result<usize, InputError> {
    let n = spec.agents.len();
    let agent = via.name(Field::ForkAgent);
    if let Ok(number) = name.trim().parse::<usize>() {
        if (1..=n).contains(&number) {
            return Ok(number - 1);
        }
        return Err(InputError(format!(
            "{agent} {number}: the debate's agents are 1 to {n}"
        )));
    }
    spec.agents
        .iter()
        .position(|a| a.id == name)
        .ok_or_else(|| {
            InputError(format!(
                "{agent} {name:?}: no agent of the debate has that id (its agents: {})",
                spec.agents
                    .iter()
                    .enumerate()
                    .map(|(i, a)| format!("{} = {}", i + 1, a.id))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// Agent `agent` answering with `model` (see the module's documentation for what it names):
/// the same id and persona, another backend.
fn swapped(
    agent: &AgentConfig,
    model: &str,
    catalog: &[AgentConfig],
    via: Via,
) -> Result<AgentConfig> {
    let model_arg = via.name(Field::ForkModel);
    if let Some(other) = catalog.iter().find(|a| a.id == model) {
        return Ok(AgentConfig {
            id: agent.id.clone(),
            persona: agent.persona.clone(),
            contract: agent.contract,
            // The agent keeps its part in the debate; only its model changes.
            role: agent.role,
            sampling: moot_config::Sampling {
                // Its position's seed, so the swap changes the model and nothing else.
                seed: agent.sampling.seed,
                ..other.sampling.clone()
            },
            limits: other.limits.clone(),
            backend: other.backend.clone(),
        });
    }
    let ids = || {
        catalog
            .iter()
            .map(|a| a.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let backend = match agent.backend.with_model(model) {
        ModelSwap::Swapped(backend) => backend,
        ModelSwap::NotOneOf(models) => {
            return bad_input(format!(
                "{model_arg} {model:?} is neither a configured agent ({}) nor a {} preset ({})",
                ids(),
                agent.backend.name(),
                models.join(", ")
            ))
        }
        ModelSwap::NoModel => {
            return bad_input(format!(
                "{model_arg} {model:?}: agent {} runs a {} backend, which has no model to swap, and no configured agent has that id ({}); give {} a configuration with such an agent",
                agent.id,
                agent.backend.name(),
                ids(),
                via.name(Field::Config)
            ))
        }
    };
    Ok(AgentConfig {
        backend,
        ..agent.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use moot_backends::sim::SimAgent;
    use moot_config::backend::openai::OpenAi;
    use moot_config::backend::scripted::Scripted;
    use moot_config::backend::sim::Sim;
    use moot_config::Backend;
    use moot_core::answer::AnswerKind;

    fn message(e: anyhow::Error) -> String {
        format!("{e:#}")
    }

    #[test]
    fn agents_are_named_by_number_from_one_or_by_id() {
        let spec = DebateSpec::with_agents("q", AnswerKind::Numeric, 3, 1, 1);
        let second = spec.agents[1].id.clone();
        assert_eq!(agent_index(&spec, "1", Via::Cli), Ok(0));
        assert_eq!(agent_index(&spec, &second, Via::Cli), Ok(1));
        assert!(agent_index(&spec, "0", Via::Cli)
            .unwrap_err()
            .0
            .contains("agents are 1 to 3"));
        assert!(agent_index(&spec, "4", Via::Cli)
            .unwrap_err()
            .0
            .contains("agents are 1 to 3"));
        let e = agent_index(&spec, "nobody", Via::Cli).unwrap_err().0;
        assert!(e.contains("no agent of the debate has that id"), "{e}");
        assert!(e.contains(&format!("2 = {second}")), "{e}");
    }

    #[test]
    fn a_model_is_a_configured_agent_first_then_a_model_of_the_agents_backend() {
        let config =
            |text: &str| -> Config { moot_config::from_text(text, "team.toml").unwrap().0 };
        let sim = AgentConfig::new("sim-1", Backend::new(Sim::default()));
        let catalog = config(
            "[[agents]]\nid = \"big\"\nbackend = \"openai\"\nmodel = \"gpt-big\"\nbase_url = \"http://h/v1\"\ntemperature = 0.2\n",
        )
        .agents;
        // A configured agent's backend and sampling, under the agent's own id and seed.
        let swapped_in = swapped(&sim, "big", &catalog, Via::Cli).unwrap();
        assert_eq!(swapped_in.id, "sim-1");
        assert_eq!(swapped_in.backend, catalog[0].backend);
        assert_eq!(swapped_in.sampling.temperature, Some(0.2));
        // A sim preset for a simulated agent; anything else is refused with what there is.
        let expert = swapped(&sim, "expert", &catalog, Via::Cli).unwrap();
        assert_eq!(
            expert.backend,
            Backend::new(Sim {
                sim: SimAgent::preset("expert")
            })
        );
        let e = message(swapped(&sim, "gpt-4o", &catalog, Via::Cli).unwrap_err());
        assert!(e.contains("big") && e.contains("expert"), "{e}");
        // The model of an HTTP agent, on the same endpoint.
        let swapped_model = swapped(&catalog[0], "gpt-small", &[], Via::Cli).unwrap();
        match (
            swapped_model.backend.settings::<OpenAi>(),
            catalog[0].backend.settings::<OpenAi>(),
        ) {
            (Some(new), Some(old)) => {
                assert_eq!(new.http.model, "gpt-small");
                assert_eq!(new.http.endpoints, old.http.endpoints);
            }
            other => panic!("{other:?}"),
        }
        // Scripted and cli agents have no model to swap.
        let scripted = AgentConfig::new(
            "s",
            Backend::new(Scripted {
                responses: vec!["1".into()],
            }),
        );
        let e = message(swapped(&scripted, "x", &catalog, Via::Cli).unwrap_err());
        assert!(e.contains("has no model to swap"), "{e}");
    }
}
