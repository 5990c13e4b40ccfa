//! An OpenAI-compatible endpoint whose models are debate teams, so that any OpenAI client can
//! use one as its model: `moot` (the configured team and protocol), `moot/PROTOCOL` (the
//! configured team under PROTOCOL) and `moot/PROTOCOL/MODEL` (a team of the configured size on
//! MODEL at the configured OpenAI-compatible upstream) — the prefix convention of optillm.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use moot_core::chat::total_tokens;
use moot_store::{CallRecord, RunRecord, StoreError};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::app::{App, StartError};
use crate::redaction::json_text;
use moot_app::service::{DebateRequest, RunnerError, SamplingOverride};

/// How often a streamed debate is read again for progress.
const POLL: Duration = Duration::from_millis(200);

/// Characters per streamed content chunk.
const CHUNK: usize = 48;

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An error in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`.
fn oai_error(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    oai_error_on(status, kind, None, message)
}

/// [`oai_error`] about the request's field `param`.
fn oai_error_on(
    status: StatusCode,
    kind: &str,
    param: Option<&str>,
    message: impl Into<String>,
) -> Response {
    (
        status,
        Json(
            json!({"error": {"message": message.into(), "type": kind, "param": param, "code": Value::Null}}),
        ),
    )
        .into_response()
}

/// An OpenAI error about the request as a whole (a method a route does not take).
pub fn error_body(status: StatusCode, message: impl Into<String>) -> Response {
    oai_error(status, "invalid_request_error", message)
}

/// An OpenAI error body for a route that does not exist (the server's fallback under `/v1/`).
pub fn not_found(path: &str) -> Response {
    oai_error(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!(
            "no route {}: this server's OpenAI-compatible routes are GET /v1/models and POST /v1/chat/completions",
            cut(path, 200)
        ),
    )
}

/// At most `max` characters of `text` (a name a request chose, quoted back to it), marked
/// when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `GET /v1/models`.
pub async fn models(State(app): State<Arc<App>>) -> Response {
    let team = app.runner.team();
    let created = now();
    let mut data = vec![json!({
        "id": "moot", "object": "model", "created": created, "owned_by": "moot",
        "moot": {"protocol": team.protocol, "rounds": team.rounds, "agents": team.agents},
    })];
    for p in moot_core::protocol::PROTOCOLS {
        data.push(json!({
            "id": format!("moot/{}", p.name), "object": "model", "created": created,
            "owned_by": "moot", "moot": {"protocol": p.name, "summary": p.summary},
        }));
    }
    Json(json!({"object": "list", "data": data})).into_response()
}

#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Every other field, by name: each is honoured or refused ([`sampling`]), none dropped
    /// unread, so a client never gets an answer to a question it did not ask.
    #[serde(flatten)]
    pub params: serde_json::Map<String, Value>,
}

#[derive(Debug, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: Option<bool>,
    /// `include_obfuscation` and any later field, checked as the request's are.
    #[serde(flatten)]
    pub rest: serde_json::Map<String, Value>,
}

#[derive(Debug, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    #[serde(default)]
    pub content: Value,
    /// The speaker's name, shown with the role in the context.
    #[serde(default)]
    pub name: Option<String>,
    /// `tool_calls`, `audio` and the like: refused unless null ([`ChatMessage::text`]).
    #[serde(flatten)]
    pub rest: serde_json::Map<String, Value>,
}

/// A request's field that moot cannot honour: 400 `invalid_request_error` with `param`.
#[derive(Debug, PartialEq)]
pub struct Refused {
    pub param: String,
    pub message: String,
}

fn refused(param: &str, message: impl Into<String>) -> Refused {
    Refused {
        param: cut(param, 100),
        message: message.into(),
    }
}

impl ChatMessage {
    /// The text of message `i`: a string, or a content list of text parts. A part of another
    /// kind (an image, audio, a file) is refused: the debate reads text only, and an answer to
    /// the question without its picture is not an answer to the question asked.
    fn text(&self, i: usize) -> Result<String, Refused> {
        if let Some((key, _)) = self.rest.iter().find(|(_, v)| !v.is_null()) {
            let param = format!("messages[{i}].{key}");
            return Err(refused(
                &param,
                format!("{}: moot debates the messages' text only", cut(&param, 100)),
            ));
        }
        match &self.content {
            Value::String(s) => Ok(s.clone()),
            Value::Null => Ok(String::new()),
            Value::Array(parts) => {
                let mut texts = Vec::with_capacity(parts.len());
                for (j, part) in parts.iter().enumerate() {
                    match (part["type"].as_str(), part["text"].as_str()) {
                        (Some("text"), Some(text)) => texts.push(text),
                        (kind, _) => {
                            return Err(refused(
                                &format!("messages[{i}].content[{j}]"),
                                format!(
                                    "messages[{i}].content[{j}]: a part of type {}; moot debates text parts only",
                                    kind.map_or("(none)".to_string(), |k| format!("{:?}", cut(k, 40)))
                                ),
                            ))
                        }
                    }
                }
                Ok(texts.join("\n"))
            }
            _ => Err(refused(
                &format!("messages[{i}].content"),
                format!("messages[{i}].content: a string or a list of text parts"),
            )),
        }
    }

    /// How the context names the message's author: its role, and its name when it has one.
    fn speaker(&self) -> String {
        match &self.name {
            Some(name) => format!("{} ({})", self.role, cut(name, 64)),
            None => self.role.clone(),
        }
    }
}

/// What moot makes of the request's other fields (OpenAI's sampling and output parameters):
/// a value it can honour is applied to every agent of the debate (`temperature`, `top_p`,
/// `max_tokens`/`max_completion_tokens`, `seed`), a value that asks for what moot does anyway
/// is accepted (`n: 1`, `stop: []`, `logprobs: false`, `tools: []`, a `text` response format,
/// zero penalties, `user`…), and anything else is refused by name. `null` is a field left out.
pub fn sampling(chat: &ChatRequest) -> Result<SamplingOverride, Refused> {
    let mut o = SamplingOverride::default();
    for (name, value) in &chat.params {
        if value.is_null() {
            continue;
        }
        let name = name.as_str();
        let shown = cut(&value.to_string(), 60);
        match name {
            "n" => {
                if value.as_u64() != Some(1) {
                    return Err(refused(
                        name,
                        format!("n = {shown}: moot answers with one choice, the debate's decision, so only n = 1 is supported (ask again for another debate)"),
                    ));
                }
            }
            "max_tokens" | "max_completion_tokens" => {
                let cap = value
                    .as_u64()
                    .filter(|n| *n >= 1)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| {
                        refused(
                            name,
                            format!(
                                "{name} = {shown}: a whole number of tokens from 1 to {}",
                                u32::MAX
                            ),
                        )
                    })?;
                // Both given: each is a cap, so the smaller holds.
                o.max_tokens = Some(o.max_tokens.map_or(cap, |c| c.min(cap)));
            }
            "temperature" => {
                let t = value
                    .as_f64()
                    .filter(|t| (0.0..=2.0).contains(t))
                    .ok_or_else(|| {
                        refused(name, format!("temperature = {shown}: a number from 0 to 2"))
                    })?;
                o.temperature = Some(t as f32);
            }
            "top_p" => {
                let p = value
                    .as_f64()
                    .filter(|p| *p > 0.0 && *p <= 1.0)
                    .ok_or_else(|| {
                        refused(
                            name,
                            format!("top_p = {shown}: a number over 0 and at most 1"),
                        )
                    })?;
                o.top_p = Some(p as f32);
            }
            "seed" => {
                o.seed = Some(value.as_u64().ok_or_else(|| {
                    refused(
                        name,
                        format!("seed = {shown}: a whole number from 0 to {}", u64::MAX),
                    )
                })?);
            }
            // What moot does anyway: accepted.
            "stop" if value.as_array().is_some_and(Vec::is_empty) => {}
            "logprobs" if value == &Value::Bool(false) => {}
            "tools" | "functions" if value.as_array().is_some_and(Vec::is_empty) => {}
            "tool_choice" | "function_call" if value == "none" || value == "auto" => {}
            "parallel_tool_calls" if value.is_boolean() => {}
            "response_format" if value == &json!({"type": "text"}) => {}
            "presence_penalty" | "frequency_penalty" if value.as_f64() == Some(0.0) => {}
            "logit_bias" | "metadata" if value.as_object().is_some_and(|m| m.is_empty()) => {}
            "modalities" if value == &json!(["text"]) => {}
            // Every debate is recorded in the store (the completion's id opens it).
            "store" if value == &Value::Bool(true) => {}
            // They name the caller or a cache to the provider and ask nothing of the answer.
            "user" | "safety_identifier" | "prompt_cache_key" if value.is_string() => {}
            _ => {
                let why = match name {
                    "stop" => "moot's agents write whole replies, which the debate reads to its end; it cannot stop them at a sequence",
                    "logprobs" | "top_logprobs" => "the answer is a debate's, whose tokens have no one log-probability to return",
                    "tools" | "functions" | "tool_choice" | "function_call" | "parallel_tool_calls" => "the debate's agents call no tools for the client",
                    "response_format" => "the debate answers in text; it cannot promise JSON",
                    "presence_penalty" | "frequency_penalty" | "logit_bias" => "the agents' backends are not all given penalties or biases",
                    "store" => "every debate is recorded in the server's store",
                    "metadata" => "a run keeps no metadata",
                    "modalities" => "the debate answers in text only",
                    _ => "moot does not support it, and refuses it rather than ignore it",
                };
                return Err(refused(
                    name,
                    format!("{} = {shown}: {why}", cut(name, 100)),
                ));
            }
        }
    }
    if let Some(options) = &chat.stream_options {
        for (name, value) in &options.rest {
            // Obfuscation pads chunks against a side channel moot's chunks do not have.
            if value.is_null() || (name == "include_obfuscation" && value == &Value::Bool(false)) {
                continue;
            }
            let param = format!("stream_options.{}", cut(name, 100));
            return Err(refused(
                &param,
                format!("{param}: moot does not support it, and refuses it rather than ignore it"),
            ));
        }
    }
    Ok(o)
}

/// The debate a chat request asks for: the model names the team and protocol, the last user
/// message is the question and the earlier messages its context, the other fields the
/// agents' sampling ([`sampling`]).
pub fn debate_request(chat: &ChatRequest) -> Result<DebateRequest, Refused> {
    let sampling = sampling(chat)?;
    let bad = |param: &str, message: String| refused(param, message);
    let mut parts = chat.model.splitn(3, '/');
    if parts.next() != Some("moot") {
        return Err(bad("model", format!(
            "model {:?}: this server's models are moot, moot/PROTOCOL and moot/PROTOCOL/MODEL (GET /v1/models lists them)",
            cut(&chat.model, 200)
        )));
    }
    let protocol = parts.next().map(str::to_string);
    let model = parts.next().map(str::to_string);
    if let Some(p) = &protocol {
        if !moot_core::protocol::PROTOCOLS.iter().any(|e| e.name == p) {
            let names: Vec<&str> = moot_core::protocol::PROTOCOLS
                .iter()
                .map(|e| e.name)
                .collect();
            return Err(bad(
                "model",
                format!(
                    "model {:?}: unknown protocol {:?} (one of {})",
                    cut(&chat.model, 200),
                    cut(p, 100),
                    names.join(", ")
                ),
            ));
        }
    }
    let last_user = chat
        .messages
        .iter()
        .rposition(|m| m.role == "user")
        .ok_or_else(|| bad("messages", "messages: no user message to debate".into()))?;
    let question = chat.messages[last_user].text(last_user)?;
    if question.trim().is_empty() {
        return Err(bad(
            "messages",
            "messages: the last user message is empty".into(),
        ));
    }
    let mut context = Vec::with_capacity(last_user);
    for (i, m) in chat.messages[..last_user].iter().enumerate() {
        context.push(format!("{}: {}", m.speaker(), m.text(i)?));
    }
    // A message after the last user message (an assistant's prefill) has no place in a
    // debate of that message: refused rather than dropped.
    if let Some(i) = (last_user + 1 < chat.messages.len()).then_some(last_user + 1) {
        return Err(bad(
            &format!("messages[{i}]"),
            format!("messages[{i}]: a message after the last user message, which is the question the debate answers; moot cannot continue a reply"),
        ));
    }
    let question = if context.is_empty() {
        question
    } else {
        format!(
            "The conversation so far:\n\n{}\n\nNow answer this: {question}",
            context.join("\n\n")
        )
    };
    Ok(DebateRequest {
        question,
        protocol,
        model,
        sampling,
        ..DebateRequest::default()
    })
}

/// What a finished debate answers as a model: the winning response, and the tokens of every
/// call.
struct Outcome {
    run: RunRecord,
    content: String,
    /// Why there is no content: no agent's call got a response (the first error, naming the
    /// cause). A debate without one answer is a failure, not an empty completion.
    failure: Option<String>,
    /// `length` when the winning response was cut at its token cap, else `stop`.
    finish_reason: &'static str,
    /// Input tokens of every call a model was asked for (a call answered from moot's request
    /// cache asked none, and counts nowhere in `usage`).
    prompt_tokens: u64,
    /// Of `prompt_tokens`, those the backends read from their prompt caches instead of
    /// processing (0 for a call whose backend did not say).
    cached_tokens: u64,
    completion_tokens: u64,
}

async fn outcome(app: &App, run_id: &str) -> Result<Outcome, StoreError> {
    let run = app.store.run(run_id).await?;
    let calls = app.store.calls(run_id).await?;
    let answered = calls
        .iter()
        .any(|c| c.slot == "answer" && c.response_text.is_some());
    let failure = (!answered).then(|| {
        let cause = calls
            .iter()
            .find_map(|c| c.error.as_deref())
            .unwrap_or("no agent answered");
        format!("no agent of the debate (run {run_id}) got an answer from its model: {cause}")
    });
    let winner = winning_call(&run, &calls);
    let asked = || calls.iter().filter(|c| !c.cached);
    Ok(Outcome {
        failure,
        content: winner
            .and_then(|c| c.response_text.clone())
            .unwrap_or_default(),
        finish_reason: match winner.and_then(|c| c.finish.as_deref()) {
            Some("length") => "length",
            _ => "stop",
        },
        prompt_tokens: total_tokens(asked().map(|c| c.input_tokens)),
        cached_tokens: total_tokens(asked().map(|c| c.cached_input_tokens().unwrap_or(0))),
        completion_tokens: total_tokens(asked().map(|c| c.output_tokens)),
        run,
    })
}

/// The call of the first agent holding the decided answer in its last answered round; the
/// latest response at all when no one holds it (or nothing was decided).
fn winning_call<'c>(run: &RunRecord, calls: &'c [CallRecord]) -> Option<&'c CallRecord> {
    let answers = || {
        calls
            .iter()
            .filter(|c| c.slot == "answer" && c.response_text.is_some())
    };
    let last = answers().map(|c| c.round).max();
    answers()
        .filter(|c| Some(c.round) == last)
        .find(|c| run.answer.is_some() && c.answer == run.answer)
        .or_else(|| {
            answers()
                .filter(|c| run.answer.is_some() && c.answer == run.answer)
                .max_by_key(|c| c.round)
        })
        .or_else(|| answers().max_by_key(|c| (c.round, c.agent)))
}

fn usage(o: &Outcome) -> Value {
    json!({
        "prompt_tokens": o.prompt_tokens,
        "completion_tokens": o.completion_tokens,
        "total_tokens": o.prompt_tokens.saturating_add(o.completion_tokens),
        "prompt_tokens_details": {"cached_tokens": o.cached_tokens},
    })
}

fn moot_field(o: &Outcome) -> Value {
    json!({"answer": o.run.answer, "rule": o.run.rule, "run_id": o.run.id, "protocol": o.run.protocol, "status": o.run.shown_status()})
}

/// Cancels a debate when dropped, unless disarmed once the debate has ended.
struct CancelOnDrop(Option<tokio::sync::oneshot::Sender<()>>);

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            let _ = cancel.send(());
        }
    }
}

/// `POST /v1/chat/completions`.
pub async fn chat(
    State(app): State<Arc<App>>,
    body: Result<Json<ChatRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let chat = match body {
        Ok(Json(c)) => c,
        // OpenAI answers a body it cannot read (a field missing or of the wrong type) with 400,
        // naming the field; axum's rejection says 422 (or 415 without a JSON content type,
        // kept: that is about the request, not a field).
        Err(e) => {
            let text = e.body_text();
            let status = match e.status() {
                StatusCode::UNPROCESSABLE_ENTITY => StatusCode::BAD_REQUEST,
                other => other,
            };
            let param = text
                .split_once("field `")
                .and_then(|(_, rest)| rest.split_once('`'))
                .map(|(field, _)| field.to_string());
            return oai_error_on(status, "invalid_request_error", param.as_deref(), text);
        }
    };
    let request = match debate_request(&chat) {
        Ok(r) => r,
        Err(Refused { param, message }) => {
            return oai_error_on(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                Some(&param),
                message,
            )
        }
    };
    let started = match app.start(request).await {
        Ok(s) => s,
        Err(StartError::Busy(n)) => {
            let mut r = oai_error(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                StartError::Busy(n).to_string(),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
            return r;
        }
        Err(StartError::Runner(RunnerError::BadRequest(m))) => {
            return oai_error(StatusCode::BAD_REQUEST, "invalid_request_error", m)
        }
        Err(StartError::Runner(RunnerError::BadParam { param, message })) => {
            return oai_error_on(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                Some(param),
                message,
            )
        }
        Err(StartError::Runner(RunnerError::Internal(m))) => {
            return oai_error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", m)
        }
        Err(StartError::Runner(RunnerError::Unavailable(m))) => {
            return oai_error(StatusCode::SERVICE_UNAVAILABLE, "server_error", m)
        }
    };
    if chat.stream == Some(true) {
        let include_usage = chat
            .stream_options
            .is_some_and(|o| o.include_usage == Some(true));
        return stream(app, started, chat.model, include_usage).into_response();
    }
    // A client that goes away before the answer drops this future, and with it the guard,
    // which cancels the debate: nobody is left to read it.
    let mut cancel = CancelOnDrop(Some(started.cancel));
    let finished = started
        .finished
        .await
        .unwrap_or_else(|_| Err("the debate's task ended without a result".into()));
    cancel.disarm();
    if let Err(m) = finished {
        return oai_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            format!("the debate (run {}) failed: {m}", started.run_id),
        );
    }
    match outcome(&app, &started.run_id).await {
        Ok(Outcome {
            failure: Some(m), ..
        }) => oai_error(StatusCode::BAD_GATEWAY, "upstream_error", m),
        Ok(o) => Json(json!({
            "id": o.run.id,
            "object": "chat.completion",
            "created": now(),
            "model": chat.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": o.content},
                "finish_reason": o.finish_reason,
            }],
            "usage": usage(&o),
            "moot": moot_field(&o),
        }))
        .into_response(),
        Err(e) => oai_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            e.to_string(),
        ),
    }
}

/// Progress while the debate runs (SSE comments, which clients skip), then the winning response
/// as `chat.completion.chunk`s, a last chunk with `finish_reason` (and `usage` when asked), and
/// `[DONE]`.
fn stream(
    app: Arc<App>,
    started: moot_app::service::Started,
    model: String,
    include_usage: bool,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    enum Phase {
        Running,
        Done,
    }
    struct S {
        app: Arc<App>,
        run_id: String,
        finished: tokio::sync::oneshot::Receiver<Result<(), String>>,
        model: String,
        include_usage: bool,
        /// The last call told of.
        seen: moot_store::CallCursor,
        queue: std::collections::VecDeque<Event>,
        phase: Phase,
        /// Cancels the debate when the stream is dropped (its client went away) before the end.
        cancel: CancelOnDrop,
    }
    let state = S {
        app,
        run_id: started.run_id,
        finished: started.finished,
        model,
        include_usage,
        seen: moot_store::CallCursor::start(),
        queue: Default::default(),
        phase: Phase::Running,
        cancel: CancelOnDrop(Some(started.cancel)),
    };
    let stream = futures::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(e) = s.queue.pop_front() {
                return Some((Ok(e), s));
            }
            if let Phase::Done = s.phase {
                return None;
            }
            let ended = tokio::select! {
                r = &mut s.finished => Some(r.unwrap_or_else(|_| Err("the debate's task ended without a result".into()))),
                _ = tokio::time::sleep(POLL) => None,
            };
            // What is new since the last look (a cursor: never the whole run again).
            if let Ok(calls) = s.app.store.calls_after(&s.run_id, &s.seen, 64).await {
                for (at, c) in calls {
                    let answer = c.answer.as_deref().unwrap_or("(none)");
                    let answer: String = answer
                        .lines()
                        .next()
                        .unwrap_or("")
                        .chars()
                        .take(80)
                        .collect();
                    let line = format!(
                        "moot run {} round {} {}: {answer}",
                        s.run_id, c.round, c.agent_id
                    );
                    s.queue
                        .push_back(Event::default().comment(&*s.app.redactor.redact(&line)));
                    s.seen = at;
                }
            }
            let Some(ended) = ended else {
                continue;
            };
            s.phase = Phase::Done;
            s.cancel.disarm();
            let id = s.run_id.clone();
            let redactor = s.app.redactor.clone();
            // Every event's JSON passes the redactor.
            let data = |v: Value| Event::default().data(json_text(&redactor, v));
            let chunk = |delta: Value, finish: Value, extra: Option<(&str, Value)>| {
                let mut v = json!({
                    "id": id, "object": "chat.completion.chunk", "created": now(),
                    "model": s.model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                });
                if let Some((k, x)) = extra {
                    v[k] = x;
                }
                data(v)
            };
            match ended {
                Err(m) => {
                    s.queue.push_back(data(
                        json!({"error": {"message": format!("the debate (run {id}) failed: {m}"), "type": "server_error"}}),
                    ));
                }
                Ok(()) => match outcome(&s.app, &id).await {
                    Ok(Outcome {
                        failure: Some(m), ..
                    }) => s.queue.push_back(data(
                        json!({"error": {"message": m, "type": "upstream_error"}}),
                    )),
                    Ok(o) => {
                        s.queue.push_back(chunk(
                            json!({"role": "assistant", "content": ""}),
                            Value::Null,
                            None,
                        ));
                        // Redacted whole, before it is cut: a key may span two chunks.
                        let content = redactor.redact(&o.content);
                        let chars: Vec<char> = content.chars().collect();
                        for piece in chars.chunks(CHUNK) {
                            let text: String = piece.iter().collect();
                            s.queue
                                .push_back(chunk(json!({"content": text}), Value::Null, None));
                        }
                        s.queue.push_back(chunk(
                            json!({}),
                            json!(o.finish_reason),
                            Some(("moot", moot_field(&o))),
                        ));
                        if s.include_usage {
                            let mut last = json!({
                                "id": id, "object": "chat.completion.chunk", "created": now(),
                                "model": s.model, "choices": [], "usage": usage(&o),
                            });
                            last["moot"] = moot_field(&o);
                            s.queue.push_back(data(last));
                        }
                    }
                    Err(e) => s.queue.push_back(data(
                        json!({"error": {"message": e.to_string(), "type": "server_error"}}),
                    )),
                },
            }
            s.queue.push_back(Event::default().data("[DONE]"));
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(model: &str, messages: Value) -> ChatRequest {
        serde_json::from_value(json!({"model": model, "messages": messages})).unwrap()
    }

    #[test]
    fn model_names_pick_team_protocol_and_upstream_model() {
        let m = json!([{"role": "user", "content": "What is 17 * 24?"}]);
        let r = debate_request(&chat("moot", m.clone())).unwrap();
        assert_eq!((r.protocol, r.model), (None, None));
        assert_eq!(r.question, "What is 17 * 24?");
        let r = debate_request(&chat("moot/som", m.clone())).unwrap();
        assert_eq!(r.protocol.as_deref(), Some("som"));
        let r = debate_request(&chat("moot/free-mad-n/qwen2.5:0.5b", m.clone())).unwrap();
        assert_eq!(r.model.as_deref(), Some("qwen2.5:0.5b"));
        assert!(debate_request(&chat("gpt-4o", m.clone())).is_err());
        let e = debate_request(&chat("moot/nope", m)).unwrap_err();
        assert!(e.message.contains("unknown protocol"), "{e:?}");
        assert_eq!(e.param, "model");
    }

    #[test]
    fn earlier_messages_are_context() {
        let r = debate_request(&chat(
            "moot",
            json!([
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "I have 3 apples."}]},
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "content": "How many if I buy 2 more?"}
            ]),
        ))
        .unwrap();
        assert!(r
            .question
            .starts_with("The conversation so far:\n\nsystem: Be brief."));
        assert!(r.question.contains("user: I have 3 apples."));
        assert!(r
            .question
            .ends_with("Now answer this: How many if I buy 2 more?"));
        assert!(
            debate_request(&chat("moot", json!([{"role": "system", "content": "x"}]))).is_err()
        );
    }
}
