//! `mad-m2`: MAD-M² memory masking (Fig. 2, §3.1).
//!
//! Every debate round reads the previous round's responses ("memories") as one prompt, the
//! agent's own response among them, after the erroneous-looking ones are masked:
//! - `subjective-strict` / `subjective-loose`: a model judges each memory YES / NO / NOT SURE
//!   (the paper's self-evaluation prompt, in our words, ending in `<label>…</label>`). YES keeps,
//!   NO masks; NOT SURE and unreadable or missing judgements are masked under strict and kept
//!   under loose. By default one judgement per memory is shared by every agent, as the paper
//!   does for agents of one model; the judge of agent j's memory is agent j + 1 (mod N), so no
//!   agent judges its own memory and the judging load is spread. `judging = "per-agent"` makes
//!   every agent judge every memory it could read (for heterogeneous teams).
//! - `objective`: perplexity of the sampled tokens, exp(−mean logprob); only the candidate with
//!   the lowest perplexity is kept (ties: lower agent number), or with `keep = "below-median"`
//!   every candidate at or below the median. A memory without logprobs cannot be scored and is
//!   masked. Needs logprobs: a backend without them is refused before the debate starts.
//!
//! The candidates are the agent's own previous response and the peers' responses its topology
//! and the faults let through. If every memory is masked the agent answers as in round 0. Judgement
//! calls are recorded (slot `judge:<author>`, in the round of the memory) and counted in tokens;
//! a judgement of another agent's memory counts as one communication.

use super::options::{Judging, Masking, ObjectiveKeep};
use super::round_table::{Context, RoundTable};
use super::{
    system_message, CallNotes, MaskNote, PlannedCall, PromptStyle, Protocol, ProtocolError,
    ProtocolOptions,
};
use crate::chat::{CallMode, ChatMessage};
use crate::debate::{CallKey, DebateSpec, Outcome, Slot, Transcript};
use crate::prompts;
use crate::topology::Topology;

pub(crate) const OPTIONS: &[&str] = &[
    "topology", "k", "hub", "groups", "ordering", "gold", "masking", "judging", "keep",
];

pub(crate) fn build(o: &ProtocolOptions) -> Result<Box<dyn Protocol>, ProtocolError> {
    let mut rt = RoundTable::new("mad-m2", PromptStyle::Conformity, "majority-last");
    rt.context = Context::Memories;
    rt.masking = Some(MaskPlan {
        masking: o.masking.unwrap_or(Masking::SubjectiveStrict),
        judging: o.judging.unwrap_or_default(),
        keep: o.keep.unwrap_or_default(),
    });
    if o.keep.is_some() && o.masking != Some(Masking::Objective) {
        return Err(ProtocolError::Invalid(
            "option `keep` applies to masking = \"objective\" only".into(),
        ));
    }
    if o.judging.is_some() && o.masking == Some(Masking::Objective) {
        return Err(ProtocolError::Invalid(
            "option `judging` applies to subjective masking only".into(),
        ));
    }
    rt.configured(o, Topology::AllToAll)
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

    /// The judgement calls the next debate round still needs, for the readers `open`.
    pub(crate) fn pending_judgements(
        &self,
        rt: &RoundTable,
        spec: &DebateSpec,
        t: &Transcript,
        round: usize,
        open: &[usize],
    ) -> Vec<PlannedCall> {
        if !self.subjective() {
            return vec![];
        }
        let n = t.agents();
        let mut keys: Vec<CallKey> = Vec::new();
        for &reader in open {
            for (author, from_round) in rt.memory_candidates(spec, t, round, reader) {
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
        keys.into_iter()
            .filter_map(|key| {
                let Slot::Judge(author) = key.slot else {
                    return None;
                };
                let text = t.effective(key.round, author).and_then(Outcome::text)?;
                let prompt = prompts::render(
                    prompts::JUDGE,
                    &[
                        ("question", &spec.question),
                        ("options", &prompts::options_block(&spec.options)),
                        ("solution", text.trim()),
                    ],
                );
                Some(PlannedCall {
                    round: key.round,
                    agent: key.agent,
                    slot: key.slot,
                    mode: CallMode::Critique,
                    messages: vec![
                        system_message(spec, &rt.faults, key.agent),
                        ChatMessage::user(prompt),
                    ],
                    peers: vec![author],
                    template: "judge",
                    template_hash: prompts::template_hash(prompts::JUDGE),
                    notes: CallNotes {
                        ncomm: usize::from(author != key.agent),
                        ..CallNotes::default()
                    },
                })
            })
            .collect()
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
