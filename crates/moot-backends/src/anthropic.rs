//! `anthropic`: Claude models over Anthropic's Messages API (`POST /v1/messages`), plain or
//! streamed as server-sent events. The API has no token logprobs and no seed, and says so in
//! its capabilities, so protocols that need logprobs refuse it.
//!
//! Differences from chat completions handled here: system messages travel in a top-level
//! `system` field; the conversation must start with a user turn and alternate, so consecutive
//! turns of one role are joined; `max_tokens` is required (the request's, else the config's,
//! else [`DEFAULT_MAX_TOKENS`]); the key goes in `x-api-key` with an `anthropic-version`
//! header. As for every backend, timeouts and retries are wrappers' business.

use std::error::Error as StdError;

use async_trait::async_trait;
use futures_util::Stream;
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::http::{endpoint, float, read_answer, truncate, Answer, HttpEndpoint};
use crate::{
    BackendError, Capabilities, Completion, CompletionRequest, FinishReason, LanguageModel, Role,
    Usage,
};

/// Anthropic's own endpoint, used when an agent gives none.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The API version moot speaks.
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` when neither the request nor the config sets it (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicConfig {
    /// `https://api.anthropic.com` (or a proxy); `/v1/messages` is appended, or `/messages` when
    /// the URL already ends in `/v1`.
    pub base_url: String,
    pub model: String,
    /// The NAME of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_tokens: Option<u32>,
    pub stream: bool,
}

impl AnthropicConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> AnthropicConfig {
        AnthropicConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            temperature: None,
            top_p: None,
            max_tokens: None,
            stream: false,
        }
    }
}

/// The JSON body of one Messages call.
pub fn request_body(
    config: &AnthropicConfig,
    request: &CompletionRequest,
    stream: bool,
) -> Result<Value, BackendError> {
    let params = &request.params;
    let mut body = Map::new();
    body.insert("model".into(), Value::String(config.model.clone()));
    let max_tokens = params
        .max_tokens
        .or(config.max_tokens)
        .unwrap_or(DEFAULT_MAX_TOKENS);
    body.insert("max_tokens".into(), Value::from(max_tokens));
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    if !system.is_empty() {
        body.insert("system".into(), Value::String(system.join("\n\n")));
    }
    // Turns alternate, starting with the user: consecutive turns of one role are joined.
    let mut turns: Vec<(&'static str, String)> = Vec::new();
    for m in request.messages.iter().filter(|m| m.role != Role::System) {
        let role = if m.role == Role::Assistant {
            "assistant"
        } else {
            "user"
        };
        match turns.last_mut() {
            Some((last, text)) if *last == role => {
                text.push_str("\n\n");
                text.push_str(&m.content);
            }
            _ => turns.push((role, m.content.clone())),
        }
    }
    if turns.first().is_none_or(|(role, _)| *role != "user") {
        return Err(BackendError::Config(
            "the Messages API needs a conversation that starts with a user turn".into(),
        ));
    }
    let messages = turns
        .into_iter()
        .map(|(role, content)| json!({ "role": role, "content": content }))
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    if let Some(t) = params.temperature.or(config.temperature) {
        // Anthropic's range is 0–1, not OpenAI's 0–2.
        if t > 1.0 {
            return Err(BackendError::Config(format!(
                "temperature {t} is above the Messages API's maximum of 1"
            )));
        }
        body.insert("temperature".into(), float("temperature", t)?);
    }
    if let Some(p) = params.top_p.or(config.top_p) {
        body.insert("top_p".into(), float("top_p", p)?);
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    Ok(Value::Object(body))
}

// --- wire types (only what moot reads) ---

#[derive(Debug, Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Vec<WireBlock>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct WireBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        other => FinishReason::Other(other.to_string()),
    }
}

/// `{"type": "error", "error": {"type": …, "message": …}}` as an error of the right class.
fn api_error(value: &Value) -> BackendError {
    let error = value.get("error").unwrap_or(value);
    let kind = error.get("type").and_then(Value::as_str).unwrap_or("error");
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_string);
    let body = truncate(&format!("{kind}: {message}"), crate::http::MAX_ERROR_BODY);
    match kind {
        "rate_limit_error" => BackendError::RateLimited {
            retry_after: None,
            body,
        },
        "overloaded_error" => BackendError::Http { status: 529, body },
        "api_error" => BackendError::Http { status: 500, body },
        "invalid_request_error" => BackendError::Http { status: 400, body },
        "authentication_error" => BackendError::Http { status: 401, body },
        "permission_error" => BackendError::Http { status: 403, body },
        "not_found_error" => BackendError::Http { status: 404, body },
        _ => BackendError::InvalidResponse(format!("the server reported an error: {body}")),
    }
}

fn parse_json(text: &str, what: &str) -> Result<Value, BackendError> {
    serde_json::from_str(text).map_err(|e| {
        BackendError::InvalidResponse(format!("{what} is not JSON ({e}): {}", truncate(text, 200)))
    })
}

/// One non-streamed response body.
pub fn parse_response(text: &str) -> Result<Completion, BackendError> {
    let value = parse_json(text, "the response")?;
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(api_error(&value));
    }
    let message: WireMessage = serde_json::from_value(value)
        .map_err(|e| BackendError::InvalidResponse(format!("unexpected response shape: {e}")))?;
    let usage = message
        .usage
        .ok_or_else(|| BackendError::InvalidResponse("the response has no token usage".into()))?;
    let (Some(input), Some(output)) = (usage.input_tokens, usage.output_tokens) else {
        return Err(BackendError::InvalidResponse(
            "the response's usage lacks input or output tokens".into(),
        ));
    };
    let text = message
        .content
        .iter()
        .filter(|b| b.kind == "text")
        .map(|b| b.text.as_str())
        .collect();
    Ok(Completion {
        text,
        usage: usage_of(input, output, usage.cache_read_input_tokens),
        logprobs: None,
        finish: message
            .stop_reason
            .as_deref()
            .map_or(FinishReason::Other("unknown".into()), stop_reason),
        retries: Vec::new(),
    })
}

fn usage_of(input: u64, output: u64, cache_read: Option<u64>) -> Usage {
    Usage {
        // Anthropic counts tokens read from its prompt cache apart from `input_tokens`.
        input_tokens: input.saturating_add(cache_read.unwrap_or(0)),
        output_tokens: output,
        processed_input_tokens: cache_read.map(|_| input),
    }
}

/// Assembles a streamed answer from its events: `message_start` (input usage),
/// `content_block_delta` (text), `message_delta` (stop reason, output usage), `message_stop`.
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    text: String,
    input: Option<u64>,
    cache_read: Option<u64>,
    output: Option<u64>,
    stop: Option<FinishReason>,
    done: bool,
}

impl StreamAccumulator {
    /// Reads one event's data; returns whether the message is complete.
    pub fn push(&mut self, data: &str) -> Result<bool, BackendError> {
        let value = parse_json(data, "a stream event")?;
        match value.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                let usage: WireUsage = value
                    .pointer("/message/usage")
                    .cloned()
                    .map(serde_json::from_value)
                    .transpose()
                    .map_err(|e| {
                        BackendError::InvalidResponse(format!("unexpected message_start: {e}"))
                    })?
                    .unwrap_or_default();
                self.input = usage.input_tokens;
                self.cache_read = usage.cache_read_input_tokens;
                self.output = usage.output_tokens;
            }
            Some("content_block_delta")
                if value.pointer("/delta/type").and_then(Value::as_str) == Some("text_delta") =>
            {
                if let Some(t) = value.pointer("/delta/text").and_then(Value::as_str) {
                    self.text.push_str(t);
                }
            }
            Some("message_delta") => {
                if let Some(r) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(r));
                }
                if let Some(n) = value
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64)
                {
                    self.output = Some(n);
                }
            }
            Some("message_stop") => {
                self.done = true;
                return Ok(true);
            }
            Some("error") => return Err(api_error(&value)),
            // ping, content_block_start/stop, and event types added later.
            _ => {}
        }
        Ok(false)
    }

    pub fn finish(self) -> Result<Completion, BackendError> {
        if !self.done {
            return Err(BackendError::Transport(
                "stream ended before the answer was complete".into(),
            ));
        }
        let (Some(input), Some(output)) = (self.input, self.output) else {
            return Err(BackendError::InvalidResponse(
                "the stream sent no token usage".into(),
            ));
        };
        Ok(Completion {
            text: self.text,
            usage: usage_of(input, output, self.cache_read),
            logprobs: None,
            finish: self
                .stop
                .unwrap_or_else(|| FinishReason::Other("unknown".into())),
            retries: Vec::new(),
        })
    }
}

/// How Messages answers are read: a whole body, or its events; an error response carries
/// Anthropic's error object, whose type and message are kept readable.
impl Answer for StreamAccumulator {
    fn parse(body: &str) -> Result<Completion, BackendError> {
        parse_response(body)
    }

    fn take_event(&mut self, _: &str, data: &str) -> Result<bool, BackendError> {
        self.push(data)
    }

    fn finish(self) -> Result<Completion, BackendError> {
        StreamAccumulator::finish(self)
    }

    fn error(error: BackendError) -> BackendError {
        match error {
            BackendError::Http { status, body } => match serde_json::from_str::<Value>(&body) {
                Ok(v) if v.get("error").is_some() => match api_error(&v) {
                    BackendError::Http { body, .. } => BackendError::Http { status, body },
                    _ => BackendError::Http { status, body },
                },
                _ => BackendError::Http { status, body },
            },
            other => other,
        }
    }
}

/// Reads a Messages event stream into an answer; stops at `message_stop`.
pub async fn read_event_stream<S, B, E>(bytes: S) -> Result<Completion, BackendError>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: StdError + 'static,
{
    read_answer::<StreamAccumulator, _, _, _>(bytes).await
}

/// A Claude model behind the Messages API.
#[derive(Debug)]
pub struct AnthropicModel {
    config: AnthropicConfig,
    http: HttpEndpoint,
}

impl AnthropicModel {
    pub fn new(config: AnthropicConfig) -> Result<AnthropicModel, BackendError> {
        let base = config.base_url.trim().trim_end_matches('/');
        let url = if base.ends_with("/v1") {
            endpoint(base, "messages")?
        } else {
            endpoint(base, "v1/messages")?
        };
        let http = HttpEndpoint::new(url, &config.model, config.api_key_env.as_deref())?;
        Ok(AnthropicModel { config, http })
    }
}

#[async_trait]
impl LanguageModel for AnthropicModel {
    fn name(&self) -> String {
        format!("anthropic:{}@{}", self.config.model, self.config.base_url)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            logprobs: false,
            seed: false,
            conversations: false,
        }
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError> {
        let stream = self.config.stream;
        let body = request_body(&self.config, &request, stream)?;
        let mut call = self
            .http
            .client
            .post(self.http.url.clone())
            .header("anthropic-version", API_VERSION)
            .json(&body);
        if let Some(key) = &self.http.api_key {
            call = call.header("x-api-key", key.expose_secret());
        }
        self.http.answer::<StreamAccumulator>(call, stream).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChatMessage, SamplingParams};

    fn request() -> CompletionRequest {
        CompletionRequest {
            params: SamplingParams {
                temperature: Some(0.7),
                max_tokens: Some(300),
                seed: Some(7),
                logprobs: true,
                ..SamplingParams::default()
            },
            ..CompletionRequest::new(vec![
                ChatMessage::system("You are agent 1."),
                ChatMessage::system("Answer briefly."),
                ChatMessage::user("What is 17 * 24?"),
                ChatMessage::assistant("408"),
                ChatMessage::user("Here are the others' answers."),
                ChatMessage::user("Reconsider."),
            ])
        }
    }

    #[test]
    fn the_request_has_the_messages_api_shape() {
        let config = AnthropicConfig::new("https://api.anthropic.com", "claude-x");
        let body = request_body(&config, &request(), false).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "claude-x",
                "max_tokens": 300,
                "system": "You are agent 1.\n\nAnswer briefly.",
                "messages": [
                    {"role": "user", "content": "What is 17 * 24?"},
                    {"role": "assistant", "content": "408"},
                    {"role": "user", "content": "Here are the others' answers.\n\nReconsider."}
                ],
                "temperature": 0.7
            })
        );
        // No seed and no logprobs: the API has neither.
        let streamed = request_body(&config, &request(), true).unwrap();
        assert_eq!(streamed["stream"], true);
        let mut plain = CompletionRequest::new(vec![ChatMessage::user("hi")]);
        plain.params.max_tokens = None;
        assert_eq!(
            request_body(&config, &plain, false).unwrap()["max_tokens"],
            DEFAULT_MAX_TOKENS
        );
    }

    #[test]
    fn requests_the_api_cannot_take_are_refused_before_sending() {
        let config = AnthropicConfig::new("https://api.anthropic.com", "claude-x");
        let mut hot = request();
        hot.params.temperature = Some(1.5);
        assert!(matches!(
            request_body(&config, &hot, false),
            Err(BackendError::Config(m)) if m.contains("temperature")
        ));
        let assistant_first = CompletionRequest::new(vec![ChatMessage::assistant("hello")]);
        assert!(request_body(&config, &assistant_first, false).is_err());
    }

    #[test]
    fn responses_and_errors_are_read() {
        let c = parse_response(
            r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
                "content":[{"type":"text","text":"17 * 24 = "},{"type":"text","text":"408"}],
                "stop_reason":"end_turn","stop_sequence":null,
                "usage":{"input_tokens":20,"output_tokens":6,"cache_read_input_tokens":100}}"#,
        )
        .unwrap();
        assert_eq!(c.text, "17 * 24 = 408");
        assert_eq!(c.finish, FinishReason::Stop);
        assert_eq!(c.usage.input_tokens, 120);
        assert_eq!(c.usage.processed_input_tokens, Some(20));
        assert_eq!(c.logprobs, None);
        let overloaded = parse_response(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .unwrap_err();
        assert_eq!(overloaded.class(), crate::ErrorClass::Transient);
        let limited = parse_response(
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}"#,
        )
        .unwrap_err();
        assert_eq!(limited.class(), crate::ErrorClass::RateLimited);
        let long = parse_response(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 250000 tokens > 200000 maximum"}}"#,
        )
        .unwrap_err();
        assert_eq!(long.class(), crate::ErrorClass::ContextLength);
        assert!(parse_response("{").is_err());
        assert!(parse_response(r#"{"content":[]}"#).is_err(), "no usage");
    }

    #[test]
    fn stream_events_are_assembled() {
        let mut acc = StreamAccumulator::default();
        for data in [
            r#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":25,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"40"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"8"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":3}}"#,
        ] {
            assert!(!acc.push(data).unwrap());
        }
        assert!(acc.push(r#"{"type":"message_stop"}"#).unwrap());
        let c = acc.finish().unwrap();
        assert_eq!(
            (c.text.as_str(), c.usage.input_tokens, c.usage.output_tokens),
            ("408", 25, 3)
        );
        assert_eq!(c.finish, FinishReason::Length);

        let mut cut = StreamAccumulator::default();
        cut.push(
            r#"{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}"#,
        )
        .unwrap();
        assert!(matches!(cut.finish(), Err(BackendError::Transport(_))));
        let mut failing = StreamAccumulator::default();
        let err = failing
            .push(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
            .unwrap_err();
        assert_eq!(err.class(), crate::ErrorClass::Transient);
    }
}
