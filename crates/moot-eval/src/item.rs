//! The benchmark item and dataset types every loader produces and the runner, summaries and
//! reports read. Below every other module of the crate (it depends on `moot-core`, and on
//! `moot-store` for the record of items left out).

use moot_core::answer::ExtractContext;
use moot_core::{Answer, AnswerKind};
use serde::{Deserialize, Serialize};

/// One benchmark question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Stable id: `<dataset>/<index in its file>`, or a generic file's mapped id.
    pub id: String,
    pub question: String,
    /// Option texts in order A, B, …; empty when the question has none of its own (or, for BBH
    /// yes-no and text tasks, lists them inside its text). Stored (in a planned benchmark's
    /// jobs) as `options`, as every version stored them.
    #[serde(rename = "options")]
    pub choices: Vec<String>,
    /// The gold answer text, reduced from the raw field (see the crate documentation).
    pub gold: String,
    pub kind: AnswerKind,
    /// Tests a code answer must pass (code datasets: HumanEval); `None` elsewhere.
    pub tests: Option<moot_core::validation::TestSuite>,
    /// A passage the question is about, which the debaters read and deciding agents do not
    /// (hidden evidence: a generic file's `context=` field). Stored only when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passage: Option<String>,
}

impl Item {
    /// The context answers to this item are extracted with (its options).
    pub fn extract_context(&self) -> ExtractContext<'_> {
        ExtractContext {
            choices: &self.choices,
        }
    }

    /// The gold answer parsed under the item's kind (choice letters past J read through the
    /// item's options); `None` only for an item not made by [`crate::load`], which rejects
    /// unparsable golds.
    pub fn gold_answer(&self) -> Option<Answer> {
        Answer::parse(self.kind, &self.gold, &self.extract_context())
    }
}

/// A loaded dataset: its name (the spec's string form) and its items in file order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    pub name: String,
    pub items: Vec<Item>,
    /// The items left out because they cannot be scored (loading with `skip_invalid`); `None`
    /// when none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<moot_store::LeftOut>,
    /// How the loader read what the mapping left open, for the user to check: `gold read as a
    /// 0-based index into the options of field `choices` (the field holds whole numbers)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Dataset {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: AnswerKind, gold: &str, options: &[&str]) -> Item {
        Item {
            id: "t/0".into(),
            question: "q".into(),
            choices: options.iter().map(|s| s.to_string()).collect(),
            gold: gold.into(),
            kind,
            tests: None,
            passage: None,
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
}
