//! Whether each agent of a configuration can answer (what freemad's `--health` does, and more:
//! the probe is a real call to the agent as configured).
//!
//! For each agent: the configuration's check that it can run (a `cli` agent's command allowed,
//! found and executable), then its backend's `ready` check (a `local` model pulled, an
//! HTTP agent's API key variable set), then — unless it runs inside moot's process — a one-line
//! question it must answer within the timeout.

use std::path::Path;
use std::time::{Duration, Instant};

use moot_backends::{ChatMessage, CompletionRequest, LanguageModel, Role, SamplingParams};
use moot_config::backend::cli::Cli;
use moot_config::{AgentConfig, Config, BACKENDS};

use crate::error::InputError;

/// The probe: short, with an answer any agent can give.
const PROBE: &str = "This is a health check. Reply with one word: ready";

/// Probes this many tokens at most: the answer is one word.
const PROBE_MAX_TOKENS: u32 = 16;

/// How long an agent has to answer when neither the caller nor the budget says.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// What was found about one agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentHealth {
    pub id: String,
    /// Its backend's name.
    pub backend: &'static str,
    /// What was found when it is healthy (`answered in 12 ms: "ready"`), or why it is not.
    pub verdict: Result<String, String>,
}

/// What was found about a whole team.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamHealth {
    pub agents: Vec<AgentHealth>,
    /// The environment `cli` agents are given, when the team has one.
    pub cli_environment: Option<String>,
}

impl TeamHealth {
    /// The ids of the agents that are not healthy, in order.
    pub fn unhealthy(&self) -> Vec<&str> {
        self.agents
            .iter()
            .filter(|a| a.verdict.is_err())
            .map(|a| a.id.as_str())
            .collect()
    }
}

/// The team to check: the configuration at `path` (moot's TOML/YAML/JSON or freemad's
/// YAML/JSON), else the embedded default team; a configuration without agents gets the
/// default team too.
pub fn team_config(path: Option<&Path>) -> Result<Config, InputError> {
    let mut config = match path {
        Some(path) => moot_config::dialect::read(path)?.0,
        None => Config::default(),
    };
    if config.agents.is_empty() {
        config.agents = moot_config::default_agents(moot_config::DEFAULT_AGENTS);
    }
    Ok(config)
}

/// How long each agent has to answer: `timeout_ms` when given, else the budget's
/// `max_agent_time_sec`, else 60 s.
pub fn probe_timeout(config: &Config, timeout_ms: Option<usize>) -> Duration {
    match timeout_ms {
        Some(ms) => Duration::from_millis(ms as u64),
        // The budget's conversion, which cannot panic (the value is checked as it is read).
        None => config
            .budget
            .budget()
            .max_call_time
            .unwrap_or(DEFAULT_TIMEOUT),
    }
}

/// Checks every agent of `config` in turn, each answer awaited at most `timeout`; `on_agent`
/// hears each agent's finding as soon as it is made (a slow agent holds up the others).
pub fn check_team(
    config: &Config,
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
    on_agent: &mut dyn FnMut(&AgentHealth),
) -> TeamHealth {
    let mut agents = Vec::with_capacity(config.agents.len());
    for (i, agent) in config.agents.iter().enumerate() {
        let health = AgentHealth {
            id: agent.id.clone(),
            backend: agent.backend.name(),
            verdict: check(config, i, agent, timeout, rt),
        };
        on_agent(&health);
        agents.push(health);
    }
    let has_cli = config
        .agents
        .iter()
        .any(|a| a.backend.settings::<Cli>().is_some());
    TeamHealth {
        agents,
        cli_environment: has_cli.then(|| {
            config
                .security
                .cli_env
                .describe(&config.security.cli_env_allow)
        }),
    }
}

/// What `moot health` checks for each backend before calling an agent, one line per backend
/// (for its help).
pub fn backend_checks() -> String {
    let width = BACKENDS.iter().map(|b| b.name.len()).max().unwrap_or(0);
    let mut lines = vec!["What is checked for each backend before the probe call:".to_string()];
    lines.extend(
        BACKENDS
            .iter()
            .map(|b| format!("  {:width$}  {}", b.name, b.health_checks)),
    );
    lines.join("\n")
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
    agent.backend.ready()?;
    if agent.backend.entry().in_process {
        return Ok("runs in process, nothing to reach".into());
    }
    probe(config, agent, timeout, rt)
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
    let built = crate::agents::build(&alone, moot_core::answer::AnswerKind::Text, &mut |_| {})
        .map_err(|e| format!("{e:#}"))?;
    let Some(engine_agent) = built.engine.first() else {
        return Err("no agent was built (a bug in moot)".into());
    };
    let model: &dyn LanguageModel = engine_agent.model.as_ref();
    let request = CompletionRequest {
        messages: vec![ChatMessage {
            role: Role::User,
            content: PROBE.into(),
        }],
        params: SamplingParams {
            max_tokens: Some(PROBE_MAX_TOKENS),
            ..engine_agent.params.clone()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    #[test]
    fn in_process_agents_are_healthy_without_a_call_and_failures_are_collected() {
        let config = moot_config::dialect::native::from_toml(
            "[[agents]]\nid = \"s\"\nbackend = \"sim\"\n\n[[agents]]\nid = \"r\"\nbackend = \"scripted\"\nresponses = [\"ready\"]\n\n[[agents]]\nid = \"o\"\nbackend = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"MOOT_TEST_HEALTH_NO_SUCH_KEY\"\n",
        )
        .expect("the configuration reads");
        let mut heard = Vec::new();
        let team = check_team(&config, Duration::from_secs(5), &runtime(), &mut |a| {
            heard.push(a.id.clone())
        });
        assert_eq!(heard, ["s", "r", "o"]);
        assert_eq!(
            team.agents[0].verdict,
            Ok("runs in process, nothing to reach".to_string())
        );
        assert_eq!(team.agents[1].backend, "scripted");
        assert_eq!(
            team.agents[2].verdict,
            Err("the API key variable MOOT_TEST_HEALTH_NO_SUCH_KEY is not set".to_string())
        );
        assert_eq!(team.unhealthy(), ["o"]);
        assert_eq!(team.cli_environment, None);
    }

    #[test]
    fn the_help_names_every_backend() {
        let help = backend_checks();
        for b in moot_config::backend_names() {
            assert!(help.contains(&format!("  {b} ")), "{help}");
        }
    }

    #[test]
    fn long_answers_are_cut_at_a_character() {
        assert_eq!(truncate("héllo", 2), "hé…");
        assert_eq!(truncate("ok", 60), "ok");
    }
}
