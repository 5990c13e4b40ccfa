//! Reading a response that has no explicit answer span (no box, tag, `####` or marker).
//!
//! Models then close with a statement ("Gretchen has 70 gold coins (and 40 silver coins).").
//! The closing statement is the last lines of the response, with parenthetical asides removed;
//! a response that declines to answer, or is cut off mid-expression, has no answer at all.

use std::sync::LazyLock;

use regex::Regex;

use super::number::{scan_numbers, Number};
use super::value::Answer;
use super::{latex, span};

/// How many trailing non-empty lines may hold the closing statement.
const CLOSING_LINES: usize = 3;

static CALCULATOR_NOTE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<<[^<>]*>>").expect("valid regex"));
static PARENTHETICAL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\s*\([^()]*\)").expect("valid regex"));
/// Phrases of a response that declines to commit to an answer.
static DECLINES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        \b(?:cannot|can't|can\s+not|unable\s+to|impossible\s+to)\s+(?:be\s+)?(?:determine|determined|answer|tell|say)
        | \b(?:not|n't)\s+enough\s+information
        | \bneed\s+(?:a\s+bit\s+|some\s+)?more\s+(?:information|details|context)
        | \bhard\s+to\s+say
        | \b(?:no|doesn't\s+have\s+a|does\s+not\s+have\s+a)\s+definitive\s+answer
        | \bplease\s+clarify",
    )
    .expect("valid regex")
});
static LABEL_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z][A-Za-z ]{0,30}:\s*").expect("valid regex"));
static QUOTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""([^"]+)"|“([^”]+)”"#).expect("valid regex"));

/// GSM8K-style calculator annotations (`<<16-3-4=9>>`) and LaTeX thousands spacing (`32,\!348`,
/// `1{,}000`) would split or shadow the numbers they sit in.
pub(super) fn strip_calculator_notes(text: &str) -> String {
    CALCULATOR_NOTE
        .replace_all(text, "")
        .replace("{,}", ",")
        .replace("\\!", "")
}

/// An answer span with nothing in its first sentence ("So, the answer is . …").
pub(super) fn is_blank(span_text: &str) -> bool {
    span::first_sentence(span_text)
        .chars()
        .all(|c| c.is_whitespace() || matches!(c, '*' | '$' | ':' | '.' | '|' | '-'))
}

/// True when the response's closing lines decline to answer, or it stops mid-expression.
pub(super) fn declines_or_is_cut_off(text: &str) -> bool {
    let closing = closing_lines(text).join("\n");
    if DECLINES.is_match(&closing) {
        return true;
    }
    // Markdown emphasis closes many answers ("**−80**"); it is not an operator.
    let end = text.trim_end().trim_end_matches(['*', '_']).trim_end();
    end.ends_with(['×', '+', '=', '-', '/', '÷', '(', '\\'])
}

/// The last few non-empty lines, trimmed, in text order: where a closing statement stands.
pub(super) fn closing_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .rev()
        .take(CLOSING_LINES)
        .collect();
    lines.reverse();
    lines
}

/// The number a closing statement states: after the last `=` if there is one; else, in the first
/// sentence that has numbers, the first amount of money if any, else the last number.
pub(super) fn number_in_statement(line: &str) -> Option<Number> {
    let line = PARENTHETICAL.replace_all(line, "");
    if let Some((_, after)) = line.rsplit_once('=') {
        if let Some(f) = scan_numbers(after).into_iter().next() {
            return Some(f.number);
        }
    }
    let (sentence, found) = sentences(&line)
        .into_iter()
        .map(|s| (s, scan_numbers(s)))
        .find(|(_, found)| !found.is_empty())?;
    let money = found
        .iter()
        .find(|f| sentence[f.start..f.end].contains('$') || sentence[..f.start].ends_with('$'));
    money.or(found.last()).map(|f| f.number.clone())
}

fn sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    loop {
        let head = span::first_sentence(rest);
        out.push(head);
        if head.len() >= rest.len() {
            return out;
        }
        rest = &rest[head.len() + 1..];
    }
}

/// The closing number: the last line (of the last few) that has a number, read as a statement;
/// failing that, the last number anywhere.
pub(super) fn closing_number(text: &str) -> Option<Number> {
    for line in closing_lines(text).into_iter().rev() {
        if let Some(n) = number_in_statement(line) {
            return Some(n);
        }
    }
    scan_numbers(text).pop().map(|f| f.number)
}

/// Inline and display math groups in text order: `$$…$$`, `$…$`, `\(…\)`, `\[…\]`.
pub(super) fn inline_math_groups(text: &str) -> Vec<&str> {
    let mut groups = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let delimiters = [("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")];
        let Some((open, close)) = delimiters.iter().find(|(o, _)| rest.starts_with(o)) else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let inner_start = i + open.len();
        match text[inner_start..].find(close) {
            Some(len) => {
                groups.push(&text[inner_start..inner_start + len]);
                i = inner_start + len + close.len();
            }
            None => break,
        }
    }
    groups
}

/// A math answer from the closing lines: the last math group of the last line that has one
/// (the part after its last `=` or `\approx`), else a closing number.
pub(super) fn closing_math(text: &str) -> Option<Answer> {
    for line in closing_lines(text).into_iter().rev() {
        if let Some(group) = inline_math_groups(line).last() {
            let value = group
                .rsplit(['=', '≈'])
                .next()
                .unwrap_or(group)
                .rsplit("\\approx")
                .next()
                .unwrap_or(group);
            let normalized = latex::normalize(value);
            if !normalized.is_empty() {
                return Some(Answer::math(normalized));
            }
        }
        if let Some(n) = number_in_statement(line) {
            return Some(Answer::math(n.canonical().to_string()));
        }
    }
    None
}

/// Free text from the closing lines: a list under a `Label:` line joined by spaces, else the
/// last quoted phrase of the last line, else the last line without a leading `Label:`.
pub(super) fn closing_text(text: &str) -> Option<String> {
    let paragraph: Vec<&str> = text
        .trim_end()
        .rsplit("\n\n")
        .next()
        .unwrap_or("")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if let [header, items @ ..] = paragraph.as_slice() {
        if header.ends_with(':') && items.len() > 1 && items.iter().all(|l| !l.contains(' ')) {
            return Some(items.join(" "));
        }
    }
    let last = span::last_line(text)?;
    if let Some(q) = QUOTED.captures_iter(last).last() {
        if let Some(m) = q.get(1).or(q.get(2)) {
            return Some(m.as_str().to_string());
        }
    }
    Some(LABEL_PREFIX.replace(last, "").into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(line: &str) -> Option<String> {
        number_in_statement(line).map(|n| n.canonical().to_string())
    }

    #[test]
    fn statements() {
        assert_eq!(
            n("Gretchen has 70 gold coins (and 40 silver coins)."),
            Some("70".into())
        );
        assert_eq!(
            n("He spends $75.00 on yogurt over 30 days."),
            Some("75".into())
        );
        assert_eq!(n("In 3 days, she makes $54."), Some("54".into()));
        assert_eq!(
            n("The family now has 40 kittens. That's 7 + 21 + 12."),
            Some("40".into())
        );
        assert_eq!(n("So the total is 9 + 3 = 12."), Some("12".into()));
        assert_eq!(
            n("She has 3 apples, then 5, so 8 in total"),
            Some("8".into())
        );
        assert_eq!(n("No numbers here."), None);
    }

    #[test]
    fn declining_and_cut_off() {
        assert!(declines_or_is_cut_off(
            "I cannot determine this without the rate."
        ));
        assert!(declines_or_is_cut_off("Over a week this is 42 ×"));
        assert!(!declines_or_is_cut_off("So she makes $18."));
    }

    #[test]
    fn math_groups() {
        assert_eq!(
            inline_math_groups(r"a $x$ b $$y=2$$ c \(z\)"),
            vec!["x", "y=2", "z"]
        );
        assert_eq!(
            closing_math("So the roots are $x = 3, 5, 7$.").map(|a| a.canonical().to_string()),
            Some("3,5,7".into())
        );
    }

    #[test]
    fn texts() {
        assert_eq!(
            closing_text("Sorted list:\nb\nc\nd").as_deref(),
            Some("b c d")
        );
        assert_eq!(
            closing_text("The sorted list is \"a b\".").as_deref(),
            Some("a b")
        );
        assert_eq!(
            closing_text("Reasoning.\n\nOutput: ] ] >").as_deref(),
            Some("] ] >")
        );
    }
}
