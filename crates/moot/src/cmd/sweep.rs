//! `moot sweep`: a parameter sweep over simulated debates (see the `moot-sweep` crate), written
//! as DIR/<spec stem>.md, .csv and .svg.

use std::path::PathBuf;

use anyhow::Result;
use moot_app::sweep::{Sweep, SweepRequest};

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

pub fn run(args: Args, rt: &tokio::runtime::Runtime) -> Result<()> {
    let sweep = Sweep::new(&SweepRequest {
        spec: args.spec,
        debates: args.debates,
        concurrency: args.concurrency,
    })?;
    let total = sweep.plan.total_debates();
    errln!(
        "{}: {} × {} debates ({} in all), {} at a time",
        sweep.plan.title,
        moot_core::text::plural(sweep.plan.cells.len(), "cell"),
        sweep.plan.debates,
        total,
        sweep.concurrency
    );
    let mut meter = crate::progress::meter::Meter::new(
        &format!("sweep {}", sweep.plan.title),
        &[("debates".to_string(), Some(total))],
        false,
    );
    let swept = rt.block_on(sweep.run(&args.out, command_line(), |done, _| {
        if let Some(bar) = meter.bar(0) {
            bar.set_position(done as u64);
        }
    }))?;
    meter.finish();
    let seconds = swept.wall.as_secs_f64();
    errln!(
        "ran {} debates in {seconds:.1} s ({:.0} debates/s)",
        swept.debates,
        swept.debates as f64 / seconds.max(1e-9)
    );
    // What it found first, then where the tables and the plot are.
    outln!("{}\n", moot_core::escape::terminal(&swept.summary));
    let written = &swept.written;
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
