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
use moot_app::service::{DebateRequest, RunnerError};

/// How often a streamed debate is read again for progress.
const POLL: Duration = Duration::from_millis(200);

/// Characters per streamed content chunk.
const CHUNK: usize = 48;

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An error in OpenAI's shape: `{"error": {"message", "type", "code"}}`.
fn oai_error(status: StatusCode, kind: &str, message: impl Into<String>) -> Response {
    (
        status,
        Json(json!({"error": {"message": message.into(), "type": kind, "code": Value::Null}})),
    )
        .into_response()
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
    pub stream: bool,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
}

#[derive(Debug, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

#[derive(Debug, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    #[serde(default)]
    pub content: Value,
}

impl ChatMessage {
    /// The message's text: a string, or the text parts of a content list.
    fn text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter(|p| p["type"] == "text")
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }
}

/// The debate a chat request asks for: the model names the team and protocol, the last user
/// message is the question and the earlier messages its context.
pub fn debate_request(chat: &ChatRequest) -> Result<DebateRequest, String> {
    let mut parts = chat.model.splitn(3, '/');
    if parts.next() != Some("moot") {
        return Err(format!(
            "model {:?}: this server's models are moot, moot/PROTOCOL and moot/PROTOCOL/MODEL (GET /v1/models lists them)",
            chat.model
        ));
    }
    let protocol = parts.next().map(str::to_string);
    let model = parts.next().map(str::to_string);
    if let Some(p) = &protocol {
        if !moot_core::protocol::PROTOCOLS.iter().any(|e| e.name == p) {
            let names: Vec<&str> = moot_core::protocol::PROTOCOLS
                .iter()
                .map(|e| e.name)
                .collect();
            return Err(format!(
                "model {:?}: unknown protocol {p:?} (one of {})",
                chat.model,
                names.join(", ")
            ));
        }
    }
    let last_user = chat
        .messages
        .iter()
        .rposition(|m| m.role == "user")
        .ok_or("messages: no user message to debate")?;
    let question = chat.messages[last_user].text();
    if question.trim().is_empty() {
        return Err("messages: the last user message is empty".into());
    }
    let context: Vec<String> = chat.messages[..last_user]
        .iter()
        .map(|m| format!("{}: {}", m.role, m.text()))
        .collect();
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
    prompt_tokens: u64,
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
    Ok(Outcome {
        failure,
        content: winning_response(&run, &calls),
        prompt_tokens: total_tokens(calls.iter().filter(|c| !c.cached).map(|c| c.input_tokens)),
        completion_tokens: total_tokens(
            calls.iter().filter(|c| !c.cached).map(|c| c.output_tokens),
        ),
        run,
    })
}

/// The response of the first agent holding the decided answer in its last answered round; the
/// latest response at all when no one holds it (or nothing was decided).
fn winning_response(run: &RunRecord, calls: &[CallRecord]) -> String {
    let answers = || {
        calls
            .iter()
            .filter(|c| c.slot == "answer" && c.response_text.is_some())
    };
    let last = answers().map(|c| c.round).max();
    let holder = answers()
        .filter(|c| Some(c.round) == last)
        .find(|c| run.answer.is_some() && c.answer == run.answer)
        .or_else(|| {
            answers()
                .filter(|c| run.answer.is_some() && c.answer == run.answer)
                .max_by_key(|c| c.round)
        })
        .or_else(|| answers().max_by_key(|c| (c.round, c.agent)));
    holder
        .and_then(|c| c.response_text.clone())
        .unwrap_or_default()
}

fn usage(o: &Outcome) -> Value {
    json!({
        "prompt_tokens": o.prompt_tokens,
        "completion_tokens": o.completion_tokens,
        "total_tokens": o.prompt_tokens.saturating_add(o.completion_tokens),
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
        Err(e) => return oai_error(e.status(), "invalid_request_error", e.body_text()),
    };
    let request = match debate_request(&chat) {
        Ok(r) => r,
        Err(m) => return oai_error(StatusCode::BAD_REQUEST, "invalid_request_error", m),
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
        Err(StartError::Runner(RunnerError::Internal(m))) => {
            return oai_error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", m)
        }
        Err(StartError::Runner(RunnerError::Unavailable(m))) => {
            return oai_error(StatusCode::SERVICE_UNAVAILABLE, "server_error", m)
        }
    };
    if chat.stream {
        let include_usage = chat.stream_options.is_some_and(|o| o.include_usage);
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
                "finish_reason": "stop",
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
                            json!("stop"),
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
        assert!(e.contains("unknown protocol"), "{e}");
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
