//! `moot`: the multi-agent debate engine's command-line interface. One module per subcommand.

mod backends;
mod cmd;
mod report;

use moot::{config, input};

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use moot_store::{Store, StoreLocation};

#[derive(Debug, Parser)]
#[command(
    name = "moot",
    version,
    about = "Multi-agent debate engine",
    propagate_version = true
)]
struct Cli {
    /// Where runs are stored: a SQLite file path or sqlite:// URL (default: MOOT_STORE, else
    /// moot.db in the user's data directory).
    #[arg(long, global = true, env = "MOOT_STORE")]
    store: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ask a question: agents debate it and a decision rule picks the answer.
    Ask(cmd::ask::Args),
    /// Finish an interrupted debate without repeating completed calls.
    Resume(cmd::resume::Args),
    /// Run every item of a dataset under several protocols; the same --run name resumes.
    Bench(cmd::bench::Args),
    /// Show a stored debate as Markdown or JSON.
    Show(cmd::show::Args),
    /// Report stored benchmarks: tables as Markdown or JSON, plots as SVG.
    Report(cmd::report::Args),
    /// Decide a trajectory (or a stored run) under one decision rule or all of them.
    Decide(cmd::decide::Args),
    /// Extract the final answer from one response read on stdin.
    Extract(cmd::extract::Args),
    /// Validate or print configuration files.
    #[command(subcommand)]
    Config(cmd::config::Command),
    /// Fetch and list embedded models.
    #[command(subcommand)]
    Model(cmd::model::Command),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return input::clap_exit(e),
    };
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => input::report(&e),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

fn open_store(spec: Option<&str>, rt: &tokio::runtime::Runtime) -> Result<Box<dyn Store>> {
    let location = match spec {
        Some(s) if !s.trim().is_empty() => StoreLocation::parse(s),
        _ => StoreLocation::default_location()?,
    };
    let store = rt
        .block_on(location.open())
        .with_context(|| format!("opening the store {location:?}"))?;
    Ok(store)
}

fn dispatch(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Extract(args) => cmd::extract::run(args),
        Command::Config(c) => cmd::config::run(c),
        Command::Model(c) => cmd::model::run(c),
        Command::Decide(args) => {
            let store_spec = cli.store.clone();
            cmd::decide::run(args, |run_id: &str| {
                let rt = runtime()?;
                let store = open_store(store_spec.as_deref(), &rt)?;
                rt.block_on(async {
                    let run = store.run(run_id).await?;
                    let calls = store.calls(run_id).await?;
                    Ok::<_, moot_store::StoreError>((run, calls))
                })
                .map_err(|e| match e {
                    moot_store::StoreError::RunNotFound(_) => {
                        anyhow::Error::new(input::InputError(e.to_string()))
                    }
                    other => other.into(),
                })
                .and_then(|(run, calls)| {
                    let spec = serde_json::from_value(run.spec.clone()).with_context(|| {
                        format!("run {run_id}: the stored debate spec is unreadable")
                    })?;
                    // The run's protocol derives what rules read beyond the trajectory
                    // (SVR-MAD challenges, SID-ET early stops).
                    let protocol = config::Config::protocol_of_run(&run);
                    Ok(cmd::decide::StoredRun {
                        spec,
                        calls,
                        protocol,
                    })
                })
            })
        }
        Command::Ask(args) => {
            let rt = runtime()?;
            let store = open_store(cli.store.as_deref(), &rt)?;
            cmd::ask::run(args, store.as_ref(), &rt)
        }
        Command::Bench(args) => {
            let rt = runtime()?;
            let store = open_store(cli.store.as_deref(), &rt)?;
            cmd::bench::run(args, store.as_ref(), &rt)
        }
        Command::Resume(args) => {
            let rt = runtime()?;
            let store = open_store(cli.store.as_deref(), &rt)?;
            cmd::resume::run(args, store.as_ref(), &rt)
        }
        Command::Show(args) => {
            let rt = runtime()?;
            let store = open_store(cli.store.as_deref(), &rt)?;
            cmd::show::run(args, store.as_ref(), &rt)
        }
        Command::Report(args) => {
            let rt = runtime()?;
            let store = open_store(cli.store.as_deref(), &rt)?;
            cmd::report::run(args, store.as_ref(), &rt)
        }
    }
}
