//! Per-protocol totals of a benchmark: accuracy with a 95% Wilson interval, debates without an
//! answer, tokens, communication and calls; per-round majority accuracy, answer flips and
//! entropy; the accuracy every decision rule would have had on the same debates; and paired
//! comparisons of protocols on the same items (exact McNemar test).

use moot_core::chat::{total_tokens, Usage};
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

/// The mean of `values` with its 95% Student t-interval (mean ± t₀.₉₇₅,ₙ₋₁ · s/√n); no interval
/// below two values, where the spread is unknown. `None` when there are no values.
pub fn mean_t_interval(values: &[f64]) -> Option<(f64, Option<(f64, f64)>)> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return Some((mean, None));
    }
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = student_t_quantile(0.975, (n - 1) as f64) * (variance / n as f64).sqrt();
    Some((mean, Some((mean - half, mean + half))))
}

/// The `p` quantile (0.5 < p < 1) of Student's t distribution with `df` degrees of freedom, by
/// bisection on its distribution function (to 1e-10, far below what a report prints).
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    // P(T ≤ t) for t ≥ 0: 1 − I_{df/(df+t²)}(df/2, 1/2) / 2.
    let cdf = |t: f64| 1.0 - 0.5 * regularized_incomplete_beta(df / (df + t * t), df / 2.0, 0.5);
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    // The 0.975 quantile is 12.7 at df = 1; grow the bracket for anything further out.
    while cdf(hi) < p && hi < 1e12 {
        hi *= 2.0;
    }
    while hi - lo > 1e-10 {
        let mid = (lo + hi) / 2.0;
        if cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, nine coefficients: about 15 digits).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let series = C[1..]
        .iter()
        .enumerate()
        .fold(C[0], |s, (i, c)| s + c / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + series.ln()
}

/// The regularized incomplete beta function I_x(a, b), by its continued fraction (modified
/// Lentz), on the side of x where it converges fast.
fn regularized_incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(x, a, b) / a
    } else {
        1.0 - front * beta_fraction(1.0 - x, b, a) / b
    }
}

fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        for numerator in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + numerator * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + numerator / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
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
    /// Calls that got no response after their retries (error, deadline), skipped calls aside.
    pub failed_calls: usize,
    /// Each agent with a failed call: in how many debates it failed at least once, by id.
    pub failed_agents: std::collections::BTreeMap<String, usize>,
    pub input_tokens: u64,
    /// Of the input tokens, those read from providers' prompt caches (billed at a fraction of
    /// the input price) and those written to them (Anthropic bills these at 1.25 times it);
    /// `None` when no call said.
    pub cached_input_tokens: Option<u64>,
    pub cache_write_input_tokens: Option<u64>,
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
    /// Debates the judge ended before their last round (`judge` with `adaptive_break`).
    pub early_breaks: EarlyBreaks,
}

/// What a judge's adaptive break saved over a protocol's debates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct EarlyBreaks {
    /// Debates the judge ended before their last round.
    pub debates: usize,
    /// Rounds those debates did not run.
    pub rounds_saved: usize,
    /// Debaters' calls not made.
    pub calls_saved: usize,
    /// Tokens those calls would have cost, estimated at the mean tokens (input and output) of
    /// the debaters' calls this protocol made: an estimate, since a later round's prompt is
    /// longer than the mean.
    pub tokens_saved_estimate: u64,
}

/// What the judges' adaptive breaks saved over `mine`: read from the skipped calls' notes.
fn early_breaks(mine: &[&ItemResult]) -> EarlyBreaks {
    let mut out = EarlyBreaks::default();
    let (mut made, mut made_tokens) = (0u64, 0u64);
    for r in mine {
        let debaters = r.agents.iter().take_while(|a| a.role.is_debater()).count() as u32;
        let last = r.result.records.iter().map(|c| c.round).max().unwrap_or(0) as usize;
        let mut ended: Option<usize> = None;
        for c in r.result.records.iter().filter(|c| c.agent < debaters) {
            if !c.skipped {
                made += 1;
                made_tokens += c.input_tokens + c.output_tokens;
                continue;
            }
            let notes = moot_core::protocol::CallNotes::from_json(&c.notes).unwrap_or_default();
            if let Some(after) = notes.ended_after {
                out.calls_saved += 1;
                ended = Some(ended.map_or(after, |e: usize| e.min(after)));
            }
        }
        if let Some(after) = ended {
            out.debates += 1;
            out.rounds_saved += last.saturating_sub(after);
        }
    }
    out.tokens_saved_estimate = (out.calls_saved as u64 * made_tokens)
        .checked_div(made)
        .unwrap_or(0);
    out
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

/// Paired outcomes of two arms on the same items, counted: the 2×2 table every paired
/// comparison of the reports (protocols, a debate against its vote or against self-consistency,
/// a fork against its parent) is read from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PairTally {
    pub both: usize,
    pub only_first: usize,
    pub only_second: usize,
    pub neither: usize,
}

impl PairTally {
    /// The table of `pairs` (first right, second right).
    pub fn of(pairs: impl IntoIterator<Item = (bool, bool)>) -> PairTally {
        let mut t = PairTally::default();
        for pair in pairs {
            match pair {
                (true, true) => t.both += 1,
                (true, false) => t.only_first += 1,
                (false, true) => t.only_second += 1,
                (false, false) => t.neither += 1,
            }
        }
        t
    }

    pub fn items(&self) -> usize {
        self.both + self.only_first + self.only_second + self.neither
    }

    pub fn first_correct(&self) -> usize {
        self.both + self.only_first
    }

    pub fn second_correct(&self) -> usize {
        self.both + self.only_second
    }

    /// `correct` as a share of the items (0 when there are none).
    pub fn share(&self, correct: usize) -> f64 {
        correct as f64 / self.items().max(1) as f64
    }

    /// Exact McNemar p-value of the discordant items.
    pub fn p_value(&self) -> f64 {
        mcnemar_exact(self.only_first, self.only_second)
    }
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

/// The plurality of `round` among the agents `rows` (every agent when `None`): the answer a
/// debate stopped after that round gives, as the report's accuracy by round counts it
/// (`majority-last` with its deterministic tie-break: agents without a response do not vote,
/// an unreadable answer never wins, ties go to the answer given first in agent order).
pub fn plurality(t: &Trajectory, rows: Option<&[usize]>, round: usize) -> Option<Answer> {
    if round >= t.rounds() {
        return None;
    }
    let all: Vec<usize>;
    let rows = match rows {
        Some(r) => r,
        None => {
            all = (0..t.agents()).collect();
            &all
        }
    };
    let cut: Vec<Vec<Cell>> = rows
        .iter()
        .filter(|&&a| a < t.agents())
        .map(|&a| (0..=round).map(|r| t.cell(a, r).clone()).collect())
        .collect();
    let cut = Trajectory::new(cut).ok()?;
    MajorityLast::new(TieBreak::Deterministic)
        .decide(&cut)
        .answer
}

/// Paired comparison of protocols `a` and `b` over the items both ran.
pub fn paired(results: &[ItemResult], items: &[Item], a: &str, b: &str) -> Paired {
    let outcome = |protocol: &str, id: &str| {
        results
            .iter()
            .find(|r| r.protocol == protocol && r.item_id == id)
            .and_then(|r| items.iter().find(|i| i.id == id).map(|i| r.correct(i)))
    };
    let t = PairTally::of(
        items
            .iter()
            .filter_map(|item| Some((outcome(a, &item.id)?, outcome(b, &item.id)?))),
    );
    Paired {
        a: a.to_string(),
        b: b.to_string(),
        both_correct: t.both,
        only_a: t.only_first,
        only_b: t.only_second,
        both_wrong: t.neither,
        p_value: t.p_value(),
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
            let correct = mine.iter().filter(|r| r.correct_among(items)).count();
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
            let mut failed_agents = std::collections::BTreeMap::new();
            for r in &mine {
                for f in moot_store::agent_failures(&r.result.records) {
                    *failed_agents.entry(f.agent_id).or_insert(0) += 1;
                }
            }
            let failed_calls = mine
                .iter()
                .flat_map(|r| &r.result.records)
                .filter(|c| c.failed())
                .count();
            let usage = mine.iter().fold(Usage::default(), |mut sum, r| {
                sum += r.result.usage();
                sum
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
                failed_calls,
                failed_agents,
                input_tokens: usage.input_tokens,
                cached_input_tokens: usage.cached_input_tokens(),
                cache_write_input_tokens: usage.cache_write_input_tokens,
                output_tokens: usage.output_tokens,
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
                early_breaks: early_breaks(&mine),
                ..trajectory_metrics(&mine, items)
            }
        })
        .collect()
}

/// The per-round and per-rule parts of a protocol's summary.
fn trajectory_metrics(mine: &[&ItemResult], items: &[Item]) -> ProtocolSummary {
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
            let vote = plurality(&t, None, round);
            right[round] += usize::from(is_gold(vote.as_ref()));
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
        failed_calls: 0,
        failed_agents: Default::default(),
        input_tokens: 0,
        cached_input_tokens: None,
        cache_write_input_tokens: None,
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
        early_breaks: EarlyBreaks::default(),
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

    #[test]
    fn student_t_quantiles_match_tables() {
        // Reference: R's qt(0.975, df).
        for (df, q) in [
            (1.0, 12.706_204_74),
            (2.0, 4.302_652_73),
            (5.0, 2.570_581_84),
            (10.0, 2.228_138_85),
            (30.0, 2.042_272_46),
            (199.0, 1.971_956_54),
            (1000.0, 1.962_339_06),
        ] {
            let got = student_t_quantile(0.975, df);
            assert!((got - q).abs() < 1e-6, "df {df}: {got} vs {q}");
        }
    }

    #[test]
    fn mean_t_intervals() {
        assert_eq!(mean_t_interval(&[]), None);
        assert_eq!(mean_t_interval(&[0.5]), Some((0.5, None)));
        // Mean 2, s = 1, n = 3: 2 ± 4.3027 / √3.
        let (mean, ci) = mean_t_interval(&[1.0, 2.0, 3.0]).unwrap();
        let (lo, hi) = ci.unwrap();
        let half = 4.302_652_73 / 3f64.sqrt();
        assert!((mean - 2.0).abs() < 1e-12);
        assert!((lo - (2.0 - half)).abs() < 1e-6 && (hi - (2.0 + half)).abs() < 1e-6);
        // No spread: the interval is the mean.
        assert_eq!(mean_t_interval(&[0.0; 4]), Some((0.0, Some((0.0, 0.0)))));
    }
}
