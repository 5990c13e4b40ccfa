//! The README's three tests-file examples (plain asserts, pytest style, unittest) grade as the
//! README says they do.

use moot_core::validation::{TestSuite, Verdict};
use moot_sandbox::{Limits, Sandbox};

const RIGHT_ADD: &str = "def add(a, b):\n    return a + b\n";
const WRONG_ADD: &str = "def add(a, b):\n    return a - b\n";

/// The Python blocks of the README's section on tests files.
fn examples() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("the README");
    let start = readme
        .find("*A tests file*")
        .expect("the section on tests files");
    let section = &readme[start..];
    let end = section
        .find("The tests' names are their own")
        .expect("its end");
    section[..end]
        .split("```python\n")
        .skip(1)
        .map(|block| block.split("```").next().unwrap_or("").to_string())
        .collect()
}

async fn grade(program: &str, tests: &str) -> (Verdict, String) {
    let v = Sandbox::new(Limits::default())
        .unwrap_or_else(|e| panic!("{e} (the sandbox tests need bubblewrap: scripts/setup.sh)"))
        .run_tests(program, &TestSuite::user_tests(tests))
        .await
        .expect("the sandbox runs");
    (v.verdict, v.detail)
}

/// What the README's comment after `# passed: ` or `# failed: ` says, quoted.
fn said(example: &str, verdict: &str) -> Option<String> {
    let at = example.find(&format!("# {verdict}: \""))? + verdict.len() + 5;
    let rest = &example[at..];
    Some(rest[..rest.find('"')?].to_string())
}

#[tokio::test]
async fn the_readmes_tests_file_examples_grade_as_it_says() {
    let examples = examples();
    assert_eq!(examples.len(), 3, "plain, pytest and unittest examples");
    for example in &examples {
        let (verdict, detail) = grade(RIGHT_ADD, example).await;
        assert_eq!(verdict, Verdict::Passed, "{example}\n{detail}");
        if let Some(want) = said(example, "passed") {
            assert_eq!(detail, want, "{example}");
        }
        let (verdict, detail) = grade(WRONG_ADD, example).await;
        assert_eq!(verdict, Verdict::Failed, "{example}\n{detail}");
        if let Some(want) = said(example, "failed") {
            assert_eq!(detail, want, "{example}");
        }
    }
}
