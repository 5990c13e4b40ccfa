//! What every handler shares: the store, the runner, the token, the templates, and the slots
//! of debates that may run at once.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use moot_core::redact::Redactor;
use moot_store::{CallCursor, CallRecord, Store, StoreError};
use tokio::sync::Semaphore;

use moot_app::service::{DebateRequest, Runner, RunnerError, Started};

/// A run as the pages and the API read it: record, a page of its calls, decisions, code
/// checks.
pub(crate) struct LoadedRun {
    pub run: moot_store::RunRecord,
    pub calls: CallPage,
    pub decisions: Vec<moot_store::DecisionRecord>,
    pub checks: Vec<moot_store::ValidationRecord>,
}

/// Calls a page holds at most when the request does not say (`?limit=`), and at most however
/// many it asks for.
pub const PAGE_CALLS: u32 = 100;
pub const MAX_PAGE_CALLS: u32 = 500;

/// The bytes a page of a run holds before it ends: a page ends at the call that takes it past
/// this, so it is at most this and one call, whatever the run's size (a run of 7 MB of replies
/// was one response of 106 MB, its calls' prompts holding their peers' replies again). A call
/// counts as often as a page shows it ([`SHOWN_TIMES`]): itself, and in the view drawn from
/// it, so this is the size of the whole response (it was documented as 1 MiB and pages were
/// 2.7 MB).
pub const PAGE_BYTES: usize = 1 << 20;

/// How many times a page shows each call's text: as the call, and in the view drawn from it.
pub const SHOWN_TIMES: usize = 2;

/// Calls read from the store at once while a page is filled: few, since one may be megabytes.
const READ_CALLS: u32 = 8;

/// A page of a run's calls, in the order they were written, and where the next page starts
/// (`None`: this is the last).
pub(crate) struct CallPage {
    pub calls: Vec<CallRecord>,
    pub next: Option<CallCursor>,
}

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub host: IpAddr,
    pub port: u16,
    /// Required as `Authorization: Bearer TOKEN` on every route but `/health`.
    pub token: Option<String>,
    /// Debates running at once, over every client; past it a start is refused with 429.
    pub max_running: usize,
    /// The largest request body accepted.
    pub max_body_bytes: usize,
    /// Host names served besides the bound address and `localhost` (`--allow-host`).
    pub allow_hosts: Vec<String>,
    /// How long a client has to send a request's head (line and headers): from connecting for
    /// the first request, from its first byte for each later one on a kept-alive connection.
    pub header_read_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request. Never applies while a
    /// response is being sent: server-sent events last as long as their run.
    pub idle_timeout: Duration,
    /// How long a request's body may go without a byte once its head is in: past it the
    /// request is answered 408 and its connection closed.
    pub body_read_timeout: Duration,
    /// How long a request's whole body may take, from the end of its head, however steadily it
    /// trickles in (408 and closed past it).
    pub body_timeout: Duration,
    /// How long a response may wait on a client that takes none of it (no byte written): past
    /// it the connection is closed. A response with nothing to send (server-sent events between
    /// calls) is never cut.
    pub send_timeout: Duration,
    /// Bytes of responses not yet taken by their clients, over every connection together
    /// (what slow readers make the server hold). Past it, the connection whose client has
    /// taken nothing for longest is closed to make room for a new request, and a new request
    /// is answered 503 while no such connection is left.
    pub max_unsent_bytes: u64,
    /// Connections held at once (`None`: the descriptor limit, raised to its hard limit at
    /// start, less headroom for the store and the agents). At the cap, the oldest connection
    /// with no request in flight is closed to make room for the new one.
    pub max_connections: Option<usize>,
    /// Benchmark reports computed at once, over every benchmark; past it a report page is
    /// refused with 503 and `Retry-After`.
    pub max_reports: usize,
    /// What every served text that may carry a secret passes (`moot serve` gives the one its
    /// configuration makes: the agents' and the upstream's keys, `security.redact`).
    pub redactor: Arc<Redactor>,
    /// The process's Prometheus metrics, served at `/metrics` (behind the token like every
    /// route but `/health`); `None`: `/metrics` is not found.
    pub metrics: Option<Arc<moot_telemetry::Metrics>>,
}

impl Default for ServeOptions {
    fn default() -> ServeOptions {
        ServeOptions {
            host: IpAddr::from([127, 0, 0, 1]),
            port: 8001,
            token: None,
            max_running: 4,
            max_body_bytes: 1 << 20,
            allow_hosts: Vec::new(),
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_read_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            send_timeout: Duration::from_secs(30),
            max_unsent_bytes: 256 << 20,
            max_connections: None,
            max_reports: 2,
            redactor: Arc::new(Redactor::default()),
            metrics: None,
        }
    }
}

/// What every handler shares.
pub struct App {
    pub store: Arc<dyn Store>,
    pub runner: Arc<dyn Runner>,
    pub token: Option<String>,
    /// The names a request's `Host` may give.
    pub hosts: crate::hosts::HostPolicy,
    /// One permit per debate that may run.
    running: Arc<Semaphore>,
    max_running: usize,
    pub(crate) templates: minijinja::Environment<'static>,
    /// Benchmark reports, made once per state of their benchmark and shared.
    pub(crate) reports: crate::reports::Reports,
    /// Where each benchmark stands, read once and shared for a moment (see `standings`).
    pub(crate) standings: crate::standings::Standings,
    /// What every served text that may carry a secret passes.
    pub(crate) redactor: Arc<Redactor>,
    /// The followed runs' feeds of new calls.
    pub(crate) feeds: Arc<crate::feeds::Feeds>,
    /// The runs' event-stream followers, capped at half the connection cap (see `followers`).
    pub(crate) followers: Arc<crate::followers::Followers>,
    pub(crate) metrics: Option<Arc<moot_telemetry::Metrics>>,
}

impl App {
    pub fn new(store: Arc<dyn Store>, runner: Arc<dyn Runner>, options: &ServeOptions) -> App {
        let feeds = Arc::new(crate::feeds::Feeds::new(
            store.clone(),
            options.redactor.clone(),
        ));
        App {
            standings: crate::standings::Standings::new(store.clone()),
            store,
            runner: runner.clone(),
            token: options.token.clone(),
            hosts: crate::hosts::HostPolicy::new(options.host, &options.allow_hosts),
            running: Arc::new(Semaphore::new(options.max_running)),
            max_running: options.max_running,
            templates: crate::templates::templates(),
            reports: crate::reports::Reports::new(runner.clone(), options.max_reports),
            redactor: options.redactor.clone(),
            feeds,
            // Half the connections: followers of live runs never hold every one of them.
            followers: crate::followers::Followers::new(
                crate::descriptors::connections(options.max_connections) / 2,
            ),
            metrics: options.metrics.clone(),
        }
    }

    /// A stored run with a page of its calls (at most `limit` after `after`, see
    /// [`PAGE_BYTES`]), its decisions and code checks.
    pub(crate) async fn load_run(
        &self,
        id: &str,
        after: &CallCursor,
        limit: u32,
    ) -> Result<LoadedRun, StoreError> {
        let s = &self.store;
        Ok(LoadedRun {
            run: s.run(id).await?,
            calls: self.call_page(id, after, limit).await?,
            decisions: s.decisions(id).await?,
            checks: s.validations(id).await?,
        })
    }

    /// At most `limit` (1 to [`MAX_PAGE_CALLS`]) of run `id`'s calls after `after`, ending early
    /// at the call that takes the page past [`PAGE_BYTES`]; read a few at a time, so no more
    /// than the page and a few calls are ever held.
    pub(crate) async fn call_page(
        &self,
        id: &str,
        after: &CallCursor,
        limit: u32,
    ) -> Result<CallPage, StoreError> {
        let limit = limit.clamp(1, MAX_PAGE_CALLS) as usize;
        let mut calls = Vec::new();
        let mut bytes = 0usize;
        let mut cursor = after.clone();
        loop {
            let want = READ_CALLS.min((limit - calls.len()) as u32);
            let read = self.store.calls_after(id, &cursor, want).await?;
            let ended = read.len() < want as usize;
            let mut read = read.into_iter();
            for (at, call) in read.by_ref() {
                let call_bytes = serde_json::to_vec(&call).map_or(0, |v| v.len());
                bytes = bytes.saturating_add(call_bytes.saturating_mul(SHOWN_TIMES));
                calls.push(call);
                cursor = at;
                if calls.len() == limit || bytes >= PAGE_BYTES {
                    break;
                }
            }
            let full = calls.len() == limit || bytes >= PAGE_BYTES;
            if !full {
                if ended {
                    return Ok(CallPage { calls, next: None });
                }
                continue;
            }
            // Full: is there more? What was read past the page says so; else one more read.
            let more = read.next().is_some()
                || (!ended && !self.store.calls_after(id, &cursor, 1).await?.is_empty());
            return Ok(CallPage {
                calls,
                next: more.then_some(cursor),
            });
        }
    }

    /// Starts a debate if a slot is free; the slot is held until the debate ends.
    pub(crate) async fn start(&self, request: DebateRequest) -> Result<Started, StartError> {
        let checked = self.runner.check(request).map_err(StartError::Runner)?;
        let permit = self
            .running
            .clone()
            .try_acquire_owned()
            .map_err(|_| StartError::Busy(self.max_running))?;
        let mut started = self
            .runner
            .start(checked)
            .await
            .map_err(StartError::Runner)?;
        // Hold the permit until the debate ends, and pass the outcome on.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let finished = std::mem::replace(&mut started.finished, rx);
        tokio::spawn(async move {
            let outcome = finished
                .await
                .unwrap_or_else(|_| Err("the debate's task ended without a result".into()));
            drop(permit);
            let _ = tx.send(outcome);
        });
        Ok(started)
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error("{0} debates are running, the most this server runs at once; try again shortly")]
    Busy(usize),
    #[error(transparent)]
    Runner(RunnerError),
}
