//! MAD-M² memory masking, as a plan the round table applies: the masking options ([`Masking`],
//! [`Judging`], [`ObjectiveKeep`]), the judges' labels, which memories a reader keeps, and the
//! [`MaskNote`] each kept or masked memory leaves in the call notes. It reads the transcript only,
//! so `mad_m2`, the round table and the call notes can all use it; the judgement calls
//! themselves are planned by the round table. How masking works is told in `mad_m2`.

use serde::{Deserialize, Serialize};

use crate::debate::{CallKey, Outcome, Slot, Transcript};

/// MAD-M² masking strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Masking {
    /// Judged YES/NO/NOT SURE by a model; NOT SURE and unreadable labels are masked.
    SubjectiveStrict,
    /// As strict, but NOT SURE and unreadable labels are kept.
    SubjectiveLoose,
    /// By perplexity of the sampled tokens.
    Objective,
}

/// Who judges memories under subjective masking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Judging {
    /// One judgement per memory, shared by every agent (the paper: same model for all agents).
    #[default]
    Shared,
    /// Every agent judges every memory it could read (heterogeneous teams): N judgements each.
    PerAgent,
}

/// What objective masking keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectiveKeep {
    /// Only the lowest-perplexity memory (the paper).
    #[default]
    Lowest,
    /// Every memory whose perplexity is at or below the median of the candidates.
    BelowMedian,
}

/// One candidate memory of a MAD-M² debate call and whether it was kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaskNote {
    /// The memory's author (the calling agent itself for its own memory).
    pub author: usize,
    pub kept: bool,
    pub why: String,
}

/// A judge's verdict on one memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JudgeLabel {
    Yes,
    No,
    NotSure,
}

impl JudgeLabel {
    /// The label as judges write it: `YES`, `NO`, `NOT SURE`.
    pub fn as_str(self) -> &'static str {
        match self {
            JudgeLabel::Yes => "YES",
            JudgeLabel::No => "NO",
            JudgeLabel::NotSure => "NOT SURE",
        }
    }

    /// What a judgement's text says, for display: its label, or that none could be read.
    pub fn describe(text: Option<&str>) -> &'static str {
        text.and_then(parse_label)
            .map_or("no readable label", JudgeLabel::as_str)
    }
}

/// The last `<label>…</label>` of a judgement, else its last line's YES / NO / NOT SURE.
pub fn parse_label(text: &str) -> Option<JudgeLabel> {
    fn word(s: &str) -> Option<JudgeLabel> {
        let s = s
            .trim()
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_ascii_uppercase();
        match s.split_whitespace().collect::<Vec<_>>().join(" ").as_str() {
            "YES" => Some(JudgeLabel::Yes),
            "NO" => Some(JudgeLabel::No),
            "NOT SURE" | "UNSURE" => Some(JudgeLabel::NotSure),
            _ => None,
        }
    }
    let lower = text.to_ascii_lowercase();
    if let Some(start) = lower.rfind("<label>") {
        let rest = &text[start + "<label>".len()..];
        let end = rest
            .to_ascii_lowercase()
            .find("</label>")
            .unwrap_or(rest.len());
        return word(&rest[..end]);
    }
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let last = last.rsplit(':').next().unwrap_or(last);
    word(last)
}

/// MAD-M²'s masking settings, resolved from the options by `mad_m2`'s constructor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaskPlan {
    pub masking: Masking,
    pub judging: Judging,
    pub keep: ObjectiveKeep,
}

impl MaskPlan {
    pub(crate) fn needs_logprobs(&self) -> Option<&'static str> {
        (self.masking == Masking::Objective)
            .then_some("mad-m2 objective masking ranks memories by perplexity from token logprobs")
    }

    fn subjective(&self) -> bool {
        self.masking != Masking::Objective
    }

    /// Who judges `author`'s memory for `reader`.
    fn judge(&self, agents: usize, author: usize, reader: usize) -> usize {
        match self.judging {
            Judging::Shared => (author + 1) % agents.max(1),
            Judging::PerAgent => reader,
        }
    }

    /// The judgements the next debate round still needs, given each open reader's candidate
    /// memories as (author, round of the response): their keys, sorted, each once. Subjective
    /// masking only; the round table turns them into calls.
    pub(crate) fn pending_judgements(
        &self,
        t: &Transcript,
        candidates: impl IntoIterator<Item = (usize, Vec<(usize, usize)>)>,
    ) -> Vec<CallKey> {
        if !self.subjective() {
            return vec![];
        }
        let n = t.agents();
        let mut keys: Vec<CallKey> = Vec::new();
        for (reader, memories) in candidates {
            for (author, from_round) in memories {
                let key = CallKey {
                    round: from_round,
                    agent: self.judge(n, author, reader),
                    slot: Slot::Judge(author),
                };
                if t.get_call(&key).is_none() && !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
        keys.sort();
        keys
    }

    /// Which of `reader`'s candidate memories (by author, in round `round - 1` or earlier when
    /// delayed) are kept, and a note for each.
    pub(crate) fn apply(
        &self,
        t: &Transcript,
        round: usize,
        reader: usize,
        candidates: &[(usize, usize)],
    ) -> (Vec<usize>, Vec<MaskNote>) {
        let n = t.agents();
        let mut notes = Vec::new();
        match self.masking {
            Masking::SubjectiveStrict | Masking::SubjectiveLoose => {
                let loose = self.masking == Masking::SubjectiveLoose;
                for &(author, from_round) in candidates {
                    let judge = self.judge(n, author, reader);
                    let key = CallKey {
                        round: from_round,
                        agent: judge,
                        slot: Slot::Judge(author),
                    };
                    let label = t
                        .get_call(&key)
                        .and_then(Outcome::text)
                        .and_then(parse_label);
                    let (kept, why) = match label {
                        Some(l @ JudgeLabel::Yes) => (true, format!("judged {}", l.as_str())),
                        Some(l @ JudgeLabel::No) => (false, format!("judged {}", l.as_str())),
                        Some(l @ JudgeLabel::NotSure) => (loose, format!("judged {}", l.as_str())),
                        None => (loose, "no readable judgement".to_string()),
                    };
                    notes.push(MaskNote {
                        author,
                        kept,
                        why: format!("{why} by agent {}", judge + 1),
                    });
                }
                let _ = round;
            }
            Masking::Objective => {
                let ppl: Vec<Option<f64>> = candidates
                    .iter()
                    .map(|&(author, from_round)| {
                        t.effective(from_round, author)
                            .and_then(Outcome::logprobs)
                            .map(|l| l.perplexity)
                            .filter(|p| p.is_finite())
                    })
                    .collect();
                let mut scored: Vec<f64> = ppl.iter().flatten().copied().collect();
                scored.sort_by(f64::total_cmp);
                let cut = match self.keep {
                    ObjectiveKeep::Lowest => scored.first().copied(),
                    ObjectiveKeep::BelowMedian => median(&scored),
                };
                // Under `lowest`, ties keep only the first candidate in agent order.
                let lowest_author = candidates
                    .iter()
                    .zip(&ppl)
                    .filter(|(_, p)| p.is_some() && *p == &cut)
                    .map(|(&(a, _), _)| a)
                    .min();
                for (&(author, _), p) in candidates.iter().zip(&ppl) {
                    let (kept, why) = match (p, cut) {
                        (None, _) => (false, "no logprobs: perplexity unknown".to_string()),
                        (Some(p), Some(cut)) => {
                            let kept = match self.keep {
                                ObjectiveKeep::Lowest => Some(author) == lowest_author,
                                ObjectiveKeep::BelowMedian => *p <= cut,
                            };
                            (kept, format!("perplexity {p:.3}"))
                        }
                        (Some(p), None) => (false, format!("perplexity {p:.3}")),
                    };
                    notes.push(MaskNote { author, kept, why });
                }
            }
        }
        notes.sort_by_key(|m| m.author);
        let kept = notes.iter().filter(|m| m.kept).map(|m| m.author).collect();
        (kept, notes)
    }
}

fn median(sorted: &[f64]) -> Option<f64> {
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(
            parse_label("fine.\n<label>YES</label>"),
            Some(JudgeLabel::Yes)
        );
        assert_eq!(parse_label("<label>no</label>"), Some(JudgeLabel::No));
        assert_eq!(
            parse_label("<label>YES</label> wait <label>NOT SURE</label>"),
            Some(JudgeLabel::NotSure)
        );
        assert_eq!(parse_label("Verdict: NO"), Some(JudgeLabel::No));
        assert_eq!(parse_label("It seems right, I think"), None);
        assert_eq!(parse_label("<label>MAYBE</label>"), None);
        assert_eq!(
            JudgeLabel::describe(Some("<label>not sure</label>")),
            "NOT SURE"
        );
        assert_eq!(JudgeLabel::describe(Some("hmm")), "no readable label");
        assert_eq!(JudgeLabel::describe(None), "no readable label");
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&[1.0, 2.0, 4.0]), Some(2.0));
        assert_eq!(median(&[1.0, 3.0]), Some(2.0));
        assert_eq!(median(&[]), None);
    }
}
