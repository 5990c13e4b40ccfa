//! Checks of code answers, as data: which check ran, its verdict and what it printed. The
//! sandbox (`moot-sandbox`) runs the checks; the store, transcripts and decisions read these
//! types, so they live here, free of I/O.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::answer::python_tokens::{self, Kind, Token};
use crate::answer::Answer;
use crate::trajectory::Trajectory;

/// What a check asked of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckKind {
    /// It compiles (Python's own compiler, inside the sandbox).
    Syntax,
    /// It runs with the item's (or the user's) tests and exits cleanly after all of them.
    Tests,
}

impl CheckKind {
    pub fn name(self) -> &'static str {
        match self {
            CheckKind::Syntax => "syntax",
            CheckKind::Tests => "tests",
        }
    }
}

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Passed,
    /// It ran and failed: an exception, a failed assertion, a nonzero exit.
    Failed,
    /// It does not compile.
    SyntaxError,
    /// It ran past its time limit and was killed.
    TimedOut,
    /// A signal ended it (the CPU-time limit, a crash of the interpreter).
    Killed,
    /// It printed more than the output cap and was killed.
    OutputLimit,
    /// Its processes together held more memory than the memory limit (pages, and memory held
    /// otherwise: shared-memory files, the sandbox's tmpfs, unread pipe and socket bytes) and
    /// it was killed.
    MemoryLimit,
    /// It exited with status 0 before the tests finished (an `exit()` in the solution): the
    /// tests did not all run, so it did not pass.
    ExitedEarly,
    /// The tests needed something that does not cross between the program's process and the
    /// tests' as a plain value (an object, a callback, a generator, an exception type of the
    /// program's own, an argument changed in place that cannot be copied back): the grader
    /// cannot tell, so it did not pass.
    Unsupported,
    /// The tests ran to their end without running a test: no `assert` held, and no `test_*`
    /// function or unittest case ran (all skipped, never called, or none written). Nothing
    /// was checked, so it did not pass.
    NoTests,
}

impl Verdict {
    /// Every verdict, in the order they are declared.
    pub const ALL: [Verdict; 10] = [
        Verdict::Passed,
        Verdict::Failed,
        Verdict::SyntaxError,
        Verdict::TimedOut,
        Verdict::Killed,
        Verdict::OutputLimit,
        Verdict::MemoryLimit,
        Verdict::ExitedEarly,
        Verdict::Unsupported,
        Verdict::NoTests,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Failed => "failed",
            Verdict::SyntaxError => "syntax error",
            Verdict::TimedOut => "timed out",
            Verdict::Killed => "killed",
            Verdict::OutputLimit => "output limit",
            Verdict::MemoryLimit => "memory limit",
            Verdict::ExitedEarly => "exited early",
            Verdict::Unsupported => "unsupported",
            Verdict::NoTests => "no tests",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One check of one program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validation {
    pub check: CheckKind,
    pub verdict: Verdict,
    /// The line that says why (the exception's last line, "killed after 2000 ms"), or, when
    /// the tests passed, how many ran ("3 passed", "12 asserts held"; empty from graders
    /// before moot counted them).
    pub detail: String,
    pub elapsed_ms: u64,
}

impl Validation {
    pub fn passed(&self) -> bool {
        self.verdict == Verdict::Passed
    }
}

/// Tests for a program. The program and the tests run in two processes that share nothing but
/// plain values (see `moot-sandbox`): the program's process runs `preamble` and the program;
/// the tests' process runs `reference` (trusted code: a dataset prompt's helpers and its
/// reference solution), then `tests`, calling the program's functions through stand-ins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestSuite {
    /// Put before the program in its own process: imports its signature may assume, such as
    /// HumanEval's `from typing import List`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub preamble: String,
    /// Trusted code run in the tests' process before the tests. The names it defines are the
    /// ones the tests see, never the program's (HumanEval/32's `poly` comes from here).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reference: String,
    /// The program's function the tests reach as `candidate` (a dataset's entry point), and the
    /// only name of the program's they see. `None`: every name the program defines is visible
    /// to the tests under its own name (a user's tests file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<String>,
    /// The tests: assertions, a `check(candidate)` and its call, or a unittest module.
    pub tests: String,
}

impl TestSuite {
    /// A user's tests file: it sees every name the program defines (`assert add(2, 3) == 5`).
    pub fn user_tests(tests: &str) -> TestSuite {
        TestSuite {
            tests: tests.to_string(),
            ..TestSuite::default()
        }
    }

    /// A dataset problem given as HumanEval gives it: the prompt (signature, docstring and any
    /// helpers), the reference solution's body, the tests' `check(candidate)` and the name of
    /// the function under test. The prompt and the reference run on the tests' side, so the
    /// helpers the tests call are the prompt's own; the program's process gets only the
    /// prompt's imports.
    pub fn dataset(prompt: &str, reference: &str, test: &str, entry_point: &str) -> TestSuite {
        TestSuite {
            preamble: prompt
                .lines()
                .filter(|l| l.starts_with("import ") || l.starts_with("from "))
                .map(|l| format!("{l}\n"))
                .collect(),
            reference: format!("{prompt}{reference}"),
            candidate: Some(entry_point.to_string()),
            tests: format!("{}\n\ncheck(candidate)\n", test.trim_end()),
        }
    }

    /// The source the program's process runs: the preamble, then the program. A
    /// `from __future__ import …` must open a module (after its docstring, if any), so the
    /// program's leading ones and the preamble's come first: the program's docstring, the
    /// preamble's and the program's future imports, then the rest of the preamble and the rest
    /// of the program. Without future imports the two are joined as they are.
    pub fn program_source(&self, solution: &str) -> String {
        let head = FutureHead::of(solution);
        let preamble = FutureHead::of(&self.preamble);
        let mut out = String::new();
        if !head.futures.is_empty() || !preamble.futures.is_empty() {
            out.push_str(&head.docstring);
            for f in preamble.futures.iter().chain(&head.futures) {
                out.push_str(f);
                if !f.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        let (preamble, solution) = if out.is_empty() {
            (self.preamble.clone(), solution.to_string())
        } else {
            (preamble.rest, head.rest)
        };
        if !preamble.trim().is_empty() {
            out.push_str(preamble.trim_end());
            out.push_str("\n\n");
        }
        out.push_str(&solution);
        out
    }
}

/// A module split for hoisting its `from __future__` imports: its docstring (with its line
/// end), the future import statements that open it (each with any comment on its line), and
/// everything else in order. A module Python's tokenizer rejects has no future imports here.
struct FutureHead {
    docstring: String,
    futures: Vec<String>,
    rest: String,
}

impl FutureHead {
    fn of(module: &str) -> FutureHead {
        let mut head = FutureHead {
            docstring: String::new(),
            futures: Vec::new(),
            rest: module.to_string(),
        };
        if !module.contains("__future__") {
            return head;
        }
        let Ok(tokens) = python_tokens::tokenize(module) else {
            return head;
        };
        // The module's logical lines: their spans and code tokens (a comment after code on its
        // line belongs to the line; comments on lines of their own to none).
        let mut lines: Vec<(usize, usize, Vec<&Token<'_>>)> = Vec::new();
        let mut current: Vec<&Token<'_>> = Vec::new();
        for t in &tokens {
            match t.kind {
                Kind::Newline => {
                    if let Some(first) = current.first() {
                        lines.push((first.start, t.end(), std::mem::take(&mut current)));
                    }
                }
                Kind::Comment | Kind::Indent | Kind::Dedent => {}
                _ => current.push(t),
            }
        }
        let mut lines = lines.iter().peekable();
        let mut cut: Vec<(usize, usize)> = Vec::new();
        let mut docstring = None;
        if let Some((start, end, words)) = lines.peek() {
            if words.iter().all(|t| t.kind == Kind::String) {
                docstring = Some((*start, *end));
                lines.next();
            }
        }
        for (start, end, words) in lines {
            let is_future = matches!(
                words.as_slice(),
                [from, future, import, ..]
                    if from.text == "from" && future.text == "__future__" && import.text == "import"
            );
            if !is_future {
                break;
            }
            head.futures.push(module[*start..*end].to_string());
            cut.push((*start, *end));
        }
        if head.futures.is_empty() {
            return head;
        }
        if let Some((start, end)) = docstring {
            head.docstring = module[start..end].to_string();
            if !head.docstring.ends_with('\n') {
                head.docstring.push('\n');
            }
            cut.insert(0, (start, end));
        }
        let mut rest = String::new();
        let mut at = 0;
        for (start, end) in cut {
            rest.push_str(&module[at..start]);
            at = end;
        }
        rest.push_str(&module[at..]);
        head.rest = rest;
        head
    }
}

/// The checks of every distinct program of a debate, by the answer's canonical text.
pub type Validations = BTreeMap<String, Vec<Validation>>;

/// Whether every check of `answer` passed; an answer no check ran on passes (nothing says it
/// fails).
pub fn answer_passes(validations: &Validations, answer: &Answer) -> bool {
    validations
        .get(answer.canonical())
        .is_none_or(|checks| checks.iter().all(Validation::passed))
}

/// The trajectory with failing answers read as no answer, so that they lose before any rule
/// scores (the `require-passing` decision option).
pub fn drop_failing(trajectory: &Trajectory, validations: &Validations) -> Trajectory {
    trajectory.without(|a| !answer_passes(validations, a))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::{AnswerKind, ExtractContext};
    use crate::decision::{build_rule, DecisionConfig};

    fn code(s: &str) -> Answer {
        Answer::parse(AnswerKind::Code, s, &ExtractContext::default()).unwrap()
    }

    fn check(verdict: Verdict) -> Validation {
        Validation {
            check: CheckKind::Tests,
            verdict,
            detail: String::new(),
            elapsed_ms: 1,
        }
    }

    #[test]
    fn a_dataset_problem_keeps_its_prompt_on_the_tests_side() {
        let suite = TestSuite::dataset(
            "from typing import List\n\ndef helper():\n    return 1\n\ndef f(xs: List[int]):\n    \"\"\"Doc.\"\"\"\n",
            "    return helper()\n",
            "\n\ndef check(candidate):\n    assert candidate([]) == 1\n\n",
            "f",
        );
        assert_eq!(suite.preamble, "from typing import List\n");
        assert!(suite.reference.contains("def helper()"));
        assert!(suite
            .reference
            .ends_with("\"\"\"Doc.\"\"\"\n    return helper()\n"));
        assert_eq!(suite.candidate.as_deref(), Some("f"));
        assert!(suite
            .tests
            .ends_with("assert candidate([]) == 1\n\ncheck(candidate)\n"));
        assert_eq!(
            suite.program_source("def f(xs):\n    return 1\n"),
            "from typing import List\n\ndef f(xs):\n    return 1\n"
        );
        let user = TestSuite::user_tests("assert f() == 1\n");
        assert_eq!(user.program_source("x = 1"), "x = 1");
        assert_eq!(user.candidate, None);
        // Suites stored before the reference and candidate existed still read.
        let old: TestSuite =
            serde_json::from_str(r#"{"preamble":"import math\n","tests":"check(f)\n"}"#).unwrap();
        assert_eq!(old.reference, "");
        assert_eq!(old.candidate, None);
    }

    #[test]
    fn future_imports_go_first() {
        // Issue 41: a __future__ import must open the module, so it goes before the preamble.
        let suite = TestSuite {
            preamble: "from typing import List\n".into(),
            ..TestSuite::default()
        };
        let program =
            "from __future__ import annotations\n\ndef f(xs: List[int]) -> int:\n    return 1\n";
        assert_eq!(
            suite.program_source(program),
            "from __future__ import annotations\nfrom typing import List\n\n\ndef f(xs: List[int]) -> int:\n    return 1\n"
        );
        // After a module docstring, with comments and several imports, a parenthesised one
        // across lines among them; the preamble's own come up too.
        let suite = TestSuite {
            preamble: "from __future__ import division\nimport math\n".into(),
            ..TestSuite::default()
        };
        let program = "\"\"\"Doc.\n\nfrom __future__ import x is text here.\"\"\"\n# note\nfrom __future__ import annotations\nfrom __future__ import (\n    generator_stop,\n)\nx = 1\n";
        assert_eq!(
            suite.program_source(program),
            "\"\"\"Doc.\n\nfrom __future__ import x is text here.\"\"\"\nfrom __future__ import division\nfrom __future__ import annotations\nfrom __future__ import (\n    generator_stop,\n)\nimport math\n\n# note\nx = 1\n"
        );
        // Without a __future__ import, nothing moves; a later one is the program's own error.
        let late = "x = 1\nfrom __future__ import annotations\n";
        assert_eq!(
            suite.program_source(late),
            format!("from __future__ import division\nimport math\n\n{late}")
        );
    }

    #[test]
    fn failing_answers_lose_before_scoring() {
        let good = code("def f():\n    return 1");
        let bad = code("def f():\n    return 2");
        // Two agents keep the failing program, one the passing one.
        let t = Trajectory::from_answers(vec![
            vec![Some(bad.clone()), Some(bad.clone())],
            vec![Some(bad.clone()), Some(bad.clone())],
            vec![Some(good.clone()), Some(good.clone())],
        ])
        .unwrap();
        let rule = build_rule("majority-last", &DecisionConfig::default()).unwrap();
        assert_eq!(rule.decide(&t).answer.as_ref(), Some(&bad));
        let mut v = Validations::new();
        v.insert(bad.canonical().into(), vec![check(Verdict::Failed)]);
        v.insert(good.canonical().into(), vec![check(Verdict::Passed)]);
        let filtered = drop_failing(&t, &v);
        assert_eq!(rule.decide(&filtered).answer.as_ref(), Some(&good));
        // An unchecked answer is not dropped.
        assert_eq!(drop_failing(&t, &Validations::new()), t);
    }
}
