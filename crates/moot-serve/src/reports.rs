//! Benchmark reports, made once per state of their benchmark and shared.
//!
//! A report reads every debate of its benchmark and decides, grades and plots them all: one of
//! a 6,000-debate benchmark took 12.7 s of CPU, and the page and each of its plots made it
//! again, so 12 plot requests at once peaked at 4.7 GB. Here a report is kept with the state
//! of the benchmark it was made from (a digest of its debates' links, statuses, answers and
//! finishing times): requests for the same state share it, those that come while it is being
//! made wait for that one making, and a debate that finishes (or is resumed, re-decided or
//! re-linked) makes the next request make it again. At most `max_reports` are made at once,
//! over every benchmark; a request that would make one more is refused (503, `Retry-After`).
//! A report is made on the blocking pool, off the threads that answer requests, and goes on
//! when the request that started it goes away. A kept report is made again after
//! [`FRESH_FOR`] whatever the state: a regrade changes verdicts and not the debates' rows.

use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt};
use moot_app::service::{BenchReport, Runner, RunnerError};
use tokio::sync::Semaphore;

use crate::shelf::Shelf;

/// How long a report is kept for a state that has not changed.
pub const FRESH_FOR: Duration = Duration::from_secs(300);

/// How long a client refused for want of a free making is told to wait.
pub const RETRY_AFTER_SECS: u64 = 5;

/// Why there is no report to show.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReportError {
    #[error("{0} benchmark reports are being made, the most this server makes at once; try again shortly")]
    Busy(usize),
    /// The runner refused the name (no such benchmark).
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Internal(String),
}

/// A report, or why there is none; `None`: no debate of the benchmark has finished.
pub type Made = Result<Option<Arc<BenchReport>>, ReportError>;

/// The reports kept, and the slots for making them.
pub struct Reports {
    runner: Arc<dyn Runner>,
    slots: Arc<Semaphore>,
    max: usize,
    kept: Shelf<u64, Made>,
}

impl Reports {
    pub fn new(runner: Arc<dyn Runner>, max: usize) -> Reports {
        let max = max.max(1);
        Reports {
            runner,
            slots: Arc::new(Semaphore::new(max)),
            max,
            kept: Shelf::new(),
        }
    }

    /// The report of benchmark `name` in `state`: the kept one, the one being made, or a new
    /// one if a slot is free.
    pub async fn get(&self, name: &str, state: u64) -> Made {
        let report = self.kept.share(name, state, FRESH_FOR, || {
            let slot = self
                .slots
                .clone()
                .try_acquire_owned()
                .map_err(|_| ReportError::Busy(self.max))?;
            Ok(self.make(name, slot))
        })?;
        let made = report.await;
        if matches!(made, Err(ReportError::Internal(_))) {
            self.kept.forget(name, &state);
        }
        made
    }

    /// Makes the report on the blocking pool, holding `slot` until it is made.
    fn make(
        &self,
        name: &str,
        slot: tokio::sync::OwnedSemaphorePermit,
    ) -> BoxFuture<'static, Made> {
        let runner = self.runner.clone();
        let name = name.to_string();
        let runtime = tokio::runtime::Handle::current();
        let task = tokio::task::spawn_blocking(move || {
            let made = runtime.block_on(runner.bench_report(&name));
            drop(slot);
            made
        });
        async move {
            match task.await {
                Ok(Ok(report)) => Ok(report.map(Arc::new)),
                Ok(Err(RunnerError::BadRequest(m) | RunnerError::BadParam { message: m, .. })) => {
                    Err(ReportError::NotFound(m))
                }
                Ok(Err(RunnerError::Internal(m) | RunnerError::Unavailable(m))) => {
                    Err(ReportError::Internal(m))
                }
                Err(e) => Err(ReportError::Internal(format!(
                    "making the report failed: {e}"
                ))),
            }
        }
        .boxed()
    }
}
