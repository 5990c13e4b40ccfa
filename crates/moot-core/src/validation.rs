//! Checks of code answers, as data: which check ran, its verdict and what it printed. The
//! sandbox (`moot-sandbox`) runs the checks; the store, transcripts and decisions read these
//! types, so they live here, free of I/O.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

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
    /// It exited with status 0 before the tests finished (an `exit()` in the solution): the
    /// tests did not all run, so it did not pass.
    ExitedEarly,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Failed => "failed",
            Verdict::SyntaxError => "syntax error",
            Verdict::TimedOut => "timed out",
            Verdict::Killed => "killed",
            Verdict::OutputLimit => "output limit",
            Verdict::ExitedEarly => "exited early",
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
    /// The line that says why (the exception's last line, "killed after 2000 ms"); empty when
    /// it passed.
    pub detail: String,
    pub elapsed_ms: u64,
}

impl Validation {
    pub fn passed(&self) -> bool {
        self.verdict == Verdict::Passed
    }
}

/// Tests for a program: `preamble` goes before the solution (imports the solution may assume,
/// such as HumanEval's `from typing import List`), `tests` after it (assertions, or a
/// `check(candidate)` and its call).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestSuite {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub preamble: String,
    pub tests: String,
}

impl TestSuite {
    /// A user's tests file: run after the solution.
    pub fn user_tests(tests: &str) -> TestSuite {
        TestSuite {
            preamble: String::new(),
            tests: tests.to_string(),
        }
    }

    /// A dataset problem: the prompt's imports first, the tests' `check` called on the entry
    /// point.
    pub fn dataset(prompt: &str, _reference: &str, test: &str, entry_point: &str) -> TestSuite {
        TestSuite {
            preamble: prompt
                .lines()
                .filter(|l| l.starts_with("import ") || l.starts_with("from "))
                .map(|l| format!("{l}\n"))
                .collect(),
            tests: format!("{}\n\ncheck({entry_point})\n", test.trim_end()),
        }
    }

    /// The program the sandbox runs: preamble, solution, tests.
    pub fn program(&self, solution: &str) -> String {
        let mut out = String::new();
        if !self.preamble.trim().is_empty() {
            out.push_str(self.preamble.trim_end());
            out.push_str("\n\n");
        }
        out.push_str(solution.trim_end());
        out.push_str("\n\n\n");
        out.push_str(self.tests.trim_end());
        out.push('\n');
        out
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
    fn program_puts_preamble_solution_tests_in_order() {
        let suite = TestSuite {
            preamble: "from typing import List\n".into(),
            tests: "assert f() == 1\n".into(),
        };
        assert_eq!(
            suite.program("def f():\n    return 1\n"),
            "from typing import List\n\ndef f():\n    return 1\n\n\nassert f() == 1\n"
        );
        let bare = TestSuite {
            preamble: String::new(),
            tests: "assert True".into(),
        };
        assert!(bare.program("x = 1").starts_with("x = 1\n"));
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
