//! Speaking orders: the order in which peers' responses appear in a debate prompt, shared by
//! every round-table protocol (`ordering` option) and the default of `madc` (path consistency,
//! MADC Algorithm 1). Owns the [`Ordering`] policy, its computation and the [`OrderNote`] a call
//! records; depends on the transcript only, so the protocols and the call notes can both use it.
//!
//! Agents answer simultaneously, so "speaking order" is the order in which peers' responses
//! appear in each prompt: the earliest speaker first, the last speaker right before the
//! instructions. MADC finds later positions carry more influence and puts the most consistent
//! path last. The consistency of agent i in round r is the number of other agents whose answer
//! of round r − 1 equals i's (Eq. 2 with the empirical agreement); agents are sorted by it in
//! ascending order, ties in agent order, so the most consistent agent (the argmax, first in agent
//! order among equals — Algorithm 1's A*) speaks last. An agent without a readable answer has
//! consistency 0. The order is recomputed every round and recorded with each call.
//!
//! `random` draws a seeded permutation per round (the same for every reader of that round, as
//! MADC's "roles are randomly allocated before each debate"); `truth-first` / `truth-last` put
//! the agents holding the gold answer first / last and exist for analysis only: without a gold
//! answer they are refused.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::answer::Answer;
use crate::debate::{DebateSpec, Outcome, Transcript};
use crate::topology::mix;

/// The order in which peers' responses appear in a prompt (MADC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ordering {
    /// Agent order, every round.
    Fixed,
    /// A seeded shuffle, drawn again every round.
    Random,
    /// Path consistency: least agreed-with first, most agreed-with last (MADC Algorithm 1).
    ConsistencyLast,
    /// Agents holding the gold answer first (analysis only: needs the gold answer).
    TruthFirst,
    /// Agents holding the gold answer last (analysis only: needs the gold answer).
    TruthLast,
}

/// The speaking order a call was planned with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderNote {
    pub policy: Ordering,
    /// Every agent in speaking order (earliest first).
    pub order: Vec<usize>,
    /// Path consistency per agent (agreeing peers), when the policy uses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Vec<usize>>,
}

fn answer_of(t: &Transcript, round: usize, agent: usize) -> Option<&Answer> {
    t.effective(round, agent).and_then(Outcome::answer)
}

/// Every agent in speaking order for debate round `round` (≥ 1), earliest first, and the
/// consistency scores when the policy uses them.
pub fn speaking_order(
    policy: Ordering,
    spec: &DebateSpec,
    t: &Transcript,
    round: usize,
    gold: Option<&str>,
) -> (Vec<usize>, Option<Vec<usize>>) {
    let n = t.agents();
    let mut order: Vec<usize> = (0..n).collect();
    let previous = round.saturating_sub(1);
    match policy {
        Ordering::Fixed => (order, None),
        Ordering::Random => {
            let mut rng = ChaCha8Rng::seed_from_u64(mix(spec.seed, 0x6f72_6465, round as u64));
            order.shuffle(&mut rng);
            (order, None)
        }
        Ordering::ConsistencyLast => {
            let consistency: Vec<usize> = (0..n)
                .map(|i| match answer_of(t, previous, i) {
                    None => 0,
                    Some(a) => (0..n)
                        .filter(|&k| k != i)
                        .filter(|&k| answer_of(t, previous, k).is_some_and(|b| b.equivalent(a)))
                        .count(),
                })
                .collect();
            // The argmax (first among equals) goes last; the rest ascend.
            let best = (0..n).max_by_key(|&i| (consistency[i], std::cmp::Reverse(i)));
            order.retain(|&i| Some(i) != best);
            order.sort_by_key(|&i| consistency[i]);
            order.extend(best);
            (order, Some(consistency))
        }
        Ordering::TruthFirst | Ordering::TruthLast => {
            let gold = gold.and_then(|g| {
                spec.extract(&format!("Final answer: {g}"))
                    .or_else(|| crate::answer::Answer::parse(spec.kind, g, &spec.extract_context()))
            });
            let right = |i: &usize| {
                gold.as_ref()
                    .is_some_and(|g| answer_of(t, previous, *i).is_some_and(|a| a.equivalent(g)))
            };
            let (mut first, mut last): (Vec<usize>, Vec<usize>) =
                order.into_iter().partition(right);
            if policy == Ordering::TruthLast {
                std::mem::swap(&mut first, &mut last);
            }
            first.extend(last);
            (first, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::test_support::{respond, spec};

    #[test]
    fn consistency_last_puts_the_most_agreed_last() {
        let s = spec(4, 1);
        let mut t = Transcript::new(4, 1);
        for (a, x) in ["1", "2", "2", "3"].iter().enumerate() {
            respond(&s, &mut t, 0, a, &format!("Final answer: {x}"));
        }
        let (order, c) = speaking_order(Ordering::ConsistencyLast, &s, &t, 1, None);
        assert_eq!(c, Some(vec![0, 1, 1, 0]));
        // Agent 1 is the first argmax, so it speaks last; agent 2 just before it.
        assert_eq!(order, vec![0, 3, 2, 1]);
        let (tf, _) = speaking_order(Ordering::TruthFirst, &s, &t, 1, Some("3"));
        assert_eq!(tf, vec![3, 0, 1, 2]);
        let (tl, _) = speaking_order(Ordering::TruthLast, &s, &t, 1, Some("2"));
        assert_eq!(tl, vec![0, 3, 1, 2]);
        let (r1, _) = speaking_order(Ordering::Random, &s, &t, 1, None);
        let mut sorted = r1.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1, 2, 3]);
        assert_eq!(r1, speaking_order(Ordering::Random, &s, &t, 1, None).0);
    }
}
