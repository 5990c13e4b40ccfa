//! Observers: progress displays and live views hear about rounds and calls as they happen.

use moot_core::debate::{CallKey, Outcome, Transcript};

pub trait Observer: Send + Sync {
    fn round_started(&self, _round: usize, _calls: usize) {}
    fn call_finished(&self, _call: CallKey, _outcome: Option<&Outcome>) {}
    fn round_finished(&self, _round: usize, _transcript: &Transcript) {}
}

/// Hears nothing.
pub struct NoObserver;

impl Observer for NoObserver {}
