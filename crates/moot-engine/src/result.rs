//! What a finished debate hands back: its transcript, stored calls and decisions, and the sums
//! front ends report (tokens, cache hits, communication, why nothing was answered).

use std::collections::BTreeMap;

use moot_core::chat::Usage;
use moot_core::debate::Transcript;
use moot_core::decision::Decision;
use moot_store::CallRecord;

/// The result of a finished debate.
#[derive(Debug, Clone)]
pub struct DebateResult {
    pub run_id: String,
    pub transcript: Transcript,
    pub records: Vec<CallRecord>,
    /// Every rule's decision; `chosen` names the one that gives the final answer.
    pub decisions: Vec<Decision>,
    pub chosen: &'static str,
    /// The checks of every code answer, by program (empty unless the answer kind is `code`
    /// and a sandbox was configured).
    pub validations: moot_core::validation::Validations,
}

impl DebateResult {
    pub fn decision(&self) -> Option<&Decision> {
        self.decisions.iter().find(|d| d.rule == self.chosen)
    }

    /// When no call of the debate got a response: each agent's first error (one line per
    /// agent, in agent order), so a caller can fail with the reason instead of "no answer".
    pub fn every_call_failed(&self) -> Option<Vec<String>> {
        if self.records.iter().any(|r| r.response_text.is_some()) {
            return None;
        }
        let mut first: BTreeMap<u32, String> = BTreeMap::new();
        for r in &self.records {
            if let Some(e) = &r.error {
                first
                    .entry(r.agent)
                    .or_insert_with(|| format!("{}: {e}", r.agent_id));
            }
        }
        (!first.is_empty()).then(|| first.into_values().collect())
    }

    /// Pairwise context transfers over the whole debate (NComm).
    pub fn ncomm(&self) -> u64 {
        self.records.iter().map(|r| u64::from(r.ncomm)).sum()
    }

    /// Calls made to a model (skipped calls excluded), per round, in round order.
    pub fn calls_per_round(&self) -> Vec<(u32, usize)> {
        let mut per: BTreeMap<u32, usize> = BTreeMap::new();
        for r in self.records.iter().filter(|r| !r.skipped) {
            *per.entry(r.round).or_default() += 1;
        }
        per.into_iter().collect()
    }

    /// Calls answered from the request cache.
    pub fn cache_hits(&self) -> usize {
        self.records.iter().filter(|r| r.cached).count()
    }

    /// Tokens of the calls a model actually answered (cache hits excluded).
    pub fn spent_usage(&self) -> Usage {
        usage_of(self.records.iter().filter(|r| !r.cached))
    }

    /// Tokens of every call, cache hits included (what the debate would cost without a cache).
    pub fn usage(&self) -> Usage {
        usage_of(self.records.iter())
    }
}

fn usage_of<'a>(records: impl Iterator<Item = &'a CallRecord>) -> Usage {
    let mut u = Usage::default();
    for r in records {
        u += Usage {
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            processed_input_tokens: r.processed_input_tokens,
            cache_write_input_tokens: r.cache_write_input_tokens,
        };
    }
    u
}
