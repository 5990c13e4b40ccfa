//! One question debated: what `moot ask` takes, prepared into a [`Session`] that
//! [`crate::session::run`] runs. This is the entry point for any front end that asks one
//! question — the CLI, `moot serve`, and the Python package's `moot.ask(question, protocol=…,
//! agents=…, rounds=…, config=…, sim=…, gold=…)` — and needs no argument parser.
//!
//! ```
//! use moot_app::ask::AskRequest;
//! use moot_app::run_records::RunRecords;
//! use moot_app::request::Settings;
//! use moot_config::Via;
//!
//! let store = moot_store::MemoryStore::default();
//! let request = AskRequest {
//!     settings: Settings {
//!         rounds: Some(1),
//!         agents: Some(3),
//!         sim: true,
//!         gold: Some("4".into()),
//!         ..Settings::from(Via::Python)
//!     },
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
use moot_config::{Config, Field};
use moot_core::answer::AnswerKind;
use moot_core::debate::DebateSpec;
use moot_core::protocol::Protocol;
use moot_core::redact::Redactor;
use moot_core::validation::TestSuite;
use moot_store::Store;

use crate::error::{bad_input, InputError};
use crate::request::{PreparedDebate, Settings};
use crate::session::Session;

/// The largest `--tests` file read: 16 MiB, what the sandbox takes in one message with the
/// program (see `moot_files` for what else is refused).
pub const MAX_TESTS_BYTES: moot_files::Limit =
    moot_files::Limit::new(16 << 20, "moot reads from a tests file");

/// The largest `--context` file read: 16 MiB (the debate's own bound,
/// `debate.max_question_bytes`, is checked after it, and is far lower by default).
pub const MAX_CONTEXT_BYTES: moot_files::Limit =
    moot_files::Limit::new(16 << 20, "moot reads from a context file");

/// A text a request gives, or the file to read it from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Given {
    /// A file to read it from (`moot ask --tests FILE`, `--context FILE`).
    File(PathBuf),
    /// The text itself.
    Text(String),
}

impl Given {
    /// The text, a file read within `limit`; a problem names `field` as `via`'s user wrote it.
    fn text(
        &self,
        limit: moot_files::Limit,
        via: moot_config::Via,
        field: Field,
    ) -> Result<String> {
        match self {
            Given::File(path) => moot_files::read_text(path, limit).map_err(|e| {
                InputError(format!(
                    "{}: {}",
                    via.assignment(field, moot_files::shown(path)),
                    e.problem
                ))
                .into()
            }),
            Given::Text(text) => Ok(text.clone()),
        }
    }
}

/// Tests for a code answer: a Python program run after each distinct program of the debate, in
/// the sandbox (asserts, or a `check(...)` call).
pub type Tests = Given;

/// A passage the question is about (hidden evidence: the debaters read it, a judge does not;
/// see `moot_core::evidence`).
pub type Context = Given;

/// A question to debate and everything that shapes the debate.
#[derive(Debug)]
pub struct AskRequest {
    pub question: String,
    /// The configuration and what the request sets over it, and who asked.
    pub settings: Settings,
    /// Option texts of a choice question, in order A, B, C, ….
    pub choices: Vec<String>,
    /// Tests for a code answer; giving them asks for a code answer unless `settings.answer`
    /// names another kind (which is refused).
    pub tests: Option<Tests>,
    /// A passage the question is about, which the debaters read and deciding agents do not.
    pub context: Option<Context>,
    /// Code answers that fail their checks count as no answer for every rule.
    pub require_passing: bool,
}

impl AskRequest {
    /// `question` under the default configuration and team, with nothing set, from the CLI.
    pub fn new(question: impl Into<String>) -> AskRequest {
        AskRequest {
            question: question.into(),
            settings: Settings::default(),
            choices: Vec::new(),
            tests: None,
            context: None,
            require_passing: false,
        }
    }

    /// The debate prepared, before any agent is built: the question checked, the settings
    /// applied, the size, team, settings and gold answer checked, the protocol built and the
    /// team fitted to it, the answer kind resolved and the tests read. Everything wrong in the
    /// request is an [`InputError`] (or a `moot_config::ConfigError`) here.
    pub fn prepare(self) -> Result<PreparedAsk> {
        if self.question.trim().is_empty() {
            return bad_input("the question is empty");
        }
        let prepared = self.settings.prepare(&self.question)?;
        self.prepared(prepared)
    }

    /// [`AskRequest::prepare`] from a debate prepared already (the server prepares its own,
    /// having picked agents by id).
    pub fn prepared(self, prepared: PreparedDebate) -> Result<PreparedAsk> {
        let PreparedDebate {
            mut config,
            protocol,
            redactor,
        } = prepared;
        let via = self.settings.via;
        let mut kind = config.debate.answer.resolve(&self.question, &self.choices);
        let passage = match &self.context {
            Some(context) => {
                let passage = context.text(MAX_CONTEXT_BYTES, via, Field::Context)?;
                if passage.trim().is_empty() {
                    return bad_input(format!("{} is empty", via.name(Field::Context)));
                }
                config
                    .debate
                    .check_question(&self.question, Some(&passage))?;
                Some(passage)
            }
            None => None,
        };
        let tests = match &self.tests {
            Some(tests) => {
                let text = tests.text(MAX_TESTS_BYTES, via, Field::Tests)?;
                // Tests mean a program is wanted, whatever the question's words suggested.
                if self.settings.answer.is_none() {
                    kind = AnswerKind::Code;
                } else if kind != AnswerKind::Code {
                    return bad_input(format!(
                        "{} runs code answers, but the answer kind is {kind} (use {})",
                        via.name(Field::Tests),
                        via.assignment(Field::Answer, "code")
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
            run_id: moot_engine::new_run_id(),
            question: self.question,
            config,
            protocol,
            redactor,
            kind,
            choices: self.choices,
            tests,
            passage,
            via,
            desk: None,
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
    /// The run id it will be stored under.
    pub run_id: String,
    pub question: String,
    /// The configuration with the request applied, its team sized and fitted to the protocol.
    pub config: Config,
    /// The protocol, built once.
    pub protocol: Box<dyn Protocol>,
    /// What removes secrets from everything the debate stores and prints.
    pub redactor: Arc<Redactor>,
    pub kind: AnswerKind,
    pub choices: Vec<String>,
    pub tests: Option<TestSuite>,
    /// The passage the question is about, read and checked.
    pub passage: Option<String>,
    /// The front end that asked.
    pub via: moot_config::Via,
    /// Where agents a person answers for (`human`) ask them: the front end's way to reach a
    /// person (the terminal, a page); `None` refuses such agents.
    pub desk: Option<Arc<dyn moot_backends::human::HumanDesk>>,
}

impl PreparedAsk {
    /// Rounds after round 0 the debate has.
    pub fn rounds(&self) -> usize {
        self.config.debate.rounds
    }

    /// The debate ready to run under its run id: its agents built (`on_message` hears about
    /// models being fetched and loaded), recorded in `store`.
    pub fn session<'a>(
        self,
        store: &'a dyn Store,
        on_message: &mut dyn FnMut(&str),
    ) -> Result<Session<'a>> {
        let built =
            crate::agents::build_with(&self.config, self.kind, self.desk.clone(), on_message)?;
        let spec = DebateSpec {
            question: self.question,
            kind: self.kind,
            choices: self.choices,
            agents: built.specs.clone(),
            rounds: self.config.debate.rounds,
            seed: self.config.debate.seed,
            tests: self.tests,
            layout: self.config.debate.layout,
            passage: self.passage,
        };
        Ok(Session {
            store,
            run_id: self.run_id,
            config: self.config,
            protocol: self.protocol,
            spec,
            agents: built,
            restore: None,
            fork: None,
            redactor: self.redactor,
            via: self.via,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(question: &str) -> AskRequest {
        AskRequest {
            settings: Settings {
                gold: Some("4".into()),
                agents: Some(2),
                sim: true,
                ..Settings::default()
            },
            ..AskRequest::new(question)
        }
    }

    #[test]
    fn an_empty_question_is_refused_before_the_configuration_is_read() {
        let request = AskRequest {
            settings: Settings {
                config_file: Some("/nonexistent/moot.toml".into()),
                ..Settings::default()
            },
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
        numeric.settings.answer = Some(moot_config::AnswerSetting::Kind(AnswerKind::Numeric));
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
