//! `moot health`: whether each agent of a configuration can answer, one line per agent (what
//! freemad's `--health` does, and more: the probe is a real call to the agent as configured).
//!
//! For each agent: it is allowed and its program found and executable (`cli`), its model is
//! pulled (`local`), its API key variable is set (HTTP); then it is sent a one-line question and
//! must answer within the timeout. The command exits 1 when any agent is not healthy.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use moot_backends::{ChatMessage, CompletionRequest, LanguageModel, Role, SamplingParams};
use moot_config::{AgentConfig, Backend, Config};

use crate::input::InputError;
use moot_app::agents;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Configuration file (moot's TOML/YAML/JSON or freemad's YAML/JSON); without one, the
    /// embedded default team.
    #[arg(long)]
    config: Option<PathBuf>,
    /// How long each agent has to answer the probe (default: budget.max_agent_time_sec, else
    /// 60 s).
    #[arg(long, value_parser = crate::input::positive_count)]
    timeout_ms: Option<usize>,
}

/// The probe: short, with an answer any agent can give.
const PROBE: &str = "This is a health check. Reply with one word: ready";

/// Probes this many tokens at most: the answer is one word.
const PROBE_MAX_TOKENS: u32 = 16;

pub fn run(args: Args, rt: &tokio::runtime::Runtime) -> Result<()> {
    let mut config = match &args.config {
        Some(path) => {
            moot_config::dialect::read(path)
                .map_err(InputError::from)?
                .0
        }
        None => Config::default(),
    };
    if config.agents.is_empty() {
        config.agents = moot_config::default_agents(moot_config::DEFAULT_AGENTS);
    }
    let timeout = match args.timeout_ms {
        Some(ms) => Duration::from_millis(ms as u64),
        // The budget's conversion, which cannot panic (the value is checked as it is read).
        None => config
            .budget
            .budget()
            .max_call_time
            .unwrap_or(Duration::from_secs(60)),
    };
    let mut unhealthy = Vec::new();
    for (i, agent) in config.agents.iter().enumerate() {
        let verdict = check(&config, i, agent, timeout, rt);
        match &verdict {
            Ok(detail) => outln!("{}: ok ({}: {detail})", agent.id, agent.backend.name()),
            Err(problem) => {
                outln!("{}: FAILED ({}: {problem})", agent.id, agent.backend.name());
                unhealthy.push(agent.id.clone());
            }
        }
    }
    // After the agents' lines, which scripts read one per agent.
    if config
        .agents
        .iter()
        .any(|a| matches!(a.backend, moot_config::Backend::Cli { .. }))
    {
        outln!(
            "environment: {}",
            config
                .security
                .cli_env
                .describe(&config.security.cli_env_allow)
        );
    }
    if unhealthy.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "{} of {} not healthy: {}",
            unhealthy.len(),
            moot_core::text::plural(config.agents.len(), "agent"),
            unhealthy.join(", ")
        )
    }
}

/// What was found about agent `i`, or why it is not healthy.
fn check(
    config: &Config,
    i: usize,
    agent: &AgentConfig,
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
) -> Result<String, String> {
    config
        .check_agent_can_run(i, agent)
        .map_err(|e| e.message)?;
    match &agent.backend {
        Backend::Local { model } => model_pulled(model.as_deref())?,
        Backend::OpenAi { http, .. } | Backend::Anthropic { http } => {
            if let Some(var) = &http.api_key_env {
                if std::env::var_os(var).is_none_or(|v| v.is_empty()) {
                    return Err(format!("the API key variable {var} is not set"));
                }
            }
        }
        // Nothing outside the process to reach.
        Backend::Scripted { .. } | Backend::Sim { .. } => {
            return Ok("runs in process, nothing to reach".into())
        }
        Backend::Cli { .. } => {}
    }
    probe(config, agent, timeout, rt)
}

/// A known local model must already be pulled (health never downloads); a path must exist.
fn model_pulled(model: Option<&str>) -> Result<(), String> {
    use moot_backends::models::{ModelCache, ModelRef, ModelStatus};
    let name = model.unwrap_or(moot_backends::models::default_model().name);
    match ModelRef::parse(name).map_err(|e| e.to_string())? {
        ModelRef::Known(m) => {
            let cache = ModelCache::from_env().map_err(|e| e.to_string())?;
            match cache.status(m) {
                ModelStatus::Missing => Err(format!(
                    "model {} is not pulled (moot model pull {})",
                    m.name, m.name
                )),
                _ => Ok(()),
            }
        }
        ModelRef::Path(p) if p.is_file() => Ok(()),
        ModelRef::Path(p) => Err(format!("model file {} does not exist", p.display())),
    }
}

/// Sends the probe to the agent as configured and waits at most `timeout` for an answer.
fn probe(
    config: &Config,
    agent: &AgentConfig,
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
) -> Result<String, String> {
    let alone = Config {
        agents: vec![agent.clone()],
        ..config.clone()
    };
    let built = agents::build(&alone, moot_core::answer::AnswerKind::Text, &mut |_| {})
        .map_err(|e| format!("{e:#}"))?;
    let model: &dyn LanguageModel = built.engine[0].model.as_ref();
    let request = CompletionRequest {
        messages: vec![ChatMessage {
            role: Role::User,
            content: PROBE.into(),
        }],
        params: SamplingParams {
            max_tokens: Some(PROBE_MAX_TOKENS),
            ..built.engine[0].params.clone()
        },
        ..CompletionRequest::new(vec![])
    };
    let started = Instant::now();
    let answer = rt
        .block_on(async { tokio::time::timeout(timeout, model.complete(request)).await })
        .map_err(|_| format!("no answer within {:.1} s", timeout.as_secs_f64()))?
        .map_err(|e| e.to_string())?;
    let first_line = answer.text.lines().find(|l| !l.trim().is_empty());
    match first_line {
        Some(line) => Ok(format!(
            "answered in {} ms: {:?}",
            started.elapsed().as_millis(),
            truncate(line.trim(), 60)
        )),
        None => Err("answered with nothing".into()),
    }
}

fn truncate(s: &str, chars: usize) -> String {
    match s.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}
