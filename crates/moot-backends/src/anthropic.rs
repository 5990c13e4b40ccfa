//! `anthropic`: Claude models over Anthropic's Messages API (`POST /v1/messages`), plain or
//! streamed as server-sent events. The API has no token logprobs and no seed, and says so in
//! its capabilities, so protocols that need logprobs refuse it.
//!
//! Differences from chat completions handled here: system messages travel in a top-level
//! `system` field; the conversation must start with a user turn and alternate, so consecutive
//! turns of one role are joined; `max_tokens` is required (the request's, else the config's,
//! else [`DEFAULT_MAX_TOKENS`]); the key goes in `x-api-key` with an `anthropic-version`
//! header. As for every backend, timeouts and retries are wrappers' business.
//!
//! Prompt caching (Anthropic's guide, docs.claude.com "Prompt caching"): a block marked
//! `cache_control: {"type": "ephemeral"}` caches the prompt up to and including it, for five
//! minutes from its last use; a request marks at most four; a prefix shorter than the model's
//! minimum (1,024 to 4,096 tokens) is not cached. Writing the cache costs 1.25 times the input
//! price, reading it a tenth. moot marks the system prompt and the end of the part of the
//! prompt the call shares with the other calls of its round ([`crate::PromptCache`]), each
//! only when the prefix it closes is long enough ([`Breakpoints`]). The usage then counts
//! `cache_read_input_tokens` and `cache_creation_input_tokens` apart from `input_tokens`,
//! which are put back together here: a call's input is its whole prompt.

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
    /// Mark cache breakpoints on the prompts' shared part (see the module's docs).
    pub prompt_cache: bool,
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
            prompt_cache: true,
        }
    }
}

/// The shortest prompt prefix `model` caches, in tokens (Anthropic's guide: 4,096 for Claude
/// Opus 4.5 and later Opus models and Haiku 4.5, 2,048 for Sonnet 4.6 and the Haiku 3 models,
/// 1,024 for the others). A marker on a shorter prefix is ignored by the API; unknown models get
/// the smallest minimum, where a marker costs nothing when it is too short.
pub fn min_cacheable_tokens(model: &str) -> u64 {
    let m = model.to_ascii_lowercase().replace('.', "-");
    let any = |names: &[&str]| names.iter().any(|n| m.contains(n));
    if any(&["haiku-4", "opus-4-5", "opus-4-6"]) {
        4096
    } else if any(&["haiku", "sonnet-4-6"]) {
        2048
    } else {
        1024
    }
}

/// Tokens in `chars` characters of prompt, estimated low (characters / 4, rounded down: a
/// token of English is about four characters, of most other scripts fewer), so that a prefix
/// is marked only when it is surely long enough to be cached.
fn estimated_tokens(chars: usize) -> u64 {
    (chars / 4) as u64
}

/// Where a request marks cache breakpoints: after the system prompt, and after the last message
/// of the part shared with other calls; each only when the prefix it closes is long enough for
/// the model to cache. At most two of the four breakpoints a request may mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Breakpoints {
    system: bool,
    /// The index (in the request's messages) of the last shared message.
    shared_end: Option<usize>,
}

impl Breakpoints {
    fn of(config: &AnthropicConfig, request: &CompletionRequest) -> Breakpoints {
        if !config.prompt_cache {
            return Breakpoints::default();
        }
        let min = min_cacheable_tokens(&config.model);
        let messages = &request.messages;
        let system_chars: usize = messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.chars().count() + 2)
            .sum();
        let shared = request.prompt_cache.shared_messages.min(messages.len());
        // A system message after the shared part would change the system prompt, which comes
        // first: then the calls share nothing.
        let system_shared = messages[shared..].iter().all(|m| m.role != Role::System);
        let shared_end = messages[..shared]
            .iter()
            .rposition(|m| m.role != Role::System)
            .filter(|&end| system_shared && !messages[end].content.trim().is_empty())
            .filter(|&end| {
                let chars: usize = messages[..=end]
                    .iter()
                    .filter(|m| m.role != Role::System)
                    .map(|m| m.content.chars().count() + 2)
                    .sum();
                estimated_tokens(system_chars + chars) >= min
            });
        Breakpoints {
            system: estimated_tokens(system_chars) >= min,
            shared_end,
        }
    }
}

/// A text block, marked as a cache breakpoint or not.
fn text_block(text: String, mark: bool) -> Value {
    let mut block = json!({ "type": "text", "text": text });
    if mark {
        block["cache_control"] = json!({ "type": "ephemeral" });
    }
    block
}

/// One turn's content: plain text, or blocks when one of them is marked.
fn turn_content(blocks: Vec<(String, bool)>) -> Value {
    match <[(String, bool); 1]>::try_from(blocks) {
        Ok([(text, false)]) => Value::String(text),
        Ok([(text, true)]) => json!([text_block(text, true)]),
        Err(blocks) => Value::Array(
            blocks
                .into_iter()
                .map(|(text, mark)| text_block(text, mark))
                .collect(),
        ),
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
    let marks = Breakpoints::of(config, request);
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    if !system.is_empty() {
        let system = system.join("\n\n");
        let system = if marks.system {
            json!([text_block(system, true)])
        } else {
            Value::String(system)
        };
        body.insert("system".into(), system);
    }
    // Turns alternate, starting with the user: consecutive turns of one role are joined. A
    // turn is one text, or blocks when the shared part ends inside it (the next block starts
    // with the separator, so the model reads the same text either way).
    let mut turns: Vec<(&'static str, Vec<(String, bool)>)> = Vec::new();
    for (i, m) in request.messages.iter().enumerate() {
        if m.role == Role::System {
            continue;
        }
        let role = if m.role == Role::Assistant {
            "assistant"
        } else {
            "user"
        };
        match turns.last_mut().filter(|(last, _)| *last == role) {
            Some((_, blocks)) => match blocks.last_mut() {
                Some((text, false)) => {
                    text.push_str("\n\n");
                    text.push_str(&m.content);
                }
                // A block of only white space is refused by the API.
                _ if m.content.trim().is_empty() => {}
                _ => blocks.push((format!("\n\n{}", m.content), false)),
            },
            None => turns.push((role, vec![(m.content.clone(), false)])),
        }
        if marks.shared_end == Some(i) {
            if let Some(block) = turns.last_mut().and_then(|(_, b)| b.last_mut()) {
                block.1 = true;
            }
        }
    }
    if turns.first().is_none_or(|(role, _)| *role != "user") {
        return Err(BackendError::Config(
            "the Messages API needs a conversation that starts with a user turn".into(),
        ));
    }
    let messages = turns
        .into_iter()
        .map(|(role, blocks)| json!({ "role": role, "content": turn_content(blocks) }))
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
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Takes the counts `later` gives (a stream's `message_delta` repeats them, cumulative).
    fn update(&mut self, later: WireUsage) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
    }

    /// The call's usage, or `None` without input and output counts.
    fn usage(&self) -> Option<Usage> {
        let (input, output) = (self.input_tokens?, self.output_tokens?);
        let (read, written) = (
            self.cache_read_input_tokens,
            self.cache_creation_input_tokens,
        );
        let reported = read.is_some() || written.is_some();
        let written_count = written.unwrap_or(0);
        Some(Usage {
            // Anthropic's `input_tokens` are those after the last cache breakpoint: the tokens
            // read from the cache and those written to it are the rest of the prompt.
            input_tokens: input
                .saturating_add(read.unwrap_or(0))
                .saturating_add(written_count),
            output_tokens: output,
            processed_input_tokens: reported.then(|| input.saturating_add(written_count)),
            cache_write_input_tokens: written,
        })
    }
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
        .ok_or_else(|| BackendError::InvalidResponse("the response has no token usage".into()))?
        .usage()
        .ok_or_else(|| {
            BackendError::InvalidResponse(
                "the response's usage lacks input or output tokens".into(),
            )
        })?;
    let text = message
        .content
        .iter()
        .filter(|b| b.kind == "text")
        .map(|b| b.text.as_str())
        .collect();
    Ok(Completion {
        text,
        usage,
        logprobs: None,
        finish: message
            .stop_reason
            .as_deref()
            .map_or(FinishReason::Other("unknown".into()), stop_reason),
        retries: Vec::new(),
    })
}

/// Assembles a streamed answer from its events: `message_start` (input usage),
/// `content_block_delta` (text), `message_delta` (stop reason, output usage), `message_stop`.
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    text: String,
    usage: WireUsage,
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
                self.usage = usage;
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
                // Its counts are cumulative; an odd shape leaves those of message_start.
                if let Some(Ok(later)) = value
                    .get("usage")
                    .cloned()
                    .map(serde_json::from_value::<WireUsage>)
                {
                    self.usage.update(later);
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
        let usage = self.usage.usage().ok_or_else(|| {
            BackendError::InvalidResponse("the stream sent no token usage".into())
        })?;
        Ok(Completion {
            text: self.text,
            usage,
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
        // An identifier (store rows, metric labels, span names): never a URL's credentials.
        format!(
            "anthropic:{}@{}",
            self.config.model,
            crate::http::display_base_url(&self.config.base_url)
        )
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            logprobs: false,
            seed: false,
            conversations: false,
            prompt_cache: self.config.prompt_cache,
            person: false,
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

    /// A debate round's request: a system prompt, the question every agent reads, the agent's
    /// own answer and the peers it reads; the first `shared` messages shared with other calls.
    fn round(system: &str, question: &str, shared: usize) -> CompletionRequest {
        CompletionRequest {
            prompt_cache: crate::PromptCache {
                key: None,
                shared_messages: shared,
            },
            ..CompletionRequest::new(vec![
                ChatMessage::system(system),
                ChatMessage::user(question),
                ChatMessage::assistant("408"),
                ChatMessage::user("The others say 418. Reconsider."),
            ])
        }
    }

    const MARK: &str = "cache_control";

    #[test]
    fn a_long_shared_prompt_marks_the_system_prompt_and_the_end_of_the_shared_part() {
        let config = AnthropicConfig::new("https://api.anthropic.com", "claude-sonnet-4-5");
        // 1,024 tokens are 4,096 characters at the estimate's four per token.
        let (system, question) = ("s".repeat(4200), "q".repeat(300));
        let body = request_body(&config, &round(&system, &question, 2), false).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": DEFAULT_MAX_TOKENS,
                "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": question, "cache_control": {"type": "ephemeral"}}
                    ]},
                    {"role": "assistant", "content": "408"},
                    {"role": "user", "content": "The others say 418. Reconsider."}
                ]
            })
        );
        // A short system prompt is not marked; the shared part is, once the prefix it closes
        // (system prompt included) is long enough.
        let body = request_body(&config, &round("Be brief.", &"q".repeat(4100), 2), false).unwrap();
        assert!(body["system"].is_string(), "{body}");
        assert_eq!(body["messages"][0]["content"][0][MARK]["type"], "ephemeral");
        assert_eq!(body.to_string().matches(MARK).count(), 1);
        // Nothing shared beyond the system prompt: only it is marked.
        let body = request_body(&config, &round(&system, &question, 1), false).unwrap();
        assert_eq!(body.to_string().matches(MARK).count(), 1);
        assert_eq!(body["system"][0][MARK]["type"], "ephemeral");
        // The whole request shared (a first round's identical prompts): its end is marked.
        let body = request_body(&config, &round("Be brief.", &question, 4), false).unwrap();
        assert_eq!(body.to_string().matches(MARK).count(), 0, "too short");
        let body = request_body(&config, &round(&system, &question, 4), false).unwrap();
        assert_eq!(body["messages"][2]["content"][0][MARK]["type"], "ephemeral");
        assert_eq!(body.to_string().matches(MARK).count(), 2);
    }

    #[test]
    fn short_prompts_and_agents_without_the_prompt_cache_mark_nothing() {
        let config = AnthropicConfig::new("https://api.anthropic.com", "claude-sonnet-4-5");
        let short =
            request_body(&config, &round("Be brief.", "What is 17 * 24?", 2), false).unwrap();
        assert_eq!(short["system"], "Be brief.");
        assert_eq!(short["messages"][0]["content"], "What is 17 * 24?");
        assert!(!short.to_string().contains(MARK), "{short}");
        let off = AnthropicConfig {
            prompt_cache: false,
            ..config
        };
        let long = round(&"s".repeat(9000), &"q".repeat(9000), 2);
        let body = request_body(&off, &long, false).unwrap();
        assert!(!body.to_string().contains(MARK), "{body}");
        assert_eq!(body["messages"][0]["content"], "q".repeat(9000));
    }

    #[test]
    fn each_model_is_marked_only_past_its_own_minimum() {
        assert_eq!(min_cacheable_tokens("claude-sonnet-4-5-20250929"), 1024);
        assert_eq!(min_cacheable_tokens("claude-opus-4-1"), 1024);
        assert_eq!(min_cacheable_tokens("claude-sonnet-4-6"), 2048);
        assert_eq!(min_cacheable_tokens("claude-3-5-haiku-20241022"), 2048);
        assert_eq!(min_cacheable_tokens("claude-haiku-4-5"), 4096);
        assert_eq!(min_cacheable_tokens("claude-opus-4.5"), 4096);
        assert_eq!(min_cacheable_tokens("some-proxy-model"), 1024);
        // About 2,000 tokens of shared prompt: enough for Sonnet 4.5, not for Haiku 4.5.
        let request = round("Be brief.", &"q".repeat(8000), 2);
        for (model, marks) in [("claude-sonnet-4-5", 1), ("claude-haiku-4-5", 0)] {
            let config = AnthropicConfig::new("https://api.anthropic.com", model);
            let body = request_body(&config, &request, false).unwrap();
            assert_eq!(body.to_string().matches(MARK).count(), marks, "{model}");
        }
    }

    #[test]
    fn a_shared_part_that_ends_inside_a_joined_turn_is_its_own_block() {
        let config = AnthropicConfig::new("https://api.anthropic.com", "claude-sonnet-4-5");
        let shared = "t".repeat(5000);
        let request = CompletionRequest {
            prompt_cache: crate::PromptCache {
                key: None,
                shared_messages: 2,
            },
            ..CompletionRequest::new(vec![
                ChatMessage::system("Be brief."),
                ChatMessage::user(shared.clone()),
                ChatMessage::user("Your own answer was 408."),
                ChatMessage::user("   "),
                ChatMessage::user("Reconsider."),
            ])
        };
        let body = request_body(&config, &request, false).unwrap();
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": shared, "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "\n\nYour own answer was 408.\n\n   \n\nReconsider."}
            ]}])
        );
        // A system message after the shared part changes the system prompt every call
        // starts with: nothing is shared then.
        let mut late_system = request.clone();
        late_system
            .messages
            .push(ChatMessage::system("You are agent 2."));
        let body = request_body(&config, &late_system, false).unwrap();
        assert!(!body.to_string().contains(MARK), "{body}");
        // Nor is a blank message marked (the API refuses an empty block).
        let mut blank = request;
        blank.messages[1].content = " ".repeat(5000);
        blank.messages[0].content = "s".repeat(5000);
        let body = request_body(&config, &blank, false).unwrap();
        assert_eq!(
            body.to_string().matches(MARK).count(),
            1,
            "the system prompt only"
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

    /// Anthropic's `input_tokens` leave out what was read from and written to the prompt
    /// cache; the call's input is the whole prompt.
    #[test]
    fn cache_reads_and_writes_are_part_of_the_input() {
        let c = parse_response(
            r#"{"content":[{"type":"text","text":"408"}],"stop_reason":"end_turn",
                "usage":{"input_tokens":30,"cache_creation_input_tokens":500,"cache_read_input_tokens":2000,"output_tokens":6}}"#,
        )
        .unwrap();
        assert_eq!(
            c.usage,
            Usage {
                input_tokens: 2530,
                output_tokens: 6,
                processed_input_tokens: Some(530),
                cache_write_input_tokens: Some(500),
            }
        );
        assert_eq!(c.usage.cached_input_tokens(), Some(2000));
        let written = parse_response(
            r#"{"content":[],"usage":{"input_tokens":30,"cache_creation_input_tokens":500,"output_tokens":6}}"#,
        )
        .unwrap();
        assert_eq!(
            (
                written.usage.input_tokens,
                written.usage.cached_input_tokens()
            ),
            (530, Some(0))
        );
        let silent =
            parse_response(r#"{"content":[],"usage":{"input_tokens":30,"output_tokens":6}}"#)
                .unwrap();
        assert_eq!(silent.usage.cached_input_tokens(), None, "nothing said");
        assert_eq!(silent.usage.cache_write_input_tokens, None);
    }

    #[test]
    fn a_stream_counts_cache_reads_and_writes_from_its_first_and_last_usage() {
        let mut acc = StreamAccumulator::default();
        for data in [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":2000,"output_tokens":1}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"408"}}"#,
            // Newer streams repeat the (cumulative) counts in message_delta.
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":30,"cache_creation_input_tokens":500,"cache_read_input_tokens":2000,"output_tokens":7}}"#,
        ] {
            acc.push(data).unwrap();
        }
        assert!(acc.push(r#"{"type":"message_stop"}"#).unwrap());
        let c = acc.finish().unwrap();
        assert_eq!(
            c.usage,
            Usage {
                input_tokens: 2530,
                output_tokens: 7,
                processed_input_tokens: Some(530),
                cache_write_input_tokens: Some(500),
            }
        );
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
