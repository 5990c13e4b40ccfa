//! Builds the agents of a configuration: each agent's model as its backend builds it
//! (`moot_config::BackendSettings::build`; the backends are `moot_config::BACKENDS`), wrapped
//! in its rate limits and, when its entry says its failures can be transient, retries; one
//! embedded model per model file (agents on the same local model share its context as
//! separate sequences).

use std::sync::Arc;

use anyhow::{Context, Result};
use moot_backends::LanguageModel;
use moot_core::chat::SamplingParams;
use moot_core::debate::AgentSpec;
use moot_engine::EngineAgent;
#[cfg(feature = "local")]
use moot_local::LocalModel;

use moot_config::{AgentConfig, BackendEntry, BuildAgent, BuildError, Config};

use crate::error::InputError;

/// The agents of a run, plus the embedded models they use (for throughput reporting).
pub struct BuiltAgents {
    pub specs: Vec<AgentSpec>,
    pub engine: Vec<EngineAgent>,
    #[cfg(feature = "local")]
    pub local: Vec<Arc<LocalModel>>,
}

impl BuiltAgents {
    /// A line on the embedded model's speed, when local agents ran.
    pub fn throughput(&self) -> Option<String> {
        #[cfg(feature = "local")]
        return self.local.first().map(|m| {
            let s = m.stats();
            let gen = s
                .generation_tokens_per_second()
                .map_or("n/a".to_string(), |t| format!("{t:.1}"));
            format!(
                "Embedded model: {gen} tok/s generating (all agents together), prompt tokens sent {} / processed {}",
                s.prompt_tokens, s.processed_prompt_tokens
            )
        });
        #[cfg(not(feature = "local"))]
        None
    }
}

/// A provider wrapped in its rate limits (shared per provider and model across the process) and,
/// for backends whose failures can be transient, in retries; each retry waits for the limits
/// again.
fn resilient(
    model: Arc<dyn LanguageModel>,
    agent: &AgentConfig,
    entry: &BackendEntry,
    config: &Config,
) -> Result<Arc<dyn LanguageModel>> {
    let limits = agent.limits();
    let model: Arc<dyn LanguageModel> = if limits.is_unlimited() {
        model
    } else {
        let shared = moot_backends::limits::shared(&model.name(), limits)?;
        Arc::new(moot_backends::limits::LimitedModel::new(model, shared))
    };
    Ok(if entry.retries && config.retry.max_retries > 0 {
        Arc::new(moot_backends::retry::RetryingModel::new(
            model,
            config.retry.policy(),
        ))
    } else {
        model
    })
}

/// Builds every agent of `config` for a debate whose answers are of `kind`.
pub fn build(
    config: &Config,
    kind: moot_core::answer::AnswerKind,
    progress: &mut dyn FnMut(&str),
) -> Result<BuiltAgents> {
    build_with(config, kind, None, progress)
}

/// [`build`], with where the agents a person answers for (`human`) ask them: the front end's
/// desk (the terminal, a page). Without one such agents are refused by name.
pub fn build_with(
    config: &Config,
    kind: moot_core::answer::AnswerKind,
    desk: Option<std::sync::Arc<dyn moot_backends::human::HumanDesk>>,
    progress: &mut dyn FnMut(&str),
) -> Result<BuiltAgents> {
    let mut building = config.building(kind, progress).with_desk(desk);
    let mut specs = Vec::new();
    let mut engine = Vec::new();
    for (i, a) in config.agents.iter().enumerate() {
        let entry = a.backend.entry();
        let seed = config.agent_seed(i, a);
        let agent = BuildAgent {
            index: i,
            id: &a.id,
            seed,
        };
        let model = a
            .backend
            .build(&mut building, &agent)
            .map_err(build_error)?;
        let model = resilient(model, a, entry, config)
            .with_context(|| format!("agents[{i}] ({})", a.id))?;
        specs.push(AgentSpec {
            persona: a.persona.clone(),
            contract: a.contract,
            role: a.role,
            ..AgentSpec::named(a.id.clone())
        });
        let sampling = &a.sampling;
        engine.push(EngineAgent {
            model,
            params: SamplingParams {
                temperature: sampling.temperature,
                top_p: sampling.top_p,
                max_tokens: sampling.max_tokens,
                seed: Some(seed),
                logprobs: sampling.logprobs || entry.always_logprobs,
                resample: None,
            },
        });
    }
    Ok(BuiltAgents {
        specs,
        engine,
        #[cfg(feature = "local")]
        local: building.into_local_models(),
    })
}

/// A build that failed for want of something the user gives (a feature, the gold answer, a
/// way to ask a person) is an input error; the rest are errors of the build.
fn build_error(e: BuildError) -> anyhow::Error {
    match e {
        BuildError::NotCompiled(message) | BuildError::Needs(message) => InputError(message).into(),
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use moot_config::AgentFields;
    use std::sync::Arc;

    /// Each backend's example agent builds (a local one only where its model is: building it
    /// would pull and load the embedded model), retried and asking for logprobs as its entry
    /// says.
    #[test]
    fn every_backend_builds_its_example_agent() {
        for entry in moot_config::BACKENDS {
            let text = format!(
                "id = \"a\"\nbackend = \"{}\"\n{}",
                entry.name, entry.example
            );
            let fields: AgentFields = toml::from_str(&text).unwrap();
            let mut config = Config::default();
            config.debate.gold = Some("42".into());
            config.security.cli_allowed_commands = vec!["/bin/true".into()];
            config.agents = vec![fields.into_agent(0).unwrap()];
            if entry.name == "local" {
                continue;
            }
            // A person is asked at a desk, which the front end gives.
            let desk: Arc<dyn moot_backends::human::HumanDesk> = Arc::new(
                moot_backends::human::TerminalDesk::new(Arc::new(Default::default())),
            );
            let built = build_with(
                &config,
                moot_core::answer::AnswerKind::Numeric,
                Some(desk),
                &mut |_| {},
            )
            .unwrap_or_else(|e| panic!("{}: {e:#}", entry.name));
            assert_eq!(
                built.engine[0].params.logprobs, entry.always_logprobs,
                "{}",
                entry.name
            );
        }
    }

    #[test]
    fn an_agent_a_person_answers_for_without_a_desk_is_an_input_error() {
        let fields: AgentFields = toml::from_str("id = \"p\"\nbackend = \"human\"\n").unwrap();
        let config = Config {
            agents: vec![fields.into_agent(0).unwrap()],
            ..Config::default()
        };
        let Err(e) = build(&config, moot_core::answer::AnswerKind::Numeric, &mut |_| {}) else {
            panic!("a human agent built with nowhere to ask a person");
        };
        assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
        assert!(format!("{e:#}").contains("answered by a person"), "{e:#}");
    }

    #[cfg(not(feature = "local"))]
    #[test]
    fn a_local_agent_without_the_embedded_backend_is_an_input_error() {
        let config = Config {
            agents: moot_config::default_agents(1),
            ..Config::default()
        };
        let Err(e) = build(&config, moot_core::answer::AnswerKind::Numeric, &mut |_| {}) else {
            panic!("a local agent built without the embedded backend");
        };
        assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
        assert!(format!("{e:#}").contains("feature `local`"), "{e:#}");
    }
}
