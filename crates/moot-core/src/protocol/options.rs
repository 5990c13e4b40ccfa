//! Protocol options: what a configuration may set, and which protocol reads which option.
//!
//! Every option is optional; a protocol fills in its own defaults. Setting an option a protocol
//! does not read is an error naming the option and the protocols that read it, so a typo'd or
//! misplaced setting never silently does nothing.
//!
//! [`ProtocolOptions`] is the configuration's flat view of every key (its serde shape is the
//! configuration format). The value types of protocol-specific keys live with the protocol they
//! belong to (masking, speaking order, SVR-MAD's challenge module) and each protocol's
//! constructor reads the keys it owns.

use serde::{Deserialize, Serialize};

use super::challenge::Prior;
use super::masking::{Judging, Masking, ObjectiveKeep};
use super::speaking_order::Ordering;
use crate::faults::Faults;
use crate::topology::Topology;

/// The name of a topology in configuration (its parameters are separate options).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyName {
    AllToAll,
    Ring,
    KReviewers,
    Star,
    Groups,
    /// freemad's `ring`: each agent reads only the next one.
    NextOnRing,
    /// freemad's `k_reviewers`, drawn as freemad draws it (from the debate seed and the agent
    /// ids), with `k`.
    FreemadKReviewers,
}

/// Everything a configuration can say about a protocol.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyName>,
    /// Peers per agent for `k-reviewers` and `freemad-k-reviewers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
    /// The hub of `star`, numbered from 1 like agents in prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub: Option<usize>,
    /// Number of groups for `groups` and `group-debate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub masking: Option<Masking>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judging: Option<Judging>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<ObjectiveKeep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordering: Option<Ordering>,
    /// The gold answer, for analysis-only orderings.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::faults::answer_text"
    )]
    pub gold: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior: Option<Prior>,
    /// SVR-MAD: challengers per receiver and iteration (S).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challengers: Option<usize>,
    /// SVR-MAD: challenges a receiver must survive, all of them, to be accepted (C).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_after: Option<usize>,
    /// SID-ET: skip the debate when the best agent's min token log-likelihood is above this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// Protocols with a deciding agent, under hidden evidence: the verified quotation of the
    /// passage one debater's reply may show it, in characters (see [`crate::evidence`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_limit: Option<usize>,
    /// `judge`: after every round before the last, the judge may end the debate once it is
    /// confident (Liang et al.'s adaptive break).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_break: Option<bool>,
    /// `moa`: the proposers of each layer, by agent number (from 1, in the configuration's
    /// order, the aggregator aside), the first layer first; the number of layers fixes the
    /// rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<Vec<Vec<usize>>>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub faults: Faults,
}

fn is_default(f: &Faults) -> bool {
    f == &Faults::default()
}

impl ProtocolOptions {
    /// The options that are set, by configuration name (`faults` is read by every protocol
    /// and not listed).
    pub fn set_names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        let mut add = |set: bool, name: &'static str| {
            if set {
                v.push(name)
            }
        };
        add(self.topology.is_some(), "topology");
        add(self.k.is_some(), "k");
        add(self.hub.is_some(), "hub");
        add(self.groups.is_some(), "groups");
        add(self.masking.is_some(), "masking");
        add(self.judging.is_some(), "judging");
        add(self.keep.is_some(), "keep");
        add(self.ordering.is_some(), "ordering");
        add(self.gold.is_some(), "gold");
        add(self.prior.is_some(), "prior");
        add(self.challengers.is_some(), "challengers");
        add(self.accept_after.is_some(), "accept_after");
        add(self.threshold.is_some(), "threshold");
        add(self.quote_limit.is_some(), "quote_limit");
        add(self.adaptive_break.is_some(), "adaptive_break");
        add(self.layers.is_some(), "layers");
        v
    }

    /// These options with every option `names` does not list cleared (faults are kept): what a
    /// protocol reading `names` should be built with when one configuration serves several.
    pub fn restricted_to(&self, names: &[&str]) -> ProtocolOptions {
        let keep = |name: &str| names.contains(&name);
        ProtocolOptions {
            topology: self.topology.filter(|_| keep("topology")),
            k: self.k.filter(|_| keep("k")),
            hub: self.hub.filter(|_| keep("hub")),
            groups: self.groups.filter(|_| keep("groups")),
            masking: self.masking.filter(|_| keep("masking")),
            judging: self.judging.filter(|_| keep("judging")),
            keep: self.keep.filter(|_| keep("keep")),
            ordering: self.ordering.filter(|_| keep("ordering")),
            gold: self.gold.clone().filter(|_| keep("gold")),
            prior: self.prior.filter(|_| keep("prior")),
            challengers: self.challengers.filter(|_| keep("challengers")),
            accept_after: self.accept_after.filter(|_| keep("accept_after")),
            threshold: self.threshold.filter(|_| keep("threshold")),
            quote_limit: self.quote_limit.filter(|_| keep("quote_limit")),
            adaptive_break: self.adaptive_break.filter(|_| keep("adaptive_break")),
            layers: self.layers.clone().filter(|_| keep("layers")),
            faults: self.faults.clone(),
        }
    }

    /// The topology the options describe, or `default` when none is named.
    pub fn topology_or(&self, default: Topology) -> Topology {
        match self.topology {
            None => default,
            Some(TopologyName::AllToAll) => Topology::AllToAll,
            Some(TopologyName::Ring) => Topology::Ring,
            Some(TopologyName::KReviewers) => Topology::KReviewers {
                k: self.k.unwrap_or(2),
            },
            Some(TopologyName::Star) => Topology::Star {
                hub: self.hub.unwrap_or(1).saturating_sub(1),
            },
            Some(TopologyName::Groups) => Topology::Groups {
                groups: self.groups.unwrap_or(2),
            },
            Some(TopologyName::NextOnRing) => Topology::NextOnRing,
            Some(TopologyName::FreemadKReviewers) => Topology::FreemadKReviewers {
                k: self.k.unwrap_or(2),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restriction_keeps_only_what_is_read_and_the_faults() {
        let o = ProtocolOptions {
            masking: Some(Masking::Objective),
            ordering: Some(Ordering::Random),
            challengers: Some(3),
            faults: Faults {
                drop: 0.1,
                ..Faults::default()
            },
            ..ProtocolOptions::default()
        };
        let r = o.restricted_to(&["ordering"]);
        assert_eq!(r.set_names(), vec!["ordering"]);
        assert_eq!(r.faults.drop, 0.1);
        assert!(o.restricted_to(&[]).set_names().is_empty());
        assert_eq!(o.restricted_to(&["masking", "ordering", "challengers"]), o);
    }
}
