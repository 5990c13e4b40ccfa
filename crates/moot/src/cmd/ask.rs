//! `moot ask`: one debate on a question, printed as an answer with its reasoning trail.

use std::path::PathBuf;

use anyhow::Result;
use moot_config::{AnswerSetting, ProtocolName};
use moot_core::answer::AnswerKind;
use moot_core::debate::DebateSpec;
use moot_core::validation::TestSuite;
use moot_store::Store;

use moot_app::agents;
use moot_app::prepare::{load_config, prepare_debate, Overrides, PreparedDebate, TeamRequest};
use moot_app::session::Session;

use crate::input::{bad_input, InputError};
use crate::progress::Progress;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The question.
    question: String,
    /// Configuration file (TOML, YAML or JSON).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Protocol (overrides the config).
    #[arg(long, value_parser = ProtocolName::parser())]
    protocol: Option<ProtocolName>,
    /// A protocol option, as in the config's [protocol] table: `masking=objective`,
    /// `topology=ring`, `faults.cut_off=0.5` (repeatable).
    #[arg(long = "option", short = 'o', value_name = "KEY=VALUE")]
    options_set: Vec<String>,
    /// The gold answer, when known (sim agents and truth-first/-last orderings need it).
    // A value, whatever it starts with: `--gold -7`.
    #[arg(long, allow_hyphen_values = true)]
    gold: Option<String>,
    /// Debate among simulated agents (default parameters) instead of the configured or embedded
    /// ones; needs --gold.
    #[arg(long)]
    sim: bool,
    /// Number of agents (overrides the config; at most 16 unless the config's token budget pays
    /// for more).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::input::positive_count)]
    agents: Option<usize>,
    /// Debate rounds after round 0 (overrides the config; at most 10 unless the config's token
    /// budget pays for more).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::input::count)]
    rounds: Option<usize>,
    /// Answer kind (overrides the config; auto guesses from the question).
    #[arg(long, value_parser = AnswerSetting::parser())]
    answer: Option<AnswerSetting>,
    /// Option texts for a choice question, comma-separated.
    #[arg(long, value_delimiter = ',')]
    options: Vec<String>,
    /// Tests for a code answer: a Python file run after the solution (asserts, or a
    /// `check(...)` call); each distinct program of the debate is run with it in the sandbox.
    #[arg(long, value_name = "FILE")]
    tests: Option<PathBuf>,
    /// Code answers that fail their checks count as no answer for every rule.
    #[arg(long)]
    require_passing: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    if args.question.trim().is_empty() {
        return bad_input("the question is empty");
    }
    let mut config = load_config(args.config.as_deref())?;
    Overrides {
        protocol: args.protocol.clone(),
        rounds: args.rounds,
        answer: args.answer,
        gold: args.gold.clone(),
        options: args.options_set.clone(),
    }
    .apply(&mut config)?;
    let team = TeamRequest {
        agents: args.agents,
        rounds_flag: args.rounds.is_some(),
        sim: args.sim,
    };
    let PreparedDebate {
        mut config,
        redactor,
    } = prepare_debate(config, &team, args.config.as_deref(), &args.question)?;
    let mut kind = config.debate.answer.resolve(&args.question, &args.options);
    let tests = match &args.tests {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| InputError(format!("--tests {}: {e}", path.display())))?;
            // Tests mean a program is wanted, whatever the question's words suggested.
            if args.answer.is_none() {
                kind = AnswerKind::Code;
            } else if kind != AnswerKind::Code {
                return bad_input(format!(
                    "--tests runs code answers, but the answer kind is {kind} (use --answer code)"
                ));
            }
            Some(TestSuite::user_tests(&text))
        }
        None => None,
    };
    if args.require_passing {
        config.validation.require_passing = true;
    }
    let rounds = config.debate.rounds;
    let progress = Progress::new(rounds, args.json);
    let built = agents::build(&config, kind, &mut |m| {
        progress.message(m);
        eprintln!("{m}");
    })?;
    let spec = DebateSpec {
        question: args.question.clone(),
        kind,
        options: args.options.clone(),
        agents: built.specs.clone(),
        rounds,
        seed: config.debate.seed,
        tests,
    };
    let session = Session {
        store,
        run_id: moot_engine::new_run_id(),
        config,
        spec,
        agents: built,
        restore: None,
        redactor,
    };
    crate::progress::run_and_print(session, progress, args.json, rt)
}
