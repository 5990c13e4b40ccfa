//! Locating the part of a response that states the final answer.
//!
//! Real models bury the answer among intermediate numbers and restatements. Every answer kind looks
//! in the same places, most explicit first: the last `\boxed{…}`, the last `<answer>…</answer>`,
//! the last `#### …` line, then the text after the last "answer is" / "Answer:"-style marker (and
//! earlier markers if that one holds nothing usable). A freemad-style `SOLUTION:` section, when
//! present, is searched before the rest of the response.

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
pub(crate) fn boxed_groups(text: &str) -> Vec<&str> {
    let mut groups = Vec::new();
    let mut search_from = 0;
    while let Some(found) = find_box_command(&text[search_from..]) {
        let open = search_from + found;
        match balanced_group(text, open) {
            Some((inner, end)) => {
                groups.push(inner);
                search_from = end;
            }
            None => search_from = open + 1,
        }
    }
    groups
}

/// Byte offset of the `{` that opens the next `\boxed{` or `\fbox{` group.
fn find_box_command(text: &str) -> Option<usize> {
    ["\\boxed", "\\fbox"]
        .iter()
        .filter_map(|cmd| {
            let mut from = 0;
            while let Some(pos) = text[from..].find(cmd) {
                let after = from + pos + cmd.len();
                let rest = &text[after..];
                let trimmed = rest.trim_start();
                if trimmed.starts_with('{') {
                    return Some(after + (rest.len() - trimmed.len()));
                }
                from = after;
            }
            None
        })
        .min()
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
    let markers: Vec<_> = MARKER.find_iter(text).collect();
    for m in markers.iter().rev() {
        let rest = &text[m.end()..];
        let line = rest.split('\n').next().unwrap_or("");
        // A marker alone on its line ("Final Answer:\n\n18") announces the next non-empty line.
        let line = if line
            .trim_matches(|c: char| c.is_whitespace() || c == '*' || c == ':')
            .is_empty()
        {
            rest.lines()
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
