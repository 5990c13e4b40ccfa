//! The `code` kind: a program, read from the response's fenced code block.
//!
//! The answer's canonical text is the program as it will be run (line ends, trailing spaces,
//! outer blank lines and common indentation tidied; nothing else touched). Two programs are the
//! same answer when they differ only in formatting a reviewer would not call a different
//! solution: for Python, comments, blank lines and line breaks Python ignores (compared by
//! Python's tokens, so a `#` in a string and a `//` operator count); for other languages, blank
//! lines, trailing spaces, indentation depth of the whole block and full-line comments (see
//! `comparison_form`). Whether a program is *right* is not decided here: the sandbox runs it
//! with tests.

use super::python_tokens::{self, Kind, Token};
use super::value::Answer;

/// One fenced block's body. (Its language label is not kept: the answer is the program, and
/// the sandbox decides whether it runs.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fence<'a> {
    pub body: &'a str,
}

/// The fenced blocks of `text` (```` ``` ```` or `~~~`, three or more, CommonMark-style: the
/// closing fence uses the same character, is at least as long and is alone on its line). A
/// block left open at the end of the text (a reply cut off mid-block) counts up to the end.
pub(super) fn fences(text: &str) -> Vec<Fence<'_>> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize, usize)> = None; // (char, length, body start)
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let start = pos;
        pos += line.len();
        let trimmed = line.trim_start_matches(' ');
        // More than three spaces of indentation makes an indented code line, not a fence.
        if line.len() - trimmed.len() > 3 {
            continue;
        }
        let content = trimmed.trim_end();
        match open {
            None => {
                if let Some((ch, len)) = fence_marker(content) {
                    let info = content[len..].trim();
                    // A backtick fence's info string may not contain backticks (it would be
                    // inline code: ```a``` on one line).
                    if ch == '`' && info.contains('`') {
                        continue;
                    }
                    open = Some((ch, len, pos));
                }
            }
            Some((ch, len, body_start)) => {
                if let Some((c, l)) = fence_marker(content) {
                    if c == ch && l >= len && content[l..].trim().is_empty() {
                        out.push(Fence {
                            body: &text[body_start..start],
                        });
                        open = None;
                    }
                }
            }
        }
    }
    if let Some((_, _, body_start)) = open {
        out.push(Fence {
            body: &text[body_start.min(text.len())..],
        });
    }
    out
}

/// The fence character and run length opening `line`, when it is a fence (three or more).
fn fence_marker(line: &str) -> Option<(char, usize)> {
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = line.chars().take_while(|c| *c == ch).count();
    (len >= 3).then_some((ch, len))
}

/// Words that open a definition in the languages models answer in: a block that defines
/// something is the solution, a block that only calls it is an example.
const DEFINITION_WORDS: &[&str] = &[
    "def ",
    "async def ",
    "class ",
    "fn ",
    "pub fn ",
    "function ",
    "func ",
    "public ",
    "static ",
    "int ",
    "void ",
    "const ",
    "let ",
    "import ",
    "from ",
    "#include",
];

fn defines_something(body: &str) -> bool {
    body.lines().any(|l| {
        let l = l.trim_start();
        DEFINITION_WORDS.iter().any(|w| l.starts_with(w))
    })
}

/// The program of a response. Inside a freemad-style `SOLUTION:` section (when there is one)
/// and otherwise in the whole text: the last fenced block that defines something, else the last
/// non-empty one. A `SOLUTION:` section without fences is the program itself (freemad's agents
/// write code there bare).
pub(super) fn extract(response: &str, section: Option<&str>) -> Option<Answer> {
    if let Some(section) = section {
        if let Some(a) = from_fences(section) {
            return Some(a);
        }
        if !section.contains("```") {
            return from_program(section);
        }
    }
    from_fences(response)
}

fn from_fences(text: &str) -> Option<Answer> {
    let blocks = fences(text);
    let chosen = blocks
        .iter()
        .rev()
        .find(|f| defines_something(f.body))
        .or_else(|| blocks.iter().rev().find(|f| !f.body.trim().is_empty()))?;
    from_program(chosen.body)
}

/// A bare program (no fences) as an answer; `None` when it is empty.
pub(super) fn from_program(program: &str) -> Option<Answer> {
    let tidy = tidy(program);
    if tidy.is_empty() {
        return None;
    }
    let key = comparison_form(&tidy);
    Some(Answer::code(tidy, key))
}

/// The program as it will run: `\r\n` → `\n`, tabs kept, trailing spaces cut, blank lines at
/// both ends dropped, and the indentation every line shares removed.
pub(super) fn tidy(program: &str) -> String {
    let unix = program.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<&str> = unix.lines().map(str::trim_end).collect();
    let first = lines.iter().position(|l| !l.is_empty());
    let last = lines.iter().rposition(|l| !l.is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return String::new();
    };
    let body = &lines[first..=last];
    let indent = body
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    body.iter()
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What equality compares, from the tidy program alone (so an answer read back from its
/// canonical text compares the same):
///
/// - A program that reads as Python is compared by Python's tokens ([`python_tokens`]):
///   comments, blank lines and line breaks inside brackets or after a backslash drop out;
///   strings stay as written (a `#` inside one is text), `//` is floor division, and
///   indentation counts as block structure, not as its width. It reads as Python when Python's
///   tokenizer accepts it and it shows none of the tells of another language (see
///   [`reads_as_python`]).
/// - Any other program (another language, or text Python's tokenizer rejects) is compared
///   line by line without blank lines and full-line comments (`#`, except `#!`, `#[…]` and C
///   preprocessor lines, and `//`).
fn comparison_form(tidy: &str) -> String {
    match python_tokens::tokenize(tidy) {
        Ok(tokens) if reads_as_python(tidy, &tokens) => python_form(&tokens),
        _ => line_form(tidy),
    }
}

/// C preprocessor directives: a comment to Python, code to C.
const DIRECTIVES: &[&str] = &[
    "#include", "#define", "#undef", "#ifdef", "#ifndef", "#if", "#else", "#elif", "#endif",
    "#pragma", "#error", "#line", "#import",
];

/// The directives that are no commented-out Python (unlike `#if x:`, `#else:` or `#import os`).
const NOT_PYTHON_DIRECTIVES: &[&str] = &[
    "#include", "#define", "#undef", "#ifdef", "#ifndef", "#endif", "#pragma",
];

fn is_directive(comment: &str) -> bool {
    starts_with_word(comment, DIRECTIVES)
}

/// Whether `text` starts with one of `words`, a whole word.
fn starts_with_word(text: &str, words: &[&str]) -> bool {
    words.iter().any(|d| {
        text.starts_with(d)
            && !text[d.len()..]
                .chars()
                .next()
                .is_some_and(|c| c == '_' || c.is_alphanumeric())
    })
}

/// Whether a comment is a Rust attribute: `#[name(`, `#[name]`, `#[name =` (or `#![…`, and
/// `name` a path), not a commented-out Python list such as `#[1, 2]` or `#[x for x in y]`.
fn is_attribute(comment: &str) -> bool {
    let Some(rest) = comment
        .strip_prefix("#[")
        .or_else(|| comment.strip_prefix("#!["))
    else {
        return false;
    };
    let path_end = rest
        .find(|c: char| !(c == '_' || c == ':' || c.is_ascii_alphanumeric()))
        .unwrap_or(rest.len());
    let path = &rest[..path_end];
    path.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic())
        && matches!(
            rest[path_end..].trim_start().chars().next(),
            Some('(' | ']' | '=')
        )
}

/// Python's keywords, soft ones included: the only names a name may stand next to.
const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield", "match", "case", "type", "_",
];

/// The keywords that open a compound statement, whose header has a `:` outside brackets.
const COMPOUND: &[&str] = &[
    "if", "elif", "else", "for", "while", "try", "except", "finally", "with", "def", "class",
    "async",
];

/// Whether Python's tokens of `src` are a Python program's rather than another language's
/// text that happens to tokenize. Other languages' tells, none of which valid Python has:
/// two names, numbers or strings side by side, neither a keyword and not two strings (`int
/// main`, `function f`, `const x`, `source "$f"`, `10px`); a `;`
/// inside brackets (a `{ … }` body); a compound statement's header (`if`, `for`, `class`, …)
/// without a `:` outside brackets (`if (x) {`); an indented block after a line that does not
/// end in `:`;
/// a logical line that starts with `//`; a comment on a line of its own that is a C
/// preprocessor line (`#include`, `#define`, …) or a Rust attribute (`#[derive(…)]`); a `#`
/// right after a `.` (a JavaScript private name).
fn reads_as_python(src: &str, tokens: &[Token<'_>]) -> bool {
    let mut prev: Option<&Token<'_>> = None;
    // The last code token of the latest logical line.
    let mut line_last: Option<&Token<'_>> = None;
    let mut depth = 0usize;
    // The latest logical line's first token, and whether it has a `:` outside brackets.
    let (mut line_first, mut line_colon) = (None, false);
    let keyword = |t: &Token<'_>| KEYWORDS.contains(&t.text);
    for t in tokens {
        let line_start =
            prev.is_none_or(|p| matches!(p.kind, Kind::Newline | Kind::Indent | Kind::Dedent));
        if line_first.is_none() && !matches!(t.kind, Kind::Comment | Kind::Indent | Kind::Dedent) {
            line_first = Some(t.text);
        }
        let tell = match t.kind {
            Kind::Comment => {
                let own_line = src[..t.start]
                    .rsplit('\n')
                    .next()
                    .is_none_or(|before| before.trim().is_empty());
                let tell = (own_line
                    && (starts_with_word(t.text, NOT_PYTHON_DIRECTIVES) || is_attribute(t.text)))
                    || prev.is_some_and(|p| p.text == "." && p.end() == t.start);
                if tell {
                    return false;
                }
                continue;
            }
            Kind::Indent => {
                prev.is_none_or(|p| p.kind != Kind::Newline)
                    || line_last.is_none_or(|l| l.kind != Kind::Op || l.text != ":")
            }
            Kind::Newline => {
                line_last = prev;
                let tell = line_first.is_some_and(|f| COMPOUND.contains(&f)) && !line_colon;
                (line_first, line_colon) = (None, false);
                tell
            }
            Kind::Name | Kind::Number | Kind::String => prev.is_some_and(|p| {
                let atom = |t: &Token<'_>| {
                    matches!(t.kind, Kind::Name | Kind::Number | Kind::String) && !keyword(t)
                };
                let concatenation = p.kind == Kind::String && t.kind == Kind::String;
                atom(p) && atom(t) && !concatenation
            }),
            Kind::Op => match t.text {
                "(" | "[" | "{" => {
                    depth += 1;
                    false
                }
                ")" | "]" | "}" => {
                    depth = depth.saturating_sub(1);
                    false
                }
                ";" => depth > 0,
                ":" => {
                    line_colon |= depth == 0;
                    false
                }
                "//" => line_start,
                _ => false,
            },
            _ => false,
        };
        if tell {
            return false;
        }
        prev = Some(t);
    }
    true
}

/// The Python comparison key: the tokens without comments, strings and names as written.
fn python_form(tokens: &[Token<'_>]) -> String {
    let mut out = String::from("python:");
    for t in tokens {
        match t.kind {
            Kind::Comment => continue,
            Kind::Newline => out.push_str(" <newline>"),
            Kind::Indent => out.push_str(" <indent>"),
            Kind::Dedent => out.push_str(" <dedent>"),
            // Quoted, so that no token's text can pass for another's or for a marker.
            _ => out.push_str(&format!(" {:?}", t.text)),
        }
    }
    out
}

/// The line-by-line key: the tidy program without blank lines and full-line comments (`#`
/// or `//`). `#!`, `#[…]` (Rust attributes) and C preprocessor lines are code, not comments,
/// and a line opening with `//` is a comment in every language it could be here.
fn line_form(tidy: &str) -> String {
    let lines = tidy
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            let hash_comment = t.starts_with('#')
                && !t.starts_with("#!")
                && !t.starts_with("#[")
                && !is_directive(t);
            !t.is_empty() && !hash_comment && !t.starts_with("//")
        })
        .collect::<Vec<_>>()
        .join("\n");
    format!("lines:{lines}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(text: &str) -> Option<String> {
        extract(text, super::super::span::solution_section(text)).map(|a| a.canonical)
    }

    #[test]
    fn reads_the_fenced_block() {
        let r = "Here you go:\n\n```python\ndef f(n):\n    return n + 1\n```\n\nIt adds one.";
        assert_eq!(code(r).as_deref(), Some("def f(n):\n    return n + 1"));
    }

    #[test]
    fn prefers_the_definition_over_a_later_usage_example() {
        let r = "```python\ndef fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\n```\n\
                 Usage:\n```python\nprint(fib(10))\n```\n";
        assert!(code(r).unwrap().starts_with("def fib"));
        // A later, revised definition wins over an earlier one.
        let r = "```py\ndef f():\n    return 1\n```\nActually:\n```py\ndef f():\n    return 2\n```";
        assert!(code(r).unwrap().ends_with("return 2"));
    }

    #[test]
    fn solution_section_wins_and_may_be_bare() {
        let r = "SOLUTION:\ndef f():\n    return 3\n\nREASONING:\n```python\ndef g(): pass\n```";
        assert_eq!(code(r).as_deref(), Some("def f():\n    return 3"));
        let r = "SOLUTION:\n```python\ndef f():\n    return 4\n```\nREASONING:\nsimple";
        assert_eq!(code(r).as_deref(), Some("def f():\n    return 4"));
    }

    #[test]
    fn no_block_is_no_answer() {
        assert_eq!(code("I would write a loop that adds one."), None);
        assert_eq!(code("```python\n\n```"), None);
    }

    #[test]
    fn fence_rules() {
        // Tilde fences, longer fences holding a shorter one, and an unterminated last block.
        let r = "~~~rust\nfn main() {}\n~~~";
        assert_eq!(code(r).as_deref(), Some("fn main() {}"));
        let r = "````markdown\n```python\nx = 1\n```\n````";
        assert_eq!(code(r).as_deref(), Some("```python\nx = 1\n```"));
        let r = "```python\ndef f():\n    return 1\n";
        assert_eq!(code(r).as_deref(), Some("def f():\n    return 1"));
        // Inline triple backticks are not a fence.
        assert_eq!(code("use ```x``` here"), None);
        let f = fences("```{python} title=x\nprint(1)\n```\n");
        assert_eq!(f[0].body, "print(1)\n");
    }

    #[test]
    fn tidy_keeps_the_program_runnable() {
        assert_eq!(
            tidy("\r\n    def f():\r\n        return 1   \r\n\r\n"),
            "def f():\n    return 1"
        );
        assert_eq!(tidy(" \n \n"), "");
    }

    #[test]
    fn equality_ignores_formatting_not_code() {
        let a = from_program("def f(n):\n    # add one\n    return n + 1\n").unwrap();
        let b = from_program("  def f(n):\n\n      return n + 1").unwrap();
        let c = from_program("def f(n):\n    return n + 2").unwrap();
        assert!(a.equivalent(&b));
        assert!(!a.equivalent(&c));
        // `#include` and `#[derive]` are code; `//` is a comment.
        let d = from_program("#include <a.h>\n// hi\nint x;").unwrap();
        let e = from_program("#include <b.h>\nint x;").unwrap();
        assert!(!d.equivalent(&e));
        let f = from_program("#include <a.h>\nint x;").unwrap();
        assert!(d.equivalent(&f));
        let g = from_program("#[derive(Debug)]\nstruct S;").unwrap();
        assert!(!g.equivalent(&from_program("struct S;").unwrap()));
    }

    fn same(a: &str, b: &str) -> bool {
        from_program(a)
            .unwrap()
            .equivalent(&from_program(b).unwrap())
    }

    #[test]
    fn floor_division_on_a_continuation_line_is_code() {
        // Issue 41: `// 3` and `// 2` on a continuation line are Python's floor division, not
        // comments; the two programs differ.
        let three = "def f(x):\n    return (x\n            // 3)";
        let two = "def f(x):\n    return (x\n            // 2)";
        assert!(!same(three, two));
        let three = "def f(x):\n    y = x \\\n        // 3\n    return y";
        let two = "def f(x):\n    y = x \\\n        // 2\n    return y";
        assert!(!same(three, two));
        // A comment on the continuation line is still a comment.
        assert!(same(
            "def f(x):\n    return (x  # halve\n            // 2)",
            "def f(x):\n    return (x\n\n            // 2)"
        ));
    }

    #[test]
    fn a_hash_inside_a_string_is_code() {
        let a = "def f():\n    return \"\"\"a\n# one\n\"\"\"";
        let b = "def f():\n    return \"\"\"a\n# two\n\"\"\"";
        assert!(!same(a, b));
        // Nor do blank lines inside a string vanish.
        assert!(!same(
            "s = '''a\n\nb'''\nprint(s)",
            "s = '''a\nb'''\nprint(s)"
        ));
        assert!(!same("s = '#1'\nprint(s)", "s = '#2'\nprint(s)"));
        assert!(!same("s = f\"{x!r} #1\"", "s = f\"{x!r} #2\""));
    }

    #[test]
    fn other_languages_keep_the_line_key() {
        let others = [
            "#include <stdio.h>\n\nint main(void) {\n    printf(\"%d\\n\", 7 // 2\n    );\n}",
            "#include <a.h>\nint x;",
            "function f(x) {\n  return x / 2; // half\n}",
            "class A {\n  #count = 0;\n}",
            "this.#count = 1;",
            "fn main() {\n    println!(\"hi\");\n}",
            "#[derive(Debug)]\nstruct S;",
            "func f(x int) int {\n\treturn x / 2\n}",
            "f :: Int -> Int\nf x = x `div` 2",
            "echo $HOME",
            "// a comment\nint x = 1;",
        ];
        for p in others {
            assert!(comparison_form(p).starts_with("lines:"), "{p}");
        }
        let python = [
            "x = 1\n#if x:\n#else:\n#import os\n#[1, 2]\n#[None in cache]",
            "def f(x):\n    return x // 2",
            "#!/usr/bin/env python3\nprint(1)",
            "class A:\n    pass",
            "if x:\n    y = [\n  1,\n]",
        ];
        for p in python {
            assert!(comparison_form(p).starts_with("python:"), "{p}");
        }
        // A commented-out `#if x:` is a comment in Python (a C `#if` would be code).
        assert!(same(
            "def f(x):\n    #if x:\n    return (x\n        // 2)",
            "def f(x):\n    return (x\n        // 2)"
        ));
    }

    #[test]
    fn a_megabyte_program_is_read_in_one_pass() {
        let line = "x = (1 +\n  2)  # c\ns = '''a # b'''\n";
        let big = line.repeat(1 << 20 >> 5);
        let a = from_program(&big).unwrap();
        assert!(a.equivalent(&from_program(&big.replace("# c", "")).unwrap()));
        // An unterminated string at the end of it falls back to the line key.
        let open = format!("{big}s = '''");
        assert!(comparison_form(&open).starts_with("lines:"));
    }

    /// Building blocks of Python programs: each line with whether a comment or a blank line
    /// may follow it (not inside a string, not after a backslash).
    const BLOCKS: &[&[(&str, bool)]] = &[
        &[("x = a // 2", true)],
        &[("s = \"# not a comment\"", true)],
        &[
            ("t = \"\"\"doc", false),
            ("# inside", false),
            ("\"\"\"", true),
        ],
        &[("y = (x", true), ("     // 3)", true)],
        &[("def f(n):", true), ("    return n + 1", true)],
        &[("z = f\"{x!r:>{w}} # {y['k']}\"", true)],
        &[("w = x \\", false), ("    + 1", true)],
        &[
            ("class C:", true),
            ("    a = [1,", true),
            ("         2]", true),
            ("    b = rb'#\\''", true),
        ],
        &[
            ("if x:", true),
            ("    pass", true),
            ("else:", true),
            ("    u = '''", false),
            ("", false),
            ("'''", true),
        ],
    ];

    fn assemble(blocks: &[usize], notes: &[(u8, String)]) -> (String, String) {
        let mut plain = Vec::new();
        let mut noted = Vec::new();
        let mut n = 0;
        for &b in blocks {
            for &(line, may) in BLOCKS[b] {
                plain.push(line.to_string());
                let (what, text) = &notes[n % notes.len()];
                n += 1;
                if !may {
                    noted.push(line.to_string());
                    continue;
                }
                match what % 4 {
                    0 => noted.push(line.to_string()),
                    1 => noted.push(format!("{line}  #{text}")),
                    2 => {
                        noted.push(line.to_string());
                        noted.push(String::new());
                    }
                    _ => {
                        noted.push(line.to_string());
                        noted.push(format!("   # {text}"));
                    }
                }
            }
        }
        (
            plain.join("\n"),
            format!("# a program\n\n{}\n", noted.join("\n")),
        )
    }

    proptest::proptest! {
        #[test]
        fn the_key_ignores_comments_and_blank_lines(
            blocks in proptest::collection::vec(0..BLOCKS.len(), 1..8),
            notes in proptest::collection::vec((proptest::num::u8::ANY, "[ -~]{0,12}"), 1..20),
        ) {
            let (plain, noted) = assemble(&blocks, &notes);
            let a = from_program(&plain).unwrap();
            let b = from_program(&noted).unwrap();
            proptest::prop_assert!(a.equivalent(&b), "{plain}\n---\n{noted}");
        }
    }
}
