//! `moot sweep`: a parameter sweep over simulated debates (the `moot-sweep` crate), run through
//! the application's [`Runner`] and written as `DIR/<spec stem>.md`, `.csv` and `.svg`. The front end
//! shows progress and prints the paths.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use moot_sweep::{run_plan, Plan, RunOptions, SweepError, SweepReport, SweepSpec, Written};

use crate::error::InputError;
use crate::runner::Runner;

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepRequest {
    /// The sweep spec (TOML).
    pub spec: PathBuf,
    /// Seeded debates per cell, instead of the spec's `debates`.
    pub debates: Option<usize>,
    /// Debates in flight at once (`None`: the number of CPUs).
    pub concurrency: Option<usize>,
}

/// A sweep read and planned, not yet run.
pub struct Sweep {
    pub plan: Plan,
    text: String,
    stem: String,
    pub concurrency: usize,
}

/// A sweep that ran: where its report went, and how long its debates took.
pub struct Swept {
    pub written: Written,
    /// The report's summary paragraph (Markdown).
    pub summary: String,
    pub debates: u64,
    pub wall: Duration,
}

/// Errors in the spec are the user's to fix; the rest are failures.
fn error(e: SweepError) -> anyhow::Error {
    if e.is_input() {
        InputError(e.to_string()).into()
    } else {
        e.into()
    }
}

impl Sweep {
    /// Reads and plans the spec of `request` (every cell's debates checked by building them).
    pub fn new(request: &SweepRequest) -> Result<Sweep> {
        let text = moot_sweep::spec_text(&request.spec).map_err(error)?;
        let spec = SweepSpec::parse(&text, &request.spec.display().to_string()).map_err(error)?;
        let plan = spec.plan(request.debates).map_err(error)?;
        let stem = request
            .spec
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "sweep".into());
        let concurrency = request.concurrency.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        Ok(Sweep {
            plan,
            text,
            stem,
            concurrency,
        })
    }

    /// Runs every debate (`progress(done, total)` hears each) and writes the report into
    /// `out`; `command` is the command line the report quotes.
    pub async fn run(
        self,
        out: &Path,
        command: String,
        progress: impl FnMut(usize, usize),
    ) -> Result<Swept> {
        // Simulated debates on an in-memory store: no configuration, so no sandbox and no log.
        let runner = Arc::new(Runner::bare(Default::default()));
        let started = Instant::now();
        let data = run_plan(
            &self.plan,
            runner,
            RunOptions {
                concurrency: self.concurrency,
            },
            progress,
        )
        .await
        .map_err(error)?;
        let wall = started.elapsed();
        let debates = self.plan.total_debates();
        let report = SweepReport::new(self.plan, &data, command, self.text);
        let written = report.write(out, &self.stem).map_err(error)?;
        Ok(Swept {
            summary: report.summary(),
            written,
            debates,
            wall,
        })
    }
}
