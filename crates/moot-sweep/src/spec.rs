//! The sweep spec, read from TOML, and the grid of cells it describes.
//!
//! ```toml
//! title = "FREE-MAD score vs last-round majority under conformity"
//! debates = 300                  # seeded debates per cell, seeds 0..debates (paired everywhere)
//! rounds = 2                     # debate rounds, unless an axis sets "rounds"
//! agents = 5                     # team size, unless an axis sets "agents"
//! compare = ["free-mad", "majority-last"]   # optional; top-level, so before the first [table]
//! max_debates = 10000000         # optional: the most cells × arms × debates (the default)
//! max_cells = 10000              # optional: the most cells in the grid (the default)
//!
//! [agent]                        # the base SimAgent of every agent
//! accuracy = 0.55
//!
//! [[team]]                       # optional: SimAgent tables cycled to the team size, each
//! beta_conform = 4               # overriding [agent]
//!
//! [[arms]]
//! label = "free-mad"
//! protocol = "free-mad-c"
//! rule = "free-mad"              # optional: the protocol's default rule
//! options = { faults = { cut_off = 0.2 } }   # optional: moot's [protocol] table
//!
//! [x]
//! param = "beta_conform"
//! values = [-3, 0, 3]
//! member = 0                     # optional: only agent 0 (model seed 100·seed + 0) gets the value
//!
//! [y]                            # optional second axis
//! param = "accuracy"
//! values = [0.4, 0.6]
//! ```
//!
//! The simulated agents do not read the question: each knows the gold answer and is right with
//! its own accuracy, moved by its conformity and memory. Every debate therefore asks one fixed
//! arithmetic question ([`QUESTION`], gold [`GOLD`]); only the parameters decide who is right.

use std::collections::BTreeSet;
use std::path::Path;

use moot_backends::sim::{SimAgent, MAX_EXPONENT};
use moot_core::decision::RULES;
use moot_core::protocol::{build_protocol, ProtocolOptions};
use serde::{Deserialize, Serialize};

use crate::error::SweepError;

pub use crate::debate::{Group, GOLD, QUESTION};
/// At most this many agents: agent `i` of debate `s` gets model seed `100·s + i`, so more would
/// share seeds across debates.
pub const MAX_AGENTS: usize = 100;
/// At most this many debate rounds (a slip like `rounds = 1000000` is refused).
pub const MAX_ROUNDS: usize = 100;
/// The most debates a sweep may ask for (cells × arms × debates per cell) unless its spec
/// raises `max_debates`: about an hour on a few cores, and a bounded memory for the results.
pub const DEFAULT_MAX_DEBATES: u64 = 10_000_000;
/// The most cells a grid may have unless its spec raises `max_cells`: each cell holds its own
/// team and is checked by building its debates before anything runs, and is a row of the report
/// and a square of the heat map (a 100 × 100 grid).
pub const DEFAULT_MAX_CELLS: u64 = 10_000;
/// The most seeded debates per cell, whatever `max_debates` says: agent `i` (below
/// [`MAX_AGENTS`] = 100) of debate `s` gets the model seed `100·s + i`, which must fit in 64 bits.
pub const MAX_DEBATES_PER_CELL: u64 = u64::MAX / 100;
/// The largest spec file read: 16 MiB, as a configuration (a spec is a few lines of TOML).
pub const MAX_SPEC_BYTES: moot_files::Limit =
    moot_files::Limit::new(16 << 20, "moot reads from a sweep spec");

/// The text of the spec file at `path`: a regular file of at most [`MAX_SPEC_BYTES`], never a
/// FIFO or a device (see `moot_files`).
pub fn spec_text(path: &Path) -> Result<String, SweepError> {
    Ok(moot_files::read_text(path, MAX_SPEC_BYTES)?)
}

/// A sweep as written in its TOML file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    pub title: String,
    /// Seeded debates per cell: seeds `0..debates`, the same in every cell and arm.
    pub debates: usize,
    /// Debate rounds (after round 0), unless an axis sets `rounds`.
    pub rounds: usize,
    /// Team size, unless an axis sets `agents`.
    pub agents: usize,
    /// The two arm labels tested in each cell (first minus second); default: the first two arms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare: Option<Vec<String>>,
    /// The most debates the sweep may ask for, counted as cells × arms × debates per cell;
    /// default [`DEFAULT_MAX_DEBATES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_debates: Option<u64>,
    /// The most cells the grid may have; default [`DEFAULT_MAX_CELLS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cells: Option<u64>,
    /// The base [`SimAgent`] of every agent (any of its fields).
    #[serde(default)]
    pub agent: toml::Table,
    /// A heterogeneous team: [`SimAgent`] tables cycled to the team size, each overriding
    /// [`SweepSpec::agent`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub team: Vec<toml::Table>,
    /// What is compared in each cell.
    pub arms: Vec<ArmSpec>,
    pub x: AxisSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<AxisSpec>,
}

/// One arm: a protocol, its options and the decision rule that reads its debates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmSpec {
    pub label: String,
    pub protocol: String,
    /// A decision rule of [`moot_core::decision::RULES`]; default: the protocol's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Protocol options, as in moot's configuration `[protocol]` table.
    #[serde(default)]
    pub options: ProtocolOptions,
}

/// One axis of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisSpec {
    /// A numeric [`SimAgent`] field, `beta_everywhere` (`beta`, `beta_conform` and `beta_anti`
    /// at once), `agents`, `rounds`, or `faults.cut_off` / `faults.malicious` / `faults.drop` /
    /// `faults.delay` (set in every arm's options).
    pub param: String,
    pub values: Vec<f64>,
    /// Only this agent (counted from 0) gets the value; SimAgent parameters only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<usize>,
}

/// What an axis sets.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// A numeric field of [`SimAgent`], by name.
    Sim(String),
    /// `beta`, `beta_conform` and `beta_anti` together ([`SimAgent::with_beta_everywhere`]).
    BetaEverywhere,
    Agents,
    Rounds,
    Fault(Fault),
}

/// A fault rate an axis can set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    CutOff,
    Malicious,
    Drop,
    Delay,
}

impl Fault {
    const ALL: [(Fault, &'static str); 4] = [
        (Fault::CutOff, "faults.cut_off"),
        (Fault::Malicious, "faults.malicious"),
        (Fault::Drop, "faults.drop"),
        (Fault::Delay, "faults.delay"),
    ];

    fn set(self, options: &mut ProtocolOptions, v: f64) {
        let f = &mut options.faults;
        match self {
            Fault::CutOff => f.cut_off = v,
            Fault::Malicious => f.malicious = v,
            Fault::Drop => f.drop = v,
            Fault::Delay => f.delay = v,
        }
    }
}

/// SimAgent fields that are probabilities (checked like moot's configuration checks them).
const PROBABILITIES: &[&str] = &["accuracy", "alpha", "judge_accuracy", "unsure"];
/// SimAgent fields the sim takes `exp()` of, within ±[`MAX_EXPONENT`].
const EXPONENTS: &[&str] = &["beta", "beta_conform", "beta_anti", "recency"];

/// The numeric fields of [`SimAgent`], from its serialized default (so fields added to the sim
/// are sweepable without a change here).
pub fn sim_numeric_fields() -> Vec<String> {
    toml::Table::try_from(SimAgent::default())
        .map(|t| {
            t.into_iter()
                .filter(|(_, v)| matches!(v, toml::Value::Float(_) | toml::Value::Integer(_)))
                .map(|(k, _)| k)
                .collect()
        })
        .unwrap_or_default()
}

/// Every name an axis's `param` may take.
pub fn param_names() -> Vec<String> {
    let mut names = sim_numeric_fields();
    names.push("beta_everywhere".into());
    names.push("agents".into());
    names.push("rounds".into());
    names.extend(Fault::ALL.iter().map(|(_, n)| n.to_string()));
    names
}

impl Param {
    pub fn parse(name: &str) -> Option<Param> {
        match name {
            "agents" => Some(Param::Agents),
            "rounds" => Some(Param::Rounds),
            "beta_everywhere" => Some(Param::BetaEverywhere),
            _ => Fault::ALL
                .iter()
                .find(|(_, n)| *n == name)
                .map(|(f, _)| Param::Fault(*f))
                .or_else(|| {
                    sim_numeric_fields()
                        .iter()
                        .any(|f| f == name)
                        .then(|| Param::Sim(name.to_string()))
                }),
        }
    }

    fn is_agent_param(&self) -> bool {
        matches!(self, Param::Sim(_) | Param::BetaEverywhere)
    }
}

/// An axis with its parameter resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub param: Param,
    pub values: Vec<f64>,
    pub member: Option<usize>,
    /// As written, for reports: `beta_conform`, or `accuracy (agent 0)` with a member.
    pub name: String,
}

impl Axis {
    fn resolve(spec: &AxisSpec, at: &str) -> Result<Axis, SweepError> {
        let param = Param::parse(&spec.param).ok_or_else(|| {
            SweepError::invalid(
                format!("{at}.param"),
                format!(
                    "unknown parameter {:?} (expected one of {})",
                    spec.param,
                    param_names().join(", ")
                ),
            )
        })?;
        if spec.member.is_some() && !param.is_agent_param() {
            return Err(SweepError::invalid(
                format!("{at}.member"),
                format!(
                    "applies only to agent parameters, not {:?} (which sets the whole debate)",
                    spec.param
                ),
            ));
        }
        if spec.values.is_empty() {
            return Err(SweepError::invalid(
                format!("{at}.values"),
                "needs at least one value",
            ));
        }
        for (i, &v) in spec.values.iter().enumerate() {
            let bad = |why: &str| {
                Err(SweepError::invalid(
                    format!("{at}.values[{i}]"),
                    format!("{v} {why}"),
                ))
            };
            if !v.is_finite() {
                return bad("is not a finite number");
            }
            let whole = v.fract() == 0.0;
            match &param {
                Param::Agents if !(whole && (1.0..=MAX_AGENTS as f64).contains(&v)) => {
                    return bad(&format!(
                        "is not a team size (a whole number 1 to {MAX_AGENTS})"
                    ))
                }
                Param::Rounds if !(whole && (0.0..=MAX_ROUNDS as f64).contains(&v)) => {
                    return bad(&format!(
                        "is not a number of rounds (a whole number 0 to {MAX_ROUNDS})"
                    ))
                }
                Param::Fault(_) if !(0.0..=1.0).contains(&v) => {
                    return bad("is not a fraction between 0 and 1")
                }
                Param::Sim(f)
                    if PROBABILITIES.contains(&f.as_str()) && !(0.0..=1.0).contains(&v) =>
                {
                    return bad(&format!("is not a probability ({f} is between 0 and 1)"))
                }
                Param::Sim(f)
                    if EXPONENTS.contains(&f.as_str())
                        && !(-MAX_EXPONENT..=MAX_EXPONENT).contains(&v) =>
                {
                    return bad(&format!(
                        "is not between -{MAX_EXPONENT} and {MAX_EXPONENT} (the sim weighs by exp() of {f})"
                    ))
                }
                Param::BetaEverywhere if !(-MAX_EXPONENT..=MAX_EXPONENT).contains(&v) => {
                    return bad(&format!(
                        "is not between -{MAX_EXPONENT} and {MAX_EXPONENT} (the sim weighs by exp() of β)"
                    ))
                }
                _ => {}
            }
        }
        let mut seen = BTreeSet::new();
        for &v in &spec.values {
            if !seen.insert(v.to_bits()) {
                return Err(SweepError::invalid(
                    format!("{at}.values"),
                    format!("{v} appears twice"),
                ));
            }
        }
        let name = match spec.member {
            Some(m) => format!("{} (agent {m})", spec.param),
            None => spec.param.clone(),
        };
        Ok(Axis {
            param,
            values: spec.values.clone(),
            member: spec.member,
            name,
        })
    }
}

/// One arm, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Arm {
    pub label: String,
    pub protocol: String,
    pub rule: &'static str,
    pub options: ProtocolOptions,
}

/// One point of the grid: who debates, for how many rounds, under which protocols.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Index into the x (and y) axis values.
    pub xi: usize,
    pub yi: Option<usize>,
    pub x: f64,
    pub y: Option<f64>,
    pub team: Vec<SimAgent>,
    pub rounds: usize,
    /// The distinct (protocol, options) this cell runs, each once per seed.
    pub groups: Vec<Group>,
    /// Per arm: its group.
    pub arm_group: Vec<usize>,
}

/// A spec checked and expanded: the arms, the axes and every cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub title: String,
    pub debates: usize,
    pub arms: Vec<Arm>,
    /// The compared pair, as arm indices (first minus second).
    pub compare: (usize, usize),
    pub x: Axis,
    pub y: Option<Axis>,
    /// Row-major: every x for the first y value, then the next y value.
    pub cells: Vec<Cell>,
}

impl Plan {
    /// A cell's coordinates: `beta_conform = 2, accuracy = 0.4`.
    pub fn coordinates(&self, x: f64, y: Option<f64>) -> String {
        let mut s = format!("{} = {}", self.x.name, number(x));
        if let (Some(axis), Some(v)) = (&self.y, y) {
            s.push_str(&format!(", {} = {}", axis.name, number(v)));
        }
        s
    }

    /// Debates the sweep runs: cells × distinct protocols × seeds. Saturating, so a plan built
    /// by hand past what [`SweepSpec::plan`] allows still says a number no smaller than the
    /// truth; a planned one is within `max_debates`, so the number is exact.
    pub fn total_debates(&self) -> u64 {
        let groups = self
            .cells
            .iter()
            .fold(0u64, |n, c| n.saturating_add(c.groups.len() as u64));
        groups.saturating_mul(self.debates as u64)
    }
}

/// A number as written in a spec: `3`, `0.35`, `-2`.
pub fn number(v: f64) -> String {
    if v == 0.0 {
        // No "-0".
        "0".into()
    } else {
        format!("{v}")
    }
}

/// The error toml gives, as `origin:line:column: key path: message` on one line.
fn parse_error(text: &str, origin: &str, inner: &toml::de::Error, path: &str) -> SweepError {
    let at = inner
        .span()
        .map(|span| {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!(":{line}:{column}")
        })
        .unwrap_or_default();
    let mut message = if path.is_empty() || path == "." {
        inner.message().to_string()
    } else {
        format!("{path}: {}", inner.message())
    };
    // `compare` after a [table] header belongs to that table in TOML.
    if message.contains("unknown field `compare`") {
        message.push_str(
            " (compare is a top-level key: in TOML it must come before the first [table])",
        );
    }
    SweepError::Parse {
        path: format!("{origin}{at}"),
        message,
    }
}

impl SweepSpec {
    /// Reads and checks the spec at `path`.
    pub fn read(path: &Path) -> Result<SweepSpec, SweepError> {
        SweepSpec::parse(&spec_text(path)?, &path.display().to_string())
    }

    /// Parses and checks a spec; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<SweepSpec, SweepError> {
        let de = toml::Deserializer::parse(text).map_err(|e| parse_error(text, origin, &e, ""))?;
        let spec: SweepSpec = serde_path_to_error::deserialize(de)
            .map_err(|e| parse_error(text, origin, e.inner(), &e.path().to_string()))?;
        spec.plan(None)?;
        Ok(spec)
    }

    /// Agent `i`'s table before any axis: team entry `i` (cycled) over the base [agent] table,
    /// or over nothing when the entry names a preset (the preset then replaces the base, and
    /// the entry's own fields override the preset's).
    fn member_table(&self, i: usize) -> toml::Table {
        if self.team.is_empty() {
            return self.agent.clone();
        }
        let entry = &self.team[i % self.team.len()];
        let mut t = if entry.contains_key("preset") {
            toml::Table::new()
        } else {
            self.agent.clone()
        };
        for (k, v) in entry {
            t.insert(k.clone(), v.clone());
        }
        t
    }

    /// Checks the spec and expands it into cells; `debates` overrides the spec's count.
    pub fn plan(&self, debates: Option<usize>) -> Result<Plan, SweepError> {
        let overridden = debates.is_some();
        let debates = debates.unwrap_or(self.debates);
        if debates == 0 {
            return Err(SweepError::invalid("debates", "must be at least 1"));
        }
        if self.agents == 0 || self.agents > MAX_AGENTS {
            return Err(SweepError::invalid(
                "agents",
                format!("{} is not a team size (1 to {MAX_AGENTS})", self.agents),
            ));
        }
        if self.rounds > MAX_ROUNDS {
            return Err(SweepError::invalid(
                "rounds",
                format!("{} is more than {MAX_ROUNDS}", self.rounds),
            ));
        }
        // Every agent table must be a usable SimAgent on its own, so a typo or a value out of
        // range is named where it is, even where an axis overrides it.
        let as_agent = |t: &toml::Table, at: &str| {
            sim_agent(t.clone(), at)?
                .check()
                .map_err(|e| SweepError::invalid(format!("{at}.{}", e.field()), e.to_string()))
        };
        as_agent(&self.agent, "agent")?;
        for (i, t) in self.team.iter().enumerate() {
            as_agent(t, &format!("team[{i}]"))?;
        }
        let arms = self.arms()?;
        let compare = self.compare(&arms)?;
        let x = Axis::resolve(&self.x, "x")?;
        let y = match &self.y {
            Some(y) => Some(Axis::resolve(y, "y")?),
            None => None,
        };
        // Before any cell is built: building them is what grows with the grid.
        self.check_size(&x, y.as_ref(), arms.len(), debates, overridden)?;
        if let Some(y) = &y {
            if y.param == x.param && y.member == x.member {
                return Err(SweepError::invalid(
                    "y.param",
                    format!("{:?} is already the x axis", self.x.param),
                ));
            }
        }
        let mut cells = Vec::new();
        let ys: Vec<Option<usize>> = match &y {
            Some(y) => (0..y.values.len()).map(Some).collect(),
            None => vec![None],
        };
        for yi in ys {
            for xi in 0..x.values.len() {
                cells.push(self.cell(&arms, &x, xi, y.as_ref().zip(yi))?);
            }
        }
        Ok(Plan {
            title: self.title.clone(),
            debates,
            arms,
            compare,
            x,
            y,
            cells,
        })
    }

    /// The grid's size against `max_cells`, its work (cells × arms × debates per cell, an upper
    /// bound on the debates run, as arms that share a protocol share its debates) against
    /// `max_debates`, and the seeds' room; counted without wrapping. `overridden`: the debates
    /// per cell came from `--debates`.
    fn check_size(
        &self,
        x: &Axis,
        y: Option<&Axis>,
        arms: usize,
        debates: usize,
        overridden: bool,
    ) -> Result<(), SweepError> {
        use moot_core::text::plural;
        let top = "at the top of the spec, before the first [table]";
        let (nx, ny) = (
            x.values.len() as u64,
            y.map_or(1, |y| y.values.len() as u64),
        );
        let max_cells = self.max_cells.unwrap_or(DEFAULT_MAX_CELLS);
        let Some(cells) = nx.checked_mul(ny) else {
            return Err(SweepError::invalid(
                "max_cells",
                format!(
                    "the grid is {nx} × {ny}, more than {} cells, past any max_cells; give the axes fewer values",
                    u64::MAX
                ),
            ));
        };
        if cells > max_cells {
            return Err(SweepError::invalid(
                "max_cells",
                format!(
                    "the grid is {nx} × {ny} = {cells} cells, more than max_cells = {max_cells} (each cell holds a team, is checked before anything runs and is a row of the report); to run it, set max_cells = {cells} {top}"
                ),
            ));
        }
        let per_cell = debates as u64;
        let source = if overridden { " (--debates)" } else { "" };
        let lower = if overridden { "--debates" } else { "debates" };
        let max_debates = self.max_debates.unwrap_or(DEFAULT_MAX_DEBATES);
        let total = cells
            .checked_mul(arms as u64)
            .and_then(|n| n.checked_mul(per_cell));
        let asked = format!(
            "{} × {} × {per_cell} debates per cell{source}",
            plural(cells, "cell"),
            plural(arms, "arm")
        );
        match total {
            None => {
                return Err(SweepError::invalid(
                    "max_debates",
                    format!(
                        "{asked} is more than {} debates, past any max_debates; lower {lower}",
                        u64::MAX
                    ),
                ))
            }
            Some(total) if total > max_debates => {
                return Err(SweepError::invalid(
                    "max_debates",
                    format!(
                        "{asked} is {total} debates, more than max_debates = {max_debates}; to run it, set max_debates = {total} {top}, or lower {lower}"
                    ),
                ))
            }
            Some(_) => {}
        }
        if per_cell > MAX_DEBATES_PER_CELL {
            return Err(SweepError::invalid(
                if overridden { "--debates" } else { "debates" },
                format!(
                    "{per_cell} is more than {MAX_DEBATES_PER_CELL} debates per cell: agent i of debate s gets the model seed 100·s + i, which must fit in 64 bits"
                ),
            ));
        }
        Ok(())
    }

    fn arms(&self) -> Result<Vec<Arm>, SweepError> {
        if self.arms.len() < 2 {
            return Err(SweepError::invalid(
                "arms",
                format!(
                    "a sweep compares arms: give at least two [[arms]] (got {})",
                    self.arms.len()
                ),
            ));
        }
        let mut labels = BTreeSet::new();
        let mut arms = Vec::new();
        for (i, a) in self.arms.iter().enumerate() {
            let at = |key: &str| format!("arms[{i}].{key}");
            if a.label.trim().is_empty() {
                return Err(SweepError::invalid(at("label"), "must not be empty"));
            }
            if !labels.insert(a.label.as_str()) {
                return Err(SweepError::invalid(
                    at("label"),
                    format!("{:?} labels another arm too", a.label),
                ));
            }
            let protocol = build_protocol(&a.protocol, &a.options).map_err(|e| {
                let key = if matches!(e, moot_core::protocol::ProtocolError::Unknown { .. }) {
                    "protocol"
                } else {
                    "options"
                };
                SweepError::invalid(at(key), e.to_string())
            })?;
            let rule = match &a.rule {
                None => protocol.default_rule(),
                Some(name) => RULES
                    .iter()
                    .find(|r| r.name == name)
                    .map(|r| r.name)
                    .ok_or_else(|| {
                        SweepError::invalid(
                            at("rule"),
                            moot_core::decision::UnknownRule(name.clone()).to_string(),
                        )
                    })?,
            };
            arms.push(Arm {
                label: a.label.clone(),
                protocol: a.protocol.clone(),
                rule,
                options: a.options.clone(),
            });
        }
        Ok(arms)
    }

    fn compare(&self, arms: &[Arm]) -> Result<(usize, usize), SweepError> {
        let Some(pair) = &self.compare else {
            return Ok((0, 1));
        };
        let [first, second] = pair.as_slice() else {
            return Err(SweepError::invalid(
                "compare",
                format!("names two arm labels (got {})", pair.len()),
            ));
        };
        let find = |label: &String| {
            arms.iter().position(|a| &a.label == label).ok_or_else(|| {
                SweepError::invalid(
                    "compare",
                    format!(
                        "no arm is labelled {label:?} (arms: {})",
                        arms.iter()
                            .map(|a| a.label.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
        };
        let pair = (find(first)?, find(second)?);
        if pair.0 == pair.1 {
            return Err(SweepError::invalid(
                "compare",
                "compares an arm with itself",
            ));
        }
        Ok(pair)
    }

    /// The cell at x index `xi` (and y index), with its team and protocols checked.
    fn cell(
        &self,
        arms: &[Arm],
        x: &Axis,
        xi: usize,
        y: Option<(&Axis, usize)>,
    ) -> Result<Cell, SweepError> {
        let mut settings = vec![(x, x.values[xi])];
        if let Some((y, yi)) = y {
            settings.push((y, y.values[yi]));
        }
        let at = || {
            settings
                .iter()
                .map(|(a, v)| format!("{} = {v}", a.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut agents = self.agents;
        let mut rounds = self.rounds;
        let mut options: Vec<ProtocolOptions> = arms.iter().map(|a| a.options.clone()).collect();
        for (axis, v) in &settings {
            match axis.param {
                Param::Agents => agents = *v as usize,
                Param::Rounds => rounds = *v as usize,
                Param::Fault(f) => options.iter_mut().for_each(|o| f.set(o, *v)),
                Param::Sim(_) | Param::BetaEverywhere => {}
            }
        }
        let mut team = Vec::with_capacity(agents);
        for i in 0..agents {
            let mut table = self.member_table(i);
            let mut everywhere = None;
            for (axis, v) in &settings {
                if axis.member.is_some_and(|m| m != i) {
                    continue;
                }
                match &axis.param {
                    Param::Sim(field) => set_number(&mut table, field, *v),
                    Param::BetaEverywhere => everywhere = Some(*v),
                    _ => {}
                }
            }
            let mut agent = sim_agent(table, &format!("agent {i} at {}", at()))?;
            if let Some(b) = everywhere {
                agent = agent.with_beta_everywhere(b);
            }
            // Checked like moot's configuration checks a sim agent.
            agent.check().map_err(|e| {
                let field = e.field();
                SweepError::invalid(
                    if self.team.is_empty() {
                        format!("agent.{field}")
                    } else {
                        format!("team[{}].{field}", i % self.team.len())
                    },
                    format!("{e}, for agent {i}"),
                )
            })?;
            team.push(agent);
        }
        for (axis, _) in &settings {
            if let Some(m) = axis.member {
                if m >= agents {
                    return Err(SweepError::invalid(
                        if std::ptr::eq(*axis, x) {
                            "x.member"
                        } else {
                            "y.member"
                        },
                        format!(
                            "agent {m} does not exist in a team of {agents} (at {})",
                            at()
                        ),
                    ));
                }
            }
        }
        let mut groups: Vec<Group> = Vec::new();
        let mut arm_group = Vec::with_capacity(arms.len());
        for (i, (arm, options)) in arms.iter().zip(options).enumerate() {
            let group = Group {
                protocol: arm.protocol.clone(),
                options,
            };
            let index = match groups.iter().position(|g| g == &group) {
                Some(index) => index,
                None => {
                    crate::debate::check(&group, &team, rounds).map_err(|message| {
                        SweepError::invalid(format!("arms[{i}]"), format!("at {}: {message}", at()))
                    })?;
                    groups.push(group);
                    groups.len() - 1
                }
            };
            arm_group.push(index);
        }
        Ok(Cell {
            xi,
            yi: y.map(|(_, yi)| yi),
            x: x.values[xi],
            y: y.map(|(y, yi)| y.values[yi]),
            team,
            rounds,
            groups,
            arm_group,
        })
    }
}

/// The [`SimAgent`] a table describes; errors name the key (`agent.accuracy: invalid type …`).
fn sim_agent(table: toml::Table, at: &str) -> Result<SimAgent, SweepError> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let path = e.path().to_string();
        let field = if path.is_empty() || path == "." {
            at.to_string()
        } else {
            format!("{at}.{path}")
        };
        SweepError::invalid(field, e.inner().message().to_string())
    })
}

/// Sets a numeric field, keeping its type (integer fields get whole numbers).
fn set_number(table: &mut toml::Table, field: &str, v: f64) {
    let integer = toml::Table::try_from(SimAgent::default())
        .ok()
        .and_then(|d| d.get(field).cloned())
        .is_some_and(|d| matches!(d, toml::Value::Integer(_)));
    let value = if integer && v.fract() == 0.0 {
        toml::Value::Integer(v as i64)
    } else {
        toml::Value::Float(v)
    };
    table.insert(field.to_string(), value);
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
title = "FREE-MAD score vs last-round majority"
debates = 30
rounds = 2
agents = 5
compare = ["free-mad", "majority-last"]

[agent]
accuracy = 0.55
alpha = 0.5
distractors = ["418"]

[[arms]]
label = "free-mad"
protocol = "free-mad-c"
rule = "free-mad"

[[arms]]
label = "majority-last"
protocol = "free-mad-c"
rule = "majority-last"

[[arms]]
label = "cut"
protocol = "free-mad-n"
options = { faults = { cut_off = 0.2 } }

[x]
param = "beta_conform"
values = [-3, 0, 4]

[y]
param = "accuracy"
values = [0.3, 0.6]
"#;

    fn parse(text: &str) -> Result<SweepSpec, SweepError> {
        SweepSpec::parse(text, "spec.toml")
    }

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn the_example_parses_into_a_grid_of_paired_cells() {
        let spec = parse(EXAMPLE).unwrap();
        let plan = spec.plan(None).unwrap();
        assert_eq!(plan.cells.len(), 6);
        assert_eq!(plan.debates, 30);
        assert_eq!(spec.plan(Some(4)).unwrap().debates, 4);
        assert_eq!(plan.compare, (0, 1));
        // Row-major, y outer.
        let coords: Vec<(f64, Option<f64>)> = plan.cells.iter().map(|c| (c.x, c.y)).collect();
        assert_eq!(coords[0], (-3.0, Some(0.3)));
        assert_eq!(coords[1], (0.0, Some(0.3)));
        assert_eq!(coords[3], (-3.0, Some(0.6)));
        let c = &plan.cells[4];
        assert_eq!(c.team.len(), 5);
        assert!(c
            .team
            .iter()
            .all(|a| a.beta_conform == 0.0 && a.accuracy == 0.6));
        assert!(c
            .team
            .iter()
            .all(|a| a.alpha == 0.5 && a.distractors == ["418"]));
        // Arms 0 and 1 share their debates; arm 2 runs its own.
        assert_eq!(c.groups.len(), 2);
        assert_eq!(c.arm_group, vec![0, 0, 1]);
        assert_eq!(plan.arms[0].rule, "free-mad");
        assert_eq!(plan.arms[2].rule, "free-mad");
        assert_eq!(plan.total_debates(), 6 * 2 * 30);
    }

    #[test]
    fn a_team_overrides_the_base_agent_and_a_member_axis_sets_one_agent() {
        let text = r#"
title = "t"
debates = 3
rounds = 1
agents = 4
[agent]
accuracy = 0.5
[[team]]
beta = 2.0
[[team]]
accuracy = 0.9
[[team]]
preset = "expert"
judge_accuracy = 0.5
[[arms]]
label = "a"
protocol = "som"
[[arms]]
label = "b"
protocol = "free-mad-n"
[x]
param = "recency"
values = [0.5]
member = 3
[y]
param = "agents"
values = [4, 6]
"#;
        let plan = parse(text).unwrap().plan(None).unwrap();
        let team = &plan.cells[0].team;
        let accuracy: Vec<f64> = team.iter().map(|a| a.accuracy).collect();
        assert_eq!(accuracy, [0.5, 0.9, 1.0, 0.5]);
        assert_eq!(team[0].beta, 2.0);
        assert_eq!(team[1].beta, SimAgent::default().beta);
        // A preset replaces the base agent; the entry's fields override the preset's.
        let expert = SimAgent::preset("expert").unwrap();
        assert_eq!(team[2].alpha, expert.alpha);
        assert_eq!(team[2].judge_accuracy, 0.5);
        let recency: Vec<f64> = team.iter().map(|a| a.recency).collect();
        assert_eq!(recency, [0.0, 0.0, 0.0, 0.5]);
        assert_eq!(plan.cells[1].team.len(), 6);
        assert_eq!(plan.x.name, "recency (agent 3)");
    }

    #[test]
    fn beta_everywhere_rounds_and_faults_axes_set_what_they_name() {
        let text = r#"
title = "t"
debates = 3
rounds = 2
agents = 3
[[arms]]
label = "n"
protocol = "free-mad-n"
[[arms]]
label = "c"
protocol = "free-mad-c"
options = { faults = { malicious_answer = "7" } }
[x]
param = "faults.malicious"
values = [0, 0.34]
[y]
param = "beta_everywhere"
values = [2]
"#;
        // free-mad-n's options have no target for the saboteurs.
        let e = parse(text).unwrap_err().to_string();
        assert!(e.starts_with("arms[0]: at faults.malicious = 0.34"), "{e}");
        let text = text.replace(
            "protocol = \"free-mad-n\"",
            "protocol = \"free-mad-n\"\noptions = { faults = { malicious_answer = \"7\" } }",
        );
        let plan = parse(&text).unwrap().plan(None).unwrap();
        let c = &plan.cells[1];
        assert!(c.groups.iter().all(|g| g.options.faults.malicious == 0.34));
        assert!(c
            .team
            .iter()
            .all(|a| a.beta == 2.0 && a.beta_anti == 2.0 && a.beta_conform == 2.0));
    }

    #[test]
    fn an_unknown_field_is_named_with_its_place() {
        let e = error(&EXAMPLE.replace("rounds = 2", "rounds = 2\nround = 3"));
        assert!(e.contains("spec.toml:"), "{e}");
        assert!(e.contains("unknown field `round`"), "{e}");
        let e = error(&EXAMPLE.replace(
            "rule = \"free-mad\"",
            "rule = \"free-mad\"\nprotocl = \"x\"",
        ));
        assert!(
            e.contains("arms[0]") && e.contains("unknown field `protocl`"),
            "{e}"
        );
        let e = error(&EXAMPLE.replace("alpha = 0.5", "alpah = 0.5"));
        assert!(e.starts_with("agent.alpah: unknown field `alpah`"), "{e}");
        let e = error(&EXAMPLE.replace("options = { faults", "options = { faultz"));
        assert!(e.contains("arms[2]") && e.contains("faultz"), "{e}");
        // `compare` written after [y] lands in the y table.
        let e = error(&format!(
            "{}compare = [\"cut\", \"free-mad\"]\n",
            EXAMPLE.replace("compare = [\"free-mad\", \"majority-last\"]\n", "")
        ));
        assert!(
            e.contains("y.compare: unknown field `compare`") && e.contains("top-level"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_field_and_a_bad_type_are_named() {
        let e = error(&EXAMPLE.replace("debates = 30\n", ""));
        assert!(e.contains("missing field `debates`"), "{e}");
        let e = error(&EXAMPLE.replace("values = [-3, 0, 4]", "values = \"many\""));
        assert!(e.contains("x.values"), "{e}");
        let e = error(&EXAMPLE.replace("accuracy = 0.55", "accuracy = \"high\""));
        assert!(e.starts_with("agent.accuracy: invalid type"), "{e}");
    }

    #[test]
    fn an_unknown_param_lists_the_known_ones() {
        let e = error(&EXAMPLE.replace("param = \"beta_conform\"", "param = \"conformity\""));
        assert!(
            e.starts_with("x.param: unknown parameter \"conformity\""),
            "{e}"
        );
        for known in [
            "beta_conform",
            "beta_anti",
            "accuracy",
            "agents",
            "rounds",
            "faults.cut_off",
        ] {
            assert!(e.contains(known), "{known} in {e}");
        }
        assert!(
            !e.contains("calibrated") && !e.contains("distractors"),
            "{e}"
        );
    }

    #[test]
    fn bad_values_are_refused_with_the_field() {
        let cases = [
            (
                "values = [0.3, 0.6]",
                "values = [0.3, 1.6]",
                "y.values[1]: 1.6 is not a probability",
            ),
            (
                "values = [0.3, 0.6]",
                "values = []",
                "y.values: needs at least one value",
            ),
            (
                "values = [-3, 0, 4]",
                "values = [1, 1]",
                "x.values: 1 appears twice",
            ),
            (
                "alpha = 0.5",
                "alpha = 1.5",
                "agent.alpha: 1.5 is not a probability",
            ),
            ("debates = 30", "debates = 0", "debates: must be at least 1"),
            (
                "alpha = 0.5",
                "alpha = 0.5\nbeta_conform = 800",
                "agent.beta_conform: 800 is not a finite number between -100 and 100",
            ),
            (
                "alpha = 0.5",
                "alpha = 0.5\nrecency = nan",
                "agent.recency: NaN is not a finite number between -100 and 100",
            ),
            (
                "values = [-3, 0, 4]",
                "values = [-3, 0, 800]",
                "x.values[2]: 800 is not between -100 and 100",
            ),
            (
                "agents = 5",
                "agents = 500",
                "agents: 500 is not a team size",
            ),
            (
                "rule = \"majority-last\"",
                "rule = \"most\"",
                "arms[1].rule: unknown decision rule \"most\"",
            ),
            (
                "protocol = \"free-mad-n\"",
                "protocol = \"free-mad-x\"",
                "arms[2].protocol: unknown protocol",
            ),
            (
                "label = \"cut\"",
                "label = \"free-mad\"",
                "arms[2].label: \"free-mad\" labels another arm",
            ),
            (
                "[\"free-mad\", \"majority-last\"]",
                "[\"free-mad\", \"nope\"]",
                "compare: no arm is labelled \"nope\"",
            ),
            (
                "[\"free-mad\", \"majority-last\"]",
                "[\"free-mad\"]",
                "compare: names two arm labels",
            ),
            (
                "param = \"accuracy\"",
                "param = \"beta_conform\"",
                "y.param: \"beta_conform\" is already the x axis",
            ),
            (
                "cut_off = 0.2",
                "cut_off = 2.0",
                "arms[2].options: faults.cut_off must be a fraction",
            ),
        ];
        for (from, to, expected) in cases {
            assert!(EXAMPLE.contains(from), "{from}");
            let e = error(&EXAMPLE.replacen(from, to, 1));
            assert!(e.starts_with(expected), "{to}: {e}");
        }
        let e = error(&EXAMPLE.replace("param = \"accuracy\"", "param = \"agents\"\nmember = 1"));
        assert!(
            e.starts_with("y.member: applies only to agent parameters"),
            "{e}"
        );
        let e = error(&EXAMPLE.replace("values = [-3, 0, 4]", "values = [0]\nmember = 7"));
        assert!(e.starts_with("x.member: agent 7 does not exist"), "{e}");
        let e = error(&EXAMPLE.replace(
            "param = \"accuracy\"\nvalues = [0.3, 0.6]",
            "param = \"agents\"\nvalues = [2.5]",
        ));
        assert!(e.starts_with("y.values[0]: 2.5 is not a team size"), "{e}");
    }

    #[test]
    fn one_arm_is_not_a_comparison() {
        let text = r#"
title = "t"
debates = 3
rounds = 2
agents = 3
[[arms]]
label = "n"
protocol = "free-mad-n"
[x]
param = "accuracy"
values = [0.5]
"#;
        assert!(error(text).starts_with("arms: a sweep compares arms"));
    }

    #[test]
    fn a_protocol_that_cannot_run_the_cell_is_refused_before_any_debate() {
        // A malicious fraction needs the wrong answer to argue for.
        let e = error(
            &EXAMPLE
                .replace("param = \"beta_conform\"", "param = \"faults.malicious\"")
                .replace("values = [-3, 0, 4]", "values = [0.4]"),
        );
        assert!(e.starts_with("arms[0]: at faults.malicious = 0.4"), "{e}");
        assert!(e.contains("malicious_answer"), "{e}");
    }

    /// The example with `line` added at the top, where TOML keeps it a top-level key.
    fn example_with(line: &str) -> String {
        format!("{line}\n{EXAMPLE}")
    }

    #[test]
    fn a_sweep_past_max_debates_is_refused_with_its_size_and_how_to_raise_it() {
        // The example: 6 cells × 3 arms.
        let e = error(&EXAMPLE.replace("debates = 30", "debates = 100000000000"));
        assert!(
            e.starts_with(
                "max_debates: 6 cells × 3 arms × 100000000000 debates per cell is 1800000000000 debates, more than max_debates = 10000000"
            ),
            "{e}"
        );
        assert!(
            e.contains("set max_debates = 1800000000000 at the top of the spec"),
            "{e}"
        );
        // A product past 64 bits is said to be so, never wrapped.
        let e = error(&EXAMPLE.replace("debates = 30", &format!("debates = {}", i64::MAX)));
        assert!(
            e.starts_with(&format!(
                "max_debates: 6 cells × 3 arms × {} debates per cell is more than {} debates",
                i64::MAX,
                u64::MAX
            )),
            "{e}"
        );
        // --debates is checked the same way, and named.
        let spec = parse(EXAMPLE).unwrap();
        let e = spec.plan(Some(1 << 40)).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "max_debates: 6 cells × 3 arms × 1099511627776 debates per cell (--debates)"
            ),
            "{e}"
        );
        // The bound is the spec's to raise: exactly at it runs, one under it does not.
        parse(&example_with("max_debates = 540")).unwrap();
        let e = error(&example_with("max_debates = 539"));
        assert!(
            e.contains("is 540 debates, more than max_debates = 539"),
            "{e}"
        );
    }

    #[test]
    fn debates_per_cell_past_distinct_model_seeds_are_refused_whatever_max_debates_says() {
        let one_cell = |debates: u64| {
            format!(
                "title = \"t\"\ndebates = {debates}\nrounds = 1\nagents = 3\nmax_debates = {}\n\
                 [[arms]]\nlabel = \"a\"\nprotocol = \"som\"\n[[arms]]\nlabel = \"b\"\nprotocol = \"free-mad-n\"\n\
                 [x]\nparam = \"accuracy\"\nvalues = [0.5]\n",
                i64::MAX
            )
        };
        parse(&one_cell(MAX_DEBATES_PER_CELL)).unwrap();
        let e = error(&one_cell(MAX_DEBATES_PER_CELL + 1));
        assert!(
            e.starts_with(
                "debates: 184467440737095517 is more than 184467440737095516 debates per cell"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_grid_past_max_cells_is_refused_with_its_size_and_how_to_raise_it() {
        let e = error(&example_with("max_cells = 5"));
        assert!(
            e.starts_with("max_cells: the grid is 3 × 2 = 6 cells, more than max_cells = 5"),
            "{e}"
        );
        assert!(
            e.contains("set max_cells = 6 at the top of the spec"),
            "{e}"
        );
        parse(&example_with("max_cells = 6")).unwrap();
        // The default: a 101 × 100 grid is refused.
        let values = |n: usize| {
            (0..n)
                .map(|i| format!("{}", i as f64 / n as f64))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let wide = EXAMPLE
            .replace(
                "values = [-3, 0, 4]",
                &format!("values = [{}]", values(101)),
            )
            .replace(
                "values = [0.3, 0.6]",
                &format!("values = [{}]", values(100)),
            )
            .replace("debates = 30", "debates = 1");
        let e = error(&wide);
        assert!(
            e.starts_with(
                "max_cells: the grid is 101 × 100 = 10100 cells, more than max_cells = 10000"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_toml_syntax_error_has_a_line() {
        let e = error("title = \"t\"\ndebates = = 3\n");
        assert!(e.starts_with("spec.toml:2:"), "{e}");
    }
}
