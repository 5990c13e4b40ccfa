//! Dataset names: [`DatasetSpec`] and its string form, parsed against the registry
//! ([`crate::registry::DATASETS`]) and the generic forms `jsonl:…` and `csv:…`.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::str::FromStr;

use moot_core::AnswerKind;

use crate::registry::{dataset, DatasetEntry, Whole, DATASETS};
use crate::spec_error::close_names;
pub use crate::spec_error::SpecError;

/// The generic forms, as error messages and name lists spell them.
const GENERIC_FORMS: [&str; 3] = [
    "jsonl:PATH?kind=KIND[&question=F&answer=F&options=F&labels=F&answer_index=B&id=F&context=F]",
    "csv:PATH?kind=KIND[&…]",
    "parquet:PATH?kind=KIND[&…]",
];

/// The generic forms, as suggestions offer them.
const GENERIC_SUGGESTIONS: [&str; 3] = ["jsonl:PATH", "csv:PATH", "parquet:PATH"];

/// Every accepted name form, for error messages: `gsm8k, …, mmlu, mmlu:SUBJECT, …,
/// strategyqa (= strategyqa:dev), …, jsonl:PATH?kind=KIND[…], csv:PATH?kind=KIND[&…]`.
pub fn name_forms() -> String {
    let mut forms = Vec::new();
    for d in DATASETS {
        for form in d.forms() {
            match d.parts.whole {
                Whole::Default(part) if form == d.name => {
                    forms.push(format!("{form} (= {})", d.spelled(Some(part))));
                }
                _ => forms.push(form),
            }
        }
    }
    forms.extend(GENERIC_FORMS.map(String::from));
    forms.join(", ")
}

/// `--dataset`'s short help: every dataset's short form.
pub fn dataset_help() -> String {
    let usages: Vec<String> = DATASETS.iter().map(DatasetEntry::usage).collect();
    format!(
        "The dataset: {}, or jsonl:PATH?kind=K&question=F&answer=F / csv:PATH?… / parquet:PATH?…",
        usages.join(", ")
    )
}

/// `--dataset`'s long help: one line per dataset with what it is, then the generic forms.
pub fn dataset_long_help() -> String {
    let usages: Vec<String> = DATASETS.iter().map(DatasetEntry::usage).collect();
    let width = usages.iter().map(|u| u.chars().count()).max().unwrap_or(0);
    let mut help = String::from(
        "The dataset, by name. Built-in datasets are read from --data-dir (default: \
         MOOT_DATA_DIR, else ../shared/data) unless they ship with moot:\n",
    );
    for (d, usage) in DATASETS.iter().zip(&usages) {
        help.push_str(&format!("  {usage:width$}  {}\n", d.summary));
    }
    let kinds: Vec<&str> = AnswerKind::ALL.iter().map(|k| k.name()).collect();
    help.push_str(&format!(
        "or any file: jsonl:PATH?kind=KIND&question=F&answer=F&options=F&id=F&context=F, \
         csv:PATH?… (a header row required), or parquet:PATH?… (a file, or a folder of \
         .parquet shards). KIND is one of {}; question and answer default to those names; a \
         field may be a dotted path into nested records (choices.text); options=F names one \
         field holding a list, options=A,B,C,D one field per option; a choice's gold may be a \
         letter, an option's text, a label of labels=F (answerKey in choices.label) or a \
         0-based index (answer_index=true; taken so when the gold is a whole number and the \
         options a list); context=F a passage the debaters read and a judge does not",
        kinds.join(", ")
    ));
    help
}

/// The format of a generic dataset file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileFormat {
    /// One JSON object per line.
    Jsonl,
    /// Comma-separated, with a header row naming the columns.
    Csv,
    /// Apache Parquet: one file, or a folder of `.parquet` shards read as one dataset.
    Parquet,
}

impl FileFormat {
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::Jsonl => "jsonl",
            FileFormat::Csv => "csv",
            FileFormat::Parquet => "parquet",
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
    /// Every field is a name or a dotted path into nested records (`choices.text`); a CSV
    /// column is named as its header writes it.
    pub question: String,
    /// The gold answer: text, a number, or a boolean (read as yes / no). It is parsed under the
    /// dataset's answer kind as a stored answer is (`Answer::parse`), so a full solution ending
    /// in `#### 18` or `\boxed{…}` works as well as a bare answer. A choice's gold may also be
    /// a label of [`labels`](Self::labels), a 0-based index, or an option's own text.
    pub answer: String,
    pub options: Option<OptionsField>,
    /// A field holding one label per option (ARC's and CommonsenseQA's `choices.label`): the
    /// gold is matched against it, and its position gives the letter.
    pub labels: Option<String>,
    /// Whether a choice's gold is a 0-based index into the options: `None` reads it so when
    /// the field holds a whole number (not text) and the options are one list field.
    pub answer_index: Option<bool>,
    /// A field holding each record's id; without it ids are `<file stem>/<index>`.
    pub id: Option<String>,
    /// A field holding a passage the question is about (hidden evidence: the debaters read
    /// it, deciding agents do not).
    pub context: Option<String>,
}

impl Default for FieldMap {
    /// `question` and `answer`, no options, no id field.
    fn default() -> Self {
        FieldMap {
            question: "question".to_string(),
            answer: "answer".to_string(),
            options: None,
            labels: None,
            answer_index: None,
            id: None,
            context: None,
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

    /// Parses `PATH?kind=KIND&question=F&answer=F&options=F&labels=F&answer_index=B&id=F&context=F`
    /// (the part after `jsonl:`, `csv:` or `parquet:`). `kind` is required; `options` with commas (`options=A,B,C,D`) names one field per
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
                "labels" => fields.labels = Some(value.to_string()),
                "answer_index" => {
                    fields.answer_index = Some(match value {
                        "true" => true,
                        "false" => false,
                        other => {
                            return Err(bad(format!(
                                "answer_index is true or false, not `{other}`"
                            )))
                        }
                    })
                }
                "context" => fields.context = Some(value.to_string()),
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
                        "unknown key `{other}` (keys: kind, question, answer, options, labels, \
                         answer_index, id, context)"
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
        if let Some(labels) = &self.fields.labels {
            write!(f, "&labels={labels}")?;
        }
        if let Some(by_index) = self.fields.answer_index {
            write!(f, "&answer_index={by_index}")?;
        }
        if let Some(id) = &self.fields.id {
            write!(f, "&id={id}")?;
        }
        if let Some(context) = &self.fields.context {
            write!(f, "&context={context}")?;
        }
        Ok(())
    }
}

/// A built-in dataset of the registry, whole or one part. Made only by parsing a name, so the
/// part is always one the dataset has.
#[derive(Clone, Copy)]
pub struct BuiltinSpec {
    entry: &'static DatasetEntry,
    part: Option<&'static str>,
}

impl BuiltinSpec {
    /// Its registry entry (name, summary, loader).
    pub fn entry(&self) -> &'static DatasetEntry {
        self.entry
    }

    /// The part named after `:`; `None` for the whole (or the default part, as `strategyqa`).
    pub fn part(&self) -> Option<&'static str> {
        self.part
    }
}

impl PartialEq for BuiltinSpec {
    fn eq(&self, other: &Self) -> bool {
        (self.entry.name, self.part) == (other.entry.name, other.part)
    }
}

impl Eq for BuiltinSpec {}

impl Hash for BuiltinSpec {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.entry.name, self.part).hash(state);
    }
}

impl fmt::Debug for BuiltinSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BuiltinSpec({self})")
    }
}

impl fmt::Display for BuiltinSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.entry.spelled(self.part))
    }
}

/// A benchmark dataset by name; see the crate documentation for each one's file and answer kind.
///
/// Parsed from its name with [`FromStr`] (`"gsm8k"`, `"mmlu:logical_fallacies"`,
/// `"bbh:navigate"`, `"jsonl:my.jsonl?kind=numeric&question=problem"`); [`fmt::Display`] gives
/// the name back.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DatasetSpec {
    /// A dataset of the registry ([`DATASETS`]).
    Builtin(BuiltinSpec),
    Generic(GenericSpec),
}

impl DatasetSpec {
    /// Every built-in dataset as a whole, and each part that is a file apart from its whole
    /// (`mmlu-pro:logical_fallacies`, `strategyqa:train`, each GSM-Ranges level), in registry
    /// order: for listings and tests.
    pub fn builtins() -> Vec<DatasetSpec> {
        let mut all = Vec::new();
        for entry in DATASETS {
            if entry.parts.whole != Whole::NeedsPart {
                all.push(DatasetSpec::Builtin(BuiltinSpec { entry, part: None }));
            }
            if entry.parts.whole != Whole::AllParts {
                all.extend(entry.parts.names.iter().map(|&part| {
                    DatasetSpec::Builtin(BuiltinSpec {
                        entry,
                        part: Some(part),
                    })
                }));
            }
        }
        all
    }

    /// Whether it is read from the data directory (not shipped with moot, not a file of its own).
    pub fn in_data_dir(&self) -> bool {
        match self {
            DatasetSpec::Builtin(b) => b.entry.in_data_dir,
            DatasetSpec::Generic(_) => false,
        }
    }
}

impl fmt::Display for DatasetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatasetSpec::Builtin(b) => b.fmt(f),
            DatasetSpec::Generic(g) => g.fmt(f),
        }
    }
}

/// The part `part` of `entry` (`None`: its name alone), as parsing admits it.
fn parse_part(
    entry: &'static DatasetEntry,
    part: Option<&str>,
) -> Result<Option<&'static str>, SpecError> {
    let parts = &entry.parts;
    let Some(part) = part else {
        return match parts.whole {
            Whole::NeedsPart => Err(SpecError::MissingVariant {
                dataset: entry.name,
                valid: entry.listed_names(),
            }),
            _ => Ok(None),
        };
    };
    if matches!(parts.whole, Whole::Default(default) if default == part) {
        return Ok(None);
    }
    if let Some(&known) = parts.names.iter().find(|&&n| n == part) {
        return Ok(Some(known));
    }
    Err(match parts.placeholder {
        Some(p) => SpecError::UnknownPart {
            noun: p.noun,
            part: part.to_string(),
            close: close_names(part, parts.names),
            valid: parts.names,
        },
        None => SpecError::UnknownVariant {
            dataset: entry.name,
            variant: part.to_string(),
            valid: entry.listed_names(),
        },
    })
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
        if let Some(rest) = s.strip_prefix("parquet:") {
            return GenericSpec::parse(FileFormat::Parquet, rest).map(DatasetSpec::Generic);
        }
        let (head, part) = match s.split_once(':') {
            Some((h, v)) => (h, Some(v)),
            None => (s, None),
        };
        let Some(entry) = dataset(head) else {
            let forms: Vec<String> = DATASETS.iter().flat_map(DatasetEntry::forms).collect();
            let mut candidates: Vec<&str> = forms.iter().map(String::as_str).collect();
            candidates.extend(GENERIC_SUGGESTIONS);
            return Err(SpecError::UnknownDataset {
                name: s.to_string(),
                close: close_names(s, &candidates),
                forms: name_forms(),
            });
        };
        Ok(DatasetSpec::Builtin(BuiltinSpec {
            entry,
            part: parse_part(entry, part)?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bbh::BBH_TASKS;
    use crate::builtin::MMLU_SUBJECTS;

    fn p(s: &str) -> Result<DatasetSpec, SpecError> {
        s.parse()
    }

    #[test]
    fn builtin_names_round_trip() {
        for spec in DatasetSpec::builtins() {
            assert_eq!(p(&spec.to_string()), Ok(spec.clone()), "{spec}");
        }
        for s in MMLU_SUBJECTS {
            let spec = p(&format!("mmlu:{s}")).unwrap();
            assert_eq!(spec.to_string(), format!("mmlu:{s}"));
            assert_eq!(p(&spec.to_string()), Ok(spec));
        }
        for t in BBH_TASKS {
            let spec = p(&format!("bbh:{t}")).unwrap();
            assert_eq!(spec.to_string(), format!("bbh:{t}"));
            assert_eq!(p(&spec.to_string()), Ok(spec));
        }
        assert_eq!(p("strategyqa:dev"), p("strategyqa"));
        assert_eq!(p("strategyqa:dev").unwrap().to_string(), "strategyqa");
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
            SpecError::UnknownPart {
                noun: "MMLU subject",
                part: "logical_falacies".into(),
                close: vec!["logical_fallacies".into()],
                valid: &MMLU_SUBJECTS,
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
    fn nested_paths_labels_and_indexes_parse_and_round_trip() {
        let spec = p("jsonl:arc.jsonl?kind=choice&question=question&options=choices.text&labels=choices.label&answer=answerKey").unwrap();
        let DatasetSpec::Generic(g) = &spec else {
            panic!("not generic")
        };
        assert_eq!(
            g.fields.options,
            Some(OptionsField::List("choices.text".into()))
        );
        assert_eq!(g.fields.labels.as_deref(), Some("choices.label"));
        assert_eq!(g.fields.answer_index, None);
        assert_eq!(p(&spec.to_string()), Ok(spec.clone()));
        let spec = p("parquet:shards?kind=choice&options=choices&answer_index=false").unwrap();
        let DatasetSpec::Generic(g) = &spec else {
            panic!("not generic")
        };
        assert_eq!(g.format, FileFormat::Parquet);
        assert_eq!(g.fields.answer_index, Some(false));
        assert_eq!(p(&spec.to_string()), Ok(spec.clone()));
        let e = p("jsonl:q.jsonl?kind=choice&answer_index=yes")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("answer_index is true or false, not `yes`"),
            "{e}"
        );
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
    fn the_name_forms_and_builtins_are_the_registrys() {
        assert_eq!(
            name_forms(),
            "gsm8k, math500, math, aime2024, aime2025, mmlu, mmlu:SUBJECT, mmlu-pro, \
             mmlu-pro:logical_fallacies, bbh, bbh:TASK, strategyqa (= strategyqa:dev), \
             strategyqa:train, strategyqa:bigbench, gsm-ranges:original, gsm-ranges:level4, \
             gsm-ranges:level6, humaneval, \
             jsonl:PATH?kind=KIND[&question=F&answer=F&options=F&labels=F&answer_index=B&id=F&context=F], \
             csv:PATH?kind=KIND[&…], parquet:PATH?kind=KIND[&…]"
        );
        let builtins: Vec<String> = DatasetSpec::builtins()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            builtins,
            [
                "gsm8k",
                "math500",
                "math",
                "aime2024",
                "aime2025",
                "mmlu",
                "mmlu-pro",
                "mmlu-pro:logical_fallacies",
                "bbh",
                "strategyqa",
                "strategyqa:train",
                "strategyqa:bigbench",
                "gsm-ranges:original",
                "gsm-ranges:level4",
                "gsm-ranges:level6",
                "humaneval"
            ]
        );
    }

    #[test]
    fn the_help_names_every_dataset() {
        let (short, long) = (dataset_help(), dataset_long_help());
        for d in DATASETS {
            assert!(short.contains(&d.usage()), "{short}");
            assert!(
                long.contains(&d.usage()) && long.contains(d.summary),
                "{long}"
            );
        }
        assert!(short.contains("humaneval") && long.contains("KIND is one of numeric"));
    }
}
