//! Builds the agents of a configuration: each agent's model by its backend's driver
//! ([`crate::backends`]), wrapped in its rate limits and retries; one embedded model per model
//! file (agents on the same local model share its context as separate sequences).

use std::sync::Arc;

use anyhow::{Context, Result};
use moot_backends::LanguageModel;
use moot_core::chat::SamplingParams;
use moot_core::debate::AgentSpec;
use moot_engine::EngineAgent;
#[cfg(feature = "local")]
use moot_local::LocalModel;

use moot_config::{AgentConfig, Config};

use crate::backends::{agent_seed, driver, Building, Driver};

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
    driver: &Driver,
    config: &Config,
) -> Result<Arc<dyn LanguageModel>> {
    let limits = agent.limits();
    let model: Arc<dyn LanguageModel> = if limits.is_unlimited() {
        model
    } else {
        let shared = moot_backends::limits::shared(&model.name(), limits)?;
        Arc::new(moot_backends::limits::LimitedModel::new(model, shared))
    };
    Ok(if driver.retries && config.retry.max_retries > 0 {
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
    let mut building = Building::new(config, kind, progress);
    let mut specs = Vec::new();
    let mut engine = Vec::new();
    for (i, a) in config.agents.iter().enumerate() {
        let driver = driver(&a.backend)?;
        let model = (driver.build)(&mut building, i, a)?;
        let model = resilient(model, a, driver, config)
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
                seed: Some(agent_seed(config, i, a)),
                logprobs: sampling.logprobs || driver.always_logprobs,
                resample: None,
            },
        });
    }
    Ok(BuiltAgents {
        specs,
        engine,
        #[cfg(feature = "local")]
        local: building.local_models.into_values().collect(),
    })
}
