//! A forked benchmark against its parent (`moot bench --fork-of`): every debate of the fork is
//! a fork of the parent's debate of the same item under the same protocol, so each item gives
//! a pair of outcomes (right in the parent? right in the fork?). Per protocol: the pairs, the
//! discordant counts and the exact McNemar test on them ([`crate::protocol_totals::mcnemar_exact`]).

use serde::Serialize;

use crate::bench::ItemResult;
use crate::item::Item;
use crate::protocol_totals::PairTally;

/// The fork's results against the parent's, per protocol.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ForkComparison {
    pub parent: String,
    pub round: u32,
    /// The intervention, in one line.
    pub intervention: String,
    pub protocols: Vec<ForkPairs>,
}

/// One protocol's items in the parent and in the fork.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ForkPairs {
    pub protocol: String,
    /// Items finished in both.
    pub items: usize,
    pub parent_correct: usize,
    pub fork_correct: usize,
    pub both_correct: usize,
    /// Right in the parent, wrong in the fork: what the intervention broke.
    pub parent_only: usize,
    /// Wrong in the parent, right in the fork: what it mended.
    pub fork_only: usize,
    pub both_wrong: usize,
    /// Exact two-sided McNemar p-value on `parent_only` against `fork_only`.
    pub p_value: f64,
    pub pairs: Vec<ItemPair>,
}

/// One item's outcome in the parent and in the fork.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ItemPair {
    pub item_id: String,
    pub parent_correct: bool,
    pub fork_correct: bool,
    pub parent_answer: Option<String>,
    pub fork_answer: Option<String>,
}

/// Pairs each of `fork`'s results with `parent`'s of the same protocol and item (items graded
/// with `items`, which holds every item of both), protocols in the fork's order.
pub fn compare(parent: &[ItemResult], fork: &[ItemResult], items: &[Item]) -> Vec<ForkPairs> {
    let mut protocols: Vec<&str> = Vec::new();
    for r in fork {
        if !protocols.contains(&r.protocol.as_str()) {
            protocols.push(&r.protocol);
        }
    }
    let answer = |r: &ItemResult| {
        r.result
            .decision()
            .and_then(|d| d.answer.as_ref())
            .map(|a| a.canonical().to_string())
    };
    protocols
        .into_iter()
        .map(|protocol| {
            let pairs: Vec<ItemPair> = fork
                .iter()
                .filter(|f| f.protocol == protocol)
                .filter_map(|f| {
                    let item = items.iter().find(|i| i.id == f.item_id)?;
                    let p = parent
                        .iter()
                        .find(|p| p.protocol == protocol && p.item_id == f.item_id)?;
                    Some(ItemPair {
                        item_id: f.item_id.clone(),
                        parent_correct: p.correct(item),
                        fork_correct: f.correct(item),
                        parent_answer: answer(p),
                        fork_answer: answer(f),
                    })
                })
                .collect();
            let t = PairTally::of(pairs.iter().map(|p| (p.parent_correct, p.fork_correct)));
            ForkPairs {
                protocol: protocol.to_string(),
                items: pairs.len(),
                parent_correct: t.first_correct(),
                fork_correct: t.second_correct(),
                both_correct: t.both,
                parent_only: t.only_first,
                fork_only: t.only_second,
                both_wrong: t.neither,
                p_value: t.p_value(),
                pairs,
            }
        })
        .collect()
}

impl ForkComparison {
    /// The comparison as a Markdown section.
    pub fn markdown(&self) -> String {
        let md = moot_core::escape::markdown_inline;
        let mut out = format!(
            "## Against the parent benchmark\n\nEvery debate here is a fork of benchmark {}'s debate of the same item at round {}: {}. Pairs are items finished in both; McNemar's exact test compares the items only the parent got right with those only the fork got right.\n\n",
            md(&self.parent),
            self.round,
            md(&self.intervention)
        );
        out.push_str("| protocol | items | parent right | fork right | right in both | parent only | fork only | wrong in both | McNemar p |\n|---|---|---|---|---|---|---|---|---|\n");
        for p in &self.protocols {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {:.3} |\n",
                md(&p.protocol),
                p.items,
                p.parent_correct,
                p.fork_correct,
                p.both_correct,
                p.parent_only,
                p.fork_only,
                p.both_wrong,
                p.p_value
            ));
        }
        out.push('\n');
        out
    }
}
