//! Locating the part of a response that states the final answer.
//!
//! Real models bury the answer among intermediate numbers and restatements. Every answer kind looks
//! in the same places, most explicit first: the last `\boxed{…}`, the last `<answer>…</answer>`,
//! the last `#### …` line, then the text after the last "answer is" / "Answer:"-style marker (and
//! earlier markers if that one holds nothing usable; of a line with many markers, only its last
//! [`MARKERS_PER_LINE`]). A freemad-style `SOLUTION:` section, when present, is searched before
//! the rest of the response.
//!
//! Everything here is linear in the response: a model may send megabytes of `\boxed{` or
//! "answer is", and extraction must not rescan the rest of the text from each one.

use std::sync::LazyLock;

use regex::Regex;

/// Where a candidate span came from, in decreasing order of how explicit it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpanSource {
    Boxed,
    AnswerTag,
    Hashes,
    Marker,
}

/// How many markers of one line are read, last first. Real responses have one or two on a
/// line; a line of thousands ("the answer is the answer is …") would otherwise cost time
/// quadratic in its length, since every marker's span runs to the end of the line.
pub(crate) const MARKERS_PER_LINE: usize = 8;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Span<'a> {
    pub source: SpanSource,
    pub text: &'a str,
}

static ANSWER_TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?is)<answer>(.*?)</answer>").expect("valid regex"));
static HASHES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^[ \t>*]*####[ \t]*(.*)$").expect("valid regex"));
/// Phrases after which a model states its final answer. A bare "answer" needs a connector
/// (`is`, `:`, `=`, `would be`, …) so that "let me answer this" is not a marker.
static MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        (?:
            \bfinal\s+answer(?:\s+is)?
          | \b(?:correct|right|best|final)\s+(?:answer|option|choice)(?:\s+is)?
          | \banswer(?:\s+choice)?\s*(?:\*\*)?\s*(?:is|would\s+be|should\s+be|will\s+be|:|=)
        )
        (?:\s*\*\*)?\s*(?:[:=]|\bis\b)?",
    )
    .expect("valid regex")
});
static SOLUTION_SECTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)(?:^|\n)[ \t*#]*SOLUTION:?[ \t*]*\n?(.*?)(?:\n[ \t*#]*REASONING:|$)")
        .expect("valid regex")
});

/// The contents of every `\boxed{…}` / `\fbox{…}` group with balanced braces, in text order.
/// An unterminated group (a response cut off mid-answer) is skipped.
///
/// Linear in the text: the commands are found in one pass and every group's closing brace in
/// another, instead of rescanning the rest of the text from each command (quadratic on
/// `\boxed{` repeated, each unterminated).
pub(crate) fn boxed_groups(text: &str) -> Vec<&str> {
    let commands = box_commands(text);
    let closes = closing_braces(text, commands.iter().map(|&(_, open)| open));
    let mut groups = Vec::new();
    let mut search_from = 0;
    for (&(start, open), close) in commands.iter().zip(closes) {
        // A command inside an earlier group is part of that group.
        if start < search_from {
            continue;
        }
        match close {
            Some(close) => {
                groups.push(&text[open + 1..close]);
                search_from = close + 1;
            }
            None => search_from = open + 1,
        }
    }
    groups
}

/// Every `\boxed` / `\fbox` command followed (after optional whitespace) by `{`, in text order:
/// the byte offsets of the command's backslash and of its `{`.
fn box_commands(text: &str) -> Vec<(usize, usize)> {
    let mut commands = Vec::new();
    for (start, _) in text.match_indices('\\') {
        let after_backslash = &text[start + 1..];
        let Some(name) = ["boxed", "fbox"]
            .into_iter()
            .find(|name| after_backslash.starts_with(name))
        else {
            continue;
        };
        let after = start + 1 + name.len();
        let rest = &text[after..];
        // The whitespace scanned here ends before the next backslash, so no byte is scanned
        // twice.
        let trimmed = rest.trim_start();
        if trimmed.starts_with('{') {
            commands.push((start, after + (rest.len() - trimmed.len())));
        }
    }
    commands
}

/// For each of `opens` (byte offsets of `{`, increasing, none escaped), the offset of its
/// matching `}` as [`balanced_group`] finds it, or `None` when the group is unterminated. One
/// pass over the text, however many groups are open at once.
fn closing_braces(text: &str, opens: impl Iterator<Item = usize>) -> Vec<Option<usize>> {
    let opens: Vec<usize> = opens.collect();
    let mut closes = vec![None; opens.len()];
    let Some(&first) = opens.first() else {
        return closes;
    };
    let bytes = text.as_bytes();
    // Groups still open: (index in `opens`, brace depth before its `{`).
    let mut open_groups: Vec<(usize, usize)> = Vec::new();
    let mut next = 0;
    let mut depth = 0usize;
    // Escapes pair a backslash with the next byte. No `{` of `opens` follows a backslash, so
    // starting at one of them reads the same pairs as starting at any other.
    let mut i = first;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                debug_assert!(opens.get(next) != Some(&(i + 1)), "an escaped box brace");
                i += 2;
                continue;
            }
            b'{' => {
                if opens.get(next) == Some(&i) {
                    open_groups.push((next, depth));
                    next += 1;
                }
                depth += 1;
            }
            // A `}` that closes nothing is ignored, as a scan from any later `{` never sees it.
            b'}' if depth > 0 => {
                depth -= 1;
                if open_groups.last().is_some_and(|&(_, d)| d == depth) {
                    if let Some((k, _)) = open_groups.pop() {
                        closes[k] = Some(i);
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    closes
}

/// Given the byte offset of an opening `{`, returns the inner text and the offset after the
/// matching `}`. Escaped braces (`\{`, `\}`) do not count.
pub(crate) fn balanced_group(text: &str, open: usize) -> Option<(&str, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(open) != Some(&b'{') {
        return None;
    }
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((&text[open + 1..i], i + 1));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The freemad-style `SOLUTION:` section, if the response has one.
pub(crate) fn solution_section(text: &str) -> Option<&str> {
    SOLUTION_SECTION
        .captures(text)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
        .filter(|s| !s.trim().is_empty())
}

/// Candidate answer spans of `text`, most explicit first.
pub(crate) fn candidate_spans(text: &str) -> Vec<Span<'_>> {
    let mut spans = Vec::new();
    if let Some(inner) = boxed_groups(text).last() {
        spans.push(Span {
            source: SpanSource::Boxed,
            text: inner,
        });
    }
    if let Some(c) = ANSWER_TAG.captures_iter(text).last() {
        if let Some(m) = c.get(1) {
            spans.push(Span {
                source: SpanSource::AnswerTag,
                text: m.as_str(),
            });
        }
    }
    if let Some(c) = HASHES.captures_iter(text).last() {
        if let Some(m) = c.get(1) {
            spans.push(Span {
                source: SpanSource::Hashes,
                text: m.as_str(),
            });
        }
    }
    // Markers from the last one backwards: a model that revises ("wait, … so the answer is
    // actually 12") states its final answer last.
    let markers: Vec<usize> = MARKER.find_iter(text).map(|m| m.end()).collect();
    let line_ends = line_ends(text, &markers);
    let mut line_end = usize::MAX;
    let mut on_line = 0;
    for (&end, &this_line_end) in markers.iter().zip(&line_ends).rev() {
        // Markers on one line share its end, so each one's span holds the later ones': only
        // the last few of a line are read, which keeps the work linear in the line.
        if this_line_end == line_end {
            on_line += 1;
        } else {
            line_end = this_line_end;
            on_line = 1;
        }
        if on_line > MARKERS_PER_LINE {
            continue;
        }
        let line = &text[end..this_line_end];
        // A marker alone on its line ("Final Answer:\n\n18") announces the next non-empty line.
        // (Trimming from the start alone is enough to see that, and it stops at the next
        // marker of the line instead of rescanning the line's end for every marker.)
        let line = if line
            .trim_start_matches(|c: char| c.is_whitespace() || c == '*' || c == ':')
            .is_empty()
        {
            text[end..]
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("")
        } else {
            line
        };
        spans.push(Span {
            source: SpanSource::Marker,
            text: line,
        });
    }
    spans
}

/// For each marker end (increasing byte offsets), the offset of the first `\n` at or after it,
/// or the text's length. One pass: the newline found for one marker serves every later marker
/// before it.
fn line_ends(text: &str, marker_ends: &[usize]) -> Vec<usize> {
    let mut ends = Vec::with_capacity(marker_ends.len());
    let mut newline: Option<usize> = None;
    for &end in marker_ends {
        let line_end = match newline {
            Some(nl) if nl >= end => nl,
            _ => {
                let nl = text[end..].find('\n').map_or(text.len(), |p| end + p);
                newline = Some(nl);
                nl
            }
        };
        ends.push(line_end);
    }
    ends
}

/// The first sentence of a marker span: text up to the first sentence-ending period (a period
/// followed by whitespace, so decimal points survive) or the end of the line.
pub(crate) fn first_sentence(span: &str) -> &str {
    let bytes = span.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if matches!(b, b'.' | b';' | b'!' | b'?')
            && bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace())
        {
            return &span[..i];
        }
    }
    span
}

/// The last non-empty line of `text`.
pub(crate) fn last_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).rfind(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxed_groups_balance_nested_braces() {
        let t = r"so \boxed{\frac{\sqrt{3}}{2}} and then \boxed{ 7 }";
        assert_eq!(boxed_groups(t), vec![r"\frac{\sqrt{3}}{2}", " 7 "]);
    }

    #[test]
    fn unterminated_box_is_skipped() {
        assert_eq!(
            boxed_groups(r"\boxed{12} then \boxed{\frac{1}{2"),
            vec!["12"]
        );
    }

    #[test]
    fn escaped_braces_do_not_close_a_group() {
        assert_eq!(boxed_groups(r"\boxed{\{1,2\}}"), vec![r"\{1,2\}"]);
    }

    #[test]
    fn markers_are_listed_last_first() {
        let spans = candidate_spans("The answer is 10.\nWait, no. The answer is actually 12.");
        let texts: Vec<_> = spans.iter().map(|s| s.text.trim()).collect();
        assert_eq!(texts, vec!["actually 12.", "10."]);
    }

    #[test]
    fn marker_alone_on_a_line_takes_the_next_line() {
        let spans = candidate_spans("Final Answer:\n\n**18**\n");
        assert_eq!(spans[0].text, "**18**");
    }

    #[test]
    fn let_me_answer_is_not_a_marker() {
        assert!(candidate_spans("Let me answer this carefully: 3 apples.").is_empty());
    }

    #[test]
    fn first_sentence_keeps_decimals() {
        assert_eq!(first_sentence(" 3.5 dollars. Then 7."), " 3.5 dollars");
    }

    #[test]
    fn solution_section_stops_at_reasoning() {
        let t = "SOLUTION:\n42\n\nREASONING:\nbecause 6*7 = 41+1";
        assert_eq!(solution_section(t).map(str::trim), Some("42"));
    }
}
