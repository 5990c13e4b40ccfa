//! `moot store copy SRC DST`: moves runs, benchmarks and the request cache from one store to
//! another, SQLite to PostgreSQL and back (`moot_app::store_copy`); a copy run again after an
//! interruption completes what the first one did not. `moot store path` says which store the
//! other commands use and whether it exists; `moot store init` creates it empty (for `moot
//! serve`, which never creates one).

use anyhow::Result;
use moot_app::prepare::{StoreArg, StoreSource};
use moot_core::text::plural;
use moot_store::{Access, StoreError, StoreLocation};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Copy every run, benchmark and cached response from SRC to DST (a SQLite file or
    /// sqlite:// URL, or a postgres:// URL); DST is created if it is a new SQLite file or an
    /// empty PostgreSQL database.
    Copy {
        /// The store to copy from (read only: left as it was).
        src: String,
        /// The store to copy into.
        dst: String,
        #[command(flatten)]
        output: crate::flags::Json,
    },
    /// Print the store the other commands use (from --store, else MOOT_STORE, else the
    /// default in the user's data directory) on stdout, and on stderr where it was named and
    /// whether a store is there.
    Path {
        #[command(flatten)]
        output: crate::flags::Json,
        #[command(flatten)]
        store: crate::flags::Store,
    },
    /// Create the store the other commands use, empty, as `moot ask` would (one that exists
    /// keeps what it holds): what `moot serve` needs before the first debate is asked.
    Init {
        #[command(flatten)]
        store: crate::flags::Store,
    },
}

pub fn run(command: Command, store: &StoreArg, rt: &tokio::runtime::Runtime) -> Result<()> {
    let (src, dst, output) = match command {
        Command::Copy { src, dst, output } => (src, dst, output),
        Command::Path { output, .. } => return path(store, output.json, rt),
        Command::Init { .. } => return init(store, rt),
    };
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

/// `moot store path`.
fn path(store: &StoreArg, json: bool, rt: &tokio::runtime::Runtime) -> Result<()> {
    let location = store.location()?;
    let shown = store.shown();
    let from = match store.source() {
        StoreSource::Flag => "--store",
        StoreSource::Env => "MOOT_STORE",
        StoreSource::Default => "the default location (neither --store nor MOOT_STORE is set)",
    };
    // Opened to read, as `moot show` opens it: never created or changed.
    let (exists, state) = match &location {
        StoreLocation::Memory => (
            false,
            "kept in each command's process only: nothing is there between commands".to_string(),
        ),
        _ => match rt.block_on(location.open(Access::Read)) {
            Ok(opened) => {
                rt.block_on(opened.close());
                (true, "a store is there".to_string())
            }
            Err(StoreError::NotFound { .. }) => (
                false,
                "no store there yet (moot ask, moot bench or moot store init creates it)"
                    .to_string(),
            ),
            Err(e) => (false, format!("it cannot be used: {e}")),
        },
    };
    if json {
        outln!(
            "{}",
            serde_json::json!({
                "store": shown,
                "from": store.source(),
                "exists": exists,
            })
        );
    } else {
        outln!("{shown}");
        errln!("moot store: from {from}; {state}");
    }
    Ok(())
}

/// `moot store init`.
fn init(store: &StoreArg, rt: &tokio::runtime::Runtime) -> Result<()> {
    let location = store.location()?;
    if location == StoreLocation::Memory {
        return moot_app::bad_input(
            "memory: keeps nothing between commands, so there is nothing to create",
        );
    }
    let existed = match rt.block_on(location.open(Access::Read)) {
        Ok(opened) => {
            rt.block_on(opened.close());
            true
        }
        Err(_) => false,
    };
    store.with(Access::Create, |_, _| Ok(()))?;
    if existed {
        outln!("a store is already at {}: left as it was", store.shown());
    } else {
        outln!("created the store {}", store.shown());
    }
    Ok(())
}
