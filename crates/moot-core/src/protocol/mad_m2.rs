//! `mad-m2`: MAD-M² memory masking (Fig. 2, §3.1).
//!
//! Every debate round reads the previous round's responses ("memories") as one prompt, the
//! agent's own response among them, after the erroneous-looking ones are masked:
//! - `subjective-strict` / `subjective-loose`: a model judges each memory YES / NO / NOT SURE
//!   (the paper's self-evaluation prompt, in our words, ending in `<label>…</label>`). YES keeps,
//!   NO masks; NOT SURE and unreadable or missing judgements are masked under strict and kept
//!   under loose. By default one judgement per memory is shared by every agent, as the paper
//!   does for agents of one model; the judge of agent j's memory is agent j + 1 (mod N), so no
//!   agent judges its own memory and the judging load is spread. `judging = "per-agent"` makes
//!   every agent judge every memory it could read (for heterogeneous teams).
//! - `objective`: perplexity of the sampled tokens, exp(−mean logprob); only the candidate with
//!   the lowest perplexity is kept (ties: lower agent number), or with `keep = "below-median"`
//!   every candidate at or below the median. A memory without logprobs cannot be scored and is
//!   masked. Needs logprobs: a backend without them is refused before the debate starts.
//!
//! The candidates are the agent's own previous response and the peers' responses its topology
//! and the faults let through. If every memory is masked the agent answers as in round 0. Judgement
//! calls are recorded (slot `judge:<author>`, in the round of the memory) and counted in tokens;
//! a judgement of another agent's memory counts as one communication.
//!
//! The masking plan and its notes live in [`super::masking`]; this module builds the protocol.

use super::masking::{MaskPlan, Masking};
use super::options::ProtocolOptions;
use super::plan::{Protocol, ProtocolError};
use super::round_table::{PromptStyle, RoundTable, Variant};
use crate::topology::Topology;

pub(crate) const OPTIONS: &[&str] = &[
    "topology", "k", "hub", "groups", "ordering", "gold", "masking", "judging", "keep",
];

pub(crate) fn build(o: &ProtocolOptions) -> Result<Box<dyn Protocol>, ProtocolError> {
    let mut rt = RoundTable::new("mad-m2", PromptStyle::Conformity, "majority-last");
    rt.variant = Variant::MadM2(MaskPlan {
        masking: o.masking.unwrap_or(Masking::SubjectiveStrict),
        judging: o.judging.unwrap_or_default(),
        keep: o.keep.unwrap_or_default(),
    });
    if o.keep.is_some() && o.masking != Some(Masking::Objective) {
        return Err(ProtocolError::Invalid(
            "option `keep` applies to masking = \"objective\" only".into(),
        ));
    }
    if o.judging.is_some() && o.masking == Some(Masking::Objective) {
        return Err(ProtocolError::Invalid(
            "option `judging` applies to subjective masking only".into(),
        ));
    }
    rt.configured(o, Topology::AllToAll)
}
