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
//! - **agents**: every way an agent acts (its backend and every key of it: command, arguments,
//!   working directory, `base_url`, `api_key_env`, model file, …) is this machine's. A stored
//!   agent runs only as this machine's agent of its id, and only when that agent is the same
//!   invocation in every key: one that differs in any key (the same command with other
//!   arguments) is refused, naming the key, as is one whose id this machine's configuration
//!   lacks — unless it acts on nothing this machine must grant (`self_contained` of
//!   `moot_config::BackendSettings`: `sim`, `scripted`, `human`, and `local` on a model of
//!   moot's own registry, which is how the default team is stored). Rate limits are this
//!   machine's agent's; an agent's part in the debate (role, persona, sampling, seed) is the
//!   store's;
//! - **the debate's texts**: a stored run's question (with its passage and options) must fit
//!   this machine's `debate.max_question_bytes`, and its tests the bound of a `--tests` file,
//!   as they would on `moot ask`.
//!
//! A stored agent that is not admitted refuses the command with a message naming the run (or
//! benchmark), the agent, and the setting to give with `--config`. Commands that only read a
//! run (`show`, `decide`, `report`, transcripts) read its stored settings as data, and go
//! through none of this.

use moot_config::{Config, ConfigError, DebateSize, Field, ProtocolName, Via};
use moot_core::debate::DebateSpec;
use moot_store::{BenchRecord, RunRecord};

use crate::ask::MAX_TESTS_BYTES;
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
    if let Stored::Run(run) = stored {
        check_texts(&at, run, &config)?;
    }
    if work == Work::Debate {
        take_agents(&at, &mut config, local, &config_arg)?;
        // What a file's agents must also be: programs that exist, in directories that do.
        config.check_agents_can_run().map_err(&refused)?;
    }
    Ok(config)
}

/// Each stored agent as this machine's agent of its id, which must be the same invocation in
/// every key; a stored agent without one only when it is self-contained (see the module's
/// documentation). Refused naming the agent and the key.
fn take_agents(
    at: &str,
    config: &mut Config,
    local: &Config,
    config_arg: &str,
) -> Result<(), InputError> {
    // What the store was written through: the stored texts are compared as redacted.
    let redactor = local
        .redactor()
        .map_err(|e| InputError(format!("{config_arg}: {e}")))?;
    let redact = |text: &str| redactor.redact(text).into_owned();
    for (i, agent) in config.agents.iter_mut().enumerate() {
        let id = moot_core::escape::terminal(&agent.id);
        match local.agents.iter().find(|a| a.id == agent.id) {
            Some(mine) => {
                if let Some(key) = agent.backend.differing_key(&mine.backend, &redact) {
                    let field = if key == "backend" {
                        format!(
                            "agents[{i}].backend: the store's is {}, this machine's {}",
                            agent.backend.name(),
                            mine.backend.name()
                        )
                    } else {
                        format!("agents[{i}].{key}")
                    };
                    return Err(InputError(format!(
                        "{at}'s stored configuration: agent {id:?} differs from this machine's agent {id:?} in {field}; a stored agent runs only as this machine's configuration ({config_arg}) defines it, the same in every key"
                    )));
                }
                // This machine's, whole: the stored one may hold `[REDACTED]` for a password.
                agent.backend = mine.backend.clone();
                agent.limits = mine.limits.clone();
            }
            None if agent.backend.self_contained() => {}
            None => {
                return Err(InputError(format!(
                    "{at}'s stored configuration: agent {id:?} (agents[{i}], backend {}) is not an agent of this machine's configuration, and a stored configuration grants nothing; give {config_arg} a configuration with an agent {id:?}, the same in every key",
                    agent.backend.name()
                )))
            }
        }
    }
    Ok(())
}

/// A stored run's texts within this machine's bounds, as `moot ask` would take them: the
/// question with its passage and options within `debate.max_question_bytes` (already this
/// machine's bound or lower), its tests within a `--tests` file's.
fn check_texts(at: &str, run: &RunRecord, config: &Config) -> Result<(), InputError> {
    let spec: Option<DebateSpec> = serde_json::from_value(run.spec.clone()).ok();
    let passage = spec.as_ref().and_then(|s| s.passage.as_deref());
    let choices = spec
        .as_ref()
        .map_or(0, |s| s.choices.iter().map(String::len).sum());
    // The options are counted with the passage: every call carries them.
    let carried = passage.map_or(0, str::len) + choices;
    // The spec's question is the one the debate asks; the run's column is what lists show.
    let question = spec
        .as_ref()
        .map_or(0, |s| s.question.len())
        .max(run.question.len());
    let text_len = question.saturating_add(carried);
    if text_len > config.debate.max_question_bytes {
        return Err(InputError(format!(
            "{at}: its question{} {text_len} bytes, more than this machine's debate.max_question_bytes = {} (every call carries it); raise debate.max_question_bytes to debate it",
            if carried > 0 { ", passage and options are" } else { " is" },
            config.debate.max_question_bytes
        )));
    }
    // A persona goes into every call of its agent, as the question does.
    let spec_personas = spec
        .iter()
        .flat_map(|s| &s.agents)
        .map(|a| (&a.id, &a.persona));
    let config_personas = config.agents.iter().map(|a| (&a.id, &a.persona));
    for (id, persona) in spec_personas.chain(config_personas) {
        let bytes = persona.as_ref().map_or(0, String::len);
        if bytes > config.debate.max_question_bytes {
            return Err(InputError(format!(
                "{at}: agent {:?}'s persona is {bytes} bytes, more than this machine's debate.max_question_bytes = {} (every call of the agent carries it)",
                moot_core::escape::terminal(id),
                config.debate.max_question_bytes
            )));
        }
    }
    match spec.as_ref().and_then(|s| s.tests.as_ref()) {
        Some(tests) => check_tests(at, tests),
        None => Ok(()),
    }
}

/// A stored suite within a `--tests` file's bound: every text of it goes to the sandbox with
/// the program.
pub(crate) fn check_tests(
    at: &str,
    suite: &moot_core::validation::TestSuite,
) -> Result<(), InputError> {
    let bytes = suite.preamble.len()
        + suite.reference.len()
        + suite.tests.len()
        + suite.candidate.as_ref().map_or(0, String::len);
    if bytes as u64 > MAX_TESTS_BYTES.bytes {
        return Err(InputError(format!(
            "{at}: its tests are {bytes} bytes, more than the {} bytes {}",
            MAX_TESTS_BYTES.bytes, MAX_TESTS_BYTES.reader
        )));
    }
    Ok(())
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
        bound_value(key, value, bound, &mut notice);
    }
    for (key, value, bound) in [
        (
            "debate.max_question_bytes",
            &mut d.max_question_bytes,
            ld.max_question_bytes,
        ),
        (
            "debate.max_concurrent_calls",
            &mut d.max_concurrent_calls,
            ld.max_concurrent_calls,
        ),
    ] {
        bound_value(key, value, bound, &mut notice);
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

/// `value` bounded by `bound`; a change said to `notice`.
fn bound_value<T: PartialOrd + Copy + ToString>(
    key: &str,
    value: &mut T,
    bound: T,
    notice: &mut dyn FnMut(&str, String, String),
) {
    if *value > bound {
        notice(key, value.to_string(), bound.to_string());
        *value = bound;
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
            "debate": {"hard_timeout_ms": 999999999, "soft_timeout_ms": 1000, "rounds": 2, "seed": 7, "max_question_bytes": 999999999},
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
            "debate.max_question_bytes",
        ] {
            assert!(
                notices
                    .iter()
                    .any(|n| n.starts_with("run r1: ") && n.contains(key)),
                "{key}: {notices:?}"
            );
        }
        assert_eq!(notices.len(), 5, "{notices:?}");
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

    /// Refused with every one of `needles` in the message.
    fn refused(stored: serde_json::Value, here: &Config, needles: &[&str]) {
        let e = admitted(stored.clone(), here).unwrap_err();
        for needle in needles {
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn a_stored_command_runs_only_as_this_machines_agent_of_its_id_the_same_in_every_key() {
        let sh = |args: &[&str]| {
            agent(json!({"id": "a", "backend": "cli", "command": "/bin/sh", "args": args}))
        };
        let stored = sh(&["-c", "id"]);
        let whose = [
            "run r1's stored configuration",
            "agent \"a\"",
            "agents[0], backend cli",
            "grants nothing",
            "--config",
        ];
        refused(stored.clone(), &Config::default(), &whose);
        // Allowing the interpreter for an agent of its own grants the store nothing.
        let allowing = local(
            "[security]\ncli_allowed_commands = [\"/bin/sh\"]\n\n[[agents]]\nid = \"b\"\nbackend = \"cli\"\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"id\"]\n",
        );
        refused(stored.clone(), &allowing, &whose);
        // The same id with the same command and other arguments: a partial match, refused.
        let same_command = local(
            "[security]\ncli_allowed_commands = [\"/bin/sh\"]\n\n[[agents]]\nid = \"a\"\nbackend = \"cli\"\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"echo ok\"]\n",
        );
        refused(
            stored.clone(),
            &same_command,
            &["agent \"a\" differs", "agents[0].args", "--config"],
        );
        refused(
            agent(
                json!({"id": "a", "backend": "cli", "command": "/bin/sh", "args": ["-c", "echo ok"], "working_dir": "/tmp"}),
            ),
            &same_command,
            &["agents[0].working_dir"],
        );
        refused(
            agent(
                json!({"id": "a", "backend": "cli", "command": "/bin/sh", "args": ["-c", "echo ok"], "mode_arg": false}),
            ),
            &same_command,
            &["agents[0].mode_arg"],
        );
        // Another backend under the id: named as such.
        let scripted =
            local("[[agents]]\nid = \"a\"\nbackend = \"scripted\"\nresponses = [\"1\"]\n");
        refused(
            stored,
            &scripted,
            &["agents[0].backend: the store's is cli, this machine's scripted"],
        );
        // The same invocation in every key: it runs, as this machine defines it.
        let (c, _) = admitted(sh(&["-c", "echo ok"]), &same_command).unwrap();
        let cli = c.agents[0]
            .backend
            .settings::<moot_config::backend::cli::Cli>();
        assert!(cli.is_some_and(|c| c.args == ["-c", "echo ok"]), "{cli:?}");
    }

    #[test]
    fn a_stored_endpoint_and_key_variable_run_only_as_this_machines_agent_of_its_id() {
        let http = |id: &str, url: &str, key: Option<&str>| json!({"id": id, "backend": "openai", "model": "m", "base_url": url, "api_key_env": key});
        let stored = agent(http("a", "http://127.0.0.1:9/v1", Some("GITHUB_TOKEN")));
        refused(
            stored.clone(),
            &Config::default(),
            &["agent \"a\"", "backend openai", "grants nothing"],
        );
        // Another agent of this machine sending there with that key grants nothing.
        let other_agent = local(
            "[[agents]]\nid = \"b\"\nbackend = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"GITHUB_TOKEN\"\n",
        );
        refused(stored.clone(), &other_agent, &["agent \"a\" (agents[0]"]);
        let mine = |key: &str| {
            local(&format!(
                "[[agents]]\nid = \"a\"\nbackend = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"{key}\"\n"
            ))
        };
        refused(stored.clone(), &mine("MINE"), &["agents[0].api_key_env"]);
        refused(
            agent(http("a", "http://127.0.0.1:8/v1", Some("MINE"))),
            &mine("MINE"),
            &["agents[0].base_url"],
        );
        refused(
            agent(http("a", "http://127.0.0.1:9/v1", None)),
            &mine("MINE"),
            &["agents[0].api_key_env"],
        );
        refused(
            agent(
                json!({"id": "a", "backend": "openai", "model": "m", "base_urls": ["http://127.0.0.1:9/v1", "http://evil/v1"], "api_key_env": "MINE"}),
            ),
            &mine("MINE"),
            &["agents[0].base_url"],
        );
        assert!(admitted(stored, &mine("GITHUB_TOKEN")).is_ok());
        // A password in the URL was stored redacted: this machine's agent runs, with it.
        let with_password = local(
            "[[agents]]\nid = \"a\"\nbackend = \"openai\"\nmodel = \"m\"\nbase_url = \"http://alice:HunterPassw0rd4242@127.0.0.1:9/v1\"\n",
        );
        let redactor = with_password.redactor().unwrap();
        let stored_url = |url: &str| redactor.redact(url).into_owned();
        let as_stored = stored_url("http://alice:HunterPassw0rd4242@127.0.0.1:9/v1");
        assert!(!as_stored.contains("HunterPassw0rd4242"), "{as_stored}");
        let (c, _) = admitted(agent(http("a", &as_stored, None)), &with_password).unwrap();
        assert_eq!(c.agents[0].backend, with_password.agents[0].backend);
        refused(
            agent(http(
                "a",
                &stored_url("http://alice:HunterPassw0rd4242@127.0.0.1:8/v1"),
                None,
            )),
            &with_password,
            &["agents[0].base_url"],
        );
        // Anthropic's own API with its own key is this machine's key too.
        refused(
            agent(
                json!({"id": "a", "backend": "anthropic", "model": "m", "api_key_env": "ANTHROPIC_API_KEY"}),
            ),
            &Config::default(),
            &["backend anthropic", "grants nothing"],
        );
    }

    #[test]
    fn a_stored_model_file_loads_only_as_this_machines_agent_of_its_id() {
        let file = agent(json!({"id": "a", "backend": "local", "model": "/etc/models/x.gguf"}));
        refused(file.clone(), &Config::default(), &["backend local"]);
        let other =
            local("[[agents]]\nid = \"b\"\nbackend = \"local\"\nmodel = \"/etc/models/x.gguf\"\n");
        refused(file.clone(), &other, &["agent \"a\" (agents[0]"]);
        let same =
            local("[[agents]]\nid = \"a\"\nbackend = \"local\"\nmodel = \"/etc/models/x.gguf\"\n");
        assert!(admitted(file, &same).is_ok());
        // A model of moot's own registry (the default team's), a simulation, fixed replies and
        // a person need no agent here.
        for stored in [
            json!({"id": "a", "backend": "local"}),
            json!({"id": "a", "backend": "local", "model": "smollm2-135m"}),
            json!({"id": "a", "backend": "sim"}),
            json!({"id": "a", "backend": "human"}),
        ] {
            assert!(
                admitted(agent(stored.clone()), &Config::default()).is_ok(),
                "{stored}"
            );
        }
    }

    #[test]
    fn a_stored_question_passage_options_and_tests_are_held_to_this_machines_bounds() {
        let with = |question: &str, spec: serde_json::Value| {
            let mut r = run(json!({"debate": {"max_question_bytes": 1_000_000_000u64}}));
            r.question = question.to_string();
            r.spec = spec;
            let mut notices = Vec::new();
            admit(
                Stored::Run(&r),
                &local("[debate]\nmax_question_bytes = 100\n"),
                Work::Debate,
                Via::Cli,
                &mut |n| notices.push(n.to_string()),
            )
            .map(|_| notices)
            .map_err(|e| e.0)
        };
        let spec = |passage: Option<&str>, options: &[&str], tests: Option<&str>| {
            let mut s = json!({"question": "q", "kind": "numeric", "agents": [], "rounds": 1, "seed": 0, "options": options});
            if let Some(p) = passage {
                s["passage"] = json!(p);
            }
            if let Some(t) = tests {
                s["tests"] = json!({"tests": t});
            }
            s
        };
        let notices = with(&"x".repeat(100), spec(None, &[], None)).unwrap();
        assert!(
            notices
                .iter()
                .any(|n| n.contains("debate.max_question_bytes = 1000000000")),
            "{notices:?}"
        );
        let e = with(&"x".repeat(101), spec(None, &[], None)).unwrap_err();
        assert!(e.contains("run r1: its question is 101 bytes"), "{e}");
        assert!(e.contains("debate.max_question_bytes = 100"), "{e}");
        let e = with(
            "q",
            spec(Some(&"p".repeat(90)), &["a".repeat(10).as_str()], None),
        )
        .unwrap_err();
        assert!(e.contains("passage and options are 101 bytes"), "{e}");
        let big = "t".repeat((16 << 20) + 1);
        let e = with("q", spec(None, &[], Some(&big))).unwrap_err();
        assert!(e.contains("its tests are 16777217 bytes"), "{e}");
        assert!(with("q", spec(Some("p"), &["a"], Some("assert True"))).is_ok());
        let mut personas = spec(None, &[], None);
        personas["agents"] = json!([{"id": "a", "persona": "p".repeat(101)}]);
        let e = with("q", personas).unwrap_err();
        assert!(e.contains("agent \"a\"'s persona is 101 bytes"), "{e}");
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
