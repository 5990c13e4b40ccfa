//! moot's configuration: what a debate, a benchmark or a server is set up with, as types.
//!
//! [`Config`] has one section per concern — [`DebateSection`], the protocol's options,
//! [`SecuritySection`], [`RetrySection`], [`BudgetSection`] and the [`AgentConfig`]s — each
//! with its defaults (one source: the engine's and the backends' own defaults where they have
//! them) and a `validate` that names the key at fault in a [`ConfigError`]. Values from a fixed
//! set are types that serde and clap both read ([`ProtocolName`], [`AnswerSetting`],
//! [`TieBreakSetting`], [`ServerKindSetting`]); an agent is typed by its [`Backend`], whose
//! settings hold what that backend read from its keys: each backend is one module of
//! [`backend`] and one entry of [`BACKENDS`], from its keys to building its model.
//!
//! Files are read by [`dialect`]s: moot's own keys in TOML, YAML or JSON, and freemad's
//! configuration files as they are.
//!
//! ```
//! let config = moot_config::dialect::native::from_toml(
//!     "[debate]\nprotocol = \"madc\"\nrounds = 2\n[[agents]]\nid = \"a\"\nbackend = \"local\"\n",
//! )
//! .unwrap();
//! config.validate().unwrap();
//! assert_eq!(config.debate.protocol.as_str(), "madc");
//! assert_eq!(config.agents[0].backend.name(), "local");
//! ```

mod agent;
pub mod backend;
mod budget;
mod cache;
mod config;
mod debate;
pub mod dialect;
mod error;
mod example;
mod field;
mod logging;
mod names;
mod options;
mod output;
mod program;
mod retry;
mod security;
mod serve;
mod size;
mod telemetry;
mod validation;

pub use agent::{
    default_agents, resize, sim_agents, sim_team, typed_agents, AgentConfig, AgentFields,
    RateLimits, Sampling, COMMON_KEYS, DEFAULT_AGENTS, DEFAULT_TEAM_MAX_TOKENS,
    DEFAULT_TEAM_TEMPERATURE,
};
pub use backend::http::{Endpoints, Http};
pub use backend::{
    backend_names, Backend, BackendEntry, BackendSettings, BuildAgent, BuildError, Building,
    ModelSwap, BACKENDS,
};
pub use budget::BudgetSection;
pub use cache::CacheSection;
pub use config::Config;
pub use debate::{DebateSection, DEFAULT_ROUNDS, DEFAULT_SEED};
pub use dialect::{from_text, load, load_with_dialect, Dialect};
pub use error::ConfigError;
pub use example::EXAMPLE;
pub use field::{Field, Via};
pub use logging::{LogLevel, LoggingSection};
pub use names::{
    AnswerSetting, ProtocolName, ServerKindSetting, TieBreakSetting, UnknownAnswerSetting,
    UnknownProtocol, UnknownServerKind,
};
pub use output::{OutputSection, TranscriptFormat};
pub use program::program_problem;
pub use retry::RetrySection;
pub use security::SecuritySection;
pub use serve::ServeSection;
pub use size::{
    DebateSize, CEILING_AGENTS, CEILING_ROUNDS, MAX_AGENTS, MAX_ROUNDS, MIN_TOKENS_PER_CALL,
};
pub use telemetry::TelemetrySection;
pub use validation::ValidationSection;
