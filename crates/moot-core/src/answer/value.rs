//! The answer values: [`AnswerKind`], [`Answer`] (canonical text and comparable value) and their
//! equivalence. The per-kind readers (`choice`, `yes_no`, `text`, `fallback`) build answers from
//! here, and the extraction in `answer` drives them; this module depends on none of them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::latex;
use super::number::Number;

/// How a response's answer is read and compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnswerKind {
    /// The final number; equal within relative 1e-6.
    Numeric,
    /// An option letter: A–J, or any option's letter when the options are known (or the option's text).
    Choice,
    /// yes / no (true / false).
    YesNo,
    /// A LaTeX expression; equal when normalised strings match or values agree.
    Math,
    /// Free text, compared after case and whitespace folding.
    Text,
    /// A program from a fenced code block; equal when the programs differ only in formatting
    /// (Python by its tokens: comments, blank lines, line breaks inside brackets; other
    /// languages by lines: blank lines, trailing spaces, common indentation, full-line
    /// comments).
    Code,
}

impl AnswerKind {
    pub const ALL: [AnswerKind; 6] = [
        AnswerKind::Numeric,
        AnswerKind::Choice,
        AnswerKind::YesNo,
        AnswerKind::Math,
        AnswerKind::Text,
        AnswerKind::Code,
    ];

    /// A best guess of the kind a question asks for, for users who do not say: options mean
    /// `choice`; "write a function", "write a program" (and the like) or a fenced block mean
    /// `code`; "yes or no" / "true or false" mean `yes-no`; "answer with a number", "how many",
    /// "how much" or arithmetic on numbers mean `numeric`; LaTeX means `math`; anything else `text`.
    pub fn guess(question: &str, options: &[String]) -> AnswerKind {
        let q = question.to_lowercase();
        if !options.is_empty() {
            return AnswerKind::Choice;
        }
        let code_words = [
            "write a function",
            "write a python function",
            "write a program",
            "write a script",
            "implement a function",
            "implement the function",
            "write code",
            "complete the function",
        ];
        if code_words.iter().any(|w| q.contains(w)) || q.contains("```") {
            return AnswerKind::Code;
        }
        if q.contains("yes or no") || q.contains("true or false") || q.contains("yes/no") {
            return AnswerKind::YesNo;
        }
        if q.contains("\\frac") || q.contains("\\sqrt") || q.contains("$") {
            return AnswerKind::Math;
        }
        let numeric_words = [
            "a number",
            "how many",
            "how much",
            "what is the sum",
            "what is the product",
            "calculate",
            "compute",
        ];
        let has_arithmetic = q.chars().any(|c| c.is_ascii_digit())
            && ["+", "-", "*", "×", "/", "÷", " plus ", " minus ", " times "]
                .iter()
                .any(|op| q.contains(op));
        if numeric_words.iter().any(|w| q.contains(w)) || has_arithmetic {
            return AnswerKind::Numeric;
        }
        AnswerKind::Text
    }

    pub fn name(self) -> &'static str {
        match self {
            AnswerKind::Numeric => "numeric",
            AnswerKind::Choice => "choice",
            AnswerKind::YesNo => "yes-no",
            AnswerKind::Math => "math",
            AnswerKind::Text => "text",
            AnswerKind::Code => "code",
        }
    }
}

impl fmt::Display for AnswerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown answer kind {0:?} (expected one of numeric, choice, yes-no, math, text, code)")]
pub struct UnknownAnswerKind(pub String);

impl FromStr for AnswerKind {
    type Err = UnknownAnswerKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AnswerKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownAnswerKind(s.to_string()))
    }
}

/// The comparable value behind an answer.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Number(Number),
    /// Zero-based option index (0 = A).
    Choice(u8),
    YesNo(bool),
    /// A normalised LaTeX string.
    Math(String),
    Text(String),
    /// The program's comparison form (see `code`).
    Code(String),
}

/// An extracted, normalised answer of one [`AnswerKind`].
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    // Visible to the answer module's readers and tests, which build and inspect answers.
    pub(super) kind: AnswerKind,
    pub(super) canonical: String,
    pub(super) value: Value,
}

impl Answer {
    /// A `text` answer compared verbatim, for callers whose answers are already canonical
    /// strings (a trajectory file without an answer kind).
    pub fn verbatim(s: &str) -> Answer {
        Answer {
            kind: AnswerKind::Text,
            canonical: s.to_string(),
            value: Value::Text(s.to_string()),
        }
    }

    pub fn kind(&self) -> AnswerKind {
        self.kind
    }

    /// The same answer shown as `f` makes its canonical text (what a reader is shown changes;
    /// its value, and so what it equals, does not).
    pub fn shown_as(&self, f: impl Fn(&str) -> String) -> Answer {
        Answer {
            canonical: f(&self.canonical),
            ..self.clone()
        }
    }

    /// The canonical text: integers without separators, other numbers as shortest decimals,
    /// one uppercase letter, `yes`/`no`, normalised LaTeX, folded text.
    pub fn canonical(&self) -> &str {
        &self.canonical
    }

    /// The numeric value, when the answer has one.
    pub fn numeric_value(&self) -> Option<f64> {
        match &self.value {
            Value::Number(n) => Some(n.value()),
            Value::Math(m) => latex::evaluate(m),
            _ => None,
        }
    }

    /// Whether two answers are the same answer under their kind. Answers of different kinds
    /// are never equivalent.
    pub fn equivalent(&self, other: &Answer) -> bool {
        match (&self.value, &other.value) {
            (Value::Number(a), Value::Number(b)) => a.approx_eq(b),
            (Value::Choice(a), Value::Choice(b)) => a == b,
            (Value::YesNo(a), Value::YesNo(b)) => a == b,
            (Value::Math(a), Value::Math(b)) => latex::equivalent(a, b),
            (Value::Text(a), Value::Text(b)) => a == b,
            (Value::Code(a), Value::Code(b)) => a == b,
            _ => false,
        }
    }

    /// A key that equal answers share and unequal ones do not, for the kinds whose
    /// equivalence is equality of a form (programs, text, options, yes/no): what lets many
    /// answers be grouped in one pass. `None` for numbers and LaTeX, compared approximately.
    pub fn equality_key(&self) -> Option<String> {
        match &self.value {
            Value::Code(k) => Some(format!("code:{k}")),
            Value::Text(t) => Some(format!("text:{t}")),
            Value::Choice(c) => Some(format!("choice:{c}")),
            Value::YesNo(b) => Some(format!("yes-no:{b}")),
            Value::Number(_) | Value::Math(_) => None,
        }
    }

    pub(super) fn number(n: Number) -> Answer {
        Answer {
            kind: AnswerKind::Numeric,
            canonical: n.canonical().to_string(),
            value: Value::Number(n),
        }
    }

    pub(super) fn choice(index: u8) -> Answer {
        Answer {
            kind: AnswerKind::Choice,
            canonical: char::from(b'A' + index).to_string(),
            value: Value::Choice(index),
        }
    }

    pub(super) fn yes_no(yes: bool) -> Answer {
        Answer {
            kind: AnswerKind::YesNo,
            canonical: if yes { "yes" } else { "no" }.to_string(),
            value: Value::YesNo(yes),
        }
    }

    pub(super) fn math(normalized: String) -> Answer {
        Answer {
            kind: AnswerKind::Math,
            canonical: latex::canonical(&normalized),
            value: Value::Math(normalized),
        }
    }

    /// A program (`tidy`: as it runs) compared by `key`.
    pub(super) fn code(tidy: String, key: String) -> Answer {
        Answer {
            kind: AnswerKind::Code,
            canonical: tidy,
            value: Value::Code(key),
        }
    }

    pub(super) fn text(folded: String) -> Answer {
        Answer {
            kind: AnswerKind::Text,
            canonical: folded.clone(),
            value: Value::Text(folded),
        }
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical)
    }
}

/// True when `extracted` is an answer equivalent to `gold`; `None` is never correct.
pub fn is_correct(extracted: Option<&Answer>, gold: &Answer) -> bool {
    extracted.is_some_and(|a| a.equivalent(gold))
}
