//! `moot-serve`: `moot serve`'s server. One axum router holds
//! - the pages (`pages`): runs, a run with its grid and why its answer won, a form that starts a
//!   debate and follows it live, a configuration checker;
//! - the JSON API (`api`): start a debate, read a run, follow its calls as server-sent events;
//! - an OpenAI-compatible endpoint (`openai`) whose models are debate teams.
//!
//! Debates are started through a [`Runner`] the binary provides (it owns agents, models and the
//! configuration); everything shown is read back from the store, so runs written by other moot
//! processes show the same way, live ones included.
//!
//! Safety (`safety`): loopback unless a token is set; with a token, every route but `/health`
//! needs it; model text is escaped by the templates; a strict Content-Security-Policy; request
//! bodies are capped; at most `max_running` debates run at once (429 with `Retry-After` past it).

mod api;
mod openai;
mod pages;
mod runner;
mod safety;
pub mod view;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use moot_store::Store;
use tokio::sync::Semaphore;

pub use runner::{DebateRequest, Runner, RunnerError, Started, Team};
pub use safety::check_binding;

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
}

impl Default for ServeOptions {
    fn default() -> ServeOptions {
        ServeOptions {
            host: IpAddr::from([127, 0, 0, 1]),
            port: 8001,
            token: None,
            max_running: 4,
            max_body_bytes: 1 << 20,
        }
    }
}

/// What every handler shares.
pub struct App {
    pub store: Arc<dyn Store>,
    pub runner: Arc<dyn Runner>,
    pub token: Option<String>,
    /// One permit per debate that may run.
    running: Arc<Semaphore>,
    max_running: usize,
    templates: minijinja::Environment<'static>,
}

impl App {
    pub fn new(store: Arc<dyn Store>, runner: Arc<dyn Runner>, options: &ServeOptions) -> App {
        App {
            store,
            runner,
            token: options.token.clone(),
            running: Arc::new(Semaphore::new(options.max_running)),
            max_running: options.max_running,
            templates: pages::templates(),
        }
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

/// Every route, with the safety layers around them.
pub fn router(app: Arc<App>, options: &ServeOptions) -> Router {
    let routes = Router::new()
        .route("/", get(pages::runs))
        // Benchmark runs have ids with slashes (`bench/protocol/item`).
        .route("/runs/{*id}", get(pages::run))
        .route("/new", get(pages::new_form).post(pages::new_submit))
        .route(
            "/config",
            get(pages::config_form).post(pages::config_submit),
        )
        .route("/static/moot.js", get(pages::script))
        .route("/static/moot.css", get(pages::style))
        .route("/api/runs", post(api::start).get(api::list))
        .route("/api/runs/{*path}", get(api::run_path))
        .route("/v1/models", get(openai::models))
        .route("/v1/chat/completions", post(openai::chat))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            safety::require_token,
        ))
        .route("/health", get(|| async { "ok" }));
    safety::harden(routes, options.max_body_bytes).with_state(app)
}

/// Binds `options.host:options.port` (port 0: a free one), refusing a non-loopback address
/// without a token; returns the listener and the address it got.
pub async fn bind(
    options: &ServeOptions,
) -> Result<(tokio::net::TcpListener, SocketAddr), ServeError> {
    check_binding(options.host, options.token.as_deref())?;
    let listener = tokio::net::TcpListener::bind((options.host, options.port))
        .await
        .map_err(|e| ServeError::Bind(format!("{}:{}: {e}", options.host, options.port)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ServeError::Bind(e.to_string()))?;
    Ok((listener, addr))
}

/// Serves until the process ends.
pub async fn serve(listener: tokio::net::TcpListener, router: Router) -> Result<(), ServeError> {
    axum::serve(listener, router)
        .await
        .map_err(|e| ServeError::Serve(e.to_string()))
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Refused(String),
    #[error("cannot listen on {0}")]
    Bind(String),
    #[error("serving: {0}")]
    Serve(String),
}
