//! `moot-eval`: benchmarks (DESIGN §9) — dataset names, loaders and seeded subsets; the runner
//! that debates every item under every protocol as stored, resumable runs ([`bench`]); and the
//! summaries and reports made of them ([`summary`], [`report`]). No CLI lives here.
//!
//! A [`DatasetSpec`] names a dataset (`"gsm8k"`, `"mmlu:logical_fallacies"`, `"bbh:navigate"`,
//! `"jsonl:my.jsonl?kind=numeric&question=problem"`); [`load`] reads it from the data directory
//! ([`default_data_dir`]: `MOOT_DATA_DIR`, else `../shared/data`) into a [`Dataset`] of
//! [`Item`]s; [`subsample`] picks a seeded, nested subset.
//!
//! Every item carries its gold answer as text already reduced from the raw field, and an
//! [`AnswerKind`]; [`Item::gold_answer`] parses it with `moot-core`'s answer machinery. [`load`]
//! refuses a file in which any gold fails to parse, naming the file, line and field, so a loaded
//! item can always be scored.
//!
//! # Ids
//!
//! `<dataset>/<index>`, the index counting from 0 in the item's own file: `gsm8k/17`,
//! `mmlu:logical_fallacies/3`, `bbh:navigate/120`, `gsm-ranges:level4/42`, `strategyqa/5`. Items
//! keep the same id whether their file is loaded alone or as part of a whole (`mmlu`, `bbh`).
//! Generic files use their mapped `id` field, or `<file stem>/<index>`.
//!
//! # Datasets and decisions
//!
//! Files are relative to the data directory.
//!
//! | name | file | kind | question | gold |
//! |---|---|---|---|---|
//! | `gsm8k` | `gsm8k/test.jsonl` | numeric | `question` | the text after the last `####` of `answer`, thousands separators removed (`#### 1,600` → `1600`) |
//! | `math500` | `math500/test.jsonl` | math | `problem` | `answer` (LaTeX, as written) |
//! | `math` | `math/test.jsonl` | math | `problem` | `answer` when a record has it, else the last `\boxed{…}` (balanced braces) of `solution`; this file has no `answer` field, so all 5000 come from `solution` |
//! | `aime2024`, `aime2025` | `aimeYYYY/test.jsonl` | numeric | `problem` | `answer` as written: `"025"` stays `"025"` and parses as 25 |
//! | `mmlu`, `mmlu:SUBJECT` | `mmlu/test/SUBJECT_test.csv` (no header: question, A, B, C, D, letter) | choice | column 1 | the letter; options are columns 2–5. `mmlu` loads all 57 subjects in alphabetical order |
//! | `mmlu-pro` | `mmlu_pro/test.jsonl` | choice | `question` | `answer` letter (A–J), checked against `answer_index`; options are `options`, each trimmed of surrounding whitespace |
//! | `mmlu-pro:logical_fallacies` | `mmlu_pro/test_logical_fallacies.jsonl` (a separate file) | choice | as `mmlu-pro` | as `mmlu-pro` |
//! | `bbh`, `bbh:TASK` | `bbh/TASK.json` (`examples` of `{input, target}`) | per task, below | `input` (see options below) | `target`, reduced per task |
//! | `strategyqa` = `strategyqa:dev` | `strategyqa/dev.json` (229 questions) | yes-no | `question` | `answer` `true`/`false` → `yes`/`no` |
//! | `strategyqa:train` | `strategyqa/train.json` | yes-no | as dev | as dev |
//! | `strategyqa:bigbench` | `strategyqa/bigbench_strategyqa/task.json` | yes-no | `input` | the best-scored key of `target_scores` → `yes`/`no` |
//! | `gsm-ranges:LEVEL` (`original`, `level4`, `level6`) | `gsm_ranges/LEVEL.csv` (header `index,question,answer`) | numeric | `question` | as GSM8K. Ids count rows: the `index` column repeats across the perturbed variants of a problem |
//!
//! `strategyqa` means the dev file because the train file is for training and the BIG-bench
//! file repackages dev and train together (229 + 2061 = 2290).
//!
//! ## BIG-Bench Hard
//!
//! The kind is fixed per task ([`bbh_task_kind`]):
//! - **choice** (17 tasks: date_understanding, disambiguation_qa, geometric_shapes, hyperbaton,
//!   logical_deduction_*, movie_recommendation, penguins_in_a_table,
//!   reasoning_about_colored_objects, ruin_names, salient_translation_error_detection, snarks,
//!   temporal_sequences, tracking_shuffled_objects_*): targets are `(X)`; gold is the letter
//!   `X`. The input ends with `\nOptions:\n(A) …\n(B) …`; that block is moved out of the
//!   question into `options`, so choice items look like MMLU's (the engine renders options after
//!   the question) and the option texts are known for extraction. The input is exactly
//!   `question + "\nOptions:\n" + "(A) " + options[0] + "\n(B) " + …`. An input without such a
//!   block would keep its whole text as the question and empty options (none in the data).
//! - Three choice rows have an option's text as target instead of a letter, because upstream
//!   split an option at its commas (`movie_recommendation` example 163, "Monsters, Inc" split into
//!   "(A) Monsters" and "(B) Inc"; `ruin_names` examples 99 and 144). No letter is right for
//!   them, so they become **text** items with the target as gold (options kept).
//! - **yes-no**: boolean_expressions (`True`/`False`), causal_judgement, navigate, web_of_lies
//!   (`Yes`/`No`), sports_understanding (`yes`/`no`); gold is the target as written, which parses
//!   as yes / no. The `- Yes` / `- No` option lists some inputs carry stay in the question.
//! - **numeric**: multistep_arithmetic_two, object_counting.
//! - **text**: dyck_languages, word_sorting, and formal_fallacies (`valid`/`invalid`): yes-no
//!   cannot read "invalid" in a response, while text matching takes the model's word as it is.
//!   Its `- valid` / `- invalid` list stays in the question.
//!
//! Letters past J: geometric_shapes has up to 11 options (gold `(K)` in 50 rows) and
//! reasoning_about_colored_objects up to 18 (gold K–Q in 59 rows). `moot-core`'s choice kind reads
//! any option's letter when the options are known (A–J otherwise), and these items carry their
//! options, so both their golds and a model's `(K)` are read.
//!
//! ## Generic files
//!
//! `jsonl:PATH?kind=KIND&question=F&answer=F&options=F&id=F` and `csv:PATH?…` (a header row
//! required) read any file through a [`FieldMap`] under an explicit [`AnswerKind`]; `kind` is
//! required, `question` and `answer` default to those names. `options=F` names one field holding
//! a list (a JSON array; in CSV, a cell holding a JSON array), `options=A,B,C,D` one field per
//! option. The gold is the answer field as written (numbers in their JSON form, booleans as
//! yes / no) and is parsed as a stored answer is, so `"#### 18"` or a solution ending in
//! `\boxed{…}` also work. Relative paths are taken from the current directory.

mod bbh;
pub mod bench;
mod builtin;
mod error;
mod generic;
mod gold;
mod read;
pub mod report;
mod sample;
mod spec;
pub mod summary;

use std::path::{Path, PathBuf};

use moot_core::answer::ExtractContext;
pub use moot_core::{Answer, AnswerKind};
use serde::{Deserialize, Serialize};

pub use bbh::task_kind as bbh_task_kind;
pub use error::{DatasetError, Location, Place};
pub use sample::{subsample, subsample_indices};
pub use spec::{
    DatasetSpec, FieldMap, FileFormat, GenericSpec, GsmRangesLevel, MmluProSubset, OptionsField,
    SpecError, StrategyQaSplit, BBH_TASKS, MMLU_SUBJECTS, NAME_FORMS,
};

/// The environment variable naming the data directory.
pub const DATA_DIR_VAR: &str = "MOOT_DATA_DIR";

/// One benchmark question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Stable id: `<dataset>/<index in its file>`, or a generic file's mapped id.
    pub id: String,
    pub question: String,
    /// Option texts in order A, B, …; empty when the question has none of its own (or, for BBH
    /// yes-no and text tasks, lists them inside its text).
    pub options: Vec<String>,
    /// The gold answer text, reduced from the raw field (see the crate documentation).
    pub gold: String,
    pub kind: AnswerKind,
}

impl Item {
    /// The context answers to this item are extracted with (its options).
    pub fn extract_context(&self) -> ExtractContext<'_> {
        ExtractContext {
            options: &self.options,
        }
    }

    /// The gold answer parsed under the item's kind (choice letters past J read through the
    /// item's options); `None` only for an item not made by [`load`], which rejects unparsable
    /// golds.
    pub fn gold_answer(&self) -> Option<Answer> {
        Answer::parse(self.kind, &self.gold, &self.extract_context())
    }
}

/// A loaded dataset: its name (the spec's string form) and its items in file order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    pub name: String,
    pub items: Vec<Item>,
}

impl Dataset {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// Loads a dataset. Built-in datasets are read from `data_dir` (an error names the directory
/// and `MOOT_DATA_DIR` when it does not exist); generic ones from their own path.
pub fn load(spec: &DatasetSpec, data_dir: &Path) -> Result<Dataset, DatasetError> {
    if !matches!(spec, DatasetSpec::Generic(_)) && !data_dir.is_dir() {
        return Err(DatasetError::MissingDataDir {
            path: data_dir.to_path_buf(),
        });
    }
    Ok(Dataset {
        name: spec.to_string(),
        items: builtin::load(spec, data_dir)?,
    })
}

/// `MOOT_DATA_DIR` when set (and not empty), else `../shared/data` from the current directory.
pub fn default_data_dir() -> PathBuf {
    match std::env::var_os(DATA_DIR_VAR) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let relative = Path::new("..").join("shared").join("data");
            match std::env::current_dir() {
                Ok(cwd) => cwd.join(relative),
                Err(_) => relative,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: AnswerKind, gold: &str, options: &[&str]) -> Item {
        Item {
            id: "t/0".into(),
            question: "q".into(),
            options: options.iter().map(|s| s.to_string()).collect(),
            gold: gold.into(),
            kind,
        }
    }

    fn canon(i: &Item) -> Option<String> {
        i.gold_answer().map(|a| a.canonical().to_string())
    }

    #[test]
    fn golds_parse_under_their_kind() {
        assert_eq!(
            canon(&item(AnswerKind::Numeric, "025", &[])),
            Some("25".into())
        );
        assert_eq!(
            canon(&item(AnswerKind::Numeric, "1600", &[])),
            Some("1600".into())
        );
        assert_eq!(
            canon(&item(AnswerKind::Choice, "B", &["x", "y"])),
            Some("B".into())
        );
        assert_eq!(canon(&item(AnswerKind::Choice, "C", &["x", "y"])), None);
        assert_eq!(
            canon(&item(AnswerKind::YesNo, "True", &[])),
            Some("yes".into())
        );
        assert_eq!(
            canon(&item(AnswerKind::YesNo, "no", &[])),
            Some("no".into())
        );
        assert_eq!(
            canon(&item(AnswerKind::Math, r"\dfrac{9}{7}", &[])),
            Some(r"\frac{9}{7}".into())
        );
        assert_eq!(
            canon(&item(AnswerKind::Text, "] ] >", &[])),
            Some("] ] >".into())
        );
    }

    #[test]
    fn choice_golds_past_j_read_with_their_options() {
        let shapes = [
            "circle",
            "heptagon",
            "hexagon",
            "kite",
            "line",
            "octagon",
            "pentagon",
            "rectangle",
            "sector",
            "triangle",
            "trapezoid",
        ];
        let a = item(AnswerKind::Choice, "K", &shapes)
            .gold_answer()
            .unwrap();
        assert_eq!(a.canonical(), "K");
        let j = item(AnswerKind::Choice, "J", &shapes)
            .gold_answer()
            .unwrap();
        assert!(!a.equivalent(&j));
        // No twelfth option: no L.
        assert_eq!(canon(&item(AnswerKind::Choice, "L", &shapes)), None);
    }

    #[test]
    fn default_data_dir_follows_the_variable() {
        let saved = std::env::var_os(DATA_DIR_VAR);
        std::env::set_var(DATA_DIR_VAR, "/some/where");
        assert_eq!(default_data_dir(), PathBuf::from("/some/where"));
        std::env::remove_var(DATA_DIR_VAR);
        let d = default_data_dir();
        assert!(d.ends_with("../shared/data"), "{}", d.display());
        if let Some(v) = saved {
            std::env::set_var(DATA_DIR_VAR, v);
        }
    }

    #[test]
    fn missing_data_dir_names_path_and_variable() {
        let e = load(&DatasetSpec::Gsm8k, Path::new("/no/such/dir")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("/no/such/dir") && msg.contains("MOOT_DATA_DIR"),
            "{msg}"
        );
    }
}
