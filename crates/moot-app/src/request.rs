//! What a user asks of a debate, in the one shape every front end fills: `moot ask`'s and
//! `moot bench`'s flags, Python's keyword arguments, the JSON of `moot serve`'s requests. Where
//! each value came from is part of it ([`Settings::via`]), so a message names the value as its
//! user wrote it (`--rounds 11`, `rounds=11`, `"rounds": 11`); moot-app spells no front end's
//! names itself (see `moot_config::Field`).
//!
//! [`Settings::prepare`] resolves a request once, before any agent is built, into a
//! [`PreparedDebate`]: the configuration with the request applied, the team sized, the settings
//! checked, the protocol built and the team fitted to it. That value is what runs.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use moot_config::{AnswerSetting, Config, ConfigError, DebateSize, Field, ProtocolName, Via};
use moot_core::protocol::Protocol;
use moot_core::redact::Redactor;

use crate::error::InputError;

/// What a request sets over the configuration, and who asked.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The front end the request came from: how messages name its fields.
    pub via: Via,
    /// The configuration, given whole (a Python dict, the server's own); `None` reads
    /// `config_file`, or takes the defaults without one.
    pub config: Option<Config>,
    /// The configuration's file: read when `config` is `None`, and named in errors about its
    /// keys either way.
    pub config_file: Option<PathBuf>,
    pub protocol: Option<ProtocolName>,
    pub rounds: Option<usize>,
    /// How many debaters (the configured ones cycled to the count).
    pub agents: Option<usize>,
    /// Simulated agents replace the configured ones.
    pub sim: bool,
    pub answer: Option<AnswerSetting>,
    pub gold: Option<String>,
    /// Protocol options, `KEY=VALUE`, as the `[protocol]` table takes them.
    pub protocol_options: Vec<String>,
}

impl Settings {
    /// Settings from `via` with nothing set.
    pub fn from(via: Via) -> Settings {
        Settings {
            via,
            ..Settings::default()
        }
    }

    /// `field` as this request's user wrote it (`--rounds`, `rounds=`, `"rounds"`).
    pub fn name(&self, field: Field) -> String {
        self.via.name(field)
    }

    /// The configuration the request starts from: given, read from its file, or the defaults.
    pub fn load_config(&self) -> Result<Config, ConfigError> {
        match (&self.config, &self.config_file) {
            (Some(config), _) => Ok(config.clone()),
            (None, Some(path)) => moot_config::load(path),
            (None, None) => Ok(Config::default()),
        }
    }

    /// Applies what the request sets to `config`: protocol, rounds, answer kind, gold answer and
    /// protocol options (the team is sized by [`Settings::sized`]).
    pub fn apply(&self, config: &mut Config) -> Result<(), ConfigError> {
        if let Some(p) = &self.protocol {
            config.debate.protocol = p.clone();
        }
        if let Some(r) = self.rounds {
            config.debate.rounds = r;
        }
        if let Some(a) = self.answer {
            config.debate.answer = a;
        }
        if let Some(g) = &self.gold {
            config.debate.gold = Some(g.clone());
        }
        for assignment in &self.protocol_options {
            config.set_protocol_option(assignment, self.via)?;
        }
        Ok(())
    }

    /// The number of debaters: the request's, else the configured ones (or the default team).
    pub fn count(&self, config: &Config) -> usize {
        match (self.agents, self.sim) {
            (Some(n), _) => n,
            (None, true) => moot_config::DEFAULT_AGENTS,
            (None, false) => DebateSize::of(config).agents,
        }
    }

    /// The size of the debate, with where each number came from.
    pub fn size(&self, config: &Config) -> DebateSize {
        DebateSize {
            agents: self.count(config),
            rounds: config.debate.rounds,
            agents_from: self.agents.map(|_| self.via),
            rounds_from: self.rounds.map(|_| self.via),
            file: self.config_file.as_ref().map(|p| p.display().to_string()),
        }
    }

    /// The first steps of every run, a debate's or a benchmark's: the size checked for each of
    /// `protocols` before anything is built (`None`: not checked — a resumed benchmark's size
    /// was checked when it started, perhaps under older limits), then the team assembled:
    /// simulated agents when the request asks for them, the embedded default team without
    /// agents, else the configured debaters cycled to the count; agents with another role
    /// (judges, aggregators, chairmen) follow, simulated too when the debaters are, and never
    /// dropped. Returns what removes secrets, built from the configured agents first: a key
    /// pasted into a question must not reach the store because simulated agents replaced the
    /// agent that names it.
    pub fn sized(&self, config: &mut Config, protocols: Option<&[&str]>) -> Result<Arc<Redactor>> {
        if let Some(protocols) = protocols {
            config.validate_size_for(&self.size(config), protocols)?;
        }
        let count = self.count(config);
        if count == 0 {
            return Err(
                InputError(format!("{} must be at least 1", self.name(Field::Agents))).into(),
            );
        }
        let redactor = Arc::new(config.redactor()?);
        config.agents = if self.sim {
            moot_config::sim_team(&config.agents, count)
        } else {
            moot_config::resize(&config.agents, count)
        };
        Ok(redactor)
    }

    /// A debate on `question`, prepared once: the request applied to its configuration, the
    /// size checked before anything is built, the team assembled, the settings, gold answer and
    /// question checked, the protocol built, and the team and rounds fitted to it.
    pub fn prepare(&self, question: &str) -> Result<PreparedDebate> {
        let mut config = self.load_config()?;
        self.apply(&mut config)?;
        self.prepare_config(config, question)
    }

    /// [`Settings::prepare`] from `config`, to which the request is applied already (the
    /// server picks agents by id before this).
    pub fn prepare_config(&self, mut config: Config, question: &str) -> Result<PreparedDebate> {
        let protocol = config.debate.protocol.clone();
        let redactor = self.sized(&mut config, Some(&[protocol.as_str()]))?;
        config.validate_settings()?;
        config.check_gold(self.via)?;
        config.debate.check_question(question, None)?;
        let protocol = config.build_protocol()?;
        // Fitted here as the debate's constructor fits them, so that only the agents the debate
        // runs are built and the stored configuration matches the stored spec.
        let roles: Vec<_> = config.agents.iter().map(|a| a.role).collect();
        let lineup = moot_engine::Lineup::fit(&*protocol, &roles, config.debate.rounds);
        if let Some((i, role)) = lineup.cast {
            if let Some(agent) = config.agents.get_mut(i) {
                agent.role = role;
            }
        }
        config.agents = lineup.keep(config.agents);
        config.debate.rounds = lineup.rounds;
        Ok(PreparedDebate {
            config,
            protocol,
            redactor,
        })
    }
}

/// A configuration given as JSON text (a Python dict), in moot's or freemad's format, checked
/// as a file is (`moot_config::load`): every value, and whether each agent can run. `name` is
/// what errors call it.
pub fn config_from_json(text: &str, name: &str) -> Result<Config, ConfigError> {
    moot_config::dialect::from_json(text)
        .and_then(|(config, _)| {
            config.check_agents_can_run()?;
            config.validate_values()?;
            Ok(config)
        })
        .map_err(|e| e.in_file(name))
}

/// A debate's configuration ready to build agents from: the request applied, the team sized and
/// fitted to the protocol (built here, once), and what removes its secrets.
pub struct PreparedDebate {
    pub config: Config,
    pub protocol: Box<dyn Protocol>,
    pub redactor: Arc<Redactor>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(settings: &Settings) -> String {
        format!(
            "{:#}",
            settings.prepare("What is 2 + 2?").err().expect("refused")
        )
    }

    /// Issue 43: `moot.ask(rounds=11)` was told of `--rounds 11`, a flag its caller never
    /// typed. Each front end reads its own names.
    #[test]
    fn a_value_over_a_limit_is_named_as_its_front_end_names_it() {
        for (via, named) in [
            (Via::Cli, "--rounds 11"),
            (Via::Python, "rounds=11"),
            (Via::Http, "\"rounds\": 11"),
        ] {
            let settings = Settings {
                rounds: Some(11),
                ..Settings::from(via)
            };
            let e = refused(&settings);
            assert!(e.starts_with(&format!("{named} is over the limit")), "{e}");
        }
        let python = Settings {
            agents: Some(17),
            ..Settings::from(Via::Python)
        };
        let e = refused(&python);
        assert!(e.starts_with("agents=17 is over the limit"), "{e}");
        assert!(!e.contains("--"), "{e}");
        let zero = Settings {
            agents: Some(0),
            ..Settings::from(Via::Python)
        };
        assert_eq!(refused(&zero), "agents= must be at least 1");
    }

    #[test]
    fn a_gold_answer_is_asked_for_by_the_front_ends_name() {
        let python = Settings {
            sim: true,
            agents: Some(2),
            ..Settings::from(Via::Python)
        };
        let e = refused(&python);
        assert!(e.contains("(debate.gold or gold=)"), "{e}");
        let option = Settings {
            protocol_options: vec!["nonsense".into()],
            ..Settings::from(Via::Python)
        };
        let e = refused(&option);
        assert!(
            e.contains("options= \"nonsense\": expected KEY=VALUE"),
            "{e}"
        );
    }

    #[test]
    fn a_debate_is_prepared_once_with_its_protocol_built_and_its_team_fitted() {
        let settings = Settings {
            protocol: Some("cot".parse().unwrap()),
            agents: Some(3),
            rounds: Some(4),
            sim: true,
            gold: Some("4".into()),
            ..Settings::from(Via::Python)
        };
        let prepared = settings.prepare("What is 2 + 2?").unwrap();
        assert_eq!(prepared.protocol.name(), "cot");
        // Chain-of-thought is one agent answering once: the team and rounds are fitted to it.
        assert_eq!(prepared.config.agents.len(), 1);
        assert_eq!(prepared.config.debate.rounds, 0);
    }
}
