//! `moot fork RUN --round R`: a finished debate forked at a round, with an intervention or none
//! (what a fork is, and how `--model` names a model, is `moot_app::fork`'s).

use anyhow::Result;
use moot_app::fork::{prepare, Change, ForkRequest};
use moot_core::text::plural;
use moot_store::Store;

use crate::flags;
use crate::progress::debate::Progress;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("change").args(["say", "model"]).multiple(false)))]
pub struct Args {
    /// The finished run to fork (its id, as `moot ask` printed it).
    run: String,
    /// The round at which the fork differs (0 is the independent answers). Without --say or
    /// --model it is a null fork: the same debate with this round asked again, the control
    /// every intervention is compared against.
    #[arg(long)]
    round: usize,
    /// The agent the intervention changes: its number (from 1) or its id.
    #[arg(long, requires = "change")]
    agent: Option<String>,
    /// Put TEXT in place of the agent's response of the round; its answer is read from it as
    /// from any reply. It has no token log-probabilities, so protocols that read them refuse it.
    #[arg(long, value_name = "TEXT", requires = "agent")]
    say: Option<String>,
    /// Let the agent answer with MODEL from the round on: the id of an agent of --config (else
    /// of the run's configuration), else a model of the agent's own backend (a sim preset, an
    /// openai or anthropic model name, a local model name or .gguf path).
    #[arg(long, value_name = "MODEL", requires = "agent")]
    model: Option<String>,
    #[command(flatten)]
    config: flags::LocalConfig,
    #[command(flatten)]
    output: flags::Json,
    #[command(flatten)]
    strict: flags::Strict,
    #[command(flatten)]
    store: crate::flags::Store,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let json = args.output.json;
    let local = args.config.given()?;
    let agent = args.agent.unwrap_or_default();
    let change = match (args.say, args.model) {
        (Some(text), _) => Change::Say { agent, text },
        (None, Some(model)) => Change::Model { agent, model },
        (None, None) => Change::Null,
    };
    let request = ForkRequest {
        via: moot_config::Via::Cli,
        parent: args.run,
        round: args.round,
        change,
        local,
        run_id: None,
    };
    let forked = rt.block_on(prepare(store, request, &mut |m| {
        errln!("{}", moot_core::escape::terminal(m))
    }))?;
    if !json {
        errln!(
            "forking run {} at round {}: {}; {} copied from it",
            forked.parent,
            forked.round,
            moot_core::escape::terminal(&forked.intervention.describe(60)),
            plural(forked.copied, "call")
        );
    }
    let progress = Progress::new(forked.session.spec.rounds, json);
    crate::progress::debate::run_and_print(forked.session, progress, json, args.strict.strict, rt)
}
