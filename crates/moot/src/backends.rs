//! Builds the agents of a configuration: one backend per agent, one embedded model per model
//! file (agents on the same local model share its context as separate sequences).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use moot_backends::anthropic::{AnthropicConfig, AnthropicModel};
use moot_backends::cli::{CliConfig, CliModel};
use moot_backends::models::ModelRef;
use moot_backends::openai::{Dialect, OpenAiConfig, OpenAiModel};
use moot_backends::scripted::{Scripted, ScriptedModel};
use moot_backends::sim::SimModel;
use moot_backends::LanguageModel;
use moot_core::chat::SamplingParams;
use moot_core::debate::AgentSpec;
use moot_engine::EngineAgent;
use moot_local::{LocalModel, LocalOptions};

use crate::config::{AgentConfig, Config};

/// The agents of a run, plus the embedded models they use (for throughput reporting).
pub struct Agents {
    pub specs: Vec<AgentSpec>,
    pub engine: Vec<EngineAgent>,
    pub local: Vec<Arc<LocalModel>>,
}

/// Three agents on the embedded default model: what `moot ask` uses without a config.
pub fn default_agents(count: usize) -> Vec<AgentConfig> {
    (1..=count.max(1))
        .map(|i| AgentConfig {
            id: format!("agent-{i}"),
            backend: "local".into(),
            model: Some(moot_backends::models::default_model().name.into()),
            temperature: Some(0.7),
            max_tokens: Some(512),
            ..AgentConfig::default()
        })
        .collect()
}

/// `count` agents from the configured ones: the first `count`, cycling with numbered ids when
/// more are asked for than configured.
pub fn resize(agents: &[AgentConfig], count: usize) -> Vec<AgentConfig> {
    (0..count)
        .map(|i| {
            let mut a = agents[i % agents.len()].clone();
            if i >= agents.len() {
                a.id = format!("{}-{}", a.id, i / agents.len() + 1);
            }
            a
        })
        .collect()
}

/// `count` simulated agents with default parameters (`moot ask --sim`).
pub fn sim_agents(count: usize) -> Vec<AgentConfig> {
    (1..=count.max(1))
        .map(|i| AgentConfig {
            id: format!("sim-{i}"),
            backend: "sim".into(),
            ..AgentConfig::default()
        })
        .collect()
}

/// An HTTP agent's model: one endpoint (`base_url`, Anthropic's by default), or several
/// (`base_urls`) used in turn with failover.
fn balanced(
    agent: &AgentConfig,
    build: impl Fn(String) -> Result<Arc<dyn LanguageModel>, moot_backends::BackendError>,
) -> Result<Arc<dyn LanguageModel>> {
    if agent.base_urls.is_empty() {
        let url = agent.base_url.clone().unwrap_or_else(|| {
            if agent.backend == "anthropic" {
                moot_backends::anthropic::DEFAULT_BASE_URL.into()
            } else {
                String::new()
            }
        });
        return Ok(build(url)?);
    }
    let endpoints = agent
        .base_urls
        .iter()
        .map(|u| build(u.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let name = format!(
        "{}:{}@{}",
        agent.backend,
        agent.model.as_deref().unwrap_or_default(),
        agent.base_urls.join(",")
    );
    Ok(Arc::new(moot_backends::balance::BalancedModel::new(
        name,
        endpoints,
        moot_backends::balance::DEFAULT_COOLDOWN,
    )?))
}

/// A provider wrapped in its rate limits (shared per provider and model across the process) and,
/// for backends whose failures can be transient, in retries; each retry waits for the limits
/// again.
fn resilient(
    model: Arc<dyn LanguageModel>,
    agent: &AgentConfig,
    config: &Config,
) -> Result<Arc<dyn LanguageModel>> {
    let limits = agent.limits();
    let model: Arc<dyn LanguageModel> = if limits.is_unlimited() {
        model
    } else {
        let shared = moot_backends::limits::shared(&model.name(), limits)?;
        Arc::new(moot_backends::limits::LimitedModel::new(model, shared))
    };
    Ok(match agent.backend.as_str() {
        "openai" | "anthropic" | "cli" if config.retry.max_retries > 0 => Arc::new(
            moot_backends::retry::RetryingModel::new(model, config.retry.policy()),
        ),
        _ => model,
    })
}

pub fn build(
    config: &Config,
    kind: moot_core::answer::AnswerKind,
    progress: &mut dyn FnMut(&str),
) -> Result<Agents> {
    let mut local_models: HashMap<PathBuf, Arc<LocalModel>> = HashMap::new();
    let mut specs = Vec::new();
    let mut engine = Vec::new();
    let seed = config.debate.seed;
    for (i, a) in config.agents.iter().enumerate() {
        let model: Arc<dyn LanguageModel> = match a.backend.as_str() {
            "local" => {
                let spec = a
                    .model
                    .clone()
                    .unwrap_or_else(|| moot_backends::models::default_model().name.into());
                let model_ref =
                    ModelRef::parse(&spec).with_context(|| format!("agents[{i}].model"))?;
                let path = model_ref
                    .ensure(progress)
                    .with_context(|| format!("agents[{i}]: model {spec}"))?;
                match local_models.get(&path) {
                    Some(m) => m.clone(),
                    None => {
                        progress(&format!("loading {}", model_ref.label()));
                        let sharing = config
                            .agents
                            .iter()
                            .filter(|b| b.backend == "local" && b.model == a.model)
                            .count();
                        // One sequence per agent keeps its KV cache across rounds; two more serve
                        // calls outside any agent's conversation (MAD-M² judgements) without
                        // evicting an agent's cache.
                        let options = LocalOptions {
                            max_sequences: (sharing as u32 + 2).clamp(1, 16),
                            ..LocalOptions::default()
                        };
                        let m = Arc::new(
                            LocalModel::load(&path, options)
                                .with_context(|| format!("loading {}", path.display()))?,
                        );
                        local_models.insert(path, m.clone());
                        m
                    }
                }
            }
            "openai" => balanced(a, |url| {
                let mut c = OpenAiConfig::new(url, a.model.clone().unwrap_or_default());
                c.api_key_env = a.api_key_env.clone();
                c.stream = a.stream;
                c.dialect = Dialect::resolve(a.dialect.as_deref(), &c.base_url)?;
                Ok(Arc::new(OpenAiModel::new(c)?))
            })
            .with_context(|| format!("agents[{i}] ({})", a.id))?,
            "anthropic" => balanced(a, |url| {
                let mut c = AnthropicConfig::new(url, a.model.clone().unwrap_or_default());
                c.api_key_env = a.api_key_env.clone();
                c.stream = a.stream;
                Ok(Arc::new(AnthropicModel::new(c)?))
            })
            .with_context(|| format!("agents[{i}] ({})", a.id))?,
            "cli" => {
                let mut c = CliConfig::new(a.command.clone().unwrap_or_default(), a.args.clone());
                c.allowed_commands = config.security.cli_allowed_commands.clone();
                c.env_allow = config.security.cli_env_allow.clone();
                c.max_output_bytes = config.security.cli_max_output_bytes;
                c.max_input_bytes = config.security.cli_max_input_bytes;
                c.working_dir = a.working_dir.clone();
                Arc::new(CliModel::new(c).with_context(|| format!("agents[{i}] ({})", a.id))?)
            }
            "scripted" => Arc::new(ScriptedModel::new(
                a.id.clone(),
                a.responses.iter().map(Scripted::reply),
            )),
            "sim" => {
                let gold = config
                    .debate
                    .gold
                    .clone()
                    .with_context(|| format!("agents[{i}]: a sim agent needs debate.gold"))?;
                Arc::new(SimModel::new(
                    a.sim.clone().unwrap_or_default(),
                    gold,
                    kind,
                    a.seed.unwrap_or(seed.wrapping_add(i as u64)),
                ))
            }
            other => anyhow::bail!("agents[{i}].backend {other:?} is not a backend"),
        };
        let model =
            resilient(model, a, config).with_context(|| format!("agents[{i}] ({})", a.id))?;
        specs.push(AgentSpec {
            id: a.id.clone(),
            persona: a.persona.clone(),
        });
        engine.push(EngineAgent {
            model,
            params: SamplingParams {
                temperature: a.temperature,
                top_p: a.top_p,
                max_tokens: a.max_tokens,
                // Each agent samples differently but reproducibly.
                seed: Some(a.seed.unwrap_or(seed.wrapping_add(i as u64))),
                logprobs: a.logprobs || a.backend == "local" || a.backend == "sim",
            },
        });
    }
    Ok(Agents {
        specs,
        engine,
        local: local_models.into_values().collect(),
    })
}
