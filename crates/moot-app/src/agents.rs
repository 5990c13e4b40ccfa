//! Builds the agents of a configuration: one backend per agent, one embedded model per model
//! file (agents on the same local model share its context as separate sequences).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use moot_backends::anthropic::{AnthropicConfig, AnthropicModel};
use moot_backends::cli::CliModel;
#[cfg(feature = "local")]
use moot_backends::models::ModelRef;
use moot_backends::openai::{OpenAiConfig, OpenAiModel};
use moot_backends::scripted::{Scripted, ScriptedModel};
use moot_backends::sim::SimModel;
use moot_backends::LanguageModel;
use moot_core::chat::SamplingParams;
use moot_core::debate::AgentSpec;
use moot_engine::EngineAgent;
#[cfg(feature = "local")]
use moot_local::{LocalModel, LocalOptions};

use moot_config::{AgentConfig, Backend, Config, Endpoints, Http};

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

/// Models loaded once per model file, shared by the agents that run on them.
#[cfg(feature = "local")]
type LoadedModels = HashMap<PathBuf, Arc<LocalModel>>;
#[cfg(not(feature = "local"))]
type LoadedModels = HashMap<PathBuf, ()>;

/// An HTTP agent's model: one endpoint (`base_url`, else `default_url`), or several
/// (`base_urls`) used in turn with failover.
fn balanced(
    backend: &str,
    http: &Http,
    default_url: &str,
    build: impl Fn(String) -> Result<Arc<dyn LanguageModel>, moot_backends::BackendError>,
) -> Result<Arc<dyn LanguageModel>> {
    let urls = match &http.endpoints {
        Endpoints::One(url) => {
            return Ok(build(
                url.clone().unwrap_or_else(|| default_url.to_string()),
            )?)
        }
        Endpoints::Replicas(urls) => urls,
    };
    let endpoints = urls
        .iter()
        .map(|u| build(u.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let name = format!("{backend}:{}@{}", http.model, urls.join(","));
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
    Ok(if agent.backend.retries() && config.retry.max_retries > 0 {
        Arc::new(moot_backends::retry::RetryingModel::new(
            model,
            config.retry.policy(),
        ))
    } else {
        model
    })
}

/// The embedded model agent `i` runs on, loaded once per model file: agents on the same model
/// share its context as separate sequences.
#[cfg(feature = "local")]
fn local_model(
    config: &Config,
    i: usize,
    model: Option<&str>,
    loaded: &mut LoadedModels,
    progress: &mut dyn FnMut(&str),
) -> Result<Arc<dyn LanguageModel>> {
    let spec = model.map_or_else(
        || moot_backends::models::default_model().name.to_string(),
        str::to_string,
    );
    let model_ref = ModelRef::parse(&spec).with_context(|| format!("agents[{i}].model"))?;
    let path = model_ref
        .ensure(progress)
        .with_context(|| format!("agents[{i}]: model {spec}"))?;
    if let Some(m) = loaded.get(&path) {
        return Ok(m.clone());
    }
    progress(&format!("loading {}", model_ref.label()));
    let sharing = config
        .agents
        .iter()
        .filter(|b| matches!(&b.backend, Backend::Local { model: m } if m.as_deref() == model))
        .count();
    // One sequence per agent keeps its KV cache across rounds; two more serve calls outside any
    // agent's conversation (MAD-M² judgements) without evicting an agent's cache.
    let options = LocalOptions {
        max_sequences: (sharing as u32 + 2).clamp(1, 16),
        ..LocalOptions::default()
    };
    let m = Arc::new(
        LocalModel::load(&path, options).with_context(|| format!("loading {}", path.display()))?,
    );
    loaded.insert(path, m.clone());
    Ok(m)
}

/// Without the embedded backend compiled in, a local agent cannot run.
#[cfg(not(feature = "local"))]
fn local_model(
    _config: &Config,
    i: usize,
    _model: Option<&str>,
    _loaded: &mut LoadedModels,
    _progress: &mut dyn FnMut(&str),
) -> Result<Arc<dyn LanguageModel>> {
    Err(crate::error::InputError(format!(
        "agents[{i}]: backend \"local\" (the embedded model) is not compiled into this build of moot (feature `local`)"
    ))
    .into())
}

/// Builds every agent of `config` for a debate whose answers are of `kind`.
pub fn build(
    config: &Config,
    kind: moot_core::answer::AnswerKind,
    progress: &mut dyn FnMut(&str),
) -> Result<BuiltAgents> {
    let mut local_models: LoadedModels = HashMap::new();
    let mut specs = Vec::new();
    let mut engine = Vec::new();
    let seed = config.debate.seed;
    for (i, a) in config.agents.iter().enumerate() {
        let model: Arc<dyn LanguageModel> = match &a.backend {
            Backend::Local { model } => {
                local_model(config, i, model.as_deref(), &mut local_models, progress)?
            }
            Backend::OpenAi { http, dialect } => balanced("openai", http, "", |url| {
                let mut c = OpenAiConfig::new(url, http.model.clone());
                c.api_key_env = http.api_key_env.clone();
                c.stream = http.stream;
                c.dialect = dialect.unwrap_or_default().for_url(&c.base_url);
                Ok(Arc::new(OpenAiModel::new(c)?))
            })
            .with_context(|| format!("agents[{i}] ({})", a.id))?,
            Backend::Anthropic { http } => balanced(
                "anthropic",
                http,
                moot_backends::anthropic::DEFAULT_BASE_URL,
                |url| {
                    let mut c = AnthropicConfig::new(url, http.model.clone());
                    c.api_key_env = http.api_key_env.clone();
                    c.stream = http.stream;
                    Ok(Arc::new(AnthropicModel::new(c)?))
                },
            )
            .with_context(|| format!("agents[{i}] ({})", a.id))?,
            Backend::Cli { .. } => {
                let c = config
                    .cli_config(a)
                    .context("a cli agent has a cli configuration")?;
                Arc::new(CliModel::new(c).with_context(|| format!("agents[{i}] ({})", a.id))?)
            }
            Backend::Scripted { responses } => Arc::new(ScriptedModel::new(
                a.id.clone(),
                responses.iter().map(Scripted::reply),
            )),
            Backend::Sim { sim } => {
                let gold = config
                    .debate
                    .gold
                    .clone()
                    .with_context(|| format!("agents[{i}]: a sim agent needs debate.gold"))?;
                Arc::new(SimModel::new(
                    sim.clone().unwrap_or_default(),
                    gold,
                    kind,
                    a.sampling.seed.unwrap_or(seed.wrapping_add(i as u64)),
                ))
            }
        };
        let model =
            resilient(model, a, config).with_context(|| format!("agents[{i}] ({})", a.id))?;
        // Every configured agent debates: the configuration names no other role.
        specs.push(AgentSpec {
            persona: a.persona.clone(),
            contract: a.contract,
            ..AgentSpec::named(a.id.clone())
        });
        let sampling = &a.sampling;
        engine.push(EngineAgent {
            model,
            params: SamplingParams {
                temperature: sampling.temperature,
                top_p: sampling.top_p,
                max_tokens: sampling.max_tokens,
                // Each agent samples differently but reproducibly.
                seed: Some(sampling.seed.unwrap_or(seed.wrapping_add(i as u64))),
                logprobs: sampling.logprobs || a.backend.always_logprobs(),
            },
        });
    }
    #[cfg(not(feature = "local"))]
    drop(local_models);
    Ok(BuiltAgents {
        specs,
        engine,
        #[cfg(feature = "local")]
        local: local_models.into_values().collect(),
    })
}
