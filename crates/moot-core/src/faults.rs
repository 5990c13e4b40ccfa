//! Fault and attack injection, for every protocol (see docs/architecture.md, Protocols; FREE-MAD
//! appendix A).
//!
//! - `cut_off`: a fraction of agents, chosen by seed, receive no peer messages in debate rounds
//!   but still answer, and their messages still reach the others (FREE-MAD Algorithm 2).
//! - `malicious`: a fraction of agents, chosen by seed (a different draw), are instructed to argue
//!   for a fixed wrong answer. They take part in the debate like everyone else.
//! - `drop`: each peer message (sender, receiver, round) is lost with probability `drop`.
//! - `delay`: each peer message arrives one round late with probability `delay`: the receiver
//!   reads the sender's response from two rounds back instead of the last one (nothing, in the
//!   first debate round, where no older response exists).
//!
//! Counts round to the nearest agent (half up), so 50 % of 3 agents is 2. Every draw comes from the
//! debate seed mixed with what it is about, so a debate's faults are the same on resume and the
//! transcript records each one where it happened.

use serde::{Deserialize, Serialize};

use crate::topology::{mix, unit};

/// The configured faults; all off by default.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    /// Fraction of agents cut off from peer messages.
    #[serde(default)]
    pub cut_off: f64,
    /// Fraction of agents arguing for `malicious_answer`.
    #[serde(default)]
    pub malicious: f64,
    /// The wrong answer malicious agents argue for.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "answer_text"
    )]
    pub malicious_answer: Option<String>,
    /// Probability that one peer message is lost.
    #[serde(default)]
    pub drop: f64,
    /// Probability that one peer message arrives a round late.
    #[serde(default)]
    pub delay: f64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultsError {
    #[error("faults.{field} must be a fraction between 0 and 1 (got {value})")]
    NotAFraction { field: &'static str, value: f64 },
    #[error("faults.malicious is set but faults.malicious_answer (the wrong answer to argue for) is not")]
    NoMaliciousAnswer,
}

/// What became of one peer message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "fate")]
pub enum Delivery {
    /// The receiver reads the sender's response of `from_round`.
    Delivered { from_round: usize },
    /// Delivered one round late: the response of `from_round` (two rounds back).
    Delayed { from_round: usize },
    /// The receiver is cut off from all peer messages.
    CutOff,
    /// The message was lost.
    Dropped,
}

const TAG_CUT_OFF: u64 = 1;
const TAG_MALICIOUS: u64 = 2;
const TAG_DROP: u64 = 3;
const TAG_DELAY: u64 = 4;

impl Faults {
    pub fn validate(&self) -> Result<(), FaultsError> {
        for (field, value) in [
            ("cut_off", self.cut_off),
            ("malicious", self.malicious),
            ("drop", self.drop),
            ("delay", self.delay),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(FaultsError::NotAFraction { field, value });
            }
        }
        if self.malicious > 0.0 && self.malicious_answer.is_none() {
            return Err(FaultsError::NoMaliciousAnswer);
        }
        Ok(())
    }

    pub fn any(&self) -> bool {
        self.cut_off > 0.0 || self.malicious > 0.0 || self.drop > 0.0 || self.delay > 0.0
    }

    /// The agents cut off from peer messages.
    pub fn cut_off_agents(&self, agents: usize, seed: u64) -> Vec<usize> {
        chosen(self.cut_off, agents, seed, TAG_CUT_OFF)
    }

    /// The malicious agents.
    pub fn malicious_agents(&self, agents: usize, seed: u64) -> Vec<usize> {
        chosen(self.malicious, agents, seed, TAG_MALICIOUS)
    }

    /// The answer `agent` is instructed to argue for, if it is malicious.
    pub fn malicious_target(&self, agent: usize, agents: usize, seed: u64) -> Option<&str> {
        self.malicious_answer
            .as_deref()
            .filter(|_| self.malicious_agents(agents, seed).contains(&agent))
    }

    /// The fate of the message from `sender` to `receiver` placed in a prompt of `round` (≥ 1),
    /// which would normally carry the sender's response of `round - 1`.
    pub fn deliver(
        &self,
        seed: u64,
        agents: usize,
        round: usize,
        sender: usize,
        receiver: usize,
    ) -> Delivery {
        if self.cut_off_agents(agents, seed).contains(&receiver) {
            return Delivery::CutOff;
        }
        let index = ((round as u64) << 40) ^ ((sender as u64) << 20) ^ receiver as u64;
        if self.drop > 0.0 && unit(seed, TAG_DROP, index) < self.drop {
            return Delivery::Dropped;
        }
        if self.delay > 0.0 && unit(seed, TAG_DELAY, index) < self.delay {
            return match round.checked_sub(2) {
                Some(from_round) => Delivery::Delayed { from_round },
                None => Delivery::Dropped,
            };
        }
        Delivery::Delivered {
            from_round: round.saturating_sub(1),
        }
    }
}

/// An answer written in configuration, as text or as a bare number (`408` or `"408"`).
pub fn answer_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Text {
        S(String),
        I(i64),
        F(f64),
        B(bool),
    }
    Ok(Option::<Text>::deserialize(d)?.map(|t| match t {
        Text::S(s) => s,
        Text::I(i) => i.to_string(),
        Text::F(f) => f.to_string(),
        Text::B(b) => b.to_string(),
    }))
}

/// `round(fraction · agents)` agents drawn without replacement from the seed, in agent order.
fn chosen(fraction: f64, agents: usize, seed: u64, tag: u64) -> Vec<usize> {
    if fraction <= 0.0 || agents == 0 {
        return vec![];
    }
    let count = ((fraction * agents as f64) + 0.5).floor() as usize;
    let mut keyed: Vec<(u64, usize)> = (0..agents).map(|a| (mix(seed, tag, a as u64), a)).collect();
    keyed.sort_unstable();
    let mut picked: Vec<usize> = keyed
        .into_iter()
        .take(count.min(agents))
        .map(|(_, a)| a)
        .collect();
    picked.sort_unstable();
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_round_half_up_and_are_seeded() {
        let f = Faults {
            cut_off: 0.5,
            ..Faults::default()
        };
        assert_eq!(f.cut_off_agents(3, 1).len(), 2);
        assert_eq!(f.cut_off_agents(4, 1).len(), 2);
        assert_eq!(f.cut_off_agents(4, 1), f.cut_off_agents(4, 1));
        let differ = (0..20).any(|s| f.cut_off_agents(6, s) != f.cut_off_agents(6, 0));
        assert!(differ, "the seed chooses the agents");
        assert!(Faults::default().cut_off_agents(5, 1).is_empty());
    }

    #[test]
    fn cut_off_receivers_get_nothing_but_still_send() {
        let f = Faults {
            cut_off: 0.34,
            ..Faults::default()
        };
        let cut = f.cut_off_agents(3, 9);
        assert_eq!(cut.len(), 1);
        let c = cut[0];
        for other in (0..3).filter(|&o| o != c) {
            assert_eq!(f.deliver(9, 3, 1, other, c), Delivery::CutOff);
            assert_eq!(
                f.deliver(9, 3, 1, c, other),
                Delivery::Delivered { from_round: 0 }
            );
        }
    }

    #[test]
    fn drop_rate_is_about_q_and_delay_reads_older_rounds() {
        let f = Faults {
            drop: 0.3,
            ..Faults::default()
        };
        let lost = (0..2000)
            .filter(|&i| f.deliver(5, 4, 1 + i / 12, i % 4, (i / 4) % 3) == Delivery::Dropped)
            .count();
        assert!((450..750).contains(&lost), "{lost} of 2000");
        let d = Faults {
            delay: 1.0,
            ..Faults::default()
        };
        assert_eq!(d.deliver(1, 3, 1, 0, 1), Delivery::Dropped);
        assert_eq!(
            d.deliver(1, 3, 3, 0, 1),
            Delivery::Delayed { from_round: 1 }
        );
    }

    #[test]
    fn validation_names_the_field() {
        let f = Faults {
            drop: 1.5,
            ..Faults::default()
        };
        assert!(f
            .validate()
            .unwrap_err()
            .to_string()
            .contains("faults.drop"));
        let m = Faults {
            malicious: 0.3,
            ..Faults::default()
        };
        assert!(m
            .validate()
            .unwrap_err()
            .to_string()
            .contains("malicious_answer"));
        let m = Faults {
            malicious: 0.34,
            malicious_answer: Some("7".into()),
            ..Faults::default()
        };
        let bad = m.malicious_agents(3, 2);
        assert_eq!(bad.len(), 1);
        assert_eq!(m.malicious_target(bad[0], 3, 2), Some("7"));
    }
}
