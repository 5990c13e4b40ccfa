//! Reports on a terminal: a compact summary first, then every table aligned and fitted to the
//! terminal's width, Markdown's escapes and emphasis taken out. What is written to a file or a
//! pipe stays Markdown (`--format markdown`) or JSON, whole.

use std::io::IsTerminal;

use comfy_table::{presets, ContentArrangement, Table};
use moot_eval::report::Report;

/// The width to fit a report to when standard output is a terminal; `None` otherwise (the
/// report is then printed as Markdown).
pub fn width() -> Option<u16> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let (_, columns) = console::Term::stdout().size_checked()?;
    Some(columns.max(40))
}

/// `report` (whose Markdown is `markdown`) as `moot bench` and `moot report` print it: for the
/// terminal when standard output is one, else the Markdown as it is.
pub fn shown(report: &Report, markdown: &str) -> String {
    match width() {
        Some(width) => {
            moot_core::escape::terminal(&self::report(report, markdown, width)).into_owned()
        }
        None => moot_core::escape::terminal(markdown).into_owned(),
    }
}

/// The benchmark report for a terminal `width` columns wide: a summary table (accuracy, its
/// interval, tokens per item, calls, failures) and then the whole report with its tables
/// aligned.
pub fn report(report: &Report, markdown: &str, width: u16) -> String {
    let mut summary = table(width);
    summary.set_header([
        "protocol",
        "accuracy",
        "95% CI",
        "tokens/item",
        "calls",
        "failed",
    ]);
    for p in &report.protocols {
        let tokens = if p.items == 0 {
            0.0
        } else {
            (p.input_tokens + p.output_tokens) as f64 / p.items as f64
        };
        summary.add_row([
            p.protocol.clone(),
            format!("{}/{} = {:.3}", p.correct, p.items, p.accuracy),
            format!("{:.3}–{:.3}", p.ci95.0, p.ci95.1),
            format!("{tokens:.0}"),
            p.calls.to_string(),
            p.failed_calls.to_string(),
        ]);
    }
    format!("Summary\n{summary}\n\n{}", render(markdown, width))
}

/// `markdown` for a terminal `width` columns wide: each table aligned (cells too wide for the
/// width wrapped), text lines with Markdown's escapes and emphasis taken out, wrapped at the
/// width.
pub fn render(markdown: &str, width: u16) -> String {
    let mut out = String::new();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let flush = |rows: &mut Vec<Vec<String>>, out: &mut String| {
        if rows.is_empty() {
            return;
        }
        let mut t = table(width);
        let mut rest = std::mem::take(rows).into_iter();
        if let Some(header) = rest.next() {
            t.set_header(header);
        }
        for row in rest {
            t.add_row(row);
        }
        out.push_str(&t.to_string());
        out.push('\n');
    };
    for line in markdown.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('|') && trimmed.ends_with('|') && trimmed.len() > 1 {
            let cells = cells(trimmed);
            if !is_separator(&cells) {
                rows.push(cells.iter().map(|c| plain(c)).collect());
            }
            continue;
        }
        flush(&mut rows, &mut out);
        let text = plain(line);
        if text.is_empty() {
            out.push('\n');
        }
        // A long paragraph (or path) wrapped at the width, a word longer than it broken.
        for piece in textwrap::wrap(&text, usize::from(width)) {
            out.push_str(&piece);
            out.push('\n');
        }
    }
    flush(&mut rows, &mut out);
    out
}

fn table(width: u16) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_HORIZONTAL_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width);
    t
}

/// The cells of a Markdown table row: split at `|` not escaped as `\|`.
fn cells(row: &str) -> Vec<String> {
    let inner = row
        .strip_prefix('|')
        .and_then(|r| r.strip_suffix('|'))
        .unwrap_or(row);
    let mut cells = vec![String::new()];
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    if let Some(cell) = cells.last_mut() {
                        if next != '|' {
                            cell.push('\\');
                        }
                        cell.push(next);
                    }
                }
            }
            '|' => cells.push(String::new()),
            c => {
                if let Some(cell) = cells.last_mut() {
                    cell.push(c);
                }
            }
        }
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

/// `|---|:---:|`: the row under a table's header.
fn is_separator(cells: &[String]) -> bool {
    cells.iter().all(|c| {
        let c = c.trim_matches(':');
        !c.is_empty() && c.chars().all(|ch| ch == '-')
    })
}

/// A Markdown text as read on a terminal: backslash escapes, `**` and backticks taken out.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek().is_some_and(|n| n.is_ascii_punctuation()) => {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
            }
            '`' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_aligned_and_fits_the_width() {
        let md = "Intro **bold** and `code`, then a sentence long enough that it has to be wrapped at sixty columns.\n\n| protocol | accuracy | a long column heading that would not fit |\n|---|---|---|\n| som | 17/20 = 0.850 | some \\| escaped text that goes on and on and on and on |\n| free-mad-n | 15/20 = 0.750 | x |\n\nAfter.\n";
        let text = render(md, 60);
        assert!(text.starts_with("Intro bold and code, then"), "{text}");
        for line in text.lines() {
            assert!(line.chars().count() <= 60, "{line:?} in\n{text}");
        }
        assert!(text.contains("some | escaped"), "{text}");
        assert!(!text.contains("|---|"), "{text}");
        assert!(text.ends_with("After.\n"), "{text}");
        // Aligned: the rows' second column starts at the same place.
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("som ") || l.contains("free-mad-n"))
            .collect();
        let at = |l: &str, w: &str| l.find(w).unwrap();
        assert_eq!(at(rows[0], "17/20"), at(rows[1], "15/20"), "{text}");
    }

    #[test]
    fn separators_are_told_from_rows() {
        assert!(is_separator(&cells("|---|:---:|--:|")));
        assert!(!is_separator(&cells("| - | x |")));
    }
}
