//! What the server sends passes the redactor (`ServeOptions::redactor`, made from the
//! configuration `moot serve` was given): errors that quote an upstream, model text in runs,
//! pages and events. A store may hold text written by a process that did not know a key, and
//! an upstream's error may echo the key it was sent.
//!
//! JSON is redacted value by value (every string, and every object key), never as text: a
//! pattern matched across a quote would break it.

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
