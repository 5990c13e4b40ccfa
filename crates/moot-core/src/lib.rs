//! `moot-core`: the pure domain of the moot debate engine.
//!
//! Everything here is deterministic and free of I/O and async, so that any stored debate can be
//! re-decided, re-scored and re-measured offline (see docs/architecture.md, Trajectory and
//! Decision rules):
//! - [`answer`]: extraction of a comparable answer from a model's response text, per answer kind.
//! - [`trajectory`]: the agents × rounds matrix of answers that decision rules read.
//! - [`decision`]: the decision rules (`majority-last`, `free-mad`, `max-consistency`, `svr`,
//!   `sid-et`).
//! - [`protocol`]: every debate protocol as a pure state machine, composed from [`topology`],
//!   orderings, masks and [`faults`].
//! - [`cpython_random`]: CPython's `random.Random` (Mersenne Twister), for freemad's
//!   `k_reviewers` draw.
//! - [`metrics`]: per-round answer entropy and gold log-likelihood (MADC appendix).
//! - [`fork`]: the interventions of counterfactual forks and how protocols declare which they
//!   allow.
//! - [`layout`]: how debate prompts are laid out (`debate.layout`: the papers' order, or what
//!   every agent of a round reads alike first) and how much of a round's prompts a prefix cache
//!   could share.
//! - [`semconv`]: the names of the spans and attributes moot's traces and metrics use.
//! - [`text`]: helpers for printed text (counts with their nouns).
//! - [`validation`]: checks of code answers (verdicts, test suites) and dropping failing ones.

pub mod answer;
pub mod answer_groups;
pub mod chat;
pub mod contract;
pub mod cpython_random;
pub mod debate;
pub mod decision;
pub mod escape;
pub mod evidence;
pub mod faults;
pub mod fork;
pub mod layout;
pub mod metrics;
pub mod prompts;
pub mod protocol;
pub mod redact;
pub mod semconv;
pub mod text;
pub mod topology;
pub mod trajectory;
pub mod trajectory_json;
pub mod untrusted;
pub mod validation;

pub use answer::{Answer, AnswerKind};
pub use decision::{build_rule, Decision, DecisionConfig, DecisionRule, TieBreak, RULES};
pub use trajectory::{Cell, Trajectory};
