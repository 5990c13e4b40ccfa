//! `moot ask`: one debate on a question, printed as an answer with its reasoning trail.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use moot_core::answer::AnswerKind;
use moot_core::debate::DebateSpec;
use moot_core::protocol::build_protocol;
use moot_engine::Debate;
use moot_store::{CallRecord, Store};

use crate::backends;
use crate::config::{Config, DebateSize, DEFAULT_AGENTS};
use crate::input::{bad_input, InputError};
use crate::report::{Progress, RunSummary};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The question.
    question: String,
    /// Configuration file (TOML or YAML).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Protocol (overrides the config): cot, cot-sc, som, free-mad-n, free-mad-c, mad-m2, madc,
    /// svr-mad, sparse, group-debate, s2-mad, sid-et.
    #[arg(long)]
    protocol: Option<String>,
    /// A protocol option, as in the config's [protocol] table: `masking=objective`,
    /// `topology=ring`, `faults.cut_off=0.5` (repeatable).
    #[arg(long = "option", short = 'o', value_name = "KEY=VALUE")]
    options_set: Vec<String>,
    /// The gold answer, when known (sim agents and truth-first/-last orderings need it).
    #[arg(long)]
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
    /// Answer kind: numeric, choice, yes-no, math, text or auto.
    #[arg(long)]
    answer: Option<String>,
    /// Option texts for a choice question, comma-separated.
    #[arg(long, value_delimiter = ',')]
    options: Vec<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    if args.question.trim().is_empty() {
        return bad_input("the question is empty");
    }
    let mut config = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    if let Some(p) = &args.protocol {
        config.debate.protocol = p.clone();
    }
    if let Some(r) = args.rounds {
        config.debate.rounds = r;
    }
    if let Some(a) = &args.answer {
        config.debate.answer = a.clone();
    }
    if let Some(g) = &args.gold {
        config.debate.gold = Some(g.clone());
    }
    for assignment in &args.options_set {
        set_protocol_option(&mut config, assignment).map_err(InputError)?;
    }
    let requested_agents = match (args.agents, args.sim) {
        (Some(n), _) => n,
        (None, true) => DEFAULT_AGENTS,
        (None, false) => DebateSize::of(&config).agents,
    };
    if requested_agents == 0 {
        return bad_input("--agents must be at least 1");
    }
    // The debate's size is checked before anything is built for it.
    let size = DebateSize {
        agents: requested_agents,
        rounds: config.debate.rounds,
        agents_flag: args.agents.is_some(),
        rounds_flag: args.rounds.is_some(),
        file: args.config.as_ref().map(|p| p.display().to_string()),
    };
    config.validate_size(&size).map_err(InputError)?;
    // Secrets are what the configured agents hold, even when simulated agents replace them: a
    // key pasted into a question must not reach the store because --sim was given.
    let redactor = std::sync::Arc::new(config.redactor()?);
    config.agents = if args.sim {
        backends::sim_agents(requested_agents)
    } else if config.agents.is_empty() {
        backends::default_agents(requested_agents)
    } else {
        backends::resize(&config.agents, requested_agents)
    };
    config.validate_settings().map_err(InputError)?;
    if config.debate.gold.is_none() {
        if matches!(
            config.protocol.ordering,
            Some(
                moot_core::protocol::Ordering::TruthFirst
                    | moot_core::protocol::Ordering::TruthLast
            )
        ) {
            return bad_input(
                "protocol.ordering truth-first / truth-last is for analysis only and needs the gold answer (debate.gold or --gold)",
            );
        }
        if let Some(i) = config.agents.iter().position(|a| a.backend == "sim") {
            return bad_input(format!(
                "agents[{i}]: backend \"sim\" needs the gold answer (debate.gold or --gold)"
            ));
        }
    }
    let protocol = build_protocol(&config.debate.protocol, &config.protocol_options())
        .map_err(|e| InputError(e.to_string()))?;
    let (agents, rounds) = protocol.shape(config.agents.len(), config.debate.rounds);
    config.agents.truncate(agents);
    config.debate.rounds = rounds;
    let kind = match config.debate.answer.as_str() {
        "auto" => AnswerKind::guess(&args.question, &args.options),
        k => k
            .parse()
            .map_err(|e: moot_core::answer::UnknownAnswerKind| InputError(e.to_string()))?,
    };
    let run_id = moot_engine::new_run_id();
    let progress = Progress::new(rounds, args.json);
    let built = backends::build(&config, kind, &mut |m| {
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
    };
    execute(Execution {
        store,
        rt,
        run_id,
        config,
        spec,
        agents: built,
        restore: None,
        json: args.json,
        progress,
        redactor,
    })
}

pub struct Execution<'a> {
    pub store: &'a dyn Store,
    pub rt: &'a tokio::runtime::Runtime,
    pub run_id: String,
    pub config: Config,
    pub spec: DebateSpec,
    pub agents: backends::Agents,
    /// Stored calls of an interrupted run to resume from; `None` for a new run.
    pub restore: Option<Vec<CallRecord>>,
    pub json: bool,
    pub progress: Progress,
    /// What removes secrets from everything the debate stores and prints.
    pub redactor: std::sync::Arc<moot_core::redact::Redactor>,
}

/// Runs (or resumes) a debate and prints its summary.
pub fn execute(e: Execution<'_>) -> Result<()> {
    let protocol = build_protocol(&e.config.debate.protocol, &e.config.protocol_options())
        .map_err(|err| InputError(err.to_string()))?;
    let (rule, decision_config) = e.config.decision()?;
    let rule = rule.unwrap_or_else(|| protocol.default_rule());
    let engine_config = e.config.engine();
    let protocol_name = protocol.name();
    let agent_ids: Vec<String> = e.spec.agents.iter().map(|a| a.id.clone()).collect();
    let config_json = serde_json::to_value(&e.config).context("serialising the configuration")?;
    let redactor = e.redactor.clone();
    let started = Instant::now();
    let result = e.rt.block_on(async {
        let mut debate = Debate::new(
            e.run_id.clone(),
            e.spec.clone(),
            protocol,
            e.agents.engine.clone(),
            engine_config,
            e.store,
        )?
        .with_redactor(redactor);
        match e.restore {
            Some(calls) => debate.restore(calls),
            None => debate.create(rule, config_json).await?,
        }
        if !e.json {
            eprintln!("run {}", e.run_id);
        }
        e.progress.message(&format!("run {}", e.run_id));
        debate.run(rule, &decision_config, &e.progress).await
    });
    e.progress.finish();
    // A configuration the engine refuses (a protocol that needs logprobs on a backend without
    // them, a topology that does not fit the agents) is bad input, not a failure.
    let result = result.map_err(|err| match err {
        moot_engine::EngineError::Config(m) => anyhow::Error::new(InputError(m)),
        other => other.into(),
    })?;
    let wall = started.elapsed();
    let throughput = e.agents.local.first().map(|m| {
        let s = m.stats();
        let gen = s
            .generation_tokens_per_second()
            .map_or("n/a".to_string(), |t| format!("{t:.1}"));
        format!(
            "Embedded model: {gen} tok/s generating (all agents together), prompt tokens sent {} / processed {}",
            s.prompt_tokens, s.processed_prompt_tokens
        )
    });
    let summary = RunSummary {
        result: &result,
        protocol: protocol_name,
        agent_ids,
        wall,
        throughput,
    };
    if e.json {
        println!("{}", summary.json());
    } else {
        print!("{}", summary.text());
    }
    // The run is stored and shown either way; a debate in which no agent answered at all is a
    // failure, with each agent's reason, not "no answer" and success.
    if let Some(failures) = result.every_call_failed() {
        anyhow::bail!(
            "every agent failed (run {}): {}",
            result.run_id,
            failures.join("; ")
        );
    }
    Ok(())
}

/// Applies `key=value` to the configuration's [protocol] table (`faults.x` reaches its faults
/// table). The value is read as TOML (numbers, booleans) and otherwise taken as a string.
pub fn set_protocol_option(config: &mut Config, assignment: &str) -> Result<(), String> {
    let (key, value) = assignment
        .split_once('=')
        .ok_or_else(|| format!("--option {assignment:?}: expected KEY=VALUE"))?;
    let (key, value) = (key.trim(), value.trim());
    let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    let mut table =
        toml::Table::try_from(&config.protocol).map_err(|e| format!("--option {key}: {e}"))?;
    match key.split_once('.') {
        Some(("faults", field)) => {
            let faults = table
                .entry("faults")
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            if let toml::Value::Table(f) = faults {
                f.insert(field.to_string(), value);
            }
        }
        Some(_) => return Err(format!("--option {key}: no such protocol option")),
        None => {
            table.insert(key.to_string(), value);
        }
    }
    config.protocol = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| {
            format!(
                "--option {key}: {}",
                e.to_string().trim().replace('\n', " ")
            )
        })?;
    Ok(())
}
