//! One owner at a time, whatever the command: whether a benchmark may be run now. `moot bench`
//! run again under a benchmark's name and `moot resume NAME` ask the same question here, so a
//! benchmark whose debates a live process still runs (running, or stopped: its process exists)
//! is refused by both with the same words, and `--force` (on `resume`) is the only way past.

use moot_store::{RunRecord, RunStatus, Store, StoreError};

use crate::error::InputError;

/// Refused while a process that still lives runs one of benchmark `name`'s debates, unless
/// `force`; a benchmark the store does not hold is free. `force_with` says how to take it over
/// (`--force` on `moot resume`, `moot resume NAME --force` elsewhere).
pub async fn bench_is_free(
    store: &dyn Store,
    name: &str,
    force: bool,
    force_with: &str,
) -> anyhow::Result<()> {
    let runs = match store.bench_runs(name).await {
        Ok(runs) => runs,
        Err(StoreError::BenchNotFound(_)) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let live = runs
        .into_iter()
        .map(|(_, run)| run)
        .find(|run| run.status == RunStatus::Running && !run.interrupted());
    match live.filter(|_| !force) {
        Some(run) => Err(InputError(format!(
            "benchmark {} is still being run: {}",
            moot_core::escape::terminal(name),
            still_running(&run, force_with)
        ))
        .into()),
        None => Ok(()),
    }
}

/// Why a run whose owner is alive is not taken over: a second process would ask its calls
/// again. `force_with` says how to take it over anyway.
pub(crate) fn still_running(run: &RunRecord, force_with: &str) -> String {
    let heard = run.silent_ms.map_or(String::new(), |ms| {
        format!(", heard from {:.1} s ago", ms as f64 / 1000.0)
    });
    format!(
        "run {} is still running (process {}{heard}); running it again now would ask its calls twice. \
         It can be resumed once that process has ended (on this machine, as soon as it no longer \
         exists, even if stopped; from another machine, after {} s without a heartbeat), or now \
         with {force_with}, if you know it will not go on",
        moot_core::escape::terminal(&run.id),
        moot_core::escape::terminal(run.owner.as_deref().unwrap_or("unknown")),
        moot_store::RUN_SILENCE_LIMIT.as_secs(),
    )
}
