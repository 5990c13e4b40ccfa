//! `moot decide`: apply decision rules to a trajectory or a stored run (`moot_app::decide`; the
//! trajectory document is described there).

use std::path::PathBuf;

use moot_app::decide::{decide, Decided, Rules, SettingOverrides, StoredRun, MAX_TRAJECTORY_BYTES};
use moot_config::TieBreakSetting;
use moot_core::answer::AnswerKind;
use moot_core::decision::rule_names;

use crate::input::{bad_input, read_stdin, InputError};

#[derive(Debug, clap::Args)]
// What to decide: a trajectory or a stored run, exactly one (named both when neither is given).
#[command(group(clap::ArgGroup::new("input").args(["trajectory", "run"]).required(true).multiple(false)))]
pub struct Args {
    /// Decision rule, or all of them.
    #[arg(long, default_value = "all", value_parser = rule_or_all())]
    rule: String,
    /// Trajectory JSON file, or - for stdin.
    #[arg(long, value_name = "FILE|-")]
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
    #[arg(long, value_parser = crate::input::parse_kind)]
    kind: Option<AnswerKind>,
    #[command(flatten)]
    store: crate::flags::Store,
}

/// `--rule` takes the registry's rule names and `all`; `--help` lists them.
fn rule_or_all() -> clap::builder::PossibleValuesParser {
    let mut names = rule_names();
    names.push("all");
    clap::builder::PossibleValuesParser::new(names)
}

/// Decides and prints; `load_run` reads `--run`'s run (the store is opened only then).
pub fn run(
    args: Args,
    load_run: impl FnOnce(&str) -> anyhow::Result<StoredRun>,
) -> anyhow::Result<()> {
    let rules = Rules::parse(&args.rule, moot_config::Via::Cli)?;
    let what = match (&args.trajectory, &args.run) {
        (Some(path), _) if path.as_os_str() == "-" => Decided::Trajectory {
            text: read_stdin("the trajectory", MAX_TRAJECTORY_BYTES)?,
            source: "stdin".into(),
        },
        (Some(path), _) => {
            let name = path.display().to_string();
            let text = moot_files::read_text(path, MAX_TRAJECTORY_BYTES).map_err(|e| {
                InputError(format!(
                    "cannot read trajectory {}: {}",
                    moot_files::shown(path),
                    e.problem
                ))
            })?;
            Decided::Trajectory { text, source: name }
        }
        (None, Some(run_id)) => Decided::Stored(Box::new(load_run(run_id)?)),
        (None, None) => return bad_input("give --trajectory FILE or --run RUN"),
    };
    let overrides = SettingOverrides {
        via: moot_config::Via::Cli,
        weights: args.weights,
        tie_break: args.tie_break,
        seed: args.seed,
        normalize: args.normalize,
        require_passing: args.require_passing,
    };
    outln!(
        "{}",
        moot_core::escape::json(&decide(&rules, what, args.kind, &overrides)?.to_string())
    );
    Ok(())
}
