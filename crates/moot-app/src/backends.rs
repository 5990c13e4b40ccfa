//! Every backend an agent can run on, as the application runs it: one [`Driver`] per entry of
//! `moot_config::BACKENDS` (same names, same order; a test holds them together). A driver says
//! how an agent's model is built, whether its calls are retried, and what `moot health` checks
//! before it calls the agent. [`crate::agents::build`] and [`crate::health`] find an agent's
//! driver by its backend's name ([`driver`]) and never match on the backend themselves.
//!
//! Adding a backend: its model in `moot-backends`, its configuration in `moot-config` (a
//! `Backend` variant and a `BACKENDS` entry), and here one [`Driver`] in [`DRIVERS`] with the
//! function that builds it. A backend in a crate of its own (as `moot-local`) is an optional
//! dependency of this crate behind a feature that the front ends forward, as `local` is.

#[cfg(feature = "local")]
use std::collections::HashMap;
#[cfg(feature = "local")]
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use moot_backends::anthropic::{AnthropicConfig, AnthropicModel};
use moot_backends::cli::CliModel;
use moot_backends::models::ModelRef;
use moot_backends::openai::{OpenAiConfig, OpenAiModel};
use moot_backends::scripted::{Scripted, ScriptedModel};
use moot_backends::sim::SimModel;
use moot_backends::LanguageModel;
use moot_config::{AgentConfig, Backend, Config, Endpoints, Http};
use moot_core::answer::AnswerKind;
#[cfg(feature = "local")]
use moot_local::{LocalModel, LocalOptions};

/// How the application runs one backend.
pub struct Driver {
    /// The name `backend = …` gives it, as in `moot_config::BACKENDS`.
    pub name: &'static str,
    /// Whether its failures can be transient (network, processes), so that its calls are
    /// retried.
    pub retries: bool,
    /// Whether it reports token logprobs on every call, asked or not.
    pub always_logprobs: bool,
    /// Whether it runs inside moot's process with nothing outside to reach, so that
    /// `moot health` has nothing to call.
    pub in_process: bool,
    /// What `moot health` checks for it before calling it, for its help.
    pub health_checks: &'static str,
    /// What must hold before a call and can be checked without one (an API key set, a model
    /// pulled); the problem otherwise. `moot health` runs it.
    pub ready: fn(&Backend) -> Result<(), String>,
    /// Builds the model of `agent`, the `index`-th agent of the configuration.
    pub build: fn(&mut Building<'_>, usize, &AgentConfig) -> Result<Arc<dyn LanguageModel>>,
}

/// Every backend's driver, in the order of `moot_config::BACKENDS`.
pub const DRIVERS: &[Driver] = &[
    Driver {
        name: "local",
        retries: false,
        always_logprobs: true,
        in_process: false,
        health_checks: "the model is pulled (health never downloads it) or its .gguf file exists",
        ready: |b| match b {
            Backend::Local { model } => model_pulled(model.as_deref()),
            _ => Ok(()),
        },
        build: build_local,
    },
    Driver {
        name: "openai",
        retries: true,
        always_logprobs: false,
        in_process: false,
        health_checks: "the variable named by api_key_env, if any, is set",
        ready: |b| match b {
            Backend::OpenAi { http, .. } => api_key_set(http),
            _ => Ok(()),
        },
        build: build_openai,
    },
    Driver {
        name: "anthropic",
        retries: true,
        always_logprobs: false,
        in_process: false,
        health_checks: "the variable named by api_key_env, if any, is set",
        ready: |b| match b {
            Backend::Anthropic { http } => api_key_set(http),
            _ => Ok(()),
        },
        build: build_anthropic,
    },
    Driver {
        name: "cli",
        retries: true,
        always_logprobs: false,
        in_process: false,
        health_checks: "the command is in security.cli_allowed_commands, exists and can be run \
                        (from working_dir)",
        // The configuration's own check of a cli agent (`Config::check_agent_can_run`), which
        // health runs for every agent, is all there is.
        ready: |_| Ok(()),
        build: build_cli,
    },
    Driver {
        name: "scripted",
        retries: false,
        always_logprobs: false,
        in_process: true,
        health_checks: "nothing: it runs in moot's process and is not called",
        ready: |_| Ok(()),
        build: build_scripted,
    },
    Driver {
        name: "sim",
        retries: false,
        always_logprobs: true,
        in_process: true,
        health_checks: "nothing: it runs in moot's process and is not called",
        ready: |_| Ok(()),
        build: build_sim,
    },
];

/// The driver of `backend`. Every backend has one (a test builds one of each); a missing one
/// is reported as the bug it is, not a panic.
pub fn driver(backend: &Backend) -> Result<&'static Driver> {
    let name = backend.name();
    DRIVERS
        .iter()
        .find(|d| d.name == name)
        .with_context(|| format!("backend {name:?} has no driver in moot-app (a bug in moot)"))
}

/// What building the agents of one configuration shares: the configuration, the answer kind
/// (sim agents need it), the embedded models loaded so far, and where to say what is happening
/// (pulling or loading a model).
pub struct Building<'a> {
    pub(crate) config: &'a Config,
    pub(crate) kind: AnswerKind,
    /// Embedded models loaded once per model file, shared by the agents that run on them.
    #[cfg(feature = "local")]
    pub(crate) local_models: HashMap<PathBuf, Arc<LocalModel>>,
    /// Only pulling and loading the embedded model is reported, so without it nothing is.
    #[cfg_attr(not(feature = "local"), allow(dead_code))]
    pub(crate) progress: &'a mut dyn FnMut(&str),
}

impl<'a> Building<'a> {
    pub(crate) fn new(
        config: &'a Config,
        kind: AnswerKind,
        progress: &'a mut dyn FnMut(&str),
    ) -> Building<'a> {
        Building {
            config,
            kind,
            #[cfg(feature = "local")]
            local_models: HashMap::new(),
            progress,
        }
    }
}

/// The error of a driver handed another backend's agent: [`driver`] finds drivers by the
/// backend's name, so only a driver registered under a wrong name sees one.
fn not_mine(index: usize, agent: &AgentConfig, driver: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "agents[{index}]: backend {:?} was given to the {driver:?} driver (a bug in moot)",
        agent.backend.name()
    )
}

fn build_local(
    b: &mut Building<'_>,
    i: usize,
    agent: &AgentConfig,
) -> Result<Arc<dyn LanguageModel>> {
    let Backend::Local { model } = &agent.backend else {
        return Err(not_mine(i, agent, "local"));
    };
    local_model(b, i, model.as_deref())
}

fn build_openai(
    _: &mut Building<'_>,
    i: usize,
    agent: &AgentConfig,
) -> Result<Arc<dyn LanguageModel>> {
    let Backend::OpenAi { http, server_kind } = &agent.backend else {
        return Err(not_mine(i, agent, "openai"));
    };
    balanced("openai", http, "", |url| {
        let mut c = OpenAiConfig::new(url, http.model.clone());
        c.api_key_env = http.api_key_env.clone();
        c.stream = http.stream;
        c.server_kind = server_kind.unwrap_or_default().for_url(&c.base_url);
        Ok(Arc::new(OpenAiModel::new(c)?))
    })
    .with_context(|| format!("agents[{i}] ({})", agent.id))
}

fn build_anthropic(
    _: &mut Building<'_>,
    i: usize,
    agent: &AgentConfig,
) -> Result<Arc<dyn LanguageModel>> {
    let Backend::Anthropic { http } = &agent.backend else {
        return Err(not_mine(i, agent, "anthropic"));
    };
    balanced(
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
    .with_context(|| format!("agents[{i}] ({})", agent.id))
}

fn build_cli(
    b: &mut Building<'_>,
    i: usize,
    agent: &AgentConfig,
) -> Result<Arc<dyn LanguageModel>> {
    let Some(c) = b.config.cli_config(agent) else {
        return Err(not_mine(i, agent, "cli"));
    };
    Ok(Arc::new(
        CliModel::new(c).with_context(|| format!("agents[{i}] ({})", agent.id))?,
    ))
}

fn build_scripted(
    _: &mut Building<'_>,
    i: usize,
    agent: &AgentConfig,
) -> Result<Arc<dyn LanguageModel>> {
    let Backend::Scripted { responses } = &agent.backend else {
        return Err(not_mine(i, agent, "scripted"));
    };
    Ok(Arc::new(ScriptedModel::new(
        agent.id.clone(),
        responses.iter().map(Scripted::reply),
    )))
}

fn build_sim(
    b: &mut Building<'_>,
    i: usize,
    agent: &AgentConfig,
) -> Result<Arc<dyn LanguageModel>> {
    let Backend::Sim { sim } = &agent.backend else {
        return Err(not_mine(i, agent, "sim"));
    };
    let gold = b
        .config
        .debate
        .gold
        .clone()
        .with_context(|| format!("agents[{i}]: a sim agent needs debate.gold"))?;
    Ok(Arc::new(SimModel::new(
        sim.clone().unwrap_or_default(),
        gold,
        b.kind,
        agent_seed(b.config, i, agent),
    )))
}

/// Agent `i`'s seed: its own, else the debate's plus its position, so each agent samples
/// differently but reproducibly.
pub(crate) fn agent_seed(config: &Config, i: usize, agent: &AgentConfig) -> u64 {
    agent
        .sampling
        .seed
        .unwrap_or(config.debate.seed.wrapping_add(i as u64))
}

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

/// The embedded model agent `i` runs on, loaded once per model file: agents on the same model
/// share its context as separate sequences.
#[cfg(feature = "local")]
fn local_model(
    b: &mut Building<'_>,
    i: usize,
    model: Option<&str>,
) -> Result<Arc<dyn LanguageModel>> {
    let spec = model.map_or_else(
        || moot_backends::models::default_model().name.to_string(),
        str::to_string,
    );
    let model_ref = ModelRef::parse(&spec).with_context(|| format!("agents[{i}].model"))?;
    let path = model_ref
        .ensure(&mut *b.progress)
        .with_context(|| format!("agents[{i}]: model {spec}"))?;
    if let Some(m) = b.local_models.get(&path) {
        return Ok(m.clone());
    }
    (b.progress)(&format!("loading {}", model_ref.label()));
    let sharing = b
        .config
        .agents
        .iter()
        .filter(|a| matches!(&a.backend, Backend::Local { model: m } if m.as_deref() == model))
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
    b.local_models.insert(path, m.clone());
    Ok(m)
}

/// Without the embedded backend compiled in, a local agent cannot run.
#[cfg(not(feature = "local"))]
fn local_model(_: &mut Building<'_>, i: usize, _: Option<&str>) -> Result<Arc<dyn LanguageModel>> {
    Err(crate::error::InputError(format!(
        "agents[{i}]: backend \"local\" (the embedded model) is not compiled into this build of moot (feature `local`)"
    ))
    .into())
}

/// A known local model must already be pulled (health never downloads); a path must exist.
fn model_pulled(model: Option<&str>) -> Result<(), String> {
    use moot_backends::models::{ModelCache, ModelStatus};
    let name = model.unwrap_or(moot_backends::models::default_model().name);
    match ModelRef::parse(name).map_err(|e| e.to_string())? {
        ModelRef::Known(m) => {
            let cache = ModelCache::from_env().map_err(|e| e.to_string())?;
            match cache.status(m) {
                ModelStatus::Missing => Err(format!(
                    "model {} is not pulled (moot model pull {})",
                    m.name, m.name
                )),
                _ => Ok(()),
            }
        }
        ModelRef::Path(p) if p.is_file() => Ok(()),
        ModelRef::Path(p) => Err(format!("model file {} does not exist", p.display())),
    }
}

/// The variable an HTTP agent's key is read from, when it names one, is set and not empty.
fn api_key_set(http: &Http) -> Result<(), String> {
    match &http.api_key_env {
        Some(var) if std::env::var_os(var).is_none_or(|v| v.is_empty()) => {
            Err(format!("the API key variable {var} is not set"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use moot_config::{Endpoints, Http};

    /// One agent of each backend, built from its variant. The match has no catch-all arm, so a
    /// new `Backend` variant does not compile until it is added here, and then the tests below
    /// hold it to a `moot_config::BACKENDS` entry and a driver.
    fn one_of_each() -> Vec<Backend> {
        let http = Http {
            model: "m".into(),
            endpoints: Endpoints::One(Some("http://127.0.0.1:9/v1".into())),
            api_key_env: None,
            stream: false,
        };
        let all = vec![
            Backend::Local { model: None },
            Backend::OpenAi {
                http: http.clone(),
                server_kind: None,
            },
            Backend::Anthropic { http },
            Backend::Cli {
                command: "/bin/true".into(),
                args: vec![],
                mode_arg: true,
                args_after_mode: vec![],
                working_dir: None,
            },
            Backend::Scripted {
                responses: vec!["42".into()],
            },
            Backend::Sim { sim: None },
        ];
        for b in &all {
            match b {
                Backend::Local { .. }
                | Backend::OpenAi { .. }
                | Backend::Anthropic { .. }
                | Backend::Cli { .. }
                | Backend::Scripted { .. }
                | Backend::Sim { .. } => {}
            }
        }
        all
    }

    #[test]
    fn every_backend_variant_has_a_config_entry_and_a_driver() {
        let variants = one_of_each();
        let names: Vec<&str> = variants.iter().map(Backend::name).collect();
        assert_eq!(names, moot_config::backend_names(), "one variant per entry");
        for b in &variants {
            let d = driver(b).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(d.name, b.name());
        }
    }

    #[test]
    fn the_drivers_are_the_config_registrys_backends_in_order() {
        let drivers: Vec<&str> = DRIVERS.iter().map(|d| d.name).collect();
        assert_eq!(drivers, moot_config::backend_names());
    }

    /// Each driver accepts its own backend's agents: none reports the bug of being handed
    /// another's (a local agent fails only for want of its model or of the `local` feature).
    #[test]
    fn every_driver_builds_its_own_backend() {
        for backend in one_of_each() {
            let name = backend.name();
            let mut config = Config::default();
            config.debate.gold = Some("42".into());
            config.security.cli_allowed_commands = vec!["/bin/true".into()];
            let agent = AgentConfig::new("a", backend);
            config.agents = vec![agent.clone()];
            if name == "local" {
                // Building it would pull and load the embedded model.
                continue;
            }
            let mut progress = |_: &str| {};
            let mut b = Building::new(&config, AnswerKind::Numeric, &mut progress);
            let d = driver(&agent.backend).unwrap_or_else(|e| panic!("{e}"));
            if let Err(e) = (d.build)(&mut b, 0, &agent) {
                panic!("{name}: {e:#}");
            }
        }
    }

    #[test]
    fn a_missing_api_key_variable_is_named() {
        let http = Http {
            model: "m".into(),
            endpoints: Endpoints::One(None),
            api_key_env: Some("MOOT_TEST_NO_SUCH_KEY_VARIABLE".into()),
            stream: false,
        };
        let e = api_key_set(&http).unwrap_err();
        assert!(e.contains("MOOT_TEST_NO_SUCH_KEY_VARIABLE"), "{e}");
    }
}
