//! `moot-app`: the application layer every front end shares — the CLI (`moot`), the server
//! (`moot-serve`) and the Python package. It turns what a user asks for into debates and
//! benchmarks and reads them back:
//!
//! - [`prepare`]: open a store and a runtime, and find what a name stands for;
//! - [`request`]: what a user asks of a debate, in the one shape every front end fills
//!   ([`request::Settings`], with where each value came from), prepared once
//!   ([`request::Settings::prepare`]: the team sized and fitted, the protocol built);
//! - [`agents`]: build each agent of a configuration as its backend does (each backend is one
//!   module and one entry of `moot_config::BACKENDS`: how it is built, retried and checked);
//!   the embedded model is behind the `local` feature;
//! - [`health`]: whether each agent of a configuration can answer (`moot health`);
//! - [`runner`]: the runner every debate goes through ([`runner::Runner`]: the redactor, the
//!   code sandbox and the run log a configuration asks for, around `moot_engine::run_job`);
//! - [`session`]: run or resume one debate to its decision through it, and save its transcript;
//! - [`benchmark`]: run, plan, resume and work benchmarks;
//! - [`ask`]: one question prepared into a session ([`ask::AskRequest`]: what a front end asks);
//! - [`resume`]: what a name resumes (a debate or a benchmark), and whether it may;
//! - [`fork`]: a finished debate forked at a round with an intervention (`moot fork`), and
//!   [`bench_fork`]: every debate of a benchmark forked so (`moot bench --fork-of`);
//! - [`run_records`], [`view`] and [`run_summary`]: a stored run read whole, one view of it (and its
//!   Markdown, [`view::markdown`]), and the summary of a finished one;
//! - [`decide`] and [`regrade`]: stored runs decided again, and their programs graded again;
//! - [`import`]: freemad transcript files brought into the store as runs;
//! - [`bench_report`] and [`bench_status`]: stored benchmarks read back for a report, and how
//!   far one is;
//! - [`store_copy`]: everything of one store copied into another;
//! - [`stored`]: a stored configuration admitted for work on this machine — the debate from
//!   the store, the authority (what runs, where requests go, limits) from this machine
//!   ([`stored::admit`], which every command that works from a stored configuration calls);
//! - [`sweep`]: a parameter sweep over simulated debates, run and written (`moot sweep`);
//! - [`service`]: debates for a server ([`service::DebateService`]).
//!
//! Printing, argument parsing and HTTP are the front ends'. Errors are `anyhow` chains with
//! typed links ([`error`]).

pub mod agents;
pub mod ask;
pub mod bench_fork;
pub mod bench_report;
pub mod bench_status;
pub mod benchmark;
pub mod claim;
pub mod decide;
pub mod error;
pub mod fork;
pub mod health;
pub mod import;
pub mod listing;
pub mod not_found;
pub mod prepare;
pub mod regrade;
pub mod request;
pub mod resume;
pub mod run_log;
pub mod run_records;
pub mod run_summary;
pub mod runner;
pub mod same_bench;
pub mod sandbox;
pub mod service;
pub mod session;
pub mod shell;
pub mod store_copy;
pub mod stored;
pub mod sweep;
pub mod transcript;
pub mod view;
pub mod worker;

pub use error::{bad_input, InputError};
