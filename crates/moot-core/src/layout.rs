//! How a debate round's prompt is laid out (`debate.layout`), and how much of a round's prompts
//! a prefix cache could share.
//!
//! A KV cache reuses only a common *prefix*: the embedded model's across agents' sequences,
//! OpenAI's automatic prompt cache, Anthropic's cache breakpoints. Under the papers' layout each
//! agent's prompt is its own conversation (its question, its own answers as turns, then its
//! peers' latest solutions), so agents of one round share little more than the system message
//! and the question. Under [`Layout::SharedFirst`] everything every agent of a round reads alike
//! comes first, byte for byte the same: the question, then every round's solutions so far, each
//! round's in one order whatever the agent (its own among them); only then the agent's own part
//! (who it is, what to do). What each agent is shown does not change, only where.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::chat::ChatMessage;

/// The layout of debate prompts. See the module documentation and README's "Prompt layout".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// The papers' order, exactly as moot always built it.
    #[default]
    Papers,
    /// What every agent of a round reads alike first, then the agent's own part.
    SharedFirst,
}

impl Layout {
    pub const ALL: &'static [Layout] = &[Layout::Papers, Layout::SharedFirst];

    /// The layout's configuration name.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Papers => "papers",
            Layout::SharedFirst => "shared-first",
        }
    }

    /// Every configuration name, in [`Layout::ALL`]'s order.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|l| l.name()).collect()
    }

    pub fn is_papers(&self) -> bool {
        *self == Layout::Papers
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a layout, with the ones that are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a prompt layout (expected one of {names})", names = Layout::names().join(", "))]
pub struct UnknownLayout(pub String);

impl FromStr for Layout {
    type Err = UnknownLayout;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|l| l.name() == s)
            .ok_or_else(|| UnknownLayout(s.to_string()))
    }
}

/// What a prefix cache could share among the prompts of one round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SharedPrefix {
    /// How many prompts.
    pub prompts: usize,
    /// Bytes every prompt starts with alike (in the text of [`flatten`]).
    pub common: usize,
    /// Bytes of all prompts together.
    pub total: usize,
}

impl SharedPrefix {
    /// The common prefix as a share of the mean prompt (0 when there is none).
    pub fn share(&self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        self.common as f64 * self.prompts as f64 / self.total as f64
    }
}

/// A prompt as one text, each message its role between markers and its content, as a chat
/// template lays them out: two prompts share a prefix of this text exactly when their messages
/// do, up to where they first differ.
pub fn flatten(messages: &[ChatMessage]) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str("<|");
        out.push_str(m.role.as_str());
        out.push_str("|>\n");
        out.push_str(&m.content);
        out.push_str("<|end|>\n");
    }
    out
}

/// How many leading bytes `texts` all share (at a character boundary).
pub fn common_prefix_len(texts: &[&str]) -> usize {
    let Some((first, rest)) = texts.split_first() else {
        return 0;
    };
    let mut len = first.len();
    for t in rest {
        len = first
            .char_indices()
            .zip(t.char_indices())
            .take_while(|((_, a), (_, b))| a == b)
            .last()
            .map_or(0, |((i, c), _)| i + c.len_utf8())
            .min(len);
    }
    len
}

/// The prefix the prompts of one round share ([`flatten`]ed).
pub fn shared_prefix<'a>(prompts: impl IntoIterator<Item = &'a [ChatMessage]>) -> SharedPrefix {
    let texts: Vec<String> = prompts.into_iter().map(flatten).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    SharedPrefix {
        prompts: texts.len(),
        common: common_prefix_len(&refs),
        total: texts.iter().map(String::len).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_read_back_and_a_wrong_one_lists_the_right_ones() {
        for l in Layout::ALL {
            assert_eq!(l.name().parse::<Layout>(), Ok(*l));
            assert_eq!(
                serde_json::to_value(l).unwrap(),
                serde_json::Value::String(l.name().into())
            );
        }
        let e = "shared_first".parse::<Layout>().unwrap_err().to_string();
        assert_eq!(
            e,
            "\"shared_first\" is not a prompt layout (expected one of papers, shared-first)"
        );
        assert_eq!(Layout::default(), Layout::Papers);
    }

    #[test]
    fn the_shared_prefix_of_a_round() {
        let a = [ChatMessage::system("s"), ChatMessage::user("q1 abc")];
        let b = [ChatMessage::system("s"), ChatMessage::user("q1 abd")];
        let p = shared_prefix([&a[..], &b[..]]);
        let whole = flatten(&a).len();
        assert_eq!(p.prompts, 2);
        assert_eq!(p.total, 2 * whole);
        assert_eq!(p.common, "<|system|>\ns<|end|>\n<|user|>\nq1 ab".len());
        assert!((p.share() - p.common as f64 / whole as f64).abs() < 1e-12);
        assert_eq!(shared_prefix([&a[..]]).common, whole);
        assert_eq!(shared_prefix(std::iter::empty()), SharedPrefix::default());
        // A prefix stops at a whole character: "é" and "è" share their first byte.
        assert_eq!(common_prefix_len(&["xé", "xè"]), 1);
    }

    proptest! {
        /// The common prefix is a prefix of every text and cannot be extended.
        #[test]
        fn the_common_prefix_is_the_longest(texts in prop::collection::vec("[ab]{0,6}[éè]?[ab]{0,3}", 1..5)) {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let n = common_prefix_len(&refs);
            let prefix = &texts[0][..n];
            prop_assert!(texts.iter().all(|t| t.starts_with(prefix)));
            let longer = texts[0][n..].chars().next().map(|c| format!("{prefix}{c}"));
            if let Some(longer) = longer {
                prop_assert!(!texts.iter().all(|t| t.starts_with(&longer)));
            }
        }
    }
}
