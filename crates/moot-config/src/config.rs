//! [`Config`]: every section together, what the engine and the decision rules are given from
//! it, and the checks that span sections.

use moot_core::answer::AnswerKind;
use moot_core::debate::AgentRole;
use moot_core::protocol::{
    build_protocol, Protocol, ProtocolEntry, ProtocolOptions, TopologyName, PROTOCOLS,
};
use moot_core::text::plural;
use serde::{Deserialize, Serialize};

use crate::agent::{read_agents, AgentConfig, DEFAULT_AGENTS};
use crate::backend::cli::Cli;
use crate::backend::entry::Building;
use crate::budget::BudgetSection;
use crate::cache::CacheSection;
use crate::debate::DebateSection;
use crate::error::{invalid, ConfigError};
use crate::logging::LoggingSection;
use crate::output::OutputSection;
use crate::retry::RetrySection;
use crate::security::SecuritySection;
use crate::serve::ServeSection;
use crate::size::DebateSize;
use crate::telemetry::TelemetrySection;
use crate::validation::ValidationSection;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub debate: DebateSection,
    /// Options of the chosen protocol (topology, masking, ordering, SVR-MAD, faults…).
    #[serde(default)]
    pub protocol: ProtocolOptions,
    #[serde(default)]
    pub security: SecuritySection,
    /// Retries of failed calls (network and process backends).
    #[serde(default)]
    pub retry: RetrySection,
    /// Limits on each debate (freemad's `budget` block).
    #[serde(default)]
    pub budget: BudgetSection,
    /// The request cache.
    #[serde(default)]
    pub cache: CacheSection,
    /// Files written after each debate (freemad transcripts).
    #[serde(default)]
    pub output: OutputSection,
    /// Checking code answers in the sandbox.
    #[serde(default)]
    pub validation: ValidationSection,
    /// A log file of each debate's events.
    #[serde(default)]
    pub logging: LoggingSection,
    /// `moot serve`'s upstream for `moot/PROTOCOL/MODEL`.
    #[serde(default)]
    pub serve: ServeSection,
    /// Where traces go (OpenTelemetry's variables win over it).
    #[serde(default)]
    pub telemetry: TelemetrySection,
    #[serde(default, deserialize_with = "read_agents")]
    pub agents: Vec<AgentConfig>,
}

impl DebateSize {
    /// The size a configuration gives on its own: its agents (or [`DEFAULT_AGENTS`]) and
    /// `debate.rounds`.
    pub fn of(config: &Config) -> DebateSize {
        DebateSize {
            // Team sizes count debaters: agents with another role come on top (see `resize`).
            agents: match config.agents.iter().filter(|a| a.role.is_debater()).count() {
                0 => DEFAULT_AGENTS,
                debaters => debaters,
            },
            rounds: config.debate.rounds,
            agents_from: None,
            rounds_from: None,
            file: None,
        }
    }
}

/// The registry entry of the protocol called `name`.
pub(crate) fn protocol_entry(name: &str) -> Option<&'static ProtocolEntry> {
    PROTOCOLS.iter().find(|p| p.name == name)
}

impl Config {
    /// Deadlines and parallelism of every debate.
    pub fn engine(&self) -> moot_engine::EngineConfig {
        let d = &self.debate;
        let defaults = moot_engine::EngineConfig::default();
        moot_engine::EngineConfig {
            soft_timeout: std::time::Duration::from_millis(d.soft_timeout_ms),
            hard_timeout: std::time::Duration::from_millis(d.hard_timeout_ms),
            min_agents: d.min_agents.unwrap_or(defaults.min_agents),
            max_concurrent_calls: d.max_concurrent_calls,
            cache: self.cache.enabled,
            cache_max_entries: self.cache.max_entries,
            budget: self.budget.budget(),
            reask: d.reask,
        }
    }

    /// The configured decision rule, if `debate.decision` names one, and the rules' settings.
    pub fn decision(
        &self,
    ) -> Result<(Option<&'static str>, moot_core::decision::DecisionConfig), ConfigError> {
        let (rule, mut config) = self.debate.decision()?;
        config.require_passing = self.validation.require_passing;
        Ok((rule, config))
    }

    /// The protocol's options, with `debate.gold` passed on when the protocol reads it.
    pub fn protocol_options(&self) -> ProtocolOptions {
        let mut options = self.protocol.clone();
        let reads_gold = protocol_entry(self.debate.protocol.as_str())
            .is_some_and(|p| p.options.contains(&"gold"));
        if options.gold.is_none() && reads_gold {
            options.gold = self.debate.gold.clone();
        }
        options
    }

    /// The configured protocol, built with its options.
    pub fn build_protocol(&self) -> Result<Box<dyn Protocol>, ConfigError> {
        build_protocol(self.debate.protocol.as_str(), &self.protocol_options())
            .map_err(|e| ConfigError::new("protocol", e.to_string()))
    }

    /// The protocol a stored run ran, rebuilt from the run's stored configuration with just the
    /// options that protocol reads (a benchmark stores one configuration for all its protocols);
    /// `None` when the configuration no longer reads or builds.
    pub fn protocol_of_run(
        stored_config: &serde_json::Value,
        protocol: &str,
    ) -> Option<Box<dyn Protocol>> {
        let config: Config = serde_json::from_value(stored_config.clone()).ok()?;
        let reads = protocol_entry(protocol)?.options;
        build_protocol(protocol, &config.protocol_options().restricted_to(reads)).ok()
    }

    /// What removes secrets from stored, printed and served text: the built-in patterns, the
    /// configured ones, the values of the API keys the agents and `[serve]
    /// upstream_api_key_env` name, and the values of every variable of moot's environment
    /// whose name says it holds a secret (`*_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD*`: what
    /// an agent that inherits the environment could echo back), and the credentials the
    /// configured URLs carry (agents', `[serve] upstream`, `[telemetry] otlp_endpoint`).
    pub fn redactor(&self) -> Result<moot_core::redact::Redactor, ConfigError> {
        let named = self.agents.iter().filter_map(|a| a.backend.api_key_env());
        // The key `moot serve` sends to its upstream (`moot/PROTOCOL/MODEL` teams) too.
        let named = named.chain(self.serve.upstream_api_key_env.as_deref());
        let mut secrets: Vec<String> = named.filter_map(|var| std::env::var(var).ok()).collect();
        // What URLs carry: a password (`user:pass@`) or a token in the query (`?key=`).
        secrets.extend(self.agents.iter().flat_map(|a| a.backend.credentials()));
        let urls = [&self.serve.upstream, &self.telemetry.otlp_endpoint];
        secrets.extend(
            urls.into_iter()
                .flatten()
                .flat_map(|u| moot_backends::http::url_credentials(u)),
        );
        // `vars_os`: a variable that is not Unicode is skipped, not a panic.
        secrets.extend(std::env::vars_os().filter_map(|(name, value)| {
            let name = name.to_str()?;
            moot_core::redact::names_a_secret(name).then(|| value.into_string().ok())?
        }));
        moot_core::redact::Redactor::new(&self.security.redact, secrets)
            .map_err(|e| ConfigError::new("security.redact", format!("security.redact: {e}")))
    }

    /// Checks the whole configuration for the debate it describes on its own:
    /// [`Config::validate_settings`], then [`Config::validate_size`] for [`DebateSize::of`] it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_settings()?;
        self.validate_size(&DebateSize::of(self))
    }

    /// Checks that a debate of `size` can run under these settings with the configured protocol:
    /// see [`Config::validate_size_for`].
    pub fn validate_size(&self, size: &DebateSize) -> Result<(), ConfigError> {
        self.validate_size_for(size, &[self.debate.protocol.as_str()])
    }

    /// The configured agents with a deciding role, as a summary line names them after the
    /// debaters: `" + judge, aggregator"`, or nothing.
    pub fn deciders_suffix(&self) -> String {
        let roles: Vec<&str> = self
            .agents
            .iter()
            .filter(|a| !a.role.is_debater())
            .map(|a| a.role.name())
            .collect();
        if roles.is_empty() {
            String::new()
        } else {
            format!(" + {}", roles.join(", "))
        }
    }

    /// Checks that a debate of `size` can run under these settings with each of `protocols`
    /// (each given the options it reads):
    /// - at most [`crate::MAX_ROUNDS`] rounds and [`crate::MAX_AGENTS`] agents, unless
    ///   `budget.max_total_tokens` pays for every call at [`crate::MIN_TOKENS_PER_CALL`] each,
    ///   and never more than [`crate::CEILING_ROUNDS`] and [`crate::CEILING_AGENTS`];
    /// - `debate.min_agents` no more than the agents;
    /// - topology and quorum options that the agents can satisfy (`k` < agents, `hub` an agent,
    ///   `groups` ≤ agents, SVR-MAD's `challengers` and `accept_after` < agents).
    pub fn validate_size_for(
        &self,
        size: &DebateSize,
        protocols: &[&str],
    ) -> Result<(), ConfigError> {
        size.check_caps(self.budget.max_total_tokens)?;
        self.check_protocol_counts()?;
        size.check_quorum(self.debate.min_agents)?;
        self.check_options_fit(size)?;
        // What the protocols' own defaults need (a ring or k-reviewers default, two groups…).
        let options = self.protocol_options();
        for name in protocols {
            let Some(entry) = protocol_entry(name) else {
                continue;
            };
            let mut options = if protocols.len() > 1 {
                options.restricted_to(entry.options)
            } else {
                options.clone()
            };
            // The gold answer is checked where it is known (`moot ask`; each bench item has one).
            if options.gold.is_none() && entry.options.contains(&"gold") {
                options.gold = Some(String::new());
            }
            let Ok(protocol) = build_protocol(name, &options) else {
                continue; // the settings' check reports it
            };
            let mut roles = vec![AgentRole::Debater; size.agents];
            roles.extend(
                self.agents
                    .iter()
                    .map(|a| a.role)
                    .filter(|r| !r.is_debater()),
            );
            let lineup = moot_engine::Lineup::fit(&*protocol, &roles, size.rounds);
            lineup.cast_roles(&mut roles);
            let mut spec = moot_core::debate::DebateSpec::with_agents(
                "",
                AnswerKind::Numeric,
                roles.len(),
                lineup.rounds,
                self.debate.seed,
            );
            for (agent, role) in spec.agents.iter_mut().zip(roles) {
                agent.role = role;
            }
            spec.agents = lineup.keep(spec.agents);
            protocol.validate(&spec).map_err(|e| {
                ConfigError::new(
                    "protocol",
                    format!("protocol {name} with {}: {e}", size.the_agents()),
                )
            })?;
        }
        Ok(())
    }

    /// Topology and quorum options the agents can satisfy. Protocol options may come from the
    /// file or from `-o`: they are named without the file.
    fn check_options_fit(&self, size: &DebateSize) -> Result<(), ConfigError> {
        let n = size.agents;
        let o = &self.protocol;
        let the_agents = size.the_agents();
        let peers = n.saturating_sub(1);
        // (key, value, whether the value is too big for n agents, why)
        type Check = (
            &'static str,
            Option<usize>,
            fn(usize, usize) -> bool,
            String,
        );
        let checks: [Check; 5] = [
            (
                "k",
                // freemad's k_reviewers gives an agent all its peers when k is not below their
                // number (a freemad file may count disabled agents in k).
                o.k.filter(|_| o.topology != Some(TopologyName::FreemadKReviewers)),
                |v, n| v >= n,
                format!("needs more agents than {the_agents}: each agent reviews k of its peers, so k must be at most {peers}"),
            ),
            (
                "hub",
                o.hub,
                |v, n| v > n,
                format!("is not an agent: {the_agents} are numbered 1 to {n}"),
            ),
            (
                "groups",
                o.groups,
                |v, n| v > n,
                format!("is more groups than {the_agents}"),
            ),
            (
                "challengers",
                o.challengers,
                |v, n| v >= n,
                format!("needs more agents than {the_agents}: a receiver's challengers are its peers, at most {peers}"),
            ),
            (
                "accept_after",
                o.accept_after,
                |v, n| v >= n,
                format!(
                    "can never be reached with {the_agents}: a receiver meets at most {}",
                    plural(peers, "challenger")
                ),
            ),
        ];
        for (key, value, too_many, why) in checks {
            if let Some(v) = value {
                if too_many(v, n) {
                    return invalid(
                        format!("protocol.{key}"),
                        format!("protocol.{key} = {v} {why}"),
                    );
                }
            }
        }
        Ok(())
    }

    /// The protocol options that count something are at least 1.
    fn check_protocol_counts(&self) -> Result<(), ConfigError> {
        let o = &self.protocol;
        for (key, value) in [
            ("k", o.k),
            ("hub", o.hub),
            ("groups", o.groups),
            ("challengers", o.challengers),
            ("accept_after", o.accept_after),
        ] {
            if value == Some(0) {
                let why = if key == "hub" {
                    " (agents are numbered from 1)"
                } else {
                    ""
                };
                return invalid(
                    format!("protocol.{key}"),
                    format!("protocol.{key} must be at least 1{why}"),
                );
            }
        }
        Ok(())
    }

    /// Checks values the types cannot, section by section, then what spans sections: that the
    /// protocol builds with its options ([`Config::validate_values`]), and that a `cli` agent's
    /// program is allowed, exists and is executable ([`Config::check_agents_can_run`]). The
    /// debate's size is checked apart ([`Config::validate_size`]).
    pub fn validate_settings(&self) -> Result<(), ConfigError> {
        self.validate_values()?;
        self.check_agents_can_run()
    }

    /// Checks every value of every section that the types cannot: numbers finite and in
    /// range (so no later arithmetic overflows or panics), names known, the protocol built with
    /// its options. Each agent's own values are checked as it is read ([`crate::AgentFields`]);
    /// what its program needs from the machine is not checked here.
    pub fn validate_values(&self) -> Result<(), ConfigError> {
        self.check_protocol_counts()?;
        self.build_protocol()?;
        self.debate.validate()?;
        self.security.validate()?;
        self.budget.validate()?;
        self.retry.validate()?;
        self.cache.validate()?;
        self.output.validate()?;
        self.validation.validate()?;
        self.logging.validate()?;
        self.serve.validate()?;
        self.telemetry.validate()?;
        Ok(())
    }

    /// Every `cli` agent can be run ([`Config::check_agent_can_run`]).
    pub fn check_agents_can_run(&self) -> Result<(), ConfigError> {
        for (i, a) in self.agents.iter().enumerate() {
            self.check_agent_can_run(i, a)?;
        }
        Ok(())
    }

    /// How a `cli` agent is run: its command and arguments, and the limits of `[security]`;
    /// `None` for other backends.
    pub fn cli_config(&self, agent: &AgentConfig) -> Option<moot_backends::cli::CliConfig> {
        let cli = agent.backend.settings::<Cli>()?;
        Some(cli.run_config(&self.security))
    }

    /// Agent `i` (whose entry is `a`) can be started here, as its backend checks
    /// (`BackendSettings::check_can_run`: a `cli` agent's command is allowed, and can be
    /// started from its working directory). Other backends pass.
    pub fn check_agent_can_run(&self, i: usize, a: &AgentConfig) -> Result<(), ConfigError> {
        a.backend
            .check_can_run(&self.security, &format!("agents[{i}]"), &a.id)
    }

    /// Agent `index`'s seed (whose entry is `agent`): its own, else the debate's plus its
    /// position, so each agent samples differently but reproducibly.
    pub fn agent_seed(&self, index: usize, agent: &AgentConfig) -> u64 {
        agent
            .sampling
            .seed
            .unwrap_or(self.debate.seed.wrapping_add(index as u64))
    }

    /// What building this configuration's agents for a debate whose answers are of `kind`
    /// shares; `progress` hears what is happening (pulling or loading a model).
    pub fn building<'a>(
        &'a self,
        kind: AnswerKind,
        progress: &'a mut dyn FnMut(&str),
    ) -> Building<'a> {
        Building {
            security: &self.security,
            gold: self.debate.gold.as_deref(),
            kind,
            backends: self.agents.iter().map(|a| &a.backend).collect(),
            #[cfg(feature = "local")]
            local_models: Default::default(),
            progress,
            desk: None,
        }
    }

    /// The agents that need the gold answer and are not given it, or the analysis-only
    /// orderings without it: what `moot ask` refuses before any call. `via` is the front end
    /// whose request could have given it.
    pub fn check_gold(&self, via: crate::field::Via) -> Result<(), ConfigError> {
        let gold = via.name(crate::field::Field::Gold);
        if self.debate.gold.is_some() {
            return Ok(());
        }
        use moot_core::protocol::Ordering;
        if matches!(
            self.protocol.ordering,
            Some(Ordering::TruthFirst | Ordering::TruthLast)
        ) {
            return invalid(
                "protocol.ordering",
                format!("protocol.ordering truth-first / truth-last is for analysis only and needs the gold answer (debate.gold or {gold})"),
            );
        }
        if let Some(i) = self.agents.iter().position(AgentConfig::is_sim) {
            return invalid(
                format!("agents[{i}]"),
                format!(
                    "agents[{i}]: backend \"sim\" needs the gold answer (debate.gold or {gold})"
                ),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::native::{from_toml, from_yaml};
    use crate::size::{CEILING_AGENTS, CEILING_ROUNDS, MAX_AGENTS, MAX_ROUNDS};

    #[test]
    fn yaml_reads_the_same_keys() {
        let yaml =
            "debate:\n  protocol: som\n  rounds: 2\nagents:\n  - id: l1\n    backend: local\n";
        let y = from_yaml(yaml).unwrap();
        y.validate().unwrap();
        assert_eq!(
            (y.debate.protocol.as_str(), y.debate.rounds, y.agents.len()),
            ("som", 2, 1)
        );
    }

    #[test]
    fn one_soft_deadline_default() {
        let c = Config::default();
        let engine = moot_engine::EngineConfig::default();
        assert_eq!(c.engine().soft_timeout, engine.soft_timeout);
        assert_eq!(c.engine().hard_timeout, engine.hard_timeout);
        assert_eq!(c.engine().min_agents, engine.min_agents);
        assert_eq!(c.engine().max_concurrent_calls, engine.max_concurrent_calls);
        assert_eq!(c.engine().reask, engine.reask);
        assert_eq!(c.debate.soft_timeout_ms, 120_000);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let e = from_toml("[debate]\nprotocl = \"som\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("protocl"), "{e}");
        let e = from_yaml("debate:\n  rounds: 1\n  colour: red\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("colour"), "{e}");
        let e = from_toml("[debate]\nrounds = \"two\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("rounds"), "{e}");
        // Whether the type refuses it when reading or a check after, the message names the key.
        let bad = |toml: &str, needle: &str| {
            let e = from_toml(toml)
                .and_then(|c| c.validate())
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{toml}: {e}");
        };
        bad("[debate]\nprotocol = \"vote\"\n", "protocol = \"vote\"");
        bad("[debate]\nanswer = \"number\"\n", "answer = \"number\"");
        bad("[debate]\ntie_break = \"coin\"\n", "tie_break = \"coin\"");
        bad(
            "[debate]\nsoft_timeout_ms = 10\nhard_timeout_ms = 5\n",
            "hard_timeout_ms",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"gpt\"\n",
            "agents[0].backend",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"openai\"\n",
            "needs base_url",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"cli\"\ncommand = \"/bin/sh\"\n",
            "cli_allowed_commands",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"local\"\ncommand = \"x\"\n",
            "agents[0].command",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"scripted\"\nresponses = [\"1\"]\nmodel = \"x\"\n",
            "agents[0].model is not used by backend \"scripted\"",
        );
        bad("[[agents]]\nid = \"a\"\nbackend = \"local\"\n[[agents]]\nid = \"a\"\nbackend = \"local\"\n", "agents[1].id");
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"local\"\ntemperature = 9.0\n",
            "temperature",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"openai\"\nbase_url = \"http://h/v1\"\nmodel = \"m\"\ndialect = \"lmstudio\"\n",
            "dialect \"lmstudio\" is not one of auto, openai, vllm, llama.cpp, ollama, generic",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"anthropic\"\nmodel = \"m\"\ndialect = \"vllm\"\n",
            "agents[0].dialect is only used by backend \"openai\"",
        );
        bad("[protocol]\nmasking = \"objective\"\n", "masking");
        bad(
            "[debate]\nprotocol = \"madc\"\n[protocol]\nordering = \"truth-last\"\n[protocol.faults]\ndrop = 2.0\n",
            "faults.drop",
        );
        bad(
            "[debate]\ngold = \"1\"\n[[agents]]\nid = \"s\"\nbackend = \"sim\"\nsim = { accuracy = 2.0 }\n",
            "agents[0].sim.accuracy",
        );
        let numeric = from_toml(
            "[debate]\ngold = 408\n[protocol.faults]\nmalicious = 0.3\nmalicious_answer = 7\n",
        )
        .unwrap();
        assert_eq!(numeric.debate.gold.as_deref(), Some("408"));
        assert_eq!(
            numeric.protocol.faults.malicious_answer.as_deref(),
            Some("7")
        );
        let e = from_toml("[protocol]\nmaskng = \"objective\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("maskng"), "{e}");
    }

    #[test]
    fn the_decision_settings_reach_the_rules() {
        use moot_core::decision::TieBreak;
        let c = from_toml(
            "[debate]\nseed = 3\ntie_break = \"random\"\ntie_break_seed = 9\nnormalize = true\n",
        )
        .unwrap();
        let (_, d) = c.decision().unwrap();
        assert_eq!(d.tie_break, TieBreak::Random { seed: 9 });
        assert!(d.normalize);
        let (_, d) = from_toml("[debate]\nseed = 3\ntie_break = \"random\"\n")
            .unwrap()
            .decision()
            .unwrap();
        assert_eq!(d.tie_break, TieBreak::Random { seed: 3 });
        assert!(!d.normalize);
    }

    /// Issue 32 item 9: numbers that pass the types but break later arithmetic (a sim agent's
    /// exp(β·share) overflowing to NaN, `Duration::from_secs_f64` of a negative or huge value)
    /// are refused where the file is read, for every command, naming the key.
    #[test]
    fn numbers_that_would_break_later_arithmetic_are_refused_where_the_file_is_read() {
        let sim = |field: &str| {
            format!("[debate]\ngold = \"1\"\n[[agents]]\nid = \"s\"\nbackend = \"sim\"\nsim = {{ {field} }}\n")
        };
        let mut cases: Vec<(String, &str)> = Vec::new();
        for (field, key) in [
            ("beta_conform = 800", "agents[0].sim.beta_conform"),
            ("beta_conform = 1e308", "agents[0].sim.beta_conform"),
            ("beta_conform = inf", "agents[0].sim.beta_conform"),
            ("beta_conform = nan", "agents[0].sim.beta_conform"),
            ("beta = -inf", "agents[0].sim.beta"),
            ("beta_anti = -101", "agents[0].sim.beta_anti"),
            ("recency = nan", "agents[0].sim.recency"),
            ("recency = 1e300", "agents[0].sim.recency"),
            ("accuracy = nan", "agents[0].sim.accuracy"),
            ("unsure = -inf", "agents[0].sim.unsure"),
        ] {
            cases.push((sim(field), key));
        }
        for v in ["-5.0", "1e30", "nan", "inf", "0.0"] {
            cases.push((
                format!("[budget]\nmax_agent_time_sec = {v}\n"),
                "budget.max_agent_time_sec",
            ));
        }
        cases.push((
            "[budget]\nmax_total_time_sec = -inf\n".into(),
            "budget.max_total_time_sec",
        ));
        cases.push((
            "[debate]\nweights = [1.0, nan, 1.0, 1.0]\n".into(),
            "debate.weights",
        ));
        cases.push((
            "[[agents]]\nid = \"a\"\nbackend = \"local\"\ntemperature = nan\n".into(),
            "agents[0].temperature",
        ));
        cases.push((
            "[[agents]]\nid = \"a\"\nbackend = \"local\"\ntop_p = nan\n".into(),
            "agents[0].top_p",
        ));
        cases.push((
            "[debate]\nprotocol = \"sid-et\"\n[protocol]\nthreshold = nan\n".into(),
            "threshold",
        ));
        cases.push(("[protocol.faults]\ndrop = nan\n".into(), "faults.drop"));
        let dir = tempfile::tempdir().unwrap();
        for (i, (text, key)) in cases.iter().enumerate() {
            let path = dir.path().join(format!("c{i}.toml"));
            std::fs::write(&path, text).unwrap();
            // `read` is what `moot health` reads with; `load` what every other command does.
            for (how, result) in [
                ("read", crate::dialect::read(&path).map(|_| ())),
                ("load", crate::dialect::load(&path).map(|_| ())),
            ] {
                let e = result.expect_err(&format!("{how} accepted {text}"));
                assert!(e.to_string().contains(key), "{how} {text}: {e}");
            }
        }
    }

    #[test]
    fn errors_carry_the_key_for_programs() {
        let c = from_toml("[debate]\nmin_agents = 0\n").unwrap();
        assert_eq!(c.validate().unwrap_err().key, "debate.min_agents");
        let c = from_toml("[retry]\nmin_delay_ms = 10\nmax_delay_ms = 1\n").unwrap();
        assert_eq!(c.validate().unwrap_err().key, "retry.min_delay_ms");
        let c = from_toml("[budget]\nmax_total_tokens = 0\n").unwrap();
        assert_eq!(c.validate().unwrap_err().key, "budget.max_total_tokens");
    }

    #[test]
    fn a_stored_configuration_reads_back_as_written() {
        let c = from_toml(crate::EXAMPLE).unwrap();
        let json = serde_json::to_value(&c).unwrap();
        let back: Config = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, c);
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
        assert_eq!(json["debate"]["protocol"], "free-mad-n");
        assert_eq!(json["agents"][0]["backend"], "openai");
    }

    fn size(agents: usize, rounds: usize) -> DebateSize {
        DebateSize {
            agents,
            rounds,
            agents_from: Some(crate::field::Via::Cli),
            rounds_from: Some(crate::field::Via::Cli),
            file: Some("f.toml".into()),
        }
    }

    #[test]
    fn sizes_are_capped_unless_the_token_budget_pays() {
        let c = Config::default();
        c.validate_size(&size(MAX_AGENTS, MAX_ROUNDS)).unwrap();
        let e = c
            .validate_size(&size(3, MAX_ROUNDS + 1))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--rounds 11 is over the limit of 10 debate rounds")
                && e.contains("set budget.max_total_tokens to at least 3600"),
            "{e}"
        );
        let e = c
            .validate_size(&size(MAX_AGENTS + 1, 1))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--agents 17 is over the limit of 16 agents"),
            "{e}"
        );
        let mut budgeted = Config::default();
        budgeted.budget.max_total_tokens = Some(3600);
        budgeted.validate_size(&size(3, 11)).unwrap();
        let e = budgeted
            .validate_size(&size(3, 12))
            .unwrap_err()
            .to_string();
        assert!(e.contains("from 3600 to at least 3900"), "{e}");
        budgeted.budget.max_total_tokens = Some(u64::MAX);
        budgeted
            .validate_size(&size(CEILING_AGENTS, CEILING_ROUNDS))
            .unwrap();
        let e = budgeted
            .validate_size(&size(3, usize::MAX))
            .unwrap_err()
            .to_string();
        assert!(e.contains("limit of 1000 debate rounds"), "{e}");
        let e = budgeted
            .validate_size(&size(usize::MAX, usize::MAX))
            .unwrap_err()
            .to_string();
        assert!(e.contains("limit of 1000 debate rounds"), "{e}");
        // From the file, the key and the file are named.
        let mut file = from_toml("[debate]\nrounds = 20\n").unwrap();
        let e = file.validate().unwrap_err().to_string();
        assert!(e.starts_with("debate.rounds = 20 is over"), "{e}");
        file.debate.rounds = 2;
        file.debate.min_agents = Some(4);
        let e = file
            .validate_size(&DebateSize {
                file: Some("f.toml".into()),
                ..DebateSize::of(&file)
            })
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("f.toml: debate.min_agents = 4 is more than the debate's 3 agents"),
            "{e}"
        );
    }
}
