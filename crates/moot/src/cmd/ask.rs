//! `moot ask`: one debate on a question (`moot_app::ask`), printed as an answer with its
//! reasoning trail.

use std::path::PathBuf;

use anyhow::Result;
use moot_app::ask::{AskRequest, Context, Tests};
use moot_app::request::Settings;
use moot_config::{AnswerSetting, ProtocolName, Via};
use moot_store::Store;

use crate::flags;
use crate::progress::debate::Progress;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The question.
    question: String,
    #[command(flatten)]
    config: flags::ConfigFile,
    /// Protocol (overrides the config).
    #[arg(long, value_parser = ProtocolName::parser())]
    protocol: Option<ProtocolName>,
    #[command(flatten)]
    options_set: flags::ProtocolOptions,
    /// The gold answer, when known (sim agents and truth-first/-last orderings need it).
    // A value, whatever it starts with: `--gold -7`.
    #[arg(long, allow_hyphen_values = true)]
    gold: Option<String>,
    /// Debate among simulated agents (default parameters) instead of the configured or embedded
    /// ones; needs --gold.
    #[arg(long)]
    sim: bool,
    #[command(flatten)]
    size: flags::TeamSize,
    /// Answer kind (overrides the config; auto guesses from the question).
    #[arg(long, value_parser = AnswerSetting::parser())]
    answer: Option<AnswerSetting>,
    /// Option texts for a choice question, comma-separated (`--options` is the same).
    #[arg(long, visible_alias = "options", value_delimiter = ',')]
    choices: Vec<String>,
    /// Tests for a code answer: a Python file run after the solution (asserts, or a
    /// `check(...)` call); each distinct program of the debate is run with it in the sandbox.
    #[arg(long, value_name = "FILE")]
    tests: Option<PathBuf>,
    /// A passage the question is about, read from FILE: the debaters read it; a judge (or
    /// aggregator, or chairman) never does and sees only what the debaters quote, each quote
    /// checked against it.
    #[arg(long, value_name = "FILE")]
    context: Option<PathBuf>,
    /// Code answers that fail their checks count as no answer for every rule.
    #[arg(long)]
    require_passing: bool,
    #[command(flatten)]
    output: flags::Json,
    #[command(flatten)]
    strict: flags::Strict,
    #[command(flatten)]
    store: crate::flags::Store,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let json = args.output.json;
    let request = AskRequest {
        question: args.question,
        settings: Settings {
            via: Via::Cli,
            config: None,
            config_file: args.config.config,
            protocol: args.protocol,
            rounds: args.size.rounds,
            agents: args.size.agents,
            sim: args.sim,
            answer: args.answer,
            gold: args.gold,
            protocol_options: args.options_set.options_set,
        },
        choices: args.choices,
        tests: args.tests.map(Tests::File),
        context: args.context.map(Context::File),
        require_passing: args.require_passing,
    };
    let mut prepared = request.prepare()?;
    // A person answering for an agent (`backend = "human"`) is asked here, on the terminal.
    prepared.desk = Some(std::sync::Arc::new(
        moot_backends::human::TerminalDesk::new(prepared.redactor.clone()),
    ));
    let progress = Progress::new(prepared.rounds(), json);
    let session = prepared.session(store, &mut |m| {
        progress.message(m);
        errln!("{m}");
    })?;
    crate::going_on::resume(&session.run_id);
    crate::progress::debate::run_and_print(session, progress, json, args.strict.strict, rt)
}
