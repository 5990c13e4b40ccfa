//! The loaders on small copies of the real files (tests/fixtures, see NOTICE.md there), so the
//! crate's logic is tested without the shared data folder.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use moot_eval::{
    load, subsample, AnswerKind, Dataset, DatasetError, DatasetSpec, Item, Location, BBH_TASKS,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn get(name: &str) -> Dataset {
    let spec: DatasetSpec = name.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
    load(&spec, &fixtures()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn canonical(item: &Item) -> String {
    item.gold_answer()
        .unwrap_or_else(|| panic!("{}: gold {:?} does not parse", item.id, item.gold))
        .canonical()
        .to_string()
}

fn ids(d: &Dataset) -> Vec<&str> {
    d.items.iter().map(|i| i.id.as_str()).collect()
}

#[test]
fn gsm8k_reduces_hashes_and_separators() {
    let d = get("gsm8k");
    assert_eq!(d.name, "gsm8k");
    assert_eq!(ids(&d), ["gsm8k/0", "gsm8k/1", "gsm8k/2"]);
    let golds: Vec<&str> = d.items.iter().map(|i| i.gold.as_str()).collect();
    assert_eq!(golds, ["18", "3", "2125"]);
    assert!(d.items[0].question.starts_with("Janet"));
    assert!(d
        .items
        .iter()
        .all(|i| i.kind == AnswerKind::Numeric && i.choices.is_empty()));
}

#[test]
fn math_answers_and_boxed_fallback() {
    let d = get("math500");
    assert_eq!(d.items[0].gold, r"\left( 3, \frac{\pi}{2} \right)");
    assert_eq!(d.items[2].gold, r"\text{Evelyn}");
    assert!(d.items.iter().all(|i| i.kind == AnswerKind::Math));
    assert_eq!(ids(&d), ["math500/0", "math500/1", "math500/2"]);

    // math/test.jsonl has no `answer` field: the last \boxed{} of the solution is the gold.
    let d = get("math");
    let golds: Vec<&str> = d.items.iter().map(|i| i.gold.as_str()).collect();
    assert_eq!(golds, ["2", "10", r"\dfrac{9}{7}"]);
    assert_eq!(canonical(&d.items[2]), r"\frac{9}{7}");
}

#[test]
fn aime_keeps_padded_answers_parseable() {
    let d = get("aime2024");
    assert_eq!(d.items[1].gold, "025");
    assert_eq!(canonical(&d.items[1]), "25");
    assert!(d.items[0].question.starts_with("Every morning Aya"));
    let d = get("aime2025");
    assert_eq!(d.items[0].gold, "70");
    assert_eq!(d.items[0].id, "aime2025/0");
}

#[test]
fn mmlu_subject_rows() {
    let d = get("mmlu:logical_fallacies");
    assert_eq!(d.items.len(), 3);
    assert_eq!(d.items[2].id, "mmlu:logical_fallacies/2");
    let first = &d.items[0];
    assert_eq!(
        first.question,
        "A valid disjunctive syllogism has a major premise that:"
    );
    assert_eq!(first.choices.len(), 4);
    assert_eq!(first.choices[0], "includes two or more alternatives");
    assert_eq!(first.gold, "A");
    assert_eq!(first.kind, AnswerKind::Choice);
    // A quoted cell with a comma stays one cell.
    assert!(d.items[1].choices[2].contains("appealing manner are correct, regardless"));
}

#[test]
fn mmlu_as_a_whole_needs_every_subject() {
    // The fixtures hold two of the 57 subjects.
    let err = load(&"mmlu".parse().unwrap(), &fixtures()).unwrap_err();
    assert!(
        matches!(&err, DatasetError::MissingFile { file, .. } if file == "mmlu/test/anatomy_test.csv"),
        "{err}"
    );
    assert!(err.to_string().contains("anatomy_test.csv"), "{err}");
}

#[test]
fn mmlu_pro_options_and_letters() {
    let d = get("mmlu-pro");
    assert_eq!(ids(&d), ["mmlu-pro/0", "mmlu-pro/1", "mmlu-pro/2"]);
    assert_eq!(d.items[0].choices.len(), 9);
    assert_eq!(d.items[0].gold, "I");
    assert_eq!(canonical(&d.items[0]), "I");
    assert_eq!(d.items[2].choices.len(), 4);
    assert!(d
        .items
        .iter()
        .flat_map(|i| &i.choices)
        .all(|o| o.trim() == o));
    let d = get("mmlu-pro:logical_fallacies");
    assert_eq!(d.items[0].id, "mmlu-pro:logical_fallacies/0");
    assert_eq!(d.items[0].gold, "D");
    assert_eq!(d.items[0].choices[3], "jumping to a conclusion");
}

#[test]
fn bbh_choice_tasks_move_options_out_of_the_question() {
    let d = get("bbh:date_understanding");
    let item = &d.items[0];
    assert_eq!(item.kind, AnswerKind::Choice);
    assert_eq!(item.gold, "B");
    assert_eq!(item.choices.len(), 6);
    assert_eq!(item.choices[1], "12/25/1937");
    assert!(!item.question.contains("Options:"));
    assert!(item
        .question
        .ends_with("What is the date tomorrow in MM/DD/YYYY?"));
    assert_eq!(item.id, "bbh:date_understanding/0");
}

#[test]
fn bbh_letters_past_j() {
    let d = get("bbh:geometric_shapes");
    let k = &d.items[2];
    assert_eq!((k.gold.as_str(), k.choices.len()), ("K", 11));
    assert_eq!(canonical(k), "K");
    let d = get("bbh:reasoning_about_colored_objects");
    let l = &d.items[2];
    assert_eq!(l.gold, "L");
    assert_eq!(canonical(l), "L");
}

#[test]
fn bbh_option_text_targets_become_text_items() {
    let d = get("bbh:movie_recommendation");
    let broken = &d.items[2];
    assert_eq!(broken.kind, AnswerKind::Text);
    assert_eq!(broken.gold, "Monsters, Inc");
    assert_eq!(broken.choices[..2], ["Monsters", "Inc"]);
    assert_eq!(d.items[0].kind, AnswerKind::Choice);
    let d = get("bbh:ruin_names");
    assert_eq!(d.items[2].kind, AnswerKind::Text);
    assert_eq!(d.items[2].gold, "dearth, wind, & fire");
}

#[test]
fn bbh_yes_no_numeric_and_text_tasks() {
    let d = get("bbh:navigate");
    let item = &d.items[0];
    assert_eq!(item.kind, AnswerKind::YesNo);
    assert_eq!(item.gold, "No");
    assert!(item.choices.is_empty());
    assert!(item.question.ends_with("Options:\n- Yes\n- No"));
    assert_eq!(canonical(item), "no");

    let d = get("bbh:boolean_expressions");
    assert_eq!(d.items[0].gold, "False");
    assert_eq!(canonical(&d.items[0]), "no");
    assert_eq!(canonical(&d.items[1]), "yes");
    assert_eq!(get("bbh:sports_understanding").items[1].gold, "yes");

    let d = get("bbh:formal_fallacies");
    assert_eq!(d.items[0].kind, AnswerKind::Text);
    assert_eq!(canonical(&d.items[0]), "invalid");
    assert!(d.items[0].question.contains("- valid"));

    let d = get("bbh:multistep_arithmetic_two");
    assert_eq!(d.items[0].kind, AnswerKind::Numeric);
    assert_eq!(canonical(&d.items[0]), "24");
    assert_eq!(get("bbh:object_counting").items[0].gold, "8");

    let d = get("bbh:dyck_languages");
    assert_eq!(
        (d.items[1].kind, d.items[1].gold.as_str()),
        (AnswerKind::Text, "] ] >")
    );
    assert_eq!(get("bbh:word_sorting").items[0].gold, "syndrome therefrom");
}

#[test]
fn bbh_as_a_whole() {
    let d = get("bbh");
    assert_eq!(d.name, "bbh");
    // Two examples per task, plus one extra in four tasks.
    assert_eq!(d.items.len(), 2 * BBH_TASKS.len() + 4);
    assert_eq!(d.items[0].id, "bbh:boolean_expressions/0");
    assert_eq!(
        d.items.last().map(|i| i.id.as_str()),
        Some("bbh:word_sorting/1")
    );
}

#[test]
fn strategyqa_files() {
    let d = get("strategyqa");
    assert_eq!(d.name, "strategyqa");
    assert_eq!(ids(&d), ["strategyqa/0", "strategyqa/1"]);
    assert_eq!(d.items[0].gold, "no");
    assert_eq!(d.items[1].gold, "yes");
    assert!(d.items[0]
        .question
        .starts_with("Will the Albany in Georgia"));
    assert!(d.items.iter().all(|i| i.kind == AnswerKind::YesNo));
    assert_eq!(get("strategyqa:dev").items, d.items);
    let d = get("strategyqa:train");
    assert_eq!(d.items[0].gold, "yes");
    assert_eq!(d.items[0].id, "strategyqa:train/0");
    let d = get("strategyqa:bigbench");
    assert_eq!(d.items[0].gold, "yes");
    assert_eq!(d.items[1].gold, "no");
    assert!(d.items[0].question.starts_with("Is it common to see frost"));
}

#[test]
fn gsm_ranges_levels() {
    for level in ["original", "level4", "level6"] {
        let d = get(&format!("gsm-ranges:{level}"));
        assert_eq!(d.items.len(), 2, "{level}");
        assert_eq!(d.items[1].id, format!("gsm-ranges:{level}/1"));
        assert!(d.items.iter().all(|i| i.kind == AnswerKind::Numeric));
    }
    let d = get("gsm-ranges:level4");
    assert_eq!(d.items[0].gold, "474960");
    assert!(d.items[0].question.contains("81635 eggs"));
}

#[test]
fn every_fixture_gold_parses_and_ids_are_unique() {
    let mut seen = HashSet::new();
    let mut specs = DatasetSpec::builtins();
    specs.retain(|s| s.to_string() != "mmlu");
    specs.push("mmlu:logical_fallacies".parse().unwrap());
    specs.push("mmlu:abstract_algebra".parse().unwrap());
    for spec in specs {
        let d = load(&spec, &fixtures()).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert!(!d.items.is_empty(), "{spec}");
        for item in &d.items {
            assert!(item.gold_answer().is_some(), "{}", item.id);
            assert!(seen.insert(item.id.clone()), "duplicate id {}", item.id);
        }
    }
}

#[test]
fn subsets_of_a_loaded_dataset() {
    let d = get("bbh");
    let a = subsample(&d.items, Some(10), 7);
    let b = subsample(&d.items, Some(20), 7);
    assert_eq!(a.len(), 10);
    assert!(a.iter().all(|i| b.contains(i)));
    let pos = |i: &Item| d.items.iter().position(|x| x.id == i.id);
    assert!(a.windows(2).all(|w| pos(&w[0]) < pos(&w[1])));
    assert_eq!(subsample(&d.items, None, 7), d.items);
}

// ---- generic files ----

fn generic(spec: &str) -> Result<Dataset, DatasetError> {
    let dir = fixtures().join("generic");
    let spec = spec.replace("DIR", &dir.display().to_string());
    load(
        &spec.parse().unwrap_or_else(|e| panic!("{e}")),
        Path::new("/unused"),
    )
}

#[test]
fn generic_jsonl_with_mapped_fields_and_ids() {
    let d =
        generic("jsonl:DIR/arith.jsonl?kind=numeric&question=prompt&answer=target&id=uid").unwrap();
    assert_eq!(ids(&d), ["add-1", "mul-1", "sol-1"]);
    assert_eq!(d.items[0].gold, "5");
    assert_eq!(d.items[0].question, "What is 2 + 3?");
    assert_eq!(canonical(&d.items[1]), "2400");
    assert_eq!(canonical(&d.items[2]), "7");
}

#[test]
fn generic_jsonl_options_list() {
    let d = generic("jsonl:DIR/choice.jsonl?kind=choice&options=choices").unwrap();
    assert_eq!(ids(&d), ["choice/0", "choice/1"]);
    assert_eq!(d.items[0].choices, ["Mars", "Jupiter", "Venus"]);
    assert_eq!(canonical(&d.items[0]), "B");
    assert_eq!(canonical(&d.items[1]), "C");
}

#[test]
fn generic_csv_option_columns() {
    let d = generic("csv:DIR/choice.csv?kind=choice&options=A,B,C,D,E&id=id").unwrap();
    assert_eq!(ids(&d), ["c1", "c2"]);
    // The empty trailing E cell is dropped.
    assert_eq!(d.items[0].choices, ["apple", "teal", "pear", "plum"]);
    assert_eq!(d.items[1].choices.len(), 5);
    assert_eq!(
        d.items[0].question,
        "Which of these is a colour, not a fruit?"
    );
    assert_eq!(canonical(&d.items[1]), "C");
}

#[test]
fn generic_csv_yes_no() {
    let d = generic("csv:DIR/yesno.csv?kind=yes-no&answer=truth").unwrap();
    assert_eq!(ids(&d), ["yesno/0", "yesno/1"]);
    assert_eq!(canonical(&d.items[0]), "yes");
    assert_eq!(canonical(&d.items[1]), "no");
}

#[test]
fn generic_missing_column_lists_the_header() {
    let err = generic("csv:DIR/yesno.csv?kind=yes-no")
        .unwrap_err()
        .to_string();
    assert!(err.contains("no column `answer`"), "{err}");
    assert!(err.contains("columns: question, truth"), "{err}");
}

#[test]
fn generic_jsonl_passages_from_the_context_field() {
    let dir = temp_data(&[(
        "p.jsonl",
        "{\"q\": \"Who?\", \"a\": \"Ines\", \"text\": \"Ines fixed the clock.\"}\n\
         {\"q\": \"What?\", \"a\": \"a clock\", \"text\": \"  \"}\n",
    )]);
    let spec = format!(
        "jsonl:{}/p.jsonl?kind=text&question=q&answer=a&context=text",
        dir.path().display()
    );
    let parsed: moot_eval::DatasetSpec = spec.parse().expect("parsed");
    assert_eq!(parsed.to_string(), spec);
    let err = load(&parsed, Path::new("/unused")).unwrap_err().to_string();
    assert!(
        err.ends_with("line 2: empty passage in field `text`"),
        "{err}"
    );
    let spec = spec.replace("context=text", "context=missing");
    let err = load(&spec.parse().expect("parsed"), Path::new("/unused"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 1") && err.contains("`missing`"), "{err}");
}

/// The passages moot ships (`datasets/passages`) load with the line its README gives, every
/// item with its passage and a gold answer among its options.
#[test]
fn the_shipped_passages_load_through_the_generic_loader() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/passages/passages.jsonl");
    let spec = format!(
        "jsonl:{}?kind=choice&options=choices&id=id&context=passage",
        file.display()
    );
    let readme = fs::read_to_string(file.with_file_name("README.md")).expect("README");
    assert!(readme.contains("passages.jsonl?kind=choice&options=choices&id=id&context=passage"));
    let d = load(&spec.parse().expect("parsed"), Path::new("/unused")).expect("loaded");
    assert_eq!(d.len(), 12);
    for item in &d.items {
        let passage = item.passage.as_deref().expect("a passage");
        assert!(
            passage.len() > moot_core::evidence::DEFAULT_QUOTE_LIMIT,
            "{}",
            item.id
        );
        assert_eq!(item.choices.len(), 4, "{}", item.id);
        assert!(item.gold_answer().is_some(), "{}", item.id);
    }
}

#[test]
fn generic_missing_file() {
    let err = generic("jsonl:DIR/nope.jsonl?kind=text").unwrap_err();
    assert!(matches!(err, DatasetError::MissingFile { .. }), "{err}");
    assert!(err.to_string().contains("nope.jsonl"));
}

// ---- errors, on files written for the test ----

fn temp_data(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in files {
        let path = dir.path().join(name);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }
    dir
}

fn load_err(spec: &str, files: &[(&str, &str)]) -> DatasetError {
    let dir = temp_data(files);
    let spec = spec.replace("DIR", &dir.path().display().to_string());
    match load(&spec.parse().expect("spec"), dir.path()) {
        Ok(d) => panic!("{spec} loaded {} items", d.items.len()),
        Err(e) => e,
    }
}

#[test]
fn error_names_file_line_and_field() {
    let err = load_err(
        "gsm8k",
        &[(
            "gsm8k/test.jsonl",
            "{\"question\": \"q\", \"answer\": \"#### 1\"}\n\n{\"question\": \"q\", \"answer\": \"so 4\"}\n",
        )],
    );
    assert_eq!(
        err.to_string(),
        "gsm8k/test.jsonl line 3: no `#### N` in field `answer`"
    );
}

#[test]
fn error_on_bad_json_and_missing_fields() {
    let err = load_err("gsm8k", &[("gsm8k/test.jsonl", "{\"question\": \"q\",\n")]);
    assert!(
        err.to_string()
            .starts_with("gsm8k/test.jsonl line 1: invalid JSON"),
        "{err}"
    );
    let err = load_err(
        "aime2025",
        &[("aime2025/test.jsonl", "{\"problem\": \"p\"}\n")],
    );
    assert_eq!(
        err.to_string(),
        "aime2025/test.jsonl line 1: missing field `answer`"
    );
    let err = load_err("aime2025", &[("aime2025/test.jsonl", "[1, 2]\n")]);
    assert!(err.to_string().contains("expected a JSON object"), "{err}");
}

#[test]
fn error_on_unparsable_gold() {
    let err = load_err(
        "mmlu:anatomy",
        &[("mmlu/test/anatomy_test.csv", "q1,a,b,c,d,A\nq2,a,b,c,d,Z\n")],
    );
    assert!(
        matches!(&err, DatasetError::Gold { place, .. } if place.location == Location::Row { row: 2, line: 2 }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "mmlu/test/anatomy_test.csv row 2 (line 2): gold answer \"Z\" from field `column 6` does not parse as choice"
    );
}

#[test]
fn error_on_wrong_column_count() {
    let err = load_err(
        "mmlu:anatomy",
        &[(
            "mmlu/test/anatomy_test.csv",
            "\"multi\nline q\",a,b,c,d,A\nq2,a,b,A\n",
        )],
    );
    assert_eq!(
        err.to_string(),
        "mmlu/test/anatomy_test.csv row 2 (line 3): expected 6 columns (question, A, B, C, D, answer letter), found 4"
    );
}

#[test]
fn error_on_mismatched_mmlu_pro_index() {
    let err = load_err(
        "mmlu-pro",
        &[(
            "mmlu_pro/test.jsonl",
            "{\"question\": \"q\", \"options\": [\"x\", \"y\"], \"answer\": \"B\", \"answer_index\": 0}\n",
        )],
    );
    assert!(
        err.to_string().contains("disagrees with answer_index 0"),
        "{err}"
    );
}

#[test]
fn error_on_bbh_structure() {
    let err = load_err(
        "bbh:navigate",
        &[("bbh/navigate.json", "{\"examples\": 3}")],
    );
    assert_eq!(err.to_string(), "bbh/navigate.json: no `examples` list");
    let err = load_err(
        "bbh:navigate",
        &[(
            "bbh/navigate.json",
            "{\"examples\": [{\"input\": \"q\", \"target\": \"No\"}, {\"input\": \"q\"}]}",
        )],
    );
    assert_eq!(
        err.to_string(),
        "bbh/navigate.json examples[1]: missing field `target`"
    );
    let err = load_err(
        "bbh:navigate",
        &[(
            "bbh/navigate.json",
            "{\"examples\": [{\"input\": \"q\", \"target\": \"Maybe\"}]}",
        )],
    );
    assert!(
        err.to_string().contains("does not parse as yes-no"),
        "{err}"
    );
}

#[test]
fn error_on_strategyqa_answer_type() {
    let err = load_err(
        "strategyqa",
        &[(
            "strategyqa/dev.json",
            "[{\"question\": \"q\", \"answer\": \"maybe\"}]",
        )],
    );
    assert_eq!(
        err.to_string(),
        "strategyqa/dev.json questions[0]: expected true or false in field `answer`"
    );
}

#[test]
fn error_on_duplicate_generic_ids() {
    let err = load_err(
        "jsonl:DIR/d.jsonl?kind=text&id=k",
        &[(
            "d.jsonl",
            "{\"k\": 1, \"question\": \"a\", \"answer\": \"x\"}\n{\"k\": 1, \"question\": \"b\", \"answer\": \"y\"}\n",
        )],
    );
    assert!(
        err.to_string()
            .ends_with("line 2: duplicate id \"1\" (first at line 1)"),
        "{err}"
    );
}

#[test]
fn error_on_empty_question() {
    let err = load_err(
        "gsm-ranges:original",
        &[(
            "gsm_ranges/original.csv",
            "index,question,answer\n1, ,#### 3\n",
        )],
    );
    assert_eq!(
        err.to_string(),
        "gsm_ranges/original.csv row 1 (line 2): empty question in field `question`"
    );
}

#[test]
fn missing_file_in_an_existing_data_dir() {
    let err = load_err("aime2024", &[("other/x.txt", "")]);
    assert!(
        matches!(&err, DatasetError::MissingFile { file, .. } if file == "aime2024/test.jsonl"),
        "{err}"
    );
}
