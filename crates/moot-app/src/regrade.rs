//! The stored programs of a run, or of every debate of a benchmark, graded again with today's
//! grader (`moot regrade`): the new verdicts are recorded, and the ones that changed are said.

use std::collections::HashMap;
use std::path::PathBuf;
use std::str::FromStr;

use anyhow::{Context, Result};
use moot_config::Config;
use moot_core::debate::DebateSpec;
use moot_core::validation::TestSuite;
use moot_engine::Regraded;
use moot_store::{RunRecord, Store};
use serde_json::{json, Value};

use crate::error::{bad_input, InputError};
use crate::prepare::{run_or_bench, Named};

/// What a regrade did.
pub struct Regrade {
    /// The debates regraded (those with tests to grade their programs by).
    pub debates: usize,
    /// The programs graded.
    pub programs: usize,
    /// The verdicts that changed, each with its run's id, in the order they were graded.
    pub changed: Vec<(String, Regraded)>,
}

impl Regrade {
    /// As `moot regrade --json` prints it.
    pub fn json(&self) -> Value {
        let changed: Vec<Value> = self
            .changed
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
        json!({"debates": self.debates, "programs": self.programs, "changed": changed})
    }
}

/// The debate to regrade, with the tests to grade it with.
struct Target {
    run: RunRecord,
    tests: TestSuite,
}

/// Grades again the programs of the run named `name`, or of every debate of the benchmark of
/// that name (its dataset read from `data_dir`, else the default data folder), in the sandbox
/// the first debate's configuration describes as admitted on this machine, whose configuration
/// is `local` ([`crate::stored::admit`]: its limits bound the stored ones, each bound said to
/// `on_notice`); records the new verdicts, and tells `on_changed` each verdict that changed
/// (with its run's id) as it is found.
pub async fn regrade(
    store: &dyn Store,
    name: &str,
    data_dir: Option<PathBuf>,
    local: &Config,
    via: moot_config::Via,
    on_notice: &mut dyn FnMut(&str),
    on_changed: &mut dyn FnMut(&str, &Regraded),
) -> Result<Regrade> {
    let targets = targets(store, name, data_dir).await?;
    let Some(first) = targets.first() else {
        return bad_input(format!(
            "{name} has no debate with tests to grade its programs by"
        ));
    };
    let config = crate::stored::admit(
        crate::stored::Stored::Run(&first.run),
        local,
        crate::stored::Work::Grading,
        via,
        on_notice,
    )?;
    let sandbox = crate::sandbox::for_code(&config, true, Some("regrading"), via)
        .await?
        .ok_or_else(|| InputError("the sandbox is off".into()))?;
    let mut done = Regrade {
        debates: targets.len(),
        programs: 0,
        changed: Vec::new(),
    };
    for target in &targets {
        let regraded =
            moot_engine::regrade_run(&sandbox, &target.tests, &target.run.id, store).await?;
        done.programs += regraded.len();
        for r in regraded.into_iter().filter(Regraded::changed) {
            on_changed(&target.run.id, &r);
            done.changed.push((target.run.id.clone(), r));
        }
    }
    Ok(done)
}

/// The run named `name`, or every debate of the benchmark of that name; each with the tests it
/// is graded by: a benchmark's dataset's tests as moot builds them today (so suites stored by
/// an older moot get the reference code on the tests' side), else the run's own.
async fn targets(store: &dyn Store, name: &str, data_dir: Option<PathBuf>) -> Result<Vec<Target>> {
    let runs = match run_or_bench(store, name).await? {
        Named::Run(run) => vec![(run, None)],
        Named::Bench(bench) => {
            let dataset = dataset_tests(&bench.dataset, data_dir);
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
            // Every debate's suite, not only the first's (whose configuration is admitted).
            let at = format!("run {}", moot_core::escape::terminal(&run.id));
            crate::stored::check_tests(&at, &tests)?;
            targets.push(Target { run, tests });
        }
    }
    Ok(targets)
}

/// The tests of each item of `dataset`, by item id; empty when the dataset cannot be read now
/// (the stored suites are used then).
fn dataset_tests(dataset: &str, data_dir: Option<PathBuf>) -> HashMap<String, TestSuite> {
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
