//! What every handler shares: the store, the runner, the token, the templates, and the slots
//! of debates that may run at once.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use moot_core::redact::Redactor;
use moot_store::Store;
use tokio::sync::Semaphore;

use moot_app::service::{DebateRequest, Runner, RunnerError, Started};

/// A run as the pages and the API read it: record, calls, decisions, code checks.
pub(crate) type LoadedRun = (
    moot_store::RunRecord,
    Vec<moot_store::CallRecord>,
    Vec<moot_store::DecisionRecord>,
    Vec<moot_store::ValidationRecord>,
);

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
            max_connections: None,
            max_reports: 2,
            redactor: Arc::new(Redactor::default()),
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
}

impl App {
    pub fn new(store: Arc<dyn Store>, runner: Arc<dyn Runner>, options: &ServeOptions) -> App {
        App {
            store,
            runner,
            token: options.token.clone(),
            hosts: crate::hosts::HostPolicy::new(options.host, &options.allow_hosts),
            running: Arc::new(Semaphore::new(options.max_running)),
            max_running: options.max_running,
            templates: crate::templates::templates(),
        }
    }

    /// A stored run with its calls, decisions and code checks.
    pub(crate) async fn load_run(&self, id: &str) -> Result<LoadedRun, moot_store::StoreError> {
        let s = &self.store;
        Ok((
            s.run(id).await?,
            s.calls(id).await?,
            s.decisions(id).await?,
            s.validations(id).await?,
        ))
    }

    /// Starts a debate if a slot is free; the slot is held until the debate ends.
    pub(crate) async fn start(&self, request: DebateRequest) -> Result<Started, StartError> {
        self.runner.check(&request).map_err(StartError::Runner)?;
        let permit = self
            .running
            .clone()
            .try_acquire_owned()
            .map_err(|_| StartError::Busy(self.max_running))?;
        let mut started = self
            .runner
            .start(request)
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
