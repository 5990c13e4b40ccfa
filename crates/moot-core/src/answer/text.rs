//! The `text` kind: whitespace- and case-folded free text (freemad's behaviour).

use super::value::Answer;

/// Folds a span to comparable text: markdown emphasis, `\text{}`, quotes and a trailing period
/// removed, lowercased, whitespace collapsed.
pub(super) fn fold(span: &str) -> String {
    let mut s = span.trim();
    if let Some(inner) = s.strip_prefix("\\text{").and_then(|r| r.strip_suffix('}')) {
        s = inner;
    }
    let unmarked = s.replace("**", "").replace("__", "");
    // Strip wrappers until nothing changes: `") >".` needs the period, then the quotes, to go.
    // Every round only narrows the slice (no copy), so `."."."…` costs its length, not its
    // length squared.
    let mut s = unmarked.as_str();
    loop {
        let trimmed = s
            .trim()
            .trim_start_matches([':', '|'])
            .trim_end_matches('|')
            .trim_matches(['"', '\'', '`', '“', '”', '‘', '’'])
            .trim_end_matches(['.', '!'])
            .trim();
        // A sub-slice of `s`: equal exactly when nothing was trimmed.
        if trimmed.len() == s.len() {
            break;
        }
        s = trimmed;
    }
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

pub(super) fn from_span(span: &str) -> Option<Answer> {
    let folded = fold(span);
    (!folded.is_empty()).then(|| Answer::text(folded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_markup_case_and_space() {
        assert_eq!(fold("  **Valid**. "), "valid");
        assert_eq!(fold("\"Apple   Banana\tcherry\""), "apple banana cherry");
        assert_eq!(fold(": ] ) }"), "] ) }");
        assert!(from_span(" ** ").is_none());
    }
}
