//! Every built-in dataset, by name: the one list that parsing a [`DatasetSpec`], loading it, the
//! names in error messages and `moot bench --dataset`'s help are made from.
//!
//! Adding a dataset is a loader (a module, or a function in [`crate::builtin`]) and one
//! [`DatasetEntry`] in [`DATASETS`]; the tests name what else is missing (a fixture, a row of
//! the README's dataset table, a row of the crate documentation's table).
//!
//! [`DatasetSpec`]: crate::spec::DatasetSpec

use std::path::Path;

use crate::bbh::{self, BBH_TASKS};
use crate::builtin::{self, GSM_RANGES_LEVELS, MMLU_SUBJECTS};
use crate::error::DatasetError;
use crate::humaneval;
use crate::item::Item;

/// One built-in dataset.
#[derive(Debug)]
pub struct DatasetEntry {
    /// The name before any `:PART`, and the start of its items' ids.
    pub name: &'static str,
    /// One line for `--help`: what it is and what kind of answer it has.
    pub summary: &'static str,
    /// The parts it can be narrowed to (`name:PART`), and what its name alone means.
    pub parts: Parts,
    /// Whether its files are in the data directory (`false`: shipped inside moot).
    pub in_data_dir: bool,
    /// Reads it from the data directory: the whole (`None`) or one part. The part is always
    /// one of `parts.names` (parsing admits no other), and never `None` when a part is needed.
    pub load: fn(&Path, Option<&'static str>) -> Result<Vec<Item>, DatasetError>,
}

/// What `name:PART` may name.
#[derive(Debug)]
pub struct Parts {
    /// The parts, in the order a whole made of them loads them.
    pub names: &'static [&'static str],
    pub whole: Whole,
    /// For a list too long to print whole: how help and error messages name one part.
    pub placeholder: Option<Placeholder>,
}

/// What a dataset's name alone means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whole {
    /// Every part, in order (`mmlu` is its 57 subjects).
    AllParts,
    /// A file of its own, apart from the parts (`mmlu-pro` beside
    /// `mmlu-pro:logical_fallacies`); the only meaning for a dataset without parts.
    OwnFile,
    /// A file of its own that may also be named as this part (`strategyqa` =
    /// `strategyqa:dev`); the part is not in `names`.
    Default(&'static str),
    /// Nothing: a part must be named (`gsm-ranges:level4`).
    NeedsPart,
}

/// How a long list of parts is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placeholder {
    /// In help and name lists: `SUBJECT` for `mmlu:SUBJECT`.
    pub form: &'static str,
    /// In errors: "MMLU subject".
    pub noun: &'static str,
}

impl Parts {
    /// A dataset without parts: its name alone.
    pub const NONE: Parts = Parts {
        names: &[],
        whole: Whole::OwnFile,
        placeholder: None,
    };
}

/// Every built-in dataset, in the order help and the README list them.
pub const DATASETS: &[DatasetEntry] = &[
    DatasetEntry {
        name: "gsm8k",
        summary: "GSM8K's test set: 1319 grade-school math word problems (numeric)",
        parts: Parts::NONE,
        in_data_dir: true,
        load: |dir, _| builtin::gsm8k(dir),
    },
    DatasetEntry {
        name: "math500",
        summary: "MATH-500: 500 competition math problems (math)",
        parts: Parts::NONE,
        in_data_dir: true,
        load: |dir, _| builtin::math(dir, "math500"),
    },
    DatasetEntry {
        name: "math",
        summary: "MATH's test set: 5000 competition math problems (math)",
        parts: Parts::NONE,
        in_data_dir: true,
        load: |dir, _| builtin::math(dir, "math"),
    },
    DatasetEntry {
        name: "aime2024",
        summary: "AIME 2024 I and II: 30 problems (numeric)",
        parts: Parts::NONE,
        in_data_dir: true,
        load: |dir, _| builtin::aime(dir, "aime2024"),
    },
    DatasetEntry {
        name: "aime2025",
        summary: "AIME 2025 I and II: 30 problems (numeric)",
        parts: Parts::NONE,
        in_data_dir: true,
        load: |dir, _| builtin::aime(dir, "aime2025"),
    },
    DatasetEntry {
        name: "mmlu",
        summary: "MMLU's test set: 14042 questions in 57 subjects, or one subject (choice)",
        parts: Parts {
            names: &MMLU_SUBJECTS,
            whole: Whole::AllParts,
            placeholder: Some(Placeholder {
                form: "SUBJECT",
                noun: "MMLU subject",
            }),
        },
        in_data_dir: true,
        load: builtin::mmlu,
    },
    DatasetEntry {
        name: "mmlu-pro",
        summary: "MMLU-Pro: 12032 questions with up to ten options; :logical_fallacies its 73 \
                  rows from MMLU's logical fallacies, a file apart (choice)",
        parts: Parts {
            names: &["logical_fallacies"],
            whole: Whole::OwnFile,
            placeholder: None,
        },
        in_data_dir: true,
        load: builtin::mmlu_pro,
    },
    DatasetEntry {
        name: "bbh",
        summary: "BIG-Bench Hard: 6511 examples in 27 tasks, or one task (each task's own kind)",
        parts: Parts {
            names: &BBH_TASKS,
            whole: Whole::AllParts,
            placeholder: Some(Placeholder {
                form: "TASK",
                noun: "BBH task",
            }),
        },
        in_data_dir: true,
        load: bbh::load,
    },
    DatasetEntry {
        name: "strategyqa",
        summary: "StrategyQA: the 229 dev questions (= strategyqa:dev), the 2061 of train, or \
                  BIG-bench's 2290 (yes-no)",
        parts: Parts {
            names: &["train", "bigbench"],
            whole: Whole::Default("dev"),
            placeholder: None,
        },
        in_data_dir: true,
        load: builtin::strategyqa,
    },
    DatasetEntry {
        name: "gsm-ranges",
        summary: "GSM-Ranges: 100 GSM8K problems, and 5000 each with their numbers perturbed \
                  to larger ranges (numeric)",
        parts: Parts {
            names: &GSM_RANGES_LEVELS,
            whole: Whole::NeedsPart,
            placeholder: None,
        },
        in_data_dir: true,
        load: builtin::gsm_ranges,
    },
    DatasetEntry {
        name: "humaneval",
        summary: "HumanEval: 164 Python problems shipped with moot, each chosen program run \
                  with its tests in the sandbox: accuracy is pass@1 (code)",
        parts: Parts::NONE,
        in_data_dir: false,
        load: |_, _| humaneval::load(),
    },
];

/// The built-in dataset called `name` (the part before any `:`).
pub fn dataset(name: &str) -> Option<&'static DatasetEntry> {
    DATASETS.iter().find(|d| d.name == name)
}

/// The built-in datasets' names, in registry order.
pub fn dataset_names() -> Vec<&'static str> {
    DATASETS.iter().map(|d| d.name).collect()
}

impl DatasetEntry {
    /// `name` alone or `name:part`.
    pub fn spelled(&self, part: Option<&str>) -> String {
        match part {
            Some(p) => format!("{}:{p}", self.name),
            None => self.name.to_string(),
        }
    }

    /// Every name it answers to, placeholders kept: `mmlu`, `mmlu:SUBJECT`; `strategyqa`,
    /// `strategyqa:train`, `strategyqa:bigbench` (`strategyqa:dev` is `strategyqa`). The
    /// README's dataset table lists these.
    pub fn forms(&self) -> Vec<String> {
        let mut forms = Vec::new();
        if self.parts.whole != Whole::NeedsPart {
            forms.push(self.name.to_string());
        }
        match self.parts.placeholder {
            Some(p) => forms.push(self.spelled(Some(p.form))),
            None => forms.extend(self.parts.names.iter().map(|p| self.spelled(Some(p)))),
        }
        forms
    }

    /// The names of its whole and of each part it has apart from the whole, spelled out: what
    /// `DatasetSpec::builtins` lists and an unknown part's error offers.
    pub fn listed_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        if self.parts.whole != Whole::NeedsPart {
            names.push(self.name.to_string());
        }
        if self.parts.whole != Whole::AllParts {
            names.extend(self.parts.names.iter().map(|p| self.spelled(Some(p))));
        }
        names
    }

    /// One short form for `--help`: `mmlu[:SUBJECT]`, `strategyqa[:train|bigbench]`,
    /// `gsm-ranges:original|level4|level6`.
    pub fn usage(&self) -> String {
        let parts = match self.parts.placeholder {
            Some(p) => p.form.to_string(),
            None => self.parts.names.join("|"),
        };
        match self.parts.whole {
            _ if parts.is_empty() => self.name.to_string(),
            Whole::NeedsPart => format!("{}:{parts}", self.name),
            _ => format!("{}[:{parts}]", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_have_no_separator() {
        let names = dataset_names();
        for (i, n) in names.iter().enumerate() {
            assert!(!n.contains(':') && !n.is_empty(), "{n}");
            assert!(!names[..i].contains(n), "{n} twice");
            assert!(!["jsonl", "csv"].contains(n), "{n} is a generic format");
        }
    }

    #[test]
    fn parts_are_sorted_where_a_whole_loads_them_in_order() {
        for d in DATASETS {
            if d.parts.whole == Whole::AllParts {
                assert!(d.parts.names.windows(2).all(|w| w[0] < w[1]), "{}", d.name);
            }
            if let Whole::Default(p) = d.parts.whole {
                assert!(!d.parts.names.contains(&p), "{}: {p} is the whole", d.name);
            }
        }
    }

    #[test]
    fn forms_and_usage_spell_each_kind_of_parts() {
        let forms = |n: &str| dataset(n).map(DatasetEntry::forms).unwrap_or_default();
        let usage = |n: &str| dataset(n).map(DatasetEntry::usage).unwrap_or_default();
        assert_eq!(forms("gsm8k"), ["gsm8k"]);
        assert_eq!(forms("mmlu"), ["mmlu", "mmlu:SUBJECT"]);
        assert_eq!(
            forms("strategyqa"),
            ["strategyqa", "strategyqa:train", "strategyqa:bigbench"]
        );
        assert_eq!(
            forms("gsm-ranges"),
            [
                "gsm-ranges:original",
                "gsm-ranges:level4",
                "gsm-ranges:level6"
            ]
        );
        assert_eq!(usage("gsm8k"), "gsm8k");
        assert_eq!(usage("bbh"), "bbh[:TASK]");
        assert_eq!(usage("mmlu-pro"), "mmlu-pro[:logical_fallacies]");
        assert_eq!(usage("gsm-ranges"), "gsm-ranges:original|level4|level6");
    }

    /// The crate documentation's table of files and golds has a row for every dataset.
    #[test]
    fn the_crate_documentation_describes_every_dataset() {
        let doc: Vec<&str> = include_str!("lib.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//! | `"))
            .collect();
        for d in DATASETS {
            let named = doc.iter().any(|row| {
                let first_cell = row.split(" | ").next().unwrap_or_default();
                first_cell
                    .split('`')
                    .any(|n| n == d.name || n.starts_with(&format!("{}:", d.name)))
            });
            assert!(named, "no row for {} in lib.rs's dataset table", d.name);
        }
    }
}
