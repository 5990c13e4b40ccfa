//! The calls of followed runs, read once per run however many follow it.
//!
//! A follower of a run's events (`/api/runs/ID/events`) first reads what is already stored
//! itself, from where it stands (a store cursor, one call at a time). Then it listens to the
//! run's feed: one task per followed run that reads the store for new calls every [`POLL`] and
//! sends each (as its event's text, redacted once) to every follower. 4,000 followers of one run
//! each reading the store every 150 ms put the server at 150 % CPU; now they cost one reader.
//!
//! The feed ends when its run does (or cannot be read), or when its last follower leaves; its
//! followers then read what is left themselves and say how the run ended. A follower that
//! falls behind the feed (its client reads slowly and [`BUFFERED`] events pile up) reads from
//! the store again until it has caught up. Calls come in the order they were written, each
//! once: a follower skips what the feed sends that it has already read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use moot_core::redact::Redactor;
use moot_store::{CallCursor, CallRecord, RunStatus, Store};
use serde_json::json;
use tokio::sync::broadcast;

/// How often a followed run is read again for new calls.
pub const POLL: Duration = Duration::from_millis(150);

/// Events a follower may fall behind the feed before it reads from the store again.
const BUFFERED: usize = 256;

/// Calls the feed reads at once.
const READ_CALLS: u32 = 16;

/// One call of a followed run: where it stands, and its `call` event's text.
#[derive(Debug)]
pub struct FedCall {
    pub cursor: CallCursor,
    pub event: String,
}

/// One `call` event's text: who answered what, at what cost (redacted: an answer is model
/// text).
pub fn call_event(redactor: &Redactor, c: &CallRecord) -> String {
    let event = json!({
        "round": c.round, "agent": c.agent, "agent_id": c.agent_id, "slot": c.slot,
        "answer": c.answer, "status": if c.skipped { "skipped" } else if c.response_text.is_some() { "responded" } else { "failed" },
        "input_tokens": c.input_tokens, "output_tokens": c.output_tokens, "ms": c.latency_ms,
        "cached": c.cached,
    });
    crate::redaction::json_text(redactor, event)
}

/// The feed of every followed run, by run id, and what the feeds read and redact with.
pub struct Feeds {
    store: Arc<dyn Store>,
    redactor: Arc<Redactor>,
    runs: Mutex<HashMap<String, broadcast::Sender<Arc<FedCall>>>>,
}

impl Feeds {
    pub fn new(store: Arc<dyn Store>, redactor: Arc<Redactor>) -> Feeds {
        Feeds {
            store,
            redactor,
            runs: Mutex::default(),
        }
    }

    fn runs(&self) -> MutexGuard<'_, HashMap<String, broadcast::Sender<Arc<FedCall>>>> {
        // Map operations do not panic halfway; a poisoned map is still whole.
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Listens to run `id`'s feed, starting it (reading from `from`) if none runs.
    pub fn listen(
        feeds: &Arc<Feeds>,
        id: &str,
        from: &CallCursor,
    ) -> broadcast::Receiver<Arc<FedCall>> {
        let mut runs = feeds.runs();
        if let Some(feed) = runs.get(id) {
            return feed.subscribe();
        }
        let (feed, listener) = broadcast::channel(BUFFERED);
        runs.insert(id.to_string(), feed.clone());
        tokio::spawn(read(feeds.clone(), id.to_string(), from.clone(), feed));
        listener
    }

    /// Ends run `id`'s feed if it is `feed` and, with `only_if_unheard`, nobody listens to it:
    /// done under the map's lock, so a new follower either finds the feed running or starts
    /// another. Whether it ended.
    fn end(&self, id: &str, feed: &broadcast::Sender<Arc<FedCall>>, only_if_unheard: bool) -> bool {
        let mut runs = self.runs();
        if only_if_unheard && feed.receiver_count() > 0 {
            return false;
        }
        if runs.get(id).is_some_and(|f| f.same_channel(feed)) {
            runs.remove(id);
        }
        true
    }
}

/// A followed run's feed: reads its new calls until it ends or nobody listens.
async fn read(
    feeds: Arc<Feeds>,
    id: String,
    mut cursor: CallCursor,
    feed: broadcast::Sender<Arc<FedCall>>,
) {
    loop {
        if feeds.end(&id, &feed, true) {
            return;
        }
        match feeds.store.calls_after(&id, &cursor, READ_CALLS).await {
            Ok(calls) if !calls.is_empty() => {
                for (at, call) in calls {
                    cursor = at.clone();
                    let event = call_event(&feeds.redactor, &call);
                    // No follower now: the next pass ends the feed.
                    let _ = feed.send(Arc::new(FedCall { cursor: at, event }));
                }
                continue;
            }
            Ok(_) => {}
            // The followers read the store themselves, and say what failed.
            Err(_) => break,
        }
        match feeds.store.run(&id).await {
            Ok(run) if run.status == RunStatus::Running && !run.interrupted() => {}
            // Ended (the followers read its last calls and how it ended), or unreadable.
            _ => break,
        }
        tokio::time::sleep(POLL).await;
    }
    feeds.end(&id, &feed, false);
}
