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

/// Passes everything to each of several observers, in order (a progress display and a log).
pub struct Observers<'a>(pub Vec<&'a dyn Observer>);

impl Observer for Observers<'_> {
    fn round_started(&self, round: usize, calls: usize) {
        for o in &self.0 {
            o.round_started(round, calls);
        }
    }

    fn call_finished(&self, call: CallKey, outcome: Option<&Outcome>) {
        for o in &self.0 {
            o.call_finished(call, outcome);
        }
    }

    fn round_finished(&self, round: usize, transcript: &Transcript) {
        for o in &self.0 {
            o.round_finished(round, transcript);
        }
    }
}
