//! Decision rules: pure functions from a trajectory to the final answer (see
//! docs/architecture.md, Decision rules).
//!
//! Because rules are pure, any stored debate can be re-decided under every rule at no token
//! cost. Each rule explains itself: per-answer scores and the list of score changes
//! (round, agent, action, delta) that produced them. Adding a rule is one module here and one
//! line in [`RULES`].

//!
//! This module is the registry ([`RULES`], [`build_rule`]) and the public re-exports; the rules
//! import what they share from `rule`, never from here.

mod free_mad;
mod majority;
mod max_consistency;
mod rule;
mod sid_et;
mod svr;
#[cfg(test)]
pub(crate) mod test_support;
mod verdict;

pub use rule::{
    Action, ChallengeEvidence, Decision, DecisionRule, Evidence, ScoreEvent, Tie, TieBreak,
};

pub use free_mad::{FreeMad, FreeMadWeights, WeightsError};
pub use majority::MajorityLast;
pub use max_consistency::MaxConsistency;
pub use sid_et::SidEt;
pub use svr::Svr;
pub use verdict::Verdict;

/// Settings shared by the rules; each rule reads what applies to it.
#[derive(Debug, Clone, Default)]
pub struct DecisionConfig {
    pub tie_break: TieBreak,
    pub weights: FreeMadWeights,
    /// freemad's "normalize by contributor count" (FREE-MAD rule only).
    pub normalize: bool,
    /// Code answers that failed a check count as no answer, for every rule (see
    /// [`crate::validation::drop_failing`]).
    pub require_passing: bool,
}

/// One registered rule: its name and how to build it from the shared settings.
pub struct RuleEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub build: fn(&DecisionConfig) -> Box<dyn DecisionRule>,
}

/// Every decision rule, by name.
pub const RULES: &[RuleEntry] = &[
    RuleEntry {
        name: majority::NAME,
        summary: "plurality of the last round; no-answer never wins",
        build: |c| Box::new(MajorityLast::new(c.tie_break)),
    },
    RuleEntry {
        name: free_mad::NAME,
        summary: "FREE-MAD score over the whole trajectory (Algorithm 1)",
        build: |c| Box::new(FreeMad::new(c.weights, c.tie_break, c.normalize)),
    },
    RuleEntry {
        name: max_consistency::NAME,
        summary: "MADC: the answer of the agent that agrees with the most others",
        build: |c| Box::new(MaxConsistency::new(c.tie_break)),
    },
    RuleEntry {
        name: svr::NAME,
        summary:
            "SVR-MAD: a receiver that survived every challenge (at least C); else the fallback vote",
        build: |c| Box::new(Svr::new(c.tie_break)),
    },
    RuleEntry {
        name: sid_et::NAME,
        summary:
            "SID-ET: the confident agent's answer when the debate was skipped; else majority-last",
        build: |c| Box::new(SidEt::new(c.tie_break)),
    },
    RuleEntry {
        name: verdict::NAME,
        summary: "the judge's, aggregator's or chairman's answer; else the debaters' last-round plurality",
        build: |c| Box::new(Verdict::new(c.tie_break)),
    },
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown decision rule {0:?} (expected one of {names})", names = rule_names().join(", "))]
pub struct UnknownRule(pub String);

pub fn rule_names() -> Vec<&'static str> {
    RULES.iter().map(|r| r.name).collect()
}

/// Builds the rule called `name`.
pub fn build_rule(
    name: &str,
    config: &DecisionConfig,
) -> Result<Box<dyn DecisionRule>, UnknownRule> {
    RULES
        .iter()
        .find(|r| r.name == name)
        .map(|r| (r.build)(config))
        .ok_or_else(|| UnknownRule(name.to_string()))
}
