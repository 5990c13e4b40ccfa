//! What a backend is ([`BackendEntry`], [`BackendSettings`]) and what it is given: the agent
//! it builds ([`BuildAgent`]) with what building a configuration shares ([`Building`]).
//! Backends see these, never the whole configuration.

use std::any::Any;
#[cfg(feature = "local")]
use std::collections::HashMap;
use std::fmt;
#[cfg(feature = "local")]
use std::path::PathBuf;
use std::sync::Arc;

use moot_backends::LanguageModel;
use moot_core::answer::AnswerKind;

use super::keys::{Key, Keys};
use crate::error::ConfigError;
use crate::security::SecuritySection;

/// One backend, from an agent's keys to how the application runs it.
#[derive(Debug)]
pub struct BackendEntry {
    /// The name `backend = …` gives it.
    pub name: &'static str,
    /// What it is, in a few words.
    pub summary: &'static str,
    /// The keys it reads besides the ones every agent has (`COMMON_KEYS`), in the order they
    /// are written.
    pub keys: &'static [Key],
    /// Keys other backends read that it refuses with a reason (`logprobs`: "has no token
    /// logprobs"), rather than as not its own.
    pub refuses: &'static [(&'static str, &'static str)],
    /// Whether it hands `temperature`, `top_p` and `max_tokens` to a model that samples with
    /// them (a program, a person, fixed replies or a simulation take none): a request that
    /// overrides them (`moot serve`'s OpenAI endpoint) is refused for an agent that would
    /// drop them.
    pub samples: bool,
    /// The highest `temperature` it takes (every agent's is at most 2).
    pub max_temperature: f32,
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
    pub read: fn(&Keys, &str) -> Result<Backend, ConfigError>,
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

/// What a backend makes of an agent's keys (what [`BackendEntry::read`] returns), and what it
/// does with them. Each backend's module implements it for its settings type.
pub trait BackendSettings: fmt::Debug + Send + Sync + AnySettings {
    /// Its entry in `BACKENDS`.
    fn entry(&self) -> &'static BackendEntry;

    /// Writes its keys back in the shape [`BackendEntry::read`] reads them (a default left
    /// unwritten), so that configurations keep the shape they had.
    fn write_back(&self, keys: &mut Keys);

    /// Builds the model of `agent`, one agent of the configuration being built.
    fn build(
        &self,
        building: &mut Building<'_>,
        agent: &BuildAgent<'_>,
    ) -> Result<Arc<dyn LanguageModel>, BuildError>;

    /// The name of the variable its API key is read from, if it names one: the key's value is
    /// removed from everything moot stores or prints (`Config::redactor`).
    fn api_key_env(&self) -> Option<&str>;

    /// Credentials its settings hold themselves (a password or token in a URL): secrets to
    /// the redactor, as the key `api_key_env` names is (`Config::redactor`).
    fn credentials(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether an agent with these settings acts on nothing this machine must grant (DESIGN
    /// §13): it computes inside moot (a simulation, fixed replies), asks the person at hand, or
    /// runs a model from moot's own registry. A stored agent of such settings may run where
    /// this machine's configuration has no agent of its id; any other stored agent runs only
    /// as this machine's agent of its id, the same in every key (`moot_app::stored::admit`).
    /// No default: a new backend says which it is.
    fn self_contained(&self) -> bool;

    /// What must hold before a call and can be checked without one (an API key set, a model
    /// pulled); the problem otherwise. `moot health` runs it.
    fn ready(&self) -> Result<(), String> {
        Ok(())
    }

    /// Whether the agent `id` at `at` (`agents[i]`) can be started here as `security` allows (a
    /// `cli` agent's command allowed, found and executable): checked with the configuration's
    /// other checks, and by `moot health`.
    fn check_can_run(
        &self,
        _security: &SecuritySection,
        _at: &str,
        _id: &str,
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

    /// The first key in which `other` runs otherwise (`backend` when it is another backend;
    /// a key set in one and not the other differs), or `None` when the two are the same
    /// invocation. Texts are compared as `redact` leaves them: a stored configuration was
    /// written redacted (a password in a URL is `[REDACTED]` there).
    pub fn differing_key(
        &self,
        other: &Backend,
        redact: &dyn Fn(&str) -> String,
    ) -> Option<&'static str> {
        if self.name() != other.name() {
            return Some("backend");
        }
        let (mut mine, mut theirs) = (Keys::default(), Keys::default());
        self.write_back(&mut mine);
        other.write_back(&mut theirs);
        mine.map_texts(redact)
            .differing_key(&theirs.map_texts(redact))
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

/// The agent a backend builds: its position in the configuration, its id and its seed.
#[derive(Debug, Clone, Copy)]
pub struct BuildAgent<'a> {
    pub index: usize,
    pub id: &'a str,
    pub seed: u64,
}

impl BuildAgent<'_> {
    /// `agents[i] (id)`, as errors name it.
    pub fn label(&self) -> String {
        format!("agents[{}] ({})", self.index, self.id)
    }
}

/// What building the agents of one configuration shares (`Config::building` makes it): the
/// limits `cli` agents run under, the gold answer and answer kind (sim agents need them), every
/// agent's backend, the embedded models loaded so far, and where to say what is happening
/// (pulling or loading a model).
pub struct Building<'a> {
    pub(crate) security: &'a SecuritySection,
    pub(crate) gold: Option<&'a str>,
    pub(crate) kind: AnswerKind,
    /// The backend of every agent of the configuration (agents on one local model share it).
    #[cfg_attr(not(feature = "local"), allow(dead_code))]
    pub(crate) backends: Vec<&'a Backend>,
    /// Embedded models loaded once per model file, shared by the agents that run on them.
    #[cfg(feature = "local")]
    pub(crate) local_models: HashMap<PathBuf, Arc<moot_local::LocalModel>>,
    /// Only pulling and loading the embedded model is reported, so without it nothing is.
    #[cfg_attr(not(feature = "local"), allow(dead_code))]
    pub(crate) progress: &'a mut dyn FnMut(&str),
    /// Where a person is asked, for agents a person answers (`human`): the front end's (the
    /// terminal, a page); `None` where nothing can ask one.
    pub(crate) desk: Option<Arc<dyn moot_backends::human::HumanDesk>>,
}

impl Building<'_> {
    /// Where the agents a person answers for ask them.
    pub fn with_desk(mut self, desk: Option<Arc<dyn moot_backends::human::HumanDesk>>) -> Self {
        self.desk = desk;
        self
    }

    /// The embedded models the agents built so far run on (for throughput reporting).
    #[cfg(feature = "local")]
    pub fn into_local_models(self) -> Vec<Arc<moot_local::LocalModel>> {
        self.local_models.into_values().collect()
    }
}

/// Why an agent's model could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// What was being done (`agents[0] (a)`, `loading model.gguf`), and the error that stopped
    /// it.
    #[error("{doing}")]
    Failed {
        doing: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The configuration lacks what the agent needs (`debate.gold` for a sim agent).
    #[error("{0}")]
    Needs(String),
    /// This build of moot lacks the backend (a feature left out of it): the user's to change.
    #[error("{0}")]
    NotCompiled(String),
}

impl BuildError {
    pub fn failed(
        doing: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> BuildError {
        BuildError::Failed {
            doing: doing.into(),
            source: Box::new(source),
        }
    }
}
