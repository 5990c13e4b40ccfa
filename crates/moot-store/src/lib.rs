//! Storage for runs, calls and decisions (see docs/architecture.md, Storage).
//!
//! [`Store`] is the interface the engine and the application layer use. [`SqliteStore`] is the
//! embedded default (one file, WAL journal, migrations from `migrations/sqlite/`),
//! [`PostgresStore`] the one that many machines share (migrations from `migrations/postgres/`),
//! and [`MemoryStore`] keeps runs in memory (`memory:`, and tests); [`StoreLocation`] opens one
//! from `--store`. Every call is written as soon as it completes, before the engine uses its
//! outcome, so a killed process loses nothing it acted on.
//!
//! A store is opened for an [`Access`]: reading never creates, migrates or writes a store; only
//! [`Access::Create`] (commands that record new runs) creates one, and only in a folder that
//! exists, except the default location's. A file that is not a moot store, is damaged, or was
//! written by a newer moot is refused before anything is written to it.
mod access;
#[cfg(test)]
mod conformance;
mod error;
mod location;
mod memory;
mod owner;
mod postgres;
mod queries;
mod records;
mod rows;
mod sqlite;
mod store;

pub use access::Access;
pub use error::StoreError;
pub use location::StoreLocation;
pub use memory::MemoryStore;
pub use postgres::{redact_url, PostgresStore};
pub use records::{
    agent_failures, AgentFailures, Allowance, BenchItemRecord, BenchJobRecord, BenchRecord,
    CallBatch, CallCursor, CallRecord, DecisionJson, DecisionRecord, ForkOrigin, JobCounts,
    JobState, LeftOut, LeftOutItem, RunFilter, RunOutcome, RunRecord, RunStatus, ValidationRecord,
    WholeRun, WorkerRecord, RUN_HEARTBEAT, RUN_SILENCE_LIMIT,
};
pub use sqlite::SqliteStore;
pub use store::Store;
