//! The grader proven on real data, through `moot bench --dataset humaneval`: a fake
//! OpenAI-compatible server answers each problem with a chosen program in a fenced block, and
//! every verdict comes from running it with the problem's own tests.
//!
//! - all 164 gold programs (the prompt plus its canonical solution) pass;
//! - every problem answered with the body `return None` fails;
//! - 20 off-by-one variants (the first `range(…)` bound of the canonical solution made one
//!   smaller: problems where that changes the answer) fail, while the other 144 problems,
//!   answered with their gold programs in the same benchmark, pass.
//!
//! It prints the median and the slowest check's time (a figure, not an assertion).

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::fake_openai::FakeOpenAi;
use common::Env;
use serde_json::Value;

/// The problems whose off-by-one variant fails HumanEval's own tests (found by running each
/// variant with the original harness).
const OFF_BY_ONE: [usize; 20] = [
    14, 15, 18, 31, 36, 39, 46, 49, 60, 69, 73, 78, 80, 85, 87, 94, 96, 98, 100, 103,
];

struct Problem {
    number: usize,
    prompt: String,
    canonical: String,
}

fn problems() -> Vec<Problem> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../moot-eval/data/humaneval/HumanEval.jsonl"
    );
    std::fs::read_to_string(path)
        .expect("HumanEval ships with moot-eval")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(number, line)| {
            let v: Value = serde_json::from_str(line).expect("a HumanEval line");
            Problem {
                number,
                prompt: v["prompt"].as_str().unwrap().to_string(),
                canonical: v["canonical_solution"].as_str().unwrap().to_string(),
            }
        })
        .collect()
}

/// The canonical solution with its first `range(…)`'s bound made one smaller.
fn off_by_one(canonical: &str) -> String {
    let start = canonical.find("range(").expect("a range") + "range(".len();
    let mut depth = 1;
    let mut end = start;
    for (i, c) in canonical[start..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            end = start + i;
            break;
        }
    }
    format!("{} - 1{}", &canonical[..end], &canonical[end..])
}

/// Runs `moot bench --dataset humaneval --protocol cot` against a server that answers problem
/// N with `program(N)`; returns each problem's verdict of its tests check and every tests
/// check's time.
fn bench(
    env: &Env,
    name: &str,
    program: impl Fn(&Problem) -> String + Send + Sync + 'static,
) -> (BTreeMap<usize, String>, Vec<u64>) {
    let problems = Arc::new(problems());
    let questions: Vec<(String, usize)> = problems
        .iter()
        .map(|p| (p.prompt.trim_end().to_string(), p.number))
        .collect();
    let answers: Vec<String> = problems.iter().map(&program).collect();
    let server = FakeOpenAi::answering(move |prompt| {
        // The longest prompt contained in the request is its problem (some prompts are
        // prefixes of nothing else, but be exact anyway).
        let found = questions
            .iter()
            .filter(|(q, _)| prompt.contains(q.as_str()))
            .max_by_key(|(q, _)| q.len());
        match found {
            Some((_, n)) => format!("Here is the function.\n```python\n{}\n```\n", answers[*n]),
            None => "I do not know which problem this is.".to_string(),
        }
    });
    let team = env.write(&format!("{name}.toml"), &server.team(1, 0));
    let report = env.json(&[
        "bench",
        "--dataset",
        "humaneval",
        "--protocol",
        "cot",
        "--config",
        &team.display().to_string(),
        "--concurrency",
        "2",
        "--run",
        name,
        "--json",
    ]);
    assert_eq!(report["graded_by_tests"], 164, "{report}");
    let mut verdicts = BTreeMap::new();
    let mut times = Vec::new();
    for p in problems.iter() {
        let shown = env.json(&[
            "show",
            &format!("{name}/cot/humaneval/{}", p.number),
            "--format",
            "json",
        ]);
        let checks = shown["validations"].as_array().expect("checks").clone();
        for c in checks.iter().filter(|c| c["check"] == "tests") {
            times.push(c["elapsed_ms"].as_u64().expect("elapsed_ms"));
        }
        let tests = checks
            .iter()
            .find(|c| c["check"] == "tests")
            .map(|c| format!("{} {}", c["verdict"].as_str().unwrap(), c["detail"]))
            .unwrap_or_else(|| format!("no tests check: {checks:?}"));
        verdicts.insert(p.number, tests);
    }
    (verdicts, times)
}

fn print_times(what: &str, mut times: Vec<u64>) {
    times.sort_unstable();
    let median = times[times.len() / 2];
    let max = times.last().copied().unwrap_or(0);
    eprintln!(
        "{what}: {} tests checks, median {median} ms, slowest {max} ms",
        times.len()
    );
}

#[test]
fn every_gold_program_passes_and_known_wrong_ones_fail() {
    let env = Env::new();

    let (gold, times) = bench(&env, "gold", |p| format!("{}{}", p.prompt, p.canonical));
    let not_passed: Vec<_> = gold
        .iter()
        .filter(|(_, v)| !v.starts_with("passed"))
        .collect();
    assert!(
        not_passed.is_empty(),
        "gold programs that did not pass: {not_passed:?}"
    );
    print_times("gold programs", times);

    let (none, times) = bench(&env, "none", |p| format!("{}    return None\n", p.prompt));
    let not_failed: Vec<_> = none
        .iter()
        .filter(|(_, v)| !v.starts_with("failed"))
        .collect();
    assert!(
        not_failed.is_empty(),
        "`return None` programs that did not fail: {not_failed:?}"
    );
    print_times("`return None` programs", times);

    let (mixed, _) = bench(&env, "off-by-one", |p| {
        let body = if OFF_BY_ONE.contains(&p.number) {
            off_by_one(&p.canonical)
        } else {
            p.canonical.clone()
        };
        format!("{}{}", p.prompt, body)
    });
    for (n, verdict) in &mixed {
        if OFF_BY_ONE.contains(n) {
            assert!(
                verdict.starts_with("failed"),
                "the off-by-one variant of {n}: {verdict}"
            );
        } else {
            assert!(verdict.starts_with("passed"), "gold {n}: {verdict}");
        }
    }
}

#[test]
fn the_off_by_one_variant_changes_the_first_range_bound() {
    assert_eq!(
        off_by_one("    for i in range(len(xs)):\n        pass\n"),
        "    for i in range(len(xs) - 1):\n        pass\n"
    );
}
