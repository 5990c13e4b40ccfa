//! Counterfactual forks (`moot fork`): what a fork of a stored debate changes at its round
//! ([`Intervention`]), and the form in which each protocol declares which interventions it allows
//! ([`Forks`], a field of every `protocol::ProtocolEntry`; the check is
//! `protocol::check_fork`).
//!
//! A fork is a new debate that starts as its parent did: the parent's calls before the fork's
//! round are copied, and any later call whose request is the parent's is reused from the parent;
//! at the round, the intervention changes one thing:
//! - [`Intervention::Null`]: nothing. The round's calls are asked again as fresh samples (the
//!   engine salts their sampling and request keys), so the fork is the same debate resampled
//!   from that round on: the control every other intervention is compared against.
//! - [`Intervention::Say`]: one agent's response of the round is the given text. Its answer is
//!   read from it as from any reply of that agent; it carries no token log-probabilities, and a
//!   self-reported confidence only if the text states one (`Confidence: NN%`), read as any
//!   reply's would be.
//! - [`Intervention::Model`]: one agent answers with another model from the round on.

use serde::{Deserialize, Serialize};

use crate::answer::{Answer, AnswerKind, ExtractContext};

/// The longest text `--say` may put in an agent's place: far more than any response a debate
/// reads, and short enough that a mistaken file given as the text is refused before anything
/// runs.
pub const MAX_SAY_BYTES: usize = 256 * 1024;

/// What a fork changes at its round. Agents are numbered from 0 here (people see them from 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Intervention {
    /// Nothing: the round is asked again with fresh samples (the control).
    Null,
    /// Agent `agent`'s response of the round is `text`.
    Say { agent: usize, text: String },
    /// Agent `agent` answers with `model` (as the user named it) from the round on; `backend`
    /// is the backend that name resolved to.
    Model {
        agent: usize,
        model: String,
        backend: String,
    },
}

impl Intervention {
    pub fn kind(&self) -> InterventionKind {
        match self {
            Intervention::Null => InterventionKind::Null,
            Intervention::Say { .. } => InterventionKind::Say,
            Intervention::Model { .. } => InterventionKind::Model,
        }
    }

    /// The agent the intervention changes (none for a null fork).
    pub fn agent(&self) -> Option<usize> {
        match self {
            Intervention::Null => None,
            Intervention::Say { agent, .. } | Intervention::Model { agent, .. } => Some(*agent),
        }
    }

    /// One line for people: `null (round resampled)`, `agent 2 says "…"`, `agent 2 on gpt-4o`.
    /// The said text is cut to `width` characters (its first line); callers escape it for
    /// wherever they place it.
    pub fn describe(&self, width: usize) -> String {
        match self {
            Intervention::Null => "null (the round resampled)".into(),
            Intervention::Say { agent, text } => {
                let first = text.lines().next().unwrap_or("");
                let mut shown: String = first.chars().take(width).collect();
                if shown.len() < text.len() {
                    shown.push('…');
                }
                format!("agent {} says {shown:?}", agent + 1)
            }
            Intervention::Model { agent, model, .. } => {
                format!("agent {} on {model}", agent + 1)
            }
        }
    }
}

/// An intervention without its details: what a protocol's [`Forks`] declaration speaks of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterventionKind {
    Null,
    Say,
    Model,
}

impl InterventionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            InterventionKind::Null => "null",
            InterventionKind::Say => "say",
            InterventionKind::Model => "model",
        }
    }
}

/// Which interventions a protocol allows, at which rounds: one value in its registry entry.
/// Each refusal carries its reason, said to the user as it is. Two rules hold for every
/// protocol besides its declaration (see `protocol::check_fork`): the round must be one of the
/// debate's (0 to its last debate round), and `say` is refused where the protocol as configured
/// reads token log-probabilities (`Protocol::needs_logprobs`), which injected text lacks.
///
/// Speaking order needs no declaration: calls are reused from the parent only when their
/// request is the parent's, so an agent who speaks after another in the same round (a judge
/// after the debaters) is asked anew whenever what it reads changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forks {
    /// Every intervention at every round.
    Any,
    /// Every intervention, but only at round 0 (why later rounds cannot be forked).
    RoundZeroOnly(&'static str),
    /// Null and model forks at every round; `say` refused (why).
    NoSay(&'static str),
    /// No fork at all (why).
    Never(&'static str),
}

impl Forks {
    /// Whether this declaration allows an intervention of `kind` at `round`; `Err(reason)`.
    pub fn allows(&self, kind: InterventionKind, round: usize) -> Result<(), &'static str> {
        match *self {
            Forks::Any => Ok(()),
            Forks::RoundZeroOnly(why) if round > 0 => Err(why),
            Forks::RoundZeroOnly(_) => Ok(()),
            Forks::NoSay(why) if kind == InterventionKind::Say => Err(why),
            Forks::NoSay(_) => Ok(()),
            Forks::Never(why) => Err(why),
        }
    }
}

/// The wrong answer a wrong-answer fork (`moot bench --fork-of … --say-wrong`) puts in an
/// agent's place on an item whose gold answer is `gold`, with `options` (choice items) and the
/// debate's round-0 answers `round0`:
/// - `choice`: the option after the gold one, cyclically (B for A, A for the last option), over
///   the item's options, or A–D when it lists none;
/// - `yes-no`: the opposite;
/// - `numeric`: the most common wrong round-0 answer (the first given, in agent order, among
///   equally common ones), else the gold answer plus one;
/// - `math` and `text`: the most common wrong round-0 answer, else none;
/// - `code`: none (a program is no value to put in a mouth).
///
/// `None`: the item has no defined wrong answer, and is left out of the fork.
pub fn wrong_answer(
    kind: AnswerKind,
    gold: &Answer,
    options: &[String],
    round0: &[Answer],
) -> Option<Answer> {
    let ctx = ExtractContext { choices: options };
    let parse = |s: &str| Answer::parse(kind, s, &ctx);
    match kind {
        AnswerKind::Choice => {
            let letters = if options.len() >= 2 { options.len() } else { 4 };
            let at = gold
                .canonical()
                .chars()
                .next()
                .filter(char::is_ascii_uppercase)
                .map(|c| (c as u8 - b'A') as usize)?;
            let next = (b'A' + ((at + 1) % letters) as u8) as char;
            parse(&next.to_string())
        }
        AnswerKind::YesNo => match gold.canonical() {
            "yes" => parse("no"),
            "no" => parse("yes"),
            _ => None,
        },
        AnswerKind::Numeric => most_common_wrong(gold, round0).or_else(|| {
            let x: f64 = gold.canonical().parse().ok()?;
            let plus_one = x + 1.0;
            if plus_one.fract() == 0.0 && plus_one.abs() < 1e15 {
                parse(&format!("{}", plus_one as i64))
            } else {
                parse(&plus_one.to_string())
            }
        }),
        AnswerKind::Math | AnswerKind::Text => most_common_wrong(gold, round0),
        AnswerKind::Code => None,
    }
}

/// The most common of `answers` not equivalent to `gold`; among equally common ones, the first
/// given.
fn most_common_wrong(gold: &Answer, answers: &[Answer]) -> Option<Answer> {
    let mut counts: Vec<(&Answer, usize)> = Vec::new();
    for a in answers.iter().filter(|a| !a.equivalent(gold)) {
        match counts.iter_mut().find(|(seen, _)| seen.equivalent(a)) {
            Some((_, n)) => *n += 1,
            None => counts.push((a, 1)),
        }
    }
    // `max_by_key` keeps the last of equal maxima; the first given wins here.
    let best = counts.iter().map(|(_, n)| *n).max()?;
    counts
        .into_iter()
        .find(|(_, n)| *n == best)
        .map(|(a, _)| a.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(kind: AnswerKind, s: &str) -> Answer {
        Answer::parse(kind, s, &ExtractContext::default()).unwrap()
    }

    #[test]
    fn each_kind_has_its_defined_wrong_answer() {
        use AnswerKind::*;
        let wrong = |kind, gold: &str, options: &[&str], round0: &[&str]| {
            let options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
            let round0: Vec<Answer> = round0.iter().map(|a| answer(kind, a)).collect();
            wrong_answer(kind, &answer(kind, gold), &options, &round0)
                .map(|a| a.canonical().to_string())
        };
        // Choice: the next option, cyclically; A–D without options.
        assert_eq!(wrong(Choice, "B", &["1", "2", "3"], &[]), Some("C".into()));
        assert_eq!(
            wrong(Choice, "C", &["1", "2", "3"], &["A"]),
            Some("A".into())
        );
        assert_eq!(wrong(Choice, "D", &[], &[]), Some("A".into()));
        // Yes/no: the opposite.
        assert_eq!(wrong(YesNo, "yes", &[], &[]), Some("no".into()));
        assert_eq!(wrong(YesNo, "false", &[], &[]), Some("yes".into()));
        // Numeric: the most common wrong round-0 answer, the first of equals; else gold + 1.
        assert_eq!(
            wrong(Numeric, "408", &[], &["408", "418", "398", "398", "418"]),
            Some("418".into())
        );
        assert_eq!(
            wrong(Numeric, "408", &[], &["408", "408.0"]),
            Some("409".into())
        );
        assert_eq!(wrong(Numeric, "0.5", &[], &[]), Some("1.5".into()));
        // Math and text: a wrong round-0 answer or none; code: none.
        assert_eq!(
            wrong(Text, "paris", &[], &["Paris", "Lyon"]),
            Some("lyon".into())
        );
        assert_eq!(wrong(Text, "paris", &[], &["paris"]), None);
        assert_eq!(wrong(Math, "\\frac{1}{2}", &[], &[]), None);
        assert_eq!(
            wrong_answer(Code, &answer(Code, "def f():\n    return 1"), &[], &[]),
            None
        );
    }

    #[test]
    fn each_declaration_refuses_what_it_says_with_its_reason() {
        use InterventionKind::*;
        for kind in [Null, Say, Model] {
            for round in [0, 1, 3] {
                assert_eq!(Forks::Any.allows(kind, round), Ok(()));
                assert_eq!(Forks::Never("no").allows(kind, round), Err("no"));
            }
            assert_eq!(Forks::RoundZeroOnly("r0").allows(kind, 0), Ok(()));
            assert_eq!(Forks::RoundZeroOnly("r0").allows(kind, 2), Err("r0"));
        }
        assert_eq!(Forks::NoSay("lp").allows(Say, 0), Err("lp"));
        assert_eq!(Forks::NoSay("lp").allows(Null, 1), Ok(()));
        assert_eq!(Forks::NoSay("lp").allows(Model, 1), Ok(()));
    }

    #[test]
    fn interventions_keep_their_json_shape_and_describe_themselves_cut() {
        let say = Intervention::Say {
            agent: 1,
            text: "The answer is 7.\nFinal answer: 7".into(),
        };
        let v = serde_json::to_value(&say).unwrap();
        assert_eq!(v["kind"], "say");
        assert_eq!(v["agent"], 1);
        assert_eq!(serde_json::from_value::<Intervention>(v).unwrap(), say);
        assert_eq!(say.describe(6), "agent 2 says \"The an…\"");
        assert_eq!(say.kind(), InterventionKind::Say);
        assert_eq!(say.agent(), Some(1));
        let null = serde_json::to_value(Intervention::Null).unwrap();
        assert_eq!(null, serde_json::json!({"kind": "null"}));
        let model = Intervention::Model {
            agent: 0,
            model: "expert".into(),
            backend: "sim:p=1".into(),
        };
        assert_eq!(model.describe(60), "agent 1 on expert");
    }
}
