//! `moot show RUN`: a stored debate as JSON or Markdown.

use anyhow::Result;
use moot_store::{CallRecord, DecisionRecord, RunRecord, Store};
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Json,
    Markdown,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run id.
    run: String,
    #[arg(long, value_enum, default_value = "markdown")]
    format: Format,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let (run, calls, decisions) = rt.block_on(async {
        Ok::<_, moot_store::StoreError>((
            store.run(&args.run).await?,
            store.calls(&args.run).await?,
            store.decisions(&args.run).await?,
        ))
    })?;
    match args.format {
        Format::Json => println!("{}", to_json(&run, &calls, &decisions)),
        Format::Markdown => print!("{}", to_markdown(&run, &calls, &decisions)),
    }
    Ok(())
}

pub fn to_json(
    run: &RunRecord,
    calls: &[CallRecord],
    decisions: &[DecisionRecord],
) -> serde_json::Value {
    json!({
        "run": run,
        "calls": calls,
        "decisions": decisions.iter().map(|d| &d.decision).collect::<Vec<_>>(),
    })
}

pub fn to_markdown(run: &RunRecord, calls: &[CallRecord], decisions: &[DecisionRecord]) -> String {
    let mut out = String::new();
    out.push_str(&format!("# Run {}\n\n", run.id));
    out.push_str(&format!("**Question:** {}\n\n", run.question));
    out.push_str(&format!(
        "- protocol: `{}` · rule: `{}` · status: {} · answer: **{}**\n- created: {}{}\n\n",
        run.protocol,
        run.rule,
        run.status.as_str(),
        run.answer.as_deref().unwrap_or("(none)"),
        run.created_at,
        run.finished_at
            .as_deref()
            .map(|f| format!(" · finished: {f}"))
            .unwrap_or_default()
    ));
    let rounds = calls.iter().map(|c| c.round).max().map_or(0, |r| r + 1);
    for round in 0..rounds {
        out.push_str(&format!("## Round {round}\n\n"));
        for c in calls.iter().filter(|c| c.round == round) {
            let peers = if c.peers.is_empty() {
                String::new()
            } else {
                format!(
                    " · saw agents {}",
                    c.peers
                        .iter()
                        .map(|p| (p + 1).to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            out.push_str(&format!(
                "### Agent {} (`{}`, {}) — answer: {}\n\n",
                c.agent + 1,
                c.agent_id,
                c.backend,
                c.answer.as_deref().unwrap_or(if c.response_text.is_some() {
                    "(unreadable)"
                } else {
                    "(missing)"
                })
            ));
            out.push_str(&format!(
                "{} · {} ms · {} in / {} out tokens{}{} · prompt `{}` ({})\n\n",
                c.mode,
                c.latency_ms,
                c.input_tokens,
                c.output_tokens,
                c.processed_input_tokens
                    .map(|p| format!(" ({p} processed)"))
                    .unwrap_or_default(),
                peers,
                c.template,
                c.template_hash
            ));
            match (&c.response_text, &c.error) {
                (Some(text), _) => {
                    for line in text.trim().lines() {
                        out.push_str(&format!("> {line}\n"));
                    }
                    out.push('\n');
                }
                (None, Some(e)) => out.push_str(&format!("_No response: {e}_\n\n")),
                (None, None) => out.push_str("_No response._\n\n"),
            }
        }
    }
    if !decisions.is_empty() {
        out.push_str("## Decisions\n\n| rule | answer | scores |\n|---|---|---|\n");
        for d in decisions {
            let scores = d.decision["scores"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}: {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                d.rule,
                d.answer.as_deref().unwrap_or("(none)"),
                scores
            ));
        }
    }
    out
}
