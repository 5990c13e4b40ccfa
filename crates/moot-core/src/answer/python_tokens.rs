//! A small tokenizer of Python source, for comparing programs and arranging them — not for
//! running them (the sandbox's Python does that).
//!
//! It follows Python's own tokenizer where the difference matters to moot: comments and blank
//! lines (and line breaks inside brackets or after a backslash) are not tokens; strings of every
//! prefix and quote form are one token each, kept verbatim — triple-quoted ones across lines,
//! f-strings with their replacement fields, nested strings and format specs included; `//` is an
//! operator; indentation becomes `Indent`/`Dedent` tokens by Python's rules (tabs to multiples
//! of eight, and an indentation that only agrees under one tab size is an error, as Python's
//! `TabError`). Text Python's tokenizer would reject (an unterminated string, an unclosed or
//! mismatched bracket, a dedent to no outer level, a character such as `$`, `?` or a lone `!`)
//! is an error. Comments are kept as tokens so that callers can look at them; skip them to
//! compare.

use std::fmt;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Name,
    Number,
    /// A whole string literal with its prefix and quotes (f-strings included).
    String,
    Op,
    Comment,
    /// The end of a logical line.
    Newline,
    Indent,
    Dedent,
}

/// One token: its kind and where it is in the source (`Newline`, `Indent` and `Dedent` have
/// an empty or line-break text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    pub kind: Kind,
    pub text: &'a str,
    /// Byte offset of the token in the source.
    pub start: usize,
}

impl Token<'_> {
    pub fn end(&self) -> usize {
        self.start + self.text.len()
    }
}

/// Why the source is not Python's tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TokenizeError {
    /// 1-based line of the offending text.
    pub line: usize,
    pub what: &'static str,
}

impl fmt::Display for TokenizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

impl std::error::Error for TokenizeError {}

/// Operators and delimiters, longest first so that the first match is the longest.
const OPERATORS: &[&str] = &[
    "**=", "//=", ">>=", "<<=", "...", "!=", "%=", "&=", "**", "*=", "+=", "-=", "->", "//", "/=",
    ":=", "<<", "<=", "==", ">=", ">>", "@=", "^=", "|=", "%", "&", "(", ")", "*", "+", ",", "-",
    ".", "/", ":", ";", "<", "=", ">", "@", "[", "]", "^", "{", "|", "}", "~",
];

/// How deep f-string fields may nest (strings in fields, fields in format specs): deeper text
/// is an error, not a deeper stack. Python itself stops at a few levels of format specs and
/// at 150 nested f-strings; no program answers with more than a handful.
const MAX_NESTING: usize = 64;

/// String prefixes Python accepts (compared case-insensitively).
const PREFIXES: &[&str] = &["r", "u", "b", "f", "t", "br", "rb", "fr", "rf", "tr", "rt"];

/// The tokens of `src` (with `\n` line ends; a `\r` is an error), or why it is not Python.
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token<'_>>, TokenizeError> {
    Lexer {
        src,
        bytes: src.as_bytes(),
        pos: 0,
        tokens: Vec::new(),
        indents: vec![(0, 0)],
        brackets: Vec::new(),
        at_line_start: true,
        line_has_tokens: false,
    }
    .run()
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    tokens: Vec<Token<'a>>,
    /// Open indentation levels: (column with tabs to 8, column with tabs to 1).
    indents: Vec<(usize, usize)>,
    /// Open brackets: the closing byte each expects.
    brackets: Vec<u8>,
    /// At the start of a physical line that begins a logical line (indentation counts).
    at_line_start: bool,
    /// The current logical line has a token other than a comment.
    line_has_tokens: bool,
}

impl<'a> Lexer<'a> {
    fn error(&self, at: usize, what: &'static str) -> TokenizeError {
        let at = at.min(self.src.len());
        TokenizeError {
            line: 1 + self.bytes[..at].iter().filter(|&&b| b == b'\n').count(),
            what,
        }
    }

    fn peek(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    fn push(&mut self, kind: Kind, start: usize, end: usize) {
        if kind != Kind::Comment {
            self.line_has_tokens = true;
        }
        self.tokens.push(Token {
            kind,
            text: &self.src[start..end],
            start,
        });
    }

    fn run(mut self) -> Result<Vec<Token<'a>>, TokenizeError> {
        while self.pos < self.bytes.len() {
            if self.at_line_start {
                self.at_line_start = false;
                self.indentation()?;
                continue;
            }
            let start = self.pos;
            let b = self.bytes[self.pos];
            match b {
                b' ' | b'\t' | b'\x0c' => self.pos += 1,
                b'\n' => {
                    self.pos += 1;
                    if self.brackets.is_empty() {
                        if self.line_has_tokens {
                            self.push(Kind::Newline, start, start + 1);
                            self.line_has_tokens = false;
                        }
                        self.at_line_start = true;
                    }
                }
                b'#' => {
                    let end = self.line_end(start);
                    self.pos = end;
                    self.push(Kind::Comment, start, end);
                }
                b'\\' => {
                    if self.peek(1) != Some(b'\n') {
                        return Err(self.error(start, "a backslash not at the end of its line"));
                    }
                    self.pos += 2;
                    if self.pos >= self.bytes.len() {
                        return Err(self.error(start, "a backslash continues past the end"));
                    }
                }
                b'"' | b'\'' => {
                    self.pos = self.string(start, start, 0)?;
                    self.push(Kind::String, start, self.pos);
                }
                b'0'..=b'9' => self.number(start),
                b'.' if self.peek(1).is_some_and(|c| c.is_ascii_digit()) => self.number(start),
                _ if b == b'_' || b.is_ascii_alphabetic() || b >= 0x80 => self.name(start)?,
                _ => self.operator(start)?,
            }
        }
        if !self.brackets.is_empty() {
            return Err(self.error(self.pos, "a bracket is never closed"));
        }
        let end = self.src.len();
        if self.line_has_tokens {
            self.push(Kind::Newline, end, end);
        }
        for _ in 1..self.indents.len() {
            self.push(Kind::Dedent, end, end);
        }
        Ok(self.tokens)
    }

    /// The offset of the `\n` ending the line that `from` is on (or the end of the source).
    fn line_end(&self, from: usize) -> usize {
        self.bytes[from..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(self.bytes.len(), |i| from + i)
    }

    /// Reads a line's indentation and emits `Indent`/`Dedent` when the line has code.
    fn indentation(&mut self) -> Result<(), TokenizeError> {
        let (mut col, mut alt) = (0usize, 0usize);
        while let Some(b) = self.peek(0) {
            match b {
                b' ' => {
                    col += 1;
                    alt += 1;
                }
                b'\t' => {
                    col = (col / 8 + 1) * 8;
                    alt += 1;
                }
                b'\x0c' => {
                    col = 0;
                    alt = 0;
                }
                _ => break,
            }
            self.pos += 1;
        }
        // Blank lines, comment-only lines and a continuation at the end do not count.
        if matches!(self.peek(0), None | Some(b'\n') | Some(b'#')) {
            return Ok(());
        }
        let at = self.pos;
        let &(top, top_alt) = self.indents.last().unwrap_or(&(0, 0));
        if col == top {
            if alt != top_alt {
                return Err(self.error(at, "inconsistent use of tabs and spaces in indentation"));
            }
        } else if col > top {
            if alt <= top_alt {
                return Err(self.error(at, "inconsistent use of tabs and spaces in indentation"));
            }
            self.indents.push((col, alt));
            self.push(Kind::Indent, at, at);
        } else {
            while self.indents.last().is_some_and(|&(c, _)| col < c) {
                self.indents.pop();
                self.push(Kind::Dedent, at, at);
            }
            match self.indents.last() {
                Some(&(c, a)) if c == col && a == alt => {}
                Some(&(c, _)) if c == col => {
                    return Err(self.error(at, "inconsistent use of tabs and spaces in indentation"))
                }
                _ => return Err(self.error(at, "an unindent that matches no outer level")),
            }
        }
        // Indent and dedent tokens do not make the line one with code.
        self.line_has_tokens = false;
        Ok(())
    }

    fn number(&mut self, start: usize) {
        let digits = |this: &mut Self, ok: fn(u8) -> bool| {
            while this.peek(0).is_some_and(|c| ok(c) || c == b'_') {
                this.pos += 1;
            }
        };
        if self.bytes[start] == b'0'
            && matches!(self.peek(1), Some(b'x' | b'X' | b'o' | b'O' | b'b' | b'B'))
        {
            self.pos += 2;
            digits(self, |c| c.is_ascii_hexdigit());
        } else {
            digits(self, |c| c.is_ascii_digit());
            if self.peek(0) == Some(b'.') {
                self.pos += 1;
                digits(self, |c| c.is_ascii_digit());
            }
            if matches!(self.peek(0), Some(b'e' | b'E')) {
                let sign = usize::from(matches!(self.peek(1), Some(b'+' | b'-')));
                if self.peek(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1 + sign;
                    digits(self, |c| c.is_ascii_digit());
                }
            }
            if matches!(self.peek(0), Some(b'j' | b'J')) {
                self.pos += 1;
            }
        }
        self.push(Kind::Number, start, self.pos);
    }

    /// A name, or a string when the name is a string prefix right before a quote.
    fn name(&mut self, start: usize) -> Result<(), TokenizeError> {
        let rest = &self.src[start..];
        let mut end = start;
        for (i, c) in rest.char_indices() {
            let ok = if i == 0 {
                c == '_' || c.is_alphabetic()
            } else {
                c == '_' || c.is_alphanumeric()
            };
            if !ok {
                break;
            }
            end = start + i + c.len_utf8();
        }
        if end == start {
            return Err(self.error(start, "a character Python does not read"));
        }
        let word = &self.src[start..end];
        if matches!(self.bytes.get(end), Some(b'"' | b'\''))
            && PREFIXES.iter().any(|p| p.eq_ignore_ascii_case(word))
        {
            self.pos = self.string(start, end, 0)?;
            self.push(Kind::String, start, self.pos);
        } else {
            self.pos = end;
            self.push(Kind::Name, start, end);
        }
        Ok(())
    }

    fn operator(&mut self, start: usize) -> Result<(), TokenizeError> {
        let rest = &self.bytes[start..];
        let Some(op) = OPERATORS.iter().find(|op| rest.starts_with(op.as_bytes())) else {
            return Err(self.error(start, "a character Python does not read"));
        };
        self.pos = start + op.len();
        match op.as_bytes()[0] {
            b'(' => self.brackets.push(b')'),
            b'[' => self.brackets.push(b']'),
            b'{' => self.brackets.push(b'}'),
            close @ (b')' | b']' | b'}') => self.close(start, close)?,
            _ => {}
        }
        self.push(Kind::Op, start, self.pos);
        Ok(())
    }

    /// Closes the innermost bracket with `close`, which must be the one it expects.
    fn close(&mut self, at: usize, close: u8) -> Result<(), TokenizeError> {
        if self.brackets.pop() == Some(close) {
            Ok(())
        } else {
            Err(self.error(at, "a closing bracket that matches no opening one"))
        }
    }

    /// The end of the string literal whose prefix starts at `start` and whose opening quote is
    /// at `quote`; `nesting` is how many f-string fields hold it.
    fn string(&self, start: usize, quote: usize, nesting: usize) -> Result<usize, TokenizeError> {
        if nesting > MAX_NESTING {
            return Err(self.error(start, "f-strings nested too deeply"));
        }
        let prefix = self.src[start..quote].to_ascii_lowercase();
        let q = self.bytes[quote];
        let triple = self.bytes.get(quote + 1) == Some(&q) && self.bytes.get(quote + 2) == Some(&q);
        let mut at = quote + if triple { 3 } else { 1 };
        let format = prefix.contains('f') || prefix.contains('t');
        let raw = prefix.contains('r');
        let unterminated = || self.error(start, "a string that is never closed");
        loop {
            let Some(&b) = self.bytes.get(at) else {
                return Err(unterminated());
            };
            match b {
                _ if b == q => {
                    if !triple {
                        return Ok(at + 1);
                    }
                    if self.bytes.get(at + 1) == Some(&q) && self.bytes.get(at + 2) == Some(&q) {
                        return Ok(at + 3);
                    }
                    at += 1;
                }
                b'\n' if !triple => return Err(unterminated()),
                b'\\' => {
                    let next = self.bytes.get(at + 1).copied();
                    match next {
                        None => return Err(unterminated()),
                        // In an f-string a brace after a backslash is still a brace.
                        Some(b'{' | b'}') if format => at += 1,
                        // `\N{NAME}` is one escape, not a replacement field.
                        Some(b'N') if format && !raw && self.bytes.get(at + 2) == Some(&b'{') => {
                            let close = self.bytes[at..]
                                .iter()
                                .position(|&c| c == b'}' || c == q || c == b'\n')
                                .map(|i| at + i);
                            match close {
                                Some(c) if self.bytes[c] == b'}' => at = c + 1,
                                _ => {
                                    return Err(self.error(at, "a \\N escape that is never closed"))
                                }
                            }
                        }
                        Some(_) => at += 2,
                    }
                }
                b'{' if format => {
                    if self.bytes.get(at + 1) == Some(&b'{') {
                        at += 2;
                    } else {
                        at = self.replacement_field(start, at + 1, nesting + 1)?;
                    }
                }
                b'}' if format => {
                    if self.bytes.get(at + 1) == Some(&b'}') {
                        at += 2;
                    } else {
                        return Err(self.error(at, "a single '}' in an f-string"));
                    }
                }
                _ => at += 1,
            }
        }
    }

    /// Scans an f-string's replacement field from just after its `{` to just after its `}`:
    /// an expression (brackets and strings nested), then an optional conversion and format
    /// spec, which may hold fields of its own.
    fn replacement_field(
        &self,
        start: usize,
        mut at: usize,
        nesting: usize,
    ) -> Result<usize, TokenizeError> {
        if nesting > MAX_NESTING {
            return Err(self.error(start, "f-strings nested too deeply"));
        }
        let unclosed = || self.error(start, "an f-string field that is never closed");
        let mut depth = 0usize;
        // The expression.
        loop {
            let Some(&b) = self.bytes.get(at) else {
                return Err(unclosed());
            };
            match b {
                b'"' | b'\'' => at = self.string(at, at, nesting)?,
                _ if b == b'_' || b.is_ascii_alphabetic() => {
                    let end = at
                        + self.bytes[at..]
                            .iter()
                            .position(|&c| !(c == b'_' || c.is_ascii_alphanumeric()))
                            .unwrap_or(self.bytes.len() - at);
                    let word = &self.src[at..end];
                    if matches!(self.bytes.get(end), Some(b'"' | b'\''))
                        && PREFIXES.iter().any(|p| p.eq_ignore_ascii_case(word))
                    {
                        at = self.string(at, end, nesting)?;
                    } else {
                        at = end;
                    }
                }
                b'#' => at = self.line_end(at),
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    at += 1;
                }
                b')' | b']' => {
                    depth = depth.checked_sub(1).ok_or_else(|| {
                        self.error(at, "a closing bracket that matches no opening one")
                    })?;
                    at += 1;
                }
                b'}' if depth == 0 => return Ok(at + 1),
                b'}' => {
                    depth -= 1;
                    at += 1;
                }
                b':' if depth == 0 => {
                    at += 1;
                    break;
                }
                _ => at += 1,
            }
        }
        // The format spec: literal text and nested fields, to the closing brace.
        loop {
            match self.bytes.get(at) {
                None => return Err(unclosed()),
                Some(b'{') => at = self.replacement_field(start, at + 1, nesting + 1)?,
                Some(b'}') => return Ok(at + 1),
                Some(_) => at += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tokens as `kind:text` words, comments included.
    fn words(src: &str) -> Vec<String> {
        tokenize(src)
            .unwrap_or_else(|e| panic!("{src:?}: {e}"))
            .iter()
            .map(|t| match t.kind {
                Kind::Newline => "NL".to_string(),
                Kind::Indent => "IN".to_string(),
                Kind::Dedent => "DE".to_string(),
                _ => t.text.to_string(),
            })
            .collect()
    }

    #[test]
    fn lines_indentation_and_operators() {
        assert_eq!(
            words("def f(x):\n    return x // 2\n"),
            ["def", "f", "(", "x", ")", ":", "NL", "IN", "return", "x", "//", "2", "NL", "DE"]
        );
        // Blank and comment lines do not end a logical line or change indentation.
        assert_eq!(
            words("if a:\n\n  # c\n        # d\n    b **= 3  # e\nc"),
            [
                "if", "a", ":", "NL", "# c", "# d", "IN", "b", "**=", "3", "# e", "NL", "DE", "c",
                "NL"
            ]
        );
        // Inside brackets and after a backslash, a line break is not a line end.
        assert_eq!(
            words("x = (1,\n  # c\n 2)\ny = 1 + \\\n  2"),
            ["x", "=", "(", "1", ",", "# c", "2", ")", "NL", "y", "=", "1", "+", "2", "NL"]
        );
        assert_eq!(
            words("a...b->c:=d"),
            ["a", "...", "b", "->", "c", ":=", "d", "NL"]
        );
        assert_eq!(
            words("x = 0x_1F + 1_000.5e-3j + .5 + 1."),
            [
                "x",
                "=",
                "0x_1F",
                "+",
                "1_000.5e-3j",
                "+",
                ".5",
                "+",
                "1.",
                "NL"
            ]
        );
        assert_eq!(words("π = 3"), ["π", "=", "3", "NL"]);
        assert!(words("").is_empty());
    }

    #[test]
    fn strings_of_every_form_are_one_token() {
        let cases = [
            r#"'a # b'"#,
            r#""it's""#,
            r#"'don\'t'"#,
            "'''a\n# not a comment\n\nb'''",
            "\"\"\"x \"\" \\\"\"\" y\"\"\"",
            r#"r'\d+\''"#,
            r#"Rb"\x00""#,
            r#"u'x'"#,
            r#"f'{x!r:>{width}} {{literal}} # {y["k"]}'"#,
            r#"f"{x["a"]}""#,
            r#"f"{'}'}""#,
            "f'''{\n  x  # comment\n}'''",
            r#"rf"\{x}""#,
            r#"f"\N{BULLET} {x:{'<'}10}""#,
            r#"f"{d[{'a': 1}['a']]}""#,
            "'a\\\nb'",
            r#"t"{x}""#,
        ];
        for s in cases {
            assert_eq!(words(&format!("v = {s}")), ["v", "=", s, "NL"], "{s}");
        }
        // A prefix-looking name is a name when no quote follows.
        assert_eq!(words("rb + f"), ["rb", "+", "f", "NL"]);
    }

    #[test]
    fn what_python_rejects_is_an_error() {
        let bad = [
            ("x = 'abc", 1),
            ("x = '''abc\n'", 1),
            ("x = 'a\nb'", 1),
            ("f(1,\n2", 2),
            ("f(1]", 1),
            (")", 1),
            ("if x:\n    a\n  b", 3),
            ("x = $y", 1),
            ("x = a ? b : c", 1),
            ("if !x: pass", 1),
            ("x = 1 \\ 2", 1),
            ("x = 1 \\", 1),
            ("if x:\n\ta\n        b", 3),
            ("f'{x'", 1),
            ("f'}'", 1),
            ("x = `y`", 1),
            ("a = 'x' \u{2192} 'y'", 1),
        ];
        for (src, line) in bad {
            let e = tokenize(src).expect_err(src);
            assert_eq!(e.line, line, "{src}: {e}");
        }
        // Nesting is bounded: an error, not a stack overflow.
        let deep = format!("x = {}1{}", "f'{".repeat(100_000), "}'".repeat(100_000));
        assert_eq!(
            tokenize(&deep).unwrap_err().what,
            "f-strings nested too deeply"
        );
        let deep = format!(
            "x = f'{{x:{}{}'",
            "{y:".repeat(100_000),
            "}".repeat(100_001)
        );
        assert_eq!(
            tokenize(&deep).unwrap_err().what,
            "f-strings nested too deeply"
        );
        let ok = format!("x = {}1{}", "f'{".repeat(60), "}'".repeat(60));
        assert!(tokenize(&ok).is_ok());
        // Tabs and spaces that agree under both tab sizes are fine.
        assert!(tokenize("if x:\n\ta\n\tb").is_ok());
        assert!(tokenize("x != y").is_ok());
    }
}
