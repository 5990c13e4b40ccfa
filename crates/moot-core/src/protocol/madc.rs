//! `madc`: MADC (path-consistency ordering, Algorithm 1) — `som` whose peers speak in
//! path-consistency order by default, with the order recorded every round. The orders themselves
//! live in [`super::speaking_order`], since every round-table protocol may use them.

use super::options::ProtocolOptions;
use super::plan::{Protocol, ProtocolError};
use super::round_table::{PromptStyle, RoundTable, Variant};
use super::speaking_order::Ordering;
use crate::topology::Topology;

pub(crate) fn build(o: &ProtocolOptions) -> Result<Box<dyn Protocol>, ProtocolError> {
    let mut rt = RoundTable::new("madc", PromptStyle::Conformity, "majority-last");
    rt.ordering = Ordering::ConsistencyLast;
    rt.variant = Variant::Madc;
    rt.configured(o, Topology::AllToAll)
}
