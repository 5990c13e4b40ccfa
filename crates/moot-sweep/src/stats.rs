//! Statistics per cell: each arm's accuracy with a 95% Wilson interval, the compared pair's
//! difference, its discordant seeds and the exact McNemar p-value (moot-eval's, as `moot bench`
//! reports them); and the sweep's verdicts, cell by cell and over the grid.

use moot_eval::protocol_totals::{mcnemar_exact, wilson};

use crate::run::CellData;
pub use crate::spec::number;
use crate::spec::Plan;

/// The significance level of the verdicts.
pub const ALPHA: f64 = 0.05;

/// One arm in one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmStats {
    pub correct: usize,
    pub debates: usize,
    pub accuracy: f64,
    /// 95% Wilson interval of the accuracy.
    pub ci95: (f64, f64),
    /// Mean NComm and calls per debate.
    pub ncomm: f64,
    pub calls: f64,
}

/// One cell: its coordinates, every arm, and the compared pair.
#[derive(Debug, Clone, PartialEq)]
pub struct CellStats {
    pub x: f64,
    pub y: Option<f64>,
    pub arms: Vec<ArmStats>,
    /// Accuracy of the first compared arm minus the second's.
    pub difference: f64,
    /// Seeds only the first arm decided right, and only the second.
    pub only_first: usize,
    pub only_second: usize,
    /// Exact two-sided McNemar p-value of the discordant seeds.
    pub p_value: f64,
}

/// What a cell says about the compared pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The first arm is more accurate, p < [`ALPHA`].
    Better,
    /// The first arm is less accurate, p < [`ALPHA`].
    Worse,
    /// p ≥ [`ALPHA`].
    Indistinguishable,
}

impl CellStats {
    pub fn new(data: &CellData, compare: (usize, usize)) -> CellStats {
        let arms: Vec<ArmStats> = data
            .arms
            .iter()
            .map(|a| {
                let debates = a.correct.len();
                let correct = a.correct.iter().filter(|&&c| c).count();
                let per = |total: u64| {
                    if debates == 0 {
                        0.0
                    } else {
                        total as f64 / debates as f64
                    }
                };
                ArmStats {
                    correct,
                    debates,
                    accuracy: if debates == 0 {
                        0.0
                    } else {
                        correct as f64 / debates as f64
                    },
                    ci95: wilson(correct, debates),
                    ncomm: per(a.ncomm),
                    calls: per(a.calls),
                }
            })
            .collect();
        let (first, second) = (&data.arms[compare.0], &data.arms[compare.1]);
        let pairs = first.correct.iter().zip(&second.correct);
        let only_first = pairs.clone().filter(|(a, b)| **a && !**b).count();
        let only_second = pairs.filter(|(a, b)| !**a && **b).count();
        CellStats {
            x: data.x,
            y: data.y,
            difference: arms[compare.0].accuracy - arms[compare.1].accuracy,
            arms,
            only_first,
            only_second,
            p_value: mcnemar_exact(only_first, only_second),
        }
    }

    pub fn significant(&self) -> bool {
        self.p_value < ALPHA
    }

    pub fn verdict(&self) -> Verdict {
        if !self.significant() || self.only_first == self.only_second {
            Verdict::Indistinguishable
        } else if self.only_first > self.only_second {
            Verdict::Better
        } else {
            Verdict::Worse
        }
    }
}

/// Every cell's statistics, in the plan's order.
pub fn cell_stats(plan: &Plan, data: &[CellData]) -> Vec<CellStats> {
    data.iter()
        .map(|d| CellStats::new(d, plan.compare))
        .collect()
}

/// Holm's step-down procedure: which of `p_values` stay significant at `alpha` when all of them
/// are tested together (family-wise error rate).
pub fn holm(p_values: &[f64], alpha: f64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..p_values.len()).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let m = p_values.len();
    let mut keep = vec![false; m];
    for (rank, &i) in order.iter().enumerate() {
        if p_values[i] < alpha / (m - rank) as f64 {
            keep[i] = true;
        } else {
            break;
        }
    }
    keep
}

/// Runs of consecutive indices, as `a to b` (or `a` alone) over `values`.
fn runs(indices: &[usize], values: &[f64]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let mut j = i;
        while j + 1 < indices.len() && indices[j + 1] == indices[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            number(values[indices[i]])
        } else {
            format!(
                "{} to {}",
                number(values[indices[i]]),
                number(values[indices[j]])
            )
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// Where the cells of one verdict lie: x runs, per y value on a heat map.
fn places(plan: &Plan, cells: &[&(usize, &CellStats)]) -> String {
    let xi = |i: usize| plan.cells[i].xi;
    match &plan.y {
        None => {
            let xs: Vec<usize> = cells.iter().map(|(i, _)| xi(*i)).collect();
            format!("{} {}", plan.x.name, runs(&xs, &plan.x.values))
        }
        Some(y) => {
            let mut parts = Vec::new();
            for (yi, yv) in y.values.iter().enumerate() {
                let xs: Vec<usize> = cells
                    .iter()
                    .filter(|(i, _)| plan.cells[*i].yi == Some(yi))
                    .map(|(i, _)| xi(*i))
                    .collect();
                if xs.is_empty() {
                    continue;
                }
                let all = xs.len() == plan.x.values.len();
                parts.push(format!(
                    "{} = {}: {}",
                    y.name,
                    number(*yv),
                    if all {
                        format!("every {}", plan.x.name)
                    } else {
                        format!("{} {}", plan.x.name, runs(&xs, &plan.x.values))
                    }
                ));
            }
            parts.join("; ")
        }
    }
}

/// The summary paragraph, computed from the cells.
pub fn summary(plan: &Plan, stats: &[CellStats]) -> String {
    let first = &plan.arms[plan.compare.0].label;
    let second = &plan.arms[plan.compare.1].label;
    let n = stats.len();
    let indexed: Vec<(usize, &CellStats)> = stats.iter().enumerate().collect();
    let of = |v: Verdict| -> Vec<&(usize, &CellStats)> {
        indexed.iter().filter(|(_, c)| c.verdict() == v).collect()
    };
    let (better, worse, same) = (
        of(Verdict::Better),
        of(Verdict::Worse),
        of(Verdict::Indistinguishable),
    );
    let cells = |k: usize| moot_core::text::plural(k, "cell");
    let grid = match &plan.y {
        Some(y) => format!(
            "{} ({} {} × {} {} values)",
            cells(n),
            plan.x.values.len(),
            plan.x.name,
            y.values.len(),
            y.name
        ),
        None => format!("{} ({} values)", cells(n), plan.x.name),
    };
    let mut s = format!(
        "Over {grid} of {} paired debates each, `{first}` is significantly more accurate than \
         `{second}` (exact McNemar p < {ALPHA}, uncorrected) in {}",
        plan.debates,
        cells(better.len()),
    );
    if !better.is_empty() {
        s.push_str(&format!(" ({})", places(plan, &better)));
    }
    s.push_str(&format!(
        ", significantly less accurate in {}",
        cells(worse.len())
    ));
    if !worse.is_empty() {
        s.push_str(&format!(" ({})", places(plan, &worse)));
    }
    // The indistinguishable cells are placed only when they are the minority; otherwise they
    // are simply the rest.
    if !same.is_empty() && same.len() < n && 2 * same.len() <= n {
        s.push_str(&format!(
            ", and not distinguishable in {} ({})",
            cells(same.len()),
            places(plan, &same)
        ));
    } else if same.len() == n {
        s.push_str(&format!(", and not distinguishable in all {}", cells(n)));
    } else {
        s.push_str(&format!(
            ", and not distinguishable in the other {}",
            cells(same.len())
        ));
    }
    s.push('.');
    if n > 1 {
        let p: Vec<f64> = stats.iter().map(|c| c.p_value).collect();
        let kept = holm(&p, ALPHA);
        let count = |v: Verdict| {
            stats
                .iter()
                .zip(&kept)
                .filter(|(c, k)| **k && c.verdict() == v)
                .count()
        };
        s.push_str(&format!(
            " Corrected for the {n} tests (Holm), {} better and {} worse remain.",
            count(Verdict::Better),
            count(Verdict::Worse)
        ));
    }
    // The first cell of the lowest and of the highest difference.
    let lo = stats
        .iter()
        .reduce(|a, b| if b.difference < a.difference { b } else { a });
    let hi = stats
        .iter()
        .reduce(|a, b| if b.difference > a.difference { b } else { a });
    if let (Some(lo), Some(hi)) = (lo, hi) {
        s.push_str(&format!(
            " The difference ranges from {:+.3} ({}) to {:+.3} ({}).",
            lo.difference,
            plan.coordinates(lo.x, lo.y),
            hi.difference,
            plan.coordinates(hi.x, hi.y)
        ));
    }
    s
}

/// A p-value as reports print it: three decimals, or scientific below 0.001.
pub fn p_value(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::ArmData;
    use crate::spec::SweepSpec;

    fn arm(correct: &[bool]) -> ArmData {
        ArmData {
            correct: correct.to_vec(),
            ncomm: 10 * correct.len() as u64,
            calls: 3 * correct.len() as u64,
        }
    }

    fn cell(first: &[bool], second: &[bool]) -> CellData {
        CellData {
            x: 1.0,
            y: None,
            arms: vec![arm(first), arm(second)],
        }
    }

    #[test]
    fn a_cell_counts_discordant_seeds_and_tests_them() {
        let t = true;
        let f = false;
        // Seeds: both right, only first ×3, only second ×1, both wrong.
        let c = CellStats::new(&cell(&[t, t, t, t, f, f], &[t, f, f, f, t, f]), (0, 1));
        assert_eq!((c.only_first, c.only_second), (3, 1));
        assert_eq!(c.arms[0].correct, 4);
        assert!((c.arms[0].accuracy - 4.0 / 6.0).abs() < 1e-12);
        assert!((c.difference - 2.0 / 6.0).abs() < 1e-12);
        // Exact two-sided binomial: 2·P(X ≤ 1 | n = 4, ½) = 2·5/16.
        assert!((c.p_value - 0.625).abs() < 1e-12);
        assert_eq!(c.arms[0].ci95, wilson(4, 6));
        assert_eq!((c.arms[0].ncomm, c.arms[0].calls), (10.0, 3.0));
        assert_eq!(c.verdict(), Verdict::Indistinguishable);
        // Reversed, the difference changes sign and the counts swap.
        let r = CellStats::new(&cell(&[t, t, t, t, f, f], &[t, f, f, f, t, f]), (1, 0));
        assert_eq!((r.only_first, r.only_second), (1, 3));
        assert!((r.difference + c.difference).abs() < 1e-12);
    }

    #[test]
    fn verdicts_follow_the_sign_of_a_significant_difference() {
        let mut a = vec![true; 20];
        let b = vec![false; 20];
        let better = CellStats::new(&cell(&a, &b), (0, 1));
        assert!(better.p_value < 1e-5);
        assert_eq!(better.verdict(), Verdict::Better);
        assert_eq!(
            CellStats::new(&cell(&b, &a), (0, 1)).verdict(),
            Verdict::Worse
        );
        a.truncate(0);
        let empty = CellStats::new(&cell(&a, &a), (0, 1));
        assert_eq!(empty.p_value, 1.0);
        assert_eq!(empty.verdict(), Verdict::Indistinguishable);
    }

    #[test]
    fn holm_rejects_step_down_until_the_first_acceptance() {
        // Thresholds 0.05/4, 0.05/3, 0.05/2, 0.05/1.
        assert_eq!(
            holm(&[0.01, 0.04, 0.012, 0.3], 0.05),
            [true, false, true, false]
        );
        assert_eq!(
            holm(&[0.001, 0.02, 0.03, 0.04], 0.05),
            [true, false, false, false]
        );
        assert_eq!(holm(&[], 0.05), Vec::<bool>::new());
    }

    #[test]
    fn runs_join_consecutive_axis_values() {
        let values = [-3.0, -2.0, -1.0, 0.0, 1.0, 2.5];
        assert_eq!(runs(&[0, 1, 2, 4], &values), "-3 to -1, 1");
        assert_eq!(runs(&[5], &values), "2.5");
        assert_eq!(number(-0.0), "0");
    }

    #[test]
    fn the_summary_counts_and_places_each_verdict() {
        let text = r#"
title = "t"
debates = 20
rounds = 1
agents = 3
[[arms]]
label = "a"
protocol = "som"
[[arms]]
label = "b"
protocol = "free-mad-n"
[x]
param = "beta_conform"
values = [0, 1, 2]
[y]
param = "accuracy"
values = [0.4, 0.6]
"#;
        let plan = SweepSpec::parse(text, "t").unwrap().plan(None).unwrap();
        let right = vec![true; 20];
        let wrong = vec![false; 20];
        let mut data = Vec::new();
        for c in &plan.cells {
            // a better at x = 1, 2 for y = 0.4; worse at x = 0, y = 0.6; else the same.
            let (a, b) = match (c.xi, c.yi) {
                (1 | 2, Some(0)) => (&right, &wrong),
                (0, Some(1)) => (&wrong, &right),
                _ => (&right, &right),
            };
            data.push(CellData {
                x: c.x,
                y: c.y,
                arms: vec![arm(a), arm(b)],
            });
        }
        let stats = cell_stats(&plan, &data);
        let s = summary(&plan, &stats);
        assert!(s.starts_with("Over 6 cells (3 beta_conform × 2 accuracy values) of 20 paired debates each, `a` is significantly more accurate than `b`"), "{s}");
        assert!(
            s.contains("in 2 cells (accuracy = 0.4: beta_conform 1 to 2)"),
            "{s}"
        );
        assert!(
            s.contains("less accurate in 1 cell (accuracy = 0.6: beta_conform 0)"),
            "{s}"
        );
        assert!(s.contains("not distinguishable in 3 cells (accuracy = 0.4: beta_conform 0; accuracy = 0.6: beta_conform 1 to 2)"), "{s}");
        assert!(s.contains("Holm), 2 better and 1 worse remain"), "{s}");
        assert!(s.contains("from -1.000 (beta_conform = 0, accuracy = 0.6) to +1.000 (beta_conform = 1, accuracy = 0.4)"), "{s}");
    }
}
