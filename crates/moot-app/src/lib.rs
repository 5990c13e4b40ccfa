//! `moot-app`: the application layer every front end shares — the CLI (`moot`), the server
//! (`moot-serve`) and the Python package. It turns what a user asks for into debates and
//! benchmarks and reads them back:
//!
//! - [`prepare`]: open a store and a runtime, read a configuration, apply overrides, check the
//!   debate's size and assemble its team ([`prepare::prepare_debate`]);
//! - [`backends`]: the registry of backends as the application runs them ([`backends::DRIVERS`]:
//!   how each is built, retried and checked); the embedded model is behind the `local` feature;
//! - [`agents`]: build each agent of a configuration through its backend's driver;
//! - [`health`]: whether each agent of a configuration can answer (`moot health`);
//! - [`session`]: run or resume one debate to its decision, with its run log and transcript;
//! - [`benchmark`]: run, plan, resume and work benchmarks;
//! - [`view`] and [`summary`]: one view of a stored run, and the summary of a finished one;
//! - [`bench_report`]: stored benchmarks read back for a report;
//! - [`service`]: debates for a server ([`service::DebateService`]).
//!
//! Printing, argument parsing and HTTP are the front ends'. Errors are `anyhow` chains with
//! typed links ([`error`]).

pub mod agents;
pub mod backends;
pub mod bench_report;
pub mod benchmark;
pub mod error;
pub mod health;
pub mod prepare;
pub mod run_log;
pub mod sandbox;
pub mod service;
pub mod session;
pub mod summary;
pub mod transcript;
pub mod view;

pub use error::{bad_input, InputError};
