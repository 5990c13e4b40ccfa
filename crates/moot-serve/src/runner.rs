//! What the server asks of whoever runs debates: the binary builds agents and runs the engine
//! (it owns the embedded model and the configuration); the server only starts debates and reads
//! the store.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A debate to start: the question and what the request changes of the configured debate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DebateRequest {
    pub question: String,
    /// A protocol's name (default: the configured one).
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub rounds: Option<usize>,
    /// Who debates (default: the configured team).
    #[serde(default)]
    pub agents: Option<AgentsChoice>,
    /// Protocol options, as `moot ask -o KEY=VALUE` takes them.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// Debate among agents on this model of the configured OpenAI-compatible upstream instead
    /// of the configured team (`moot/PROTOCOL/MODEL`).
    #[serde(default)]
    pub model: Option<String>,
}

/// Who debates: a number of agents (the configured team, cycled to that size, as `--agents`
/// does), or configured agents picked by id (`["a", "c"]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AgentsChoice {
    Count(usize),
    Ids(Vec<String>),
}

/// A started debate: its run row exists when this is returned.
pub struct Started {
    pub run_id: String,
    /// Resolves when the debate has ended (its decision stored), or with why it failed.
    pub finished: tokio::sync::oneshot::Receiver<Result<(), String>>,
    /// Sending on it cancels the debate (its calls stop; the run is recorded as failed); a
    /// sender dropped without sending leaves the debate running, as `/api/runs` wants.
    pub cancel: tokio::sync::oneshot::Sender<()>,
}

/// The configured team, as `/v1/models` and the start form show it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Team {
    pub protocol: String,
    pub rounds: usize,
    /// Each agent as `id (backend model)`.
    pub agents: Vec<String>,
    /// The configured agents' ids, to pick from (empty for the embedded default team).
    pub ids: Vec<String>,
    /// The OpenAI-compatible upstream that `moot/PROTOCOL/MODEL` debates on, if one is set.
    pub upstream: Option<String>,
}

/// A benchmark's report, as `moot report` writes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchReport {
    /// The report in Markdown; its plots are linked as `plots/FILE.svg`.
    pub markdown: String,
    /// `(FILE.svg, the SVG)`.
    pub plots: Vec<(String, String)>,
    /// Each reported debate's run id and whether its chosen answer was right.
    pub graded: Vec<(String, bool)>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The request cannot run as given (unknown protocol, bad option, too many agents).
    #[error("{0}")]
    BadRequest(String),
    /// Something failed on the server's side (the store, building agents).
    #[error("{0}")]
    Internal(String),
}

#[async_trait]
pub trait Runner: Send + Sync {
    /// Whether `request` could run (protocol, options, team size), without starting it: a bad
    /// request is told so even when every slot is busy.
    fn check(&self, request: &DebateRequest) -> Result<(), RunnerError>;
    /// Checks and starts a debate; the debate goes on after this returns.
    async fn start(&self, request: DebateRequest) -> Result<Started, RunnerError>;
    fn team(&self) -> Team;
    /// Checks a configuration text (TOML, YAML or JSON in any dialect moot reads) as
    /// `moot config check` does: `Ok` with a summary, or the error naming the key.
    fn check_config(&self, text: &str) -> Result<String, String>;
    /// The report of the benchmark `name` (`None` before any of its debates has finished).
    async fn bench_report(&self, name: &str) -> Result<Option<BenchReport>, RunnerError>;
}
