//! LaTeX answer normalisation and evaluation for the `math` kind (see docs/architecture.md,
//! Answers).
//!
//! Normalisation makes equal-looking answers equal strings (`\dfrac12` and `\frac{1}{2}`,
//! `\left( 3, \frac{\pi}{2} \right)` and `(3,\frac{\pi}{2})`, `90^\circ` and `90`). Evaluation turns
//! the numeric ones into values, so `0.5`, `\frac{1}{2}` and `1/2` agree, as do `\sqrt{8}` and
//! `2\sqrt{2}`.

use std::sync::LazyLock;

use regex::Regex;

use super::number::{approx_eq_f64, exponent_at, format_f64};
use super::span::balanced_group;

static TEXT_COMMANDS: &[&str] = &[
    "\\text",
    "\\textbf",
    "\\textit",
    "\\mathrm",
    "\\mathbf",
    "\\mbox",
    "\\operatorname",
];
static VARIABLE_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[a-zA-Z]|\\[a-zA-Z]+)(?:_\{?[a-zA-Z0-9]+\}?)?\s*(?:=|\\in)\s*")
        .expect("valid regex")
});
static TRAILING_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(.*?[0-9}).])\s+(?:[a-zA-Z]+\.?\s*){1,3}$").expect("valid regex")
});
/// A number, a space, then what would read as its exponent (`12 e 4`, `3 E-2`): written apart,
/// it is not scientific notation, and must not become it when the spaces go.
static SPACED_EXPONENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([0-9.])\s+([eE]\s*[+-]?\s*[0-9])").expect("valid regex"));

static THOUSANDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$").expect("valid regex"));

/// Normalises a LaTeX answer to a comparable string: no spaces, no `$`, `\left`/`\right`,
/// `\dfrac`→`\frac`, units and degree signs removed, `x =` prefix removed, no trailing period.
pub fn normalize(raw: &str) -> String {
    let mut s = raw.trim().to_string();
    // A pattern whose first byte is not in the text cannot occur, then or after any of these
    // replacements (they only remove bytes, or write `\`, ` `, `*` and `-`, which start no
    // pattern but `\`'s, present already): its pass over the text is skipped.
    let mut present = [false; 256];
    for &b in s.as_bytes() {
        present[usize::from(b)] = true;
    }
    for (from, to) in [
        ("\\(", ""),
        ("\\)", ""),
        ("\\[", ""),
        ("\\]", ""),
        ("\\$", ""),
        ("$", ""),
        ("\\displaystyle", ""),
        ("\\left", ""),
        ("\\right", ""),
        ("\\dfrac", "\\frac"),
        ("\\tfrac", "\\frac"),
        ("\\!", ""),
        ("\\,", ""),
        ("\\;", ""),
        ("\\:", ""),
        ("\\quad", ""),
        ("~", " "),
        ("^\\circ", ""),
        ("^{\\circ}", ""),
        ("\\circ", ""),
        ("°", ""),
        ("\\degree", ""),
        ("\\%", ""),
        ("%", ""),
        ("{,}", ""),
        ("\\cdot", "*"),
        ("\\times", "*"),
        ("−", "-"),
    ] {
        if present[usize::from(from.as_bytes()[0])] {
            s = s.replace(from, to);
        }
    }
    s = strip_text_commands(&s);
    s = s
        .trim_end_matches(|c: char| c == '.' || c == ',' || c.is_whitespace())
        .trim()
        .to_string();
    if let Some(m) = VARIABLE_PREFIX.find(&s) {
        let rest = &s[m.end()..];
        if !rest.contains('=') && !rest.trim().is_empty() {
            s = rest.to_string();
        }
    }
    if let Some(c) = TRAILING_WORDS.captures(&s) {
        let head = c.get(1).map_or("", |m| m.as_str());
        if !head.contains('\\') || head.ends_with('}') {
            s = head.to_string();
        }
    }
    // An empty group keeps the number and the letter apart once the spaces are gone.
    let s = SPACED_EXPONENT.replace_all(&s, "$1{}$2");
    let mut s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    if THOUSANDS.is_match(&s) {
        s = s.replace(',', "");
    }
    s = brace_short_arguments(&s);
    s = s.trim_end_matches(['.', ',']).to_string();
    if let Some(stripped) = s.strip_prefix('.') {
        s = format!("0.{stripped}");
    }
    s
}

/// Unwraps `\text{…}`-like groups. A group that follows other content is a unit
/// (`10 \text{ dollars}`) and is dropped; a group that is the whole answer (`\text{(B)}`) is kept.
///
/// Each round reads, for every command, its first occurrence in the rest of the text; only one
/// followed by `{` counts. Those first occurrences are remembered while they lie ahead, so the
/// text is searched once per command instead of once per group.
fn strip_text_commands(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    // Whether `out` holds anything but whitespace (a later group is then a unit).
    let mut has_content = false;
    let mut push = |out: &mut String, piece: &str| {
        has_content = has_content || piece.chars().any(|c| !c.is_whitespace());
        out.push_str(piece);
        has_content
    };
    // The first occurrence of each command at or after the position it was searched from:
    // `None` before the first search, `Some(None)` when there is none.
    let mut first: [Option<Option<usize>>; TEXT_COMMANDS.len()] = [None; TEXT_COMMANDS.len()];
    let mut start = 0;
    loop {
        let mut next: Option<(usize, usize)> = None;
        for (k, cmd) in TEXT_COMMANDS.iter().enumerate() {
            let pos = match first[k] {
                Some(found) if found.is_none_or(|p| p >= start) => found,
                _ => {
                    let found = s[start..].find(cmd).map(|p| start + p);
                    first[k] = Some(found);
                    found
                }
            };
            if let Some(pos) = pos {
                let after = pos + cmd.len();
                if s[after..].starts_with('{') && next.is_none_or(|n| (pos, after) < n) {
                    next = Some((pos, after));
                }
            }
        }
        let Some((pos, open)) = next else {
            push(&mut out, &s[start..]);
            return out;
        };
        let follows_content = push(&mut out, &s[start..pos]);
        match balanced_group(s, open) {
            Some((inner, end)) => {
                let is_unit = follows_content
                    && inner
                        .trim()
                        .chars()
                        .all(|c| c.is_alphabetic() || c == ' ' || c == '.')
                    && !inner.trim().is_empty();
                if !is_unit {
                    push(&mut out, inner);
                }
                start = end;
            }
            None => {
                push(&mut out, &s[pos..]);
                return out;
            }
        }
    }
}

/// `\frac12` → `\frac{1}{2}`, `\sqrt2` → `\sqrt{2}`, `x^{2}` → `x^2`.
///
/// One pass, without recursion: a braced argument is rewritten in place, and when its closing
/// brace comes the command reads its next argument. (Rewriting each argument by a recursive call
/// on a copy of the rest cost time quadratic in the length, and stack in the nesting depth.)
fn brace_short_arguments(s: &str) -> String {
    let bytes = s.as_bytes();
    let unterminated = unterminated_braces(bytes);
    let mut out = String::with_capacity(s.len() + 8);
    // Argument groups being rewritten: (brace depth before the group's `{`, arguments its
    // command reads after it).
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut depth = 0usize;
    // Whether the byte at `i` is escaped by a backslash before it (`\{`, `\}`), as
    // `balanced_group` pairs them.
    let mut escaped = false;
    // Arguments the last command still reads, starting at `i`.
    let mut arguments = 0usize;
    let mut i = 0;
    loop {
        if arguments > 0 {
            match bytes.get(i) {
                Some(b'{') if unterminated.binary_search(&i).is_err() => {
                    // A braced argument: rewrite inside it, so `\frac{\sqrt3}{3}` and the next
                    // argument are both seen.
                    out.push('{');
                    groups.push((depth, arguments - 1));
                    depth += 1;
                    arguments = 0;
                    i += 1;
                    continue;
                }
                Some(&c) if c.is_ascii_alphanumeric() => {
                    out.push('{');
                    out.push(char::from(c));
                    out.push('}');
                    arguments -= 1;
                    i += 1;
                    continue;
                }
                _ => arguments = 0,
            }
        }
        let Some(&b) = bytes.get(i) else {
            return out;
        };
        let rest = &bytes[i..];
        let command = [(&b"\\frac"[..], 2), (&b"\\sqrt"[..], 1)]
            .into_iter()
            .find(|(cmd, _)| rest.starts_with(cmd));
        if let Some((cmd, arity)) = command {
            out.push_str(&s[i..i + cmd.len()]);
            i += cmd.len();
            arguments = arity;
            escaped = false;
            continue;
        }
        // ^{x} with a single character inside → ^x
        if let [b'^', b'{', c, b'}', ..] = rest {
            if c.is_ascii_alphanumeric() {
                out.push('^');
                out.push(char::from(*c));
                i += 4;
                escaped = false;
                continue;
            }
        }
        if !escaped && b == b'}' && depth > 0 {
            depth -= 1;
            if groups.last().is_some_and(|&(d, _)| d == depth) {
                if let Some((_, left)) = groups.pop() {
                    out.push('}');
                    arguments = left;
                    i += 1;
                    continue;
                }
            }
        } else if !escaped && b == b'{' {
            depth += 1;
        }
        escaped = !escaped && b == b'\\';
        let len = s[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&s[i..i + len]);
        i += len;
    }
}

/// Byte offsets of the `{` that [`balanced_group`] finds no closing brace for, in order.
fn unterminated_braces(bytes: &[u8]) -> Vec<usize> {
    let mut open = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            b'{' => open.push(i),
            b'}' => {
                open.pop();
            }
            _ => {}
        }
        i += 1;
    }
    open
}

/// The numeric value of a normalised answer, if it is a closed-form number built from decimals,
/// `+ - * /`, `^`, `\frac`, `\sqrt`, `\sqrt[n]`, `\pi`, `e` is not included (ambiguous with a
/// variable), parentheses and implicit multiplication (`2\sqrt{2}`, `3\pi`).
pub fn evaluate(normalized: &str) -> Option<f64> {
    let mut p = Parser {
        text: normalized,
        s: normalized.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.expr()?;
    (p.i == p.s.len() && v.is_finite()).then_some(v)
}

/// True when two normalised answers are the same: equal strings, equal values, or tuples /
/// intervals with the same brackets whose elements are pairwise the same.
pub fn equivalent(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if let (Some(x), Some(y)) = (evaluate(a), evaluate(b)) {
        return approx_eq_f64(x, y);
    }
    match (split_tuple(a), split_tuple(b)) {
        // A bare list is a set of solutions ("3,5,7" = "7,5,3"); a bracketed one is ordered.
        (Some((ao, _, ai)), Some((bo, _, bi))) if ao.is_empty() && bo.is_empty() => {
            same_multiset(&ai, &bi)
        }
        (Some((ao, ac, ai)), Some((bo, bc, bi))) => {
            ao == bo
                && ac == bc
                && ai.len() == bi.len()
                && ai.iter().zip(&bi).all(|(x, y)| equivalent(x, y))
        }
        _ => false,
    }
}

fn same_multiset(a: &[String], b: &[String]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut used = vec![false; b.len()];
    a.iter().all(|x| {
        let found = (0..b.len()).find(|&j| !used[j] && equivalent(x, &b[j]));
        found.map(|j| used[j] = true).is_some()
    })
}

/// Canonical text for a normalised answer: its value when it evaluates to a plain number
/// written as a decimal or integer, otherwise the normalised LaTeX itself.
pub fn canonical(normalized: &str) -> String {
    if normalized.parse::<f64>().is_ok() {
        if let Some(v) = evaluate(normalized) {
            return format_f64(v);
        }
    }
    normalized.to_string()
}

/// `(a,b)`, `[a,b)`, `\{a,b\}` → brackets and top-level elements. A bare `a,b` counts as a tuple
/// with no brackets.
fn split_tuple(s: &str) -> Option<(String, String, Vec<String>)> {
    if s.matches("\\pm").count() == 1 && !s.contains(',') {
        let parts = vec![s.replace("\\pm", "+"), s.replace("\\pm", "-")];
        return Some((String::new(), String::new(), parts));
    }
    let (open, close, inner) =
        if let Some(inner) = s.strip_prefix("\\{").and_then(|r| r.strip_suffix("\\}")) {
            ("{".to_string(), "}".to_string(), inner)
        } else {
            let first = s.chars().next()?;
            let last = s.chars().last()?;
            if matches!(first, '(' | '[') && matches!(last, ')' | ']') && s.len() >= 2 {
                (first.to_string(), last.to_string(), &s[1..s.len() - 1])
            } else {
                (String::new(), String::new(), s)
            }
        };
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for c in inner.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    (parts.len() > 1).then_some((open, close, parts))
}

/// How deeply an evaluated expression may nest (brackets, groups, signs). Real answers nest a
/// few levels; a response of a million `(` must not overflow the stack.
const MAX_NESTING: usize = 200;

struct Parser<'a> {
    /// The text read, and its bytes (`s`).
    text: &'a str,
    s: &'a [u8],
    i: usize,
    /// Nesting of `unary`, which every recursion of the grammar passes through.
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, token: &str) -> bool {
        if self.s[self.i..].starts_with(token.as_bytes()) {
            self.i += token.len();
            true
        } else {
            false
        }
    }

    fn expr(&mut self) -> Option<f64> {
        let mut v = self.term()?;
        loop {
            if self.eat("+") {
                v += self.term()?;
            } else if self.eat("-") {
                v -= self.term()?;
            } else {
                return Some(v);
            }
        }
    }

    fn term(&mut self) -> Option<f64> {
        let mut v = self.unary()?;
        loop {
            if self.eat("*") {
                v *= self.unary()?;
            } else if self.eat("/") {
                let d = self.unary()?;
                if d == 0.0 {
                    return None;
                }
                v /= d;
            } else if self.starts_atom() {
                v *= self.power()?;
            } else {
                return Some(v);
            }
        }
    }

    fn unary(&mut self) -> Option<f64> {
        if self.depth >= MAX_NESTING {
            return None;
        }
        self.depth += 1;
        let v = self.signed();
        self.depth -= 1;
        v
    }

    fn signed(&mut self) -> Option<f64> {
        if self.eat("-") {
            return Some(-self.unary()?);
        }
        if self.eat("+") {
            return self.unary();
        }
        self.power()
    }

    fn power(&mut self) -> Option<f64> {
        let base = self.atom()?;
        if self.eat("^") {
            let exponent = if self.peek() == Some(b'{') {
                self.group()?
            } else if self.peek() == Some(b'-') {
                self.i += 1;
                -self.atom()?
            } else {
                self.atom()?
            };
            return Some(base.powf(exponent));
        }
        Some(base)
    }

    fn starts_atom(&self) -> bool {
        match self.peek() {
            Some(c) if c.is_ascii_digit() || c == b'.' || c == b'(' || c == b'{' => true,
            Some(b'\\') => ["\\pi", "\\frac", "\\sqrt"]
                .iter()
                .any(|t| self.s[self.i..].starts_with(t.as_bytes())),
            _ => false,
        }
    }

    fn group(&mut self) -> Option<f64> {
        if !self.eat("{") {
            return None;
        }
        let v = self.expr()?;
        self.eat("}").then_some(v)
    }

    fn atom(&mut self) -> Option<f64> {
        match self.peek()? {
            b'(' => {
                self.i += 1;
                let v = self.expr()?;
                self.eat(")").then_some(v)
            }
            b'{' => self.group(),
            c if c.is_ascii_digit() || c == b'.' => self.number(),
            b'\\' => {
                if self.eat("\\pi") {
                    Some(std::f64::consts::PI)
                } else if self.eat("\\frac") {
                    let n = self.group()?;
                    let d = self.group()?;
                    (d != 0.0).then(|| n / d)
                } else if self.eat("\\sqrt") {
                    let root = if self.eat("[") {
                        let r = self.expr()?;
                        if !self.eat("]") {
                            return None;
                        }
                        r
                    } else {
                        2.0
                    };
                    let v = self.group()?;
                    if v < 0.0 || root == 0.0 {
                        return None;
                    }
                    Some(v.powf(1.0 / root))
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    fn number(&mut self) -> Option<f64> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit() || c == b'.') {
            self.i += 1;
        }
        // ASCII digits and points so far: both ends are character boundaries.
        let mantissa = self.text.get(start..self.i)?;
        // Scientific notation (`6.02e23`, `5E-1`), read whole, as a number anywhere is
        // (`number::exponent_at`); `2e` alone stays two times something.
        let Some((length, exponent)) = exponent_at(self.text.get(self.i..)?) else {
            return mantissa.parse().ok();
        };
        self.i += length;
        let value: f64 = format!("{mantissa}e{exponent}").parse().ok()?;
        // Out of a double's range: too large, or not zero yet too small to be told from it
        // (`1e400`, `1e-400`).
        let not_zero = mantissa.bytes().any(|c| matches!(c, b'1'..=b'9'));
        if !value.is_finite() || (value == 0.0 && not_zero) {
            return None;
        }
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_common_variants() {
        assert_eq!(normalize(r"\dfrac{1}{2}"), r"\frac{1}{2}");
        assert_eq!(normalize(r"\frac12"), r"\frac{1}{2}");
        assert_eq!(
            normalize(r"\left( 3, \frac{\pi}{2} \right)"),
            r"(3,\frac{\pi}{2})"
        );
        assert_eq!(normalize(r"90^\circ"), "90");
        assert_eq!(normalize(r"10 \text{ dollars}"), "10");
        assert_eq!(normalize(r"x = 5"), "5");
        assert_eq!(normalize(r"5."), "5");
        assert_eq!(normalize(", ."), "");
        assert_eq!(normalize(",. a"), "");
        assert_eq!(normalize(r"\text{(B)}"), "(B)");
        assert_eq!(normalize(r"1{,}000"), "1000");
        assert_eq!(normalize("1,000"), "1000");
        assert_eq!(normalize(r"$\sqrt2$"), r"\sqrt{2}");
        assert_eq!(normalize(r"x^{2}+1"), "x^2+1");
        assert_eq!(normalize("12 cm"), "12");
        assert_eq!(normalize(r"\$18.50"), "18.50");
    }

    #[test]
    fn evaluates_closed_forms() {
        let close = |s: &str, v: f64| {
            let got = evaluate(&normalize(s)).unwrap_or(f64::NAN);
            assert!(approx_eq_f64(got, v), "{s}: {got} != {v}");
        };
        close(r"\frac{1}{2}", 0.5);
        close(r"2\sqrt{2}", 8f64.sqrt());
        close(r"\frac{3\pi}{2}", 1.5 * std::f64::consts::PI);
        close(r"3\pi/2", 1.5 * std::f64::consts::PI);
        close(r"\sqrt[3]{27}", 3.0);
        close(r"-\frac{\sqrt{3}}{2}", -(3f64.sqrt()) / 2.0);
        close("2^{10}", 1024.0);
        close("(1+2)*3", 9.0);
        close("6.02e23", 6.02e23);
        close("5E-1", 0.5);
        close("2e+3", 2000.0);
        assert_eq!(evaluate("1e400"), None);
        assert_eq!(evaluate("2e"), None);
        assert_eq!(evaluate("2e3x"), None);
        assert_eq!(evaluate("1e-400"), None);
        assert_eq!(evaluate("0e-400"), Some(0.0));
        // A point after the exponent: not an exponent (and so not a number here).
        assert_eq!(evaluate("2e3.5"), None);
        // Written apart, a number and a letter are not scientific notation (`12 e 4` read as
        // 120000 once the spaces went).
        for apart in ["12 e 4", "12 e4", "3 E-2", "3\tE+2"] {
            let normalized = normalize(apart);
            assert_ne!(evaluate(&normalized), Some(120000.0), "{apart}");
            assert!(!equivalent(apart, "120000"), "{apart}");
            assert!(
                !equivalent(apart, "0.03") && !equivalent(apart, "300"),
                "{apart}"
            );
        }
        assert!(equivalent("12e4", "120000"));
        assert_eq!(evaluate("x+1"), None);
        assert_eq!(evaluate(r"\frac{1}{0}"), None);
        assert_eq!(evaluate("(1,2)"), None);
    }

    #[test]
    fn equivalence_covers_values_and_tuples() {
        assert!(equivalent(&normalize("0.5"), &normalize(r"\frac{1}{2}")));
        assert!(equivalent(
            &normalize(r"\sqrt{8}"),
            &normalize(r"2\sqrt{2}")
        ));
        assert!(equivalent(
            &normalize(r"\left(3, \frac{\pi}{2}\right)"),
            &normalize(r"(3,\dfrac{\pi}{2})")
        ));
        assert!(!equivalent(&normalize("(1,2)"), &normalize("[1,2]")));
        assert!(!equivalent(&normalize(r"\frac{1}{3}"), &normalize("0.33")));
        assert!(equivalent("x^2+1", "x^2+1"));
        assert!(equivalent("3,5,7", "7,3,5"));
        assert!(!equivalent("3,5,7", "3,5"));
        assert!(equivalent(
            &normalize(r"1\pm\sqrt{19}"),
            &normalize(r"1-\sqrt{19}, 1+\sqrt{19}")
        ));
        assert_eq!(normalize(r"\frac{270}7"), r"\frac{270}{7}");
        assert_eq!(normalize(r"\dfrac{\sqrt3}{3}"), r"\frac{\sqrt{3}}{3}");
    }
}
