//! A stored run as Markdown (`moot show`): the same records the run page's view reads
//! ([`crate::view::run_view`]), with the same program labels (`P1`, `P2`), written out call by
//! call.

use moot_core::escape;
use moot_core::protocol::CallNotes;
use moot_core::text::{noun_for, plural};
use moot_store::{CallRecord, ValidationRecord};

use crate::run_records::RunRecords;

/// Programs a run's code answers checked in the sandbox, in the order calls first gave them,
/// so that tables can name them (`P1`) instead of holding code.
struct Programs<'a> {
    order: Vec<crate::view::CheckedProgram<'a>>,
    checks: &'a [ValidationRecord],
}

impl<'a> Programs<'a> {
    fn new(calls: &'a [CallRecord], checks: &'a [ValidationRecord]) -> Programs<'a> {
        Programs {
            order: crate::view::program_order(calls, checks),
            checks,
        }
    }

    /// `P2` for a checked program; another answer of several lines (an unchecked program) by
    /// its first line; anything else as it is.
    fn name(&self, answer: &str) -> String {
        match self.order.iter().position(|p| p.holds(answer)) {
            Some(i) => format!("P{}", i + 1),
            None => match answer.split_once('\n') {
                Some((first, _)) => format!("{} …", escape::markdown_code(first)),
                None => escape::markdown_inline(answer),
            },
        }
    }

    fn markdown(&self, out: &mut String) {
        if self.order.is_empty() {
            return;
        }
        out.push_str("## Programs checked in the sandbox\n\n");
        for (i, program) in self.order.iter().enumerate() {
            let program = program.code;
            let verdicts: Vec<String> = self
                .checks
                .iter()
                .filter(|c| c.answer == program)
                .map(|c| {
                    let detail = if c.detail.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", escape::markdown_inline(&c.detail))
                    };
                    format!(
                        "{} {}{detail}, {} ms",
                        escape::markdown_inline(&c.check),
                        escape::markdown_inline(&c.verdict),
                        c.elapsed_ms
                    )
                })
                .collect();
            out.push_str(&format!(
                "### P{} — {}\n\n{}\n",
                i + 1,
                verdicts.join(" · "),
                escape::markdown_block(program)
            ));
        }
    }
}

/// The run as Markdown: its question and settings, each round's calls with what the protocol did
/// to their prompts and their responses, each rule's decision, and the programs checked in the
/// sandbox. Everything from the store is escaped where it is placed: nothing in a response is
/// markup.
pub fn markdown(records: &RunRecords) -> String {
    let RunRecords {
        run,
        calls,
        decisions,
        validations: checks,
        forks,
        bench_item: _,
    } = records;
    let programs = Programs::new(calls, checks);
    let roles = super::roles(&run.spec);
    let mut out = String::new();
    out.push_str(&format!("# Run {}\n\n", escape::markdown_inline(&run.id)));
    if run.question.contains('\n') {
        out.push_str(&format!(
            "**Question:**\n\n{}\n",
            escape::markdown_block(&run.question)
        ));
    } else {
        out.push_str(&format!(
            "**Question:** {}\n\n",
            escape::markdown_inline(&run.question)
        ));
    }
    out.push_str(&format!(
        "- protocol: {} · rule: {} · status: {} · answer: **{}**\n- created: {}{}\n\n",
        escape::markdown_code(&run.protocol),
        escape::markdown_code(&run.rule),
        run.shown_status(),
        run.answer
            .as_deref()
            .map_or("(none)".to_string(), |a| programs.name(a)),
        escape::markdown_inline(&run.created_at),
        run.finished_at
            .as_deref()
            .map(|f| format!(" · finished: {}", escape::markdown_inline(f)))
            .unwrap_or_default()
    ));
    if let Some(graded) = records.graded() {
        out.push_str(&format!(
            "- benchmark {} item {} · gold: **{}** · the decision is **{}**\n\n",
            escape::markdown_code(&graded.bench),
            escape::markdown_code(&graded.item),
            escape::markdown_inline(&graded.gold),
            if graded.correct { "right" } else { "wrong" }
        ));
    }
    lineage_markdown(&mut out, &crate::view::lineage(run, forks));
    if run.interrupted() {
        out.push_str(&format!(
            "The process running this debate stopped before it finished; {} continues it.\n\n",
            escape::markdown_code(&format!(
                "moot resume {}",
                crate::shell::shell_word(&run.id)
            ))
        ));
    }
    let made = calls.iter().filter(|c| !c.skipped).count();
    let ncomm: u64 = calls.iter().map(|c| u64::from(c.ncomm)).sum();
    let usage = super::calls_usage(calls);
    out.push_str(&format!(
        "- {} ({} skipped) · {} input{} / {} output tokens · NComm {ncomm} (peer messages placed in prompts)\n\n",
        plural(made, "model call"),
        calls.len() - made,
        usage.input_tokens,
        usage.prompt_cache_note(),
        usage.output_tokens,
    ));
    let failures = moot_store::agent_failures(calls);
    for failed in &failures {
        out.push_str(&format!(
            "- **{}**\n",
            escape::markdown_inline(&failed.describe())
        ));
    }
    if !failures.is_empty() {
        out.push('\n');
    }
    // The rounds that have calls, not every number up to the largest: a stored round number
    // is data, and one row claiming round 1,000,000,000 must not make a billion sections.
    let rounds: std::collections::BTreeSet<u32> = calls.iter().map(|c| c.round).collect();
    for round in rounds {
        let in_round: Vec<&CallRecord> = calls.iter().filter(|c| c.round == round).collect();
        let challenges = in_round.iter().any(|c| c.slot.starts_with("challenge:"));
        if challenges {
            out.push_str(&format!("## SVR-MAD iteration {round}\n\n"));
        } else {
            out.push_str(&format!("## Round {round}\n\n"));
        }
        let (judgements, others): (Vec<&CallRecord>, Vec<&CallRecord>) = in_round
            .into_iter()
            .partition(|c| c.slot.starts_with("judge:"));
        for c in others {
            call_markdown(&mut out, c, &programs, &roles);
        }
        if !judgements.is_empty() {
            out.push_str(&format!(
                "### MAD-M² judgements of round {round}'s responses\n\n"
            ));
            for c in judgements {
                call_markdown(&mut out, c, &programs, &roles);
            }
        }
    }
    if !decisions.is_empty() {
        out.push_str("## Decisions\n\n| rule | answer | scores |\n|---|---|---|\n");
        for d in decisions {
            let scores = d.decision.value()["scores"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| {
                            format!(
                                "{}: {}",
                                programs.name(k),
                                escape::markdown_inline(&v.to_string())
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                escape::markdown_inline(&d.rule),
                d.answer
                    .as_deref()
                    .map_or("(none)".to_string(), |a| programs.name(a)),
                scores
            ));
        }
        out.push('\n');
    }
    programs.markdown(&mut out);
    out
}

/// Where a fork comes from, and the forks of a run, a line each.
fn lineage_markdown(out: &mut String, lineage: &crate::view::Lineage) {
    if let Some(parent) = &lineage.parent {
        out.push_str(&format!(
            "Fork of run {} at round {}: {}. Calls before that round are the parent's (0 tokens here).\n\n",
            escape::markdown_code(&parent.id),
            parent.round,
            escape::markdown_inline(&parent.intervention)
        ));
    }
    if lineage.forks.is_empty() {
        return;
    }
    out.push_str("Forks of this run:\n\n");
    for f in &lineage.forks {
        out.push_str(&format!(
            "- {} at round {}: {} — {}, answer: {}\n",
            escape::markdown_code(&f.id),
            f.round,
            escape::markdown_inline(&f.intervention),
            escape::markdown_inline(f.status.as_deref().unwrap_or("?")),
            escape::markdown_inline(f.answer.as_deref().unwrap_or("(none)"))
        ));
    }
    out.push('\n');
}

/// One call: heading, cost line, what the protocol did to its prompt, the response.
fn call_markdown(
    out: &mut String,
    c: &CallRecord,
    programs: &Programs<'_>,
    roles: &[Option<String>],
) {
    let role = roles
        .get(c.agent as usize)
        .cloned()
        .flatten()
        .map(|r| format!("{}, ", escape::markdown_inline(&r)))
        .unwrap_or_default();
    let answer = match c.answer.as_deref() {
        Some(a) => programs.name(a),
        None if c.response_text.is_some() => "(unreadable)".into(),
        None if c.skipped => "(kept)".into(),
        None => "**failed**".into(),
    };
    let (kind, peer) = c
        .slot
        .split_once(':')
        .map_or((c.slot.as_str(), None), |(k, p)| (k, p.parse::<u32>().ok()));
    let heading = match (kind, peer) {
        ("judge", Some(author)) => {
            let label = moot_core::protocol::JudgeLabel::describe(c.response_text.as_deref());
            format!(
                "#### Agent {} judges agent {}'s response — {}",
                c.agent + 1,
                author + 1,
                escape::markdown_inline(label)
            )
        }
        ("challenge", Some(challenger)) => format!(
            "### Agent {} ({}) challenged by agent {} — answer: {answer}",
            c.agent + 1,
            escape::markdown_code(&c.agent_id),
            challenger + 1
        ),
        _ => format!(
            "### Agent {} ({}, {role}{}) — answer: {answer}",
            c.agent + 1,
            escape::markdown_code(&c.agent_id),
            escape::markdown_inline(&c.backend)
        ),
    };
    out.push_str(&format!("{heading}\n\n"));
    if c.skipped {
        out.push_str(&format!(
            "_Not asked: {}_\n\n",
            escape::markdown_inline(c.error.as_deref().unwrap_or("skipped by the protocol"))
        ));
        return;
    }
    let peers = if c.peers.is_empty() {
        String::new()
    } else {
        format!(
            " · saw {} {}",
            noun_for(c.peers.len(), "agent"),
            c.peers
                .iter()
                .map(|p| (p + 1).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    out.push_str(&format!(
        "{} · {} ms · {} in{} / {} out tokens · NComm {}{} · prompt {} ({})\n\n",
        escape::markdown_inline(&c.mode),
        c.latency_ms,
        c.input_tokens,
        super::call_usage(c).prompt_cache_note(),
        c.output_tokens,
        c.ncomm,
        peers,
        escape::markdown_code(&c.template),
        escape::markdown_inline(&c.template_hash)
    ));
    let mut listed = false;
    let reused = c
        .reused_from
        .as_ref()
        .map(|p| format!("reused from run {p} (asked there; 0 tokens here)"));
    for line in reused
        .into_iter()
        .chain(notes_lines(&c.notes))
        .chain(retry_lines(&c.retries))
    {
        out.push_str(&format!("- {}\n", escape::markdown_inline(&line)));
        listed = true;
    }
    if listed {
        out.push('\n');
    }
    match (&c.response_text, &c.error) {
        // The response verbatim, in a fence it cannot close: nothing in it is markup.
        (Some(text), _) => {
            out.push_str(&escape::markdown_block(text.trim()));
            out.push('\n');
        }
        (None, Some(e)) => out.push_str(&format!(
            "_No response: {}_\n\n",
            escape::markdown_inline(e)
        )),
        (None, None) => out.push_str("_No response._\n\n"),
    }
}

/// A call's failed attempts before its outcome, one line each.
fn retry_lines(retries: &serde_json::Value) -> Vec<String> {
    retries
        .as_array()
        .map(|list| {
            list.iter()
                .enumerate()
                .map(|(i, a)| {
                    format!(
                        "attempt {} failed ({}): {} — retried after {:.1} s",
                        i + 1,
                        a["class"].as_str().unwrap_or("?"),
                        a["error"].as_str().unwrap_or("?"),
                        a["wait_ms"].as_u64().unwrap_or(0) as f64 / 1000.0
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The protocol's notes on a call, one readable line each; notes that do not read as
/// [`CallNotes`] (a damaged row) say so in one line.
fn notes_lines(notes: &serde_json::Value) -> Vec<String> {
    match CallNotes::from_json(notes) {
        Ok(notes) => notes.describe(),
        Err(e) => vec![format!("the protocol's notes are unreadable: {e}")],
    }
}
