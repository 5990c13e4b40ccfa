//! SVR-MAD's vocabulary that sits below the protocol: its prior option ([`Prior`]) and the
//! [`ChallengeNote`] a challenge call records. Kept apart from `svr_mad` so that the options and
//! the call notes can name them while `svr_mad` itself depends on both.

use serde::{Deserialize, Serialize};

/// SVR-MAD's prior signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Prior {
    /// exp(min token log-likelihood).
    #[default]
    MinLl,
    /// 1 / perplexity.
    Ppl,
    /// Self-reported confidence / 100.
    Confidence,
}

/// The challenge an SVR-MAD call answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChallengeNote {
    pub receiver: usize,
    pub challenger: usize,
    /// The receiver's correctness score when it was chosen.
    pub receiver_score: f64,
    /// Communication budget left before this iteration.
    pub budget_left: usize,
}
