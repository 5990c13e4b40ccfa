//! Per-protocol totals of a benchmark: accuracy with a 95% Wilson interval, debates without an
//! answer, tokens, communication and calls; per-round majority accuracy, answer flips and
//! entropy; the accuracy every decision rule would have had on the same debates; and paired
//! comparisons of protocols on the same items (exact McNemar test).

use moot_core::chat::total_tokens;
use moot_core::debate::Slot;
use moot_core::decision::{DecisionRule, MajorityLast, TieBreak};
use moot_core::metrics::{adoption_all_to_all, gold_log_likelihood, round_entropy, Adoption};
use moot_core::{Answer, Cell, Trajectory};
use serde::Serialize;

use crate::bench::ItemResult;
use crate::item::Item;

/// The 95% Wilson score interval of `k` successes in `n` trials (`(0, 1)` when `n` is 0).
pub fn wilson(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let denominator = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denominator;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denominator;
    // Exactly, the interval holds p (and reaches 1 at k = n); in floating point the bounds
    // can miss it by one unit in the last place (0.9999999999999999 at 10 of 10).
    (
        (centre - half).min(p).max(0.0),
        (centre + half).max(p).min(1.0),
    )
}

/// One protocol's results over a benchmark's items.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtocolSummary {
    pub protocol: String,
    pub items: usize,
    pub correct: usize,
    pub accuracy: f64,
    /// 95% Wilson interval of the accuracy.
    pub ci95: (f64, f64),
    /// Debates whose decision found no answer at all.
    pub no_answer: usize,
    /// Agents' answers (responded answer calls, judgements and challenges aside) …
    pub responses: usize,
    /// … and those from which no answer could be extracted (after the re-ask, if any);
    pub parse_failures: usize,
    /// … and those re-asked for their final line because it could not be read at first.
    pub reasked: usize,
    pub input_tokens: u64,
    /// FREE-MAD's TC: the sum of output tokens.
    pub output_tokens: u64,
    pub ncomm: u64,
    /// Calls made to a model (skipped calls excluded), cache hits included.
    pub calls: usize,
    /// Calls answered from the request cache; their tokens are in the totals above but were not
    /// spent by this run.
    pub cache_hits: usize,
    /// Input and output tokens this run actually spent (cache hits excluded).
    pub spent_input_tokens: u64,
    pub spent_output_tokens: u64,
    /// Share of items whose round-r plurality is the gold answer, for r = 0, 1, … (over the
    /// items whose debate has that round).
    pub round_accuracy: Vec<f64>,
    /// Mean answer entropy (bits) of each round (MADC).
    pub round_entropy: Vec<f64>,
    /// Mean gold log-likelihood of each round (MADC eq. 4: log2 of the share of agents holding
    /// the gold answer) over the items where at least one agent held it; `None` when none did.
    pub round_gold_log_likelihood: Vec<Option<f64>>,
    /// Items where no agent held the gold answer in that round (log-likelihood −∞, left out of
    /// the mean above).
    pub round_gold_absent: Vec<usize>,
    /// Share of responding agents holding the gold answer in each round, over all items: the
    /// agents' individual accuracy (round 0: before any agent read another).
    pub round_gold_share: Vec<f64>,
    /// Mean tokens (input and output, cache hits included) per item spent through each round:
    /// what stopping the protocol after that round would have cost.
    pub round_tokens: Vec<f64>,
    /// Agents going from the gold answer to another between consecutive rounds, and back.
    pub flips_correct_to_incorrect: usize,
    pub flips_incorrect_to_correct: usize,
    /// Agents that had read a peer answer different from their own, over every debate round,
    /// counted as if every agent read every other (exact for all-to-all protocols).
    pub adoption: Adoption,
    /// Every decision rule applied to the same debates.
    pub rules: Vec<RuleAccuracy>,
}

/// One decision rule's accuracy on one protocol's debates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleAccuracy {
    pub rule: String,
    pub correct: usize,
    pub accuracy: f64,
}

/// Two protocols on the same items.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Paired {
    pub a: String,
    pub b: String,
    pub both_correct: usize,
    pub only_a: usize,
    pub only_b: usize,
    pub both_wrong: usize,
    /// Exact two-sided McNemar p-value (binomial test on the discordant items).
    pub p_value: f64,
}

/// The exact two-sided McNemar p-value for `b` and `c` discordant pairs: twice the binomial tail
/// of the smaller count under p = ½, at most 1.
pub fn mcnemar_exact(b: usize, c: usize) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    // Σ_{i ≤ k} C(n, i) / 2^n, in logs to stay finite for large n.
    let ln_choose = |n: usize, i: usize| -> f64 {
        let ln_fact = |m: usize| (1..=m).map(|x| (x as f64).ln()).sum::<f64>();
        ln_fact(n) - ln_fact(i) - ln_fact(n - i)
    };
    let tail: f64 = (0..=k)
        .map(|i| (ln_choose(n, i) - n as f64 * std::f64::consts::LN_2).exp())
        .sum();
    (2.0 * tail).min(1.0)
}

/// The trajectory cut after `round` (rounds 0..=round).
fn through(t: &Trajectory, round: usize) -> Option<Trajectory> {
    let rows: Vec<Vec<Cell>> = (0..t.agents())
        .map(|a| (0..=round).map(|r| t.cell(a, r).clone()).collect())
        .collect();
    Trajectory::new(rows).ok()
}

/// Paired comparison of protocols `a` and `b` over the items both ran.
pub fn paired(results: &[ItemResult], items: &[Item], a: &str, b: &str) -> Paired {
    let outcome = |protocol: &str, id: &str| {
        results
            .iter()
            .find(|r| r.protocol == protocol && r.item_id == id)
            .and_then(|r| items.iter().find(|i| i.id == id).map(|i| r.correct(i)))
    };
    let (mut both_correct, mut only_a, mut only_b, mut both_wrong) = (0, 0, 0, 0);
    for item in items {
        match (outcome(a, &item.id), outcome(b, &item.id)) {
            (Some(true), Some(true)) => both_correct += 1,
            (Some(true), Some(false)) => only_a += 1,
            (Some(false), Some(true)) => only_b += 1,
            (Some(false), Some(false)) => both_wrong += 1,
            _ => {}
        }
    }
    Paired {
        a: a.to_string(),
        b: b.to_string(),
        both_correct,
        only_a,
        only_b,
        both_wrong,
        p_value: mcnemar_exact(only_a, only_b),
    }
}

/// Summaries in the order protocols first appear in `results`; `items` gives each result's
/// item by id.
pub fn summarize(results: &[ItemResult], items: &[Item]) -> Vec<ProtocolSummary> {
    let mut order: Vec<&str> = Vec::new();
    for r in results {
        if !order.contains(&r.protocol.as_str()) {
            order.push(&r.protocol);
        }
    }
    order
        .into_iter()
        .map(|protocol| {
            let mine: Vec<&ItemResult> =
                results.iter().filter(|r| r.protocol == protocol).collect();
            let correct = mine
                .iter()
                .filter(|r| {
                    items
                        .iter()
                        .find(|i| i.id == r.item_id)
                        .is_some_and(|item| r.correct(item))
                })
                .count();
            let no_answer = mine
                .iter()
                .filter(|r| {
                    r.result
                        .decision()
                        .and_then(|d| d.answer.as_ref())
                        .is_none()
                })
                .count();
            let answers = mine.iter().flat_map(|r| &r.result.records).filter(|c| {
                c.response_text.is_some()
                    && moot_engine::key_of(c).is_some_and(|k| k.slot == Slot::Answer)
            });
            let (responses, parse_failures, reasked) = answers.fold((0, 0, 0), |(n, f, r), c| {
                (
                    n + 1,
                    f + usize::from(c.answer.is_none()),
                    r + usize::from(
                        moot_core::protocol::CallNotes::from_json(&c.notes)
                            .is_ok_and(|n| n.reask.is_some()),
                    ),
                )
            });
            let (input_tokens, output_tokens) = mine.iter().fold((0, 0), |(i, o), r| {
                let u = r.result.usage();
                (
                    u64::saturating_add(i, u.input_tokens),
                    u64::saturating_add(o, u.output_tokens),
                )
            });
            ProtocolSummary {
                protocol: protocol.to_string(),
                items: mine.len(),
                correct,
                accuracy: if mine.is_empty() {
                    0.0
                } else {
                    correct as f64 / mine.len() as f64
                },
                ci95: wilson(correct, mine.len()),
                no_answer,
                responses,
                parse_failures,
                reasked,
                input_tokens,
                output_tokens,
                ncomm: mine.iter().map(|r| r.result.ncomm()).sum(),
                calls: mine
                    .iter()
                    .map(|r| r.result.records.iter().filter(|c| !c.skipped).count())
                    .sum(),
                cache_hits: mine.iter().map(|r| r.result.cache_hits()).sum(),
                spent_input_tokens: total_tokens(
                    mine.iter().map(|r| r.result.spent_usage().input_tokens),
                ),
                spent_output_tokens: total_tokens(
                    mine.iter().map(|r| r.result.spent_usage().output_tokens),
                ),
                ..trajectory_metrics(&mine, items)
            }
        })
        .collect()
}

/// The per-round and per-rule parts of a protocol's summary.
fn trajectory_metrics(mine: &[&ItemResult], items: &[Item]) -> ProtocolSummary {
    let majority = MajorityLast::new(TieBreak::Deterministic);
    let (mut right, mut seen, mut entropy) =
        (Vec::<usize>::new(), Vec::<usize>::new(), Vec::<f64>::new());
    let (mut to_wrong, mut to_right) = (0, 0);
    let mut adoption = Adoption::default();
    let (mut ll_sum, mut ll_seen, mut absent) =
        (Vec::<f64>::new(), Vec::<usize>::new(), Vec::<usize>::new());
    let mut tokens = Vec::<f64>::new();
    // Per round: agents holding gold, agents that responded.
    let mut holding = Vec::<(usize, usize)>::new();
    let mut rules: Vec<RuleAccuracy> = Vec::new();
    for r in mine {
        let Some(item) = items.iter().find(|i| i.id == r.item_id) else {
            continue;
        };
        let Some(gold) = item.gold_answer() else {
            continue;
        };
        let is_gold = |a: Option<&Answer>| r.grade(item, Some(&gold), a);
        for d in &r.result.decisions {
            let hit = usize::from(is_gold(d.answer.as_ref()));
            match rules.iter_mut().find(|x| x.rule == d.rule) {
                Some(x) => x.correct += hit,
                None => rules.push(RuleAccuracy {
                    rule: d.rule.to_string(),
                    correct: hit,
                    accuracy: 0.0,
                }),
            }
        }
        let Some(t) = r.result.transcript.trajectory() else {
            continue;
        };
        let mut spent = vec![0u64; t.rounds()];
        for call in &r.result.records {
            // A MAD-M² judgement is recorded in the round of the memory it judges but is paid
            // for the next round, which reads it: stopping after its round would not make it.
            let round = match moot_engine::key_of(call).map(|k| k.slot) {
                Some(Slot::Judge(_)) => call.round as usize + 1,
                _ => call.round as usize,
            };
            if let Some(s) = spent.get_mut(round) {
                *s = total_tokens([*s, call.input_tokens, call.output_tokens]);
            }
        }
        let mut through_round = 0u64;
        for round in 0..t.rounds() {
            if right.len() <= round {
                right.push(0);
                seen.push(0);
                entropy.push(0.0);
                ll_sum.push(0.0);
                ll_seen.push(0);
                absent.push(0);
                tokens.push(0.0);
                holding.push((0, 0));
            }
            seen[round] += 1;
            for cell in t.round(round).filter(|c| c.responded()) {
                holding[round].0 += usize::from(is_gold(cell.answer()));
                holding[round].1 += 1;
            }
            entropy[round] += round_entropy(&t, round);
            through_round = through_round.saturating_add(spent[round]);
            tokens[round] += through_round as f64;
            match gold_log_likelihood(&t, round, &gold) {
                Some(ll) if ll.is_finite() => {
                    ll_sum[round] += ll;
                    ll_seen[round] += 1;
                }
                Some(_) => absent[round] += 1,
                None => {}
            }
            let plurality = through(&t, round).and_then(|cut| majority.decide(&cut).answer);
            right[round] += usize::from(is_gold(plurality.as_ref()));
            if round > 0 {
                adoption.add(adoption_all_to_all(&t, round));
                for agent in 0..t.agents() {
                    let (before, after) = (t.cell(agent, round - 1), t.cell(agent, round));
                    if !(before.responded() && after.responded()) {
                        continue;
                    }
                    match (is_gold(before.answer()), is_gold(after.answer())) {
                        (true, false) => to_wrong += 1,
                        (false, true) => to_right += 1,
                        _ => {}
                    }
                }
            }
        }
    }
    let n = mine.len().max(1) as f64;
    for x in &mut rules {
        x.accuracy = x.correct as f64 / n;
    }
    ProtocolSummary {
        protocol: String::new(),
        items: 0,
        correct: 0,
        accuracy: 0.0,
        ci95: (0.0, 1.0),
        no_answer: 0,
        responses: 0,
        parse_failures: 0,
        reasked: 0,
        input_tokens: 0,
        output_tokens: 0,
        ncomm: 0,
        calls: 0,
        cache_hits: 0,
        spent_input_tokens: 0,
        spent_output_tokens: 0,
        round_accuracy: right
            .iter()
            .zip(&seen)
            .map(|(&r, &s)| r as f64 / s.max(1) as f64)
            .collect(),
        round_entropy: entropy
            .iter()
            .zip(&seen)
            .map(|(&e, &s)| e / s.max(1) as f64)
            .collect(),
        round_gold_log_likelihood: ll_sum
            .iter()
            .zip(&ll_seen)
            .map(|(&l, &n)| (n > 0).then(|| l / n as f64))
            .collect(),
        round_gold_absent: absent,
        round_gold_share: holding
            .iter()
            .map(|&(gold, responded)| gold as f64 / responded.max(1) as f64)
            .collect(),
        round_tokens: tokens
            .iter()
            .zip(&seen)
            .map(|(&t, &s)| t / s.max(1) as f64)
            .collect(),
        flips_correct_to_incorrect: to_wrong,
        flips_incorrect_to_correct: to_right,
        adoption,
        rules,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcnemar_exact_p_values() {
        // Reference: R's binom.test(k, n)$p.value.
        assert!((mcnemar_exact(1, 9) - 0.02148).abs() < 1e-4);
        assert!((mcnemar_exact(5, 5) - 1.0).abs() < 1e-12);
        assert!((mcnemar_exact(0, 6) - 0.03125).abs() < 1e-9);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert!((mcnemar_exact(40, 60) - 0.05689).abs() < 1e-4);
    }

    #[test]
    fn wilson_intervals() {
        // Reference values (R: prop.test without continuity correction / binom::binom.wilson).
        let (lo, hi) = wilson(8, 10);
        assert!(
            (lo - 0.4902).abs() < 1e-3 && (hi - 0.9433).abs() < 1e-3,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(0, 10);
        assert!(lo.abs() < 1e-9 && (hi - 0.2775).abs() < 1e-3, "{lo} {hi}");
        for n in 1..200 {
            for k in 0..=n {
                let (lo, hi) = wilson(k, n);
                let p = k as f64 / n as f64;
                assert!(lo <= p && p <= hi, "{k}/{n}: {lo} {hi}");
            }
        }
        assert_eq!(wilson(10, 10).1, 1.0);
        let (lo, hi) = wilson(10, 10);
        assert!(
            (lo - 0.7225).abs() < 1e-3 && (hi - 1.0).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }
}
