//! Reply contracts: how an agent is asked to lay out its reply, and how the reply is read.
//!
//! moot's own contract asks for a final line (`Final answer: …`) and reads the answer from
//! anywhere in the response. freemad's agents follow another one, which moot speaks for agents
//! configured with it:
//!
//! - a first answer is `SOLUTION:` (the answer) and `REASONING:`;
//! - a critique starts with `DECISION: KEEP` or `DECISION: REVISE`; a revision gives
//!   `REVISED_SOLUTION:`; `REASONING:` may follow. KEEP means the agent's previous solution,
//!   REVISE the revised one; anything else is unparsed (no answer), with the raw text kept.
//!
//! Sections are read as freemad reads them — a header is the first text on its line, any case,
//! and runs to the next header; a header given twice counts the last time — except that moot
//! keeps a section's lines as they were (freemad adds a blank line after the first one).

use serde::{Deserialize, Serialize};

/// Which contract an agent follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplyContract {
    /// moot's: a final answer line, read from anywhere in the response.
    #[default]
    Moot,
    /// freemad's: `SOLUTION:` / `DECISION: KEEP|REVISE` + `REVISED_SOLUTION:` sections.
    Freemad,
}

impl ReplyContract {
    pub fn is_moot(&self) -> bool {
        *self == ReplyContract::Moot
    }
}

/// What a critique under freemad's contract decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    Keep,
    Revise,
    /// Neither a readable KEEP nor a REVISE with a solution.
    Unparsed,
}

/// What the transcript records of a reply under freemad's contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractNote {
    /// For critiques; `None` for a first answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// The agent's answer is not the one it held before (a REVISE to the same solution is no
    /// change here, where freemad counts it as one).
    pub changed: bool,
}

/// The sections of a reply, by header (upper-cased); the text before the first header is left
/// out.
pub fn sections(text: &str) -> Vec<(String, String)> {
    const HEADERS: [&str; 4] = ["SOLUTION", "REASONING", "DECISION", "REVISED_SOLUTION"];
    let mut found: Vec<(String, Vec<&str>)> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let header = trimmed.split_once(':').and_then(|(name, rest)| {
            let name = name.trim_end().to_ascii_uppercase();
            HEADERS.contains(&name.as_str()).then_some((name, rest))
        });
        match (header, found.last_mut()) {
            (Some((name, rest)), _) => found.push((name, vec![rest])),
            (None, Some((_, body))) => body.push(line),
            (None, None) => {}
        }
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, body) in found {
        let text = body.join("\n").trim().to_string();
        out.retain(|(n, _)| *n != name);
        out.push((name, text));
    }
    out
}

fn section<'a>(sections: &'a [(String, String)], name: &str) -> Option<&'a str> {
    sections
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.as_str())
        .filter(|t| !t.is_empty())
}

/// A first answer's solution: the `SOLUTION:` section, when it has text.
pub fn solution(text: &str) -> Option<String> {
    section(&sections(text), "SOLUTION").map(str::to_string)
}

/// How a critique reply reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Critique {
    Keep,
    Revise(String),
    Unparsed,
}

/// A critique reply: KEEP, REVISE with its revised solution, or unparsed. The decision is the
/// first line of the `DECISION:` section, in any case; REVISE needs a `REVISED_SOLUTION:`.
pub fn critique(text: &str) -> Critique {
    let found = sections(text);
    let decision = section(&found, "DECISION")
        .and_then(|d| d.lines().next())
        .map(|first| first.trim().to_ascii_uppercase());
    match decision.as_deref() {
        Some("KEEP") => Critique::Keep,
        Some("REVISE") => match section(&found, "REVISED_SOLUTION") {
            Some(solution) => Critique::Revise(solution.to_string()),
            None => Critique::Unparsed,
        },
        _ => Critique::Unparsed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_read_as_freemad_reads_them_but_kept_whole() {
        let text = "preamble\nsolution :  l1\nl2\n\n  REASONING: why\nSOLUTION: later\n";
        let s = sections(text);
        assert_eq!(
            section(&s, "SOLUTION"),
            Some("later"),
            "the last one counts"
        );
        assert_eq!(section(&s, "REASONING"), Some("why"));
        assert_eq!(
            solution("SOLUTION:\nl1\nl2\nREASONING: r").as_deref(),
            Some("l1\nl2")
        );
        assert_eq!(
            solution("**SOLUTION:** 42"),
            None,
            "a header starts its line"
        );
        assert_eq!(
            solution("SOLUTION:\n\nREASONING: x"),
            None,
            "an empty solution is none"
        );
        assert_eq!(solution("just 42"), None);
    }

    #[test]
    fn critiques_keep_revise_or_stay_unparsed() {
        assert_eq!(critique("DECISION: KEEP\nREASONING: fine"), Critique::Keep);
        assert_eq!(critique("decision:\nkeep"), Critique::Keep);
        assert_eq!(
            critique("DECISION: REVISE\nREVISED_SOLUTION:\n43\nREASONING: Peer #1"),
            Critique::Revise("43".into())
        );
        assert_eq!(
            critique("DECISION: REVISE\nREASONING: forgot"),
            Critique::Unparsed
        );
        assert_eq!(critique("DECISION: KEEP."), Critique::Unparsed);
        assert_eq!(critique("**KEEP**"), Critique::Unparsed);
        assert_eq!(critique(""), Critique::Unparsed);
    }

    #[test]
    fn the_note_round_trips() {
        for note in [
            ContractNote {
                decision: None,
                changed: false,
            },
            ContractNote {
                decision: Some(Decision::Revise),
                changed: true,
            },
            ContractNote {
                decision: Some(Decision::Unparsed),
                changed: false,
            },
        ] {
            let json = serde_json::to_value(note).unwrap();
            assert_eq!(serde_json::from_value::<ContractNote>(json).unwrap(), note);
        }
        assert_eq!(
            serde_json::to_value(ReplyContract::Freemad).unwrap(),
            serde_json::json!("freemad")
        );
    }
}
