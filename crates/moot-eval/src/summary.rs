//! Per-protocol totals of a benchmark: accuracy with a 95% Wilson interval, parse failures,
//! tokens, communication and calls.

use serde::Serialize;

use crate::bench::ItemResult;
use crate::Item;

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
    ((centre - half).max(0.0), (centre + half).min(1.0))
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
    pub input_tokens: u64,
    /// FREE-MAD's TC: the sum of output tokens.
    pub output_tokens: u64,
    pub ncomm: u64,
    /// Calls made to a model (skipped calls excluded).
    pub calls: usize,
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
            let (input_tokens, output_tokens) = mine.iter().fold((0, 0), |(i, o), r| {
                let u = r.result.usage();
                (i + u.input_tokens, o + u.output_tokens)
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
                input_tokens,
                output_tokens,
                ncomm: mine.iter().map(|r| r.result.ncomm()).sum(),
                calls: mine
                    .iter()
                    .map(|r| r.result.records.iter().filter(|c| !c.skipped).count())
                    .sum(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let (lo, hi) = wilson(10, 10);
        assert!(
            (lo - 0.7225).abs() < 1e-3 && (hi - 1.0).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }
}
