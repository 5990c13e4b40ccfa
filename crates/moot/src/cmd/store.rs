//! `moot store copy SRC DST`: moves runs, benchmarks and the request cache from one store to
//! another, SQLite to PostgreSQL and back (`moot_app::store_copy`); a copy run again after an
//! interruption completes what the first one did not.

use anyhow::Result;
use moot_core::text::plural;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Copy every run, benchmark and cached response from SRC to DST (a SQLite file or
    /// sqlite:// URL, or a postgres:// URL); DST is created if it is a new SQLite file or an
    /// empty PostgreSQL database.
    Copy {
        src: String,
        dst: String,
        #[command(flatten)]
        output: crate::flags::Json,
    },
}

pub fn run(command: Command, rt: &tokio::runtime::Runtime) -> Result<()> {
    let Command::Copy { src, dst, output } = command;
    let mut meter = crate::progress::meter::Meter::new(
        "store copy",
        &[("runs".to_string(), None)],
        output.json,
    );
    let copied = rt.block_on(moot_app::store_copy::copy_between(&src, &dst, &mut |c| {
        if let Some(bar) = meter.bar(0) {
            bar.set_position(c.runs + c.runs_present);
            bar.set_message(format!("{} copied, {} calls", c.runs, c.calls));
        }
    }))?;
    meter.finish();
    if output.json {
        outln!("{}", serde_json::to_string(&copied)?);
    } else {
        outln!(
            "copied {} ({}), {} ({} items, {} planned jobs) and {} from {} to {}{}",
            plural(copied.runs as usize, "run"),
            plural(copied.calls as usize, "call"),
            plural(copied.benches as usize, "benchmark"),
            copied.bench_items,
            copied.jobs,
            plural(copied.cached as usize, "cached response"),
            moot_store::redact_url(&src),
            moot_store::redact_url(&dst),
            if copied.runs_present > 0 {
                format!(
                    "; {} already there left as {}",
                    plural(copied.runs_present as usize, "run"),
                    if copied.runs_present == 1 {
                        "it was"
                    } else {
                        "they were"
                    }
                )
            } else {
                String::new()
            }
        );
    }
    Ok(())
}
