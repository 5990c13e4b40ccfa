//! Text from models and users, made safe for where moot writes it: a terminal, one line of a
//! generated file, and Markdown (`moot show`, `report.md`). Model and user text is data: it
//! must not drive a terminal (escape sequences that set the title, clear the screen or move
//! the cursor), start a line of its own in a generated file, or become structure in Markdown
//! (raw HTML, links, table cells, code spans).

use std::borrow::Cow;

/// Whether `c` must not reach a terminal raw: control characters (C0 but newline and tab, DEL,
/// C1), the bidirectional overrides, isolates and marks that make text read otherwise than it
/// is stored, and the Unicode line and paragraph separators.
fn drives_a_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
        // The directional marks, and the line and paragraph separators some terminals break at.
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{2028}' | '\u{2029}')
}

/// `text` with every character that could drive a terminal written as a visible escape
/// (`\u{1b}`); newlines and tabs stay. Borrowed when there was nothing to escape.
pub fn terminal(text: &str) -> Cow<'_, str> {
    escaped(text, drives_a_terminal)
}

/// JSON text (as serde_json writes it) with every character that could drive a terminal that
/// it leaves raw — DEL, C1 controls, bidirectional overrides: only ever inside its strings —
/// written as a `\uXXXX` escape. The same JSON value, safe to print.
pub fn json(text: &str) -> Cow<'_, str> {
    let raw = |c: char| c != '\n' && c != '\t' && c != '\r' && drives_a_terminal(c);
    if !text.chars().any(raw) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if raw(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` on one line: [`terminal`], and newlines and tabs escaped too (`\n`), for a line of a
/// generated file (a comment) or of a table.
pub fn one_line(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t' || drives_a_terminal(c))
}

fn escaped(text: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` as plain inline Markdown on one line: the characters that start HTML, links, images,
/// code spans, table cells and `*` emphasis are backslash-escaped, line breaks are spaces, so nothing in it becomes markup
/// (no `<img onerror>`, no `javascript:` link, no `|` splitting a table row). Text that is
/// only words and numbers is unchanged.
pub fn markdown_inline(text: &str) -> String {
    // Line breaks read as spaces: inline text (a cell, a heading) has one line.
    let spaced: String = text
        .chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect();
    let line = one_line(&spaced);
    let mut out = String::with_capacity(line.len() + 8);
    for c in line.chars() {
        // The characters that make HTML, links and images, code spans, table cells and
        // emphasis; `_` stays (inside words it is never emphasis, and names use it).
        if matches!(c, '\\' | '`' | '*' | '[' | ']' | '<' | '>' | '|') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` as an inline code span on one line: delimited by more backticks than any run of
/// them inside, so no backtick in it ends the span early.
pub fn markdown_code(text: &str) -> String {
    let line = one_line(text);
    let fence = "`".repeat(longest_run(&line, '`') + 1);
    // A span that starts or ends with a backtick needs a space inside its delimiters.
    let pad = if line.starts_with('`') || line.ends_with('`') || line.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{line}{pad}{fence}")
}

/// `text` as a fenced code block (ending with a newline): a fence longer than any run of
/// backticks inside, so nothing in it closes the block or is read as Markdown or HTML.
pub fn markdown_block(text: &str) -> String {
    markdown_fenced(text, "text")
}

/// [`markdown_block`] with another info string (`sh`, `json`).
pub fn markdown_fenced(text: &str, info: &str) -> String {
    let text = terminal(text);
    let fence = "`".repeat((longest_run(&text, '`') + 1).max(3));
    let body = text.trim_end_matches('\n');
    format!("{fence}{info}\n{body}\n{fence}\n")
}

fn longest_run(text: &str, c: char) -> usize {
    let (mut longest, mut run) = (0, 0);
    for ch in text.chars() {
        run = if ch == c { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_keeps_its_value_and_drives_no_terminal() {
        let value = serde_json::json!({
            "t": "a\u{9b}31m b\u{202e}c\u{7f}\u{1b}]0;x\u{7}\nz\u{200f}\u{200e}\u{61c}\u{2028}"
        });
        let text = serde_json::to_string_pretty(&value).unwrap();
        let shown = json(&text);
        assert!(
            !shown.chars().any(|c| c != '\n' && drives_a_terminal(c)),
            "{shown}"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&shown).unwrap(),
            value
        );
        assert!(matches!(json("{\"a\": 1}"), Cow::Borrowed(_)));
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escape_sequences_are_shown_not_obeyed() {
        let hostile = "ok\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}txt.exe";
        let shown = terminal(hostile);
        assert!(!shown.chars().any(drives_a_terminal), "{shown}");
        assert_eq!(
            shown,
            "ok\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{9b}31m\\u{202e}txt.exe"
        );
        assert_eq!(terminal("two\nlines\tand a tab"), "two\nlines\tand a tab");
        assert!(matches!(terminal("plain"), Cow::Borrowed(_)));
        assert_eq!(one_line("a\nb\r\n[[agents]]"), "a\\nb\\r\\n[[agents]]");
    }

    #[test]
    fn markdown_inline_text_holds_no_markup() {
        assert_eq!(
            markdown_inline("<img src=x onerror=alert(1)>"),
            "\\<img src=x onerror=alert(1)\\>"
        );
        assert_eq!(
            markdown_inline("[click](javascript:alert(1))"),
            "\\[click\\](javascript:alert(1))"
        );
        assert_eq!(markdown_inline("a | b\nc"), "a \\| b c");
        assert_eq!(markdown_inline("408"), "408");
        assert_eq!(markdown_inline("3.5 + 2-1"), "3.5 + 2-1");
    }

    #[test]
    fn code_spans_and_blocks_outlast_the_backticks_inside() {
        assert_eq!(markdown_code("a`b"), "``a`b``");
        assert_eq!(markdown_code("`x`"), "`` `x` ``");
        assert_eq!(markdown_code("plain"), "`plain`");
        assert_eq!(
            markdown_block("```\n</code><script>"),
            "````text\n```\n</code><script>\n````\n"
        );
    }

    proptest! {
        #[test]
        fn nothing_escaped_drives_a_terminal(text in any::<String>()) {
            prop_assert!(!terminal(&text).chars().any(drives_a_terminal));
            let line = one_line(&text);
            prop_assert!(!line.contains('\n'));
            prop_assert!(!line.chars().any(drives_a_terminal));
        }

        #[test]
        fn a_code_span_is_never_closed_early(text in "[a-z`]{0,12}") {
            let span = markdown_code(&text);
            let fence = span.chars().take_while(|&c| c == '`').count();
            prop_assert!(fence > longest_run(&text, '`'));
        }
    }
}
