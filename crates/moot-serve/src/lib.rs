//! `moot-serve`: `moot serve`'s server. One axum router holds
//! - the pages (`pages`): runs, a run with its grid and why its answer won, a form that starts a
//!   debate and follows it live, a configuration checker;
//! - the JSON API (`api`): start a debate, read a run, follow its calls as server-sent events;
//! - an OpenAI-compatible endpoint (`openai`) whose models are debate teams;
//! - the pages where a person answers for an agent (`people`).
//!
//! Debates are started through a [`Runner`] (`moot_app::service::DebateService` in `moot
//! serve`, any other in tests); everything shown is read back from the store, so runs written by other moot
//! processes show the same way, live ones included.
//!
//! Safety (`safety`, `hosts`): only Host names of this server are served (DNS rebinding), and a
//! request whose Host cannot be read — none, two, not text, not `name[:port]` or
//! `[v6][:port]` — is refused (400), as is a request line naming another host; no request from
//! another site's page may change anything; loopback unless a token is set; with a token, every
//! route but `/health` needs it; model text is escaped by the templates; a strict
//! Content-Security-Policy; at most `max_running` debates run at once (429 with `Retry-After`
//! past it).
//!
//! Every request is bounded before work starts; each bound below is a field of [`ServeOptions`]
//! or a constant named here.
//! - **Heads** (`listen`): a request head must arrive within `header_read_timeout`; a
//!   kept-alive connection is closed after `idle_timeout` with no request; connections are
//!   capped below the descriptor limit (raised to its hard limit at start), the oldest
//!   half-open one closed to make room; running out of descriptors closes one and backs off
//!   rather than ending or spinning the loop; the kernel queues a burst of 4,096 connections.
//! - **Bodies** (`listen`, `safety`): at most `max_body_bytes`; a body with no byte for
//!   `body_read_timeout`, or not whole `body_timeout` after its head, is answered 408 and its
//!   connection closed; until its body is whole a connection counts as half-open, shed at the
//!   cap like a stalled head.
//! - **Slow readers** (`listen`): a connection whose client takes no byte of its response for
//!   `send_timeout` is closed and what was buffered for it freed; a response with nothing to
//!   send (server-sent events between calls) is never cut. What responses hold until their
//!   clients take it counts against one budget for the whole server (`max_unsent_bytes`):
//!   past it, a new request closes the connections stalled longest, or is answered 503.
//! - **Benchmarks** (`standings`): a benchmark's debates are read once per change of them and
//!   shared by its page, plots and the list; its page shows 200 items at a time.
//! - **Large runs** (`api`, `pages`): `/api/runs/ID` and the run page are paged: at most
//!   `?limit=` calls (100 unless asked, 500 at most) and about 1 MiB a page in all, with a
//!   link to the next; one call is the most a page holds beyond that, whatever the run's size.
//! - **Reports** (`reports`): a benchmark's report is made once per state of the benchmark and
//!   shared by its page and plots and by every request for that state; at most `max_reports`
//!   are made at once (503 with `Retry-After` past it), off the threads that answer requests.
//! - **Followers** (`feeds`): the followers of one run share one reader of its new calls,
//!   which ends with the run or its last follower; a follower reads from the store only to
//!   catch up.
//! - **Secrets** (`redaction`): every whole response, page and event passes `redactor`.

mod api;
mod app;
mod benches;
mod descriptors;
mod error;
mod feeds;
mod followers;
mod hosts;
mod links;
mod listen;
mod openai;
mod pages;
mod people;
mod redaction;
mod reports;
mod safety;
mod shelf;
mod standings;
mod templates;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;

pub use app::{App, ServeOptions};
pub use descriptors::raise_descriptor_limit;
pub use error::ServeError;
pub use hosts::allowed_host;
pub use listen::{bind, serve};
pub use moot_app::service::{
    AgentsChoice, BenchReport, Checked, DebateRequest, Runner, RunnerError, Started, Team,
};
pub use safety::check_binding;

/// The process's metrics as OpenMetrics text, for Prometheus (which sends the token as a
/// bearer like any client).
async fn metrics_text(
    axum::extract::State(app): axum::extract::State<Arc<App>>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match &app.metrics {
        // Labels hold model and agent names from the configuration: they pass the redactor
        // as every other served text does (its body layer leaves this content type alone).
        Some(m) => (
            [(
                axum::http::header::CONTENT_TYPE,
                moot_telemetry::CONTENT_TYPE,
            )],
            app.redactor.redact(&m.encode()).into_owned(),
        )
            .into_response(),
        None => (axum::http::StatusCode::NOT_FOUND, "metrics are off\n").into_response(),
    }
}

/// Every route, with the safety layers around them.
pub fn router(app: Arc<App>, options: &ServeOptions) -> Router {
    let routes = Router::new()
        .route("/", get(pages::runs))
        // Benchmark runs have ids with slashes (`bench/protocol/item`).
        .route("/runs/{*id}", get(pages::run))
        .route("/new", get(pages::new_form).post(pages::new_submit))
        .route("/benches", get(benches::list))
        .route("/benches/{name}", get(benches::show))
        .route("/benches/{name}/plots/{file}", get(benches::plot))
        .route(
            "/config",
            get(pages::config_form).post(pages::config_submit),
        )
        .route("/people", get(people::list))
        .route("/people/{id}", get(people::show).post(people::reply))
        .route("/static/moot.js", get(pages::script))
        .route("/static/moot.css", get(pages::style))
        .route("/api/runs", post(api::start).get(api::list))
        .route("/api/runs/{*path}", get(api::run_path))
        .route("/v1/models", get(openai::models))
        .route("/v1/chat/completions", post(openai::chat))
        .route("/metrics", get(metrics_text))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed);
    guarded(routes, app, options)
}

/// Which part of the server a path is under, for the shape of its errors: OpenAI clients read
/// `{"error": {"message", "type"}}` under `/v1`, the JSON API answers `{"error"}` under `/api`,
/// and a person reads text everywhere else.
enum Surface {
    OpenAi,
    Api,
    Page,
}

fn surface(path: &str) -> Surface {
    let under = |root: &str| path == root || path.starts_with(&format!("{root}/"));
    if under("/v1") {
        Surface::OpenAi
    } else if under("/api") {
        Surface::Api
    } else {
        Surface::Page
    }
}

/// Every route that does not exist: 404 with a body that says so, in the shape of the part
/// of the server asked (an empty 404 tells a person or a client nothing).
async fn not_found(uri: axum::http::Uri) -> axum::response::Response {
    let path = uri.path();
    let message = format!(
        "no page at {}: the runs are at /, the JSON API under /api/runs and the OpenAI-compatible endpoint under /v1",
        shown_path(path)
    );
    match surface(path) {
        Surface::OpenAi => openai::not_found(path),
        Surface::Api => api::error(axum::http::StatusCode::NOT_FOUND, message),
        Surface::Page => pages::page_error(axum::http::StatusCode::NOT_FOUND, &message),
    }
}

/// A route asked with a method it does not take: 405 with a body naming the route.
async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> axum::response::Response {
    let status = axum::http::StatusCode::METHOD_NOT_ALLOWED;
    let message = format!(
        "{} {}: this route does not take {}",
        method,
        shown_path(uri.path()),
        method
    );
    match surface(uri.path()) {
        Surface::OpenAi => openai::error_body(status, message),
        Surface::Api => api::error(status, message),
        Surface::Page => pages::page_error(status, &message),
    }
}

/// A request's path as a message quotes it: at most 200 characters (a request line may be
/// long), as the client sent it (percent-encoded, so no control character comes back).
fn shown_path(path: &str) -> String {
    match path.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &path[..at]),
        None => path.to_string(),
    }
}

/// `routes` behind the token, with `/health` open, and every route behind the Host and
/// Origin checks and the bounds on requests.
fn guarded(routes: Router<Arc<App>>, app: Arc<App>, options: &ServeOptions) -> Router {
    let routes = routes
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            safety::require_token,
        ))
        .route("/health", get(|| async { "ok" }))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            safety::check_host_and_origin,
        ));
    safety::harden(routes, options.max_body_bytes, options.redactor.clone()).with_state(app)
}

/// Serves the process's `metrics` alone (`/metrics`, and `/health`) on `options`' address,
/// under `moot serve`'s rules: loopback unless a token is set, the token on `/metrics`, the
/// Host check, the bounds on requests (`moot work --metrics ADDR`). Returns the address bound
/// and the server, which runs until the process ends.
pub async fn serve_metrics(
    metrics: Arc<moot_telemetry::Metrics>,
    options: ServeOptions,
) -> Result<
    (
        std::net::SocketAddr,
        impl std::future::Future<Output = Result<(), ServeError>>,
    ),
    ServeError,
> {
    let options = ServeOptions {
        metrics: Some(metrics),
        // Nothing here starts a debate.
        max_running: 1,
        ..options
    };
    let (listener, addr) = bind(&options).await?;
    // The safety layers read what they need from an `App`; this one has no runs and starts
    // no debates.
    let app = Arc::new(App::new(
        Arc::new(moot_store::MemoryStore::default()),
        Arc::new(NoDebates),
        &options,
    ));
    let router = guarded(
        Router::new().route("/metrics", get(metrics_text)),
        app,
        &options,
    );
    Ok((addr, async move { serve(listener, router, &options).await }))
}

/// The runner of a server that starts no debates ([`serve_metrics`]).
struct NoDebates;

#[async_trait::async_trait]
impl Runner for NoDebates {
    fn check(&self, _: DebateRequest) -> Result<Checked, RunnerError> {
        Err(RunnerError::BadRequest(
            "this server starts no debates".into(),
        ))
    }
    async fn start(&self, _: Checked) -> Result<Started, RunnerError> {
        Err(RunnerError::BadRequest(
            "this server starts no debates".into(),
        ))
    }
    fn team(&self) -> Team {
        Team::default()
    }
    fn check_config(&self, _: &str) -> Result<String, String> {
        Err("this server checks no configurations".into())
    }
    async fn bench_report(&self, _: &str) -> Result<Option<BenchReport>, RunnerError> {
        Ok(None)
    }
}
