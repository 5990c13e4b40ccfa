//! Every backend an agent can run on. A backend is one module here and one entry in
//! [`BACKENDS`]: its [`BackendEntry`] says which keys an agent of it has ([`Key`]), how they are
//! checked and turned into its settings (`read`), and how the application runs it (retried,
//! always giving logprobs, what `moot health` checks); its settings ([`BackendSettings`]) write
//! its keys back, build its model, say what must hold before a call and what a stored agent of
//! it needs of this machine. Everything else goes through the registry: reading and writing
//! agents, the names in errors and help, `moot health`, building agents
//! (`moot_app::agents::build`), and the tests, which iterate it.
//!
//! The embedded model's backend ([`local`]) builds its model with `moot-local` behind this
//! crate's `local` feature; without it, its agents are read as any other and refused with a
//! reason when built.

pub mod anthropic;
mod building;
pub mod cli;
pub mod http;
pub(crate) mod keys;
pub mod local;
pub mod openai;
pub mod scripted;
pub mod sim;

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use moot_backends::LanguageModel;

use crate::agent::{AgentConfig, AgentFields};
use crate::config::Config;
use crate::error::{invalid, ConfigError};

pub use building::{BuildError, Building};
pub use keys::{Key, KeyValue, Keys, Kind};

/// Every backend, in the order help, errors and the README's table list them.
pub const BACKENDS: &[&BackendEntry] = &[
    &local::ENTRY,
    &openai::ENTRY,
    &anthropic::ENTRY,
    &cli::ENTRY,
    &scripted::ENTRY,
    &sim::ENTRY,
];

/// One backend, from an agent's keys to how the application runs it.
#[derive(Debug)]
pub struct BackendEntry {
    /// The name `backend = …` gives it.
    pub name: &'static str,
    /// What it is, in a few words.
    pub summary: &'static str,
    /// The keys it reads besides the ones every agent has ([`crate::COMMON_KEYS`]), in the
    /// order they are written.
    pub keys: &'static [Key],
    /// Keys other backends read that it refuses with a reason (`logprobs`: "has no token
    /// logprobs"), rather than as not its own.
    pub refuses: &'static [(&'static str, &'static str)],
    /// A smallest agent of it: the `key = value` lines (TOML) after `id` and `backend`. Tests
    /// read, write back and build one agent of every backend from it.
    pub example: &'static str,
    /// Whether its failures can be transient (network, processes), so that its calls are
    /// retried.
    pub retries: bool,
    /// Whether it reports token logprobs on every call, asked or not.
    pub always_logprobs: bool,
    /// Whether it runs inside moot's process with nothing outside to reach, so that
    /// `moot health` has nothing to call.
    pub in_process: bool,
    /// What `moot health` checks for it before calling it ([`BackendSettings::ready`]), for
    /// its help.
    pub health_checks: &'static str,
    /// Its settings from an agent's keys (every key set is one it reads: others are refused
    /// before), each required one present and every value one it can use; an error names
    /// `at.key` (`at` is `agents[i]`).
    pub read: fn(&AgentFields, &str) -> Result<Backend, ConfigError>,
}

impl BackendEntry {
    /// Whether an agent of it may set `key` (besides the common keys).
    pub fn reads(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k.name == key)
    }

    /// The names of its keys, in order.
    pub fn key_names(&self) -> Vec<&'static str> {
        self.keys.iter().map(|k| k.name).collect()
    }
}

/// The backends' names, in registry order.
pub fn backend_names() -> Vec<&'static str> {
    BACKENDS.iter().map(|b| b.name).collect()
}

/// The registry entry named `name`.
pub fn entry_named(name: &str) -> Option<&'static BackendEntry> {
    BACKENDS.iter().copied().find(|b| b.name == name)
}

/// What a backend makes of an agent's keys (what [`BackendEntry::read`] returns), and what it
/// does with them. Each backend's module implements it for its settings type.
pub trait BackendSettings: fmt::Debug + Send + Sync + AnySettings {
    /// Its entry in [`BACKENDS`].
    fn entry(&self) -> &'static BackendEntry;

    /// Writes its keys back in the shape [`BackendEntry::read`] reads them (a default left
    /// unwritten), so that configurations keep the shape they had.
    fn write_back(&self, keys: &mut Keys);

    /// Builds the model of `agent`, the `index`-th agent of the configuration being built.
    fn build(
        &self,
        building: &mut Building<'_>,
        index: usize,
        agent: &AgentConfig,
    ) -> Result<Arc<dyn LanguageModel>, BuildError>;

    /// The name of the variable its API key is read from, if it names one: the key's value is
    /// removed from everything moot stores or prints ([`Config::redactor`]).
    fn api_key_env(&self) -> Option<&str>;

    /// Why a stored agent with these settings may not run on a machine whose configuration is
    /// `local`, if it may not: authority is local (DESIGN §13), so everything the agent would
    /// reach (a command, a file, a server with a key) must be this machine's to give. Said as
    /// the key and what it would reach, closing the parenthesis the caller opened
    /// (`agents[0].command) runs "x", which is not …`); `at` is `agents[i]`.
    fn not_allowed(&self, at: &str, local: &Config) -> Option<String>;

    /// What must hold before a call and can be checked without one (an API key set, a model
    /// pulled); the problem otherwise. `moot health` runs it.
    fn ready(&self) -> Result<(), String> {
        Ok(())
    }

    /// Whether agent `index` (`agent`, of these settings) can be started here as `config`
    /// allows (a `cli` agent's command allowed, found and executable): checked with the
    /// configuration's other checks, and by `moot health`.
    fn check_can_run(
        &self,
        _config: &Config,
        _index: usize,
        _agent: &AgentConfig,
    ) -> Result<(), ConfigError> {
        Ok(())
    }

    /// The same backend answering with `model` instead (`moot fork --model`).
    fn with_model(&self, _model: &str) -> ModelSwap {
        ModelSwap::NoModel
    }
}

/// What [`BackendSettings::with_model`] made of a model's name.
#[derive(Debug)]
pub enum ModelSwap {
    /// The backend with that model.
    Swapped(Backend),
    /// Its models are the ones named (a sim's presets), and that is none of them.
    NotOneOf(Vec<&'static str>),
    /// It has no model to swap (a command, fixed replies).
    NoModel,
}

/// Downcasting and comparing settings behind [`Backend`]; implemented for every settings type
/// (with `PartialEq`).
pub trait AnySettings: Any {
    fn as_any(&self) -> &dyn Any;
    /// Whether `other` is settings of the same type, equal to these.
    fn same_as(&self, other: &dyn Any) -> bool;
}

impl<T: Any + PartialEq> AnySettings for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn same_as(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<T>() == Some(self)
    }
}

/// An agent's backend with its settings: what its keys were read into.
#[derive(Clone)]
pub struct Backend(Arc<dyn BackendSettings>);

impl Backend {
    pub fn new(settings: impl BackendSettings) -> Backend {
        Backend(Arc::new(settings))
    }

    /// The name `backend = …` gives it.
    pub fn name(&self) -> &'static str {
        self.0.entry().name
    }

    /// Its settings, when they are of type `T` (the backend of `T`'s module).
    pub fn settings<T: BackendSettings>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }
}

impl std::ops::Deref for Backend {
    type Target = dyn BackendSettings;

    fn deref(&self) -> &Self::Target {
        self.0.as_ref()
    }
}

impl PartialEq for Backend {
    fn eq(&self, other: &Backend) -> bool {
        self.0.same_as(other.0.as_any())
    }
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Every key `keys` sets is one the backend of `entry` reads; otherwise an error naming the
/// first that is not, with why: the one backend that reads it when no other could
/// ([`Key::owned`]), the backend's own reason ([`BackendEntry::refuses`]), else that the
/// backend does not use it.
pub(crate) fn check_keys(at: &str, entry: &BackendEntry, keys: &Keys) -> Result<(), ConfigError> {
    let foreign = || keys.names().filter(|k| !entry.reads(k));
    for key in foreign() {
        let owner = BACKENDS
            .iter()
            .find(|b| b.keys.iter().any(|k| k.name == key && k.owned));
        if let Some(owner) = owner {
            return fail(
                at,
                key,
                format!("{at}.{key} is only used by backend {:?}", owner.name),
            );
        }
    }
    for key in foreign() {
        if let Some((_, why)) = entry.refuses.iter().find(|(k, _)| *k == key) {
            return fail(
                at,
                key,
                format!("{at}.{key}: backend {:?} {why}", entry.name),
            );
        }
    }
    match foreign().next() {
        Some(key) => fail(
            at,
            key,
            format!("{at}.{key} is not used by backend {:?}", entry.name),
        ),
        None => Ok(()),
    }
}

/// An error about `key` of the agent at `at` (the agent itself when `key` is empty).
pub(crate) fn fail<T>(at: &str, key: &str, message: String) -> Result<T, ConfigError> {
    let key = if key.is_empty() {
        at.to_string()
    } else {
        format!("{at}.{key}")
    };
    invalid(key, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<AgentConfig, ConfigError> {
        let fields: AgentFields = toml::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        fields.into_agent(0)
    }

    fn example(entry: &BackendEntry) -> String {
        format!(
            "id = \"a\"\nbackend = \"{}\"\n{}",
            entry.name, entry.example
        )
    }

    #[test]
    fn every_backend_reads_its_example_into_its_own_settings_and_writes_it_back() {
        let mut names = std::collections::HashSet::new();
        for entry in BACKENDS {
            assert!(names.insert(entry.name), "{} twice", entry.name);
            let text = example(entry);
            let fields: AgentFields = toml::from_str(&text).unwrap();
            let agent = fields
                .clone()
                .into_agent(0)
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(agent.backend.name(), entry.name, "{text}");
            assert_eq!(agent.backend.entry().name, entry.name, "{text}");
            assert_eq!(AgentFields::from(agent.clone()), fields, "{text}");
            let json = serde_json::to_value(&agent).unwrap();
            let again: AgentFields = serde_json::from_value(json).unwrap();
            assert_eq!(again.into_agent(0).unwrap(), agent, "{text}");
        }
    }

    #[test]
    fn a_key_two_backends_read_is_of_one_kind_and_no_key_is_common() {
        let all: Vec<&Key> = BACKENDS.iter().flat_map(|b| b.keys.iter()).collect();
        for key in &all {
            assert!(
                !crate::COMMON_KEYS.contains(&key.name),
                "{} is a common key",
                key.name
            );
            for other in all.iter().filter(|k| k.name == key.name) {
                assert_eq!(
                    std::mem::discriminant(&key.kind),
                    std::mem::discriminant(&other.kind),
                    "{}",
                    key.name
                );
                assert!(
                    !key.owned || std::ptr::eq(*key, *other),
                    "{} is owned by one backend but read by two",
                    key.name
                );
            }
        }
        for entry in BACKENDS {
            for (key, _) in entry.refuses {
                assert!(!entry.reads(key), "{} refuses its own {key}", entry.name);
            }
        }
    }

    #[test]
    fn every_backend_refuses_the_keys_of_others_by_name() {
        let all: Vec<&Key> = BACKENDS.iter().flat_map(|b| b.keys.iter()).collect();
        for entry in BACKENDS {
            let ok = example(entry);
            read(&ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
            for key in all.iter().filter(|k| !entry.reads(k.name)) {
                let text = format!("{ok}{} = {}\n", key.name, key.kind.example());
                let e = read(&text).unwrap_err();
                assert_eq!(e.key, format!("agents[0].{}", key.name), "{text}: {e:?}");
            }
        }
    }

    #[test]
    fn an_unknown_backend_names_every_backend() {
        let e = read("id = \"a\"\nbackend = \"gpt\"\n").unwrap_err();
        assert_eq!(e.key, "agents[0].backend");
        assert!(e.message.contains(&backend_names().join(", ")), "{e}");
    }
}
