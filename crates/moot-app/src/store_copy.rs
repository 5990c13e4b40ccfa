//! Runs (with every call, decision and check), benchmarks (with their items and planned jobs)
//! and the request cache copied from one store to another — SQLite to PostgreSQL and back
//! (`moot store copy`). The source is only read. What the destination already holds is left as
//! it is, and each run is written whole or not at all, so a copy can be run again after an
//! interruption and completes what the first one did not.

use anyhow::{Context, Result};
use moot_store::{Access, RunFilter, Store, StoreError, StoreLocation, WholeRun};

/// Copies everything from the store at `src` to the store at `dst` (each a SQLite file or
/// sqlite:// URL, or a postgres:// URL; `dst` is created if it is a new SQLite file or an empty
/// PostgreSQL database). Both stores are closed after, whatever happened.
pub async fn copy_between(
    src: &str,
    dst: &str,
    on_progress: &mut dyn FnMut(&Copied),
) -> Result<Copied> {
    let from = open(src, Access::Read).await?;
    let to = open(dst, Access::Create).await?;
    let result = copy(from.as_ref(), to.as_ref(), on_progress).await;
    to.close().await;
    from.close().await;
    result.context(
        "the copy stopped (every run copied so far is whole; copying again goes on from there)",
    )
}

/// What a copy did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Copied {
    pub runs: u64,
    pub calls: u64,
    /// Runs the destination had already: left as they were.
    pub runs_present: u64,
    pub benches: u64,
    pub bench_items: u64,
    pub jobs: u64,
    pub cached: u64,
}

/// Runs are read a page at a time, so a large store is never held in memory whole.
const PAGE: u32 = 500;

/// The store at `spec`, opened for `access`; errors name it (its password left out).
async fn open(spec: &str, access: Access) -> Result<Box<dyn Store>> {
    StoreLocation::parse(spec)
        .open(access)
        .await
        .map_err(anyhow::Error::new)
        .with_context(|| format!("store {}", moot_store::redact_url(spec)))
}

/// Copies what `dst` lacks of `src`.
/// `on_progress` hears the counts after each run.
async fn copy(
    src: &dyn Store,
    dst: &dyn Store,
    on_progress: &mut dyn FnMut(&Copied),
) -> Result<Copied> {
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
            on_progress(&copied);
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
