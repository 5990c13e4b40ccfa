//! `openai`: chat completions over an OpenAI-compatible HTTP API (OpenAI, vLLM, llama.cpp's
//! server, Ollama, LM Studio…), with token logprobs and seeds.
//!
//! The request body is built by [`request_body`] and responses are read by [`parse_response`]
//! (one JSON body) or, in streaming mode, from server-sent events; all three are pure so their
//! exact shapes are unit-tested. The HTTP call itself is a plain `reqwest` future: dropping it
//! closes the connection, which OpenAI-compatible servers take as "stop generating".
//!
//! How servers differ (OpenAI, vLLM, llama.cpp, Ollama) is kept in [`server_kind`].
//!
//! No timeouts or retries here: wrappers do those (see docs/architecture.md, Backends).

pub mod server_kind;

use std::error::Error as StdError;

use async_trait::async_trait;
use futures_util::Stream;
use secrecy::ExposeSecret;
use serde_json::{json, Map, Value};

use crate::http::{endpoint, float, read_answer, truncate, Answer, HttpEndpoint};
pub use server_kind::ServerKind;

use crate::{
    BackendError, Capabilities, Completion, CompletionRequest, FinishReason, LanguageModel, Usage,
};

/// Where and how to call an OpenAI-compatible server. Sampling fields are defaults that a
/// request's own [`crate::SamplingParams`] override.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    /// API root including the version segment, e.g. `https://api.openai.com/v1` or
    /// `http://127.0.0.1:8080/v1`; `/chat/completions` is appended.
    pub base_url: String,
    pub model: String,
    /// The NAME of the environment variable holding the API key (sent as a bearer token). Read
    /// once, when the model is built; `None` sends no key (local servers).
    pub api_key_env: Option<String>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    /// Ask for server-sent events and assemble the answer from them.
    pub stream: bool,
    /// Which server this is, for the few request fields servers disagree on.
    pub server_kind: ServerKind,
    /// Send a debate's prompt-cache key where the server takes one
    /// ([`ServerKind::takes_prompt_cache_key`]).
    pub prompt_cache: bool,
}

impl OpenAiConfig {
    /// A config with the server's defaults and the dialect guessed from the URL.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> OpenAiConfig {
        let base_url = base_url.into();
        OpenAiConfig {
            server_kind: ServerKind::detect(&base_url),
            base_url,
            model: model.into(),
            api_key_env: None,
            temperature: None,
            top_p: None,
            max_tokens: None,
            seed: None,
            stream: false,
            prompt_cache: true,
        }
    }
}

/// The JSON body of one chat-completions call.
///
/// Sampling values come from the request's params, else the config's defaults; unset values are
/// left out so the server's defaults apply. With `params.logprobs`, `logprobs: true` and the
/// fewest `top_logprobs` the dialect allows are sent (without the field llama.cpp returns twenty
/// alternatives per token). Streaming adds `stream: true` and asks for the usage chunk. The
/// answer cap's field name and any dialect-only fields come from [`ServerKind`], as does
/// whether the debate's prompt-cache key is sent as `prompt_cache_key`.
pub fn request_body(
    config: &OpenAiConfig,
    request: &CompletionRequest,
    stream: bool,
) -> Result<Value, BackendError> {
    let params = &request.params;
    let mut body = Map::new();
    body.insert("model".into(), Value::String(config.model.clone()));
    let messages = request
        .messages
        .iter()
        .map(|m| json!({ "role": m.role.as_str(), "content": m.content }))
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    if let Some(t) = params.temperature.or(config.temperature) {
        body.insert("temperature".into(), float("temperature", t)?);
    }
    if let Some(p) = params.top_p.or(config.top_p) {
        body.insert("top_p".into(), float("top_p", p)?);
    }
    if let Some(n) = params.max_tokens.or(config.max_tokens) {
        body.insert(config.server_kind.max_tokens_field().into(), Value::from(n));
    }
    if let Some(s) = params.seed.or(config.seed) {
        body.insert("seed".into(), Value::from(s));
    }
    if params.logprobs {
        body.insert("logprobs".into(), Value::Bool(true));
        body.insert(
            "top_logprobs".into(),
            Value::from(config.server_kind.top_logprobs()),
        );
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
        body.insert("stream_options".into(), json!({ "include_usage": true }));
    }
    config.server_kind.add_own_fields(&mut body);
    if let Some(key) = request
        .prompt_cache
        .key
        .as_ref()
        .filter(|_| sends_prompt_cache_key(config))
    {
        body.insert("prompt_cache_key".into(), Value::String(key.clone()));
    }
    Ok(Value::Object(body))
}

/// Whether requests to `config`'s server carry the debate's prompt-cache key.
fn sends_prompt_cache_key(config: &OpenAiConfig) -> bool {
    config.prompt_cache && config.server_kind.takes_prompt_cache_key(&config.base_url)
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" | "eos" | "end_turn" => FinishReason::Stop,
        "length" | "max_tokens" => FinishReason::Length,
        other => FinishReason::Other(other.to_string()),
    }
}

fn parse_json(text: &str, what: &str) -> Result<Value, BackendError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        BackendError::InvalidResponse(format!("{what} is not JSON ({e}): {}", truncate(text, 200)))
    })?;
    match server_kind::reported_error(&value) {
        Some(error) => Err(server_kind::server_error(error)),
        None => Ok(value),
    }
}

fn decode(value: Value, what: &str) -> Result<server_kind::WireResponse, BackendError> {
    serde_json::from_value(value)
        .map_err(|e| BackendError::InvalidResponse(format!("unexpected {what} shape: {e}")))
}

/// Reads one non-streaming chat-completions response body.
pub fn parse_response(body: &str) -> Result<Completion, BackendError> {
    let response = decode(parse_json(body, "the response")?, "response")?;
    let usage = server_kind::usage(response.usage, &response.timings)
        .ok_or_else(|| BackendError::InvalidResponse("the response has no token usage".into()))?;
    let choice = response
        .choices
        .into_iter()
        .min_by_key(|c| c.index)
        .ok_or_else(|| BackendError::InvalidResponse("the response has no choices".into()))?;
    Ok(Completion {
        text: choice.message.and_then(|m| m.content).unwrap_or_default(),
        usage,
        logprobs: server_kind::token_logprobs(&choice.logprobs, &response.completion_probabilities),
        finish: choice
            .finish_reason
            .as_deref()
            .map_or(FinishReason::Other("unknown".into()), finish_reason),
        retries: Vec::new(),
    })
}

/// Assembles a streamed answer from the `data:` payloads of its events.
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    text: String,
    logprobs: Option<Vec<f32>>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    done: bool,
}

impl StreamAccumulator {
    /// Takes one event's data. Returns `true` once `[DONE]` has arrived.
    pub fn push(&mut self, data: &str) -> Result<bool, BackendError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk = decode(parse_json(data, "a stream chunk")?, "stream chunk")?;
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(content) = choice.delta.and_then(|d| d.content) {
                self.text.push_str(&content);
            }
            if let Some(lps) = server_kind::token_logprobs(&choice.logprobs, &Value::Null) {
                self.logprobs.get_or_insert_with(Vec::new).extend(lps);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(finish_reason(&reason));
            }
        }
        if let Some(lps) =
            server_kind::token_logprobs(&Value::Null, &chunk.completion_probabilities)
        {
            self.logprobs.get_or_insert_with(Vec::new).extend(lps);
        }
        if let Some(usage) = server_kind::usage(chunk.usage, &chunk.timings) {
            self.usage = Some(usage);
        }
        Ok(false)
    }

    /// The answer, once the stream has ended. The stream counts as complete when it sent
    /// `[DONE]`, or a finish reason and the usage chunk.
    pub fn finish(self) -> Result<Completion, BackendError> {
        let complete = self.done || (self.finish.is_some() && self.usage.is_some());
        if !complete {
            return Err(BackendError::Transport(
                "stream ended before the answer was complete".into(),
            ));
        }
        let usage = self.usage.ok_or_else(|| {
            BackendError::InvalidResponse(
                "the stream sent no token usage (does the server support stream_options.include_usage?)"
                    .into(),
            )
        })?;
        Ok(Completion {
            text: self.text,
            usage,
            logprobs: self.logprobs,
            finish: self
                .finish
                .unwrap_or_else(|| FinishReason::Other("unknown".into())),
            retries: Vec::new(),
        })
    }
}

/// How chat completions are read: a whole body, or the `data:` payloads of its events (an event
/// named `error` is the server's error).
impl Answer for StreamAccumulator {
    fn parse(body: &str) -> Result<Completion, BackendError> {
        parse_response(body)
    }

    fn take_event(&mut self, name: &str, data: &str) -> Result<bool, BackendError> {
        if name == "error" {
            let error = serde_json::from_str::<Value>(data)
                .ok()
                .map(|v| v.get("error").cloned().unwrap_or(v))
                .unwrap_or_else(|| Value::String(data.to_string()));
            return Err(server_kind::server_error(&error));
        }
        self.push(data)
    }

    fn finish(self) -> Result<Completion, BackendError> {
        StreamAccumulator::finish(self)
    }
}

/// Reads a server-sent-event byte stream into an answer. Stops reading at `[DONE]`.
pub async fn read_event_stream<S, B, E>(bytes: S) -> Result<Completion, BackendError>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: StdError + 'static,
{
    read_answer::<StreamAccumulator, _, _, _>(bytes).await
}

/// A model behind an OpenAI-compatible `/chat/completions` endpoint.
#[derive(Debug)]
pub struct OpenAiModel {
    config: OpenAiConfig,
    http: HttpEndpoint,
}

impl OpenAiModel {
    /// Checks the URL and reads the API key from the environment variable the config names.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiModel, BackendError> {
        let http = HttpEndpoint::new(
            chat_url(&config.base_url)?,
            &config.model,
            config.api_key_env.as_deref(),
        )?;
        Ok(OpenAiModel { config, http })
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }
}

fn chat_url(base_url: &str) -> Result<reqwest::Url, BackendError> {
    endpoint(base_url, "chat/completions")
}

#[async_trait]
impl LanguageModel for OpenAiModel {
    fn name(&self) -> String {
        // An identifier (store rows, metric labels, span names): never a URL's credentials.
        format!(
            "openai:{}@{}",
            self.config.model,
            crate::http::display_base_url(&self.config.base_url)
        )
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            logprobs: true,
            seed: true,
            conversations: false,
            prompt_cache: sends_prompt_cache_key(&self.config),
            person: false,
        }
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError> {
        let stream = self.config.stream;
        let body = request_body(&self.config, &request, stream)?;
        let mut call = self.http.client.post(self.http.url.clone()).json(&body);
        if let Some(key) = &self.http.api_key {
            call = call.bearer_auth(key.expose_secret());
        }
        self.http.answer::<StreamAccumulator>(call, stream).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChatMessage, SamplingParams};

    fn config() -> OpenAiConfig {
        OpenAiConfig {
            temperature: Some(0.7),
            top_p: Some(0.95),
            max_tokens: Some(256),
            seed: None,
            ..OpenAiConfig::new("http://127.0.0.1:8080/v1/", "qwen")
        }
    }

    fn request(params: SamplingParams) -> CompletionRequest {
        CompletionRequest {
            params,
            ..CompletionRequest::new(vec![
                ChatMessage::system("Be brief."),
                ChatMessage::user("2+2?"),
                ChatMessage::assistant("4"),
                ChatMessage::user("Sure?"),
            ])
        }
    }

    #[test]
    fn body_uses_config_defaults() {
        let body = request_body(&config(), &request(SamplingParams::default()), false).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "qwen",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "2+2?"},
                    {"role": "assistant", "content": "4"},
                    {"role": "user", "content": "Sure?"}
                ],
                "temperature": 0.7,
                "top_p": 0.95,
                "max_tokens": 256
            })
        );
        // Key order is stable too (serde_json preserves insertion order here).
        assert!(body
            .to_string()
            .starts_with(r#"{"model":"qwen","messages":[{"role":"system","content":"Be brief."}"#));
    }

    #[test]
    fn request_params_override_and_logprobs_and_stream() {
        let params = SamplingParams {
            temperature: Some(0.0),
            top_p: None,
            max_tokens: Some(16),
            seed: Some(42),
            logprobs: true,
            resample: None,
        };
        let body = request_body(&config(), &request(params), true).unwrap();
        let mut expected = json!({
            "model": "qwen",
            "temperature": 0.0,
            "top_p": 0.95,
            "max_tokens": 16,
            "seed": 42,
            "logprobs": true,
            "top_logprobs": 1,
            "stream": true,
            "stream_options": {"include_usage": true}
        });
        expected["messages"] = body["messages"].clone();
        assert_eq!(body, expected);
        assert_eq!(body["temperature"].to_string(), "0.0");
    }

    #[test]
    fn each_dialect_sends_its_own_fields() {
        let params = SamplingParams {
            max_tokens: Some(16),
            logprobs: true,
            ..SamplingParams::default()
        };
        let req = CompletionRequest {
            params,
            ..CompletionRequest::new(vec![ChatMessage::user("hi")])
        };
        let body = |server_kind: ServerKind| {
            let cfg = OpenAiConfig {
                server_kind,
                ..OpenAiConfig::new("http://h/v1", "m")
            };
            let mut b = request_body(&cfg, &req, false).unwrap();
            b.as_object_mut().unwrap().remove("messages");
            b
        };
        assert_eq!(
            body(ServerKind::OpenAi),
            json!({"model": "m", "max_completion_tokens": 16, "logprobs": true, "top_logprobs": 0})
        );
        assert_eq!(
            body(ServerKind::Vllm),
            json!({"model": "m", "max_tokens": 16, "logprobs": true, "top_logprobs": 0})
        );
        assert_eq!(
            body(ServerKind::LlamaCpp),
            json!({"model": "m", "max_tokens": 16, "logprobs": true, "top_logprobs": 1, "cache_prompt": true})
        );
        for d in [ServerKind::Ollama, ServerKind::Generic] {
            assert_eq!(
                body(d),
                json!({"model": "m", "max_tokens": 16, "logprobs": true, "top_logprobs": 1})
            );
        }
        // The dialect is guessed from the URL unless config names it.
        assert_eq!(
            OpenAiConfig::new("https://api.openai.com/v1", "gpt-4o-mini").server_kind,
            ServerKind::OpenAi
        );
    }

    #[test]
    fn the_debate_prompt_cache_key_goes_to_openai_itself_only() {
        let req = CompletionRequest {
            prompt_cache: crate::PromptCache {
                key: Some("moot-0123abcd".into()),
                shared_messages: 1,
            },
            ..CompletionRequest::new(vec![ChatMessage::user("hi")])
        };
        let key = |server_kind: ServerKind, url: &str, prompt_cache: bool| {
            let cfg = OpenAiConfig {
                server_kind,
                prompt_cache,
                ..OpenAiConfig::new(url, "m")
            };
            request_body(&cfg, &req, false).unwrap()["prompt_cache_key"].clone()
        };
        assert_eq!(
            key(ServerKind::OpenAi, "https://api.openai.com/v1", true),
            "moot-0123abcd"
        );
        // A proxy the configuration says speaks for OpenAI.
        assert_eq!(
            key(ServerKind::OpenAi, "http://127.0.0.1:9/v1", true),
            "moot-0123abcd"
        );
        assert_eq!(
            key(ServerKind::OpenAi, "https://api.openai.com/v1", false),
            Value::Null
        );
        assert_eq!(
            key(
                ServerKind::OpenAi,
                "https://res.openai.azure.com/openai/v1",
                true
            ),
            Value::Null
        );
        for other in [
            ServerKind::Vllm,
            ServerKind::LlamaCpp,
            ServerKind::Ollama,
            ServerKind::Generic,
        ] {
            assert_eq!(key(other, "http://127.0.0.1:9/v1", true), Value::Null);
        }
        // Without a key (a call outside a debate), nothing is sent.
        let cfg = OpenAiConfig::new("https://api.openai.com/v1", "m");
        let plain = CompletionRequest::new(vec![ChatMessage::user("hi")]);
        assert!(request_body(&cfg, &plain, false)
            .unwrap()
            .get("prompt_cache_key")
            .is_none());
    }

    #[test]
    fn a_llama_cpp_stream_without_usage_is_counted_from_its_timings() {
        // The last chunks of a real llama.cpp server's stream when include_usage is not honoured.
        let mut acc = StreamAccumulator::default();
        for data in [
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi"}}],"object":"chat.completion.chunk"}"#,
            r#"{"choices":[{"finish_reason":"length","index":0,"delta":{}}],"object":"chat.completion.chunk","timings":{"cache_n":31,"prompt_n":1,"prompt_ms":14.7,"predicted_n":4,"predicted_ms":49.1}}"#,
            "[DONE]",
        ] {
            acc.push(data).unwrap();
        }
        let c = acc.finish().unwrap();
        assert_eq!(
            c.usage,
            Usage {
                input_tokens: 32,
                output_tokens: 4,
                processed_input_tokens: Some(1),
                cache_write_input_tokens: None
            }
        );
    }

    #[test]
    fn bare_config_sends_only_model_and_messages() {
        let cfg = OpenAiConfig::new("http://h/v1", "m");
        let req = CompletionRequest::new(vec![ChatMessage::user("hi")]);
        assert_eq!(
            request_body(&cfg, &req, false).unwrap().to_string(),
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#
        );
    }

    #[test]
    fn non_finite_sampling_values_are_refused() {
        let params = SamplingParams {
            temperature: Some(f32::NAN),
            ..SamplingParams::default()
        };
        let err = request_body(&config(), &request(params), false).unwrap_err();
        assert!(matches!(err, BackendError::Config(m) if m.contains("temperature")));
    }

    #[test]
    fn urls() {
        assert_eq!(
            chat_url("http://127.0.0.1:8080/v1/").unwrap().as_str(),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        assert_eq!(
            chat_url("https://api.openai.com/v1").unwrap().as_str(),
            "https://api.openai.com/v1/chat/completions"
        );
        assert!(matches!(
            chat_url("ftp://x/v1"),
            Err(BackendError::Config(_))
        ));
        assert!(matches!(
            chat_url("not a url"),
            Err(BackendError::Config(_))
        ));
    }

    #[test]
    fn api_key_env_must_exist() {
        let cfg = OpenAiConfig {
            api_key_env: Some("MOOT_TEST_NO_SUCH_VARIABLE_7c1e".into()),
            ..config()
        };
        let err = OpenAiModel::new(cfg).unwrap_err();
        assert!(
            matches!(&err, BackendError::Config(m) if m.contains("MOOT_TEST_NO_SUCH_VARIABLE_7c1e") && m.contains("not set")),
            "{err}"
        );
        // A variable that exists is read (its value never shows in Debug output).
        let cfg = OpenAiConfig {
            api_key_env: Some("PATH".into()),
            ..config()
        };
        let model = OpenAiModel::new(cfg).unwrap();
        let debug = format!("{model:?}");
        assert!(debug.contains("REDACTED"), "{debug}");
        let path = std::env::var("PATH").unwrap();
        assert!(!debug.contains(&path));
        assert_eq!(model.name(), "openai:qwen@http://127.0.0.1:8080/v1/");
        assert_eq!(
            model.capabilities(),
            Capabilities {
                logprobs: true,
                seed: true,
                conversations: false,
                prompt_cache: false,
                person: false,
            }
        );
    }

    const LLAMA_CPP_RESPONSE: &str = r#"{"choices":[{"finish_reason":"length","index":0,
        "message":{"role":"assistant","content":"The answer to this classic"},
        "logprobs":{"content":[
            {"id":504,"token":"The","bytes":[84,104,101],"logprob":-1.5308,"top_logprobs":[]},
            {"id":2988,"token":" answer","logprob":-0.6048,"top_logprobs":[]},
            {"id":288,"token":" to","logprob":0.0,"top_logprobs":[]}]}}],
        "created":1795277224,"model":"x","object":"chat.completion",
        "usage":{"completion_tokens":3,"prompt_tokens":37,"total_tokens":40,
                 "prompt_tokens_details":{"cached_tokens":36}},
        "id":"chatcmpl-1","timings":{"cache_n":36,"prompt_n":1}}"#;

    #[test]
    fn parses_a_response_with_logprobs() {
        let c = parse_response(LLAMA_CPP_RESPONSE).unwrap();
        assert_eq!(c.text, "The answer to this classic");
        assert_eq!(c.finish, FinishReason::Length);
        assert_eq!(
            c.usage,
            Usage {
                input_tokens: 37,
                output_tokens: 3,
                processed_input_tokens: Some(1),
                cache_write_input_tokens: None
            }
        );
        assert_eq!(c.logprobs, Some(vec![-1.5308, -0.6048, 0.0]));
        assert_eq!(c.logprob_summary().unwrap().tokens, 3);
    }

    #[test]
    fn parses_a_plain_openai_response() {
        let body = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,
            "message":{"role":"assistant","content":"Paris.","refusal":null},
            "logprobs":null,"finish_reason":"stop"}],
            "usage":{"prompt_tokens":12,"completion_tokens":2,"total_tokens":14}}"#;
        let c = parse_response(body).unwrap();
        assert_eq!(
            (c.text.as_str(), c.finish, c.logprobs),
            ("Paris.", FinishReason::Stop, None)
        );
        assert_eq!(
            c.usage,
            Usage {
                input_tokens: 12,
                output_tokens: 2,
                processed_input_tokens: None,
                cache_write_input_tokens: None
            }
        );
        // Null content (e.g. only a refusal or tool call) is an empty answer, not an error.
        let body = r#"{"choices":[{"index":0,"message":{"content":null},"finish_reason":"content_filter"}],
            "usage":{"prompt_tokens":1,"completion_tokens":0}}"#;
        let c = parse_response(body).unwrap();
        assert_eq!(c.text, "");
        assert_eq!(c.finish, FinishReason::Other("content_filter".into()));
    }

    #[test]
    fn malformed_and_error_bodies() {
        let err = parse_response("<html>Bad gateway</html>").unwrap_err();
        assert!(
            matches!(&err, BackendError::InvalidResponse(m) if m.contains("not JSON") && m.contains("Bad gateway")),
            "{err}"
        );
        let err =
            parse_response(r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0}}"#)
                .unwrap_err();
        assert!(matches!(&err, BackendError::InvalidResponse(m) if m.contains("no choices")));
        let err = parse_response(
            r#"{"choices":[{"index":0,"message":{"content":"x"},"finish_reason":"stop"}]}"#,
        )
        .unwrap_err();
        assert!(matches!(&err, BackendError::InvalidResponse(m) if m.contains("usage")));
        // llama.cpp's error body: {"error": {"code", "message", "type"}}.
        let err = parse_response(
            r#"{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}"#,
        )
        .unwrap_err();
        assert_eq!(
            err,
            BackendError::Http {
                status: 400,
                body: "the request exceeds the available context size (exceed_context_size_error)"
                    .into()
            }
        );
        assert_eq!(err.class(), crate::ErrorClass::ContextLength);
        // OpenAI's: code is a string, which says what the status would have.
        let err = parse_response(
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        )
        .unwrap_err();
        assert!(
            matches!(&err, BackendError::Http { status: 401, body } if body.contains("Incorrect API key")),
            "{err}"
        );
        assert_eq!(err.class(), crate::ErrorClass::Permanent);
        let err = parse_response(r#"{"error":"model not found"}"#).unwrap_err();
        assert!(matches!(&err, BackendError::InvalidResponse(m) if m.contains("model not found")));
    }

    #[test]
    fn truncation_respects_characters() {
        assert_eq!(truncate("short", 10), "short");
        let t = truncate("ééééé", 3);
        assert!(t.starts_with("é…"), "{t}");
        assert!(t.contains("10 bytes"));
    }

    fn sse(chunks: &[&str]) -> String {
        chunks.iter().map(|c| format!("data: {c}\n\n")).collect()
    }

    const CHUNKS: &[&str] = &[
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}]}"#,
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"The"},"logprobs":{"content":[{"token":"The","logprob":-1.5}]}}]}"#,
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" answer"},"logprobs":{"content":[{"token":" answer","logprob":-0.25}]}}]}"#,
        r#"{"choices":[{"finish_reason":"length","index":0,"delta":{}}]}"#,
        r#"{"choices":[],"usage":{"completion_tokens":2,"prompt_tokens":37,"total_tokens":39}}"#,
        "[DONE]",
    ];

    /// Splits `text` into pieces of `size` bytes, as a network would.
    fn pieces(text: &str, size: usize) -> impl Stream<Item = Result<Vec<u8>, std::io::Error>> {
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> = text
            .as_bytes()
            .chunks(size)
            .map(|c| Ok(c.to_vec()))
            .collect();
        futures_util::stream::iter(chunks)
    }

    async fn read(text: &str, size: usize) -> Result<Completion, BackendError> {
        read_event_stream(pieces(text, size)).await
    }

    #[tokio::test]
    async fn assembles_a_stream_whatever_the_packet_size() {
        let text = sse(CHUNKS);
        for size in [1, 7, 64, text.len()] {
            let c = read(&text, size).await.unwrap();
            assert_eq!(c.text, "The answer");
            assert_eq!(c.logprobs, Some(vec![-1.5, -0.25]));
            assert_eq!(c.finish, FinishReason::Length);
            assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (37, 2));
        }
    }

    #[tokio::test]
    async fn a_cut_stream_is_a_transport_error() {
        for keep in 1..4 {
            let err = read(&sse(&CHUNKS[..keep]), 50).await.unwrap_err();
            assert_eq!(
                err,
                BackendError::Transport("stream ended before the answer was complete".into())
            );
        }
        // Finish reason and usage but no [DONE]: complete.
        assert!(read(&sse(&CHUNKS[..5]), 50).await.is_ok());
        // [DONE] without a usage chunk: the server ignored include_usage.
        let mut no_usage = CHUNKS[..4].to_vec();
        no_usage.push("[DONE]");
        let err = read(&sse(&no_usage), 50).await.unwrap_err();
        assert!(matches!(err, BackendError::InvalidResponse(m) if m.contains("usage")));
    }

    #[tokio::test]
    async fn a_transport_failure_mid_stream_is_a_transport_error() {
        let head = sse(&CHUNKS[..2]).into_bytes();
        let items: Vec<Result<Vec<u8>, std::io::Error>> = vec![
            Ok(head),
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "connection reset by peer",
            )),
        ];
        let err = read_event_stream(futures_util::stream::iter(items))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, BackendError::Transport(m) if m.contains("before the answer was complete") && m.contains("reset")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn errors_inside_a_stream() {
        let text = sse(&[
            CHUNKS[1],
            r#"{"error":{"code":500,"message":"slot unavailable","type":"server_error"}}"#,
        ]);
        assert_eq!(
            read(&text, 16).await.unwrap_err(),
            BackendError::Http {
                status: 500,
                body: "slot unavailable (server_error)".into()
            }
        );
        let text = "event: error\ndata: {\"message\":\"overloaded\"}\n\n";
        let err = read(text, 16).await.unwrap_err();
        assert!(matches!(&err, BackendError::InvalidResponse(m) if m.contains("overloaded")));
        let err = read(&sse(&["{not json"]), 16).await.unwrap_err();
        assert!(matches!(&err, BackendError::InvalidResponse(m) if m.contains("not JSON")));
    }

    #[tokio::test]
    async fn stops_reading_at_done() {
        // Anything after [DONE] (even garbage) is never read.
        let text = sse(CHUNKS) + "data: {garbage\n\n";
        assert!(read(&text, 9).await.is_ok());
    }
}
