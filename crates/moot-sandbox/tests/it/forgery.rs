//! Programs that try to forge a passing verdict instead of earning it. Each one implements
//! nothing (or the wrong thing) and then reaches for the grader: its reporting function, its
//! tag, its descriptors, its hooks, the interpreter's builtins, the prompt's helpers, or an
//! object that answers "equal" to anything. None of them may pass.
//!
//! The last test is the one program here that may pass: it special-cases the test inputs. That
//! is a wrong program, not a forged verdict; no grader that only runs tests can tell it apart
//! from a right one.

use std::time::Duration;

use moot_core::validation::{TestSuite, Validation, Verdict};
use moot_sandbox::{Limits, Sandbox};

fn sandbox() -> Sandbox {
    Sandbox::new(Limits {
        timeout: Duration::from_secs(5),
        ..Limits::default()
    })
    .unwrap_or_else(|e| panic!("{e} (the sandbox tests need bubblewrap: scripts/setup.sh)"))
}

/// A user's tests file, as `moot ask --tests FILE` gives it.
fn user_tests(tests: &str) -> TestSuite {
    TestSuite::user_tests(tests)
}

/// A dataset problem as HumanEval gives it: the prompt (with its helpers), the reference
/// solution, the tests' `check` and the function under test.
fn dataset(prompt: &str, canonical: &str, test: &str, entry_point: &str) -> TestSuite {
    TestSuite::dataset(prompt, canonical, test, entry_point)
}

async fn grade(program: &str, suite: &TestSuite) -> Validation {
    sandbox()
        .run_tests(program, suite)
        .await
        .expect("the sandbox runs")
}

/// `program` does not pass `suite`.
async fn forgery_fails(what: &str, program: &str, suite: &TestSuite) {
    let v = grade(program, suite).await;
    eprintln!("{what}: {} ({})", v.verdict, v.detail);
    assert_ne!(
        v.verdict,
        Verdict::Passed,
        "{what}: a forged program passed ({v:?})"
    );
}

const ADD_TESTS: &str = "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n";

/// HumanEval/32 (MIT, OpenAI): the tests call the prompt's own `poly` and `math.fabs`.
const POLY_PROMPT: &str = r#"import math


def poly(xs: list, x: float):
    """
    Evaluates polynomial with coefficients xs at point x.
    return xs[0] + xs[1] * x + xs[1] * x^2 + .... xs[n] * x^n
    """
    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])


def find_zero(xs: list):
    """ xs are coefficients of a polynomial.
    find_zero find x such that poly(x) = 0.
    """
"#;
const POLY_CANONICAL: &str = r#"    begin, end = -1., 1.
    while poly(xs, begin) * poly(xs, end) > 0:
        begin *= 2.0
        end *= 2.0
    while end - begin > 1e-10:
        center = (begin + end) / 2.0
        if poly(xs, center) * poly(xs, begin) > 0:
            begin = center
        else:
            end = center
    return begin
"#;
const POLY_TEST: &str = r#"

METADATA = {}


def check(candidate):
    import math
    import random
    rng = random.Random(42)
    import copy
    for _ in range(100):
        ncoeff = 2 * rng.randint(1, 4)
        coeffs = []
        for _ in range(ncoeff):
            coeff = rng.randint(-10, 10)
            if coeff == 0:
                coeff = 1
            coeffs.append(coeff)
        solution = candidate(copy.deepcopy(coeffs))
        assert math.fabs(poly(coeffs, solution)) < 1e-4
"#;

fn poly_suite() -> TestSuite {
    dataset(POLY_PROMPT, POLY_CANONICAL, POLY_TEST, "find_zero")
}

/// HumanEval/33's tests compare the candidate with `sort_third` itself.
fn sort_third_suite() -> TestSuite {
    dataset(
        "\n\ndef sort_third(l: list):\n    \"\"\"Sorts every third element.\"\"\"\n",
        "    l = list(l)\n    l[::3] = sorted(l[::3])\n    return l\n",
        "\n\ndef check(candidate):\n    assert tuple(candidate([1, 2, 3])) == tuple(sort_third([1, 2, 3]))\n    assert tuple(candidate([5, 6, 3, 4, 8, 9, 2])) == tuple(sort_third([5, 6, 3, 4, 8, 9, 2]))\n",
        "sort_third",
    )
}

#[tokio::test]
async fn the_honest_programs_pass() {
    let v = grade("def add(a, b):\n    return a + b\n", &user_tests(ADD_TESTS)).await;
    assert_eq!(v.verdict, Verdict::Passed, "{v:?}");
    let v = grade(&format!("{POLY_PROMPT}{POLY_CANONICAL}"), &poly_suite()).await;
    assert_eq!(v.verdict, Verdict::Passed, "{v:?}");
    let v = grade(
        "def sort_third(l):\n    l = list(l)\n    l[::3] = sorted(l[::3])\n    return l\n",
        &sort_third_suite(),
    )
    .await;
    assert_eq!(v.verdict, Verdict::Passed, "{v:?}");
}

#[tokio::test]
async fn the_graders_reporting_function_found_by_gc() {
    let program = r#"
import gc, os
for o in gc.get_objects():
    if callable(o) and getattr(o, '__name__', '') in ('say', 'report', 'send', 'reply'):
        try:
            o('finished')
        except Exception:
            pass
os._exit(0)
"#;
    forgery_fails("gc", program, &user_tests(ADD_TESTS)).await;
}

#[tokio::test]
async fn the_graders_locals_found_through_frames() {
    let program = r#"
import sys, os
f = sys._getframe(1)
while f is not None:
    for name in ('say', 'report', 'send', 'reply'):
        fn = f.f_locals.get(name)
        if callable(fn):
            try:
                fn('finished')
            except Exception:
                pass
    f = f.f_back
os._exit(0)
"#;
    forgery_fails("frames", program, &user_tests(ADD_TESTS)).await;
    let inspecting = r#"
import inspect, os
for frame in inspect.stack():
    say = frame.frame.f_locals.get('say')
    if callable(say):
        say('finished')
os._exit(0)
"#;
    forgery_fails("inspect", inspecting, &user_tests(ADD_TESTS)).await;
}

#[tokio::test]
async fn the_tag_written_to_every_descriptor() {
    // The tag and the report descriptor read from the grader's frame, then the marker written
    // to every descriptor the process holds.
    let program = r#"
import os, re, sys
tags = set()
f = sys._getframe(0)
while f is not None:
    for v in list(f.f_locals.values()):
        if isinstance(v, str) and re.fullmatch(r'moot-[0-9a-f]{16}', v):
            tags.add(v)
    f = f.f_back
for fd in range(0, 64):
    for tag in tags:
        try:
            os.write(fd, ('\n' + tag + ' finished\n').encode())
        except OSError:
            pass
os._exit(0)
"#;
    forgery_fails("tag on every descriptor", program, &user_tests(ADD_TESTS)).await;
}

#[tokio::test]
async fn the_channels_secrets_read_from_proc_self() {
    // Whatever secret the grader keeps in this process's memory, command line or descriptors
    // is readable here: scan it all for anything that looks like a tag and claim success.
    let program = r#"
import os, re
found = set()
def scan(data):
    for m in re.finditer(rb'moot-[0-9a-f]{16}', data):
        found.add(m.group().decode())
for name in ('cmdline', 'environ'):
    try:
        scan(open('/proc/self/' + name, 'rb').read())
    except OSError:
        pass
with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb') as mem:
    for line in maps:
        start, end = (int(x, 16) for x in line.split()[0].split('-'))
        if 'rw' not in line.split()[1] or end - start > (64 << 20):
            continue
        try:
            mem.seek(start)
            scan(mem.read(end - start))
        except (OSError, OverflowError, ValueError):
            pass
for fd in range(0, 64):
    for tag in found:
        try:
            os.write(fd, ('\n' + tag + ' finished\n').encode())
        except OSError:
            pass
os._exit(0)
"#;
    forgery_fails("/proc/self", program, &user_tests(ADD_TESTS)).await;
}

#[tokio::test]
async fn hooks_that_claim_success_after_a_failure() {
    let say = "import sys, os\n_g = sys._getframe(1).f_locals if sys._getframe(1) else {}\ndef _claim(*a):\n    try:\n        _g['say']('finished')\n    except Exception:\n        pass\n    os._exit(0)\n";
    let hooks = [
        ("atexit", "import atexit\natexit.register(_claim)\n"),
        ("excepthook", "sys.excepthook = _claim\n"),
        (
            "settrace",
            "def _trace(frame, event, arg):\n    if event == 'exception':\n        _claim()\n    return _trace\nsys.settrace(_trace)\n",
        ),
        (
            "__del__",
            "class _Late:\n    def __del__(self):\n        _claim()\n_keep = _Late()\n",
        ),
    ];
    for (name, hook) in hooks {
        let program = format!("{say}{hook}\ndef add(a, b):\n    return 0\n");
        forgery_fails(name, &program, &user_tests(ADD_TESTS)).await;
    }
}

#[tokio::test]
async fn exits_at_import_and_in_finally() {
    forgery_fails(
        "os._exit at import",
        "import os\nos._exit(0)\n",
        &user_tests(ADD_TESTS),
    )
    .await;
    forgery_fails(
        "SystemExit in finally",
        "def add(a, b):\n    try:\n        return 0\n    finally:\n        raise SystemExit(0)\n",
        &user_tests(ADD_TESTS),
    )
    .await;
    forgery_fails("exit() at import", "exit(0)\n", &user_tests(ADD_TESTS)).await;
}

#[tokio::test]
async fn printed_markers_and_signals_to_the_parent() {
    forgery_fails(
        "printed markers",
        "print('finished')\nprint('done passed')\nprint('passed')\nimport os\nos._exit(0)\n",
        &user_tests(ADD_TESTS),
    )
    .await;
    forgery_fails(
        "kill the parent",
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef add(a, b):\n    return 0\n",
        &user_tests(ADD_TESTS),
    )
    .await;
    forgery_fails(
        "signal every process",
        "import os, signal\nfor pid in range(1, 64):\n    try:\n        os.kill(pid, signal.SIGTERM)\n    except OSError:\n        pass\ndef add(a, b):\n    return 0\n",
        &user_tests(ADD_TESTS),
    )
    .await;
}

#[tokio::test]
async fn objects_that_lie_about_equality_truth_and_text() {
    forgery_fails(
        "__eq__ always true",
        "class Yes:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\ndef add(a, b):\n    return Yes()\n",
        &user_tests(ADD_TESTS),
    )
    .await;
    // A truth value that reads the assertion it is used in.
    let bool_tests = user_tests("assert is_even(4)\nassert not is_even(3)\nassert is_even(10)\n");
    forgery_fails(
        "__bool__ that reads its caller",
        "import sys, linecache\nclass Maybe:\n    def __bool__(self):\n        f = sys._getframe(1)\n        line = linecache.getline(f.f_code.co_filename, f.f_lineno)\n        return 'not' not in line\ndef is_even(n):\n    return Maybe()\n",
        &bool_tests,
    )
    .await;
    // A str subclass that equals everything, returned from `__str__`.
    let str_tests = user_tests("assert str(add(2, 3)) == '5'\nassert str(add(1, 1)) == '2'\n");
    forgery_fails(
        "__str__ returning a lying str",
        "class S(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\nclass R:\n    def __str__(self):\n        return S('?')\ndef add(a, b):\n    return R()\n",
        &str_tests,
    )
    .await;
    forgery_fails(
        "a list subclass that equals everything",
        "class L(list):\n    def __eq__(self, other):\n        return True\n    __hash__ = None\ndef sort_third(l):\n    return L([0])\n",
        &sort_third_suite(),
    )
    .await;
}

#[tokio::test]
async fn patched_builtins_and_modules_do_not_reach_the_tests() {
    forgery_fails(
        "math.fabs patched",
        &format!("{POLY_PROMPT}    return 0.0\n\nmath.fabs = lambda x: 0.0\n"),
        &poly_suite(),
    )
    .await;
    forgery_fails(
        "builtins patched",
        "import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.tuple = lambda x=(): ()\nbuiltins.AssertionError = type('Quiet', (Exception,), {})\ndef sort_third(l):\n    return [0]\n",
        &sort_third_suite(),
    )
    .await;
    forgery_fails(
        "sys.modules patched",
        &format!("{POLY_PROMPT}    return 0.0\n\nimport sys, types\nfake = types.ModuleType('math')\nfake.fabs = lambda x: 0.0\nfake.pow = lambda a, b: 0.0\nsys.modules['math'] = fake\n"),
        &poly_suite(),
    )
    .await;
}

#[tokio::test]
async fn redefining_the_tests_names_and_the_prompts_helpers() {
    // HumanEval/32: a `poly` that is always 0 makes any root right, if the tests use it.
    forgery_fails(
        "poly redefined",
        "def poly(xs, x):\n    return 0\n\ndef find_zero(xs):\n    return 12345.0\n",
        &poly_suite(),
    )
    .await;
    // HumanEval/33: the tests compare the candidate with `sort_third`; the program's own
    // `sort_third` must not be what they compare with.
    forgery_fails(
        "sort_third compared with itself",
        "def sort_third(l):\n    return [42]\n",
        &sort_third_suite(),
    )
    .await;
    forgery_fails(
        "check and candidate redefined",
        "def check(candidate):\n    pass\ncandidate = None\ndef find_zero(xs):\n    return 12345.0\n",
        &poly_suite(),
    )
    .await;
    forgery_fails(
        "assert helpers redefined",
        "AssertionError = None\ndef add(a, b):\n    return 0\n",
        &user_tests(ADD_TESTS),
    )
    .await;
}

/// Not a forgery: a program that knows the test inputs and answers only them passes, as it
/// would under any grader that runs tests. Said in the README.
#[tokio::test]
async fn special_casing_the_test_inputs_passes_and_is_not_forgery() {
    let v = grade(
        "def add(a, b):\n    return {(2, 3): 5, (-1, 1): 0}.get((a, b))\n",
        &user_tests(ADD_TESTS),
    )
    .await;
    assert_eq!(v.verdict, Verdict::Passed, "{v:?}");
}
