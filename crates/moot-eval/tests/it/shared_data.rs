//! Every dataset of the real data folder: item counts against the data README's table, every gold
//! parses, ids are unique, BBH option blocks split losslessly.
//!
//! The folder is `MOOT_DATA_DIR`, else `shared/data` beside the checkout
//! (`CARGO_MANIFEST_DIR/../../../shared/data`). Without it these tests fail, naming the folder
//! they looked for: they never pass without having read the data.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use moot_eval::{load, AnswerKind, DatasetSpec, BBH_TASKS, DATA_DIR_VAR, MMLU_SUBJECTS};

/// The data folder; panics, saying where it looked, when it is not there.
fn data_dir() -> PathBuf {
    let dir = match std::env::var_os(DATA_DIR_VAR) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    };
    assert!(
        dir.is_dir(),
        "the benchmark data folder {} does not exist: set {DATA_DIR_VAR} to the folder holding \
         gsm8k/, mmlu/, bbh/, … (see the README's `moot bench` section)",
        dir.display()
    );
    dir
}

/// Counts from shared/data/README.md.
const EXPECTED: [(&str, usize); 15] = [
    ("gsm8k", 1319),
    ("math500", 500),
    ("math", 5000),
    ("aime2024", 30),
    ("aime2025", 30),
    ("mmlu", 14042),
    ("mmlu-pro", 12032),
    ("mmlu-pro:logical_fallacies", 73),
    ("bbh", 6511),
    ("strategyqa", 229),
    ("strategyqa:train", 2061),
    ("strategyqa:bigbench", 2290),
    ("gsm-ranges:original", 100),
    ("gsm-ranges:level4", 5000),
    ("gsm-ranges:level6", 5000),
];

/// A dataset added to the registry is counted here too (this test needs no data folder).
#[test]
fn the_expected_counts_name_every_dataset_of_the_data_folder() {
    let expected: Vec<&str> = EXPECTED.iter().map(|(name, _)| *name).collect();
    let registered: Vec<String> = DatasetSpec::builtins()
        .iter()
        .filter(|s| s.in_data_dir())
        .map(ToString::to_string)
        .collect();
    assert_eq!(expected, registered);
}

#[test]
fn every_dataset_loads_with_the_documented_counts_and_parsable_golds() {
    let dir = data_dir();
    let mut failures = Vec::new();
    let mut wrong_counts = Vec::new();
    let mut seen = HashSet::new();
    let mut report = Vec::new();
    for (name, expected) in EXPECTED {
        let spec: DatasetSpec = name.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        let d = load(&spec, &dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        if d.items.len() != expected {
            wrong_counts.push(format!(
                "{name}: {} items, README says {expected}",
                d.items.len()
            ));
        }
        let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
        for item in &d.items {
            *kinds.entry(item.kind.to_string()).or_default() += 1;
            if item.gold_answer().is_none() {
                failures.push(format!(
                    "{name} {}: gold {:?} ({})",
                    item.id, item.gold, item.kind
                ));
            }
            assert!(seen.insert(item.id.clone()), "duplicate id {}", item.id);
        }
        report.push(format!("{name}: {} items {kinds:?}", d.items.len()));
    }
    println!("{}", report.join("\n"));
    assert!(
        wrong_counts.is_empty(),
        "counts differ:\n{}",
        wrong_counts.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} golds do not parse:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn parts_add_up_to_wholes() {
    let dir = data_dir();
    let whole = |name: &str| load(&name.parse().expect("spec"), &dir).expect("load");
    let mmlu = whole("mmlu");
    let mut n = 0;
    for s in MMLU_SUBJECTS {
        let part = whole(&format!("mmlu:{s}"));
        assert_eq!(part.items[..], mmlu.items[n..n + part.items.len()], "{s}");
        n += part.items.len();
    }
    assert_eq!(n, mmlu.items.len());
    let bbh = whole("bbh");
    let mut n = 0;
    for t in BBH_TASKS {
        let part = whole(&format!("bbh:{t}"));
        assert_eq!(part.items[..], bbh.items[n..n + part.items.len()], "{t}");
        n += part.items.len();
    }
    assert_eq!(n, bbh.items.len());
    assert_eq!(whole("mmlu:logical_fallacies").items.len(), 163);
}

/// BBH choice items rebuild their input exactly; yes-no and text items keep it whole; the only
/// non-letter choice targets are the three known rows.
#[test]
fn bbh_items_keep_their_inputs() {
    let dir = data_dir();
    let mut text_in_choice_tasks = Vec::new();
    let mut past_j = 0;
    for task in BBH_TASKS {
        let raw: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("bbh/{task}.json"))).expect("read"),
        )
        .expect("json");
        let examples = raw["examples"].as_array().expect("examples");
        let d = load(&format!("bbh:{task}").parse().expect("spec"), &dir).expect("load");
        assert_eq!(examples.len(), d.items.len());
        for (example, item) in examples.iter().zip(&d.items) {
            let input = example["input"].as_str().expect("input");
            let rebuilt = if item.choices.is_empty() {
                item.question.clone()
            } else {
                let lines: Vec<String> = item
                    .choices
                    .iter()
                    .enumerate()
                    .map(|(i, o)| format!("({}) {o}", char::from(b'A' + i as u8)))
                    .collect();
                format!("{}\nOptions:\n{}", item.question, lines.join("\n"))
            };
            assert_eq!(rebuilt, input, "{}", item.id);
            if moot_eval::bbh_task_kind(task) == Some(AnswerKind::Choice) {
                assert!(!item.choices.is_empty(), "{}", item.id);
                if item.kind == AnswerKind::Text {
                    text_in_choice_tasks.push(item.id.clone());
                } else if item.gold.as_str() > "J" {
                    past_j += 1;
                }
            }
        }
    }
    println!("choice rows with an option text as target: {text_in_choice_tasks:?}");
    println!("choice rows with a gold letter past J: {past_j}");
    assert_eq!(
        text_in_choice_tasks,
        [
            "bbh:movie_recommendation/163",
            "bbh:ruin_names/99",
            "bbh:ruin_names/144"
        ]
    );
    assert_eq!(past_j, 109);
}
