//! `moot`: the multi-agent debate engine's command-line interface. One module per subcommand.

#[macro_use]
mod output;

mod cmd;
mod flags;
mod going_on;
mod input;
mod progress;
mod terminal;

use moot_app::prepare::{self, StoreArg};

use std::process::ExitCode;

/// Debates allocate and free many small strings and JSON values per call; glibc's malloc spent a
/// third of a simulated benchmark consolidating and unlinking chunks (docs/performance.md §1).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::Result;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use moot_store::Access;

#[derive(Debug, Parser)]
#[command(
    name = "moot",
    version,
    about = "Multi-agent debate engine",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ask a question: agents debate it and a decision rule picks the answer.
    Ask(cmd::ask::Args),
    /// Finish an interrupted debate without repeating completed calls.
    Resume(cmd::resume::Args),
    /// Fork a finished debate at a round, with one change (or none: the control).
    ///
    /// The same debate until then, with one agent's response replaced (--say), one agent's
    /// model swapped (--model), or nothing changed (the round resampled: the control). The
    /// parent's earlier calls are reused at 0 tokens.
    Fork(cmd::fork::Args),
    /// Run every item of a dataset under several protocols.
    ///
    /// The same --name resumes. With --detach, only plan it for `moot work`; `moot bench
    /// status NAME` shows progress.
    Bench(cmd::bench::Args),
    /// Work a benchmark planned with `moot bench … --detach`.
    ///
    /// Alongside any number of other workers sharing the store; exits when every debate is
    /// done.
    Work(cmd::work::Args),
    /// Show the store in use (path), create it (init), or copy between stores (copy).
    #[command(subcommand)]
    Store(cmd::store::Command),
    /// Show a stored debate as Markdown or JSON.
    Show(cmd::show::Args),
    /// List the store's runs and benchmarks, most recent first.
    ///
    /// A benchmark is one line with its accuracy; --bench NAME lists its debates.
    #[command(visible_alias = "ls")]
    List(cmd::list::Args),
    /// Report stored benchmarks: tables, per-debate JSON lines, plots.
    Report(cmd::report::Args),
    /// Decide a trajectory (or a stored run) under one decision rule or all of them.
    Decide(cmd::decide::Args),
    /// Grade a run's or a benchmark's stored programs again with today's grader.
    ///
    /// Records the new verdicts and lists the ones that changed.
    Regrade(cmd::regrade::Args),
    /// Extract the final answer from one response read on stdin.
    Extract(cmd::extract::Args),
    /// Validate or print configuration files.
    #[command(subcommand)]
    Config(cmd::config::Command),
    /// Import freemad transcript files into the store as runs (re-decided by every rule).
    Import(cmd::import::Args),
    /// Check that each agent of a configuration can answer.
    ///
    /// One line per agent; exit 1 if any cannot.
    Health(cmd::health::Args),
    /// Fetch and list embedded models.
    #[command(subcommand)]
    Model(cmd::model::Command),
    /// Sweep simulated debates over a grid of parameters.
    ///
    /// Each arm's accuracy per cell, paired tests, and a Markdown report with CSV and an SVG
    /// heat map or line plot.
    Sweep(cmd::sweep::Args),
    /// Serve the web dashboard, the JSON API and an OpenAI-compatible endpoint.
    ///
    /// The endpoint's models are debate teams.
    Serve(cmd::serve::Args),
}

/// Seals this process against the programs it starts (moot_proc's module documentation says
/// how), hides the secrets given on the command line (a store's password, a server's token)
/// from `/proc/PID/cmdline`, and warns where a started program could still read them.
fn seal_secrets(matches: &clap::ArgMatches) {
    if let Err(e) = moot_proc::seal() {
        errln!("moot: warning: cannot keep the programs moot starts out of its memory: {e}");
    }
    if let Some(gap) = moot_proc::capability_gap() {
        errln!("moot: warning: {gap}");
    }
    // Every argument that holds a URL with credentials, however clap took it (a global
    // `--store` given twice keeps only one value: both are on the command line), and the whole
    // value of a token.
    let mut typed = Vec::new();
    for argument in std::env::args_os().skip(1) {
        let Some(argument) = argument.to_str().map(str::to_string) else {
            continue;
        };
        let value = match argument.split_once('=') {
            Some((flag, value)) if flag.starts_with('-') && !flag.contains("://") => value,
            _ => argument.as_str(),
        };
        if !value.contains("://") {
            continue;
        }
        let secrets = moot_backends::http::hidden_on_a_command_line(value);
        if !secrets.is_empty() {
            typed.push(moot_proc::Typed {
                value: value.to_string(),
                secrets,
            });
        }
    }
    let mut next = Some(matches);
    while let Some(m) = next {
        for id in m
            .ids()
            .map(clap::Id::as_str)
            .filter(|id| id.contains("token"))
        {
            if m.value_source(id) != Some(ValueSource::CommandLine) {
                continue;
            }
            let Ok(Some(values)) = m.try_get_raw(id) else {
                continue;
            };
            for value in values.filter_map(|v| v.to_str()) {
                typed.push(moot_proc::Typed {
                    value: value.to_string(),
                    secrets: vec![value.to_string()],
                });
            }
        }
        next = m.subcommand().map(|(_, sub)| sub);
    }
    if let Err(e) = moot_proc::mask_arguments(&typed) {
        errln!(
            "moot: warning: a secret on the command line could not be hidden from other \
             processes ({e}); give it in its environment variable instead"
        );
    }
}

fn main() -> ExitCode {
    let matches = match Cli::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => return input::clap_exit(e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return input::clap_exit(e),
    };
    // Before anything is started (and before other threads exist): the programs moot starts
    // can read neither its memory nor its environment, and the secrets typed on its command
    // line are gone from /proc/PID/cmdline.
    seal_secrets(&matches);
    // One redactor for everything moot prints, knowing the keys the command's configuration
    // names.
    output::init_redactor(config_flag(&matches).as_deref());
    // Only commands that use a store take `--store` (or MOOT_STORE).
    let store_flag = deepest_flag::<String>(&matches, "store");
    let store = StoreArg {
        from_env: store_flag
            .as_ref()
            .is_some_and(|(_, source)| *source == ValueSource::EnvVariable),
        spec: store_flag.map(|(spec, _)| spec),
        warn: std::sync::Arc::new(|warning: &str| errln!("moot: warning: {warning}")),
    };
    // Traces when OpenTelemetry's variables name an endpoint; metrics for `moot serve`'s
    // `/metrics`. Neither: nothing is installed, and the engine's spans cost nothing.
    // OpenTelemetry's variables, and where one is not set, the configuration's `[telemetry]`.
    let config = config_flag(&matches)
        .and_then(|path| moot_config::dialect::read(&path).ok())
        .map(|(config, _)| config);
    // The programs a configuration starts: said at start, where they cannot be kept apart from
    // the machine's other processes (else where the first is started: a stored run's agents).
    let starts_programs = config
        .as_ref()
        .is_some_and(|c| c.agents.iter().any(|a| a.backend.name() == "cli"));
    if starts_programs {
        if let Some(gap) = moot_proc::namespace_gap_once() {
            errln!("moot: warning: {gap}");
        }
    }
    let configured = config.map(|c| c.telemetry).unwrap_or_default();
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .or_else(|| configured.variable(name))
    };
    let options = moot_telemetry::TelemetryOptions {
        metrics: match &cli.command {
            Command::Serve(_) => true,
            Command::Work(args) => args.metrics.is_some(),
            _ => false,
        },
    };
    let telemetry = match moot_telemetry::Telemetry::install(options, &env) {
        Ok(t) => t,
        Err(e) => {
            errln!("moot: warning: telemetry is off: {e}");
            moot_telemetry::Telemetry::default()
        }
    };
    moot_engine::capture_content(moot_telemetry::captures_content(&env));
    let result = dispatch(cli, &store, telemetry.metrics());
    // Sends the spans still queued before the process ends, waiting a bounded time.
    if let Some(problem) = telemetry.shutdown() {
        errln!("moot: warning: {problem}");
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => input::report(&e),
    }
}

/// The value of the argument `id` at whatever depth of subcommands it was given (`moot bench
/// status NAME --store S`), with where it came from; `None` where no command of the line has
/// it set.
fn deepest_flag<T: Clone + Send + Sync + 'static>(
    matches: &clap::ArgMatches,
    id: &str,
) -> Option<(T, ValueSource)> {
    let (_, sub) = matches.subcommand()?;
    // Asked only of a command that has the argument: clap panics on an id it does not know.
    let here = match sub.try_get_one::<T>(id) {
        Ok(Some(value)) => sub.value_source(id).map(|source| (value.clone(), source)),
        _ => None,
    };
    here.or_else(|| deepest_flag(sub, id))
}

/// The `--config FILE` the command was given, at whatever depth of subcommands.
fn config_flag(matches: &clap::ArgMatches) -> Option<std::path::PathBuf> {
    deepest_flag(matches, "config").map(|(path, _)| path)
}

/// At SIGINT (Ctrl-C) or SIGTERM, kills every agent running and everything each started (setsid
/// descendants included), then ends moot as the signal would have. Agent CLIs run in process
/// groups of their own, which the terminal's Ctrl-C does not reach; the reaper each runs below
/// would end them once moot is gone, but they end here first. `moot work` stops on these
/// signals by itself (it hands its debates back), so it does not get this handler.
fn end_agents_with_moot() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            moot_backends::cli::kill_live_agents();
            if let Some(command) = going_on::command() {
                errln!("moot: interrupted; to go on: {command}");
            }
            let _ = signal_hook::low_level::emulate_default_handler(signal);
            std::process::exit(128 + signal);
        }
    });
}

fn dispatch(
    cli: Cli,
    store_arg: &StoreArg,
    metrics: Option<std::sync::Arc<moot_telemetry::Metrics>>,
) -> Result<()> {
    if !matches!(cli.command, Command::Work(_)) {
        end_agents_with_moot();
    }
    match cli.command {
        Command::Extract(args) => cmd::extract::run(args),
        Command::Config(c) => cmd::config::run(c),
        Command::Model(c) => cmd::model::run(c),
        // Simulated debates against an in-memory store: no store is opened.
        Command::Sweep(args) => cmd::sweep::run(args, &prepare::runtime()?),
        Command::Health(args) => cmd::health::run(args, &prepare::runtime()?),
        // `decide` reads a store only for `--run`, so it opens one only then.
        Command::Decide(args) => cmd::decide::run(args, |run_id: &str| {
            store_arg.with(Access::Read, |s, rt| {
                rt.block_on(moot_app::decide::StoredRun::load(s, run_id))
            })
        }),
        // Only the commands that record new runs may create a store; reading never does.
        Command::Ask(args) => store_arg.with(Access::Create, |s, rt| cmd::ask::run(args, s, rt)),
        Command::Bench(mut args) => match cmd::bench::take_status(&mut args) {
            Some(status) => {
                store_arg.with(Access::Read, |s, rt| cmd::bench::status::run(status, s, rt))
            }
            None => store_arg.with(Access::Create, |s, rt| cmd::bench::run(args, s, rt)),
        },
        Command::Work(args) => {
            store_arg.with(Access::Write, |s, rt| cmd::work::run(args, s, rt, metrics))
        }
        Command::Store(c) => cmd::store::run(c, store_arg, &prepare::runtime()?),
        Command::Resume(args) => {
            store_arg.with(Access::Write, |s, rt| cmd::resume::run(args, s, rt))
        }
        // A fork records a new run beside its parent, which must be in the store already.
        Command::Fork(args) => store_arg.with(Access::Write, |s, rt| cmd::fork::run(args, s, rt)),
        Command::Import(args) => {
            store_arg.with(Access::Create, |s, rt| cmd::import::run(args, s, rt))
        }
        Command::Show(args) => store_arg.with(Access::Read, |s, rt| cmd::show::run(args, s, rt)),
        Command::List(args) => store_arg.with(Access::Read, |s, rt| cmd::list::run(args, s, rt)),
        Command::Regrade(args) => {
            store_arg.with(Access::Write, |s, rt| cmd::regrade::run(args, s, rt))
        }
        Command::Report(args) => {
            store_arg.with(Access::Read, |s, rt| cmd::report::run(args, s, rt))
        }
        // The server records the debates it starts in a store that exists, and never creates
        // one (one it cannot write, it serves as it is).
        Command::Serve(args) => cmd::serve::run(args, store_arg, &prepare::runtime()?, metrics),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every long flag of `cmd` and its subcommands, with their aliases.
    fn long_flags(cmd: &clap::Command, into: &mut std::collections::BTreeSet<String>) {
        for arg in cmd.get_arguments() {
            if let Some(long) = arg.get_long() {
                into.insert(long.to_string());
            }
            if let Some(aliases) = arg.get_all_aliases() {
                into.extend(aliases.into_iter().map(str::to_string));
            }
        }
        for sub in cmd.get_subcommands() {
            long_flags(sub, into);
        }
    }

    /// moot-app names a request's fields through `moot_config::Via`; the CLI's names there
    /// must be flags this binary has.
    #[test]
    fn every_field_moot_app_names_is_a_flag_of_the_cli() {
        let mut flags = std::collections::BTreeSet::new();
        long_flags(&super::Cli::command(), &mut flags);
        for field in moot_config::Field::ALL {
            assert!(
                flags.contains(field.flag()),
                "{field:?}: --{} is no flag of moot",
                field.flag()
            );
        }
    }
}
