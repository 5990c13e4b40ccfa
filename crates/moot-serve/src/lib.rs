//! `moot-serve`: `moot serve`'s server. One axum router holds
//! - the pages (`pages`): runs, a run with its grid and why its answer won, a form that starts a
//!   debate and follows it live, a configuration checker;
//! - the JSON API (`api`): start a debate, read a run, follow its calls as server-sent events;
//! - an OpenAI-compatible endpoint (`openai`) whose models are debate teams.
//!
//! Debates are started through a [`Runner`] (`moot_app::service::DebateService` in `moot
//! serve`, any other in tests); everything shown is read back from the store, so runs written by other moot
//! processes show the same way, live ones included.
//!
//! Safety (`safety`, `hosts`): only Host names of this server are served (DNS rebinding), and
//! no request from another site's page may change anything; loopback unless a token is set;
//! with a token, every route but `/health` needs it; model text is escaped by the templates; a
//! strict Content-Security-Policy; request bodies are capped; at most `max_running` debates run
//! at once (429 with `Retry-After` past it). Slow and idle clients (`listen`, our own accept
//! loop over hyper): a request head must arrive within `header_read_timeout` and a kept-alive
//! connection is closed after `idle_timeout` with no request (a response being sent is never
//! cut); the descriptor limit is raised to its hard limit and connections are capped below it,
//! the oldest half-open one (no request in flight) closed to make room; running out of
//! descriptors closes one and backs off rather than ending or spinning the loop; the kernel
//! queues a burst of 4,096 connections (tokio's default: 128) until they are accepted.

mod api;
mod app;
mod benches;
mod error;
mod feeds;
mod hosts;
mod listen;
mod openai;
mod pages;
mod redaction;
mod reports;
mod safety;
mod templates;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;

pub use app::{App, ServeOptions};
pub use error::ServeError;
pub use listen::{bind, raise_descriptor_limit, serve};
pub use moot_app::service::{
    AgentsChoice, BenchReport, DebateRequest, Runner, RunnerError, Started, Team,
};
pub use safety::check_binding;

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
        .route("/health", get(|| async { "ok" }))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            safety::check_host_and_origin,
        ));
    safety::harden(routes, options.max_body_bytes, options.redactor.clone()).with_state(app)
}
