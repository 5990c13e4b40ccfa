//! Dataset names: [`DatasetSpec`] and its string form.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use moot_core::AnswerKind;

/// The 57 MMLU subjects, in the order `mmlu` loads them (alphabetical).
pub const MMLU_SUBJECTS: [&str; 57] = [
    "abstract_algebra",
    "anatomy",
    "astronomy",
    "business_ethics",
    "clinical_knowledge",
    "college_biology",
    "college_chemistry",
    "college_computer_science",
    "college_mathematics",
    "college_medicine",
    "college_physics",
    "computer_security",
    "conceptual_physics",
    "econometrics",
    "electrical_engineering",
    "elementary_mathematics",
    "formal_logic",
    "global_facts",
    "high_school_biology",
    "high_school_chemistry",
    "high_school_computer_science",
    "high_school_european_history",
    "high_school_geography",
    "high_school_government_and_politics",
    "high_school_macroeconomics",
    "high_school_mathematics",
    "high_school_microeconomics",
    "high_school_physics",
    "high_school_psychology",
    "high_school_statistics",
    "high_school_us_history",
    "high_school_world_history",
    "human_aging",
    "human_sexuality",
    "international_law",
    "jurisprudence",
    "logical_fallacies",
    "machine_learning",
    "management",
    "marketing",
    "medical_genetics",
    "miscellaneous",
    "moral_disputes",
    "moral_scenarios",
    "nutrition",
    "philosophy",
    "prehistory",
    "professional_accounting",
    "professional_law",
    "professional_medicine",
    "professional_psychology",
    "public_relations",
    "security_studies",
    "sociology",
    "us_foreign_policy",
    "virology",
    "world_religions",
];

/// The 27 BIG-Bench Hard tasks, in the order `bbh` loads them (alphabetical).
pub const BBH_TASKS: [&str; 27] = [
    "boolean_expressions",
    "causal_judgement",
    "date_understanding",
    "disambiguation_qa",
    "dyck_languages",
    "formal_fallacies",
    "geometric_shapes",
    "hyperbaton",
    "logical_deduction_five_objects",
    "logical_deduction_seven_objects",
    "logical_deduction_three_objects",
    "movie_recommendation",
    "multistep_arithmetic_two",
    "navigate",
    "object_counting",
    "penguins_in_a_table",
    "reasoning_about_colored_objects",
    "ruin_names",
    "salient_translation_error_detection",
    "snarks",
    "sports_understanding",
    "temporal_sequences",
    "tracking_shuffled_objects_five_objects",
    "tracking_shuffled_objects_seven_objects",
    "tracking_shuffled_objects_three_objects",
    "web_of_lies",
    "word_sorting",
];

/// The accepted name forms, for error messages.
pub const NAME_FORMS: &str = "gsm8k, math500, math, aime2024, aime2025, mmlu, mmlu:SUBJECT, \
mmlu-pro, mmlu-pro:logical_fallacies, bbh, bbh:TASK, strategyqa (= strategyqa:dev), \
strategyqa:train, strategyqa:bigbench, gsm-ranges:original, gsm-ranges:level4, \
gsm-ranges:level6, humaneval, jsonl:PATH?kind=KIND[&question=F&answer=F&options=F&id=F], \
csv:PATH?kind=KIND[&…]";

/// Every name form, for suggestions.
const SIMPLE_NAMES: &[&str] = &[
    "gsm8k",
    "math500",
    "math",
    "aime2024",
    "aime2025",
    "mmlu",
    "mmlu:SUBJECT",
    "mmlu-pro",
    "mmlu-pro:logical_fallacies",
    "bbh",
    "bbh:TASK",
    "strategyqa",
    "strategyqa:train",
    "strategyqa:bigbench",
    "gsm-ranges:original",
    "gsm-ranges:level4",
    "humaneval",
    "gsm-ranges:level6",
    "jsonl:PATH",
    "csv:PATH",
];

/// Which MMLU-Pro file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MmluProSubset {
    /// `mmlu_pro/test.jsonl`, all 14 categories.
    All,
    /// `mmlu_pro/test_logical_fallacies.jsonl`, the MMLU-Pro rows taken from MMLU's logical
    /// fallacies (a separate file; these rows are not in `test.jsonl`).
    LogicalFallacies,
}

/// Which StrategyQA file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StrategyQaSplit {
    /// `strategyqa/dev.json` (229 questions): the default.
    Dev,
    /// `strategyqa/train.json` (2061 questions).
    Train,
    /// `strategyqa/bigbench_strategyqa/task.json` (2290 questions, BIG-bench packaging).
    BigBench,
}

/// Which GSM-Ranges file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GsmRangesLevel {
    Original,
    Level4,
    Level6,
}

impl GsmRangesLevel {
    pub const ALL: [GsmRangesLevel; 3] = [
        GsmRangesLevel::Original,
        GsmRangesLevel::Level4,
        GsmRangesLevel::Level6,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GsmRangesLevel::Original => "original",
            GsmRangesLevel::Level4 => "level4",
            GsmRangesLevel::Level6 => "level6",
        }
    }
}

/// The format of a generic dataset file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileFormat {
    /// One JSON object per line.
    Jsonl,
    /// Comma-separated, with a header row naming the columns.
    Csv,
}

impl FileFormat {
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::Jsonl => "jsonl",
            FileFormat::Csv => "csv",
        }
    }
}

/// Where a generic record keeps its options.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OptionsField {
    /// One field holding the list of option texts (a JSON array; in a CSV cell, a JSON array
    /// written as text).
    List(String),
    /// One field (column) per option, in order A, B, C, …; trailing empty cells are dropped, so
    /// rows may have fewer options than columns.
    Columns(Vec<String>),
}

/// Which fields of a generic file hold what.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldMap {
    pub question: String,
    /// The gold answer: text, a number, or a boolean (read as yes / no). It is parsed under the
    /// dataset's answer kind as a stored answer is (`Answer::parse`), so a full solution ending
    /// in `#### 18` or `\boxed{…}` works as well as a bare answer.
    pub answer: String,
    pub options: Option<OptionsField>,
    /// A field holding each record's id; without it ids are `<file stem>/<index>`.
    pub id: Option<String>,
}

impl Default for FieldMap {
    /// `question` and `answer`, no options, no id field.
    fn default() -> Self {
        FieldMap {
            question: "question".to_string(),
            answer: "answer".to_string(),
            options: None,
            id: None,
        }
    }
}

/// A JSONL or CSV file of any layout, read through a [`FieldMap`] under an explicit answer kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GenericSpec {
    pub format: FileFormat,
    /// The file; a relative path is taken from the current directory, not the data directory.
    pub path: PathBuf,
    pub fields: FieldMap,
    pub kind: AnswerKind,
}

impl GenericSpec {
    /// A spec with the default field names (`question`, `answer`).
    pub fn new(format: FileFormat, path: impl Into<PathBuf>, kind: AnswerKind) -> GenericSpec {
        GenericSpec {
            format,
            path: path.into(),
            fields: FieldMap::default(),
            kind,
        }
    }

    /// Parses `PATH?kind=KIND&question=F&answer=F&options=F&id=F` (the part after `jsonl:` or
    /// `csv:`). `kind` is required; `options` with commas (`options=A,B,C,D`) names one field per
    /// option, without commas one field holding a list.
    fn parse(format: FileFormat, rest: &str) -> Result<GenericSpec, SpecError> {
        let whole = format!("{}:{rest}", format.name());
        let bad = |problem: String| SpecError::Generic {
            spec: whole.clone(),
            problem,
        };
        let (path, query) = match rest.rsplit_once('?') {
            Some((p, q)) => (p, q),
            None => (rest, ""),
        };
        if path.is_empty() {
            return Err(bad("no file path".into()));
        }
        let mut kind = None;
        let mut fields = FieldMap::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| bad(format!("`{pair}` is not key=value")))?;
            if value.is_empty() {
                return Err(bad(format!("`{key}` has an empty value")));
            }
            match key {
                "kind" => {
                    kind = Some(
                        value
                            .parse::<AnswerKind>()
                            .map_err(|e| bad(e.to_string()))?,
                    );
                }
                "question" => fields.question = value.to_string(),
                "answer" => fields.answer = value.to_string(),
                "id" => fields.id = Some(value.to_string()),
                "options" => {
                    fields.options = Some(if value.contains(',') {
                        OptionsField::Columns(
                            value
                                .split(',')
                                .map(|c| c.trim().to_string())
                                .filter(|c| !c.is_empty())
                                .collect(),
                        )
                    } else {
                        OptionsField::List(value.to_string())
                    });
                }
                other => {
                    return Err(bad(format!(
                        "unknown key `{other}` (keys: kind, question, answer, options, id)"
                    )))
                }
            }
        }
        let kind = kind.ok_or_else(|| {
            bad(format!(
                "no answer kind: write {}:{path}?kind=KIND with KIND one of numeric, choice, \
                 yes-no, math, text",
                format.name()
            ))
        })?;
        Ok(GenericSpec {
            format,
            path: PathBuf::from(path),
            fields,
            kind,
        })
    }
}

impl fmt::Display for GenericSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}?kind={}",
            self.format.name(),
            self.path.display(),
            self.kind
        )?;
        let defaults = FieldMap::default();
        if self.fields.question != defaults.question {
            write!(f, "&question={}", self.fields.question)?;
        }
        if self.fields.answer != defaults.answer {
            write!(f, "&answer={}", self.fields.answer)?;
        }
        match &self.fields.options {
            Some(OptionsField::List(field)) => write!(f, "&options={field}")?,
            Some(OptionsField::Columns(cols)) => write!(f, "&options={}", cols.join(","))?,
            None => {}
        }
        if let Some(id) = &self.fields.id {
            write!(f, "&id={id}")?;
        }
        Ok(())
    }
}

/// A benchmark dataset by name; see the crate documentation for each one's file and answer kind.
///
/// Parsed from its name with [`FromStr`] (`"gsm8k"`, `"mmlu:logical_fallacies"`,
/// `"bbh:navigate"`, `"jsonl:my.jsonl?kind=numeric&question=problem"`); [`fmt::Display`] gives
/// the name back.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DatasetSpec {
    Gsm8k,
    Math500,
    Math,
    Aime2024,
    Aime2025,
    /// All 57 subjects (`None`), or one.
    Mmlu(Option<String>),
    MmluPro(MmluProSubset),
    /// All 27 tasks (`None`), or one.
    Bbh(Option<String>),
    StrategyQa(StrategyQaSplit),
    GsmRanges(GsmRangesLevel),
    /// HumanEval's 164 Python problems (shipped with moot: no data directory needed).
    HumanEval,
    Generic(GenericSpec),
}

impl DatasetSpec {
    /// Every built-in dataset as a whole (one spec per file family), for listings and tests.
    pub fn builtins() -> Vec<DatasetSpec> {
        let mut all = vec![
            DatasetSpec::Gsm8k,
            DatasetSpec::Math500,
            DatasetSpec::Math,
            DatasetSpec::Aime2024,
            DatasetSpec::Aime2025,
            DatasetSpec::Mmlu(None),
            DatasetSpec::MmluPro(MmluProSubset::All),
            DatasetSpec::MmluPro(MmluProSubset::LogicalFallacies),
            DatasetSpec::Bbh(None),
            DatasetSpec::StrategyQa(StrategyQaSplit::Dev),
            DatasetSpec::StrategyQa(StrategyQaSplit::Train),
            DatasetSpec::StrategyQa(StrategyQaSplit::BigBench),
        ];
        all.extend(GsmRangesLevel::ALL.map(DatasetSpec::GsmRanges));
        all.push(DatasetSpec::HumanEval);
        all
    }
}

impl fmt::Display for DatasetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatasetSpec::Gsm8k => f.write_str("gsm8k"),
            DatasetSpec::Math500 => f.write_str("math500"),
            DatasetSpec::Math => f.write_str("math"),
            DatasetSpec::Aime2024 => f.write_str("aime2024"),
            DatasetSpec::Aime2025 => f.write_str("aime2025"),
            DatasetSpec::Mmlu(None) => f.write_str("mmlu"),
            DatasetSpec::Mmlu(Some(s)) => write!(f, "mmlu:{s}"),
            DatasetSpec::MmluPro(MmluProSubset::All) => f.write_str("mmlu-pro"),
            DatasetSpec::MmluPro(MmluProSubset::LogicalFallacies) => {
                f.write_str("mmlu-pro:logical_fallacies")
            }
            DatasetSpec::Bbh(None) => f.write_str("bbh"),
            DatasetSpec::Bbh(Some(t)) => write!(f, "bbh:{t}"),
            DatasetSpec::StrategyQa(StrategyQaSplit::Dev) => f.write_str("strategyqa"),
            DatasetSpec::StrategyQa(StrategyQaSplit::Train) => f.write_str("strategyqa:train"),
            DatasetSpec::StrategyQa(StrategyQaSplit::BigBench) => {
                f.write_str("strategyqa:bigbench")
            }
            DatasetSpec::GsmRanges(level) => write!(f, "gsm-ranges:{}", level.name()),
            DatasetSpec::HumanEval => f.write_str("humaneval"),
            DatasetSpec::Generic(g) => g.fmt(f),
        }
    }
}

/// Why a dataset name was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("unknown dataset `{name}`{}; valid names: {NAME_FORMS}", suggest(.close))]
    UnknownDataset { name: String, close: Vec<String> },
    #[error("unknown MMLU subject `{subject}`{}", list_or_all(.close, &MMLU_SUBJECTS))]
    UnknownMmluSubject { subject: String, close: Vec<String> },
    #[error("unknown BBH task `{task}`{}", list_or_all(.close, &BBH_TASKS))]
    UnknownBbhTask { task: String, close: Vec<String> },
    #[error("`{dataset}:{variant}` is not a dataset; valid: {}", .valid.join(", "))]
    UnknownVariant {
        dataset: &'static str,
        variant: String,
        valid: Vec<String>,
    },
    #[error("`{dataset}` needs a variant: {}", .valid.join(", "))]
    MissingVariant {
        dataset: &'static str,
        valid: Vec<String>,
    },
    #[error("`{spec}`: {problem}")]
    Generic { spec: String, problem: String },
}

fn suggest(close: &[String]) -> String {
    if close.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", close.join(", "))
    }
}

fn list_or_all(close: &[String], all: &[&str]) -> String {
    if close.is_empty() {
        format!("; valid: {}", all.join(", "))
    } else {
        format!("; close names: {}", close.join(", "))
    }
}

/// Checks a requested subset `name` (an MMLU subject, a BBH task) against the `valid` ones; `err`
/// builds the error (with close names) for an unknown one.
pub(crate) fn check_name(
    name: &str,
    valid: &[&str],
    err: impl Fn(&str) -> SpecError,
) -> Result<(), SpecError> {
    if valid.contains(&name) {
        Ok(())
    } else {
        Err(err(name))
    }
}

/// Names close to `query`: containing it (or contained in it), or within a small edit distance;
/// nearest first, at most eight.
pub(crate) fn close_names(query: &str, candidates: &[&str]) -> Vec<String> {
    let q = query.to_lowercase().replace('-', "_");
    let mut scored: Vec<(usize, &str)> = candidates
        .iter()
        .filter_map(|&c| {
            let c_norm = c.replace('-', "_");
            let d = levenshtein(&q, &c_norm);
            let contains = q.len() >= 3 && (c_norm.contains(&q) || q.contains(&c_norm));
            (contains || d <= (q.len() / 4).max(2)).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(8)
        .map(|(_, c)| c.to_string())
        .collect()
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = Vec::with_capacity(b.len() + 1);
        cur.push(i + 1);
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

fn no_variant(dataset: &'static str, variant: &str) -> SpecError {
    SpecError::UnknownVariant {
        dataset,
        variant: variant.to_string(),
        valid: vec![dataset.to_string()],
    }
}

impl FromStr for DatasetSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("jsonl:") {
            return GenericSpec::parse(FileFormat::Jsonl, rest).map(DatasetSpec::Generic);
        }
        if let Some(rest) = s.strip_prefix("csv:") {
            return GenericSpec::parse(FileFormat::Csv, rest).map(DatasetSpec::Generic);
        }
        let (head, variant) = match s.split_once(':') {
            Some((h, v)) => (h, Some(v)),
            None => (s, None),
        };
        let simple = |spec: DatasetSpec, name: &'static str| match variant {
            None => Ok(spec),
            Some(v) => Err(no_variant(name, v)),
        };
        match head {
            "gsm8k" => simple(DatasetSpec::Gsm8k, "gsm8k"),
            "humaneval" => simple(DatasetSpec::HumanEval, "humaneval"),
            "math500" => simple(DatasetSpec::Math500, "math500"),
            "math" => simple(DatasetSpec::Math, "math"),
            "aime2024" => simple(DatasetSpec::Aime2024, "aime2024"),
            "aime2025" => simple(DatasetSpec::Aime2025, "aime2025"),
            "mmlu" => match variant {
                None => Ok(DatasetSpec::Mmlu(None)),
                Some(v) if MMLU_SUBJECTS.contains(&v) => Ok(DatasetSpec::Mmlu(Some(v.to_string()))),
                Some(v) => Err(SpecError::UnknownMmluSubject {
                    subject: v.to_string(),
                    close: close_names(v, &MMLU_SUBJECTS),
                }),
            },
            "mmlu-pro" => match variant {
                None => Ok(DatasetSpec::MmluPro(MmluProSubset::All)),
                Some("logical_fallacies") => {
                    Ok(DatasetSpec::MmluPro(MmluProSubset::LogicalFallacies))
                }
                Some(v) => Err(SpecError::UnknownVariant {
                    dataset: "mmlu-pro",
                    variant: v.to_string(),
                    valid: vec!["mmlu-pro".into(), "mmlu-pro:logical_fallacies".into()],
                }),
            },
            "bbh" => match variant {
                None => Ok(DatasetSpec::Bbh(None)),
                Some(v) if BBH_TASKS.contains(&v) => Ok(DatasetSpec::Bbh(Some(v.to_string()))),
                Some(v) => Err(SpecError::UnknownBbhTask {
                    task: v.to_string(),
                    close: close_names(v, &BBH_TASKS),
                }),
            },
            "strategyqa" => match variant {
                None | Some("dev") => Ok(DatasetSpec::StrategyQa(StrategyQaSplit::Dev)),
                Some("train") => Ok(DatasetSpec::StrategyQa(StrategyQaSplit::Train)),
                Some("bigbench") => Ok(DatasetSpec::StrategyQa(StrategyQaSplit::BigBench)),
                Some(v) => Err(SpecError::UnknownVariant {
                    dataset: "strategyqa",
                    variant: v.to_string(),
                    valid: ["strategyqa", "strategyqa:train", "strategyqa:bigbench"]
                        .map(String::from)
                        .to_vec(),
                }),
            },
            "gsm-ranges" => {
                let valid = || {
                    GsmRangesLevel::ALL
                        .iter()
                        .map(|l| format!("gsm-ranges:{}", l.name()))
                        .collect::<Vec<_>>()
                };
                match variant {
                    None => Err(SpecError::MissingVariant {
                        dataset: "gsm-ranges",
                        valid: valid(),
                    }),
                    Some(v) => GsmRangesLevel::ALL
                        .into_iter()
                        .find(|l| l.name() == v)
                        .map(DatasetSpec::GsmRanges)
                        .ok_or_else(|| SpecError::UnknownVariant {
                            dataset: "gsm-ranges",
                            variant: v.to_string(),
                            valid: valid(),
                        }),
                }
            }
            _ => Err(SpecError::UnknownDataset {
                name: s.to_string(),
                close: close_names(s, SIMPLE_NAMES),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<DatasetSpec, SpecError> {
        s.parse()
    }

    #[test]
    fn builtin_names_round_trip() {
        for spec in DatasetSpec::builtins() {
            assert_eq!(p(&spec.to_string()), Ok(spec.clone()), "{spec}");
        }
        for s in MMLU_SUBJECTS {
            let spec = DatasetSpec::Mmlu(Some(s.to_string()));
            assert_eq!(p(&spec.to_string()), Ok(spec));
        }
        for t in BBH_TASKS {
            let spec = DatasetSpec::Bbh(Some(t.to_string()));
            assert_eq!(p(&spec.to_string()), Ok(spec));
        }
        assert_eq!(
            p("strategyqa:dev"),
            Ok(DatasetSpec::StrategyQa(StrategyQaSplit::Dev))
        );
    }

    #[test]
    fn lists_are_sorted_and_complete() {
        assert!(MMLU_SUBJECTS.windows(2).all(|w| w[0] < w[1]));
        assert!(BBH_TASKS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let e = p("gsm9k").unwrap_err().to_string();
        assert!(e.contains("did you mean gsm8k"), "{e}");
        assert!(
            e.contains("mmlu:SUBJECT") && e.contains("gsm-ranges:level4"),
            "{e}"
        );
        let e = p("nonsense").unwrap_err().to_string();
        assert!(e.contains("valid names:"), "{e}");
    }

    #[test]
    fn unknown_subjects_and_tasks_suggest_close_names() {
        let e = p("mmlu:logical_falacies").unwrap_err();
        assert_eq!(
            e,
            SpecError::UnknownMmluSubject {
                subject: "logical_falacies".into(),
                close: vec!["logical_fallacies".into()],
            }
        );
        let e = p("mmlu:chemistry").unwrap_err().to_string();
        assert!(
            e.contains("college_chemistry") && e.contains("high_school_chemistry"),
            "{e}"
        );
        let e = p("mmlu:zzzzzzzzzzzzzz").unwrap_err().to_string();
        assert!(
            e.contains("valid: abstract_algebra") && e.contains("world_religions"),
            "{e}"
        );
        let e = p("bbh:logical_deduction").unwrap_err().to_string();
        assert!(e.contains("logical_deduction_five_objects"), "{e}");
    }

    #[test]
    fn variants_are_checked() {
        assert!(p("gsm-ranges")
            .unwrap_err()
            .to_string()
            .contains("gsm-ranges:level6"));
        assert!(p("gsm-ranges:level5")
            .unwrap_err()
            .to_string()
            .contains("gsm-ranges:original"));
        assert!(p("mmlu-pro:law")
            .unwrap_err()
            .to_string()
            .contains("mmlu-pro:logical_fallacies"));
        assert!(p("gsm8k:test").is_err());
        assert!(p("strategyqa:test").is_err());
    }

    #[test]
    fn generic_specs_parse_and_round_trip() {
        let spec =
            p("jsonl:data/my.jsonl?kind=numeric&question=problem&answer=solution&id=uid").unwrap();
        let DatasetSpec::Generic(g) = &spec else {
            panic!("not generic: {spec:?}")
        };
        assert_eq!(g.format, FileFormat::Jsonl);
        assert_eq!(g.path, PathBuf::from("data/my.jsonl"));
        assert_eq!(g.kind, AnswerKind::Numeric);
        assert_eq!(g.fields.question, "problem");
        assert_eq!(g.fields.answer, "solution");
        assert_eq!(g.fields.id.as_deref(), Some("uid"));
        assert_eq!(p(&spec.to_string()), Ok(spec.clone()));

        let spec = p("csv:q.csv?kind=choice&options=A,B,C,D").unwrap();
        let DatasetSpec::Generic(g) = &spec else {
            panic!("not generic")
        };
        assert_eq!(
            g.fields.options,
            Some(OptionsField::Columns(
                ["A", "B", "C", "D"].map(String::from).to_vec()
            ))
        );
        assert_eq!(p(&spec.to_string()), Ok(spec.clone()));
        let spec = p("jsonl:q.jsonl?kind=choice&options=choices").unwrap();
        let DatasetSpec::Generic(g) = &spec else {
            panic!("not generic")
        };
        assert_eq!(g.fields.options, Some(OptionsField::List("choices".into())));
    }

    #[test]
    fn generic_specs_need_a_kind_and_known_keys() {
        let e = p("jsonl:q.jsonl").unwrap_err().to_string();
        assert!(e.contains("?kind=KIND"), "{e}");
        let e = p("jsonl:q.jsonl?kind=number").unwrap_err().to_string();
        assert!(e.contains("unknown answer kind"), "{e}");
        let e = p("csv:q.csv?kind=text&colour=red").unwrap_err().to_string();
        assert!(e.contains("unknown key `colour`"), "{e}");
        assert!(p("csv:?kind=text").is_err());
        assert!(p("csv:q.csv?kind=text&question=").is_err());
    }

    #[test]
    fn edit_distance() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("same", "same"), 0);
    }
}
