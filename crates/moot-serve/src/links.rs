//! The links the server makes: percent-encoded paths and queries, a run's path, and the place
//! in a run's calls where a page starts (`?after=`).

use moot_store::CallCursor;
use serde::Deserialize;

/// Percent-encodes a query value or a path segment (everything but unreserved characters).
pub(crate) fn percent_encode(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `?after=CURSOR&limit=N`: which page of a run's calls (see [`crate::app::CallPage`]).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PageQuery {
    pub after: Option<String>,
    pub limit: Option<u32>,
}

/// A run's path under `prefix` (`/runs/`, `/api/runs/`), each segment of its id
/// percent-encoded (ids hold slashes; a stored one may hold anything).
pub(crate) fn run_href(prefix: &str, id: &str) -> String {
    let segments: Vec<String> = id.split('/').map(percent_encode).collect();
    format!("{prefix}{}", segments.join("/"))
}

/// Where a page of calls starts: after a call (`SEQ.ROUND.AGENT.SLOT`, as a page's link to
/// the next one gives it), or at the first call.
pub(crate) fn parse_cursor(text: Option<&str>) -> Result<CallCursor, String> {
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        return Ok(CallCursor::start());
    };
    let bad = || {
        format!("after: {text:?} is not a place in a run's calls (take it from a page's `next`)")
    };
    let mut parts = text.splitn(4, '.');
    let mut part = || parts.next().ok_or_else(bad);
    Ok(CallCursor {
        seq: part()?.parse().map_err(|_| bad())?,
        round: part()?.parse().map_err(|_| bad())?,
        agent: part()?.parse().map_err(|_| bad())?,
        slot: part()?.to_string(),
    })
}

/// A cursor as `after=` gives it back (percent-encoded for a query).
pub(crate) fn cursor_text(cursor: &CallCursor) -> String {
    percent_encode(&format!(
        "{}.{}.{}.{}",
        cursor.seq, cursor.round, cursor.agent, cursor.slot
    ))
}
