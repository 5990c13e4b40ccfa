//! `svr`: SVR-MAD's decision (§4).
//!
//! Acceptance: the recorded challenges are replayed in order; after each iteration, a receiver
//! with at least C challenges answered (C from the protocol, 2 by default) and no change of
//! answer is accepted, and its pre-debate answer is final.
//!
//! Fallback vote, otherwise: each agent contributes one vote, the majority of its observed
//! post-debate answers (its answers to challenges, and its answers in debate rounds for
//! round-based protocols), with its pre-debate answer breaking ties among them (then the earliest
//! observed); an agent with no post-debate answer votes its pre-debate answer. The majority of
//! the votes wins, ties broken by the pre-debate majority among the tied answers, then by the
//! configured tie-break. No-answer votes never win. On a run without challenges this reads the
//! trajectory alone, so the rule applies to every protocol.

use super::rule::{
    key_text, Action, Decision, DecisionRule, Evidence, ScoreEvent, Tally, TieBreak,
};
use crate::answer::Answer;
use crate::trajectory::Trajectory;

pub(super) const NAME: &str = "svr";

pub const DEFAULT_ACCEPT_AFTER: usize = 2;

#[derive(Debug, Clone)]
pub struct Svr {
    tie_break: TieBreak,
}

impl Svr {
    pub fn new(tie_break: TieBreak) -> Svr {
        Svr { tie_break }
    }
}

fn same(a: Option<&Answer>, b: Option<&Answer>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.equivalent(b),
        (None, None) => true,
        _ => false,
    }
}

/// The most frequent of `answers` (first-seen order), ties to `prefer` when tied, else first.
fn plurality<'a>(answers: &[&'a Answer], prefer: Option<&Answer>) -> Option<&'a Answer> {
    let mut counts: Vec<(&Answer, usize)> = Vec::new();
    for a in answers {
        match counts.iter_mut().find(|(c, _)| c.equivalent(a)) {
            Some((_, n)) => *n += 1,
            None => counts.push((a, 1)),
        }
    }
    let top = counts.iter().map(|&(_, n)| n).max()?;
    let tied: Vec<&Answer> = counts
        .iter()
        .filter(|&&(_, n)| n == top)
        .map(|&(a, _)| a)
        .collect();
    tied.iter()
        .find(|a| prefer.is_some_and(|p| a.equivalent(p)))
        .or_else(|| tied.first())
        .copied()
}

impl DecisionRule for Svr {
    fn name(&self) -> &'static str {
        NAME
    }

    fn decide(&self, trajectory: &Trajectory) -> Decision {
        self.decide_with(trajectory, &Evidence::default())
    }

    fn decide_with(&self, trajectory: &Trajectory, evidence: &Evidence) -> Decision {
        let n = trajectory.agents();
        let need = evidence.accept_after.unwrap_or(DEFAULT_ACCEPT_AFTER).max(1);
        let mut events = Vec::new();
        let (mut held, mut changed) = (vec![0usize; n], vec![0usize; n]);
        let challenges: Vec<_> = evidence
            .challenges
            .iter()
            .filter(|c| c.receiver < n)
            .collect();
        for (i, c) in challenges.iter().enumerate() {
            if let Some(after) = &c.after {
                let kept = c.before.is_some() && same(after.as_ref(), c.before.as_ref());
                if kept {
                    held[c.receiver] += 1;
                } else {
                    changed[c.receiver] += 1;
                }
                events.push(ScoreEvent {
                    round: c.iteration,
                    agent: Some(c.receiver),
                    action: if kept { Action::Survive } else { Action::Yield },
                    answer: key_text(c.before.as_ref()),
                    delta: if kept { 1.0 } else { -1.0 },
                });
            }
            let iteration_ends = challenges
                .get(i + 1)
                .is_none_or(|next| next.iteration != c.iteration || next.receiver != c.receiver);
            let r = c.receiver;
            if iteration_ends && held[r] >= need && changed[r] == 0 && c.before.is_some() {
                let mut tally = Tally::default();
                tally.add(c.before.as_ref(), 1.0);
                events.push(ScoreEvent {
                    round: c.iteration,
                    agent: Some(r),
                    action: Action::Accept,
                    answer: key_text(c.before.as_ref()),
                    delta: 1.0,
                });
                return tally.decide(NAME, self.tie_break, events);
            }
        }
        // Fallback vote.
        let pre: Vec<Option<&Answer>> = (0..n).map(|a| trajectory.cell(a, 0).answer()).collect();
        let mut votes = Tally::default();
        for (agent, &pre_answer) in pre.iter().enumerate() {
            let mut post: Vec<&Answer> = (1..trajectory.rounds())
                .filter_map(|r| trajectory.cell(agent, r).answer())
                .collect();
            post.extend(
                challenges
                    .iter()
                    .filter(|c| c.receiver == agent)
                    .filter_map(|c| c.after.as_ref().and_then(Option::as_ref)),
            );
            let vote = if post.is_empty() {
                pre_answer
            } else {
                plurality(&post, pre_answer)
            };
            if vote.is_none() && !trajectory.cell(agent, 0).responded() && post.is_empty() {
                continue;
            }
            votes.add(vote, 1.0);
            events.push(ScoreEvent {
                round: trajectory.last_round(),
                agent: Some(agent),
                action: Action::Vote,
                answer: key_text(vote),
                delta: 1.0,
            });
        }
        // Ties among the top votes go to the pre-debate majority among them: a tiny bonus per
        // pre-debate holder, far below one vote, orders them without changing any winner.
        let top = votes
            .entries_mut()
            .iter()
            .filter(|(k, _)| k.is_some())
            .map(|&(_, s)| s)
            .fold(f64::NEG_INFINITY, f64::max);
        for (key, score) in votes.entries_mut() {
            if let Some(k) = key {
                if (*score - top).abs() < 1e-9 {
                    let holders = pre.iter().flatten().filter(|p| p.equivalent(k)).count();
                    *score += holders as f64 * 1e-3 / (n as f64 + 1.0);
                }
            }
        }
        let mut d = votes.decide(NAME, self.tie_break, events);
        for (_, s) in &mut d.scores {
            *s = s.floor();
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::{AnswerKind, ExtractContext};
    use crate::decision::test_support::traj;
    use crate::decision::ChallengeEvidence;

    fn a(s: &str) -> Option<Answer> {
        Answer::parse(AnswerKind::Text, s, &ExtractContext::default())
    }

    fn ch(
        iteration: usize,
        receiver: usize,
        challenger: usize,
        before: &str,
        after: Option<&str>,
    ) -> ChallengeEvidence {
        ChallengeEvidence {
            iteration,
            receiver,
            challenger,
            before: a(before),
            after: after.map(a),
        }
    }

    #[test]
    fn accepts_a_minority_that_survives_every_challenge() {
        // Agent 0 holds A alone; it survives challenges from 1 and 2 (both B).
        let t = traj(&[&["A"], &["B"], &["B"]]);
        let e = Evidence {
            deciders: vec![],
            challenges: vec![ch(1, 0, 1, "A", Some("A")), ch(1, 0, 2, "A", Some("A"))],
            accept_after: Some(2),
            early_stop: None,
        };
        let d = Svr::new(TieBreak::Deterministic).decide_with(&t, &e);
        assert_eq!(d.answer.unwrap().canonical(), "a");
        assert_eq!(d.events.last().unwrap().action, Action::Accept);
        // Majority-style rules would say B; with only one challenge survived, no acceptance:
        let e1 = Evidence {
            challenges: vec![ch(1, 0, 1, "A", Some("A"))],
            ..e.clone()
        };
        assert_eq!(
            Svr::new(TieBreak::Deterministic)
                .decide_with(&t, &e1)
                .answer
                .unwrap()
                .canonical(),
            "b"
        );
    }

    #[test]
    fn fallback_votes_post_debate_majorities_with_pre_debate_tiebreaks() {
        // Agent 0 changed to B under one challenge and held A under another: tie, its
        // pre-debate A breaks it. Agents 1, 2 never received: they vote B and C. Votes A, B, C tie;
        // the pre-debate majority among them — B has one holder, as have A and C — falls to the
        // tie-break: the first seen, A.
        let t = traj(&[&["A"], &["B"], &["C"]]);
        let e = Evidence {
            deciders: vec![],
            challenges: vec![ch(1, 0, 1, "A", Some("B")), ch(2, 0, 2, "A", Some("A"))],
            accept_after: Some(2),
            early_stop: None,
        };
        let d = Svr::new(TieBreak::Deterministic).decide_with(&t, &e);
        assert_eq!(d.answer.unwrap().canonical(), "a");
        // A missing challenge is no evidence.
        let t = traj(&[&["A"], &["B"], &["B"], &["A"]]);
        let e = Evidence {
            deciders: vec![],
            challenges: vec![ch(1, 0, 1, "A", None), ch(1, 0, 2, "A", Some("B"))],
            accept_after: Some(1),
            early_stop: None,
        };
        // Agent 0 now votes B: B has 3 votes.
        assert_eq!(
            Svr::new(TieBreak::Deterministic)
                .decide_with(&t, &e)
                .answer
                .unwrap()
                .canonical(),
            "b"
        );
    }

    #[test]
    fn without_challenges_reads_the_debate_rounds() {
        let t = traj(&[&["A", "B", "B"], &["A", "A", "A"], &["C", "B", "A"]]);
        // Agent 0: B,B → B. Agent 1: A. Agent 2: B,A tie → neither is its pre-debate C → first, B.
        let d = Svr::new(TieBreak::Deterministic).decide(&t);
        assert_eq!(d.answer.unwrap().canonical(), "b");
    }
}
