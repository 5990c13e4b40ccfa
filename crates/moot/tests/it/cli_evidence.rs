//! Hidden evidence through the binary: `moot ask --context FILE` and a benchmark over the
//! passages moot ships. Every stored prompt is read back from the store: the debaters' hold the
//! passage, no deciding agent's does.

use serde_json::Value;

use crate::common;

use common::{sqlite_text, Env};

/// The deciding agents' prompt templates (judge, assigned/consultancy judge, aggregator,
/// chairman).
const DECIDER_TEMPLATES: &str = "('judge-verdict', 'judge-assigned', 'aggregate', 'chair')";

/// The text of every stored call's messages whose template is (or, with `not`, is not) a
/// deciding agent's, one string per call.
fn stored_prompts(env: &Env, deciders: bool) -> Vec<String> {
    let query = format!(
        "SELECT json_group_array(messages_json) FROM calls WHERE status = 'ok' AND template {} IN {DECIDER_TEMPLATES}",
        if deciders { "" } else { "NOT" }
    );
    let all = sqlite_text(&env.store(), &query).expect("a row");
    let all: Vec<String> = serde_json::from_str(&all).expect("a JSON list");
    all.iter()
        .map(|messages| {
            let messages: Value = serde_json::from_str(messages).expect("messages JSON");
            messages
                .as_array()
                .expect("a list")
                .iter()
                .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

const PASSAGE: &str = "The ferry to Kell Island left at seven each morning, and Captain Orla \
Brand had not missed a crossing in eleven years. On the morning of the storm she held the ferry \
at the pier until nine, because the harbour master's flag showed red. The passengers waited in \
the cafe by the pier, and a boy named Tam counted the gulls on the roof: there were twenty-six \
of them. When the flag turned white the ferry left, two hours late, and reached the island at \
half past ten.";

/// A consultant that quotes a line of the passage, an invention and the whole passage, and a scripted
/// judge: the judge's stored prompt holds neither the passage nor more verified quotation than
/// the limit, and marks each quote; the consultant's holds the passage before the question.
#[test]
fn ask_with_a_context_file_keeps_the_passage_from_the_judge() {
    let env = Env::new();
    let passage = env.write("passage.txt", PASSAGE);
    let consultant = format!(
        "The log is clear: <quote>she held the ferry at the pier until nine</quote>, and \
         <quote>the engine failed</quote>. All of it: <quote>{PASSAGE}</quote>\nFinal answer: B"
    );
    let config = env.write(
        "consultancy.toml",
        &format!(
            "[debate]\nprotocol = \"consultancy\"\n\n[protocol]\nquote_limit = 120\n\n\
             [[agents]]\nid = \"consultant\"\nbackend = \"scripted\"\nresponses = [{c:?}]\n\n\
             [[agents]]\nid = \"judge\"\nbackend = \"scripted\"\nrole = \"judge\"\n\
             responses = [\"The quotes support B.\\nFinal answer: B\"]\n",
            c = consultant
        ),
    );
    let run = env.json(&[
        "ask",
        "Why did the ferry leave late on the morning of the storm?",
        "--config",
        config.to_str().unwrap(),
        "--context",
        passage.to_str().unwrap(),
        "--answer",
        "choice",
        "--choices",
        "The engine failed,The flag showed red,The captain overslept",
        "--json",
    ]);
    assert_eq!(run["answer"], "B", "{run}");
    let shown = env.json(&["show", run["run_id"].as_str().unwrap(), "--format", "json"]);
    assert_eq!(
        shown["run"]["spec"]["passage"], PASSAGE,
        "{}",
        shown["run"]["spec"]
    );

    let judge = stored_prompts(&env, true);
    assert_eq!(judge.len(), 1, "one judge call");
    let judge = &judge[0];
    assert!(
        !judge.contains(PASSAGE) && !judge.contains("[Passage]"),
        "{judge}"
    );
    assert!(judge.contains("you cannot see"), "{judge}");
    assert!(judge.contains("<v_quote>she held the ferry at the pier until nine</v_quote>"));
    assert!(
        judge.contains("<u_quote>the engine failed</u_quote>"),
        "{judge}"
    );
    // (The note that explains the marks shows one, around an ellipsis.)
    let verified: usize = judge
        .replace("<v_quote>…</v_quote>", "")
        .split("<v_quote>")
        .skip(1)
        .map(|b| {
            b.split("</v_quote>")
                .next()
                .unwrap_or_default()
                .chars()
                .count()
        })
        .sum();
    // The judge reads the consultant's one argument: at most the limit of verified quotation.
    assert!(verified <= 120, "{verified} verified characters in {judge}");
    assert!(judge.contains("verified quotation cut"), "{judge}");

    let debaters = stored_prompts(&env, false);
    assert!(!debaters.is_empty());
    for prompt in &debaters {
        let at = prompt.find(PASSAGE).unwrap_or_else(|| panic!("{prompt}"));
        assert!(at < prompt.find("Why did the ferry").expect("the question"));
        assert!(prompt.contains("at most 120 characters"), "{prompt}");
    }
}

/// A benchmark over the shipped passages under every protocol with a judge: every stored judge
/// prompt is free of its item's passage, and every debater prompt holds it.
#[test]
fn a_benchmark_over_the_shipped_passages_never_shows_a_judge_the_passage() {
    let env = Env::new();
    let config = env.write(
        "judged.toml",
        "[[agents]]\nid = \"d1\"\nbackend = \"sim\"\n\n[[agents]]\nid = \"d2\"\nbackend = \"sim\"\n\n\
         [[agents]]\nid = \"judge\"\nbackend = \"sim\"\nrole = \"judge\"\n",
    );
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../datasets/passages/passages.jsonl"
    );
    let dataset = format!("jsonl:{file}?kind=choice&options=choices&id=id&context=passage");
    env.json(&[
        "bench",
        "--dataset",
        &dataset,
        "--protocol",
        "judge,assigned,consultancy",
        "--config",
        config.to_str().unwrap(),
        "--limit",
        "4",
        "--name",
        "hidden",
        "--json",
    ]);
    let passages: Vec<String> = std::fs::read_to_string(file)
        .expect("dataset")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a line");
            v["passage"].as_str().expect("a passage").to_string()
        })
        .collect();
    let judge = stored_prompts(&env, true);
    assert_eq!(judge.len(), 3 * 4, "one judge call per debate");
    for prompt in &judge {
        for passage in &passages {
            assert!(!prompt.contains(passage.as_str()), "{prompt}");
        }
        assert!(!prompt.contains("[Passage]"), "{prompt}");
    }
    let debaters = stored_prompts(&env, false);
    assert!(debaters.len() >= 3 * 4 * 2);
    for prompt in &debaters {
        assert!(
            passages.iter().any(|p| prompt.contains(p.as_str())),
            "a debater without its passage: {prompt}"
        );
    }
}

/// A missing, empty or oversized context file is refused by its flag, before anything is
/// stored.
#[test]
fn a_bad_context_file_is_refused_by_name() {
    let env = Env::new();
    let refused =
        |file: &str| env.refused(&["ask", "q", "--sim", "--gold", "1", "--context", file]);
    let err = refused("/nonexistent/p.txt");
    assert!(err.contains("--context /nonexistent/p.txt"), "{err}");
    let empty = env.write("empty.txt", "  \n");
    let err = refused(empty.to_str().unwrap());
    assert!(err.contains("--context is empty"), "{err}");
    let big = env.write("big.txt", &"word ".repeat(20_000));
    let err = refused(big.to_str().unwrap());
    assert!(
        err.contains("the question and its passage are 100001 bytes")
            && err.contains("debate.max_question_bytes"),
        "{err}"
    );
}
