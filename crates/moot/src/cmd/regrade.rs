//! `moot regrade RUN|BENCH`: grade the stored programs of a run, or of every debate of a
//! benchmark, again with today's grader (`moot_app::regrade`), and say which verdicts changed.

use anyhow::Result;
use moot_app::regrade::regrade;
use moot_store::Store;

use crate::flags;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run id, or a benchmark's name (every debate of it).
    run: String,
    #[command(flatten)]
    data_dir: flags::DataDir,
    #[command(flatten)]
    output: flags::Json,
    #[command(flatten)]
    config: flags::LocalConfig,
    #[command(flatten)]
    store: crate::flags::Store,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let json = args.output.json;
    let local = args.config.load()?;
    let done = rt.block_on(regrade(
        store,
        &args.run,
        args.data_dir.data_dir,
        &local,
        moot_config::Via::Cli,
        &mut |m| errln!("{}", moot_core::escape::terminal(m)),
        &mut |run_id, r| {
            if json {
                return;
            }
            let before = r
                .before
                .as_ref()
                .map_or("not checked".to_string(), |b| b.verdict.to_string());
            let detail = if r.after.detail.is_empty() {
                String::new()
            } else {
                format!(" ({})", r.after.detail)
            };
            outln!(
                "{run_id}  {before} -> {}{detail}  {}",
                r.after.verdict,
                first_line(&r.program)
            );
        },
    ))?;
    if json {
        outln!("{}", moot_core::escape::json(&done.json().to_string()));
    } else {
        outln!(
            "regraded {} programs of {} debates: {} verdicts changed",
            done.programs,
            done.debates,
            done.changed.len()
        );
    }
    Ok(())
}

/// The program's first line that says what it is (its first `def` or `class`), for the listing.
fn first_line(program: &str) -> &str {
    program
        .lines()
        .find(|l| l.starts_with("def ") || l.starts_with("class "))
        .or_else(|| program.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .trim()
}
