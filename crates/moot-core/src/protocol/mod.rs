//! Debate protocols as pure state machines (see docs/architecture.md, Protocols).
//!
//! Given the spec and the transcript so far, a protocol says which calls the next round needs
//! ([`Step::Round`]) or that the debate is over ([`Step::Done`]). The engine executes the calls and
//! records outcomes; asking again after a crash plans only the calls without an outcome, so resume
//! repeats no completed call. Adding a protocol is one module here and one line in [`PROTOCOLS`].
//!
//! Imports run one way, from the registry here down to the shared parts:
//! - this module: the registry ([`PROTOCOLS`], [`build_protocol`]) and the public re-exports;
//! - the protocols: `independent`, `svr_mad`, and the round-table ones (`madc`, `mad_m2`,
//!   `s2_mad`, `sid_et`, `group_debate`; `som`, `free-mad-*` and `sparse` are built here);
//!   `assigned` (with `consultancy`) and `council`, whose debaters are followed by a deciding
//!   agent;
//! - `judged`: a debate among debaters, then the deciding agent's call (`judge`, `moa`,
//!   `assigned`, `consultancy`, `council`; `judge` and `moa` are built here from a round table
//!   and one of its finales);
//! - `round_table`: the state machine most protocols share;
//! - `opening` (system message, round-0 call), `plan` (the [`Protocol`] trait, [`PlannedCall`]);
//! - `notes` ([`CallNotes`]), `options` ([`ProtocolOptions`]);
//! - the protocol-specific parts both of those name: `speaking_order` (MADC's and every
//!   ordering), `masking` (MAD-M²), `challenge` (SVR-MAD).
//!
//! No module imports this one or a module above it.

mod assigned;
mod challenge;
mod council;
mod group_debate;
mod independent;
mod judged;
mod mad_m2;
mod madc;
mod masking;
mod notes;
mod opening;
mod options;
mod plan;
mod round_table;
mod s2_mad;
mod sid_et;
mod speaking_order;
mod svr_mad;
#[cfg(test)]
pub(crate) mod test_support;

use crate::debate::AgentRole;
use crate::fork::{Forks, InterventionKind};
use crate::topology::Topology;

pub use assigned::Assigned;
pub use challenge::{ChallengeNote, Prior};
pub use council::{anonymous_order, read_ranking, Council};
pub use independent::Independent;
pub use judged::Judged;
pub use masking::{parse_label, JudgeLabel, MaskNote, MaskPlan};
pub use masking::{Judging, Masking, ObjectiveKeep};
pub use notes::{CallNotes, FaultNote, PromptCut, ReaskNote};
pub use options::{ProtocolOptions, TopologyName};
pub use plan::{PlannedCall, Protocol, ProtocolError, Step};
pub use round_table::{Context, PromptStyle, RoundTable};
pub use speaking_order::{speaking_order, OrderNote, Ordering};
pub use svr_mad::{parse_confidence, SvrMad};

pub struct ProtocolEntry {
    pub name: &'static str,
    pub summary: &'static str,
    /// Options this protocol reads (`faults` applies to every protocol).
    pub options: &'static [&'static str],
    pub build: fn(&ProtocolOptions) -> Result<Box<dyn Protocol>, ProtocolError>,
    /// The interventions a fork of one of its debates may make, and at which rounds
    /// (`moot fork`; see [`check_fork`] for the rules every protocol shares).
    pub forks: Forks,
}

const ROUND_TABLE_OPTIONS: &[&str] = &["topology", "k", "hub", "groups", "ordering", "gold"];

/// `judge`'s options: a round table's, the quote limit of hidden evidence, and the adaptive
/// break.
const JUDGE_OPTIONS: &[&str] = &[
    "topology",
    "k",
    "hub",
    "groups",
    "ordering",
    "gold",
    "quote_limit",
    "adaptive_break",
];

/// The options of the other protocols with a deciding agent.
const DECIDED_OPTIONS: &[&str] = &["quote_limit"];

/// `moa`'s options: the quote limit, and which agents propose in each layer.
const MOA_OPTIONS: &[&str] = &["quote_limit", "layers"];

/// `moa`'s configured proposers per layer, as agent indices.
fn layers(o: &ProtocolOptions) -> Result<Option<Vec<Vec<usize>>>, ProtocolError> {
    let Some(layers) = &o.layers else {
        return Ok(None);
    };
    if layers.is_empty() {
        return Err(ProtocolError::Invalid(
            "layers names no layer (write one list of agent numbers per layer)".into(),
        ));
    }
    layers
        .iter()
        .map(|layer| {
            layer
                .iter()
                .map(|&n| {
                    n.checked_sub(1).ok_or_else(|| {
                        ProtocolError::Invalid("layers: agents are numbered from 1".into())
                    })
                })
                .collect()
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// The configured quote limit of hidden evidence, or its default.
fn quote_limit(o: &ProtocolOptions) -> usize {
    o.quote_limit
        .unwrap_or(crate::evidence::DEFAULT_QUOTE_LIMIT)
}

/// Why SVR-MAD is forked at round 0 only.
const SVR_MAD_FORKS: &str = "svr-mad's rounds after round 0 are challenge steps whose targets and budget are chosen from round 0's answers: a later step cannot be changed on its own; fork at round 0";
/// Why SID-ET refuses `say` (its null and model forks are fine: the new samples have logprobs).
const SID_ET_FORKS: &str = "sid-et's early stop reads each agent's token log-likelihoods, which injected text does not have";

/// Every protocol, by name.
pub const PROTOCOLS: &[ProtocolEntry] = &[
    ProtocolEntry {
        name: "cot",
        summary: "one agent, one chain-of-thought call",
        options: &[],
        build: |o| Ok(Box::new(Independent::single(o))),
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "cot-sc",
        summary: "self-consistency: N independent samples, majority vote",
        options: &[],
        build: |o| Ok(Box::new(Independent::self_consistency(o))),
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "som",
        summary: "Society of Mind (Du et al.): rounds of reading the others' solutions",
        options: ROUND_TABLE_OPTIONS,
        build: |o| {
            RoundTable::new("som", PromptStyle::Conformity, "majority-last").configured(o, Topology::AllToAll)
        },
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "free-mad-n",
        summary: "FREE-MAD with the anti-conformity critique prompt, FREE-MAD score decision",
        options: ROUND_TABLE_OPTIONS,
        build: |o| {
            RoundTable::new("free-mad-n", PromptStyle::AntiConformity, "free-mad").configured(o, Topology::AllToAll)
        },
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "free-mad-c",
        summary: "FREE-MAD with the conformity prompt, FREE-MAD score decision",
        options: ROUND_TABLE_OPTIONS,
        build: |o| {
            RoundTable::new("free-mad-c", PromptStyle::Conformity, "free-mad").configured(o, Topology::AllToAll)
        },
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "free-mad-neutral",
        summary: "FREE-MAD with a neutral prompt (peers shown, no advice to agree or to critique), FREE-MAD score decision",
        options: ROUND_TABLE_OPTIONS,
        build: |o| {
            RoundTable::new("free-mad-neutral", PromptStyle::Neutral, "free-mad").configured(o, Topology::AllToAll)
        },
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "mad-m2",
        summary: "MAD-M²: previous-round memories judged and masked before every debate round",
        options: mad_m2::OPTIONS,
        build: mad_m2::build,
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "madc",
        summary: "MADC: peers' responses in path-consistency order, most agreed-with last",
        options: ROUND_TABLE_OPTIONS,
        build: madc::build,
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "svr-mad",
        summary: "SVR-MAD: pairwise challenges to the likeliest-correct agent, survival-rate acceptance",
        options: svr_mad::OPTIONS,
        build: svr_mad::build,
        forks: Forks::RoundZeroOnly(SVR_MAD_FORKS),
    },
    ProtocolEntry {
        name: "sparse",
        summary: "Sparse MAD (Li et al.): som on a sparse topology (ring by default)",
        options: ROUND_TABLE_OPTIONS,
        build: |o| {
            RoundTable::new("sparse", PromptStyle::Conformity, "majority-last").configured(o, Topology::Ring)
        },
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "group-debate",
        summary: "GroupDebate: full solutions inside a group, only final answers across groups",
        options: group_debate::OPTIONS,
        build: group_debate::build,
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "s2-mad",
        summary: "S2-MAD: no message between agents holding the same answer; agreed agents skip",
        options: ROUND_TABLE_OPTIONS,
        build: s2_mad::build,
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "sid-et",
        summary: "SID-ET: skip the debate when the best agent's min token log-likelihood clears a threshold",
        options: sid_et::OPTIONS,
        build: sid_et::build,
        forks: Forks::NoSay(SID_ET_FORKS),
    },
    ProtocolEntry {
        name: "judge",
        summary: "MAD (Liang et al.): debaters argue tit for tat over rounds, a judge reads the debate and answers",
        options: JUDGE_OPTIONS,
        build: |o| {
            let table = RoundTable::new("judge", PromptStyle::TitForTat, "verdict");
            judged_table("judge", AgentRole::Judge, table, Box::new(judged::TranscriptJudge), o)
        },
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "assigned",
        summary: "assigned-position debate (Khan et al.): each debater defends an assigned answer, a judge decides",
        options: DECIDED_OPTIONS,
        build: |o| judged_positions(o, false),
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "consultancy",
        summary: "consultancy (Khan et al.): one consultant argues an assigned answer, a judge decides",
        options: DECIDED_OPTIONS,
        build: |o| judged_positions(o, true),
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "moa",
        summary: "Mixture-of-Agents (Wang et al.): layers of proposers, each reading the previous layer, then an aggregator",
        options: MOA_OPTIONS,
        build: |o| {
            let mut table = RoundTable::new("moa", PromptStyle::Neutral, "verdict");
            table.variant = round_table::Variant::Layers;
            table.layers = layers(o)?;
            judged_table("moa", AgentRole::Aggregator, table, Box::new(judged::Aggregator), o)
        },
        forks: Forks::Any,
    },
    ProtocolEntry {
        name: "council",
        summary: "council: answers, anonymous peer ranking, then a chairman writes the final answer",
        options: DECIDED_OPTIONS,
        build: |o| {
            let council = Council {
                faults: o.faults.clone(),
            };
            Ok(Box::new(Judged {
                name: "council",
                role: AgentRole::Chairman,
                debate: Box::new(council.clone()),
                finale: Box::new(council),
                min_debaters: 2,
                quote_limit: quote_limit(o),
                adaptive_break: false,
            }))
        },
        forks: Forks::Any,
    },
];

/// `judge`'s and `moa`'s debate: a round table among the debaters, then `finale`.
fn judged_table(
    name: &'static str,
    role: AgentRole,
    table: RoundTable,
    finale: Box<dyn judged::Finale>,
    o: &ProtocolOptions,
) -> Result<Box<dyn Protocol>, ProtocolError> {
    Ok(Box::new(Judged {
        name,
        role,
        debate: table.configured(o, Topology::AllToAll)?,
        finale,
        min_debaters: 1,
        quote_limit: quote_limit(o),
        adaptive_break: o.adaptive_break.unwrap_or(false),
    }))
}

/// `assigned` and `consultancy`: assigned positions, then the judge.
fn judged_positions(
    o: &ProtocolOptions,
    consultancy: bool,
) -> Result<Box<dyn Protocol>, ProtocolError> {
    let positions = Assigned {
        consultancy,
        faults: o.faults.clone(),
    };
    Ok(Box::new(Judged {
        name: if consultancy {
            "consultancy"
        } else {
            "assigned"
        },
        role: AgentRole::Judge,
        debate: Box::new(positions.clone()),
        finale: Box::new(positions),
        min_debaters: if consultancy { 1 } else { 2 },
        quote_limit: quote_limit(o),
        adaptive_break: false,
    }))
}

/// Why a fork cannot make an intervention at a round (said to the user as it is).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{protocol} cannot be forked with {} at round {round}: {reason}", kind.as_str())]
pub struct ForkRefused {
    pub protocol: String,
    pub kind: InterventionKind,
    pub round: usize,
    pub reason: String,
}

/// Whether a debate of `protocol` (as built, with its options) with `rounds` debate rounds may
/// be forked with an intervention of `kind` at `round`. Beside the protocol's own declaration
/// ([`ProtocolEntry::forks`]), two rules hold for every protocol: the round must be one of the
/// debate's (0 to `rounds`), and `say` is refused where the protocol reads token
/// log-probabilities ([`Protocol::needs_logprobs`]: MAD-M²'s objective masking, SID-ET,
/// SVR-MAD's logprob priors), since injected text has none.
pub fn check_fork(
    protocol: &dyn Protocol,
    kind: InterventionKind,
    round: usize,
    rounds: usize,
) -> Result<(), ForkRefused> {
    let refused = |reason: String| ForkRefused {
        protocol: protocol.name().to_string(),
        kind,
        round,
        reason,
    };
    // The protocol's own reason first: it says more than the range (SVR-MAD's steps lie past
    // its one grid round).
    let entry = PROTOCOLS
        .iter()
        .find(|p| p.name == protocol.name())
        .ok_or_else(|| refused("the protocol is not in this moot's registry".into()))?;
    entry
        .forks
        .allows(kind, round)
        .map_err(|why| refused(why.to_string()))?;
    if round > rounds {
        return Err(refused(format!(
            "the debate's rounds are 0 to {rounds} (round 0 is the independent answers)"
        )));
    }
    if kind == InterventionKind::Say {
        if let Some(why) = protocol.needs_logprobs() {
            return Err(refused(format!(
                "{why}, and injected text has no token log-probabilities"
            )));
        }
    }
    Ok(())
}

pub fn protocol_names() -> Vec<&'static str> {
    PROTOCOLS.iter().map(|p| p.name).collect()
}

/// Builds the protocol called `name` with `options`, refusing options it does not read.
pub fn build_protocol(
    name: &str,
    options: &ProtocolOptions,
) -> Result<Box<dyn Protocol>, ProtocolError> {
    let entry =
        PROTOCOLS
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| ProtocolError::Unknown {
                name: name.to_string(),
                expected: protocol_names().join(", "),
            })?;
    for option in options.set_names() {
        if !entry.options.contains(&option) {
            let readers: Vec<&str> = PROTOCOLS
                .iter()
                .filter(|p| p.options.contains(&option))
                .map(|p| p.name)
                .collect();
            let applies = if readers.is_empty() {
                "no protocol reads it".to_string()
            } else {
                format!("it applies to {}", readers.join(", "))
            };
            return Err(ProtocolError::NotApplicable {
                option,
                protocol: entry.name,
                applies,
            });
        }
    }
    options.faults.validate()?;
    if options.hub == Some(0) {
        return Err(ProtocolError::Invalid(
            "hub is an agent number, counted from 1".into(),
        ));
    }
    (entry.build)(options)
}
