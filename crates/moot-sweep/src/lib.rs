//! `moot sweep`: research claims tested over parameter space, not at single points.
//!
//! A [`SweepSpec`] (TOML) names a simulated team, the arms to compare (protocol, options,
//! decision rule) and one or two axes over sim, team or fault parameters. Every cell of the grid
//! runs the same seeded debates under every arm through the real engine
//! (each a [`moot_engine::DebateJob`] on an in-memory store, no cache, run by the
//! [`moot_engine::DebateRunner`] [`run_plan`] is given) — arms sharing a protocol and options
//! share its debates and are decided under each arm's rule — and each cell gets each arm's
//! accuracy with a 95% Wilson interval and the compared pair's exact McNemar test. The report
//! ([`SweepReport`]) is Markdown with a summary computed from the cells, a CSV table and an SVG:
//! a heat map of the difference over two axes, or accuracy lines with whiskers over one.
//!
//! Modules, in the order data flows: `debate` (one simulated debate, built), `spec` (the TOML and
//! its grid of cells, each checked by building its debates), `run` (debates),
//! `stats` (per cell and over the grid), `svg` and `report` (outputs). Only `moot-app` (its
//! `sweep` module, with its runner) imports this crate.

mod debate;
mod error;
pub mod report;
pub mod run;
pub mod spec;
pub mod stats;
pub mod svg;

pub use error::SweepError;
pub use report::{SweepReport, Written};
pub use run::{run_plan, ArmData, CellData, RunOptions};
pub use spec::{spec_text, Plan, SweepSpec, GOLD, MAX_SPEC_BYTES, QUESTION};
pub use stats::{CellStats, Verdict};
