//! Running a sweep: every cell's debates, each distinct protocol once per seed, through the
//! real engine against an in-memory store, a bounded number at a time on tokio's workers.
//!
//! Debate `s` of a cell gives agent `i` the sim model seed `100·s + i` and the debate seed `s`
//! (as the engine's mechanism tests do), so every arm and every cell sees the same seeds: arm
//! comparisons in a cell are paired, and so are cells that differ only in a parameter.

use std::sync::Arc;

use futures::stream::{self, StreamExt};
use moot_core::answer::{is_correct, Answer, AnswerKind, ExtractContext};
use moot_engine::{DebateResult, DebateRunner, NoObserver};
use moot_store::MemoryStore;

use crate::debate::{debate, GOLD};
use crate::error::SweepError;
use crate::spec::Plan;

/// How to run a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    /// Debates in flight at once (at least 1).
    pub concurrency: usize,
}

/// One arm in one cell: whether each seed's decision was gold, and the cost of its debates.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArmData {
    /// Indexed by seed.
    pub correct: Vec<bool>,
    /// Sum over seeds of the debate's NComm (pairwise context transfers).
    pub ncomm: u64,
    /// Sum over seeds of the calls made to a model.
    pub calls: u64,
}

/// One cell's results, per arm in spec order.
#[derive(Debug, Clone, PartialEq)]
pub struct CellData {
    pub x: f64,
    pub y: Option<f64>,
    pub arms: Vec<ArmData>,
}

/// One finished debate: the cell and group it belongs to, its seed, and what it produced.
struct Done {
    cell: usize,
    group: usize,
    seed: usize,
    /// Per arm of the cell: whether the arm's rule decided gold (arms of other groups: unused).
    correct: Vec<bool>,
    ncomm: u64,
    calls: u64,
}

async fn run_one(
    plan: Arc<Plan>,
    runner: Arc<dyn DebateRunner>,
    cell: usize,
    group: usize,
    seed: usize,
) -> Result<Done, SweepError> {
    let c = &plan.cells[cell];
    let where_ = || {
        format!(
            "{} at {}, seed {seed}",
            c.groups[group].protocol,
            plan.coordinates(c.x, c.y)
        )
    };
    let store = MemoryStore::default();
    let job = debate(&c.groups[group], &c.team, c.rounds, seed as u64, &store)
        .map_err(|e| SweepError::Debate(format!("{}: {e}", where_())))?;
    let r = runner
        .run(job, &NoObserver, &mut |_| {})
        .await
        .map_err(|e| SweepError::Debate(format!("{}: {e}", where_())))?
        .result;
    let gold = Answer::parse(AnswerKind::Numeric, GOLD, &ExtractContext::default());
    let correct = plan
        .arms
        .iter()
        .map(|arm| decided_gold(&r, arm.rule, gold.as_ref()))
        .collect();
    Ok(Done {
        cell,
        group,
        seed,
        correct,
        ncomm: r.ncomm(),
        calls: r.records.iter().filter(|c| !c.skipped).count() as u64,
    })
}

fn decided_gold(r: &DebateResult, rule: &str, gold: Option<&Answer>) -> bool {
    let answer = r
        .decisions
        .iter()
        .find(|d| d.rule == rule)
        .and_then(|d| d.answer.as_ref());
    gold.is_some_and(|g| is_correct(answer, g))
}

/// Runs every debate of `plan` through `runner`; `progress(done, total)` hears each finished
/// debate.
///
/// Debates run as tokio tasks, at most `concurrency` at a time, so they use every worker thread
/// of a multi-threaded runtime. The results do not depend on the order they finish in.
pub async fn run_plan(
    plan: &Plan,
    runner: Arc<dyn DebateRunner>,
    options: RunOptions,
    mut progress: impl FnMut(usize, usize),
) -> Result<Vec<CellData>, SweepError> {
    let plan = Arc::new(plan.clone());
    let mut data: Vec<CellData> = plan
        .cells
        .iter()
        .map(|c| CellData {
            x: c.x,
            y: c.y,
            arms: vec![
                ArmData {
                    correct: vec![false; plan.debates],
                    ..ArmData::default()
                };
                plan.arms.len()
            ],
        })
        .collect();
    // Drawn as they are started, never collected: a list of every debate would grow with the
    // sweep (24 bytes each, 240 MB at the default max_debates) before the first one ran.
    let jobs = plan.cells.iter().enumerate().flat_map(|(ci, c)| {
        (0..plan.debates).flat_map(move |s| (0..c.groups.len()).map(move |g| (ci, g, s)))
    });
    let total = usize::try_from(plan.total_debates()).unwrap_or(usize::MAX);
    let mut running = stream::iter(jobs.map(|(cell, group, seed)| {
        let plan = Arc::clone(&plan);
        tokio::spawn(run_one(plan, Arc::clone(&runner), cell, group, seed))
    }))
    .buffer_unordered(options.concurrency.max(1));
    let mut finished = 0;
    while let Some(joined) = running.next().await {
        let done = joined.map_err(|e| SweepError::Task(e.to_string()))??;
        let cell = &plan.cells[done.cell];
        for (arm, d) in data[done.cell].arms.iter_mut().enumerate() {
            if cell.arm_group[arm] == done.group {
                d.correct[done.seed] = done.correct[arm];
                d.ncomm += done.ncomm;
                d.calls += done.calls;
            }
        }
        finished += 1;
        progress(finished, total);
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::SweepSpec;

    /// The engine's runner: no sandbox, no log.
    fn runner() -> Arc<dyn DebateRunner> {
        Arc::new(moot_engine::Surroundings::default())
    }

    /// Three agents, α = 1, one distractor, two rounds.
    fn spec(accuracy: f64, debates: usize, x: &str, arms: &str) -> Plan {
        let text = format!(
            "title = \"t\"\ndebates = {debates}\nrounds = 2\nagents = 3\n\
             [agent]\naccuracy = {accuracy}\nalpha = 1.0\ndistractors = [\"418\"]\n{arms}\n{x}\n"
        );
        SweepSpec::parse(&text, "t").unwrap().plan(None).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn arms_sharing_a_protocol_share_its_debates_and_results_are_paired_by_seed() {
        let plan = spec(
            0.45,
            40,
            "[x]\nparam = \"beta_conform\"\nvalues = [-2, 4]",
            "[[arms]]\nlabel = \"score\"\nprotocol = \"free-mad-c\"\nrule = \"free-mad\"\n\
             [[arms]]\nlabel = \"last\"\nprotocol = \"free-mad-c\"\nrule = \"majority-last\"\n\
             [[arms]]\nlabel = \"n\"\nprotocol = \"free-mad-n\"",
        );
        let mut seen = Vec::new();
        let data = run_plan(&plan, runner(), RunOptions { concurrency: 3 }, |d, t| {
            seen.push((d, t))
        })
        .await
        .unwrap();
        // Two protocols × 2 cells × 40 seeds.
        assert_eq!(seen.len(), 160);
        assert_eq!(seen.last(), Some(&(160, 160)));
        assert_eq!(data.len(), 2);
        for c in &data {
            // Shared debates: the same NComm and calls for both free-mad-c arms.
            assert_eq!(c.arms[0].ncomm, c.arms[1].ncomm);
            assert_eq!(c.arms[0].calls, c.arms[1].calls);
            assert!(c.arms[0].calls > 0);
            assert!(c.arms.iter().all(|a| a.correct.len() == 40));
        }
        // Concurrency does not change the outcome.
        let again = run_plan(&plan, runner(), RunOptions { concurrency: 1 }, |_, _| {})
            .await
            .unwrap();
        assert_eq!(again, data);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformity_to_a_wrong_plurality_costs_som_and_leaves_free_mad_n_alone() {
        // som's prompt urges agreement, so its agents follow `beta_conform`; free-mad-n's urges
        // critique and reads `beta_anti`, which the axis leaves alone. With gold a minority
        // (accuracy 0.35, one distractor), strong conformity locks in round 0's wrong
        // pluralities. Measured over seeds 0..60: som right in 24 (β = −2) and 14 (β = 4).
        let plan = spec(
            0.35,
            60,
            "[x]\nparam = \"beta_conform\"\nvalues = [-2, 4]",
            "[[arms]]\nlabel = \"som\"\nprotocol = \"som\"\nrule = \"majority-last\"\n\
             [[arms]]\nlabel = \"n\"\nprotocol = \"free-mad-n\"\nrule = \"majority-last\"",
        );
        let data = run_plan(&plan, runner(), RunOptions { concurrency: 2 }, |_, _| {})
            .await
            .unwrap();
        let right =
            |cell: usize, arm: usize| data[cell].arms[arm].correct.iter().filter(|&&b| b).count();
        assert_eq!(
            data[0].arms[1], data[1].arms[1],
            "free-mad-n does not read beta_conform"
        );
        assert!(
            right(0, 0) >= right(1, 0) + 5,
            "som: {} vs {}",
            right(0, 0),
            right(1, 0)
        );
    }
}
