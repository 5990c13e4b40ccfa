//! Per-round debate metrics from the MADC appendix: answer entropy and gold log-likelihood.

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
}
