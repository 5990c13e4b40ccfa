//! Helpers for the rules' unit tests: trajectories written as rows of answers, and a score
//! lookup.

use crate::answer::{Answer, AnswerKind, ExtractContext};
use crate::trajectory::{Cell, Trajectory};

/// A trajectory from rows of text answers: `"-"` is a missing response, `"?"` a response
/// without an answer.
pub fn traj(rows: &[&[&str]]) -> Trajectory {
    traj_kind(AnswerKind::Text, rows)
}

pub fn traj_kind(kind: AnswerKind, rows: &[&[&str]]) -> Trajectory {
    Trajectory::new(
        rows.iter()
            .map(|r| {
                r.iter()
                    .map(|&s| match s {
                        "-" => Cell::Missing,
                        "?" => Cell::Answered(None),
                        s => Cell::Answered(Answer::parse(kind, s, &ExtractContext::default())),
                    })
                    .collect()
            })
            .collect(),
    )
    .expect("rectangular test trajectory")
}

pub fn score_of(d: &crate::decision::Decision, key: Option<&str>) -> Option<f64> {
    d.scores
        .iter()
        .find(|(k, _)| k.as_ref().map(|a| a.canonical()) == key)
        .map(|&(_, s)| s)
}
