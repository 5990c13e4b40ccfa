//! A user's tests file (`moot ask --tests FILE`) grades what it says, whatever the program
//! defines: builtins, the standard library and every name the tests define or import mean what
//! Python means by them, and the program's names reach the tests only as the tests ask for
//! them. And every common test style runs: plain asserts, pytest-style `test_*` functions and
//! classes, unittest cases with or without `unittest.main()`; a file that runs no test is
//! `no-tests`, never `passed`.

use std::time::Duration;

use moot_core::validation::{TestSuite, Validation, Verdict};
use moot_sandbox::{Limits, Sandbox};

async fn grade(program: &str, tests: &str) -> Validation {
    Sandbox::new(Limits {
        timeout: Duration::from_secs(10),
        ..Limits::default()
    })
    .unwrap_or_else(|e| panic!("{e} (the sandbox tests need bubblewrap: scripts/setup.sh)"))
    .run_tests(program, &TestSuite::user_tests(tests))
    .await
    .expect("the sandbox runs")
}

/// `program` does not pass `tests`.
async fn does_not_pass(what: &str, program: &str, tests: &str) -> Validation {
    let v = grade(program, tests).await;
    eprintln!("{what}: {} ({})", v.verdict, v.detail);
    assert_ne!(
        v.verdict,
        Verdict::Passed,
        "{what}: a wrong program passed ({v:?})"
    );
    v
}

async fn passes(what: &str, program: &str, tests: &str) -> Validation {
    let v = grade(program, tests).await;
    assert_eq!(v.verdict, Verdict::Passed, "{what}: {v:?}");
    v
}

#[tokio::test]
async fn a_program_cannot_replace_the_builtins_its_tests_call() {
    does_not_pass(
        "abs replaced",
        "def area(r):\n    return 0\n\ndef abs(x):\n    return 0\n",
        "assert abs(area(1.0) - 3.14159) < 1e-6\n",
    )
    .await;
    does_not_pass(
        "range replaced",
        "def square(x):\n    return 0\n\ndef range(*a):\n    return []\n",
        "for i in range(10):\n    assert square(i) == i * i\n",
    )
    .await;
    does_not_pass(
        "len and all replaced",
        "def unique(xs):\n    return xs\n\ndef len(x):\n    return 3\n\ndef all(x):\n    return True\n",
        "r = unique([1, 1, 2, 3])\nassert len(r) == 3\nassert all(r.count(v) == 1 for v in r)\n",
    )
    .await;
    // A model's helper named like a builtin is common and harmless to its own code.
    passes(
        "a helper named max, used by the program",
        "def max(xs):\n    best = xs[0]\n    for x in xs:\n        if x > best:\n            best = x\n    return best\n\ndef top(xs):\n    return max(xs)\n",
        "assert top([1, 5, 2]) == 5\nassert max(1, 2) == 2\n",
    )
    .await;
}

#[tokio::test]
async fn an_explicit_import_brings_only_the_names_it_asks_for() {
    // The tests import `unique` and nothing else; the program's `sorted` must not be theirs.
    does_not_pass(
        "sorted replaced, unittest with an explicit import",
        "def unique(xs):\n    return xs\n\ndef sorted(xs):\n    return [1, 2, 3]\n",
        "import unittest\nfrom solution import unique\n\nclass T(unittest.TestCase):\n    def test_unique(self):\n        self.assertEqual(sorted(unique([3, 1, 3, 2])), [1, 2, 3])\n\nif __name__ == '__main__':\n    unittest.main()\n",
    )
    .await;
    // A star import takes the program's names but never a builtin's.
    does_not_pass(
        "sorted replaced, star import",
        "def unique(xs):\n    return xs\n\ndef sorted(xs):\n    return [1, 2, 3]\n",
        "from solution import *\nassert sorted(unique([3, 1, 3, 2])) == [1, 2, 3]\n",
    )
    .await;
    // Asked for by name, a program's name is the program's.
    passes(
        "an explicit import of a name that shadows a builtin",
        "def sorted(xs):\n    return list(reversed(xs))\n",
        "from solution import sorted\nassert sorted([1, 2]) == [2, 1]\n",
    )
    .await;
    passes(
        "the module itself",
        "def add(a, b):\n    return a + b\n",
        "import solution\nassert solution.add(2, 3) == 5\n",
    )
    .await;
}

const WRONG_ADD: &str = "def add(a, b):\n    return a - b\n";
const RIGHT_ADD: &str = "def add(a, b):\n    return a + b\n";

#[tokio::test]
async fn pytest_style_functions_run_and_count() {
    let tests = "def test_add():\n    assert add(2, 3) == 5\n\ndef test_zero():\n    assert add(0, 0) == 0\n\ndef test_neg():\n    assert add(-1, -1) == -2\n";
    let v = does_not_pass("pytest style, never called", WRONG_ADD, tests).await;
    assert_eq!(v.verdict, Verdict::Failed);
    assert!(v.detail.contains("test_add"), "{}", v.detail);
    let v = passes("pytest style, right", RIGHT_ADD, tests).await;
    assert_eq!(v.detail, "3 passed");
    // Classes named Test… hold tests too.
    let class = "class TestAdd:\n    def test_small(self):\n        assert add(1, 1) == 2\n\n    def test_big(self):\n        assert add(10**20, 1) == 10**20 + 1\n";
    does_not_pass("pytest class, wrong", WRONG_ADD, class).await;
    assert_eq!(
        passes("pytest class", RIGHT_ADD, class).await.detail,
        "2 passed"
    );
    // pytest.raises, pytest.approx and parametrize, with or without pytest installed.
    let with_pytest = "import pytest\n\n@pytest.mark.parametrize('a, b, want', [(1, 2, 3), (2, 2, 4), (0.1, 0.2, 0.3)])\ndef test_add(a, b, want):\n    assert add(a, b) == pytest.approx(want)\n\ndef test_type():\n    with pytest.raises(TypeError):\n        add(1, 'x')\n";
    assert_eq!(
        passes("pytest helpers", RIGHT_ADD, with_pytest)
            .await
            .detail,
        "4 passed"
    );
    does_not_pass("pytest helpers, wrong", WRONG_ADD, with_pytest).await;
    // Fixtures are out of scope: a test that needs one is not run as if it passed.
    let v = does_not_pass(
        "a fixture",
        RIGHT_ADD,
        "def test_tmp(tmp_path):\n    assert add(1, 2) == 3\n",
    )
    .await;
    assert_eq!(v.verdict, Verdict::Unsupported, "{v:?}");
}

#[tokio::test]
async fn unittest_cases_run_with_or_without_main() {
    let case = "import unittest\nfrom solution import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_neg(self):\n        self.assertEqual(add(-2, -3), -5)\n";
    let v = does_not_pass("unittest without main", WRONG_ADD, case).await;
    assert_eq!(v.verdict, Verdict::Failed);
    assert!(v.detail.contains("test_add"), "{}", v.detail);
    assert_eq!(
        passes("unittest without main", RIGHT_ADD, case)
            .await
            .detail,
        "2 passed"
    );
    let exit_false = format!("{case}\nunittest.main(exit=False)\n");
    does_not_pass("unittest.main(exit=False)", WRONG_ADD, &exit_false).await;
    assert_eq!(
        passes("unittest.main(exit=False)", RIGHT_ADD, &exit_false)
            .await
            .detail,
        "2 passed"
    );
    let main = format!("{case}\nif __name__ == '__main__':\n    unittest.main()\n");
    does_not_pass("unittest.main()", WRONG_ADD, &main).await;
    assert_eq!(
        passes("unittest.main()", RIGHT_ADD, &main).await.detail,
        "2 passed"
    );
}

#[tokio::test]
async fn plain_asserts_count_and_a_file_that_runs_no_test_is_no_tests() {
    let v = passes(
        "plain asserts",
        RIGHT_ADD,
        "assert add(2, 3) == 5\nfor i in range(3):\n    assert add(i, i) == 2 * i\n",
    )
    .await;
    assert_eq!(v.detail, "4 asserts held");
    for (what, tests) in [
        ("an empty file", ""),
        ("only a call", "add(1, 2)\n"),
        ("a check that is never called", "def check(f):\n    assert f(1, 2) == 3\n"),
        ("only skipped tests", "import unittest\nclass T(unittest.TestCase):\n    @unittest.skip('later')\n    def test_add(self):\n        pass\n"),
    ] {
        let v = grade(RIGHT_ADD, tests).await;
        assert_eq!(v.verdict, Verdict::NoTests, "{what}: {v:?}");
    }
    // A program that defines test_ functions does not give the tests tests.
    let v = grade(
        "def add(a, b):\n    return a + b\n\ndef test_add():\n    pass\n",
        "add(1, 2)\n",
    )
    .await;
    assert_eq!(v.verdict, Verdict::NoTests, "{v:?}");
}
