//! The parts of the `moot` command line that read user input: the trajectory document
//! `moot decide` reads, and input errors (the configuration file is the `moot-config` crate's).
//! A library so that they can be fuzzed and reused without the binary (and without the
//! embedded model backend).

pub mod input;
/// In `moot-core`, so that fuzzing it builds neither the binary's crates nor the server.
pub use moot_core::trajectory_json;
