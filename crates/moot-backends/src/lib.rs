//! Language-model backends behind one runtime-selectable trait (DESIGN §6).
//!
//! A backend turns a [`CompletionRequest`] (chat messages + sampling parameters) into a
//! [`Completion`] (text, real token usage, and token logprobs when it has them). Backends declare
//! what they can do in [`Capabilities`], so a protocol that needs logprobs can refuse a backend
//! without them. Cancellation is by dropping the future: every backend must stop its work
//! (drop the HTTP request, kill the process group, free the sequence) when that happens.
//!
//! One module per provider; wrappers (timeouts, retries, rate limits, caching) live outside the
//! provider code.

pub mod cli;
pub mod models;
pub mod openai;
pub mod scripted;
pub mod sim;

use std::fmt;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use moot_core::chat::{CallMode, ChatMessage, LogprobSummary, Role, SamplingParams, Usage};

/// One call to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    pub messages: Vec<ChatMessage>,
    pub params: SamplingParams,
    pub mode: CallMode,
    /// A stable key for the conversation this call continues (the agent's id in a debate). A
    /// backend may keep per-session state with it, such as a KV cache whose prefix is reused.
    pub session: Option<String>,
}

impl CompletionRequest {
    pub fn new(messages: Vec<ChatMessage>) -> CompletionRequest {
        CompletionRequest {
            messages,
            params: SamplingParams::default(),
            mode: CallMode::Generate,
            session: None,
        }
    }
}

/// Why generation stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FinishReason {
    /// End of turn / stop sequence.
    Stop,
    /// `max_tokens` reached.
    Length,
    Other(String),
}

/// A model's answer to one call.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Completion {
    pub text: String,
    pub usage: Usage,
    /// Log-probability of each sampled token, when requested and supported.
    pub logprobs: Option<Vec<f32>>,
    pub finish: FinishReason,
}

impl Completion {
    pub fn logprob_summary(&self) -> Option<LogprobSummary> {
        self.logprobs
            .as_deref()
            .and_then(LogprobSummary::from_logprobs)
    }
}

/// What a backend can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Returns token logprobs when `params.logprobs` is set.
    pub logprobs: bool,
    /// Honours `params.seed` for reproducible sampling.
    pub seed: bool,
    /// Keeps per-session state across calls (see [`CompletionRequest::session`]).
    pub sessions: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    #[error("HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("transport error: {0}")]
    Transport(String),
    #[error("invalid response: {0}")]
    InvalidResponse(String),
    #[error("agent process: {0}")]
    Process(String),
    #[error("model: {0}")]
    Model(String),
    #[error("configuration: {0}")]
    Config(String),
    #[error("timed out")]
    Timeout,
    #[error("cancelled")]
    Cancelled,
}

/// A language model, selected at run time (`Arc<dyn LanguageModel>`).
#[async_trait]
pub trait LanguageModel: Send + Sync + fmt::Debug {
    /// Human-readable identity, e.g. `openai:qwen2.5-0.5b@http://127.0.0.1:8080/v1`.
    fn name(&self) -> String;
    fn capabilities(&self) -> Capabilities;
    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError>;
}
