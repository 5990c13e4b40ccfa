//! The `choice` kind: option letters, or an option's text when the options are known.
//!
//! Without the options, letters A–J are read (MMLU-Pro's ten options). With them, any letter of
//! an option is (BBH's geometric_shapes has eleven, reasoning_about_colored_objects eighteen), and
//! no letter beyond the last option.

use std::sync::LazyLock;

use regex::Regex;

use super::value::Answer;

/// A letter at the start of an answer span: `B`, `(B)`, `B)`, `[B]`, `option B`, `b.`.
static LEADING_LETTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[\s:=\-|*]*(?:(?i:option|choice|letter)\s*)?([\(\[])?([A-Za-z])([\)\]])?([^A-Za-z0-9]|$)")
        .expect("valid regex")
});
static PAREN_LETTER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\(([A-Z])\)").expect("valid regex"));
static NAMED_LETTER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i:option|choice)\s+\(?([A-Z])\b").expect("valid regex"));
static BOLD_LETTER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\*\*\(?([A-Z])\)?[.:)]?\*\*").expect("valid regex"));
/// A line that is just a letter with optional markup: `B`, `(B)`, `B) Paris`, `**B.**`.
static LETTER_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[\s*#>]*\(?([A-Z])(?:[\).:]|\**\s*$)").expect("valid regex"));

/// Letters read when the options are not known: A–J.
const LETTERS_WITHOUT_OPTIONS: usize = 10;

/// The most options a choice question can letter: A–Z.
pub const MAX_OPTIONS: usize = 26;

/// The letter of option `index`, counted from 0 (`0` → `A`); `None` past [`MAX_OPTIONS`].
pub fn option_letter(index: usize) -> Option<char> {
    (index < MAX_OPTIONS).then(|| char::from(b'A' + index as u8))
}

/// The options of a question, folded once per extraction: a response may hold thousands of
/// answer spans, and folding every option again for each would cost their length each time.
pub(super) struct Options<'a> {
    raw: &'a [String],
    /// Each option's words, folded by [`fold_words`] and padded with a space on both sides;
    /// `None` for an option without words.
    needles: Vec<Option<String>>,
}

impl<'a> Options<'a> {
    pub(super) fn new(raw: &'a [String]) -> Options<'a> {
        let needles = raw
            .iter()
            .map(|o| {
                let folded = fold_words(o);
                (!folded.is_empty()).then(|| format!(" {folded} "))
            })
            .collect();
        Options { raw, needles }
    }
}

fn index_of(letter: char, options: &[String]) -> Option<u8> {
    let upper = letter.to_ascii_uppercase();
    if !upper.is_ascii_uppercase() {
        return None;
    }
    let index = upper as u8 - b'A';
    let letters = if options.is_empty() {
        LETTERS_WITHOUT_OPTIONS
    } else {
        options.len().min(MAX_OPTIONS)
    };
    (usize::from(index) < letters).then_some(index)
}

fn clean(span: &str) -> String {
    span.replace("**", "")
        .replace("\\text{", "")
        .replace("\\textbf{", "")
        .replace(['$', '}', '{'], "")
}

fn fold(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_string()
}

/// The whole string is an option: a letter (`"B"`, `"(b)"`, `"B."`) or an option's text.
pub(super) fn parse_exact(s: &str, options: &[String]) -> Option<Answer> {
    let cleaned = clean(s);
    let bare = cleaned
        .trim()
        .trim_matches(|c: char| matches!(c, '(' | ')' | '[' | ']' | '.' | ':' | '*'))
        .trim();
    let mut chars = bare.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return index_of(c, options).map(Answer::choice);
    }
    let folded = fold(s);
    options
        .iter()
        .position(|o| fold(o) == folded && !folded.is_empty())
        .and_then(|i| u8::try_from(i).ok())
        .map(Answer::choice)
}

/// [`from_span_in`] with options folded for this call alone.
#[cfg(test)]
fn from_span(span: &str, options: &[String]) -> Option<Answer> {
    from_span_in(span, &Options::new(options))
}

/// The option an answer span names.
pub(super) fn from_span_in(span: &str, prepared: &Options<'_>) -> Option<Answer> {
    let options = prepared.raw;
    let cleaned = clean(span);
    let text = cleaned.trim();
    if let Some(c) = LEADING_LETTER.captures(text) {
        let letter = c
            .get(2)
            .map_or(' ', |m| m.as_str().chars().next().unwrap_or(' '));
        let bracketed = c.get(1).is_some() || c.get(3).is_some();
        let after = &text[c.get(0).map_or(0, |m| m.end())..];
        let closes_span = after.trim().is_empty()
            || after.starts_with(['.', ':', ','])
            || after.starts_with(" -");
        // "a"/"I" are words: take a bare A or I only when nothing word-like follows it, and a
        // lowercase letter only when bracketed or alone.
        let plausible = if letter.is_ascii_lowercase() {
            bracketed || closes_span
        } else if matches!(letter, 'A' | 'I') && !bracketed {
            closes_span
                || !after
                    .trim_start()
                    .starts_with(|c: char| c.is_ascii_lowercase())
        } else {
            true
        };
        if plausible {
            if let Some(i) = index_of(letter, options) {
                return Some(Answer::choice(i));
            }
        }
    }
    for re in [&*PAREN_LETTER, &*NAMED_LETTER] {
        if let Some(i) = re
            .captures(text)
            .and_then(|c| c.get(1))
            .and_then(|m| m.as_str().chars().next())
            .and_then(|l| index_of(l, options))
        {
            return Some(Answer::choice(i));
        }
    }
    option_text_in(text, prepared)
}

/// The longest option text that the span contains as whole words.
fn option_text_in(span: &str, options: &Options<'_>) -> Option<Answer> {
    let haystack = format!(" {} ", fold_words(span));
    options
        .needles
        .iter()
        .enumerate()
        .filter_map(|(i, needle)| {
            let needle = needle.as_deref()?;
            // An option longer than the span cannot be in it; checking first keeps a long
            // option from costing its length for every short span.
            (needle.len() <= haystack.len() && haystack.contains(needle))
                .then_some((i, needle.len()))
        })
        .max_by_key(|&(i, len)| (len, std::cmp::Reverse(i)))
        .and_then(|(i, _)| u8::try_from(i).ok())
        .map(Answer::choice)
}

/// Lowercase words separated by single spaces, punctuation dropped.
fn fold_words(s: &str) -> String {
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// [`from_whole_text_in`] with options folded for this call alone.
#[cfg(test)]
fn from_whole_text(text: &str, options: &[String]) -> Option<Answer> {
    from_whole_text_in(text, &Options::new(options))
}

/// No marker: a last line that is just a letter (`B) Paris`, `**C**`), else the last bold
/// letter of the closing lines, else the last `(X)` of the last line, else an option text on the
/// last line. Letters earlier in the response are usually the options being discussed.
pub(super) fn from_whole_text_in(text: &str, prepared: &Options<'_>) -> Option<Answer> {
    let options = prepared.raw;
    let letter_of = |c: regex::Captures<'_>| {
        c.get(1)
            .and_then(|m| m.as_str().chars().next())
            .and_then(|l| index_of(l, options))
    };
    let last = super::span::last_line(text)?;
    if let Some(i) = LETTER_LINE.captures(last).and_then(letter_of) {
        return Some(Answer::choice(i));
    }
    for line in super::fallback::closing_lines(text).into_iter().rev() {
        if let Some(i) = BOLD_LETTER.captures_iter(line).last().and_then(letter_of) {
            return Some(Answer::choice(i));
        }
    }
    for re in [&*PAREN_LETTER, &*NAMED_LETTER] {
        if let Some(i) = re.captures_iter(last).last().and_then(letter_of) {
            return Some(Answer::choice(i));
        }
    }
    option_text_in(last, prepared)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Vec<String> {
        ["Paris", "London", "Berlin", "New York City"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn option_letters_run_a_to_z() {
        assert_eq!(option_letter(0), Some('A'));
        assert_eq!(option_letter(10), Some('K'));
        assert_eq!(option_letter(MAX_OPTIONS - 1), Some('Z'));
        assert_eq!(option_letter(MAX_OPTIONS), None);
        assert_eq!(option_letter(usize::MAX), None);
    }

    #[test]
    fn letters_beyond_j_need_that_many_options() {
        let eighteen: Vec<String> = (0..18).map(|i| format!("colour {i}")).collect();
        let none: &[String] = &[];
        assert_eq!(
            from_span(" (K)", &eighteen).map(|a| a.canonical),
            Some("K".into())
        );
        assert_eq!(
            from_span(" Q", &eighteen).map(|a| a.canonical),
            Some("Q".into())
        );
        assert_eq!(
            from_span(" (R)", &eighteen).map(|a| a.canonical),
            Some("R".into())
        );
        assert_eq!(from_span(" (S)", &eighteen), None, "no 19th option");
        assert_eq!(from_span(" (K)", none), None, "A–J without options");
        assert_eq!(
            parse_exact("(K)", &eighteen).map(|a| a.canonical),
            Some("K".into())
        );
        assert_eq!(parse_exact("K", none), None);
        let four = opts();
        assert_eq!(from_span(" (E)", &four), None);
    }

    #[test]
    fn letters_in_spans() {
        let none: &[String] = &[];
        let l = |s: &str| from_span(s, none).map(|a| a.canonical);
        assert_eq!(l(" (B)"), Some("B".into()));
        assert_eq!(l(" B) Paris"), Some("B".into()));
        assert_eq!(l(" **C**"), Some("C".into()));
        assert_eq!(l(" b"), Some("B".into()));
        assert_eq!(l(" option D."), Some("D".into()));
        assert_eq!(l(" a bit tricky, but (C)"), Some("C".into()));
        assert_eq!(l(" A."), Some("A".into()));
        assert_eq!(l(" I think it is (D)"), Some("D".into()));
        assert_eq!(l(" K"), None);
    }

    #[test]
    fn option_texts_map_to_letters() {
        let o = opts();
        assert_eq!(
            from_span(" Paris.", &o).map(|a| a.canonical),
            Some("A".into())
        );
        assert_eq!(
            from_span(" the city of new york city", &o).map(|a| a.canonical),
            Some("D".into())
        );
        assert_eq!(
            parse_exact("London", &o).map(|a| a.canonical),
            Some("B".into())
        );
        // E is out of range when four options are given.
        assert_eq!(parse_exact("E", &o), None);
    }

    #[test]
    fn whole_text_fallbacks() {
        let none: &[String] = &[];
        let w = |s: &str| from_whole_text(s, none).map(|a| a.canonical);
        assert_eq!(w("Looking at each option...\n\nB) 42"), Some("B".into()));
        assert_eq!(w("I pick **C** here because it fits."), Some("C".into()));
        assert_eq!(w("A good way to see this is (D) fits."), Some("D".into()));
        assert_eq!(
            w("(A) one\n(B) two\nIt is hard to pick between them."),
            None
        );
        assert_eq!(w("A good way to see this."), None);
    }
}
