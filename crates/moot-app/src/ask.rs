//! One question debated: what `moot ask` takes, prepared into a [`Session`] that
//! [`crate::session::run`] runs. This is the entry point for any front end that asks one
//! question — the CLI, and a Python binding's `moot.ask(question, protocol=…, agents=…,
//! rounds=…, config=…, sim=…, gold=…)` — and needs no argument parser.
//!
//! ```
//! use moot_app::ask::AskRequest;
//! use moot_app::prepare::{Overrides, TeamRequest};
//! use moot_app::records::RunRecords;
//!
//! let store = moot_store::MemoryStore::default();
//! let request = AskRequest {
//!     overrides: Overrides {
//!         rounds: Some(1),
//!         gold: Some("4".into()),
//!         ..Overrides::default()
//!     },
//!     team: TeamRequest { agents: Some(3), rounds_flag: true, sim: true },
//!     ..AskRequest::new("What is 2 + 2?")
//! };
//! let rt = moot_app::prepare::runtime()?;
//! let session = request.session(&store, &mut |message| eprintln!("{message}"))?;
//! let finished = rt.block_on(moot_app::session::run(
//!     session,
//!     &moot_engine::NoObserver,
//!     &mut |_| {},
//! ))?;
//! let stored = rt.block_on(RunRecords::load(&store, &finished.result.run_id))?;
//! assert_eq!(stored.run.question, "What is 2 + 2?");
//! assert_eq!(stored.calls.len(), 3 * 2);
//! # Ok::<(), anyhow::Error>(())
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use moot_config::Config;
use moot_core::answer::AnswerKind;
use moot_core::debate::DebateSpec;
use moot_core::redact::Redactor;
use moot_core::validation::TestSuite;
use moot_store::Store;

use crate::error::{bad_input, InputError};
use crate::prepare::{load_config, prepare_debate, Overrides, PreparedDebate, TeamRequest};
use crate::session::Session;

/// The largest `--tests` file read: 16 MiB, what the sandbox takes in one message with the
/// program (see `moot_files` for what else is refused).
pub const MAX_TESTS_BYTES: moot_files::Limit =
    moot_files::Limit::new(16 << 20, "moot reads from a tests file");

/// Tests for a code answer: a Python program run after each distinct program of the debate, in
/// the sandbox (asserts, or a `check(...)` call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tests {
    /// A file to read them from (`moot ask --tests FILE`).
    File(PathBuf),
    /// The tests' text.
    Text(String),
}

/// A question to debate and everything that shapes the debate.
#[derive(Debug)]
pub struct AskRequest {
    pub question: String,
    /// The configuration; `None` reads `config_file`, or takes the defaults without one.
    pub config: Option<Config>,
    /// The configuration's file: read when `config` is `None`, and named in errors about its
    /// keys either way.
    pub config_file: Option<PathBuf>,
    /// What overrides the configuration: protocol, rounds, answer kind, gold answer, protocol
    /// options.
    pub overrides: Overrides,
    /// How many agents, and whether simulated ones replace the configured ones
    /// (`rounds_flag` should say whether `overrides.rounds` was given).
    pub team: TeamRequest,
    /// Option texts of a choice question, in order A, B, C, ….
    pub options: Vec<String>,
    /// Tests for a code answer; giving them asks for a code answer unless
    /// `overrides.answer` names another kind (which is refused).
    pub tests: Option<Tests>,
    /// Code answers that fail their checks count as no answer for every rule.
    pub require_passing: bool,
}

impl AskRequest {
    /// `question` under the default configuration and team, with nothing overridden.
    pub fn new(question: impl Into<String>) -> AskRequest {
        AskRequest {
            question: question.into(),
            config: None,
            config_file: None,
            overrides: Overrides::default(),
            team: TeamRequest {
                agents: None,
                rounds_flag: false,
                sim: false,
            },
            options: Vec::new(),
            tests: None,
            require_passing: false,
        }
    }

    /// The debate prepared, before any agent is built: the question checked, the overrides
    /// applied, the size, team, settings and gold answer checked, the answer kind resolved and
    /// the tests read. Everything wrong in the request is an [`InputError`] (or a
    /// `moot_config::ConfigError`) here.
    pub fn prepare(self) -> Result<PreparedAsk> {
        if self.question.trim().is_empty() {
            return bad_input("the question is empty");
        }
        let mut config = match self.config {
            Some(config) => config,
            None => load_config(self.config_file.as_deref())?,
        };
        self.overrides.apply(&mut config)?;
        let PreparedDebate {
            mut config,
            redactor,
        } = prepare_debate(
            config,
            &self.team,
            self.config_file.as_deref(),
            &self.question,
        )?;
        let mut kind = config.debate.answer.resolve(&self.question, &self.options);
        let tests = match &self.tests {
            Some(tests) => {
                let text = match tests {
                    Tests::File(path) => {
                        moot_files::read_text(path, MAX_TESTS_BYTES).map_err(|e| {
                            InputError(format!(
                                "--tests {}: {}",
                                moot_files::shown(path),
                                e.problem
                            ))
                        })?
                    }
                    Tests::Text(text) => text.clone(),
                };
                // Tests mean a program is wanted, whatever the question's words suggested.
                if self.overrides.answer.is_none() {
                    kind = AnswerKind::Code;
                } else if kind != AnswerKind::Code {
                    return bad_input(format!(
                        "--tests runs code answers, but the answer kind is {kind} (use --answer code)"
                    ));
                }
                Some(TestSuite::user_tests(&text))
            }
            None => None,
        };
        if self.require_passing {
            config.validation.require_passing = true;
        }
        Ok(PreparedAsk {
            question: self.question,
            config,
            redactor,
            kind,
            options: self.options,
            tests,
        })
    }

    /// [`AskRequest::prepare`], then [`PreparedAsk::session`].
    pub fn session<'a>(
        self,
        store: &'a dyn Store,
        on_message: &mut dyn FnMut(&str),
    ) -> Result<Session<'a>> {
        self.prepare()?.session(store, on_message)
    }
}

/// A debate prepared from an [`AskRequest`], its agents not built yet.
pub struct PreparedAsk {
    pub question: String,
    /// The configuration with every override applied, its team sized and fitted to the
    /// protocol.
    pub config: Config,
    /// What removes secrets from everything the debate stores and prints.
    pub redactor: Arc<Redactor>,
    pub kind: AnswerKind,
    pub options: Vec<String>,
    pub tests: Option<TestSuite>,
}

impl PreparedAsk {
    /// Rounds after round 0 the debate has.
    pub fn rounds(&self) -> usize {
        self.config.debate.rounds
    }

    /// The debate ready to run under a new run id: its agents built (`on_message` hears about
    /// models being fetched and loaded), recorded in `store`.
    pub fn session<'a>(
        self,
        store: &'a dyn Store,
        on_message: &mut dyn FnMut(&str),
    ) -> Result<Session<'a>> {
        let built = crate::agents::build(&self.config, self.kind, on_message)?;
        let spec = DebateSpec {
            question: self.question,
            kind: self.kind,
            options: self.options,
            agents: built.specs.clone(),
            rounds: self.config.debate.rounds,
            seed: self.config.debate.seed,
            tests: self.tests,
        };
        Ok(Session {
            store,
            run_id: moot_engine::new_run_id(),
            config: self.config,
            spec,
            agents: built,
            restore: None,
            fork: None,
            redactor: self.redactor,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(question: &str) -> AskRequest {
        AskRequest {
            overrides: Overrides {
                gold: Some("4".into()),
                ..Overrides::default()
            },
            team: TeamRequest {
                agents: Some(2),
                rounds_flag: false,
                sim: true,
            },
            ..AskRequest::new(question)
        }
    }

    #[test]
    fn an_empty_question_is_refused_before_the_configuration_is_read() {
        let request = AskRequest {
            config_file: Some("/nonexistent/moot.toml".into()),
            ..AskRequest::new("  ")
        };
        let e = request.prepare().err().expect("refused");
        assert_eq!(e.to_string(), "the question is empty");
    }

    #[test]
    fn tests_ask_for_a_code_answer_unless_another_kind_is_named() {
        let code = AskRequest {
            tests: Some(Tests::Text("assert f() == 4\n".into())),
            ..sim("What is 2 + 2?")
        };
        let prepared = code.prepare().expect("prepared");
        assert_eq!(prepared.kind, AnswerKind::Code);
        assert!(prepared.tests.is_some());
        let mut numeric = AskRequest {
            tests: Some(Tests::Text("assert f() == 4\n".into())),
            ..sim("What is 2 + 2?")
        };
        numeric.overrides.answer = Some(moot_config::AnswerSetting::Kind(AnswerKind::Numeric));
        let e = numeric.prepare().err().expect("refused");
        assert!(e.to_string().contains("--tests runs code answers"), "{e}");
    }

    #[test]
    fn a_session_has_the_requested_team_and_a_new_run() {
        let store = moot_store::MemoryStore::default();
        let session = sim("What is 2 + 2?")
            .session(&store, &mut |_| {})
            .expect("a session");
        assert_eq!(session.spec.agents.len(), 2);
        assert_eq!(session.spec.question, "What is 2 + 2?");
        assert!(session.restore.is_none());
        assert!(!session.run_id.is_empty());
    }
}
