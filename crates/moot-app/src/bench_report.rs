//! A stored benchmark read back for a report: what `moot report` and `moot serve`'s benchmark
//! pages share.

use anyhow::{Context, Result};
use moot_config::Config;
use moot_eval::bench::{load_bench, ItemResult, LoadedBench};
use moot_eval::report::{common_items, BenchInfo, Report};
use moot_eval::Item;
use moot_store::{Store, StoreError};

use crate::error::{bad_input, InputError};

/// The report of the benchmarks `names` together (`moot report`): each read back and re-decided
/// ([`load`]), their protocols side by side ([`combine`]). Unless `all_items`, items not every
/// protocol finished are left out, and counted in the report's `left_out`, so that protocols
/// are compared on the same items. A benchmark the store does not hold, or nothing finished
/// to report, is an [`InputError`] that says so.
pub async fn report(
    store: &dyn Store,
    names: &[String],
    all_items: bool,
    via: moot_config::Via,
) -> Result<Report> {
    let gathered = gather(store, names, all_items, via).await?;
    let mut report = Report::new(gathered.infos, &gathered.results, &gathered.items);
    report.left_out = gathered.left_out;
    report.fork = gathered.fork;
    Ok(report)
}

/// Each reported debate as one JSON line, as lm-evaluation-harness's `--log_samples` writes
/// them (`moot report --format jsonl`): the benchmark, protocol, item, gold answer, each
/// round's answers by agent (`null`: no answer that round), the decision and its rule,
/// whether it is right, and what it cost — the same debates the report counts.
pub async fn samples(
    store: &dyn Store,
    names: &[String],
    all_items: bool,
    via: moot_config::Via,
) -> Result<Vec<serde_json::Value>> {
    let gathered = gather(store, names, all_items, via).await?;
    Ok(gathered
        .results
        .iter()
        .map(|r| {
            let mut row = row_json(r, r.correct_among(&gathered.items));
            // Every debate here is read back from the store: whether this process ran it says
            // nothing of it.
            if let Some(fields) = row.as_object_mut() {
                fields.remove("reused");
            }
            row["bench"] = serde_json::json!(r.run_id.split('/').next().unwrap_or_default());
            row["agents"] = serde_json::json!(r.agents.iter().map(|a| &a.id).collect::<Vec<_>>());
            row["rounds"] = serde_json::json!(crate::run_summary::round_answers(&r.result));
            row
        })
        .collect())
}

/// What a report of `names` reads: the benchmarks, their finished debates (on the items
/// every protocol finished, unless `all_items`) and their items.
struct Gathered {
    infos: Vec<BenchInfo>,
    results: Vec<ItemResult>,
    items: Vec<Item>,
    left_out: usize,
    fork: Option<moot_eval::fork_pairs::ForkComparison>,
}

async fn gather(
    store: &dyn Store,
    names: &[String],
    all_items: bool,
    via: moot_config::Via,
) -> Result<Gathered> {
    let mut loaded: Vec<LoadedBench> = Vec::new();
    for name in names {
        let bench = load(store, name)
            .await
            .map_err(|e| match e.downcast::<StoreError>() {
                Ok(StoreError::BenchNotFound(_)) => crate::not_found::NotFound::bench(name).into(),
                Ok(other) => other.into(),
                Err(e) => e,
            })?;
        loaded.push(bench);
    }
    let fork = match loaded.as_slice() {
        [one] => against_parent(store, one).await?,
        _ => None,
    };
    let (infos, results, items) = combine(loaded)?;
    if results.is_empty() {
        let unfinished: usize = infos.iter().map(|i| i.unfinished).sum();
        return bad_input(format!(
            "{} has no finished debate yet ({} not finished; moot bench status NAME shows how far it is)",
            names.join(", "),
            unfinished
        ));
    }
    let (results, left_out) = if all_items {
        (results, 0)
    } else {
        common_items(results)
    };
    if results.is_empty() {
        return bad_input(format!(
            "no item was finished under every protocol; {} reports them anyway",
            via.switch(moot_config::Field::AllItems)
        ));
    }
    Ok(Gathered {
        infos,
        results,
        items,
        left_out,
        fork,
    })
}

/// A fork benchmark's debates paired with its parent's (`moot bench --fork-of`); `None` for a
/// benchmark that is no fork, or whose parent is no longer in the store.
pub async fn against_parent(
    store: &dyn Store,
    fork: &LoadedBench,
) -> Result<Option<moot_eval::fork_pairs::ForkComparison>> {
    let Some(origin) = &fork.record.fork else {
        return Ok(None);
    };
    let parent = match load(store, &origin.parent).await {
        Ok(parent) => parent,
        Err(e) => match e.downcast_ref::<StoreError>() {
            Some(StoreError::BenchNotFound(_)) => return Ok(None),
            _ => return Err(e),
        },
    };
    let mut items = parent.items.clone();
    for item in &fork.items {
        if !items.iter().any(|i| i.id == item.id) {
            items.push(item.clone());
        }
    }
    Ok(Some(moot_eval::fork_pairs::ForkComparison {
        parent: origin.parent.clone(),
        round: origin.round,
        intervention: describe(&origin.intervention),
        protocols: moot_eval::fork_pairs::compare(&parent.results, &fork.results, &items),
    }))
}

/// A benchmark intervention as stored, in one line for people.
pub fn describe(stored: &serde_json::Value) -> String {
    let agent = stored["agent"].as_str().unwrap_or("?");
    match stored["kind"].as_str() {
        Some("null") => "null (the round resampled)".into(),
        Some("say-wrong") => format!("agent {agent} says the item's wrong answer"),
        Some("say") => format!(
            "agent {agent} says {}",
            crate::view::shorten(stored["template"].as_str().unwrap_or(""), 60)
        ),
        Some("model") => format!(
            "agent {agent} on {}",
            stored["model"].as_str().unwrap_or("?")
        ),
        _ => crate::view::shorten(&stored.to_string(), 60),
    }
}

/// The benchmark `name` with every finished debate re-decided under its own decision settings
/// (tie-break, FREE-MAD weights). A missing benchmark is the store's `BenchNotFound`.
pub async fn load(store: &dyn Store, name: &str) -> Result<LoadedBench> {
    let record = store.bench(name).await?;
    let decision = serde_json::from_value::<Config>(record.config.clone())
        .ok()
        .and_then(|c| c.decision().ok())
        .map(|(_, d)| d)
        .unwrap_or_default();
    load_bench(
        store,
        name,
        &|run| Config::protocol_of_run(&run.config, &run.protocol),
        &decision,
    )
    .await
    .with_context(|| format!("reading benchmark {name}"))
}

/// The report's plots: (caption, file name, SVG); the rounds plot only when a protocol ran
/// more than one round.
pub fn plots(report: &Report) -> Result<Vec<(&'static str, &'static str, String)>> {
    let mut plots = vec![(
        "accuracy against tokens per item",
        "accuracy-vs-tokens.svg",
        report.accuracy_vs_tokens_svg()?,
    )];
    if report.has_rounds() {
        plots.push((
            "plurality accuracy by round",
            "accuracy-vs-rounds.svg",
            report.accuracy_vs_rounds_svg()?,
        ));
    }
    Ok(plots)
}

/// Several benchmarks as one: protocols keep their names unless two benchmarks ran the same one.
pub fn combine(loaded: Vec<LoadedBench>) -> Result<(Vec<BenchInfo>, Vec<ItemResult>, Vec<Item>)> {
    let rounds_of = |b: &LoadedBench, p: &str| -> Option<usize> {
        b.results
            .iter()
            .filter(|r| r.protocol == p)
            .filter_map(|r| r.result.transcript.trajectory())
            .map(|t| t.rounds().saturating_sub(1))
            .max()
    };
    let mut infos = Vec::new();
    let mut results: Vec<ItemResult> = Vec::new();
    let mut items: Vec<Item> = Vec::new();
    for b in &loaded {
        for p in &b.record.protocols {
            let holders: Vec<&LoadedBench> = loaded
                .iter()
                .filter(|o| o.record.protocols.contains(p))
                .collect();
            let label = if holders.len() < 2 {
                p.clone()
            } else {
                let mine = rounds_of(b, p);
                let clash = holders
                    .iter()
                    .filter(|o| o.record.name != b.record.name)
                    .any(|o| rounds_of(o, p) == mine);
                match mine {
                    Some(r) if !clash => format!("{p} R={r}"),
                    _ => format!("{p} ({})", b.record.name),
                }
            };
            for r in b.results.iter().filter(|r| &r.protocol == p) {
                results.push(ItemResult {
                    protocol: label.clone(),
                    ..r.clone()
                });
            }
        }
        for item in &b.items {
            match items.iter().find(|i| i.id == item.id) {
                Some(seen) if seen.gold != item.gold => {
                    return Err(InputError(format!(
                        "item {} has gold {:?} in one benchmark and {:?} in {}: they are not the same dataset",
                        item.id, seen.gold, item.gold, b.record.name
                    ))
                    .into())
                }
                Some(_) => {}
                None => items.push(item.clone()),
            }
        }
        infos.push(BenchInfo {
            name: b.record.name.clone(),
            dataset: b.record.dataset.clone(),
            seed: b.record.seed,
            limit: b.record.limit,
            protocols: b.record.protocols.clone(),
            items: b.items.len(),
            unfinished: b.unfinished,
            left_out: b.record.left_out.clone(),
        });
    }
    Ok((infos, results, items))
}

/// One debate of a benchmark as a row (Python's `BenchReport.rows`): its protocol, item, run,
/// gold and chosen answers, whether it was right, and what it cost.
pub fn row_json(r: &ItemResult, correct: bool) -> serde_json::Value {
    let decision = r.result.decision();
    let usage = r.result.usage();
    serde_json::json!({
        "protocol": r.protocol,
        "item_id": r.item_id,
        "run_id": r.run_id,
        "gold": r.gold,
        "answer": decision
            .and_then(|d| d.answer.as_ref())
            .map(|a| a.canonical().to_string()),
        "rule": r.result.chosen,
        "correct": correct,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "ncomm": r.result.ncomm(),
        "reused": r.reused,
    })
}
