//! The spans the engine makes of what it does, for traces and metrics (`moot-telemetry`
//! listens; docs/architecture.md, Telemetry): a debate (`invoke_workflow {protocol}`), its
//! rounds, each agent's turn (`invoke_agent {agent}`), each request to a model
//! (`chat {model}`), sandbox checks and store writes. Names come from
//! [`moot_core::semconv`]. With nothing listening a span is one atomic load, and the values
//! given to it (`format_args!`) are never formatted.

use std::sync::atomic::{AtomicBool, Ordering};

use moot_backends::{BackendError, Completion, CompletionRequest, LanguageModel};
use moot_core::chat::ChatMessage;
use moot_core::redact::Redactor;
use moot_core::semconv as sc;
use tracing::field::Empty;
use tracing::Span;

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether agents' spans carry the prompt and the answer (redacted): off unless the user opts
/// in ([`sc::CAPTURE_CONTENT_VARIABLE`]); the binary sets it once at start.
pub fn capture_content(on: bool) {
    CAPTURE_CONTENT.store(on, Ordering::Relaxed);
}

pub(crate) fn capturing() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// Whether anything listens to moot's spans: checked before working out what only a span
/// would show (a model's name, a slot's label), so that nothing is spent when nothing listens.
pub(crate) fn listening() -> bool {
    tracing::enabled!(target: sc::TARGET, tracing::Level::INFO)
}

/// A model's name (`backend:model@url`, `local:stem`, `sim:…`) in its parts: the backend kind,
/// the model, and the server when it has one.
pub(crate) fn model_parts(name: &str) -> (&str, &str, Option<&str>) {
    let Some((backend, rest)) = name.split_once(':') else {
        return (name, name, None);
    };
    match rest.rsplit_once('@') {
        Some((model, url)) => (backend, model, Some(url)),
        None => (backend, rest, None),
    }
}

/// A debate: its protocol names the workflow, its run id the conversation.
pub(crate) fn debate(run_id: &str, protocol: &str, rounds: usize, rule: &str) -> Span {
    tracing::info_span!(
        target: sc::TARGET,
        sc::OP_INVOKE_WORKFLOW,
        otel.name = %format_args!("invoke_workflow {protocol}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        { sc::GEN_AI_OPERATION_NAME } = sc::OP_INVOKE_WORKFLOW,
        { sc::GEN_AI_WORKFLOW_NAME } = protocol,
        { sc::GEN_AI_CONVERSATION_ID } = run_id,
        { sc::MOOT_ROUNDS } = rounds as i64,
        { sc::MOOT_DECISION_RULE } = rule,
        { sc::MOOT_DECISION_ANSWER } = Empty,
        { sc::MOOT_OUTCOME } = Empty,
        { sc::ERROR_TYPE } = Empty,
    )
}

/// How a debate ended, on its span.
pub(crate) fn debate_ended(span: &Span, error: Option<&str>) {
    match error {
        None => {
            span.record(sc::MOOT_OUTCOME, "done");
        }
        Some(kind) => {
            span.record(sc::MOOT_OUTCOME, "failed");
            span.record(sc::ERROR_TYPE, kind);
            span.record("otel.status_code", "error");
        }
    }
}

/// One round of a debate.
pub(crate) fn round(round: usize, calls: usize) -> Span {
    tracing::info_span!(
        target: sc::TARGET,
        sc::SPAN_ROUND,
        otel.name = %format_args!("round {round}"),
        otel.kind = "internal",
        { sc::MOOT_ROUND } = round as i64,
        moot.calls = calls as i64,
    )
}

/// An agent's turn: one planned call, however it is answered (asked, re-asked, from the cache,
/// reused by a fork, or not at all).
pub(crate) fn agent_turn(
    run_id: &str,
    agent: &str,
    model: &dyn LanguageModel,
    round: usize,
    slot: &str,
) -> Span {
    let name = model.name();
    let (backend, model, url) = model_parts(&name);
    tracing::info_span!(
        target: sc::TARGET,
        sc::OP_INVOKE_AGENT,
        otel.name = %format_args!("invoke_agent {agent}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        { sc::GEN_AI_OPERATION_NAME } = sc::OP_INVOKE_AGENT,
        { sc::GEN_AI_AGENT_NAME } = agent,
        { sc::GEN_AI_CONVERSATION_ID } = run_id,
        { sc::GEN_AI_PROVIDER_NAME } = %sc::provider_name(backend, url),
        { sc::GEN_AI_REQUEST_MODEL } = model,
        { sc::MOOT_BACKEND } = backend,
        { sc::MOOT_ROUND } = round as i64,
        { sc::MOOT_SLOT } = slot,
        { sc::MOOT_CACHED } = Empty,
        { sc::MOOT_OUTCOME } = Empty,
        { sc::ERROR_TYPE } = Empty,
        { sc::GEN_AI_INPUT_MESSAGES } = Empty,
        { sc::GEN_AI_OUTPUT_MESSAGES } = Empty,
    )
}

/// One request to a model (the first ask, or the re-ask), as a client span.
pub(crate) fn chat(model: &dyn LanguageModel, request: &CompletionRequest) -> Span {
    if !listening() {
        return Span::none();
    }
    let name = model.name();
    let (backend, model, url) = model_parts(&name);
    let span = tracing::info_span!(
        target: sc::TARGET,
        sc::OP_CHAT,
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        { sc::GEN_AI_OPERATION_NAME } = sc::OP_CHAT,
        { sc::GEN_AI_PROVIDER_NAME } = %sc::provider_name(backend, url),
        { sc::GEN_AI_REQUEST_MODEL } = model,
        { sc::MOOT_BACKEND } = backend,
        { sc::GEN_AI_REQUEST_TEMPERATURE } = Empty,
        { sc::GEN_AI_REQUEST_MAX_TOKENS } = Empty,
        { sc::GEN_AI_USAGE_INPUT_TOKENS } = Empty,
        { sc::GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS } = Empty,
        { sc::GEN_AI_USAGE_OUTPUT_TOKENS } = Empty,
        { sc::MOOT_RETRIES } = Empty,
        { sc::MOOT_OUTCOME } = Empty,
        { sc::ERROR_TYPE } = Empty,
    );
    if !span.is_disabled() {
        if let Some(t) = request.params.temperature {
            span.record(sc::GEN_AI_REQUEST_TEMPERATURE, f64::from(t));
        }
        if let Some(n) = request.params.max_tokens {
            span.record(sc::GEN_AI_REQUEST_MAX_TOKENS, i64::from(n));
        }
    }
    span
}

/// What a model's answer came to, on its `chat` span.
pub(crate) fn chat_ended(span: &Span, reply: &Result<Completion, BackendError>) {
    if span.is_disabled() {
        return;
    }
    match reply {
        Ok(c) => {
            let u = &c.usage;
            span.record(sc::GEN_AI_USAGE_INPUT_TOKENS, count(u.input_tokens));
            if let Some(processed) = u.processed_input_tokens {
                span.record(
                    sc::GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
                    count(u.input_tokens.saturating_sub(processed)),
                );
            }
            span.record(sc::GEN_AI_USAGE_OUTPUT_TOKENS, count(u.output_tokens));
            // A list, as the conventions have it: `tracing` fields hold no lists, the
            // OpenTelemetry span does (a no-op when no exporter listens).
            {
                use opentelemetry::{Array, StringValue, Value};
                use tracing_opentelemetry::OpenTelemetrySpanExt;
                span.set_attribute(
                    sc::GEN_AI_RESPONSE_FINISH_REASONS,
                    Value::Array(Array::String(vec![StringValue::from(finish_reason(
                        &c.finish,
                    ))])),
                );
            }
            span.record(sc::MOOT_RETRIES, c.retries.len() as i64);
            span.record(sc::MOOT_OUTCOME, "ok");
        }
        Err(e) => {
            span.record(sc::MOOT_OUTCOME, "error");
            span.record(sc::ERROR_TYPE, error_type(e));
            span.record("otel.status_code", "error");
        }
    }
}

/// How an agent's turn ended, on its span: `outcome` (`ok`, `error`, `cached`, `skipped`,
/// `reused`, `cancelled`), and what went wrong when it did.
pub(crate) fn turn_ended(span: &Span, outcome: &str, error: Option<&str>) {
    if span.is_disabled() {
        return;
    }
    span.record(sc::MOOT_OUTCOME, outcome);
    span.record(sc::MOOT_CACHED, outcome == "cached");
    if let Some(e) = error {
        span.record(sc::ERROR_TYPE, e);
        span.record("otel.status_code", "error");
    }
}

/// The turn's prompt and answer, redacted, in the conventions' message shapes (only when the
/// user opted in: see [`capture_content`]).
pub(crate) fn turn_content(
    span: &Span,
    redactor: &Redactor,
    messages: &[ChatMessage],
    answer: Option<&str>,
) {
    if span.is_disabled() {
        return;
    }
    let input: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| {
            serde_json::json!({
                "role": m.role,
                "parts": [{"type": "text", "content": redactor.redact(&m.content)}],
            })
        })
        .collect();
    span.record(
        sc::GEN_AI_INPUT_MESSAGES,
        serde_json::Value::Array(input).to_string(),
    );
    if let Some(text) = answer {
        let output = serde_json::json!([{
            "role": "assistant",
            "parts": [{"type": "text", "content": redactor.redact(text)}],
        }]);
        span.record(sc::GEN_AI_OUTPUT_MESSAGES, output.to_string());
    }
}

/// A sandbox check of a code answer.
pub(crate) fn sandbox_check() -> Span {
    tracing::info_span!(
        target: sc::TARGET,
        sc::SPAN_SANDBOX_CHECK,
        otel.kind = "internal",
        { sc::MOOT_SANDBOX_VERDICT } = Empty,
    )
}

/// A write to the store: `operation` says what it writes (`calls`, `outcome`, `run`).
pub(crate) fn store_write(operation: &'static str) -> Span {
    tracing::info_span!(
        target: sc::TARGET,
        sc::SPAN_STORE_WRITE,
        otel.kind = "internal",
        { sc::MOOT_STORE_OPERATION } = operation,
    )
}

/// The conventions' finish reasons: `stop`, `length`, `error`, `tool_call`.
fn finish_reason(f: &moot_backends::FinishReason) -> &'static str {
    use moot_backends::FinishReason as F;
    match f {
        F::Stop => "stop",
        F::Length => "length",
        _ => "other",
    }
}

/// A failure's class, low in cardinality: what kind of error, not its message.
pub(crate) fn error_type(e: &BackendError) -> String {
    match e {
        BackendError::Http { status, .. } => format!("http_{status}"),
        BackendError::RateLimited { .. } => "rate_limited".into(),
        BackendError::Transport(_) => "transport".into(),
        BackendError::InvalidResponse(_) => "invalid_response".into(),
        BackendError::Process(_) => "process".into(),
        BackendError::AgentFailed(_) => "agent_failed".into(),
        BackendError::Model(_) => "model".into(),
        BackendError::Config(_) => "config".into(),
        BackendError::Policy(_) => "policy".into(),
        BackendError::Timeout | BackendError::TimeLimit(_) => "timeout".into(),
        BackendError::Cancelled => "cancelled".into(),
        // The last attempt's failure names it.
        BackendError::Retried { last, .. } => error_type(last),
    }
}

/// A token count as the span attribute it is exported as (the bridge sends `u64` as text).
fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_models_name_splits_into_backend_model_and_server() {
        assert_eq!(
            model_parts("openai:qwen2.5@http://127.0.0.1:8080/v1"),
            ("openai", "qwen2.5", Some("http://127.0.0.1:8080/v1"))
        );
        assert_eq!(
            model_parts("local:qwen2.5-coder-0.5b"),
            ("local", "qwen2.5-coder-0.5b", None)
        );
        assert_eq!(model_parts("plain"), ("plain", "plain", None));
    }

    #[test]
    fn error_types_name_the_kind_of_failure_not_its_message() {
        assert_eq!(
            error_type(&BackendError::Http {
                status: 503,
                body: "secret body".into()
            }),
            "http_503"
        );
        assert_eq!(
            error_type(&BackendError::Transport("connection refused".into())),
            "transport"
        );
        let retried = BackendError::Retried {
            attempts: Vec::new(),
            last: Box::new(BackendError::TimeLimit("the call's 60 s".into())),
        };
        assert_eq!(error_type(&retried), "timeout");
    }
}
