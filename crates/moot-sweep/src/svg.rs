//! The sweep's plot: with a y axis, a heat map of the compared pair's difference; without, each
//! arm's accuracy against x with 95% whiskers.
//!
//! The line plot is drawn with plotters in the style of moot-eval's report plots (720×440,
//! Tableau colours, markers, a legend). The heat map is written by hand: plotters has no colour
//! bar, and writing the grid directly gives each cell a tooltip and a class (`cell`, `mark`)
//! that tests and readers can count.

// Line colours: moot-eval's, so that a sweep's plots look like a report's.
use moot_eval::report::COLOURS;
use plotters::prelude::*;

use crate::error::SweepError;
use crate::spec::Plan;
use crate::stats::{number, CellStats, ALPHA};

/// The plot for `plan`: a heat map when it has a y axis, else a line plot.
pub fn plot(plan: &Plan, stats: &[CellStats]) -> Result<String, SweepError> {
    match plan.y {
        Some(_) => Ok(heat_map(plan, stats)),
        None => line_plot(plan, stats),
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Diverging colour of `t` in [−1, 1]: red (the second arm better) through near-white to blue
/// (the first arm better), ColorBrewer's RdBu ends.
pub fn diverging(t: f64) -> (u8, u8, u8) {
    let t = if t.is_finite() {
        t.clamp(-1.0, 1.0)
    } else {
        0.0
    };
    let mid = (247.0, 247.0, 247.0);
    let end = if t >= 0.0 {
        (33.0, 102.0, 172.0)
    } else {
        (178.0, 24.0, 43.0)
    };
    let a = t.abs();
    let mix = |m: f64, e: f64| (m + (e - m) * a).round() as u8;
    (mix(mid.0, end.0), mix(mid.1, end.1), mix(mid.2, end.2))
}

/// The colour scale's half-range: the largest |difference| rounded up to 0.05 (at least 0.05).
fn scale(stats: &[CellStats]) -> f64 {
    let max = stats
        .iter()
        .map(|c| c.difference.abs())
        .filter(|d| d.is_finite())
        .fold(0.0, f64::max);
    ((max / 0.05).ceil() * 0.05).max(0.05)
}

/// The heat map of the difference (first arm minus second) over x and y.
pub fn heat_map(plan: &Plan, stats: &[CellStats]) -> String {
    let Some(y) = &plan.y else {
        return String::new();
    };
    let first = &plan.arms[plan.compare.0].label;
    let second = &plan.arms[plan.compare.1].label;
    let (nx, ny) = (plan.x.values.len(), y.values.len());
    let cw = (600.0 / nx as f64).clamp(28.0, 80.0);
    let ch = (320.0 / ny as f64).clamp(22.0, 60.0);
    let (left, top) = (110.0, 64.0);
    let (pw, ph) = (cw * nx as f64, ch * ny as f64);
    let legend_x = left + pw + 36.0;
    let bar_h = 200.0;
    let width = (legend_x + 190.0).max(680.0);
    let height = (top + ph + 64.0).max(top + bar_h + 90.0);
    let m = scale(stats);
    let mut s = String::new();
    let mut line = |l: String| {
        s.push_str(&l);
        s.push('\n');
    };
    line(format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif">"#
    ));
    line(format!(
        r##"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="#FFFFFF"/>"##
    ));
    line(format!(
        r#"<text x="{:.1}" y="26" text-anchor="middle" font-size="18">{}</text>"#,
        width / 2.0,
        escape(&plan.title)
    ));
    line(format!(
        r#"<text x="{:.1}" y="46" text-anchor="middle" font-size="12">accuracy of {} − {}, {} paired debates per cell</text>"#,
        width / 2.0,
        escape(first),
        escape(second),
        plan.debates
    ));
    // Cells: x left to right, y bottom to top.
    let place = |xi: usize, yi: usize| (left + xi as f64 * cw, top + (ny - 1 - yi) as f64 * ch);
    let mut marks = Vec::new();
    for (cell, c) in plan.cells.iter().zip(stats) {
        let yi = cell.yi.unwrap_or(0);
        let (px, py) = place(cell.xi, yi);
        let (r, g, b) = diverging(c.difference / m);
        let tip = format!(
            "{} = {}, {} = {}: {} {:.3}, {} {:.3}, difference {:+.3}, only {} {}, only {} {}, p = {}",
            plan.x.name,
            number(c.x),
            y.name,
            number(c.y.unwrap_or(f64::NAN)),
            first,
            c.arms[plan.compare.0].accuracy,
            second,
            c.arms[plan.compare.1].accuracy,
            c.difference,
            first,
            c.only_first,
            second,
            c.only_second,
            crate::stats::p_value(c.p_value)
        );
        line(format!(
            r##"<rect class="cell" x="{px:.1}" y="{py:.1}" width="{cw:.1}" height="{ch:.1}" fill="rgb({r},{g},{b})" stroke="#FFFFFF" stroke-width="1"><title>{}</title></rect>"##,
            escape(&tip)
        ));
        if cw >= 44.0 && ch >= 18.0 {
            let dark = (c.difference / m).abs() > 0.6;
            line(format!(
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" dominant-baseline="central" font-size="11" fill="{}">{:+.2}</text>"##,
                px + cw / 2.0,
                py + ch / 2.0,
                if dark { "#FFFFFF" } else { "#000000" },
                c.difference
            ));
        }
        if c.significant() {
            marks.push((px, py));
        }
    }
    for (px, py) in marks {
        line(format!(
            r##"<rect class="mark" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#000000" stroke-width="2.5"/>"##,
            px + 2.0,
            py + 2.0,
            cw - 4.0,
            ch - 4.0
        ));
    }
    // Axes: tick labels at cell centres, titles with the parameter names.
    for (xi, v) in plan.x.values.iter().enumerate() {
        line(format!(
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12">{}</text>"#,
            left + (xi as f64 + 0.5) * cw,
            top + ph + 18.0,
            number(*v)
        ));
    }
    line(format!(
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="14">{}</text>"#,
        left + pw / 2.0,
        top + ph + 44.0,
        escape(&plan.x.name)
    ));
    for (yi, v) in y.values.iter().enumerate() {
        let (_, py) = place(0, yi);
        line(format!(
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" dominant-baseline="central" font-size="12">{}</text>"#,
            left - 8.0,
            py + ch / 2.0,
            number(*v)
        ));
    }
    line(format!(
        r#"<text transform="translate(24 {:.1}) rotate(-90)" text-anchor="middle" font-size="14">{}</text>"#,
        top + ph / 2.0,
        escape(&y.name)
    ));
    // Legend: the colour bar from +m (top) to −m, and the significance mark.
    let steps = 20;
    let step_h = bar_h / steps as f64;
    for i in 0..steps {
        let t = 1.0 - (i as f64 + 0.5) / steps as f64 * 2.0;
        let (r, g, b) = diverging(t);
        line(format!(
            r#"<rect class="legend" x="{legend_x:.1}" y="{:.1}" width="18" height="{:.2}" fill="rgb({r},{g},{b})"/>"#,
            top + i as f64 * step_h,
            step_h + 0.3
        ));
    }
    for (label, at) in [
        (format!("{:+.2} {} better", m, first), 0.0),
        ("0".to_string(), 0.5),
        (format!("{:+.2} {} better", -m, second), 1.0),
    ] {
        line(format!(
            r#"<text x="{:.1}" y="{:.1}" dominant-baseline="central" font-size="11">{}</text>"#,
            legend_x + 24.0,
            top + at * bar_h,
            escape(&label)
        ));
    }
    line(format!(
        r##"<rect x="{legend_x:.1}" y="{:.1}" width="18" height="14" fill="none" stroke="#000000" stroke-width="2.5"/>"##,
        top + bar_h + 18.0
    ));
    line(format!(
        r#"<text x="{:.1}" y="{:.1}" dominant-baseline="central" font-size="11">p &lt; {ALPHA} (McNemar)</text>"#,
        legend_x + 24.0,
        top + bar_h + 25.0
    ));
    line("</svg>".to_string());
    s
}

/// Each arm's accuracy against x, with 95% Wilson whiskers; `*` above the x values where the
/// compared pair differs with p < [`ALPHA`].
pub fn line_plot(plan: &Plan, stats: &[CellStats]) -> Result<String, SweepError> {
    let err = |e: &dyn std::fmt::Display| SweepError::Plot(e.to_string());
    let xs = &plan.x.values;
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let pad = span * 0.06;
    // Arms are set apart a little so their whiskers do not hide each other.
    let k = plan.arms.len() as f64;
    let dodge = |arm: usize| span * 0.008 * (arm as f64 - (k - 1.0) / 2.0);
    let first = &plan.arms[plan.compare.0].label;
    let second = &plan.arms[plan.compare.1].label;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 440)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&plan.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d((lo - pad)..(hi + pad), 0.0..1.05)
            .map_err(|e| err(&e))?;
        // Whole numbers without decimals, as the axis values are written.
        let tick = |x: &f64| {
            if (x - x.round()).abs() < 1e-9 {
                format!("{x:.0}")
            } else {
                format!("{}", (x * 1e6).round() / 1e6)
            }
        };
        chart
            .configure_mesh()
            .x_label_formatter(&tick)
            .x_desc(format!(
                "{}   (* {first} vs {second}: p < {ALPHA}, exact McNemar)",
                plan.x.name
            ))
            .y_desc("accuracy (95% CI)")
            .draw()
            .map_err(|e| err(&e))?;
        for (a, arm) in plan.arms.iter().enumerate() {
            let (r, g, b) = COLOURS[a % COLOURS.len()];
            let colour = RGBColor(r, g, b).to_rgba();
            let points: Vec<(f64, f64, (f64, f64))> = stats
                .iter()
                .map(|c| (c.x + dodge(a), c.arms[a].accuracy, c.arms[a].ci95))
                .collect();
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|p| (p.0, p.1)),
                    colour.stroke_width(2),
                ))
                .map_err(|e| err(&e))?
                .label(arm.label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|p| Circle::new((p.0, p.1), 4, colour.filled())),
                )
                .map_err(|e| err(&e))?;
            chart
                .draw_series(points.iter().map(|&(x, _, (l, h))| {
                    PathElement::new(vec![(x, l), (x, h)], colour.stroke_width(1))
                }))
                .map_err(|e| err(&e))?;
            for end in [0, 1] {
                chart
                    .draw_series(points.iter().map(|&(x, _, ci)| {
                        let v = if end == 0 { ci.0 } else { ci.1 };
                        EmptyElement::at((x, v))
                            + PathElement::new(vec![(-4, 0), (4, 0)], colour.stroke_width(1))
                    }))
                    .map_err(|e| err(&e))?;
            }
        }
        chart
            .draw_series(stats.iter().filter(|c| c.significant()).map(|c| {
                EmptyElement::at((c.x, 1.03))
                    + Text::new("*", (-4, -6), ("sans-serif", 18).into_font())
            }))
            .map_err(|e| err(&e))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::run::{ArmData, CellData};
    use crate::spec::SweepSpec;
    use crate::stats::cell_stats;

    /// Tags open and close in order (a tiny well-formedness check: no parser dependency).
    pub(crate) fn balanced(svg: &str) -> Result<usize, String> {
        let mut stack: Vec<String> = Vec::new();
        let mut elements = 0;
        let mut rest = svg;
        while let Some(start) = rest.find('<') {
            let end = rest[start..]
                .find('>')
                .ok_or_else(|| format!("unclosed tag at {:?}", &rest[start..]))?;
            let tag = &rest[start + 1..start + end];
            rest = &rest[start + end + 1..];
            if tag.starts_with('?') || tag.starts_with('!') {
                continue;
            }
            if let Some(name) = tag.strip_prefix('/') {
                match stack.pop() {
                    Some(open) if open == name.trim() => {}
                    other => return Err(format!("</{name}> closes {other:?}")),
                }
                continue;
            }
            elements += 1;
            if !tag.ends_with('/') {
                let name = tag.split_whitespace().next().unwrap_or_default();
                stack.push(name.to_string());
            }
        }
        if stack.is_empty() {
            Ok(elements)
        } else {
            Err(format!("unclosed {stack:?}"))
        }
    }

    fn plan(y: bool) -> crate::spec::Plan {
        let text = format!(
            "title = \"A & B <sweep>\"\ndebates = 10\nrounds = 1\nagents = 3\n\
             [[arms]]\nlabel = \"som\"\nprotocol = \"som\"\n\
             [[arms]]\nlabel = \"n\"\nprotocol = \"free-mad-n\"\n\
             [x]\nparam = \"beta_conform\"\nvalues = [-1, 0, 1, 2]\n{}",
            if y {
                "[y]\nparam = \"accuracy\"\nvalues = [0.3, 0.5, 0.7]\n"
            } else {
                ""
            }
        );
        SweepSpec::parse(&text, "t").unwrap().plan(None).unwrap()
    }

    /// Cell i: the first arm right in `i` more of 10 seeds than the second.
    fn data(plan: &crate::spec::Plan) -> Vec<CellData> {
        plan.cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let k = i.min(10);
                let a: Vec<bool> = (0..10).map(|s| s < k).collect();
                CellData {
                    x: c.x,
                    y: c.y,
                    arms: vec![
                        ArmData {
                            correct: a,
                            ncomm: 0,
                            calls: 0,
                        },
                        ArmData {
                            correct: vec![false; 10],
                            ncomm: 0,
                            calls: 0,
                        },
                    ],
                }
            })
            .collect()
    }

    #[test]
    fn the_heat_map_has_a_cell_per_point_marks_significant_ones_and_names_its_axes() {
        let plan = plan(true);
        let stats = cell_stats(&plan, &data(&plan));
        let svg = plot(&plan, &stats).unwrap();
        balanced(&svg).unwrap();
        assert_eq!(svg.matches(r#"<rect class="cell""#).count(), 12);
        let significant = stats.iter().filter(|c| c.significant()).count();
        // Exact McNemar at 10 seeds: 6 discordant or more, p ≤ 0.031.
        assert_eq!(significant, 12 - 6);
        assert_eq!(svg.matches(r#"<rect class="mark""#).count(), significant);
        assert_eq!(svg.matches(r#"<rect class="legend""#).count(), 20);
        assert!(svg.contains(">beta_conform</text>") && svg.contains(">accuracy</text>"));
        for tick in [">-1<", ">2<", ">0.3<", ">0.7<"] {
            assert!(svg.contains(tick), "{tick}");
        }
        assert!(svg.contains("A &amp; B &lt;sweep&gt;"));
        // The largest difference (1.0) takes the end of the scale.
        assert!(svg.contains("+1.00 som better") && svg.contains("-1.00 n better"));
        assert!(svg.contains(&format!("fill=\"rgb{:?}\"", diverging(1.0)).replace(' ', "")));
    }

    #[test]
    fn the_line_plot_is_well_formed_and_names_every_arm() {
        let plan = plan(false);
        let stats = cell_stats(&plan, &data(&plan));
        let svg = plot(&plan, &stats).unwrap();
        balanced(&svg).unwrap();
        assert!(
            svg.contains(">\nsom\n</text>") && svg.contains(">\nn\n</text>"),
            "{svg}"
        );
        assert!(svg.contains("beta_conform"));
    }

    #[test]
    fn the_colour_scale_diverges_from_near_white() {
        assert_eq!(diverging(0.0), (247, 247, 247));
        assert_eq!(diverging(1.0), (33, 102, 172));
        assert_eq!(diverging(-2.0), (178, 24, 43));
        assert_eq!(diverging(f64::NAN), (247, 247, 247));
        let (r, _, b) = diverging(0.5);
        assert!(b > r);
    }

    #[test]
    fn the_balance_check_catches_a_broken_document() {
        assert!(balanced("<svg><g></svg>").is_err());
        assert!(balanced("<svg><rect/></svg>").is_ok());
        assert!(balanced("<svg>").is_err());
    }
}
