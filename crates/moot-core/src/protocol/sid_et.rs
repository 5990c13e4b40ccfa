//! `sid-et`: SID's early termination (Chen et al., 2025), as SVR-MAD's evaluation runs it.
//!
//! After round 0, the agent with the highest minimum token log-likelihood is found; if that value
//! is above `threshold` the question counts as solved by that agent alone: every debate round is
//! recorded as skipped and the `sid-et` rule returns that agent's answer. Otherwise the agents
//! debate all-to-all (`som`) and the rule takes the last round's majority. The default threshold,
//! −1.0 (the least likely sampled token had probability above e⁻¹ ≈ 0.37), is a starting point:
//! the paper tunes it per model and dataset to a target skip rate. SID's attention-based message
//! compression is not implemented (it needs model internals no backend exposes). Needs logprobs.

use super::options::ProtocolOptions;
use super::plan::{Protocol, ProtocolError};
use super::round_table::{PromptStyle, RoundTable, Variant};
use crate::topology::Topology;

pub(crate) const OPTIONS: &[&str] = &[
    "topology",
    "k",
    "hub",
    "groups",
    "ordering",
    "gold",
    "threshold",
];

pub const DEFAULT_THRESHOLD: f64 = -1.0;

pub(crate) fn build(o: &ProtocolOptions) -> Result<Box<dyn Protocol>, ProtocolError> {
    let mut rt = RoundTable::new("sid-et", PromptStyle::Conformity, "sid-et");
    let threshold = o.threshold.unwrap_or(DEFAULT_THRESHOLD);
    if !threshold.is_finite() || threshold > 0.0 {
        return Err(ProtocolError::Invalid(format!(
            "threshold is a log-likelihood, a number <= 0 (got {threshold})"
        )));
    }
    rt.variant = Variant::SidEt { threshold };
    rt.configured(o, Topology::AllToAll)
}
