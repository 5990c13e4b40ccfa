//! `moot decide`: apply decision rules to a trajectory.
//!
//! The trajectory file is `{"answers": [[agent0 round0, agent0 round1, …], [agent1 …], …]}`.
//! A cell is an answer string, `null` (the agent responded without an answer) or
//! `{"missing": true}` (the agent gave no response that round).

use std::path::PathBuf;

use moot_config::TieBreakSetting;
use moot_core::answer::AnswerKind;
use moot_core::debate::DebateSpec;
use moot_core::decision::{
    build_rule, rule_names, DecisionConfig, Evidence, FreeMadWeights, RULES,
};
use moot_store::CallRecord;
use serde_json::Value;

use moot_core::trajectory_json::parse_trajectory;

use crate::input::{bad_input, read_stdin, InputError};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Decision rule, or all of them.
    #[arg(long, default_value = "all", value_parser = rule_or_all())]
    rule: String,
    /// Trajectory JSON file, or - for stdin.
    #[arg(
        long,
        value_name = "FILE|-",
        required_unless_present = "run",
        conflicts_with = "run"
    )]
    trajectory: Option<PathBuf>,
    /// A stored run to re-decide (its answer kind applies unless --kind is given).
    #[arg(long)]
    run: Option<String>,
    /// FREE-MAD weights initial,abandon,adopt,keep (default: the run's, else 20,25,30,20).
    #[arg(long, allow_hyphen_values = true)]
    weights: Option<String>,
    /// How ties between top-scored answers are broken (default: the run's, else deterministic).
    #[arg(long, value_enum)]
    tie_break: Option<TieBreakSetting>,
    /// Seed for --tie-break random (default: the run's, else 0).
    #[arg(long)]
    seed: Option<u64>,
    /// FREE-MAD: divide each answer's score by the number of agents that ever held it
    /// (`--normalize false` turns off a run's normalisation; default: the run's, else off).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    normalize: Option<bool>,
    /// Code answers that failed a sandbox check count as no answer (`--require-passing false`
    /// turns off a run's setting; default: the run's, else off). Needs --run.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", requires = "run")]
    require_passing: Option<bool>,
    /// How to compare answers; without it, answers are compared as exact strings.
    #[arg(long, value_parser = super::extract::parse_kind)]
    kind: Option<AnswerKind>,
}

/// The stored run `run_id` with its calls and its protocol, for `--run`.
pub fn stored_run(
    store: &dyn moot_store::Store,
    rt: &tokio::runtime::Runtime,
    run_id: &str,
) -> anyhow::Result<StoredRun> {
    use anyhow::Context;
    use moot_store::StoreError;
    let (run, calls, validations) = rt
        .block_on(async {
            let run = store.run(run_id).await?;
            let calls = store.calls(run_id).await?;
            let validations = moot_engine::stored_validations(store, run_id).await;
            Ok::<_, StoreError>((run, calls, validations))
        })
        .map_err(|e| match e {
            StoreError::RunNotFound(_) => anyhow::Error::new(InputError(e.to_string())),
            other => other.into(),
        })?;
    let validations = validations?;
    let spec = serde_json::from_value(run.spec.clone())
        .with_context(|| format!("run {run_id}: the stored debate spec is unreadable"))?;
    // The run's protocol derives what rules read beyond the trajectory (SVR-MAD challenges,
    // SID-ET early stops).
    let protocol = moot_config::Config::protocol_of_run(&run.config, &run.protocol);
    // A configuration that no longer reads is decided with the defaults.
    let settings = serde_json::from_value::<moot_config::Config>(run.config.clone())
        .ok()
        .map(|c| {
            let d = &c.debate;
            Settings {
                weights: c.decision().map(|(_, d)| d.weights).unwrap_or_default(),
                tie_break: d.tie_break,
                seed: d.tie_break_seed.unwrap_or(d.seed),
                normalize: d.normalize,
                require_passing: c.validation.require_passing,
            }
        })
        .unwrap_or_default();
    Ok(StoredRun {
        spec,
        calls,
        protocol,
        settings,
        validations,
    })
}

/// `--rule` takes the registry's rule names and `all`; `--help` lists them.
fn rule_or_all() -> clap::builder::PossibleValuesParser {
    let mut names = rule_names();
    names.push("all");
    clap::builder::PossibleValuesParser::new(names)
}

pub fn run(
    args: Args,
    load_run: impl FnOnce(&str) -> anyhow::Result<StoredRun>,
) -> anyhow::Result<()> {
    let names: Vec<&str> = if args.rule == "all" {
        RULES.iter().map(|r| r.name).collect()
    } else if rule_names().contains(&args.rule.as_str()) {
        vec![args.rule.as_str()]
    } else {
        return bad_input(format!(
            "--rule {:?} is not a decision rule (expected one of {}, all)",
            args.rule,
            rule_names().join(", ")
        ));
    };
    let (trajectory, evidence, stored, validations) = match (&args.trajectory, &args.run) {
        (Some(path), _) => {
            let (text, source) = if path.as_os_str() == "-" {
                (read_stdin("the trajectory")?, "stdin".to_string())
            } else {
                let name = path.display().to_string();
                let text = std::fs::read_to_string(path)
                    .map_err(|e| InputError(format!("cannot read trajectory {name}: {e}")))?;
                (text, name)
            };
            let trajectory = parse_trajectory(&text, args.kind)
                .map_err(|e| InputError(format!("{source}: {e}")))?;
            (
                trajectory,
                Evidence::default(),
                Settings::default(),
                Default::default(),
            )
        }
        (None, Some(run_id)) => {
            let stored = load_run(run_id)?;
            let mut spec = stored.spec;
            if let Some(kind) = args.kind {
                spec.kind = kind;
            }
            // Decided as the engine decides: through the last round anyone answered.
            let transcript = moot_engine::transcript_of(&spec, &stored.calls)
                .decided_part()
                .into_owned();
            let evidence = match &stored.protocol {
                Some(p) => p.evidence(&spec, &transcript),
                None => Evidence::from_transcript(&spec, &transcript),
            };
            let trajectory = transcript
                .trajectory()
                .ok_or_else(|| InputError("the stored run has no agents".into()))?;
            (trajectory, evidence, stored.settings, stored.validations)
        }
        (None, None) => return bad_input("give --trajectory FILE or --run RUN"),
    };
    let config = settings(&args, stored)?;
    let trajectory = if config.require_passing {
        moot_core::validation::drop_failing(&trajectory, &validations)
    } else {
        trajectory
    };
    let decisions: Vec<Value> = names
        .iter()
        .map(|name| {
            let rule = build_rule(name, &config).expect("name checked against the registry");
            moot_engine::decision_json(&rule.decide_with(&trajectory, &evidence))
        })
        .collect();
    let out = if args.rule == "all" {
        Value::Array(decisions)
    } else {
        decisions.into_iter().next().unwrap_or(Value::Null)
    };
    outln!("{out}");
    Ok(())
}

/// A stored run's spec and calls, loaded only when `--run` is given.
pub struct StoredRun {
    pub spec: DebateSpec,
    pub calls: Vec<CallRecord>,
    /// The run's protocol, when its configuration could be read back.
    pub protocol: Option<Box<dyn moot_core::protocol::Protocol>>,
    /// The decision settings the run was decided with.
    pub settings: Settings,
    /// The sandbox's checks of the run's code answers.
    pub validations: moot_core::validation::Validations,
}

/// Decision settings before the flags: a stored run's, or the defaults.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub weights: FreeMadWeights,
    pub tie_break: TieBreakSetting,
    pub seed: u64,
    pub normalize: bool,
    pub require_passing: bool,
}

/// The rules' settings: each flag given, else the stored run's setting, else the default.
fn settings(args: &Args, stored: Settings) -> anyhow::Result<DecisionConfig> {
    let weights = match &args.weights {
        Some(w) => w
            .parse()
            .map_err(|e| InputError(format!("--weights: {e}")))?,
        None => stored.weights,
    };
    let tie_break = args.tie_break.unwrap_or(stored.tie_break);
    Ok(DecisionConfig {
        tie_break: tie_break.with_seed(args.seed.unwrap_or(stored.seed)),
        weights,
        normalize: args.normalize.unwrap_or(stored.normalize),
        require_passing: args.require_passing.unwrap_or(stored.require_passing),
    })
}
