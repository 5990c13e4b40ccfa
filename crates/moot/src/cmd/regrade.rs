//! `moot regrade RUN|BENCH`: grade the stored programs of a run, or of every debate of a
//! benchmark, again with today's grader, and say which verdicts changed.

use std::collections::HashMap;
use std::str::FromStr;

use anyhow::{Context, Result};
use moot_config::Config;
use moot_core::debate::DebateSpec;
use moot_core::validation::TestSuite;
use moot_store::{RunRecord, Store};
use serde_json::json;

use crate::input::{bad_input, InputError};
use moot_app::prepare::{run_or_bench, Named};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run id, or a benchmark's name (every debate of it).
    run: String,
    /// A benchmark: the data folder its dataset is read from (default: MOOT_DATA_DIR, else
    /// ../shared/data). Datasets that ship with moot (humaneval) need none.
    #[arg(long)]
    data_dir: Option<std::path::PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// The debates to regrade, each with the tests to grade it with.
struct Target {
    run: RunRecord,
    tests: TestSuite,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let targets = rt.block_on(targets(&args, store))?;
    let Some(first) = targets.first() else {
        return bad_input(format!(
            "{} has no debate with tests to grade its programs by",
            args.run
        ));
    };
    let config: Config = serde_json::from_value(first.run.config.clone()).with_context(|| {
        format!(
            "run {}: the stored configuration is unreadable",
            first.run.id
        )
    })?;
    let sandbox = rt
        .block_on(moot_app::sandbox::for_code(
            &config,
            true,
            Some("moot regrade"),
        ))?
        .ok_or_else(|| InputError("the sandbox is off".into()))?;
    let mut programs = 0;
    let mut changes = Vec::new();
    for target in &targets {
        let regraded = rt.block_on(moot_engine::regrade_run(
            &sandbox,
            &target.tests,
            &target.run.id,
            store,
        ))?;
        programs += regraded.len();
        for r in regraded.into_iter().filter(moot_engine::Regraded::changed) {
            if !args.json {
                let before = r
                    .before
                    .as_ref()
                    .map_or("not checked".to_string(), |b| b.verdict.to_string());
                outln!(
                    "{}  {} -> {}{}  {}",
                    target.run.id,
                    before,
                    r.after.verdict,
                    if r.after.detail.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", r.after.detail)
                    },
                    first_line(&r.program)
                );
            }
            changes.push((target.run.id.clone(), r));
        }
    }
    if args.json {
        let changed: Vec<_> = changes
            .iter()
            .map(|(run_id, r)| {
                json!({
                    "run_id": run_id,
                    "program": r.program,
                    "before": r.before.as_ref().map(|b| json!({"verdict": b.verdict, "detail": b.detail})),
                    "after": {"verdict": r.after.verdict, "detail": r.after.detail},
                })
            })
            .collect();
        outln!(
            "{}",
            json!({"debates": targets.len(), "programs": programs, "changed": changed})
        );
    } else {
        outln!(
            "regraded {programs} programs of {} debates: {} verdicts changed",
            targets.len(),
            changes.len()
        );
    }
    Ok(())
}

/// The program's first line that says what it is (its first `def` or `class`), for the listing.
fn first_line(program: &str) -> &str {
    program
        .lines()
        .find(|l| l.starts_with("def ") || l.starts_with("class "))
        .or_else(|| program.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .trim()
}

/// The run named `args.run`, or every debate of the benchmark of that name; each with the
/// tests it is graded by: a benchmark's dataset's tests as moot builds them today (so suites
/// stored by an older moot get the reference code on the tests' side), else the run's own.
async fn targets(args: &Args, store: &dyn Store) -> Result<Vec<Target>> {
    let runs = match run_or_bench(store, &args.run).await? {
        Named::Run(run) => vec![(run, None)],
        Named::Bench(bench) => {
            let dataset = dataset_tests(&bench.dataset, args.data_dir.clone());
            store
                .bench_runs(&bench.name)
                .await?
                .into_iter()
                .map(|(link, run)| {
                    let tests = dataset.get(&link.item_id).cloned();
                    (run, tests)
                })
                .collect()
        }
    };
    let mut targets = Vec::new();
    for (run, from_dataset) in runs {
        let spec: DebateSpec = serde_json::from_value(run.spec.clone())
            .with_context(|| format!("run {}: the stored debate spec is unreadable", run.id))?;
        if let Some(tests) = from_dataset.or(spec.tests) {
            targets.push(Target { run, tests });
        }
    }
    Ok(targets)
}

/// The tests of each item of `dataset`, by item id; empty when the dataset cannot be read now
/// (the stored suites are used then).
fn dataset_tests(
    dataset: &str,
    data_dir: Option<std::path::PathBuf>,
) -> HashMap<String, TestSuite> {
    let Ok(spec) = moot_eval::DatasetSpec::from_str(dataset) else {
        return HashMap::new();
    };
    let data_dir = data_dir.unwrap_or_else(moot_eval::default_data_dir);
    moot_eval::load(&spec, &data_dir)
        .map(|d| {
            d.items
                .into_iter()
                .filter_map(|i| i.tests.map(|t| (i.id, t)))
                .collect()
        })
        .unwrap_or_default()
}
