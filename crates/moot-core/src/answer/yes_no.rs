//! The `yes-no` kind: yes / no, true / false.

use std::sync::LazyLock;

use regex::Regex;

use super::value::Answer;

static WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(yes|no|true|false)\b").expect("valid regex"));

fn word_value(word: &str) -> Option<bool> {
    match word.to_ascii_lowercase().as_str() {
        "yes" | "true" => Some(true),
        "no" | "false" => Some(false),
        _ => None,
    }
}

/// The whole string is one yes/no word (`"True"`, `"no."`, `"**Yes**"`).
pub(super) fn parse_exact(s: &str) -> Option<Answer> {
    let w = s.trim().trim_matches(|c: char| !c.is_alphanumeric());
    word_value(w).map(Answer::yes_no)
}

/// The first yes/no word of an answer span ("no, because…"); without one, a verdict of
/// plausibility, or a negated statement ("… would not have reached …") as no.
pub(super) fn from_span(span: &str) -> Option<Answer> {
    if let Some(v) = WORD.find(span).and_then(|m| word_value(m.as_str())) {
        return Some(Answer::yes_no(v));
    }
    if let Some(v) = verdict(span) {
        return Some(Answer::yes_no(v));
    }
    NEGATION.is_match(span).then(|| Answer::yes_no(false))
}

/// A yes/no word used as a verdict ("So actually, no, …", "… is false."), not as a determiner
/// ("there is no agreed way").
static INTERJECTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(yes|no|true|false)\b\s*[,.!;:]|\b(yes|no|true|false)\s*\**\s*$")
        .expect("valid regex")
});
static VERDICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:is|seems|sounds)\s+(not\s+|im|in)?(plausible|correct|valid)\b")
        .expect("valid regex")
});
static NEGATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:not|never|n't)\b|n't\b").expect("valid regex"));

/// "The sentence is plausible." / "is not plausible" / "is implausible".
fn verdict(text: &str) -> Option<bool> {
    VERDICT
        .captures_iter(text)
        .last()
        .map(|c| c.get(1).is_none())
}

/// No marker: a response that opens with its verdict ("Yes, because…"), else a sentence of the
/// last line that opens with one, else a plausibility verdict on the last line.
pub(super) fn from_whole_text(text: &str) -> Option<Answer> {
    let opening = |t: &str| {
        t.split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | '!' | ':' | ';'))
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            .find(|w| !w.is_empty())
            .and_then(word_value)
    };
    if let Some(v) = opening(text) {
        return Some(Answer::yes_no(v));
    }
    let last = super::span::last_line(text)?;
    let interjection = INTERJECTION
        .captures(last)
        .and_then(|c| c.get(1).or(c.get(2)))
        .and_then(|m| word_value(m.as_str()));
    interjection.or_else(|| verdict(last)).map(Answer::yes_no)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(t: &str) -> Option<String> {
        from_whole_text(t).map(|a| a.canonical().to_string())
    }

    #[test]
    fn whole_text_verdicts() {
        assert_eq!(w("Yes, because Paris is in France."), Some("yes".into()));
        assert_eq!(
            w("Reasoning here.\nSo it is. No, it cannot be."),
            Some("no".into())
        );
        assert_eq!(
            w("He plays soccer.\n\nThe sentence is plausible."),
            Some("yes".into())
        );
        assert_eq!(w("The sentence is implausible."), Some("no".into()));
        assert_eq!(w("There is no agreed way to measure it."), None);
        assert_eq!(
            w("At first, yes: it works.\nSo actually, no, it would not."),
            Some("no".into())
        );
        assert_eq!(w("Checking.\nThe statement is false."), Some("no".into()));
    }

    #[test]
    fn span_verdicts() {
        let s = |t: &str| from_span(t).map(|a| a.canonical().to_string());
        assert_eq!(s(" no, it is not"), Some("no".into()));
        assert_eq!(
            s(" Albany GA would not have reached it first"),
            Some("no".into())
        );
        assert_eq!(s(" Albany GA got there first"), None);
    }
}
