//! The `yes-no` kind: yes / no, true / false.

use std::sync::LazyLock;

use regex::Regex;

use super::Answer;

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

/// The first yes/no word of an answer span ("no, because…").
pub(super) fn from_span(span: &str) -> Option<Answer> {
    WORD.find(span)
        .and_then(|m| word_value(m.as_str()))
        .map(Answer::yes_no)
}

/// No marker: a response that opens with its verdict ("Yes, because…"), else the verdict on its
/// last line, else the last yes/no word anywhere.
pub(super) fn from_whole_text(text: &str) -> Option<Answer> {
    let first_word = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | '!' | ':' | ';'))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .find(|w| !w.is_empty());
    if let Some(v) = first_word.and_then(word_value) {
        return Some(Answer::yes_no(v));
    }
    if let Some(a) = super::span::last_line(text).and_then(from_span) {
        return Some(a);
    }
    WORD.find_iter(text)
        .last()
        .and_then(|m| word_value(m.as_str()))
        .map(Answer::yes_no)
}
