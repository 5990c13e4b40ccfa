//! A benchmark report: the per-protocol summaries, every pair of protocols compared on the same
//! items, the protocols compared at equal token budgets, model time, and plots of accuracy
//! against tokens and against rounds — as Markdown, JSON or SVG. `moot bench` prints one when it
//! finishes and `moot report` writes one from the store.
//!
//! # Equal token budgets
//!
//! A debate stopped after round r costs what its calls through round r cost, and answers with
//! that round's plurality; a complete debate answers with its protocol's decision rule. So one
//! run of a protocol gives a cost curve: a point per round (mean tokens per item, accuracy), the
//! last one the protocol's own decision. The accuracy of a protocol at a budget B is that of the
//! last point of its curve costing at most B tokens per item (none when even round 0 costs more).
//! The budgets compared are each protocol's full cost. Tokens are input plus output, cache hits
//! included (what the debate costs without a cache). The input tokens say how many of them
//! providers read from their prompt caches and wrote to them: moot knows no prices, and a
//! cached token costs a tenth to a half of an input token's price, by provider and model.

use moot_core::chat::prompt_cache_note;
use moot_core::text::{plural, thousands};
use plotters::prelude::*;
use serde::Serialize;

use crate::bench::ItemResult;
use crate::controls::Controls;
use crate::item::Item;
use crate::protocol_totals::{paired, summarize, Paired, ProtocolSummary};

/// One benchmark a report reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchInfo {
    pub name: String,
    pub dataset: String,
    pub seed: u64,
    pub limit: Option<u64>,
    pub protocols: Vec<String>,
    /// Items with at least one finished debate.
    pub items: usize,
    /// Debates linked to the benchmark that had not finished when the report was made.
    pub unfinished: usize,
    /// The dataset's items left out because they cannot be scored (`--skip-invalid`), each
    /// by id with its place and reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out: Option<moot_store::LeftOut>,
}

/// `12 of 2,400 items left out: 10 gold does not parse as numeric, 2 missing field `answer``.
pub fn left_out_summary(left_out: &moot_store::LeftOut) -> String {
    let reasons: Vec<String> = left_out
        .by_problem()
        .iter()
        .map(|(problem, n)| format!("{} {problem}", thousands(*n as u64)))
        .collect();
    format!(
        "{} of {} {} left out: {}",
        thousands(left_out.items.len() as u64),
        thousands(left_out.of),
        if left_out.of == 1 { "item" } else { "items" },
        reasons.join(", ")
    )
}

/// One point of a protocol's cost curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CostPoint {
    /// The last round the point's debates ran.
    pub round: usize,
    /// Mean tokens (input and output) per item.
    pub tokens: f64,
    pub accuracy: f64,
    /// Whether the point is the complete protocol with its decision rule (else a round's
    /// plurality).
    pub decided: bool,
}

/// Each protocol's accuracy at each budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetTable {
    /// Mean tokens per item, ascending: each protocol's full cost.
    pub budgets: Vec<f64>,
    pub rows: Vec<BudgetRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetRow {
    pub protocol: String,
    /// One per budget: the point of the protocol's curve used there, if any fits.
    pub cells: Vec<Option<CostPoint>>,
}

/// Time the models spent answering a protocol's calls. Not part of the deterministic report: it
/// varies from run to run, and a resumed benchmark counts only the calls it made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    pub protocol: String,
    /// Sum of call latencies, cache hits and skipped calls excluded.
    pub model_seconds: f64,
    pub model_seconds_per_item: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub benches: Vec<BenchInfo>,
    /// Distinct items over all protocols.
    pub items: usize,
    /// Items left out because not every protocol finished them (see [`common_items`]).
    pub left_out: usize,
    pub protocols: Vec<ProtocolSummary>,
    /// Every pair of protocols, in listing order.
    pub paired: Vec<Paired>,
    pub budget: BudgetTable,
    pub timing: Vec<Timing>,
    /// Items graded by running their tests (code items): their accuracy is pass@1.
    pub graded_by_tests: usize,
    /// The field's controls on the same debates (see [`crate::controls`]).
    pub controls: Controls,
    /// For a forked benchmark (`moot bench --fork-of`), its debates paired with the parent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fork: Option<crate::fork_pairs::ForkComparison>,
}

#[derive(Debug, thiserror::Error)]
#[error("drawing the plot: {0}")]
pub struct PlotError(String);

/// A protocol's cost curve: its rounds' pluralities, then its decision (see the module docs).
pub fn cost_curve(s: &ProtocolSummary) -> Vec<CostPoint> {
    let rounds = s.round_accuracy.len();
    let mut points: Vec<CostPoint> = (0..rounds.saturating_sub(1))
        .map(|r| CostPoint {
            round: r,
            tokens: s.round_tokens.get(r).copied().unwrap_or(0.0),
            accuracy: s.round_accuracy[r],
            decided: false,
        })
        .collect();
    points.push(CostPoint {
        round: rounds.saturating_sub(1),
        tokens: mean_tokens(s),
        accuracy: s.accuracy,
        decided: true,
    });
    points
}

fn mean_tokens(s: &ProtocolSummary) -> f64 {
    s.input_tokens.saturating_add(s.output_tokens) as f64 / s.items.max(1) as f64
}

/// The protocols compared at each other's full costs.
pub fn budget_table(summaries: &[ProtocolSummary]) -> BudgetTable {
    let mut budgets: Vec<f64> = summaries.iter().map(mean_tokens).collect();
    budgets.sort_by(f64::total_cmp);
    budgets.dedup_by(|a, b| (*a - *b).abs() < 0.5);
    let rows = summaries
        .iter()
        .map(|s| {
            let curve = cost_curve(s);
            BudgetRow {
                protocol: s.protocol.clone(),
                cells: budgets
                    .iter()
                    .map(|&b| {
                        curve
                            .iter()
                            .filter(|p| p.tokens <= b + 0.5)
                            .max_by(|x, y| x.tokens.total_cmp(&y.tokens))
                            .copied()
                    })
                    .collect(),
            }
        })
        .collect();
    BudgetTable { budgets, rows }
}

/// Model time per protocol, in the order protocols first appear in `results`.
pub fn timing(results: &[ItemResult]) -> Vec<Timing> {
    let mut out: Vec<(Timing, usize)> = Vec::new();
    for r in results {
        let ms: u64 = r
            .result
            .records
            .iter()
            .filter(|c| !c.cached && !c.skipped)
            .map(|c| c.latency_ms)
            .sum();
        let seconds = ms as f64 / 1000.0;
        match out.iter_mut().find(|(t, _)| t.protocol == r.protocol) {
            Some((t, n)) => {
                t.model_seconds += seconds;
                *n += 1;
            }
            None => out.push((
                Timing {
                    protocol: r.protocol.clone(),
                    model_seconds: seconds,
                    model_seconds_per_item: 0.0,
                },
                1,
            )),
        }
    }
    out.into_iter()
        .map(|(mut t, n)| {
            t.model_seconds_per_item = t.model_seconds / n as f64;
            t
        })
        .collect()
}

/// Only the results of items every protocol finished, so that accuracies compare like with
/// like when some debates are missing (an interrupted benchmark, benchmarks of different
/// sizes); also how many items were left out.
pub fn common_items(results: Vec<ItemResult>) -> (Vec<ItemResult>, usize) {
    let mut protocols: Vec<&str> = Vec::new();
    let mut items: Vec<&str> = Vec::new();
    for r in &results {
        if !protocols.contains(&r.protocol.as_str()) {
            protocols.push(&r.protocol);
        }
        if !items.contains(&r.item_id.as_str()) {
            items.push(&r.item_id);
        }
    }
    let everywhere = |id: &str| {
        protocols
            .iter()
            .all(|p| results.iter().any(|r| r.protocol == *p && r.item_id == id))
    };
    let keep: Vec<String> = items
        .iter()
        .filter(|id| everywhere(id))
        .map(|id| id.to_string())
        .collect();
    let left_out = items.len() - keep.len();
    let kept = results
        .into_iter()
        .filter(|r| keep.contains(&r.item_id))
        .collect();
    (kept, left_out)
}

impl Report {
    /// The report of `results` (protocol labels as given) on `items`.
    pub fn new(benches: Vec<BenchInfo>, results: &[ItemResult], items: &[Item]) -> Report {
        let protocols = summarize(results, items);
        let mut pairs = Vec::new();
        for (i, a) in protocols.iter().enumerate() {
            for b in &protocols[i + 1..] {
                pairs.push(paired(results, items, &a.protocol, &b.protocol));
            }
        }
        let mut ids: Vec<&str> = results.iter().map(|r| r.item_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        Report {
            benches,
            items: ids.len(),
            left_out: 0,
            budget: budget_table(&protocols),
            protocols,
            paired: pairs,
            timing: timing(results),
            controls: Controls::new(results, items),
            graded_by_tests: items
                .iter()
                .filter(|i| ids.binary_search(&i.id.as_str()).is_ok())
                .filter(|i| i.kind == moot_core::AnswerKind::Code && i.tests.is_some())
                .count(),
            fork: None,
        }
    }

    /// Whether any protocol ran more than one round (the accuracy-by-round plot has a line).
    pub fn has_rounds(&self) -> bool {
        self.protocols.iter().any(|p| p.round_accuracy.len() > 1)
    }

    /// The report as Markdown; `plots` are (caption, relative path) pairs embedded as images.
    pub fn markdown(&self, plots: &[(&str, &str)]) -> String {
        // Names come from the user (a benchmark, a dataset file) or the store: text, never markup.
        let md = moot_core::escape::markdown_inline;
        let mut out = String::new();
        for b in &self.benches {
            out.push_str(&format!(
                "Benchmark {}: {} of {} (seed {}{}), protocols {}{}\n",
                md(&b.name),
                plural(b.items, "item"),
                md(&b.dataset),
                b.seed,
                b.limit.map_or(String::new(), |l| format!(", limit {l}")),
                b.protocols
                    .iter()
                    .map(|p| md(p))
                    .collect::<Vec<_>>()
                    .join(", "),
                if b.unfinished > 0 {
                    format!(
                        " — {} unfinished and left out",
                        plural(b.unfinished, "debate")
                    )
                } else {
                    String::new()
                }
            ));
            if let Some(left_out) = &b.left_out {
                out.push_str(&format!(
                    "Of its dataset, {}; the JSON report lists them by id.\n",
                    md(&left_out_summary(left_out))
                ));
            }
        }
        if self.left_out > 0 {
            out.push_str(&format!(
                "\nOn the {} every protocol finished; {} more, not finished by every protocol, {} left out.\n",
                plural(self.items, "item"),
                plural(self.left_out, "item"),
                if self.left_out == 1 { "is" } else { "are" }
            ));
        }
        if self.graded_by_tests > 0 {
            out.push_str(&format!(
                "\nAccuracy on {} is pass@1: the chosen program ran with the item's own tests in the sandbox and passed every check.\n",
                plural(self.graded_by_tests, "code item")
            ));
        }
        out.push_str("\n| protocol | accuracy | 95% CI | no answer | unparsed responses (re-asked) | input tokens | output tokens (TC) | tokens per item | NComm | calls | cache hits |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
        for s in &self.protocols {
            out.push_str(&format!(
                "| {} | {}/{} = {:.3} | {:.3}–{:.3} | {} | {}/{} ({}) | {}{} | {} | {:.0} | {} | {} | {} |\n",
                md(&s.protocol),
                s.correct,
                s.items,
                s.accuracy,
                s.ci95.0,
                s.ci95.1,
                s.no_answer,
                s.parse_failures,
                s.responses,
                s.reasked,
                s.input_tokens,
                prompt_cache_note(s.cached_input_tokens, s.cache_write_input_tokens),
                s.output_tokens,
                mean_tokens(s),
                s.ncomm,
                s.calls,
                s.cache_hits
            ));
        }
        for s in self.protocols.iter().filter(|s| s.failed_calls > 0) {
            let agents: Vec<String> = s
                .failed_agents
                .iter()
                .map(|(id, debates)| format!("{} in {}", md(id), plural(*debates, "debate")))
                .collect();
            out.push_str(&format!(
                "\n{}: {} failed after their retries (no response); failing agents: {}. Their debates decided without them (`moot show` names each error).\n",
                md(&s.protocol),
                plural(s.failed_calls, "call"),
                agents.join(", ")
            ));
        }
        for s in self.protocols.iter().filter(|s| s.early_breaks.debates > 0) {
            let b = &s.early_breaks;
            out.push_str(&format!(
                "\n{}: the judge ended {} of {} early; {} and {} not made (about {} tokens at the mean debater call).\n",
                md(&s.protocol),
                plural(b.debates, "debate"),
                s.items,
                plural(b.rounds_saved, "round"),
                plural(b.calls_saved, "debater call"),
                b.tokens_saved_estimate
            ));
        }
        out.push_str("\nBy round (plurality accuracy; mean tokens per item through the round; answer entropy in bits; MADC gold log-likelihood, with the items where no agent held the gold answer):\n\n| protocol | accuracy | tokens | entropy | gold log-likelihood | flips right→wrong / wrong→right |\n|---|---|---|---|---|---|\n");
        for s in &self.protocols {
            let join = |v: Vec<String>| v.join(" → ");
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} / {} |\n",
                md(&s.protocol),
                join(s.round_accuracy.iter().map(|a| format!("{a:.3}")).collect()),
                join(s.round_tokens.iter().map(|t| format!("{t:.0}")).collect()),
                join(s.round_entropy.iter().map(|e| format!("{e:.2}")).collect()),
                join(
                    s.round_gold_log_likelihood
                        .iter()
                        .zip(&s.round_gold_absent)
                        .map(|(ll, &absent)| {
                            let ll = ll.map_or("–".to_string(), |l| format!("{l:.3}"));
                            if absent > 0 {
                                format!("{ll} ({absent} none)")
                            } else {
                                ll
                            }
                        })
                        .collect()
                ),
                s.flips_correct_to_incorrect,
                s.flips_incorrect_to_correct
            ));
        }
        if self.protocols.iter().any(|s| s.adoption.exposed > 0) {
            out.push_str("\nConformity (agent-rounds in which an agent had read a peer answer different from its own, every agent reading every other; exact for all-to-all protocols): how often it adopted a peer's different answer, kept its own, or moved to another:\n\n| protocol | exposed | adopted | kept | other | adoption rate |\n|---|---|---|---|---|---|\n");
            for s in self.protocols.iter().filter(|s| s.adoption.exposed > 0) {
                let a = s.adoption;
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} |\n",
                    md(&s.protocol),
                    a.exposed,
                    a.adopted,
                    a.kept,
                    a.other,
                    a.rate().map_or("–".into(), |r| format!("{r:.3}"))
                ));
            }
        }
        if let Some(first) = self.protocols.first() {
            out.push_str("\nEvery decision rule on the same debates (the same token cost per row):\n\n| protocol |");
            for r in &first.rules {
                out.push_str(&format!(" {} |", md(&r.rule)));
            }
            out.push_str(&format!("\n|---|{}\n", "---|".repeat(first.rules.len())));
            for s in &self.protocols {
                out.push_str(&format!("| {} |", md(&s.protocol)));
                for r in &first.rules {
                    let acc = s
                        .rules
                        .iter()
                        .find(|x| x.rule == r.rule)
                        .map_or("–".to_string(), |x| format!("{:.3}", x.accuracy));
                    out.push_str(&format!(" {acc} |"));
                }
                out.push('\n');
            }
        }
        if self.protocols.len() > 1 {
            out.push_str("\nAt equal token budgets (mean tokens per item; each protocol stopped after the last round that fits, answering with that round's plurality, or complete with its decision rule, marked ✓):\n\n| protocol |");
            for b in &self.budget.budgets {
                out.push_str(&format!(" ≤ {b:.0} |"));
            }
            out.push_str(&format!(
                "\n|---|{}\n",
                "---|".repeat(self.budget.budgets.len())
            ));
            for row in &self.budget.rows {
                out.push_str(&format!("| {} |", md(&row.protocol)));
                for cell in &row.cells {
                    match cell {
                        Some(p) if p.decided => out.push_str(&format!(" {:.3} ✓ |", p.accuracy)),
                        Some(p) => out.push_str(&format!(" {:.3} (r{}) |", p.accuracy, p.round)),
                        None => out.push_str(" – |"),
                    }
                }
                out.push('\n');
            }
        }
        if !self.paired.is_empty() {
            out.push_str("\nPaired on the same items (exact McNemar test on the discordant items):\n\n| first | second | both right | only first | only second | both wrong | McNemar p |\n|---|---|---|---|---|---|---|\n");
            for p in &self.paired {
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} | {:.4} |\n",
                    md(&p.a),
                    md(&p.b),
                    p.both_correct,
                    p.only_a,
                    p.only_b,
                    p.both_wrong,
                    p.p_value
                ));
            }
        }
        out.push_str(&self.controls.markdown());
        out.push_str("\nModel time (sum of call latencies, cache hits excluded):\n\n| protocol | seconds | per item |\n|---|---|---|\n");
        for t in &self.timing {
            out.push_str(&format!(
                "| {} | {:.1} | {:.1} |\n",
                md(&t.protocol),
                t.model_seconds,
                t.model_seconds_per_item
            ));
        }
        if let Some(fork) = &self.fork {
            out.push('\n');
            out.push_str(&fork.markdown());
        }
        for (caption, path) in plots {
            out.push_str(&format!("\n![{caption}]({path})\n"));
        }
        out
    }

    /// Accuracy against mean tokens per item: each protocol's cost curve.
    pub fn accuracy_vs_tokens_svg(&self) -> Result<String, PlotError> {
        let lines: Vec<Line> = self
            .protocols
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let points = cost_curve(s)
                    .iter()
                    .map(|p| (p.tokens, p.accuracy))
                    .collect();
                (s.protocol.clone(), i, points)
            })
            .collect();
        let max_tokens = lines
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|x| x.0))
            .fold(1.0f64, f64::max);
        plot(
            "Accuracy against tokens per item",
            "mean tokens per item (input + output)",
            0.0..max_tokens * 1.08,
            &lines,
        )
    }

    /// Plurality accuracy by round, for the protocols that ran more than one round.
    pub fn accuracy_vs_rounds_svg(&self) -> Result<String, PlotError> {
        let lines: Vec<Line> = self
            .protocols
            .iter()
            .enumerate()
            .filter(|(_, s)| s.round_accuracy.len() > 1)
            .map(|(i, s)| {
                let points = s
                    .round_accuracy
                    .iter()
                    .enumerate()
                    .map(|(r, &a)| (r as f64, a))
                    .collect();
                (s.protocol.clone(), i, points)
            })
            .collect();
        let rounds = lines
            .iter()
            .map(|(_, _, p)| p.len())
            .max()
            .unwrap_or(1)
            .max(2);
        // Rounds are whole numbers: each line is moved a little sideways from the others, so
        // that equal accuracies in a round are side by side rather than on top of each other.
        let n = lines.len();
        let lines: Vec<Line> = lines
            .into_iter()
            .enumerate()
            .map(|(k, (name, colour, points))| {
                let dodge = (k as f64 - (n as f64 - 1.0) / 2.0) * 0.03;
                let points = points.into_iter().map(|(x, y)| (x + dodge, y)).collect();
                (name, colour, points)
            })
            .collect();
        plot(
            "Plurality accuracy by round",
            "round",
            -0.2..(rounds - 1) as f64 + 0.2,
            &lines,
        )
    }
}

/// A protocol's line: its label, its colour (by its place in the report, so that it keeps its
/// colour from plot to plot) and its points.
type Line = (String, usize, Vec<(f64, f64)>);

/// Line colours that stay apart on white (Tableau 10); moot-sweep's plots use them too.
pub const COLOURS: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

/// The chart corner for the legend with the fewest points under it, so that it hides no
/// result: small models' accuracies sit low, where a fixed lower-right legend covered the
/// costliest protocols' points. Ties keep the order below (lower right first).
fn legend_corner(x_range: &std::ops::Range<f64>, lines: &[Line]) -> SeriesLabelPosition {
    let mid_x = (x_range.start + x_range.end) / 2.0;
    let mut counts = [0usize; 4];
    for (_, _, points) in lines {
        for &(x, y) in points {
            counts[usize::from(y >= 0.5) * 2 + usize::from(x < mid_x)] += 1;
        }
    }
    // Index: bit 1 = upper half, bit 0 = left half.
    let corners = [
        (0, SeriesLabelPosition::LowerRight),
        (2, SeriesLabelPosition::UpperRight),
        (1, SeriesLabelPosition::LowerLeft),
        (3, SeriesLabelPosition::UpperLeft),
    ];
    // `min_by_key` keeps the first of equal minima.
    corners
        .into_iter()
        .min_by_key(|(quadrant, _)| counts[*quadrant])
        .map_or(SeriesLabelPosition::LowerRight, |(_, corner)| corner)
}

/// A line chart of accuracy (0–1) against `x`, one line with markers per protocol.
fn plot(
    caption: &str,
    x_label: &str,
    x_range: std::ops::Range<f64>,
    lines: &[Line],
) -> Result<String, PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError(e.to_string());
    let corner = legend_corner(&x_range, lines);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 440)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(x_range, 0.0..1.0)
            .map_err(|e| err(&e))?;
        // Whole numbers only: tokens need no decimals, and rounds have none.
        let whole = |x: &f64| {
            if (x - x.round()).abs() < 1e-6 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_label_formatter(&whole)
            .x_desc(x_label)
            .y_desc("accuracy")
            .draw()
            .map_err(|e| err(&e))?;
        // Protocols whose points coincide (the same accuracy at the same cost, or in the same
        // round) must all stay visible: each line's markers are rings, the earlier lines'
        // wider, so that coinciding points show as concentric rings of their colours.
        let lines_drawn = lines.len();
        for (drawn, (name, colour_index, points)) in lines.iter().enumerate() {
            let radius = (4 + 2 * (lines_drawn - 1 - drawn) as i32).min(20);
            let (r, g, b) = COLOURS[colour_index % COLOURS.len()];
            let colour = RGBColor(r, g, b).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    colour.stroke_width(2),
                ))
                .map_err(|e| err(&e))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|&p| Circle::new(p, radius, colour.stroke_width(2))),
                )
                .map_err(|e| err(&e))?;
        }
        chart
            .configure_series_labels()
            .position(corner)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn left_out_items_are_summed_by_reason_with_grouped_digits() {
        let item = |id: &str, problem: &str| moot_store::LeftOutItem {
            id: id.into(),
            place: "f.jsonl line 1".into(),
            problem: problem.into(),
            message: "m".into(),
        };
        let left_out = moot_store::LeftOut {
            of: 2400,
            items: vec![
                item("a", "missing field `answer`"),
                item("b", "gold does not parse as numeric"),
                item("c", "gold does not parse as numeric"),
            ],
        };
        assert_eq!(
            left_out_summary(&left_out),
            "3 of 2,400 items left out: 2 gold does not parse as numeric, 1 missing field `answer`"
        );
    }

    /// A protocol over 10 items costing `total` tokens per item, with per-round pluralities.
    fn protocol(name: &str, total: f64, accuracy: f64, rounds: &[(f64, f64)]) -> ProtocolSummary {
        ProtocolSummary {
            protocol: name.to_string(),
            items: 10,
            correct: (accuracy * 10.0).round() as usize,
            accuracy,
            ci95: (0.0, 1.0),
            no_answer: 0,
            responses: 0,
            parse_failures: 0,
            reasked: 0,
            failed_calls: 0,
            failed_agents: Default::default(),
            input_tokens: (total * 10.0) as u64 / 2,
            cached_input_tokens: None,
            cache_write_input_tokens: None,
            output_tokens: (total * 10.0) as u64 / 2,
            ncomm: 0,
            calls: 0,
            cache_hits: 0,
            spent_input_tokens: 0,
            spent_output_tokens: 0,
            round_accuracy: rounds.iter().map(|r| r.1).collect(),
            round_entropy: vec![0.0; rounds.len()],
            round_gold_log_likelihood: vec![None; rounds.len()],
            round_gold_absent: vec![0; rounds.len()],
            round_tokens: rounds.iter().map(|r| r.0).collect(),
            flips_correct_to_incorrect: 0,
            flips_incorrect_to_correct: 0,
            adoption: Default::default(),
            round_gold_share: vec![],
            rules: Vec::new(),
            early_breaks: Default::default(),
        }
    }

    #[test]
    fn a_cost_curve_has_a_point_per_round_and_ends_with_the_decision() {
        let som = protocol(
            "som",
            900.0,
            0.7,
            &[(300.0, 0.5), (600.0, 0.6), (900.0, 0.65)],
        );
        let curve = cost_curve(&som);
        let points: Vec<(usize, f64, f64, bool)> = curve
            .iter()
            .map(|p| (p.round, p.tokens, p.accuracy, p.decided))
            .collect();
        assert_eq!(
            points,
            [
                (0, 300.0, 0.5, false),
                (1, 600.0, 0.6, false),
                // The last round answers with the protocol's rule, not its plurality.
                (2, 900.0, 0.7, true)
            ]
        );
        let cot = protocol("cot", 100.0, 0.4, &[(100.0, 0.4)]);
        assert_eq!(cost_curve(&cot).len(), 1);
        assert!(cost_curve(&cot)[0].decided);
    }

    #[test]
    fn protocols_are_compared_at_each_others_full_cost() {
        let cot = protocol("cot", 100.0, 0.4, &[(100.0, 0.4)]);
        let sc = protocol("cot-sc", 300.0, 0.5, &[(300.0, 0.5)]);
        let som = protocol(
            "som",
            900.0,
            0.7,
            &[(300.0, 0.5), (600.0, 0.6), (900.0, 0.65)],
        );
        let table = budget_table(&[cot, sc, som]);
        assert_eq!(table.budgets, [100.0, 300.0, 900.0]);
        let cells = |i: usize| -> Vec<Option<(usize, f64, bool)>> {
            table.rows[i]
                .cells
                .iter()
                .map(|c| c.map(|p| (p.round, p.accuracy, p.decided)))
                .collect()
        };
        assert_eq!(
            cells(0),
            [
                Some((0, 0.4, true)),
                Some((0, 0.4, true)),
                Some((0, 0.4, true))
            ]
        );
        assert_eq!(cells(1), [None, Some((0, 0.5, true)), Some((0, 0.5, true))]);
        // At cot-sc's cost som is its round 0; at its own, complete.
        assert_eq!(
            cells(2),
            [None, Some((0, 0.5, false)), Some((2, 0.7, true))]
        );
    }

    /// A report of `protocols` alone.
    fn report(protocols: Vec<ProtocolSummary>) -> Report {
        Report {
            benches: Vec::new(),
            items: 10,
            left_out: 0,
            protocols,
            paired: Vec::new(),
            budget: BudgetTable {
                budgets: Vec::new(),
                rows: Vec::new(),
            },
            timing: Vec::new(),
            graded_by_tests: 0,
            controls: Controls::default(),
            fork: None,
        }
    }

    #[test]
    fn the_input_tokens_say_how_many_came_from_prompt_caches() {
        let paid = ProtocolSummary {
            cached_input_tokens: Some(3000),
            cache_write_input_tokens: Some(500),
            ..protocol("som", 900.0, 0.7, &[(900.0, 0.7)])
        };
        let local = ProtocolSummary {
            cached_input_tokens: Some(0),
            ..protocol("cot", 900.0, 0.4, &[(900.0, 0.4)])
        };
        let unsaid = protocol("mad", 900.0, 0.4, &[(900.0, 0.4)]);
        let md = report(vec![paid, local, unsaid]).markdown(&[]);
        assert!(
            md.contains("| 4500 (3000 from the prompt cache, 500 written to it) | 4500 |"),
            "{md}"
        );
        assert_eq!(md.matches("| 4500 | 4500 |").count(), 2, "{md}");
    }

    #[test]
    fn plots_have_a_line_per_protocol_in_stable_colours() {
        let report = report(vec![
            protocol("cot", 100.0, 0.4, &[(100.0, 0.4)]),
            protocol("som <&>", 900.0, 0.7, &[(300.0, 0.5), (900.0, 0.6)]),
        ]);
        let tokens = report.accuracy_vs_tokens_svg().unwrap();
        assert!(tokens.contains("som &lt;&amp;&gt;"), "labels are escaped");
        assert_eq!(tokens.matches("<circle").count(), 3);
        assert!(report.has_rounds());
        let rounds = report.accuracy_vs_rounds_svg().unwrap();
        assert_eq!(rounds.matches("<circle").count(), 2);
        // som keeps the second colour though it is the only line of the rounds plot.
        let second = format!(
            "#{:02X}{:02X}{:02X}",
            COLOURS[1].0, COLOURS[1].1, COLOURS[1].2
        );
        assert!(tokens.contains(&second) && rounds.contains(&second));
        let first = format!(
            "#{:02X}{:02X}{:02X}",
            COLOURS[0].0, COLOURS[0].1, COLOURS[0].2
        );
        assert!(!rounds.contains(&first));
    }

    #[test]
    fn coinciding_points_of_two_protocols_both_stay_visible() {
        let same = &[(100.0, 0.5), (200.0, 0.6)];
        let report = report(vec![
            protocol("a", 200.0, 0.6, same),
            protocol("b", 200.0, 0.6, same),
        ]);
        for svg in [
            report.accuracy_vs_tokens_svg().unwrap(),
            report.accuracy_vs_rounds_svg().unwrap(),
        ] {
            // Every marker is a ring (no fill hides what is under it), and the two lines'
            // rings differ in size.
            let circles: Vec<&str> = svg.split("<circle").skip(1).collect();
            assert!(!circles.is_empty());
            assert!(circles.iter().all(|c| c.contains("fill=\"none\"")), "{svg}");
            let radius = |c: &str| {
                c.split("r=\"")
                    .nth(1)
                    .and_then(|r| r.split('"').next())
                    .map(str::to_string)
            };
            let radii: std::collections::BTreeSet<_> =
                circles.iter().filter_map(|c| radius(c)).collect();
            assert_eq!(radii.len(), 2, "{radii:?}");
        }
    }

    #[test]
    fn legend_goes_to_the_corner_with_fewest_points() {
        let line = |points: &[(f64, f64)]| -> Line { (String::new(), 0, points.to_vec()) };
        let corner = |points: &[(f64, f64)]| legend_corner(&(0.0..100.0), &[line(points)]);
        use SeriesLabelPosition::*;
        // Nothing plotted, or points everywhere alike: the usual lower right.
        assert_eq!(corner(&[]), LowerRight);
        assert_eq!(
            corner(&[(10.0, 0.2), (90.0, 0.2), (10.0, 0.8), (90.0, 0.8)]),
            LowerRight
        );
        // A weak model's results all sit low (the GSM8K report on a 0.5B model): upper right.
        assert_eq!(
            corner(&[(10.0, 0.23), (50.0, 0.2), (90.0, 0.13)]),
            UpperRight
        );
        // Low on the right, high on the left: lower left is the only free corner.
        assert_eq!(corner(&[(90.0, 0.1), (10.0, 0.9), (80.0, 0.7)]), LowerLeft);
        // Everything but the upper left is taken.
        assert_eq!(corner(&[(90.0, 0.1), (10.0, 0.1), (80.0, 0.7)]), UpperLeft);
    }
}
