//! What differs between OpenAI-compatible servers, in one place.
//!
//! Servers that claim the OpenAI chat-completions API agree on its core and differ at the edges
//! moot depends on: logprobs, usage, prompt caching and errors. What is sent depends on the
//! [`ServerKind`] (chosen in config, or guessed from the URL); what comes back is read in every
//! known shape whatever the dialect, since a server's version matters as much as its name.
//!
//! | | OpenAI | vLLM | llama.cpp server | Ollama | generic |
//! |---|---|---|---|---|---|
//! | answer cap sent as | `max_completion_tokens` (`max_tokens` is refused by reasoning models) | `max_tokens` | `max_tokens` | `max_tokens` | `max_tokens` |
//! | `top_logprobs` with `logprobs` | 0 | 0 | 1 (0 means "no logprobs") | 1 | 1 |
//! | prompt cache | automatic; the debate's `prompt_cache_key` sent (not to Azure) | automatic | `cache_prompt: true` sent (off by default before late 2024) | automatic | — |
//! | usage in streams | with `stream_options.include_usage` | same | same; older builds only send `timings` | same | any of these |
//! | token logprobs | `logprobs.content[].logprob` | same, −∞ sent as −9999 | same; older builds `completion_probabilities` | same (0.12.11 on); older ignore the request | any of these |
//! | cached prompt tokens | `prompt_tokens_details.cached_tokens` | same, when enabled | same, and `timings.cache_n`/`prompt_n` | not reported | any of these |
//! | error body | `{"error":{"message","type","code":"string"}}` | `{"object":"error","message","type","code":400}` or nested | `{"error":{"code":400,"message","type"}}` | `{"error":{"message","type"}}`, native `{"error":"…"}` | any of these |
//!
//! Errors that arrive inside a 200 body or a stream carry no HTTP status; [`server_error`] gives
//! them the status their code or type means, so they are classified (and retried or not) like
//! the same error sent as a status. Error responses keep their raw body; the classes read it
//! (`insufficient_quota` is a 429 that waiting cannot fix, see [`crate::ErrorClass`]).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::http::{truncate, MAX_ERROR_BODY};
use crate::{BackendError, Usage};

/// Which kind of OpenAI-compatible server is on the other end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerKind {
    /// OpenAI itself (and Azure OpenAI).
    OpenAi,
    Vllm,
    /// llama.cpp's `llama-server` (and servers built on it, such as xllamacpp).
    LlamaCpp,
    /// Ollama's `/v1` endpoint.
    Ollama,
    /// Anything else: the request every server accepts.
    #[default]
    Generic,
}

impl ServerKind {
    /// The names config accepts; `auto` guesses from the URL.
    pub const NAMES: &'static [&'static str] =
        &["auto", "openai", "vllm", "llama.cpp", "ollama", "generic"];

    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::OpenAi => "openai",
            ServerKind::Vllm => "vllm",
            ServerKind::LlamaCpp => "llama.cpp",
            ServerKind::Ollama => "ollama",
            ServerKind::Generic => "generic",
        }
    }

    /// The dialect `name` names (`None` or `"auto"`: guessed from `base_url`).
    pub fn resolve(name: Option<&str>, base_url: &str) -> Result<ServerKind, BackendError> {
        let name = name.map(str::trim).unwrap_or("auto");
        if name == "auto" {
            return Ok(ServerKind::detect(base_url));
        }
        [
            ServerKind::OpenAi,
            ServerKind::Vllm,
            ServerKind::LlamaCpp,
            ServerKind::Ollama,
            ServerKind::Generic,
        ]
        .into_iter()
        .find(|d| d.as_str() == name)
        .ok_or_else(|| {
            BackendError::Config(format!(
                "dialect {name:?} is not one of {}",
                ServerKind::NAMES.join(", ")
            ))
        })
    }

    /// A guess from the URL alone: OpenAI's and Azure's hosts, and Ollama's default port. Other
    /// servers are `Generic` (their own names in config sharpen the request).
    pub fn detect(base_url: &str) -> ServerKind {
        let Ok(url) = reqwest::Url::parse(base_url.trim()) else {
            return ServerKind::Generic;
        };
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        if host == "api.openai.com" || host.ends_with(".openai.azure.com") {
            ServerKind::OpenAi
        } else if url.port() == Some(11434) {
            ServerKind::Ollama
        } else {
            ServerKind::Generic
        }
    }

    /// The field that caps an answer's length.
    pub fn max_tokens_field(self) -> &'static str {
        match self {
            ServerKind::OpenAi => "max_completion_tokens",
            _ => "max_tokens",
        }
    }

    /// How many alternatives per token to ask for along with each token's own logprob: none
    /// where 0 means that, 1 where 0 would switch logprobs off (llama.cpp) or is untested.
    pub fn top_logprobs(self) -> u32 {
        match self {
            ServerKind::OpenAi | ServerKind::Vllm => 0,
            ServerKind::LlamaCpp | ServerKind::Ollama | ServerKind::Generic => 1,
        }
    }

    /// Whether a request may carry `prompt_cache_key`: OpenAI's own API takes one and sends
    /// requests with the same key and prefix to the same machines, whose cache holds the prefix
    /// (OpenAI's guide, "Prompt caching": cached tokens cost a tenth to a half of the input
    /// price by model, and show in `usage.prompt_tokens_details.cached_tokens`). Azure's
    /// chat completions do not document the field, and the other servers' would refuse or
    /// ignore it.
    pub fn takes_prompt_cache_key(self, base_url: &str) -> bool {
        self == ServerKind::OpenAi
            && reqwest::Url::parse(base_url.trim()).is_ok_and(|url| {
                !url.host_str()
                    .unwrap_or_default()
                    .to_ascii_lowercase()
                    .ends_with(".openai.azure.com")
            })
    }

    /// Fields only this dialect understands (others would refuse or ignore them).
    pub fn add_own_fields(self, body: &mut Map<String, Value>) {
        if self == ServerKind::LlamaCpp {
            // A debate re-sends each agent's growing conversation: reusing the cached prefix
            // is most of the speed of a local server.
            body.insert("cache_prompt".into(), Value::Bool(true));
        }
    }
}

// --- what comes back, in every known shape ---

/// One response body or stream chunk (only the fields moot reads; everything else is ignored).
#[derive(Debug, Deserialize)]
pub(super) struct WireResponse {
    #[serde(default)]
    pub choices: Vec<WireChoice>,
    pub usage: Option<WireUsage>,
    /// llama.cpp: prompt tokens processed and cached, tokens generated. Read loosely: an odd
    /// shape here never fails the answer.
    #[serde(default)]
    pub timings: Value,
    /// llama.cpp before OpenAI-shaped logprobs: one entry per generated token.
    #[serde(default)]
    pub completion_probabilities: Value,
}

#[derive(Debug, Deserialize)]
pub(super) struct WireChoice {
    #[serde(default)]
    pub index: u32,
    /// Non-streaming responses.
    pub message: Option<WireMessage>,
    /// Streaming chunks.
    pub delta: Option<WireMessage>,
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub logprobs: Value,
}

#[derive(Debug, Deserialize)]
pub(super) struct WireMessage {
    pub content: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Value,
}

/// vLLM's stand-in for −∞ (JSON has no infinities).
const VLLM_NEG_INFINITY: f64 = -9999.0;

/// A token's logprob as sent: `null` or vLLM's −9999 mean a token the server considers
/// impossible.
fn logprob(value: &Value) -> f32 {
    match value.as_f64() {
        Some(v) if v > VLLM_NEG_INFINITY => v as f32,
        _ => f32::NEG_INFINITY,
    }
}

/// The chosen tokens' logprobs of one choice (or, for old llama.cpp, of the whole response):
/// `{"content": [{"logprob": …}]}` (OpenAI and everyone since), `{"token_logprobs": […]}` (the
/// legacy completions shape), or llama.cpp's `completion_probabilities` with `logprob` or with
/// `probs: [{tok_str, prob}]` probabilities of which the chosen token's is taken.
pub(super) fn token_logprobs(choice: &Value, legacy: &Value) -> Option<Vec<f32>> {
    if let Some(tokens) = choice.get("content").and_then(Value::as_array) {
        return Some(tokens.iter().map(|t| logprob(&t["logprob"])).collect());
    }
    if let Some(values) = choice.get("token_logprobs").and_then(Value::as_array) {
        return Some(values.iter().map(logprob).collect());
    }
    let entries = legacy.as_array()?;
    Some(
        entries
            .iter()
            .map(|e| {
                if e.get("logprob").is_some() {
                    return logprob(&e["logprob"]);
                }
                let chosen = e.get("content").or_else(|| e.get("token"));
                let p = e["probs"].as_array().and_then(|probs| {
                    probs
                        .iter()
                        .find(|p| p.get("tok_str") == chosen)
                        .and_then(|p| p["prob"].as_f64())
                });
                match p {
                    Some(p) if p > 0.0 => p.ln() as f32,
                    _ => f32::NEG_INFINITY,
                }
            })
            .collect(),
    )
}

/// The call's usage: from `usage` (with OpenAI-style cached tokens, else llama.cpp's count of
/// prompt tokens it actually processed), or from llama.cpp's `timings` alone when a build sent
/// no usage.
pub(super) fn usage(usage: Option<WireUsage>, timings: &Value) -> Option<Usage> {
    let count = |key: &str| timings.get(key).and_then(Value::as_u64);
    let processed_by_timings = count("prompt_n");
    match usage {
        Some(u) => {
            let cached = u
                .prompt_tokens_details
                .get("cached_tokens")
                .and_then(Value::as_u64);
            Some(Usage {
                input_tokens: u.prompt_tokens,
                output_tokens: u.completion_tokens,
                processed_input_tokens: cached
                    .map(|c| u.prompt_tokens.saturating_sub(c))
                    .or(processed_by_timings),
                // OpenAI bills no cache writes; nor does any server of this API say of any.
                cache_write_input_tokens: None,
            })
        }
        None => {
            let processed = processed_by_timings?;
            Some(Usage {
                input_tokens: processed.saturating_add(count("cache_n").unwrap_or(0)),
                output_tokens: count("predicted_n")?,
                processed_input_tokens: Some(processed),
                cache_write_input_tokens: None,
            })
        }
    }
}

/// The error a body reports, if it is one: `{"error": {…}}`, `{"error": "…"}` or vLLM's flat
/// `{"object": "error", "message": …}`.
pub(super) fn reported_error(value: &Value) -> Option<&Value> {
    match value.get("error") {
        Some(error) if !error.is_null() => Some(error),
        _ if value.get("object").and_then(Value::as_str) == Some("error") => Some(value),
        _ => None,
    }
}

/// The HTTP status an error's code or type stands for, when it came without one (inside a 200
/// body or a stream): numeric codes are statuses (llama.cpp, vLLM); OpenAI's and llama.cpp's
/// string codes and types are mapped.
fn status_of(error: &Value) -> Option<u16> {
    if let Some(code @ 400..=599) = error.get("code").and_then(Value::as_u64) {
        return Some(code as u16);
    }
    let names = ["code", "type"].map(|k| error.get(k).and_then(Value::as_str));
    names.into_iter().flatten().find_map(|name| {
        Some(match name {
            "invalid_api_key" | "authentication_error" | "invalid_authentication" => 401,
            "permission_error" | "permission_denied" => 403,
            "not_found_error" | "model_not_found" => 404,
            "rate_limit_exceeded" | "insufficient_quota" | "rate_limit_error" => 429,
            "context_length_exceeded"
            | "exceed_context_size_error"
            | "invalid_request_error"
            | "BadRequestError" => 400,
            "server_error" | "InternalServerError" => 500,
            "unavailable_error" | "overloaded_error" | "ServiceUnavailableError" => 503,
            _ => return None,
        })
    })
}

/// A server-reported error as a [`BackendError`] that classifies like the same error sent as
/// an HTTP status. The message keeps the code and type, which say more than the status.
pub(super) fn server_error(error: &Value) -> BackendError {
    let message = match error {
        Value::String(s) => s.clone(),
        other => {
            let text = other
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| other.to_string());
            let labels: Vec<&str> = ["type", "code"]
                .iter()
                .filter_map(|k| other.get(*k).and_then(Value::as_str))
                .filter(|label| !text.contains(label))
                .collect();
            if labels.is_empty() {
                text
            } else {
                format!("{text} ({})", labels.join(", "))
            }
        }
    };
    let message = truncate(&message, MAX_ERROR_BODY);
    match status_of(error) {
        Some(429) => BackendError::RateLimited {
            retry_after: None,
            body: message,
        },
        Some(status) => BackendError::Http {
            status,
            body: message,
        },
        None => BackendError::InvalidResponse(format!("the server reported an error: {message}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorClass;
    use serde_json::json;

    #[test]
    fn names_and_detection() {
        for name in ServerKind::NAMES.iter().filter(|n| **n != "auto") {
            assert_eq!(
                ServerKind::resolve(Some(name), "http://x")
                    .unwrap()
                    .as_str(),
                *name
            );
        }
        let d = |url: &str| ServerKind::resolve(None, url).unwrap();
        assert_eq!(d("https://api.openai.com/v1"), ServerKind::OpenAi);
        assert_eq!(
            d("https://my-res.openai.azure.com/openai/v1"),
            ServerKind::OpenAi
        );
        assert_eq!(d("http://localhost:11434/v1"), ServerKind::Ollama);
        assert_eq!(d("http://127.0.0.1:8080/v1"), ServerKind::Generic);
        assert_eq!(d("not a url"), ServerKind::Generic);
        assert_eq!(
            ServerKind::resolve(Some("auto"), "http://h:11434/v1").unwrap(),
            ServerKind::Ollama
        );
        let err = ServerKind::resolve(Some("lmstudio"), "http://x").unwrap_err();
        assert!(
            matches!(&err, BackendError::Config(m) if m.contains("\"lmstudio\"") && m.contains("llama.cpp")),
            "{err}"
        );
    }

    #[test]
    fn logprobs_in_every_shape() {
        let openai =
            json!({"content": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": null}]});
        assert_eq!(
            token_logprobs(&openai, &Value::Null),
            Some(vec![-0.5, f32::NEG_INFINITY])
        );
        let vllm = json!({"content": [{"logprob": -9999.0}, {"logprob": -0.25}]});
        assert_eq!(
            token_logprobs(&vllm, &Value::Null),
            Some(vec![f32::NEG_INFINITY, -0.25])
        );
        let legacy = json!({"tokens": ["a", "b"], "token_logprobs": [-1.0, -2.0]});
        assert_eq!(
            token_logprobs(&legacy, &Value::Null),
            Some(vec![-1.0, -2.0])
        );
        // llama.cpp before OpenAI-shaped logprobs: probabilities of the top candidates.
        let old_llama = json!([
            {"content": "Hi", "probs": [{"tok_str": "Hello", "prob": 0.5}, {"tok_str": "Hi", "prob": 0.25}]},
            {"content": "!", "probs": [{"tok_str": "?", "prob": 1.0}]}
        ]);
        assert_eq!(
            token_logprobs(&Value::Null, &old_llama),
            Some(vec![0.25f64.ln() as f32, f32::NEG_INFINITY])
        );
        let native = json!([{"token": "Hi", "logprob": -0.1}]);
        assert_eq!(token_logprobs(&Value::Null, &native), Some(vec![-0.1]));
        assert_eq!(token_logprobs(&Value::Null, &Value::Null), None);
        assert_eq!(token_logprobs(&json!("odd"), &json!(3)), None);
    }

    #[test]
    fn usage_from_counts_cache_details_or_timings() {
        let wire = |v: Value| serde_json::from_value::<WireUsage>(v).unwrap();
        let plain = wire(json!({"prompt_tokens": 10, "completion_tokens": 2}));
        assert_eq!(
            usage(Some(plain), &Value::Null),
            Some(Usage {
                input_tokens: 10,
                output_tokens: 2,
                processed_input_tokens: None,
                cache_write_input_tokens: None
            })
        );
        let cached = wire(
            json!({"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 8}}),
        );
        assert_eq!(
            usage(Some(cached), &Value::Null)
                .unwrap()
                .processed_input_tokens,
            Some(2)
        );
        // llama.cpp: timings say what was processed when usage does not.
        let timings = json!({"cache_n": 31, "prompt_n": 1, "predicted_n": 4, "prompt_ms": 16.5});
        let plain = wire(json!({"prompt_tokens": 32, "completion_tokens": 4}));
        assert_eq!(
            usage(Some(plain), &timings).unwrap().processed_input_tokens,
            Some(1)
        );
        // A build that streams timings but no usage (as captured from a real server).
        assert_eq!(
            usage(None, &timings),
            Some(Usage {
                input_tokens: 32,
                output_tokens: 4,
                processed_input_tokens: Some(1),
                cache_write_input_tokens: None
            })
        );
        assert_eq!(usage(None, &Value::Null), None);
        assert_eq!(usage(None, &json!({"prompt_n": 3})), None);
        // Counts a server made up do not overflow.
        let huge = json!({"prompt_n": u64::MAX, "cache_n": u64::MAX, "predicted_n": 1});
        assert_eq!(usage(None, &huge).unwrap().input_tokens, u64::MAX);
    }

    #[test]
    fn reported_errors_classify_like_their_status() {
        let class = |v: Value| server_error(reported_error(&v).expect("an error")).class();
        // OpenAI: string codes.
        assert_eq!(
            class(
                json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}})
            ),
            ErrorClass::Permanent
        );
        assert_eq!(
            class(
                json!({"error": {"message": "This model's maximum context length is 8192 tokens", "type": "invalid_request_error", "code": "context_length_exceeded"}})
            ),
            ErrorClass::ContextLength
        );
        assert_eq!(
            class(
                json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}})
            ),
            ErrorClass::RateLimited
        );
        // Out of credit: a 429 that waiting cannot fix.
        assert_eq!(
            class(
                json!({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}})
            ),
            ErrorClass::Permanent
        );
        // vLLM: flat, numeric code.
        assert_eq!(
            class(
                json!({"object": "error", "message": "The decoder prompt (length 5000) is longer than the maximum model length of 4096.", "type": "BadRequestError", "param": null, "code": 400})
            ),
            ErrorClass::ContextLength
        );
        // llama.cpp: numeric code, its own types.
        assert_eq!(
            class(
                json!({"error": {"code": 400, "message": "request (3031 tokens) exceeds the available context size (1024 tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 3031, "n_ctx": 1024}})
            ),
            ErrorClass::ContextLength
        );
        assert_eq!(
            class(
                json!({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}})
            ),
            ErrorClass::Transient
        );
        // Ollama's native shape: a bare message, no status to go by.
        assert_eq!(
            class(json!({"error": "model \"llama9\" not found, try pulling it first"})),
            ErrorClass::Transient
        );
        assert_eq!(reported_error(&json!({"error": null, "choices": []})), None);
        assert_eq!(reported_error(&json!({"object": "chat.completion"})), None);
    }

    #[test]
    fn error_messages_keep_code_and_type() {
        let e = server_error(
            &json!({"message": "no key", "type": "invalid_request_error", "code": "invalid_api_key"}),
        );
        assert_eq!(
            e,
            BackendError::Http {
                status: 401,
                body: "no key (invalid_request_error, invalid_api_key)".into()
            }
        );
        let e = server_error(
            &json!({"code": 500, "message": "slot unavailable", "type": "server_error"}),
        );
        assert_eq!(
            e,
            BackendError::Http {
                status: 500,
                body: "slot unavailable (server_error)".into()
            }
        );
    }

    #[test]
    fn requests_differ_only_where_servers_do() {
        assert_eq!(
            ServerKind::OpenAi.max_tokens_field(),
            "max_completion_tokens"
        );
        for d in [
            ServerKind::Vllm,
            ServerKind::LlamaCpp,
            ServerKind::Ollama,
            ServerKind::Generic,
        ] {
            assert_eq!(d.max_tokens_field(), "max_tokens");
        }
        assert_eq!(ServerKind::LlamaCpp.top_logprobs(), 1);
        assert_eq!(ServerKind::OpenAi.top_logprobs(), 0);
        let mut body = Map::new();
        ServerKind::Vllm.add_own_fields(&mut body);
        assert!(body.is_empty());
        ServerKind::LlamaCpp.add_own_fields(&mut body);
        assert_eq!(Value::Object(body), json!({"cache_prompt": true}));
    }
}
