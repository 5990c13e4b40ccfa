//! `[[agents]]`: who debates. An agent is its id, persona, sampling and rate limits, plus one
//! [`Backend`] holding the settings its backend read from its keys: a key another backend
//! reads is refused by name, for every backend alike (the backends are `crate::backend`).
//!
//! The file's flat shape (`backend = "openai"` next to `base_url`, `model`, …) is
//! [`AgentFields`]; agents are read from it and written back to it, so stored runs keep the
//! shape they were written with.

use std::fmt;
use std::sync::OnceLock;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use moot_core::contract::ReplyContract;
use moot_core::debate::AgentRole;

use crate::backend::keys::read_value;
use crate::backend::local::Local;
use crate::backend::sim::Sim;
use crate::backend::{
    backend_names, check_keys, entry_named, key_named, Backend, BackendEntry, Keys, BACKENDS,
};
use crate::error::{fail, ConfigError};

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

/// An agent as the file spells it: the keys every agent has, and the keys of its backend (of
/// any backend, until it is typed). Only for reading and writing; code uses [`AgentConfig`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentFields {
    pub id: String,
    pub backend: String,
    pub persona: Option<String>,
    /// `moot` (default) or `freemad`: the layout the agent's replies follow.
    pub contract: Option<ReplyContract>,
    /// `debater` (default), `judge`, `aggregator` or `chairman`.
    pub role: Option<AgentRole>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u32>,
    pub max_in_flight: Option<usize>,
    /// The backend keys it sets (`model`, `command`, …; `logprobs` too, which the backends
    /// that give logprobs read into [`Sampling::logprobs`]).
    pub keys: Keys,
}

/// Every key an agent may have: the common ones, then each backend's, in registry order.
fn all_keys() -> &'static [&'static str] {
    static ALL: OnceLock<Vec<&'static str>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = COMMON_KEYS.to_vec();
        for key in BACKENDS.iter().flat_map(|b| b.keys.iter()) {
            if !all.contains(&key.name) {
                all.push(key.name);
            }
        }
        all
    })
}

impl<'de> Deserialize<'de> for AgentFields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AgentFields, D::Error> {
        d.deserialize_struct("AgentFields", all_keys(), FieldsVisitor)
    }
}

/// Reads an agent's table as a derived `deny_unknown_fields` struct would: each common key as
/// its type, each backend key as its [`Kind`](crate::backend::Kind), an unknown or repeated
/// key refused by name.
struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = AgentFields;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct AgentFields")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AgentFields, A::Error> {
        use serde::de::Error;
        let mut f = AgentFields::default();
        let (mut id, mut backend) = (None, None);
        let mut seen: Vec<&'static str> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let Some(name) = all_keys().iter().copied().find(|k| *k == key) else {
                return Err(A::Error::unknown_field(&key, all_keys()));
            };
            if seen.contains(&name) {
                return Err(A::Error::duplicate_field(name));
            }
            seen.push(name);
            match name {
                "id" => id = Some(map.next_value()?),
                "backend" => backend = Some(map.next_value()?),
                "persona" => f.persona = map.next_value()?,
                "contract" => f.contract = map.next_value()?,
                "role" => f.role = map.next_value()?,
                "temperature" => f.temperature = map.next_value()?,
                "top_p" => f.top_p = map.next_value()?,
                "max_tokens" => f.max_tokens = map.next_value()?,
                "seed" => f.seed = map.next_value()?,
                "requests_per_minute" => f.requests_per_minute = map.next_value()?,
                "tokens_per_minute" => f.tokens_per_minute = map.next_value()?,
                "max_in_flight" => f.max_in_flight = map.next_value()?,
                _ => match key_named(name) {
                    Some(key) => {
                        if let Some(value) = read_value(key.kind, &mut map)? {
                            f.keys.set(name, value);
                        }
                    }
                    None => return Err(A::Error::unknown_field(name, all_keys())),
                },
            }
        }
        f.id = id.ok_or_else(|| A::Error::missing_field("id"))?;
        f.backend = backend.ok_or_else(|| A::Error::missing_field("backend"))?;
        Ok(f)
    }
}

impl Serialize for AgentFields {
    /// `id`, `backend`, the backend's keys, then the other common keys that are set.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = s.serialize_struct("AgentFields", all_keys().len())?;
        out.serialize_field("id", &self.id)?;
        out.serialize_field("backend", &self.backend)?;
        for (name, value) in self.keys.iter() {
            out.serialize_field(name, value)?;
        }
        macro_rules! set {
            ($($field:ident),*) => {$(
                if let Some(v) = &self.$field {
                    out.serialize_field(stringify!($field), v)?;
                }
            )*};
        }
        set!(
            temperature,
            top_p,
            max_tokens,
            seed,
            persona,
            contract,
            role,
            requests_per_minute,
            tokens_per_minute,
            max_in_flight
        );
        out.end()
    }
}

impl AgentFields {
    /// The typed agent, or an error naming `agents[index].key`.
    pub fn into_agent(self, index: usize) -> Result<AgentConfig, ConfigError> {
        let at = format!("agents[{index}]");
        if self.id.trim().is_empty() {
            return fail(&at, "id", format!("{at}.id must not be empty"));
        }
        let entry = self.entry(&at)?;
        check_keys(&at, entry, &self.keys)?;
        self.check_sampling(&at, entry)?;
        let backend = (entry.read)(&self.keys, &at)?;
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
                logprobs: self.keys.flag("logprobs"),
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
        entry_named(&self.backend).ok_or_else(|| {
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

    /// Sampling values and rate limits in range (the temperature in the backend's range too).
    fn check_sampling(&self, at: &str, entry: &BackendEntry) -> Result<(), ConfigError> {
        if let Some(t) = self.temperature {
            if !(0.0..=2.0).contains(&t) {
                return fail(
                    at,
                    "temperature",
                    format!("{at}.temperature = {t} must be between 0 and 2"),
                );
            }
            if t > entry.max_temperature {
                return fail(
                    at,
                    "temperature",
                    format!(
                        "{at}.temperature must be at most {} for backend {:?}",
                        entry.max_temperature, entry.name
                    ),
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
}

impl From<AgentConfig> for AgentFields {
    fn from(a: AgentConfig) -> AgentFields {
        let mut keys = Keys::default();
        a.backend.write_back(&mut keys);
        keys.set_flag("logprobs", a.sampling.logprobs);
        keys.order_as(a.backend.entry().keys);
        AgentFields {
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
            requests_per_minute: a.limits.requests_per_minute,
            tokens_per_minute: a.limits.tokens_per_minute,
            max_in_flight: a.limits.max_in_flight,
            keys,
        }
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
        self.backend.settings::<Sim>().is_some()
    }
}

/// `count` agents on the embedded default model: what `moot ask` uses without a config.
pub fn default_agents(count: usize) -> Vec<AgentConfig> {
    (1..=count.max(1))
        .map(|i| {
            let mut a = AgentConfig::new(
                format!("agent-{i}"),
                Backend::new(Local {
                    model: Some(moot_backends::models::default_model().name.into()),
                }),
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
        .map(|i| AgentConfig::new(format!("sim-{i}"), Backend::new(Sim::default())))
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
        let mut agent = AgentConfig::new(id, Backend::new(Sim::default()));
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
        let mut judge = AgentConfig::new("judge", Backend::new(Sim::default()));
        judge.role = AgentRole::Judge;
        let configured = vec![
            judge,
            AgentConfig::new("a", Backend::new(Sim::default())),
            AgentConfig::new("b", Backend::new(Sim::default())),
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
