//! Run ids and timestamps: what names a run in the store and dates what is written there.

use std::time::SystemTime;

/// Now, as RFC 3339 with milliseconds.
pub fn timestamp() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// A new run id: time-ordered and unique enough for one user's store.
pub fn new_run_id() -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let suffix: u16 = rand::random();
    format!("r{}{:04x}", now.as_millis(), suffix)
}
