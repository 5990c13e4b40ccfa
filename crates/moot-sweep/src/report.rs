//! The sweep's outputs: a Markdown report (title, command, summary, one row per cell, the spec),
//! the table as CSV, and the plot as SVG.

use std::path::{Path, PathBuf};

use crate::error::SweepError;
use crate::run::CellData;
use crate::spec::{Plan, GOLD, QUESTION};
use crate::stats::{cell_stats, number, p_value, summary, CellStats};
use crate::svg;

/// A finished sweep, ready to write.
#[derive(Debug, Clone)]
pub struct SweepReport {
    pub plan: Plan,
    pub stats: Vec<CellStats>,
    /// The command that ran it, as typed.
    pub command: String,
    /// The spec file's text, echoed in the report.
    pub spec_text: String,
}

/// The paths [`SweepReport::write`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub markdown: PathBuf,
    pub csv: PathBuf,
    pub svg: PathBuf,
}

impl SweepReport {
    pub fn new(plan: Plan, data: &[CellData], command: String, spec_text: String) -> SweepReport {
        let stats = cell_stats(&plan, data);
        SweepReport {
            plan,
            stats,
            command,
            spec_text,
        }
    }

    fn first(&self) -> &str {
        &self.plan.arms[self.plan.compare.0].label
    }

    fn second(&self) -> &str {
        &self.plan.arms[self.plan.compare.1].label
    }

    /// The summary paragraph: in how many cells the first arm is significantly better, worse
    /// or indistinguishable, and where.
    pub fn summary(&self) -> String {
        summary(&self.plan, &self.stats)
    }

    /// The Markdown report; `svg_name` is the plot's file name beside it.
    pub fn markdown(&self, svg_name: &str) -> String {
        let plan = &self.plan;
        // The title, names and the command hold the user's words and paths: text, never markup.
        let md = moot_core::escape::markdown_inline;
        let mut out = format!(
            "# {}\n\n{}\n",
            moot_core::escape::markdown_inline(&plan.title),
            moot_core::escape::markdown_fenced(&self.command, "sh")
        );
        let debates = plan.total_debates();
        out.push_str(&format!(
            "{} × {} seeded debates (seeds 0–{}, the same in every cell and arm, so every \
             comparison is paired): {} debates in all. The simulated agents do not read the \
             question; every debate asks \"{QUESTION}\" (gold {GOLD}), and only the parameters \
             decide who is right. Agent `i` of debate `s` has model seed `100·s + i`.\n\n",
            moot_core::text::plural(plan.cells.len(), "cell"),
            plan.debates,
            plan.debates - 1,
            debates,
        ));
        out.push_str("| arm | protocol | rule | options | mean NComm | mean calls |\n|---|---|---|---|---|---|\n");
        for (a, arm) in plan.arms.iter().enumerate() {
            let mean = |f: fn(&crate::stats::ArmStats) -> f64| {
                self.stats.iter().map(|c| f(&c.arms[a])).sum::<f64>() / self.stats.len() as f64
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {:.1} | {:.1} |\n",
                md(&arm.label),
                md(&arm.protocol),
                md(arm.rule),
                options_text(&arm.options),
                mean(|s| s.ncomm),
                mean(|s| s.calls),
            ));
        }
        out.push_str(&format!(
            "\n(NComm and calls are per debate, averaged over the cells; per cell in the CSV.)\n\n\
             ## Summary\n\n{}\n\n## Cells\n\n",
            summary(plan, &self.stats)
        ));
        out.push_str(&format!(
            "Accuracy is the share of seeds whose decision is gold; Δ = {} − {}; p is the \
             exact McNemar p-value of the discordant seeds (**bold**: p < {}, uncorrected). 95% \
             Wilson intervals are in the CSV.\n\n",
            moot_core::escape::markdown_code(self.first()),
            moot_core::escape::markdown_code(self.second()),
            crate::stats::ALPHA
        ));
        let mut header = vec![plan.x.name.clone()];
        if let Some(y) = &plan.y {
            header.push(y.name.clone());
        }
        header.extend(plan.arms.iter().map(|a| a.label.clone()));
        header.push("Δ".into());
        header.push(format!("only {}", self.first()));
        header.push(format!("only {}", self.second()));
        header.push("p".into());
        let header: Vec<String> = header.iter().map(|h| md(h)).collect();
        out.push_str(&format!("| {} |\n", header.join(" | ")));
        out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
        for c in &self.stats {
            let mut row = vec![number(c.x)];
            if let Some(v) = c.y {
                row.push(number(v));
            }
            row.extend(c.arms.iter().map(|a| format!("{:.3}", a.accuracy)));
            row.push(format!("{:+.3}", c.difference));
            row.push(c.only_first.to_string());
            row.push(c.only_second.to_string());
            let p = p_value(c.p_value);
            row.push(if c.significant() {
                format!("**{p}**")
            } else {
                p
            });
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        let caption = match &plan.y {
            Some(y) => format!(
                "{} − {} over {} and {}",
                self.first(),
                self.second(),
                plan.x.name,
                y.name
            ),
            None => format!("accuracy against {}", plan.x.name),
        };
        out.push_str(&format!(
            "\n![{caption}]({svg_name})\n\n## Spec\n\n```toml\n"
        ));
        out.push_str(self.spec_text.trim_end());
        out.push_str("\n```\n");
        out
    }

    /// The table as CSV: one row per cell, every arm's counts, accuracy, interval and costs.
    pub fn csv(&self) -> Result<String, SweepError> {
        let plan = &self.plan;
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header = vec![plan.x.name.clone()];
        if let Some(y) = &plan.y {
            header.push(y.name.clone());
        }
        header.push("debates".into());
        for a in &plan.arms {
            for field in ["correct", "accuracy", "ci_low", "ci_high", "ncomm", "calls"] {
                header.push(format!("{}_{field}", a.label));
            }
        }
        for h in ["difference", "only_first", "only_second", "p_value"] {
            header.push(h.into());
        }
        w.write_record(&header)?;
        for c in &self.stats {
            let mut row = vec![number(c.x)];
            if let Some(v) = c.y {
                row.push(number(v));
            }
            row.push(plan.debates.to_string());
            for a in &c.arms {
                row.push(a.correct.to_string());
                row.push(format!("{:.6}", a.accuracy));
                row.push(format!("{:.6}", a.ci95.0));
                row.push(format!("{:.6}", a.ci95.1));
                row.push(format!("{:.3}", a.ncomm));
                row.push(format!("{:.3}", a.calls));
            }
            row.push(format!("{:.6}", c.difference));
            row.push(c.only_first.to_string());
            row.push(c.only_second.to_string());
            row.push(format!("{}", c.p_value));
            w.write_record(&row)?;
        }
        let bytes = w
            .into_inner()
            .map_err(|e| SweepError::Plot(format!("csv buffer: {e}")))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    pub fn svg(&self) -> Result<String, SweepError> {
        svg::plot(&self.plan, &self.stats)
    }

    /// Writes `dir/<stem>.md`, `.csv` and `.svg` (creating `dir`).
    pub fn write(&self, dir: &Path, stem: &str) -> Result<Written, SweepError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SweepError::Write { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let written = Written {
            markdown: dir.join(format!("{stem}.md")),
            csv: dir.join(format!("{stem}.csv")),
            svg: dir.join(format!("{stem}.svg")),
        };
        let svg_name = format!("{stem}.svg");
        moot_files::write_output(&written.svg, self.svg()?)?;
        moot_files::write_output(&written.csv, self.csv()?)?;
        moot_files::write_output(&written.markdown, self.markdown(&svg_name))?;
        Ok(written)
    }
}

/// Protocol options as the spec writes them (`{ masking = "objective" }`), or `–` for none;
/// fault rates left at their defaults are left out.
fn options_text(options: &moot_core::protocol::ProtocolOptions) -> String {
    let defaults = toml::Table::try_from(moot_core::faults::Faults::default()).unwrap_or_default();
    let table = toml::Table::try_from(options).map(|mut t| {
        if let Some(toml::Value::Table(faults)) = t.get_mut("faults") {
            faults.retain(|k, v| defaults.get(k) != Some(v));
            if faults.is_empty() {
                t.remove("faults");
            }
        }
        t
    });
    match table {
        Ok(t) if t.is_empty() => "–".into(),
        Ok(t) => {
            let inline: String = toml::Value::Table(t).to_string();
            // A code span that no backtick in a value can close.
            moot_core::escape::markdown_code(inline.trim())
        }
        Err(_) => "?".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::ArmData;
    use crate::spec::SweepSpec;

    const SPEC: &str = r#"title = "Two arms"
debates = 4
rounds = 1
agents = 3
[[arms]]
label = "som"
protocol = "som"
rule = "majority-last"
[[arms]]
label = "cut"
protocol = "free-mad-n"
options = { faults = { cut_off = 0.3 } }
[x]
param = "beta_conform"
values = [0, 2]
"#;

    fn report() -> SweepReport {
        let plan = SweepSpec::parse(SPEC, "t").unwrap().plan(None).unwrap();
        let data: Vec<CellData> = plan
            .cells
            .iter()
            .map(|c| CellData {
                x: c.x,
                y: c.y,
                arms: vec![
                    ArmData {
                        correct: vec![true, true, true, false],
                        ncomm: 24,
                        calls: 36,
                    },
                    ArmData {
                        correct: vec![true, false, false, false],
                        ncomm: 8,
                        calls: 36,
                    },
                ],
            })
            .collect();
        SweepReport::new(plan, &data, "moot sweep t.toml --out o".into(), SPEC.into())
    }

    #[test]
    fn the_markdown_has_the_command_a_row_per_cell_the_plot_and_the_spec() {
        let md = report().markdown("t.svg");
        assert!(
            md.starts_with("# Two arms\n\n```sh\nmoot sweep t.toml --out o\n```"),
            "{md}"
        );
        assert!(
            md.contains("| beta_conform | som | cut | Δ | only som | only cut | p |"),
            "{md}"
        );
        assert!(
            md.contains("| 0 | 0.750 | 0.250 | +0.500 | 2 | 0 | 0.500 |"),
            "{md}"
        );
        assert!(md.contains("| 2 | 0.750 | 0.250 |"), "{md}");
        assert!(
            md.contains(
                "| cut | free-mad-n | free-mad | `{ faults = { cut_off = 0.3 } }` | 2.0 | 9.0 |"
            ),
            "{md}"
        );
        assert!(md.contains("![accuracy against beta_conform](t.svg)"));
        assert!(md.contains("```toml\ntitle = \"Two arms\""));
        assert!(md.contains("## Summary\n\nOver 2 cells"));
        assert!(
            md.contains("and not distinguishable in all 2 cells."),
            "{md}"
        );
    }

    #[test]
    fn the_csv_has_a_header_and_a_row_per_cell() {
        let csv = report().csv().unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("beta_conform,debates,som_correct,som_accuracy,som_ci_low,som_ci_high,som_ncomm,som_calls,cut_correct"), "{}", lines[0]);
        assert!(lines[0].ends_with("difference,only_first,only_second,p_value"));
        assert!(lines[1].starts_with("0,4,3,0.750000,"), "{}", lines[1]);
        assert!(lines[2].starts_with("2,4,"), "{}", lines[2]);
    }

    #[test]
    fn writing_creates_the_three_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("out");
        let written = report().write(&dir, "t").unwrap();
        for p in [&written.markdown, &written.csv, &written.svg] {
            assert!(p.is_file(), "{}", p.display());
        }
        assert_eq!(written.markdown, dir.join("t.md"));
    }

    #[test]
    fn p_values_keep_their_precision() {
        assert_eq!(p_value(0.04321), "0.043");
        assert_eq!(p_value(0.00012), "1.2e-4");
        assert_eq!(p_value(1.0), "1.000");
    }
}
