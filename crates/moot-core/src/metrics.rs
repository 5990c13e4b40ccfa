//! Per-round debate metrics: answer entropy and gold log-likelihood (MADC appendix), and
//! conformity as adoption of a peer's different answer (FREE-MAD's β(p), measured).

use crate::answer::Answer;
use crate::trajectory::Trajectory;

/// Shannon entropy in bits of the distribution of answers, grouping equivalent answers
/// (MADC eq. 5). Lower means the agents' views are more concentrated. Empty input has entropy 0.
pub fn answer_entropy<'a>(answers: impl IntoIterator<Item = &'a Answer>) -> f64 {
    let mut groups: Vec<(&Answer, usize)> = Vec::new();
    let mut total = 0usize;
    for a in answers {
        total += 1;
        match groups.iter_mut().find(|(g, _)| g.equivalent(a)) {
            Some((_, n)) => *n += 1,
            None => groups.push((a, 1)),
        }
    }
    groups
        .iter()
        .map(|&(_, n)| {
            let p = n as f64 / total as f64;
            -p * p.log2()
        })
        .sum::<f64>()
        .max(0.0)
}

/// Entropy of the answers given in one round. Agents without a response or without an
/// extractable answer are not viewpoints and are left out.
pub fn round_entropy(trajectory: &Trajectory, round: usize) -> f64 {
    answer_entropy(trajectory.round(round).filter_map(|c| c.answer()))
}

/// log2 of the share of responding agents whose answer is the gold one in a round (MADC eq. 4
/// with P(y = truth) taken as that share): 0 when all are right, −∞ when none is. `None` when no
/// agent responded in that round. Agents that responded without an answer count as wrong.
pub fn gold_log_likelihood(trajectory: &Trajectory, round: usize, gold: &Answer) -> Option<f64> {
    let (mut responded, mut correct) = (0usize, 0usize);
    for cell in trajectory.round(round).filter(|c| c.responded()) {
        responded += 1;
        if cell.answer().is_some_and(|a| a.equivalent(gold)) {
            correct += 1;
        }
    }
    (responded > 0).then(|| (correct as f64 / responded as f64).log2())
}

/// What agents did when they had read a peer answer different from their own: the observable
/// side of FREE-MAD's conformity β(p). Counts agent-rounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Adoption {
    /// Agent-rounds whose previous answer differed from at least one peer's previous answer.
    pub exposed: usize,
    /// Of those, the new answer is one of the peers' different answers.
    pub adopted: usize,
    /// Of those, the new answer is the agent's own previous one.
    pub kept: usize,
    /// Of those, the new answer is neither (a new answer, or none).
    pub other: usize,
}

impl Adoption {
    /// Share of exposed agent-rounds that adopted a peer's different answer.
    pub fn rate(&self) -> Option<f64> {
        (self.exposed > 0).then(|| self.adopted as f64 / self.exposed as f64)
    }

    pub fn add(&mut self, other: Adoption) {
        self.exposed += other.exposed;
        self.adopted += other.adopted;
        self.kept += other.kept;
        self.other += other.other;
    }
}

/// Adoption in `round` (≥ 1) when every agent read every other agent's previous answer
/// (all-to-all, the topology of `som` and `free-mad-*`). An agent counts when it answered in
/// both rounds and some peer's previous answer differs from its own.
pub fn adoption_all_to_all(trajectory: &Trajectory, round: usize) -> Adoption {
    let mut out = Adoption::default();
    if round == 0 || round >= trajectory.rounds() {
        return out;
    }
    let agents = trajectory.agents();
    for agent in 0..agents {
        let (Some(before), after) = (
            trajectory.cell(agent, round - 1).answer(),
            trajectory.cell(agent, round),
        ) else {
            continue;
        };
        if !after.responded() {
            continue;
        }
        let different: Vec<&Answer> = (0..agents)
            .filter(|&p| p != agent)
            .filter_map(|p| trajectory.cell(p, round - 1).answer())
            .filter(|a| !a.equivalent(before))
            .collect();
        if different.is_empty() {
            continue;
        }
        out.exposed += 1;
        match after.answer() {
            Some(a) if a.equivalent(before) => out.kept += 1,
            Some(a) if different.iter().any(|d| d.equivalent(a)) => out.adopted += 1,
            _ => out.other += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::{AnswerKind, ExtractContext};

    fn letters(spec: &[(&str, usize)]) -> Vec<Option<Answer>> {
        spec.iter()
            .flat_map(|&(l, n)| {
                std::iter::repeat_n(
                    Answer::parse(AnswerKind::Choice, l, &ExtractContext::default()),
                    n,
                )
            })
            .collect()
    }

    /// 10 agents, one debate round; rows are agents, columns rounds.
    fn debate(round0: &[(&str, usize)], round1: &[(&str, usize)]) -> Trajectory {
        let r0 = letters(round0);
        let r1 = letters(round1);
        Trajectory::from_answers(r0.into_iter().zip(r1).map(|(a, b)| vec![a, b]).collect())
            .expect("rectangular")
    }

    // MADC appendix, entropy example: after the debate round (A)x8, (B)x1, (C)x1 has entropy
    // 0.9219 under the fixed strategy; (A)x10 under random has 0.
    #[test]
    fn madc_entropy_example() {
        let fixed = debate(&[("A", 5), ("B", 5)], &[("A", 8), ("B", 1), ("C", 1)]);
        assert!((round_entropy(&fixed, 1) - 0.9219).abs() < 1e-4);
        assert!((round_entropy(&fixed, 0) - 1.0).abs() < 1e-12);
        let random = debate(&[("A", 5), ("B", 5)], &[("A", 10)]);
        assert_eq!(round_entropy(&random, 1), 0.0);
    }

    // MADC appendix, log-likelihood example: 9 of 10 agents right gives log2 0.9 = -0.152;
    // all 10 right gives 0.
    #[test]
    fn madc_log_likelihood_example() {
        let gold = Answer::parse(AnswerKind::Choice, "A", &ExtractContext::default()).unwrap();
        let fixed = debate(&[("A", 5), ("B", 5)], &[("A", 9), ("B", 1)]);
        let ll = gold_log_likelihood(&fixed, 1, &gold).unwrap();
        assert!((ll - -0.152).abs() < 1e-3, "{ll}");
        let random = debate(&[("A", 5), ("B", 5)], &[("A", 10)]);
        assert_eq!(gold_log_likelihood(&random, 1, &gold), Some(0.0));
        let none_right = debate(&[("B", 10)], &[("B", 10)]);
        assert_eq!(
            gold_log_likelihood(&none_right, 1, &gold),
            Some(f64::NEG_INFINITY)
        );
    }

    #[test]
    fn adoption_counts_only_agents_that_saw_a_different_answer() {
        // Rows are agents, columns rounds. Agent 1 held A and read B and A: it adopts B.
        // Agent 2 held B and read A twice: it keeps B. Agent 3 held A and read A and B: it
        // moves to C, which no peer held.
        let rows = vec![
            letters(&[("A", 1), ("B", 1)]),
            letters(&[("B", 1), ("B", 1)]),
            letters(&[("A", 1), ("C", 1)]),
        ];
        let t = Trajectory::from_answers(rows).unwrap();
        let a = adoption_all_to_all(&t, 1);
        assert_eq!(
            a,
            Adoption {
                exposed: 3,
                adopted: 1,
                kept: 1,
                other: 1
            }
        );
        assert_eq!(a.rate(), Some(1.0 / 3.0));
        let same =
            Trajectory::from_answers(vec![letters(&[("A", 2)]), letters(&[("A", 2)])]).unwrap();
        assert_eq!(adoption_all_to_all(&same, 1), Adoption::default());
        assert_eq!(adoption_all_to_all(&same, 0).rate(), None);
    }
}
