//! `moot serve`: the web dashboard, the JSON API and the OpenAI-compatible endpoint
//! (`moot-serve`), with debates run by the application layer's `DebateService`.

use std::net::IpAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use moot_app::prepare::StoreArg;
use moot_app::service::DebateService;
use moot_serve::ServeOptions;

#[derive(Debug, clap::Args)]
pub struct Args {
    // The team, protocol and settings debates start from.
    #[command(flatten)]
    config: crate::flags::ConfigFile,
    /// Address to listen on; anything but loopback needs --token.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port (0 picks a free one).
    #[arg(long, default_value_t = 8001)]
    port: u16,
    /// Every route but /health then needs `Authorization: Bearer TOKEN`.
    #[arg(long, env = "MOOT_SERVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Debates running at once; more are refused with 429 and Retry-After.
    #[arg(long, default_value_t = 4, value_parser = crate::input::positive_count)]
    max_running: usize,
    /// A host name to serve besides the bound address and localhost (repeatable): the name
    /// clients use when the server sits behind one. Requests naming any other host are refused
    /// (DNS rebinding).
    #[arg(long = "allow-host", value_name = "HOST", value_parser = moot_serve::allowed_host)]
    allow_hosts: Vec<String>,
    #[command(flatten)]
    store: crate::flags::Store,
}

/// Serves the store `store` names, which must exist (`moot serve` never creates one), opened
/// once what is given has been checked (the configuration, the address and its token), so
/// that a mistake there is said first.
pub fn run(
    args: Args,
    store: &StoreArg,
    rt: &tokio::runtime::Runtime,
    metrics: Option<Arc<moot_telemetry::Metrics>>,
) -> Result<()> {
    let config = args.config.load()?;
    // What it serves passes the same redactor as what it prints: the agents' and the
    // upstream's keys, the environment's secrets, `security.redact`.
    let redactor = config.redactor()?;
    let options = ServeOptions {
        host: args.host,
        port: args.port,
        token: args.token.filter(|t| !t.is_empty()),
        max_running: args.max_running,
        allow_hosts: args.allow_hosts,
        redactor: Arc::new(redactor),
        metrics,
        ..ServeOptions::default()
    };
    let (listener, addr) = rt
        .block_on(moot_serve::bind(&options))
        .map_err(|e| match e {
            moot_serve::ServeError::Refused(m) => anyhow::Error::new(moot_app::InputError(m)),
            other => other.into(),
        })?;
    let store = store.open_for_serving(rt, &mut |m| errln!("moot serve: {m}"))?;
    let runner = Arc::new(DebateService::new(
        config,
        store.clone(),
        Arc::new(|warning: &str| errln!("moot serve: {warning}")),
    ));
    rt.block_on(async {
        // The first line, for scripts and tests that start the server on port 0.
        outln!("moot serve: http://{addr}");
        let app = Arc::new(moot_serve::App::new(store, runner, &options));
        moot_serve::serve(listener, moot_serve::router(app, &options), &options)
            .await
            .context("moot serve")
    })
}
