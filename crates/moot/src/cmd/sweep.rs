//! `moot sweep`: a parameter sweep over simulated debates (see the `moot-sweep` crate), written
//! as DIR/<spec stem>.md, .csv and .svg.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use moot_sweep::{run_plan, RunOptions, SweepError, SweepReport, SweepSpec};

use crate::input::InputError;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The sweep spec (TOML): title, debates per cell, team, arms, the x axis and optionally y.
    spec: PathBuf,
    /// Directory for <spec stem>.md, .csv and .svg (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Seeded debates per cell, instead of the spec's `debates`.
    #[arg(long, value_parser = crate::input::positive_count)]
    debates: Option<usize>,
    /// Debates in flight at once (default: the number of CPUs).
    #[arg(long, value_parser = crate::input::positive_count)]
    concurrency: Option<usize>,
}

/// Errors in the spec are the user's to fix (exit 2); the rest are failures.
fn error(e: SweepError) -> anyhow::Error {
    if e.is_input() {
        InputError(e.to_string()).into()
    } else {
        e.into()
    }
}

pub fn run(args: Args, rt: &tokio::runtime::Runtime) -> Result<()> {
    let text = moot_sweep::spec_text(&args.spec).map_err(error)?;
    let spec = SweepSpec::parse(&text, &args.spec.display().to_string()).map_err(error)?;
    let plan = spec.plan(args.debates).map_err(error)?;
    let stem = args
        .spec
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "sweep".into());
    let concurrency = args.concurrency.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let total = plan.total_debates();
    errln!(
        "{}: {} × {} debates ({} in all), {concurrency} at a time",
        plan.title,
        moot_core::text::plural(plan.cells.len(), "cell"),
        plan.debates,
        total
    );
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} debates, {per_sec}, {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    let data = rt
        .block_on(run_plan(&plan, RunOptions { concurrency }, |done, _| {
            bar.set_position(done as u64)
        }))
        .map_err(error)?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    errln!(
        "ran {total} debates in {seconds:.1} s ({:.0} debates/s)",
        total as f64 / seconds.max(1e-9)
    );
    let report = SweepReport::new(plan, &data, command_line(), text);
    let written = report.write(&args.out, &stem).map_err(error)?;
    for path in [&written.markdown, &written.csv, &written.svg] {
        outln!("{}", path.display());
    }
    Ok(())
}

/// The command as typed, for the report: `moot sweep …`, arguments quoted for a POSIX shell
/// where they need it.
fn command_line() -> String {
    let quote = |a: String| {
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
        if plain {
            a
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        }
    };
    std::iter::once("moot".to_string())
        .chain(std::env::args().skip(1).map(quote))
        .collect::<Vec<_>>()
        .join(" ")
}
