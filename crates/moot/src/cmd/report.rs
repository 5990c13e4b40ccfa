//! `moot report`: stored benchmarks read back (nothing is run) as tables in Markdown or JSON and
//! plots of accuracy against tokens and rounds in SVG.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use moot_eval::report::Report;
use moot_store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Markdown,
    Json,
    /// Each debate as one JSON line (item, gold, each round's answers, decision, correct), as
    /// lm-evaluation-harness's `--log_samples` writes them.
    Jsonl,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Benchmark names (the `--name` of `moot bench`). Several are reported together, their
    /// protocols side by side and paired on the items they share; a protocol in more than one
    /// is labelled with its rounds (`som R=2`), or its benchmark when the rounds are the same.
    #[arg(required = true, value_name = "BENCH")]
    runs: Vec<String>,
    /// The report's form (default: on a terminal, a summary and the tables aligned to its
    /// width; elsewhere Markdown).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Report every finished debate, even of items not every protocol finished (by default
    /// such items are left out, and counted, so that protocols are compared on the same items).
    #[arg(long)]
    all_items: bool,
    /// Write the report (report.md or report.json) and its plots (accuracy-vs-tokens.svg, and
    /// accuracy-vs-rounds.svg when a protocol ran more than one round) into this folder, instead
    /// of printing the report.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    store: crate::flags::Store,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let shown_on = match args.format {
        None if args.out.is_none() => crate::terminal::width(),
        _ => None,
    };
    let format = args.format.unwrap_or(Format::Markdown);
    if format == Format::Jsonl {
        let rows = rt.block_on(moot_app::bench_report::samples(
            store,
            &args.runs,
            args.all_items,
            moot_config::Via::Cli,
        ))?;
        let mut text = String::new();
        for row in rows {
            text.push_str(&row.to_string());
            text.push('\n');
        }
        return match &args.out {
            None => {
                out!("{}", moot_core::escape::json(&text));
                Ok(())
            }
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                let path = dir.join("samples.jsonl");
                std::fs::write(&path, text)
                    .with_context(|| format!("writing {}", path.display()))?;
                errln!("wrote {}", path.display());
                Ok(())
            }
        };
    }
    let report = rt.block_on(moot_app::bench_report::report(
        store,
        &args.runs,
        args.all_items,
        moot_config::Via::Cli,
    ))?;
    if report.left_out > 0 {
        let them = if report.left_out == 1 { "it" } else { "them" };
        errln!(
            "{} left out: not every protocol has finished {them} (--all-items keeps {them})",
            moot_core::text::plural(report.left_out, "item")
        );
    }
    match &args.out {
        None if shown_on.is_some() => {
            let width = shown_on.unwrap_or(80);
            let markdown = report.markdown(&[]);
            out!(
                "{}",
                moot_core::escape::terminal(&crate::terminal::report(&report, &markdown, width))
            );
        }
        None => {
            let text = render(&report, format, &[])?;
            match format {
                // JSON escapes control characters itself.
                Format::Json | Format::Jsonl => out!("{text}"),
                Format::Markdown => out!("{}", moot_core::escape::terminal(&text)),
            }
        }
        Some(dir) => write_report(&report, format, dir)?,
    }
    Ok(())
}

/// The report in `format`, embedding `plots` (Markdown only).
fn render(report: &Report, format: Format, plots: &[(&str, &str)]) -> Result<String> {
    Ok(match format {
        Format::Markdown => report.markdown(plots),
        Format::Json | Format::Jsonl => format!(
            "{}\n",
            moot_core::escape::json(
                &serde_json::to_string_pretty(report).context("serialising the report")?
            )
        ),
    })
}

fn write_report(report: &Report, format: Format, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let plots = moot_app::bench_report::plots(report)?;
    for (_, file, svg) in &plots {
        let path = dir.join(file);
        moot_files::write_output(&path, svg)?;
        errln!("wrote {}", path.display());
    }
    let links: Vec<(&str, &str)> = plots.iter().map(|(c, f, _)| (*c, *f)).collect();
    let file = match format {
        Format::Markdown => "report.md",
        Format::Json | Format::Jsonl => "report.json",
    };
    let path = dir.join(file);
    moot_files::write_output(&path, render(report, format, &links)?)?;
    errln!("wrote {}", path.display());
    Ok(())
}
