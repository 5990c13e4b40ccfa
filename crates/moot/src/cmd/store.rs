//! `moot store copy SRC DST`: moves runs (with every call, decision and check), benchmarks (with
//! their items and planned jobs) and the request cache from one store to another — SQLite to
//! PostgreSQL and back. The source is only read. What the destination already holds is left as
//! it is, and each run is written whole or not at all, so a copy can be run again after an
//! interruption and completes what the first one did not.

use anyhow::{Context, Result};
use moot_core::text::plural;
use moot_store::{Access, RunFilter, Store, StoreError, StoreLocation, WholeRun};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Copy every run, benchmark and cached response from SRC to DST (a SQLite file or
    /// sqlite:// URL, or a postgres:// URL); DST is created if it is a new SQLite file or an
    /// empty PostgreSQL database.
    Copy {
        src: String,
        dst: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// What a copy did.
#[derive(Debug, Default, serde::Serialize)]
struct Copied {
    runs: u64,
    calls: u64,
    /// Runs the destination had already: left as they were.
    runs_present: u64,
    benches: u64,
    bench_items: u64,
    jobs: u64,
    cached: u64,
}

/// Runs are read a page at a time, so a large store is never held in memory whole.
const PAGE: u32 = 500;

async fn copy(src: &dyn Store, dst: &dyn Store) -> Result<Copied> {
    let mut copied = Copied::default();
    let mut page = RunFilter::newest(PAGE);
    loop {
        let runs = src.list_runs(&page).await?;
        for run in &runs {
            match dst.run(&run.id).await {
                Ok(_) => {
                    copied.runs_present += 1;
                    continue;
                }
                Err(StoreError::RunNotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
            // Read whole before anything is written, and written in one transaction: a row the
            // source cannot give or the destination refuses leaves no trace of the run there,
            // so copying again (the row mended) copies it whole instead of finding it "there".
            let whole = WholeRun {
                run: run.clone(),
                calls: src.calls(&run.id).await?,
                decisions: src.decisions(&run.id).await?,
                validations: src.validations(&run.id).await?,
            };
            let written = dst
                .record_whole_run(&whole)
                .await
                .with_context(|| format!("writing run {} to the destination", run.id))?;
            if written {
                copied.runs += 1;
                copied.calls += whole.calls.len() as u64;
            } else {
                // Written meanwhile by another copy.
                copied.runs_present += 1;
            }
        }
        if runs.len() < PAGE as usize {
            break;
        }
        page.offset += PAGE;
    }
    for bench in src.list_benches().await? {
        match dst.create_bench(&bench).await {
            Ok(()) => copied.benches += 1,
            Err(StoreError::BenchExists(_)) => {}
            Err(e) => return Err(e.into()),
        }
        for item in src.bench_items(&bench.name).await? {
            dst.record_bench_item(&item).await?;
            copied.bench_items += 1;
        }
        copied.jobs += dst.plan_jobs(&src.bench_jobs(&bench.name).await?).await?;
    }
    for (key, response) in src.cache_entries().await? {
        dst.cache_put(&key, &response).await?;
        copied.cached += 1;
    }
    Ok(copied)
}

pub fn run(command: Command, rt: &tokio::runtime::Runtime) -> Result<()> {
    let Command::Copy { src, dst, json } = command;
    let open = |spec: &str, access: Access| {
        rt.block_on(StoreLocation::parse(spec).open(access))
            .map_err(anyhow::Error::new)
            .with_context(|| format!("store {}", moot_store::redact_url(spec)))
    };
    let from = open(&src, Access::Read)?;
    let to = open(&dst, Access::Create)?;
    let result = rt.block_on(copy(from.as_ref(), to.as_ref()));
    rt.block_on(to.close());
    rt.block_on(from.close());
    let copied = result.context(
        "the copy stopped (every run copied so far is whole; copying again goes on from there)",
    )?;
    if json {
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
