//! `[[agents]]`: who debates. An agent is its id, persona, sampling and rate limits, plus one
//! [`Backend`] holding exactly the keys that backend reads: a key another backend reads is
//! refused by name, for every backend alike.
//!
//! The file's flat shape (`backend = "openai"` next to `base_url`, `model`, …) is
//! [`AgentFields`]; agents are read from it and written back to it, so stored runs keep the
//! shape they were written with.

use std::path::PathBuf;

use moot_backends::models::ModelRef;
use moot_backends::sim::SimAgent;
use serde::{Deserialize, Deserializer, Serialize};

use moot_core::contract::ReplyContract;
use moot_core::debate::AgentRole;

use crate::error::{invalid, ConfigError};
use crate::names::ServerKindSetting;

/// Agents `moot ask` and `moot bench` debate among when neither the configuration nor
/// `--agents` says (and the number `moot config check` assumes then).
pub const DEFAULT_AGENTS: usize = 3;

/// Sampling of the embedded default team: some diversity between agents, answers that fit.
pub const DEFAULT_TEAM_TEMPERATURE: f32 = 0.7;
/// See [`DEFAULT_TEAM_TEMPERATURE`].
pub const DEFAULT_TEAM_MAX_TOKENS: u32 = 512;

/// One debating agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(into = "AgentFields")]
pub struct AgentConfig {
    pub id: String,
    pub persona: Option<String>,
    /// How the agent lays out its replies: moot's final line, or freemad's sections (agents of
    /// freemad configurations).
    pub contract: ReplyContract,
    /// What the agent does: debate (the default), or decide as a judge, an aggregator or a
    /// chairman in the protocols that give that role a part (and sit out the others).
    pub role: AgentRole,
    pub sampling: Sampling,
    /// Limits of this agent's provider and model, shared by every agent and debate in the
    /// process that calls the same one (they must agree).
    pub limits: RateLimits,
    pub backend: Backend,
}

/// How an agent samples; unset values are the backend's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sampling {
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_tokens: Option<u32>,
    /// The agent's seed; by default the debate's seed plus the agent's position.
    pub seed: Option<u64>,
    /// Request token logprobs (openai; local and sim agents always give them).
    pub logprobs: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RateLimits {
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u32>,
    pub max_in_flight: Option<usize>,
}

impl RateLimits {
    pub fn limits(&self) -> moot_backends::limits::Limits {
        use std::num::NonZeroU32;
        moot_backends::limits::Limits {
            requests_per_minute: self.requests_per_minute.and_then(NonZeroU32::new),
            tokens_per_minute: self.tokens_per_minute.and_then(NonZeroU32::new),
            max_in_flight: self.max_in_flight,
        }
    }
}

/// Where an agent's answers come from, with the keys of that backend only.
#[derive(Debug, Clone, PartialEq)]
pub enum Backend {
    /// The embedded model: a known name or a `.gguf` path (the default model when unset).
    Local { model: Option<String> },
    /// An OpenAI-compatible server.
    OpenAi {
        http: Http,
        /// Which kind of server it is (the `dialect` key).
        server_kind: Option<ServerKindSetting>,
    },
    /// Anthropic's Messages API.
    Anthropic { http: Http },
    /// freemad's agent command contract: `command args… generate|critique`.
    Cli {
        command: String,
        /// Arguments before the mode word.
        args: Vec<String>,
        /// Whether the mode word (`generate` / `critique`) is passed (default: yes).
        mode_arg: bool,
        /// Arguments after the mode word.
        args_after_mode: Vec<String>,
        working_dir: Option<PathBuf>,
    },
    /// Fixed replies in order (the last repeats): for tests and demonstrations.
    Scripted { responses: Vec<String> },
    /// A simulated agent (needs the gold answer): for research and tests.
    Sim { sim: Option<SimAgent> },
}

/// What the HTTP backends share.
#[derive(Debug, Clone, PartialEq)]
pub struct Http {
    pub model: String,
    pub endpoints: Endpoints,
    /// The NAME of the environment variable holding the key.
    pub api_key_env: Option<String>,
    /// Use server-sent events.
    pub stream: bool,
}

/// An HTTP agent's server: one (`base_url`; the provider's own when unset) or several replicas
/// serving the same model (`base_urls`), used in turn with failover.
#[derive(Debug, Clone, PartialEq)]
pub enum Endpoints {
    One(Option<String>),
    Replicas(Vec<String>),
}

impl Backend {
    /// The name `backend = …` gives it.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Local { .. } => "local",
            Backend::OpenAi { .. } => "openai",
            Backend::Anthropic { .. } => "anthropic",
            Backend::Cli { .. } => "cli",
            Backend::Scripted { .. } => "scripted",
            Backend::Sim { .. } => "sim",
        }
    }
}

/// Every backend, with the keys it reads besides the ones every agent has ([`COMMON_KEYS`]).
/// The example configuration and the README's backend table name these, and moot-app has one
/// driver (how it is built, retried and checked) for each; tests check all three.
pub const BACKENDS: &[BackendEntry] = &[
    BackendEntry {
        name: "local",
        summary: "the embedded model (llama.cpp in-process; a known name or a .gguf path)",
        keys: &["model", "logprobs"],
    },
    BackendEntry {
        name: "openai",
        summary: "an OpenAI-compatible server: OpenAI, vLLM, llama.cpp, Ollama",
        keys: &[
            "model",
            "base_url",
            "base_urls",
            "api_key_env",
            "logprobs",
            "stream",
            "dialect",
        ],
    },
    BackendEntry {
        name: "anthropic",
        summary: "Anthropic's Messages API (no logprobs)",
        keys: &["model", "base_url", "base_urls", "api_key_env", "stream"],
    },
    BackendEntry {
        name: "cli",
        summary: "a local program with freemad's agent contract",
        keys: &[
            "command",
            "args",
            "mode_arg",
            "args_after_mode",
            "working_dir",
        ],
    },
    BackendEntry {
        name: "scripted",
        summary: "fixed replies, for tests and demonstrations",
        keys: &["responses"],
    },
    BackendEntry {
        name: "sim",
        summary: "a simulated agent with set accuracy and conformity (needs the gold answer)",
        keys: &["sim", "logprobs"],
    },
];

/// Keys every agent has, whatever its backend.
pub const COMMON_KEYS: &[&str] = &[
    "id",
    "backend",
    "persona",
    "contract",
    "role",
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "requests_per_minute",
    "tokens_per_minute",
    "max_in_flight",
];

pub struct BackendEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub keys: &'static [&'static str],
}

/// The backends' names, in registry order.
pub fn backend_names() -> Vec<&'static str> {
    BACKENDS.iter().map(|b| b.name).collect()
}

/// An agent as the file spells it: every key of every backend, flat. Only for reading and
/// writing; code uses [`AgentConfig`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentFields {
    pub id: String,
    pub backend: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_urls: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default)]
    pub logprobs: bool,
    #[serde(default)]
    pub stream: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<ServerKindSetting>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// cli: pass the mode word (`generate` / `critique`) after `args` (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_arg: Option<bool>,
    /// cli: arguments after the mode word.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args_after_mode: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// `moot` (default) or `freemad`: the layout the agent's replies follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<ReplyContract>,
    /// `debater` (default), `judge`, `aggregator` or `chairman`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<AgentRole>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub responses: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim: Option<SimAgent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_minute: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<PathBuf>,
}

impl AgentFields {
    /// The backend-specific keys this agent sets, in the file's order.
    fn set_keys(&self) -> Vec<&'static str> {
        [
            ("model", self.model.is_some()),
            ("base_url", self.base_url.is_some()),
            ("base_urls", !self.base_urls.is_empty()),
            ("api_key_env", self.api_key_env.is_some()),
            ("logprobs", self.logprobs),
            ("stream", self.stream),
            ("dialect", self.dialect.is_some()),
            ("command", self.command.is_some()),
            ("args", !self.args.is_empty()),
            ("mode_arg", self.mode_arg.is_some()),
            ("args_after_mode", !self.args_after_mode.is_empty()),
            ("responses", !self.responses.is_empty()),
            ("sim", self.sim.is_some()),
            ("working_dir", self.working_dir.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, set)| set.then_some(key))
        .collect()
    }

    /// The typed agent, or an error naming `agents[index].key`.
    pub fn into_agent(self, index: usize) -> Result<AgentConfig, ConfigError> {
        let at = format!("agents[{index}]");
        if self.base_url.is_some() && !self.base_urls.is_empty() {
            return fail(
                &at,
                "base_urls",
                format!("{at}: give base_url or base_urls, not both"),
            );
        }
        if self.id.trim().is_empty() {
            return fail(&at, "id", format!("{at}.id must not be empty"));
        }
        let entry = self.entry(&at)?;
        self.check_keys(&at, entry)?;
        self.check_sampling(&at, entry.name)?;
        let backend = self.typed_backend(&at, entry.name)?;
        Ok(AgentConfig {
            id: self.id,
            persona: self.persona,
            contract: self.contract.unwrap_or_default(),
            role: self.role.unwrap_or_default(),
            sampling: Sampling {
                temperature: self.temperature,
                top_p: self.top_p,
                max_tokens: self.max_tokens,
                seed: self.seed,
                logprobs: self.logprobs,
            },
            limits: RateLimits {
                requests_per_minute: self.requests_per_minute,
                tokens_per_minute: self.tokens_per_minute,
                max_in_flight: self.max_in_flight,
            },
            backend,
        })
    }

    /// The registry entry of the agent's backend.
    fn entry(&self, at: &str) -> Result<&'static BackendEntry, ConfigError> {
        BACKENDS
            .iter()
            .find(|b| b.name == self.backend)
            .ok_or_else(|| {
                ConfigError::new(
                    format!("{at}.backend"),
                    format!(
                        "{at}.backend = {:?} is not a backend (expected one of {})",
                        self.backend,
                        backend_names().join(", ")
                    ),
                )
            })
    }

    /// Every backend-specific key set is one the backend of `entry` reads.
    fn check_keys(&self, at: &str, entry: &BackendEntry) -> Result<(), ConfigError> {
        let backend = entry.name;
        if self.dialect.is_some() && backend != "openai" {
            return fail(
                at,
                "dialect",
                format!("{at}.dialect is only used by backend \"openai\""),
            );
        }
        if self.logprobs && backend == "anthropic" {
            return fail(
                at,
                "logprobs",
                format!("{at}.logprobs: backend \"anthropic\" has no token logprobs"),
            );
        }
        match self
            .set_keys()
            .into_iter()
            .find(|k| !entry.keys.contains(k))
        {
            Some(key) => fail(
                at,
                key,
                format!("{at}.{key} is not used by backend {backend:?}"),
            ),
            None => Ok(()),
        }
    }

    /// Sampling values and rate limits in range.
    fn check_sampling(&self, at: &str, backend: &str) -> Result<(), ConfigError> {
        if let Some(t) = self.temperature {
            if !(0.0..=2.0).contains(&t) {
                return fail(
                    at,
                    "temperature",
                    format!("{at}.temperature = {t} must be between 0 and 2"),
                );
            }
            if backend == "anthropic" && t > 1.0 {
                return fail(
                    at,
                    "temperature",
                    format!("{at}.temperature must be at most 1 for backend \"anthropic\""),
                );
            }
        }
        if let Some(p) = self.top_p {
            if !(p > 0.0 && p <= 1.0) {
                return fail(at, "top_p", format!("{at}.top_p = {p} must be in (0, 1]"));
            }
        }
        if self.max_tokens == Some(0) {
            return fail(at, "max_tokens", format!("{at}.max_tokens must be > 0"));
        }
        for (key, value) in [
            (
                "requests_per_minute",
                self.requests_per_minute.map(u64::from),
            ),
            ("tokens_per_minute", self.tokens_per_minute.map(u64::from)),
            ("max_in_flight", self.max_in_flight.map(|v| v as u64)),
        ] {
            if value == Some(0) {
                return fail(at, key, format!("{at}.{key} must be > 0"));
            }
        }
        Ok(())
    }

    /// The [`Backend`] with the keys it reads, each required one present.
    fn typed_backend(&self, at: &str, backend: &str) -> Result<Backend, ConfigError> {
        Ok(match backend {
            "local" => {
                if let Some(m) = &self.model {
                    if let Err(e) = ModelRef::parse(m) {
                        return fail(at, "model", format!("{at}.model: {e}"));
                    }
                }
                Backend::Local {
                    model: self.model.clone(),
                }
            }
            "openai" => Backend::OpenAi {
                http: self.http(at, backend)?,
                server_kind: self.dialect,
            },
            "anthropic" => Backend::Anthropic {
                http: self.http(at, backend)?,
            },
            "cli" => match &self.command {
                Some(command) => Backend::Cli {
                    command: command.clone(),
                    args: self.args.clone(),
                    mode_arg: self.mode_arg.unwrap_or(true),
                    args_after_mode: self.args_after_mode.clone(),
                    working_dir: self.working_dir.clone(),
                },
                None => {
                    return fail(
                        at,
                        "command",
                        format!("{at}: backend \"cli\" needs command"),
                    )
                }
            },
            "scripted" if self.responses.is_empty() => {
                return fail(
                    at,
                    "responses",
                    format!("{at}: backend \"scripted\" needs responses"),
                )
            }
            "scripted" => Backend::Scripted {
                responses: self.responses.clone(),
            },
            "sim" => {
                self.check_sim(at)?;
                Backend::Sim {
                    sim: self.sim.clone(),
                }
            }
            // A name in BACKENDS without an arm here: every_backend_refuses_the_keys_of_others
            // builds each registered backend, so this fails a test before it reaches a user.
            other => {
                return fail(
                    at,
                    "backend",
                    format!(
                    "{at}.backend = {other:?} is registered but cannot be built (a bug in moot)"
                ),
                )
            }
        })
    }

    /// What the HTTP backends read: a model and, for `openai`, a server.
    fn http(&self, at: &str, backend: &str) -> Result<Http, ConfigError> {
        let no_url = self.base_url.is_none() && self.base_urls.is_empty();
        let model = match &self.model {
            Some(model) if !(backend == "openai" && no_url) => model.clone(),
            _ if backend == "openai" => {
                return fail(
                    at,
                    "",
                    format!("{at}: backend \"openai\" needs base_url (or base_urls) and model"),
                )
            }
            _ => {
                return fail(
                    at,
                    "model",
                    format!("{at}: backend {backend:?} needs model"),
                )
            }
        };
        Ok(Http {
            model,
            endpoints: if self.base_urls.is_empty() {
                Endpoints::One(self.base_url.clone())
            } else {
                Endpoints::Replicas(self.base_urls.clone())
            },
            api_key_env: self.api_key_env.clone(),
            stream: self.stream,
        })
    }

    /// A simulated agent's parameters are ones the sim can use: chances are probabilities, and
    /// conformities and recency are finite and small enough for `exp()`
    /// ([`SimAgent::check`]).
    fn check_sim(&self, at: &str) -> Result<(), ConfigError> {
        let Some(sim) = &self.sim else {
            return Ok(());
        };
        sim.check().or_else(|e| {
            let key = format!("sim.{}", e.field());
            fail(at, &key, format!("{at}.{key} = {e}"))
        })
    }
}

/// An error about `key` of the agent at `at` (the agent itself when `key` is empty).
fn fail<T>(at: &str, key: &str, message: String) -> Result<T, ConfigError> {
    let key = if key.is_empty() {
        at.to_string()
    } else {
        format!("{at}.{key}")
    };
    invalid(key, message)
}

impl From<AgentConfig> for AgentFields {
    fn from(a: AgentConfig) -> AgentFields {
        let mut f = AgentFields {
            id: a.id,
            backend: a.backend.name().to_string(),
            persona: a.persona,
            // The default is left unwritten, so configurations keep the shape they had.
            contract: (!a.contract.is_moot()).then_some(a.contract),
            role: (!a.role.is_debater()).then_some(a.role),
            temperature: a.sampling.temperature,
            top_p: a.sampling.top_p,
            max_tokens: a.sampling.max_tokens,
            seed: a.sampling.seed,
            logprobs: a.sampling.logprobs,
            requests_per_minute: a.limits.requests_per_minute,
            tokens_per_minute: a.limits.tokens_per_minute,
            max_in_flight: a.limits.max_in_flight,
            ..AgentFields::default()
        };
        let http = |h: Http, f: &mut AgentFields| {
            f.model = Some(h.model);
            match h.endpoints {
                Endpoints::One(url) => f.base_url = url,
                Endpoints::Replicas(urls) => f.base_urls = urls,
            }
            f.api_key_env = h.api_key_env;
            f.stream = h.stream;
        };
        match a.backend {
            Backend::Local { model } => f.model = model,
            Backend::OpenAi {
                http: h,
                server_kind,
            } => {
                http(h, &mut f);
                f.dialect = server_kind;
            }
            Backend::Anthropic { http: h } => http(h, &mut f),
            Backend::Cli {
                command,
                args,
                mode_arg,
                args_after_mode,
                working_dir,
            } => {
                f.command = Some(command);
                f.args = args;
                // The default is left unwritten, so configurations keep the shape they had.
                f.mode_arg = (!mode_arg).then_some(false);
                f.args_after_mode = args_after_mode;
                f.working_dir = working_dir;
            }
            Backend::Scripted { responses } => f.responses = responses,
            Backend::Sim { sim } => f.sim = sim,
        }
        f
    }
}

/// Reads `[[agents]]`: each agent typed, ids unique; errors name `agents[i].key`.
pub(crate) fn read_agents<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<AgentConfig>, D::Error> {
    let fields = Vec::<AgentFields>::deserialize(d)?;
    typed_agents(fields).map_err(|e| serde::de::Error::custom(e.message))
}

/// The typed agents of `fields`, ids unique.
pub fn typed_agents(fields: Vec<AgentFields>) -> Result<Vec<AgentConfig>, ConfigError> {
    let mut seen = std::collections::HashSet::new();
    let mut agents = Vec::with_capacity(fields.len());
    for (i, f) in fields.into_iter().enumerate() {
        if !seen.insert(f.id.clone()) {
            return Err(ConfigError::new(
                format!("agents[{i}].id"),
                format!("agents[{i}].id = {:?} is used by another agent", f.id),
            ));
        }
        agents.push(f.into_agent(i)?);
    }
    Ok(agents)
}

impl AgentConfig {
    /// An agent of `backend` with default sampling and no limits.
    pub fn new(id: impl Into<String>, backend: Backend) -> AgentConfig {
        AgentConfig {
            id: id.into(),
            persona: None,
            contract: ReplyContract::Moot,
            role: AgentRole::Debater,
            sampling: Sampling::default(),
            limits: RateLimits::default(),
            backend,
        }
    }

    /// The rate limits this agent asks for.
    pub fn limits(&self) -> moot_backends::limits::Limits {
        self.limits.limits()
    }

    pub fn is_sim(&self) -> bool {
        matches!(self.backend, Backend::Sim { .. })
    }
}

/// `count` agents on the embedded default model: what `moot ask` uses without a config.
pub fn default_agents(count: usize) -> Vec<AgentConfig> {
    (1..=count.max(1))
        .map(|i| {
            let mut a = AgentConfig::new(
                format!("agent-{i}"),
                Backend::Local {
                    model: Some(moot_backends::models::default_model().name.into()),
                },
            );
            a.sampling.temperature = Some(DEFAULT_TEAM_TEMPERATURE);
            a.sampling.max_tokens = Some(DEFAULT_TEAM_MAX_TOKENS);
            a
        })
        .collect()
}

/// The team from the configured agents: `count` debaters — the configured debaters, the first
/// `count` of them, cycling with numbered ids when more are asked for (the embedded default
/// team when none is configured) — followed by every configured agent with another role (a
/// judge, an aggregator, a chairman), which team sizing never drops.
pub fn resize(agents: &[AgentConfig], count: usize) -> Vec<AgentConfig> {
    let (debaters, deciders): (Vec<&AgentConfig>, Vec<&AgentConfig>) =
        agents.iter().partition(|a| a.role.is_debater());
    let mut team: Vec<AgentConfig> = if debaters.is_empty() {
        default_agents(count)
    } else {
        (0..count)
            .map(|i| {
                let mut a = debaters[i % debaters.len()].clone();
                if i >= debaters.len() {
                    a.id = format!("{}-{}", a.id, i / debaters.len() + 1);
                }
                a
            })
            .collect()
    };
    team.extend(deciders.into_iter().cloned());
    team
}

/// `count` simulated agents with default parameters (`--sim`).
pub fn sim_agents(count: usize) -> Vec<AgentConfig> {
    (1..=count.max(1))
        .map(|i| AgentConfig::new(format!("sim-{i}"), Backend::Sim { sim: None }))
        .collect()
}

/// `--sim`'s team: `count` simulated debaters, then one simulated agent for each configured
/// agent with another role, keeping its role (`sim-judge`, `sim-judge-2`, …), so a configured
/// judge is still a judge under `--sim`.
pub fn sim_team(configured: &[AgentConfig], count: usize) -> Vec<AgentConfig> {
    let mut team = sim_agents(count);
    let mut seen: Vec<AgentRole> = Vec::new();
    for a in configured.iter().filter(|a| !a.role.is_debater()) {
        seen.push(a.role);
        let nth = seen.iter().filter(|&&r| r == a.role).count();
        let name = a.role.name();
        let id = if nth == 1 {
            format!("sim-{name}")
        } else {
            format!("sim-{name}-{nth}")
        };
        let mut agent = AgentConfig::new(id, Backend::Sim { sim: None });
        agent.role = a.role;
        team.push(agent);
    }
    team
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(toml_text: &str) -> Result<AgentConfig, ConfigError> {
        let f: AgentFields = toml::from_str(toml_text).unwrap();
        f.into_agent(0)
    }

    #[test]
    fn a_role_is_read_written_back_and_debater_is_left_unwritten() {
        let judge = read("id = \"j\"\nbackend = \"sim\"\nrole = \"judge\"\n").unwrap();
        assert_eq!(judge.role, AgentRole::Judge);
        let fields = AgentFields::from(judge);
        assert_eq!(fields.role, Some(AgentRole::Judge));
        let debater = read("id = \"d\"\nbackend = \"sim\"\n").unwrap();
        assert_eq!(AgentFields::from(debater).role, None);
        let wrong =
            toml::from_str::<AgentFields>("id = \"x\"\nbackend = \"sim\"\nrole = \"Judge\"\n");
        let e = wrong.unwrap_err().to_string();
        assert!(
            e.contains("unknown variant `Judge`") && e.contains("chairman"),
            "{e}"
        );
    }

    #[test]
    fn team_sizes_cycle_the_debaters_and_keep_every_role_once() {
        let mut judge = AgentConfig::new("judge", Backend::Sim { sim: None });
        judge.role = AgentRole::Judge;
        let configured = vec![
            judge,
            AgentConfig::new("a", Backend::Sim { sim: None }),
            AgentConfig::new("b", Backend::Sim { sim: None }),
        ];
        let ids =
            |team: &[AgentConfig]| -> Vec<String> { team.iter().map(|a| a.id.clone()).collect() };
        assert_eq!(ids(&resize(&configured, 3)), ["a", "b", "a-2", "judge"]);
        assert_eq!(ids(&resize(&configured, 1)), ["a", "judge"]);
        let sim = sim_team(&configured, 2);
        assert_eq!(ids(&sim), ["sim-1", "sim-2", "sim-judge"]);
        assert_eq!(sim[2].role, AgentRole::Judge);
        assert!(sim.iter().all(AgentConfig::is_sim));
    }

    #[test]
    fn every_backend_refuses_the_keys_of_others_by_name() {
        let base = |backend: &str| match backend {
            "openai" => "model = \"m\"\nbase_url = \"http://h/v1\"\n",
            "anthropic" => "model = \"m\"\n",
            "cli" => "command = \"/bin/sh\"\n",
            "scripted" => "responses = [\"42\"]\n",
            _ => "",
        };
        let value = |key: &str| match key {
            "base_urls" | "args" | "responses" | "args_after_mode" => "[\"x\"]",
            "logprobs" | "stream" | "mode_arg" => "true",
            "dialect" => "\"vllm\"",
            "sim" => "{ accuracy = 0.5 }",
            _ => "\"x\"",
        };
        let all_keys: Vec<&str> = BACKENDS
            .iter()
            .flat_map(|b| b.keys.iter().copied())
            .collect();
        for b in BACKENDS {
            let ok = format!("id = \"a\"\nbackend = \"{}\"\n{}", b.name, base(b.name));
            read(&ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
            for key in all_keys.iter().filter(|k| !b.keys.contains(k)) {
                let text = format!("{ok}{key} = {}\n", value(key));
                let e = read(&text).unwrap_err();
                assert!(
                    e.key == format!("agents[0].{key}")
                        || (e.key == "agents[0].base_urls" && *key == "base_url"),
                    "{}: {key} → {e:?}",
                    b.name
                );
            }
        }
    }

    #[test]
    fn agents_write_back_the_shape_they_were_read_from() {
        let text = r#"
id = "a1"
backend = "openai"
base_urls = ["http://a/v1", "http://b/v1"]
model = "m"
api_key_env = "K"
temperature = 0.5
seed = 3
logprobs = true
stream = true
dialect = "vllm"
persona = "careful"
requests_per_minute = 10
"#;
        let fields: AgentFields = toml::from_str(text).unwrap();
        let agent = fields.clone().into_agent(0).unwrap();
        assert_eq!(AgentFields::from(agent.clone()), fields);
        let json = serde_json::to_value(&agent).unwrap();
        assert_eq!(json["backend"], "openai");
        assert_eq!(json["dialect"], "vllm");
        for f in [
            "id = \"c\"\nbackend = \"cli\"\ncommand = \"x\"\nargs = [\"-v\"]\nworking_dir = \"/tmp\"\n",
            "id = \"s\"\nbackend = \"sim\"\nsim = { accuracy = 0.3 }\n",
            "id = \"l\"\nbackend = \"local\"\n",
            "id = \"r\"\nbackend = \"scripted\"\nresponses = [\"1\", \"2\"]\n",
            "id = \"n\"\nbackend = \"anthropic\"\nmodel = \"m\"\n",
        ] {
            let fields: AgentFields = toml::from_str(f).unwrap();
            let agent = fields.clone().into_agent(0).unwrap();
            assert_eq!(AgentFields::from(agent), fields, "{f}");
        }
    }
}
