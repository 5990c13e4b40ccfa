//! The `code` kind: a program, read from the response's fenced code block.
//!
//! The answer's canonical text is the program as it will be run (line ends, trailing spaces,
//! outer blank lines and common indentation tidied; nothing else touched). Two programs are the
//! same answer when they differ only in blank lines, trailing spaces, indentation depth of the
//! whole block, or full-line comments — formatting a reviewer would not call a different
//! solution. Whether a program is *right* is not decided here: the sandbox runs it with tests.

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

/// What equality compares: the tidy program without blank lines and full-line comments (`#`
/// or `//`). It does not depend on the block's language, so an answer read back from its
/// canonical text compares the same: `#!`, `#[…]` (Rust attributes) and C preprocessor lines
/// are code, not comments, and a line opening with `//` is a comment or a syntax error in every
/// language models answer in.
fn comparison_form(tidy: &str) -> String {
    const DIRECTIVES: &[&str] = &[
        "#include", "#define", "#undef", "#if", "#else", "#elif", "#endif", "#pragma", "#error",
        "#line",
    ];
    tidy.lines()
        .filter(|l| {
            let t = l.trim_start();
            let hash_comment = t.starts_with('#')
                && !t.starts_with("#!")
                && !t.starts_with("#[")
                && !DIRECTIVES.iter().any(|d| t.starts_with(d));
            !t.is_empty() && !hash_comment && !t.starts_with("//")
        })
        .collect::<Vec<_>>()
        .join("\n")
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
}
