//! A configuration read back from the store, admitted for work on this machine: the one place
//! every command that works from a stored configuration (`moot resume`, `moot fork`,
//! `moot bench --fork-of`, `moot work`, `moot regrade`) takes it from ([`admit`]).
//!
//! Authority is local (DESIGN §13): a store travels (`moot store copy`, a shared PostgreSQL, a
//! file someone sends), and any writer of it can write a run's configuration. So a stored
//! configuration supplies the debate — protocol and options, rounds, prompts and personas,
//! seeds, sampling, the decision settings, the budget — read with a file's schema and checked
//! as a file is; and this machine's configuration (`--config FILE`, else the defaults) supplies
//! the authority:
//!
//! - **taken whole from this machine**: `[security]` (what `cli` agents may run, their
//!   environment, the redaction patterns, the output caps), `[retry]`, `[logging]` (the log
//!   file), `[output]` (where transcripts are written), `[serve]` (the upstream and its key),
//!   and `validation.python`;
//! - **bounded by this machine** (the smaller value is used, with a notice naming the run and
//!   the key): the sandbox's `validation.timeout_ms`, `memory_mb` and `processes`, the
//!   deadlines `debate.soft_timeout_ms` and `hard_timeout_ms`, `debate.max_concurrent_calls`,
//!   and each `[budget]` limit; the sandbox is on only when both say so. The debate's size is
//!   checked against this machine's limits: a stored token budget raises none;
//! - **agents**: a stored agent whose id is one of this machine's configured agents gets that
//!   agent's backend and rate limits (`--config` supplies the agents); any other stored agent
//!   is admitted only when everything it would reach is this machine's to give:
//!   - `cli`: its command is in this machine's `security.cli_allowed_commands` (which then
//!     grants it with any arguments, as in a file), and a `working_dir` only one that an agent
//!     of this machine runs in; its environment is this machine's `cli_env` already;
//!   - `openai` and `anthropic`: every `base_url` it would send requests to, with the key
//!     variable it names, is one an agent of this machine uses with that key variable (or with
//!     none asked for), or Anthropic's own API with `ANTHROPIC_API_KEY` or no key;
//!   - `local`: a known model name (fetched from moot's own registry, as the default team's
//!     is), or a model file that an agent of this machine names: a store chooses no file this
//!     machine reads;
//!   - `sim` and `scripted` reach nothing.
//!
//! A stored agent that is not admitted refuses the command with a message naming the run (or
//! benchmark), the agent, and the setting to give with `--config`. Commands that only read a
//! run (`show`, `decide`, `report`, transcripts) read its stored settings as data, and go
//! through none of this.

use moot_config::{AgentConfig, Config, ConfigError, DebateSize, Field, ProtocolName, Via};
use moot_store::{BenchRecord, RunRecord};

use crate::error::InputError;

/// Where a stored configuration comes from.
#[derive(Debug, Clone, Copy)]
pub enum Stored<'a> {
    /// A run: the configuration its debate ran with, read under the protocol it ran (a
    /// benchmark's debates store the benchmark's one configuration for all its protocols).
    Run(&'a RunRecord),
    /// A benchmark: one configuration for all its protocols.
    Bench(&'a BenchRecord),
}

impl Stored<'_> {
    /// `run ID` or `benchmark NAME`, as messages name it (escaped for a terminal: a name is
    /// stored text).
    pub fn name(&self) -> String {
        let (what, name) = match self {
            Stored::Run(run) => ("run", &run.id),
            Stored::Bench(bench) => ("benchmark", &bench.name),
        };
        format!("{what} {}", moot_core::escape::terminal(name))
    }

    fn config(&self) -> &serde_json::Value {
        match self {
            Stored::Run(run) => &run.config,
            Stored::Bench(bench) => &bench.config,
        }
    }

    fn protocols(&self) -> Vec<&str> {
        match self {
            Stored::Run(run) => vec![run.protocol.as_str()],
            Stored::Bench(bench) => bench.protocols.iter().map(String::as_str).collect(),
        }
    }
}

/// What the stored configuration is admitted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Running debates: its agents are built and asked.
    Debate,
    /// Grading stored programs again: only the sandbox runs, no agent.
    Grading,
}

/// The stored configuration of `stored`, admitted for `work` on this machine, whose
/// configuration is `local` (see the module's documentation for the rule). `on_notice` hears
/// each stored limit bounded by this machine's. Refused, naming the run or benchmark and the
/// key, when the stored configuration does not read, fails a file's checks, or (for
/// [`Work::Debate`]) has an agent this machine does not allow.
pub fn admit(
    stored: Stored<'_>,
    local: &Config,
    work: Work,
    via: Via,
    on_notice: &mut dyn FnMut(&str),
) -> Result<Config, InputError> {
    let at = stored.name();
    let config_arg = via.name(Field::Config);
    let refused = |e: ConfigError| InputError(format!("{at}'s stored configuration: {e}"));
    let mut config =
        moot_config::dialect::native::from_value(stored.config().clone()).map_err(&refused)?;
    if let Stored::Run(run) = stored {
        config.debate.protocol = run
            .protocol
            .parse::<ProtocolName>()
            .map_err(|e| InputError(format!("{at}: protocol {e}")))?;
        config.protocol = config.protocol.restricted_to(reads(&run.protocol));
    }
    let protocols = stored.protocols();
    // Checked as a file is: every value, under each protocol it is used with.
    for name in &protocols {
        let mut under = config.clone();
        if let Ok(protocol) = name.parse::<ProtocolName>() {
            under.debate.protocol = protocol;
        }
        under.protocol = under.protocol.restricted_to(reads(name));
        under.validate_values().map_err(&refused)?;
    }
    // The size, against this machine's limits: only its budget may pay for a bigger debate.
    let mut sized = config.clone();
    sized.budget.max_total_tokens = local.budget.max_total_tokens;
    sized
        .validate_size_for(&DebateSize::of(&config), &protocols)
        .map_err(|e| {
            InputError(format!(
                "{at}'s stored configuration: {e} (this machine's configuration, given with {config_arg}; a stored budget raises no limit)"
            ))
        })?;
    take_authority(&at, &mut config, local, via, on_notice);
    if work == Work::Debate {
        supply_agents(&mut config, local);
        for (i, agent) in config.agents.iter().enumerate() {
            if let Some(why) = not_allowed(i, agent, local) {
                return Err(InputError(format!(
                    "{at}'s stored configuration: agent {:?} ({why}; a stored configuration grants nothing. Give {config_arg} a configuration that allows it, or one with an agent {:?} to take its place",
                    agent.id, agent.id
                )));
            }
        }
        // What a file's agents must also be: programs that exist, in directories that do.
        config.check_agents_can_run().map_err(&refused)?;
    }
    Ok(config)
}

/// The options protocol `name` reads.
fn reads(name: &str) -> &'static [&'static str] {
    moot_core::protocol::PROTOCOLS
        .iter()
        .find(|p| p.name == name)
        .map_or(&[][..], |p| p.options)
}

/// This machine's settings in place of the stored ones: its sections whole, its limits as
/// bounds of the stored ones (each bound said to `on_notice`).
fn take_authority(
    at: &str,
    config: &mut Config,
    local: &Config,
    via: Via,
    on_notice: &mut dyn FnMut(&str),
) {
    let config_arg = via.name(Field::Config);
    config.security = local.security.clone();
    config.retry = local.retry.clone();
    config.logging = local.logging.clone();
    config.output = local.output.clone();
    config.serve = local.serve.clone();
    config.validation.python = local.validation.python.clone();
    config.validation.sandbox &= local.validation.sandbox;
    let mut notice = |key: &str, stored: String, bound: String| {
        on_notice(&format!(
            "{at}: the stored {key} = {stored} is over this machine's limit of {bound}; {bound} is used ({config_arg} sets this machine's limits)"
        ));
    };
    let (v, lv) = (&mut config.validation, &local.validation);
    let (d, ld) = (&mut config.debate, &local.debate);
    for (key, value, bound) in [
        ("validation.timeout_ms", &mut v.timeout_ms, lv.timeout_ms),
        ("validation.memory_mb", &mut v.memory_mb, lv.memory_mb),
        ("validation.processes", &mut v.processes, lv.processes),
        (
            "debate.soft_timeout_ms",
            &mut d.soft_timeout_ms,
            ld.soft_timeout_ms,
        ),
        (
            "debate.hard_timeout_ms",
            &mut d.hard_timeout_ms,
            ld.hard_timeout_ms,
        ),
    ] {
        if *value > bound {
            notice(key, value.to_string(), bound.to_string());
            *value = bound;
        }
    }
    if d.max_concurrent_calls > ld.max_concurrent_calls {
        notice(
            "debate.max_concurrent_calls",
            d.max_concurrent_calls.to_string(),
            ld.max_concurrent_calls.to_string(),
        );
        d.max_concurrent_calls = ld.max_concurrent_calls;
    }
    let (b, lb) = (&mut config.budget, &local.budget);
    for (key, value, bound) in [
        (
            "budget.max_total_time_sec",
            &mut b.max_total_time_sec,
            lb.max_total_time_sec,
        ),
        (
            "budget.max_round_time_sec",
            &mut b.max_round_time_sec,
            lb.max_round_time_sec,
        ),
        (
            "budget.max_agent_time_sec",
            &mut b.max_agent_time_sec,
            lb.max_agent_time_sec,
        ),
    ] {
        bound_option(key, value, bound, &mut notice);
    }
    for (key, value, bound) in [
        (
            "budget.max_total_tokens",
            &mut b.max_total_tokens,
            lb.max_total_tokens,
        ),
        (
            "budget.max_tokens_per_agent_per_round",
            &mut b.max_tokens_per_agent_per_round,
            lb.max_tokens_per_agent_per_round,
        ),
    ] {
        bound_option(key, value, bound, &mut notice);
    }
}

/// `value` bounded by `bound`, where unset is no limit; a change said to `notice`.
fn bound_option<T: PartialOrd + Copy + ToString>(
    key: &str,
    value: &mut Option<T>,
    bound: Option<T>,
    notice: &mut dyn FnMut(&str, String, String),
) {
    let Some(limit) = bound else {
        return;
    };
    match *value {
        Some(v) if v <= limit => {}
        stored => {
            let shown = stored.map_or("unset (no limit)".to_string(), |v| v.to_string());
            notice(key, shown, limit.to_string());
            *value = Some(limit);
        }
    }
}

/// Each stored agent whose id is one of this machine's agents takes that agent's backend and
/// rate limits; its part in the debate (role, persona, contract, sampling, seed) stays.
fn supply_agents(config: &mut Config, local: &Config) {
    for agent in &mut config.agents {
        if let Some(mine) = local.agents.iter().find(|a| a.id == agent.id) {
            agent.backend = mine.backend.clone();
            agent.limits = mine.limits.clone();
        }
    }
}

/// Why stored agent `i` may not run on this machine, if it may not: the key and what it would
/// reach, said as the middle of a sentence (each backend says: `not_allowed` of
/// `moot_config::BackendSettings`).
fn not_allowed(i: usize, agent: &AgentConfig, local: &Config) -> Option<String> {
    agent
        .backend
        .not_allowed(&format!("agents[{i}]"), &local.here())
}

#[cfg(test)]
mod tests {
    use super::*;
    use moot_store::RunStatus;
    use serde_json::json;

    fn run(config: serde_json::Value) -> RunRecord {
        RunRecord {
            id: "r1".into(),
            created_at: String::new(),
            question: "q".into(),
            protocol: "som".into(),
            rule: String::new(),
            spec: json!({}),
            config,
            status: RunStatus::Done,
            answer: None,
            finished_at: None,
            silent_ms: None,
            owner: None,
            fork: None,
        }
    }

    fn local(toml: &str) -> Config {
        moot_config::dialect::native::from_toml(toml).unwrap()
    }

    fn admitted(
        config: serde_json::Value,
        local: &Config,
    ) -> Result<(Config, Vec<String>), String> {
        let mut notices = Vec::new();
        let r = run(config);
        let admitted = admit(Stored::Run(&r), local, Work::Debate, Via::Cli, &mut |n| {
            notices.push(n.to_string())
        });
        admitted.map(|c| (c, notices)).map_err(|e| e.0)
    }

    /// A stored team of the agent `fields` and a scripted one.
    fn agent(fields: serde_json::Value) -> serde_json::Value {
        json!({"agents": [fields, {"id": "z", "backend": "scripted", "responses": ["1"]}]})
    }

    #[test]
    fn authority_comes_from_this_machine() {
        let stored = json!({
            "security": {"cli_allowed_commands": ["/bin/sh"], "cli_env": "inherit"},
            "logging": {"file": "/tmp/elsewhere.log"},
            "output": {"transcript_dir": "/tmp/elsewhere"},
            "serve": {"upstream": "http://evil/v1", "upstream_api_key_env": "GITHUB_TOKEN"},
            "retry": {"max_retries": 1000},
            "validation": {"python": "/usr/bin/evil", "timeout_ms": 40000, "processes": 4096, "memory_mb": 1048576},
            "debate": {"hard_timeout_ms": 999999999, "soft_timeout_ms": 1000, "rounds": 2, "seed": 7},
        });
        let here = Config::default();
        let (c, notices) = admitted(stored, &here).unwrap();
        assert_eq!(c.security, here.security);
        assert_eq!(c.logging, here.logging);
        assert_eq!(c.output, here.output);
        assert_eq!(c.serve, here.serve);
        assert_eq!(c.retry, here.retry);
        assert_eq!(c.validation.python, None);
        assert_eq!(c.validation.limits(), here.validation.limits());
        assert_eq!(c.debate.hard_timeout_ms, here.debate.hard_timeout_ms);
        // A tighter stored limit is kept; the debate's own settings are the store's.
        assert_eq!(c.debate.soft_timeout_ms, 1000);
        assert_eq!((c.debate.rounds, c.debate.seed), (2, 7));
        for key in [
            "validation.timeout_ms",
            "validation.processes",
            "validation.memory_mb",
            "debate.hard_timeout_ms",
        ] {
            assert!(
                notices
                    .iter()
                    .any(|n| n.starts_with("run r1: ") && n.contains(key)),
                "{key}: {notices:?}"
            );
        }
        assert_eq!(notices.len(), 4, "{notices:?}");
    }

    #[test]
    fn a_budget_limit_of_this_machine_bounds_the_stored_one() {
        let here = local("[budget]\nmax_total_tokens = 1000\n");
        let (c, notices) = admitted(json!({}), &here).unwrap();
        assert_eq!(c.budget.max_total_tokens, Some(1000));
        assert!(
            notices[0].contains("budget.max_total_tokens = unset"),
            "{notices:?}"
        );
        let (c, notices) = admitted(json!({"budget": {"max_total_tokens": 10}}), &here).unwrap();
        assert_eq!(c.budget.max_total_tokens, Some(10));
        assert!(notices.is_empty());
        // A stored budget pays for no bigger debate.
        let e = admitted(
            json!({"debate": {"rounds": 12}, "budget": {"max_total_tokens": u64::MAX}}),
            &Config::default(),
        )
        .unwrap_err();
        assert!(
            e.starts_with("run r1's stored configuration: debate.rounds = 12 is over"),
            "{e}"
        );
    }

    #[test]
    fn invalid_stored_values_are_refused_naming_the_run_and_key() {
        for (stored, key) in [
            (json!({"debate": {"rounds": -1}}), "debate.rounds"),
            (
                json!({"validation": {"timeout_ms": 0}}),
                "validation.timeout_ms",
            ),
            (json!({"debate": {"min_agents": 0}}), "debate.min_agents"),
            (
                agent(json!({"id": "a", "backend": "sim", "sim": {"accuracy": 2.0}})),
                "agents[0].sim.accuracy",
            ),
        ] {
            let e = admitted(stored.clone(), &Config::default()).unwrap_err();
            assert!(
                e.starts_with("run r1's stored configuration: "),
                "{stored}: {e}"
            );
            assert!(e.contains(key), "{stored}: {e}");
        }
    }

    #[test]
    fn a_stored_command_runs_only_when_this_machine_allows_it() {
        let sh =
            agent(json!({"id": "a", "backend": "cli", "command": "/bin/sh", "args": ["-c", "id"]}));
        let e = admitted(sh.clone(), &Config::default()).unwrap_err();
        for needle in [
            "run r1",
            "agent \"a\"",
            "agents[0].command",
            "\"/bin/sh\"",
            "security.cli_allowed_commands",
            "--config",
        ] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
        let allowing = local("[security]\ncli_allowed_commands = [\"/bin/sh\"]\n");
        let (c, _) = admitted(sh.clone(), &allowing).unwrap();
        let cli = c.agents[0]
            .backend
            .settings::<moot_config::backend::cli::Cli>();
        assert!(cli.is_some_and(|c| c.args == ["-c", "id"]), "{cli:?}");
        // A working directory only one that an agent here runs in.
        let elsewhere = agent(
            json!({"id": "a", "backend": "cli", "command": "/bin/sh", "working_dir": "/tmp"}),
        );
        let e = admitted(elsewhere, &allowing).unwrap_err();
        assert!(e.contains("agents[0].working_dir"), "{e}");
        // This machine's agent of the same id takes its place.
        let supplied =
            local("[[agents]]\nid = \"a\"\nbackend = \"scripted\"\nresponses = [\"1\"]\n");
        let (c, _) = admitted(sh, &supplied).unwrap();
        assert_eq!(c.agents[0].backend.name(), "scripted");
    }

    #[test]
    fn requests_go_only_where_an_agent_of_this_machine_sends_them_with_its_key() {
        let http = |url: &str, key: Option<&str>| {
            agent(
                json!({"id": "a", "backend": "openai", "model": "m", "base_url": url, "api_key_env": key}),
            )
        };
        let stored = http("http://127.0.0.1:9/v1", Some("GITHUB_TOKEN"));
        let e = admitted(stored.clone(), &Config::default()).unwrap_err();
        for needle in [
            "agents[0].base_url",
            "\"http://127.0.0.1:9/v1\"",
            "api_key_env GITHUB_TOKEN",
        ] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
        let same_url_other_key = local(
            "[[agents]]\nid = \"b\"\nbackend = \"openai\"\nmodel = \"x\"\nbase_url = \"http://127.0.0.1:9/v1/\"\napi_key_env = \"MINE\"\n",
        );
        assert!(admitted(stored, &same_url_other_key).is_err());
        assert!(admitted(
            http("http://127.0.0.1:9/v1", Some("MINE")),
            &same_url_other_key
        )
        .is_ok());
        assert!(admitted(http("http://127.0.0.1:9/v1", None), &same_url_other_key).is_ok());
        assert!(admitted(http("http://127.0.0.1:8/v1", None), &same_url_other_key).is_err());
        // Anthropic's own API with its own key variable is no one's to grant.
        let anthropic = |key: &str| {
            agent(json!({"id": "a", "backend": "anthropic", "model": "m", "api_key_env": key}))
        };
        assert!(admitted(anthropic("ANTHROPIC_API_KEY"), &Config::default()).is_ok());
        assert!(admitted(anthropic("GITHUB_TOKEN"), &Config::default()).is_err());
        // Replicas: every one must be allowed.
        let replicas = agent(
            json!({"id": "a", "backend": "openai", "model": "m", "base_urls": ["http://127.0.0.1:9/v1", "http://evil/v1"]}),
        );
        let e = admitted(replicas, &same_url_other_key).unwrap_err();
        assert!(e.contains("base_urls \"http://evil/v1\""), "{e}");
    }

    #[test]
    fn a_stored_model_file_loads_only_when_an_agent_here_names_it() {
        let file = agent(json!({"id": "a", "backend": "local", "model": "/etc/models/x.gguf"}));
        let e = admitted(file.clone(), &Config::default()).unwrap_err();
        assert!(e.contains("agents[0].model"), "{e}");
        let here =
            local("[[agents]]\nid = \"b\"\nbackend = \"local\"\nmodel = \"/etc/models/x.gguf\"\n");
        assert!(admitted(file, &here).is_ok());
        assert!(admitted(
            agent(json!({"id": "a", "backend": "local"})),
            &Config::default()
        )
        .is_ok());
    }

    #[test]
    fn grading_builds_no_agent_and_so_checks_none() {
        let sh = agent(json!({"id": "a", "backend": "cli", "command": "/bin/sh"}));
        let r = run(sh);
        let c = admit(
            Stored::Run(&r),
            &Config::default(),
            Work::Grading,
            Via::Cli,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(c.security, Config::default().security);
    }
}
