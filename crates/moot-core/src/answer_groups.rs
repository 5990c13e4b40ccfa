//! Answers grouped as the decision rules count them: equivalent answers are one answer, however
//! their texts differ (two formattings of one program, `0.5` and `\frac{1}{2}`). What shows a
//! debate's answers (program labels `P1`, `P2`) and what checks its programs in the sandbox
//! group them here, so that one answer is one label and one sandbox run.

use crate::answer::{Answer, AnswerKind, ExtractContext};

/// One answer of a debate and every text it was given as.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerGroup {
    /// The text that shows the group: the one given most often, ties going to the shorter
    /// text and then to the smaller bytes (as the decision rules choose it), so it never
    /// depends on agent order alone.
    pub shown: String,
    /// Every distinct text of the group, in the order first given.
    pub texts: Vec<String>,
}

impl AnswerGroup {
    /// Whether `text` is one of the group's texts.
    pub fn holds(&self, text: &str) -> bool {
        self.texts.iter().any(|t| t == text)
    }
}

/// The groups of `answers` (each giving counted), in the order each group was first given.
pub fn group_answers<'a>(answers: impl IntoIterator<Item = &'a Answer>) -> Vec<AnswerGroup> {
    group_by(
        answers.into_iter().map(|a| (a.canonical().to_string(), a)),
        |a| a.equality_key(),
        |a, b| a.equivalent(b),
    )
}

/// [`group_answers`] of stored answer texts of `kind`, each read back with [`Answer::parse`]; a
/// text that does not read as an answer is only the same as itself.
pub fn group_texts<'a>(
    kind: AnswerKind,
    texts: impl IntoIterator<Item = &'a str>,
) -> Vec<AnswerGroup> {
    let ctx = ExtractContext::default();
    group_by(
        texts
            .into_iter()
            .map(|t| (t.to_string(), Answer::parse(kind, t, &ctx))),
        |a| a.as_ref().and_then(Answer::equality_key),
        |a, b| matches!((a, b), (Some(a), Some(b)) if a.equivalent(b)),
    )
}

/// Groups `(text, value)` givings: a text joins the group already holding it, else the group
/// of its value's key (`key`: values equal exactly when their keys are), else the first
/// unkeyed group whose first value is `same` as its value, else a new group. Keyed values are
/// grouped in one pass, however many there are (a stored run may hold tens of thousands of
/// programs); only unkeyed ones (numbers, LaTeX) are compared pairwise.
fn group_by<T>(
    givings: impl IntoIterator<Item = (String, T)>,
    key: impl Fn(&T) -> Option<String>,
    same: impl Fn(&T, &T) -> bool,
) -> Vec<AnswerGroup> {
    use std::collections::HashMap;
    // Per group: its first value, and each text with how often it was given.
    let mut groups: Vec<(T, Vec<(String, usize)>)> = Vec::new();
    let mut by_text: HashMap<String, usize> = HashMap::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut unkeyed: Vec<usize> = Vec::new();
    for (text, value) in givings {
        let value_key = key(&value);
        let at = by_text.get(&text).copied().or_else(|| match &value_key {
            Some(k) => by_key.get(k).copied(),
            None => unkeyed
                .iter()
                .copied()
                .find(|&g| same(&groups[g].0, &value)),
        });
        match at {
            Some(g) => {
                let texts = &mut groups[g].1;
                match texts.iter_mut().find(|(t, _)| *t == text) {
                    Some((_, n)) => *n += 1,
                    None => {
                        by_text.insert(text.clone(), g);
                        texts.push((text, 1));
                    }
                }
            }
            None => {
                let g = groups.len();
                by_text.insert(text.clone(), g);
                match value_key {
                    Some(k) => {
                        by_key.insert(k, g);
                    }
                    None => unkeyed.push(g),
                }
                groups.push((value, vec![(text, 1)]));
            }
        }
    }
    groups
        .into_iter()
        .map(|(_, texts)| {
            let shown = texts
                .iter()
                .max_by(|(a, m), (b, n)| {
                    m.cmp(n)
                        .then_with(|| b.len().cmp(&a.len()))
                        .then_with(|| b.cmp(a))
                })
                .map_or(String::new(), |(t, _)| t.clone());
            AnswerGroup {
                shown,
                texts: texts.into_iter().map(|(t, _)| t).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(program: &str) -> Answer {
        Answer::parse(AnswerKind::Code, program, &ExtractContext::default()).unwrap()
    }

    #[test]
    fn two_formattings_of_one_program_are_one_group_shown_as_the_text_given_most() {
        let answers = [
            code("def f(a, b):\n    return a+b"),
            code("def f(a, b):\n    return a - b"),
            code("def f(a, b):\n    return a + b"),
            code("def f(a, b):\n    return a + b"),
        ];
        let groups = group_answers(&answers);
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert_eq!(groups[0].texts.len(), 2);
        assert_eq!(groups[0].shown, "def f(a, b):\n    return a + b");
        assert!(groups[0].holds("def f(a, b):\n    return a+b"));
        assert_eq!(groups[1].shown, "def f(a, b):\n    return a - b");
    }

    #[test]
    fn a_tie_goes_to_the_shorter_text_whatever_the_order() {
        let a = code("def f(a, b):\n    return a+b");
        let b = code("def f(a, b):\n    return a + b");
        for answers in [[a.clone(), b.clone()], [b, a]] {
            assert_eq!(
                group_answers(&answers)[0].shown,
                "def f(a, b):\n    return a+b"
            );
        }
    }

    #[test]
    fn stored_texts_are_grouped_by_value_and_unreadable_ones_by_text() {
        let groups = group_texts(
            AnswerKind::Code,
            [
                "def f(a, b):\n    return a+b",
                "def f(a, b):\n    return a + b",
                "",
                "",
            ],
        );
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert_eq!(groups[1].texts, vec![String::new()]);
    }
}
