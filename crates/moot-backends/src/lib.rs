//! Language-model backends behind one runtime-selectable trait (see docs/architecture.md,
//! Backends).
//!
//! A backend turns a [`CompletionRequest`] (chat messages + sampling parameters) into a
//! [`Completion`] (text, real token usage, and token logprobs when it has them). Backends declare
//! what they can do in [`Capabilities`], so a protocol that needs logprobs can refuse a backend
//! without them. Cancellation is by dropping the future: every backend must stop its work
//! (drop the HTTP request, kill the agent's processes, free the sequence) when that happens.
//!
//! One module per provider. The wrappers are `LanguageModel`s of their own, apart from the
//! provider code: endpoint failover ([`balance`]), rate limits ([`limits`]) and retries
//! ([`retry`]). Timeouts are the engine's deadlines and budgets, and the request cache is the
//! engine's too; neither is a backend's business.

pub mod anthropic;
pub mod balance;
pub mod cli;
pub mod deadline;
pub mod http;
pub mod human;
pub mod limits;
pub mod models;
pub mod openai;
pub mod retry;
pub mod scripted;
pub mod sim;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use moot_core::chat::{
    CallMode, ChatMessage, FailedAttempt, LogprobSummary, Role, SamplingParams, Usage,
};

/// One call to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    pub messages: Vec<ChatMessage>,
    pub params: SamplingParams,
    pub mode: CallMode,
    /// A stable key for the conversation this call continues (the agent's id in a debate). A
    /// backend may keep per-conversation state with it, such as a KV cache whose prefix is
    /// reused.
    pub conversation: Option<String>,
    /// What the paid APIs' prompt caches are told of the call.
    pub prompt_cache: PromptCache,
}

impl CompletionRequest {
    pub fn new(messages: Vec<ChatMessage>) -> CompletionRequest {
        CompletionRequest {
            messages,
            params: SamplingParams::default(),
            mode: CallMode::Generate,
            conversation: None,
            prompt_cache: PromptCache::default(),
        }
    }
}

/// What a debate tells a provider's prompt cache about one call: a debate's agents read mostly
/// the same text, which a provider bills at a fraction of the price when it can read it from
/// its cache. Backends use what their API takes (Anthropic: breakpoints; OpenAI: the key);
/// the rest ignore it. Neither part changes what is asked, so neither is part of a request's
/// cache key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptCache {
    /// A stable key of the debate the call belongs to (a hash of its run id: no text of the
    /// debate), the same for all its calls.
    pub key: Option<String>,
    /// How many of the call's leading messages another call of its round to the same model
    /// sends too (the system prompt, the question, a shared transcript): the prefix worth
    /// caching for everyone. 0 when none or unknown.
    pub shared_messages: usize,
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

impl FinishReason {
    /// How the store records it: `stop`, `length`, or the provider's own word.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::Other(word) => word,
        }
    }
}

/// A model's answer to one call.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Completion {
    pub text: String,
    pub usage: Usage,
    /// Log-probability of each sampled token, when requested and supported.
    pub logprobs: Option<Vec<f32>>,
    pub finish: FinishReason,
    /// Attempts that failed before this one succeeded (filled in by [`retry::RetryingModel`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<FailedAttempt>,
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
    /// Keeps per-conversation state across calls (see [`CompletionRequest::conversation`]).
    pub conversations: bool,
    /// Reads [`CompletionRequest::prompt_cache`] (marks cache breakpoints or sends the cache
    /// key): the engine works the hints out only for models that read them.
    pub prompt_cache: bool,
    /// A person answers (the `human` backend): never answered from the request cache, never
    /// sharing another request's answer, since a person asked again may answer otherwise.
    pub person: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    #[error("HTTP {status}: {body}")]
    Http { status: u16, body: String },
    /// HTTP 429, with the server's `Retry-After` when it sent one.
    #[error("rate limited{}: {body}", retry_after.map_or(String::new(), |d| format!(" (retry after {:.1} s)", d.as_secs_f64())))]
    RateLimited {
        retry_after: Option<Duration>,
        body: String,
    },
    #[error("transport error: {0}")]
    Transport(String),
    #[error("invalid response: {0}")]
    InvalidResponse(String),
    /// The agent process could not be run to its end (pipes, waiting): retryable.
    #[error("agent process: {0}")]
    Process(String),
    /// The agent process ran and exited unsuccessfully (with its stderr's tail): the agent said
    /// no, and asking the same again would most likely get the same answer.
    #[error("agent failed: {0}")]
    AgentFailed(String),
    #[error("model: {0}")]
    Model(String),
    #[error("configuration: {0}")]
    Config(String),
    /// A security limit refused the call or its result (an agent's input or output over its
    /// cap): the same call would be refused again.
    #[error("refused by policy: {0}")]
    Policy(String),
    #[error("timed out")]
    Timeout,
    /// A time limit the caller set for the call (such as the engine's per-call budget) ran out
    /// and the call was cancelled; the text names the limit. A timeout like [`Self::Timeout`].
    #[error("timed out: {0}")]
    TimeLimit(String),
    #[error("cancelled")]
    Cancelled,
    /// The last error of a call that was retried; `attempts` are the failures before it.
    #[error("{last} ({})", tries_note(attempts, last))]
    Retried {
        attempts: Vec<FailedAttempt>,
        last: Box<BackendError>,
    },
}

/// `3 tries, each failing so`, or `3 tries; before it: HTTP 503 ×2`: how many tries a call
/// made, and each distinct earlier error once (with how often), so that a call refused the
/// same way four times says it once.
fn tries_note(attempts: &[FailedAttempt], last: &BackendError) -> String {
    let tries = attempts.len() + 1;
    let last = last.to_string();
    let mut earlier: Vec<(&str, usize)> = Vec::new();
    for a in attempts.iter().filter(|a| a.error != last) {
        match earlier.iter_mut().find(|(e, _)| *e == a.error) {
            Some((_, n)) => *n += 1,
            None => earlier.push((&a.error, 1)),
        }
    }
    if earlier.is_empty() {
        return format!("{tries} tries, each failing so");
    }
    let listed: Vec<String> = earlier
        .iter()
        .map(|(e, n)| {
            if *n > 1 {
                format!("{e} ×{n}")
            } else {
                e.to_string()
            }
        })
        .collect();
    format!("{tries} tries; before it: {}", listed.join("; "))
}

/// What a failed call means for retrying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Too many requests: wait (as long as the server asks) and retry.
    RateLimited,
    /// Server errors (5xx, 408, 409), dropped connections, timeouts, responses cut short: retry
    /// after a backoff.
    Transient,
    /// The prompt does not fit the model's context: retrying the same request cannot help.
    ContextLength,
    /// Authentication, validation, other 4xx, configuration, an agent process that exited
    /// unsuccessfully: retrying cannot help.
    Permanent,
    Cancelled,
}

impl ErrorClass {
    pub fn retryable(self) -> bool {
        matches!(self, ErrorClass::RateLimited | ErrorClass::Transient)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::RateLimited => "rate-limited",
            ErrorClass::Transient => "transient",
            ErrorClass::ContextLength => "context-length",
            ErrorClass::Permanent => "permanent",
            ErrorClass::Cancelled => "cancelled",
        }
    }
}

/// How servers word "the prompt is too long" (OpenAI `context_length_exceeded`, vLLM "maximum
/// context length" or "longer than the maximum model length", llama.cpp "exceeds the available
/// context size", Anthropic "prompt is too long", Ollama "context length").
const CONTEXT_LENGTH_MARKERS: [&str; 7] = [
    "context_length_exceeded",
    "context length",
    "maximum model length",
    "context size",
    "context window",
    "prompt is too long",
    "too many tokens",
];

/// How OpenAI says an account is out of credit: a 429 that no amount of waiting fixes.
const QUOTA_MARKERS: [&str; 2] = ["insufficient_quota", "exceeded your current quota"];

fn mentions(text: &str, markers: &[&str]) -> bool {
    let lower = text.to_ascii_lowercase();
    markers.iter().any(|m| lower.contains(m))
}

fn mentions_context_length(text: &str) -> bool {
    mentions(text, &CONTEXT_LENGTH_MARKERS)
}

impl BackendError {
    /// The class of this error, the same for every provider.
    pub fn class(&self) -> ErrorClass {
        match self {
            BackendError::RateLimited { body, .. } | BackendError::Http { status: 429, body }
                if mentions(body, &QUOTA_MARKERS) =>
            {
                ErrorClass::Permanent
            }
            BackendError::RateLimited { .. } => ErrorClass::RateLimited,
            BackendError::Http { status, body } => match status {
                429 => ErrorClass::RateLimited,
                // Timeout and conflict; 5xx including Anthropic's 529 "overloaded". Every other
                // 4xx is the request's fault and would fail again.
                408 | 409 | 500..=599 => ErrorClass::Transient,
                _ if mentions_context_length(body) => ErrorClass::ContextLength,
                _ => ErrorClass::Permanent,
            },
            BackendError::Transport(_)
            | BackendError::InvalidResponse(_)
            | BackendError::Process(_)
            | BackendError::Timeout
            | BackendError::TimeLimit(_) => ErrorClass::Transient,
            BackendError::Model(m) if mentions_context_length(m) => ErrorClass::ContextLength,
            BackendError::Model(_)
            | BackendError::Config(_)
            | BackendError::Policy(_)
            | BackendError::AgentFailed(_) => ErrorClass::Permanent,
            BackendError::Cancelled => ErrorClass::Cancelled,
            BackendError::Retried { last, .. } => last.class(),
        }
    }

    /// How long the server asked us to wait before retrying.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            BackendError::RateLimited { retry_after, .. } => *retry_after,
            BackendError::Retried { last, .. } => last.retry_after(),
            _ => None,
        }
    }

    /// The failed attempts before this error (empty unless it was retried).
    pub fn attempts(&self) -> &[FailedAttempt] {
        match self {
            BackendError::Retried { attempts, .. } => attempts,
            _ => &[],
        }
    }
}

/// A language model, selected at run time (`Arc<dyn LanguageModel>`).
#[async_trait]
pub trait LanguageModel: Send + Sync + fmt::Debug {
    /// Human-readable identity, e.g. `openai:qwen2.5-0.5b@http://127.0.0.1:8080/v1`.
    fn name(&self) -> String;
    fn capabilities(&self) -> Capabilities;
    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError>;
}

#[cfg(test)]
mod tries_note_tests {
    use super::*;

    fn attempt(error: &str) -> FailedAttempt {
        FailedAttempt {
            error: error.into(),
            class: "transient".into(),
            wait_ms: 0,
        }
    }

    #[test]
    fn a_call_refused_the_same_way_every_time_says_the_error_once() {
        let last = BackendError::Http {
            status: 503,
            body: "busy".into(),
        };
        let text = BackendError::Retried {
            attempts: vec![attempt(&last.to_string()); 3],
            last: Box::new(last.clone()),
        }
        .to_string();
        assert_eq!(text.matches("busy").count(), 1, "{text}");
        assert!(text.ends_with("(4 tries, each failing so)"), "{text}");
    }

    #[test]
    fn distinct_earlier_errors_are_each_named_once_with_their_count() {
        let last = BackendError::Http {
            status: 500,
            body: "boom".into(),
        };
        let text = BackendError::Retried {
            attempts: vec![attempt("reset"), attempt("HTTP 503"), attempt("reset")],
            last: Box::new(last),
        }
        .to_string();
        assert!(
            text.ends_with("(4 tries; before it: reset ×2; HTTP 503)"),
            "{text}"
        );
    }
}
