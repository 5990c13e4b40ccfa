//! The engine (see docs/architecture.md, The engine): runs a protocol's planned rounds against
//! the agents' backends.
//!
//! Per round it runs the planned calls concurrently (bounded by `max_concurrent_calls`), proceeds
//! once `min_agents` responded and the soft deadline passed, and cancels whatever still runs at
//! the hard deadline (dropping a call's future drops its HTTP request or kills its agent's processes).
//! Every call's outcome is written to the store before it enters the in-memory transcript; a call
//! without a response is recorded as missing, never as a kept answer. Resuming folds the stored
//! calls back into a transcript and asks the protocol again, so no completed call is repeated.
//!
//! The parts, each depending only on those listed before it:
//! - `engine_config`: what the engine is told (agents, timing, budget) and the defaults;
//! - `error`, `ids`, `observer`: the engine's errors, run ids and timestamps, progress hooks;
//! - `lineup`: which of a team's agents a protocol runs, for how many rounds;
//! - `budget`: budgets and deadlines, and prompts estimated and cut to fit;
//! - `cache`: request keys and the response cache;
//! - `flight`: single flight, identical requests in flight at once sent once (process-wide);
//! - `reask`: asking again for a final line when an answer cannot be read;
//! - `call`: one call to a model, with its re-ask and time limit;
//! - `replay`: the outcomes and transcript stored calls stand for;
//! - `recording`: building and writing the stored record of a call;
//! - `decision`: every rule's decision on a transcript, and its JSON;
//! - `fork`: a fork's copied and reused calls, its injected response and resample salt;
//! - `scheduler`: one round (concurrency, the soft and hard deadlines, cancellation);
//! - `validate`: checking code answers in the sandbox (syntax, tests), stored per program;
//! - `result`, `debate`: a debate's construction (the team fitted to the protocol, the rule
//!   resolved), its lifecycle and what it hands back;
//! - `runner`: one debate to run (`DebateJob`), the trait of whoever runs it, and `run_job`,
//!   the one place a debate is built, stored and run.

mod budget;
mod cache;
mod call;
mod code_checks;
mod debate;
mod decision;
mod engine_config;
mod error;
mod flight;
mod fork;
mod ids;
mod lineup;
mod observer;
mod reask;
mod recording;
mod replay;
mod result;
mod runner;
mod scheduler;
mod spans;

pub use budget::{cut_prompt, estimated_prompt_tokens};
pub use cache::request_key;
pub use code_checks::{
    check_code_answers, regrade_run, stored_validations, validations_from, Regraded,
};
pub use debate::{Debate, DebateSetup};
pub use decision::{decide_all, decide_all_with, decision_json};
pub use engine_config::{
    Budget, EngineAgent, EngineConfig, DEFAULT_HARD_TIMEOUT, DEFAULT_MAX_CONCURRENT_CALLS,
    DEFAULT_MIN_AGENTS, DEFAULT_SOFT_TIMEOUT,
};
pub use error::EngineError;
pub use fork::ForkSource;
pub use ids::{new_run_id, timestamp};
pub use lineup::Lineup;
pub use observer::{NoObserver, Observer, Observers};
pub use replay::{fold_call, key_of, outcome_of, transcript_of};
pub use result::DebateResult;
pub use runner::{run_job, DebateJob, DebateRunner, Ran, Start, Surroundings};
pub use spans::capture_content;
