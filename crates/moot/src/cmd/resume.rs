//! `moot resume RUN`: finish an interrupted debate without repeating completed calls.

use anyhow::{Context, Result};
use moot_core::debate::DebateSpec;
use moot_store::{RunStatus, Store};

use crate::backends;
use crate::cmd::ask::{execute, Execution};
use crate::config::Config;
use crate::input::bad_input;
use crate::report::Progress;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run id (as printed by `moot ask`).
    run: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let (run, calls) = rt.block_on(async {
        let run = store.run(&args.run).await?;
        let calls = store.calls(&args.run).await?;
        Ok::<_, moot_store::StoreError>((run, calls))
    })?;
    if run.status == RunStatus::Done {
        return bad_input(format!(
            "run {} is already finished (answer: {}); see `moot show {}`",
            run.id,
            run.answer.as_deref().unwrap_or("none"),
            run.id
        ));
    }
    let config: Config = serde_json::from_value(run.config.clone())
        .with_context(|| format!("run {}: the stored configuration is unreadable", run.id))?;
    let spec: DebateSpec = serde_json::from_value(run.spec.clone())
        .with_context(|| format!("run {}: the stored debate spec is unreadable", run.id))?;
    let done = calls.len();
    let progress = Progress::new(spec.rounds, args.json);
    let agents = backends::build(&config, spec.kind, &mut |m| {
        progress.message(m);
        eprintln!("{m}");
    })?;
    if !args.json {
        eprintln!("resuming {} with {done} completed calls", run.id);
    }
    execute(Execution {
        store,
        rt,
        run_id: run.id,
        config,
        spec,
        agents,
        restore: Some(calls),
        json: args.json,
        progress,
    })
}
