//! What the server sends passes the redactor (`ServeOptions::redactor`, made from the
//! configuration `moot serve` was given): errors that quote an upstream, model text in runs,
//! pages and events. A store may hold text written by a process that did not know a key, and
//! an upstream's error may echo the key it was sent.
//!
//! JSON is redacted value by value (every string, and every object key), never as text: a
//! pattern matched across a quote would break it.

use std::sync::Arc;

use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use moot_core::redact::Redactor;
use serde_json::Value;

/// Redacts every string in `value`, object keys included.
pub fn redact_value(redactor: &Redactor, value: &mut Value) {
    match value {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(redacted) = redactor.redact(s) {
                *s = redacted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(redactor, v)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut v) in entries {
                redact_value(redactor, &mut v);
                map.insert(redactor.redact(&key).into_owned(), v);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `value` redacted, as JSON text.
pub fn json_text(redactor: &Redactor, mut value: Value) -> String {
    redact_value(redactor, &mut value);
    value.to_string()
}

/// Redacts every whole response body the server sends (JSON value by value, text as text);
/// streamed bodies (server-sent events) are redacted where their events are made. A body with
/// an exact length is in memory already: it is read whole, and sent as it was when nothing in
/// it is a secret.
pub async fn redact_bodies(
    State(redactor): State<Arc<Redactor>>,
    request: Request,
    next: Next,
) -> Response {
    let response = next.run(request).await;
    let kind = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let json = kind.starts_with("application/json");
    let text = kind.starts_with("text/plain")
        || kind.starts_with("text/html")
        || kind.starts_with("image/svg+xml");
    if !(json || text) || response.body().size_hint().exact().is_none() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("reading a response to redact it: {e}\n"),
            )
                .into_response()
        }
    };
    let redacted: Option<Vec<u8>> = if json {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(mut value) => {
                let before = value.clone();
                redact_value(&redactor, &mut value);
                (value != before).then(|| value.to_string().into_bytes())
            }
            Err(_) => redact_text(&redactor, &bytes),
        }
    } else {
        redact_text(&redactor, &bytes)
    };
    match redacted {
        Some(redacted) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(redacted))
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// `bytes` redacted as text (`None`: nothing to redact, or not text).
fn redact_text(redactor: &Redactor, bytes: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(bytes).ok()?;
    match redactor.redact(text) {
        std::borrow::Cow::Borrowed(_) => None,
        std::borrow::Cow::Owned(redacted) => Some(redacted.into_bytes()),
    }
}

/// A page's values redacted before they are rendered: once escaped for HTML (`/` as `&#x2f;`),
/// a key would no longer be found in the page.
pub fn redact_context(redactor: &Redactor, ctx: minijinja::Value) -> minijinja::Value {
    match serde_json::to_value(&ctx) {
        Ok(mut value) => {
            redact_value(redactor, &mut value);
            minijinja::Value::from_serialize(&value)
        }
        Err(_) => ctx,
    }
}
