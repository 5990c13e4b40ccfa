//! What crosses between a program's process and its tests' process: plain values, exactly
//! (bool apart from int, tuples apart from lists, integer keys, big integers, inf and nan),
//! builtin exceptions, and arguments changed in place; and what does not cross (objects,
//! callbacks, generators, the program's own exception types), which is `unsupported`, never a
//! silent pass or fail.

use std::time::Duration;

use moot_core::validation::{TestSuite, Validation, Verdict};
use moot_sandbox::{Limits, Sandbox};

async fn grade(program: &str, tests: &str) -> Validation {
    Sandbox::new(Limits {
        timeout: Duration::from_secs(5),
        ..Limits::default()
    })
    .unwrap_or_else(|e| panic!("{e} (the sandbox tests need bubblewrap: scripts/setup.sh)"))
    .run_tests(program, &TestSuite::user_tests(tests))
    .await
    .expect("the sandbox runs")
}

async fn verdict(program: &str, tests: &str) -> (Verdict, String) {
    let v = grade(program, tests).await;
    (v.verdict, v.detail)
}

#[tokio::test]
async fn plain_values_cross_exactly() {
    let program = r#"
def echo(x):
    return x

def kinds():
    return [True, 1, 1.5, 'é\n', b'\x00', None, (1, 2), {3: 'three', (1, 2): [4]}, {5}, frozenset({6}), bytearray(b'ab'), 2j]

def big():
    return 7 ** 6000

def special():
    return [float('inf'), float('-inf'), float('nan'), -0.0]
"#;
    let tests = r#"
import math
k = kinds()
assert k[0] is True and type(k[1]) is int and k[2] == 1.5 and k[3] == 'é\n' and k[4] == b'\x00'
assert k[5] is None and k[6] == (1, 2) and type(k[6]) is tuple
assert k[7] == {3: 'three', (1, 2): [4]} and k[8] == {5} and k[9] == frozenset({6})
assert k[10] == bytearray(b'ab') and k[11] == 2j
assert echo(k) == k
assert big() == 7 ** 6000
s = special()
assert s[0] == math.inf and s[1] == -math.inf and math.isnan(s[2]) and math.copysign(1, s[3]) == -1
assert echo([1, [2, [3, [4]]]]) == [1, [2, [3, [4]]]]
assert echo(x=(1,)) == (1,)
"#;
    assert_eq!(
        verdict(program, tests).await,
        (Verdict::Passed, "9 asserts held".to_string())
    );
}

#[tokio::test]
async fn bool_stays_apart_from_int_and_tuple_from_list() {
    let (v, _) = verdict("def f():\n    return 1\n", "assert f() is True\n").await;
    assert_eq!(v, Verdict::Failed);
    let (v, _) = verdict(
        "def f():\n    return [1, 2]\n",
        "assert type(f()) is tuple\n",
    )
    .await;
    assert_eq!(v, Verdict::Failed);
    // Subclasses of the builtin types cross as the plain values they hold.
    let (v, d) = verdict(
        "from collections import namedtuple, OrderedDict\nP = namedtuple('P', 'x y')\ndef f():\n    return P(1, 2)\ndef g():\n    return OrderedDict(a=1)\n",
        "assert f() == (1, 2)\nassert g() == {'a': 1}\n",
    )
    .await;
    assert_eq!(v, Verdict::Passed, "{d}");
}

#[tokio::test]
async fn builtin_exceptions_cross_and_the_programs_own_do_not() {
    let program = "def root(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x ** 0.5\n\ndef look(d, k):\n    return d[k]\n";
    let tests = "try:\n    root(-1)\nexcept ValueError as e:\n    assert str(e) == 'negative'\nelse:\n    assert False\ntry:\n    look({}, 'k')\nexcept KeyError as e:\n    assert e.args == ('k',)\nassert root(4) == 2.0\n";
    assert_eq!(
        verdict(program, tests).await,
        (Verdict::Passed, "3 asserts held".to_string())
    );

    let (v, d) = verdict(
        "class Oops(Exception):\n    pass\ndef f():\n    raise Oops('x')\n",
        "try:\n    f()\nexcept Exception:\n    pass\n",
    )
    .await;
    assert_eq!(v, Verdict::Unsupported, "{d}");
    assert!(d.contains("Oops"), "{d}");
    // An uncaught builtin exception is a plain failure, named.
    let (v, d) = verdict("def f():\n    return 1 / 0\n", "f()\n").await;
    assert_eq!(
        (v, d.as_str()),
        (Verdict::Failed, "ZeroDivisionError: division by zero")
    );
}

#[tokio::test]
async fn what_does_not_cross_is_unsupported() {
    let cases = [
        (
            "def f():\n    return (x for x in range(3))\n",
            "assert list(f()) == [0, 1, 2]\n",
            "generator",
        ),
        (
            "class Box:\n    pass\ndef f():\n    return Box()\n",
            "f()\n",
            "Box",
        ),
        (
            "def apply(fn, x):\n    return fn(x)\n",
            "assert apply(lambda v: v + 1, 1) == 2\n",
            "function",
        ),
        (
            "class Stack:\n    def __init__(self):\n        self.items = []\n",
            "s = Stack()\n",
            "Stack",
        ),
        (
            "import threading\nLOCK = threading.Lock()\n",
            "LOCK.acquire()\n",
            "LOCK",
        ),
    ];
    for (program, tests, named) in cases {
        let (v, d) = verdict(program, tests).await;
        assert_eq!(v, Verdict::Unsupported, "{program}: {d}");
        assert!(d.contains(named), "{program}: {d}");
    }
    // Caught by the tests or not, it is still unsupported.
    let (v, _) = verdict(
        "def f():\n    return object()\n",
        "try:\n    f()\nexcept BaseException:\n    pass\n",
    )
    .await;
    assert_eq!(v, Verdict::Unsupported);
}

#[tokio::test]
async fn arguments_changed_in_place_are_copied_back_where_that_is_exact() {
    let program = "def sort_in_place(xs):\n    xs.sort()\n\ndef add_key(d):\n    d['new'] = 1\n\ndef grow(rows):\n    rows[0].append(9)\n";
    let tests = "xs = [3, 1, 2]\nassert sort_in_place(xs) is None\nassert xs == [1, 2, 3]\nd = {}\nadd_key(d)\nassert d == {'new': 1}\n";
    assert_eq!(
        verdict(program, tests).await,
        (Verdict::Passed, "3 asserts held".to_string())
    );
    // A change inside a nested list cannot be copied back with the inner list's identity.
    let (v, d) = verdict(program, "row = [1]\ngrow([row])\n").await;
    assert_eq!(v, Verdict::Unsupported, "{d}");
}

#[tokio::test]
async fn test_files_in_other_shapes() {
    let program = "def add(a, b):\n    return a + b\n\nif __name__ == '__main__':\n    print(add(int(input()), 1))\n";
    // A unittest module that imports the program as `solution`.
    let unit = "import unittest\nfrom solution import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\nif __name__ == '__main__':\n    unittest.main()\n";
    assert_eq!(
        verdict(program, unit).await,
        (Verdict::Passed, "1 passed".to_string())
    );
    let failing = unit.replace("5)", "6)");
    let (v, d) = verdict(program, &failing).await;
    assert_eq!(v, Verdict::Failed);
    assert_eq!(d, "T.test_add: AssertionError: 5 != 6 (1 of 1 failed)");
    // The program's prints go to its own output, not into the channel.
    let (v, d) = verdict(
        "print('ready [(1, 2, 3)]')\nimport sys\nprint('reply (\"ok\", 5, [])', file=sys.stderr)\ndef add(a, b):\n    print('reply (\"ok\", 5, [])')\n    return a - b\n",
        "assert add(2, 3) == 5\n",
    )
    .await;
    assert_eq!(v, Verdict::Failed, "{d}");
    // Names the program does not define are the tests' own NameError.
    let (v, d) = verdict("x = 1\n", "add(1, 2)\n").await;
    assert_eq!(
        (v, d.as_str()),
        (Verdict::Failed, "NameError: name 'add' is not defined")
    );
}

#[tokio::test]
async fn syntax_errors_import_errors_and_early_exits() {
    let (v, d) = verdict("def f(:\n", "f()\n").await;
    assert_eq!(v, Verdict::SyntaxError);
    assert!(d.contains("line 1"), "{d}");
    let (v, d) = verdict("raise RuntimeError('at import')\n", "pass\n").await;
    assert_eq!(
        (v, d.as_str()),
        (Verdict::Failed, "RuntimeError: at import")
    );
    let (v, _) = verdict("import sys\nsys.exit(0)\n", "pass\n").await;
    assert_eq!(v, Verdict::ExitedEarly);
    let (v, _) = verdict("def f():\n    import os\n    os._exit(0)\n", "f()\n").await;
    assert_eq!(v, Verdict::ExitedEarly);
    let (v, d) = verdict("def f():\n    import os\n    os._exit(4)\n", "f()\n").await;
    assert_eq!(v, Verdict::Failed, "{d}");
    let (v, _) = verdict("def f():\n    while True:\n        pass\n", "f()\n").await;
    assert_eq!(v, Verdict::TimedOut);
}

#[tokio::test]
async fn oversized_and_malformed_replies_do_not_pass() {
    // A reply larger than the message cap.
    let big = Sandbox::new(Limits {
        message_bytes: 1 << 20,
        ..Limits::default()
    })
    .unwrap()
    .run_tests(
        "def f():\n    return 'x' * (4 << 20)\n",
        &TestSuite::user_tests("f()\n"),
    )
    .await
    .unwrap();
    assert_eq!(big.verdict, Verdict::OutputLimit, "{big:?}");
    // A program that writes its own replies on the channel sends only values; a malformed
    // one is a failure.
    let (v, d) = verdict(
        "import os\ndef f():\n    for fd in range(3, 20):\n        try:\n            os.write(fd, b'reply __import__(\"os\")\\n')\n        except OSError:\n            pass\n    os._exit(0)\n",
        "f()\n",
    )
    .await;
    assert_ne!(v, Verdict::Passed, "{d}");
}
