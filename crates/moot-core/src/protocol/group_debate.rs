//! `group-debate`: GroupDebate (Liu et al., 2025) in one state machine.
//!
//! Agents are split at random (seeded, once per debate) into `groups` groups of near-equal size
//! (default 2, as SVR-MAD's 3-3 setting for six agents). In every debate round an agent reads the
//! full responses of its own group and only the final answers of the other groups' agents.
//! GroupDebate proper alternates several in-group rounds with a summary exchange; here every
//! round carries both, which keeps the full-context/answers-only split the method is about while
//! fitting the R-round shape every protocol shares.

use super::options::ProtocolOptions;
use super::plan::{Protocol, ProtocolError};
use super::round_table::{PromptStyle, RoundTable, Variant};
use crate::topology::Topology;

pub(crate) const OPTIONS: &[&str] = &["groups", "ordering", "gold"];

pub(crate) fn build(o: &ProtocolOptions) -> Result<Box<dyn Protocol>, ProtocolError> {
    let mut rt = RoundTable::new("group-debate", PromptStyle::Conformity, "majority-last");
    rt.variant = Variant::GroupDebate {
        groups: o.groups.unwrap_or(2),
    };
    rt.configured(o, Topology::AllToAll)
}
