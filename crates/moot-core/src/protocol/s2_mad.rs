//! `s2-mad`: Selective Sparse MAD (Zeng et al., 2025), with answer equivalence as the similarity
//! test (as SVR-MAD's evaluation does for closed-form answers).
//!
//! `som` on the configured topology, except that no message passes between two agents holding
//! the same answer in the previous round, and an agent all of whose responding peers hold its
//! answer skips the round: it is not asked, keeps its answer, and the transcript records the skip.
//! An agent without a readable answer reads every peer.

use super::options::ProtocolOptions;
use super::plan::{Protocol, ProtocolError};
use super::round_table::{PromptStyle, RoundTable, Variant};
use crate::topology::Topology;

pub(crate) fn build(o: &ProtocolOptions) -> Result<Box<dyn Protocol>, ProtocolError> {
    let mut rt = RoundTable::new("s2-mad", PromptStyle::Conformity, "majority-last");
    rt.variant = Variant::S2Mad;
    rt.configured(o, Topology::AllToAll)
}
