//! What `ask` and `resume` print: the answer, the rule, per-round answers, tokens, the run id.

use std::time::Duration;

use moot_core::answer::AnswerKind;
use moot_core::debate::{Outcome, Slot};
use moot_core::text::plural;
use moot_engine::DebateResult;
use serde_json::json;

/// Code answers are programs: every distinct program of the debate (formattings the rules
/// count as one are one), in order of first appearance (round by round, agent by agent), so
/// that output and logs can name them `P1`, `P2` instead of printing them inline.
pub fn programs(result: &DebateResult) -> Vec<moot_core::answer_groups::AnswerGroup> {
    let t = &result.transcript;
    let given: Vec<&moot_core::Answer> = (0..t.rounds())
        .flat_map(|r| (0..t.agents()).map(move |a| (r, a)))
        .filter_map(|(r, a)| t.effective(r, a).and_then(Outcome::answer))
        .collect();
    moot_core::answer_groups::group_answers(given)
}

/// Each round's answers by agent, as the decision rules read them (a skipped call keeps the
/// agent's earlier answer; `None`: no answer that round): what `ask --json` and `report
/// --format jsonl` give as `rounds`.
pub fn round_answers(result: &DebateResult) -> Vec<Vec<Option<String>>> {
    let t = &result.transcript;
    (0..t.rounds())
        .map(|r| {
            (0..t.agents())
                .map(|a| {
                    t.effective(r, a)
                        .and_then(Outcome::answer)
                        .map(|x| x.canonical().to_string())
                })
                .collect()
        })
        .collect()
}

pub struct RunSummary<'a> {
    pub result: &'a DebateResult,
    pub protocol: &'a str,
    pub agent_ids: Vec<String>,
    pub wall: Duration,
    /// Embedded-model throughput line, when local agents ran.
    pub throughput: Option<String>,
    /// The run is in a store that outlives the process: the summary says how to show it
    /// again (not for `--store memory:`, where nothing can).
    pub lasting: bool,
}

impl RunSummary<'_> {
    fn programs(&self) -> Vec<moot_core::answer_groups::AnswerGroup> {
        programs(self.result)
    }

    fn is_code(&self) -> bool {
        !self.result.validations.is_empty()
            || self.result.transcript.trajectory().is_some_and(|t| {
                (0..t.rounds()).any(|r| {
                    t.round(r)
                        .any(|c| c.answer().is_some_and(|a| a.kind() == AnswerKind::Code))
                })
            })
    }

    /// `syntax passed · tests failed (AssertionError)`, or `not checked`.
    fn checks_line(&self, program: &str) -> String {
        match self.result.validations.get(program) {
            None => "not checked".into(),
            Some(checks) => checks
                .iter()
                .map(|c| {
                    if c.detail.is_empty() {
                        format!("{} {}", c.check.name(), c.verdict)
                    } else {
                        format!("{} {} ({})", c.check.name(), c.verdict, c.detail)
                    }
                })
                .collect::<Vec<_>>()
                .join(" · "),
        }
    }

    /// ✓ when every check of the program passed, ✗ when one failed, nothing when unchecked.
    fn mark(&self, program: &str) -> &'static str {
        match self.result.validations.get(program) {
            Some(c) if c.iter().all(|v| v.passed()) => "✓",
            Some(_) => "✗",
            None => "",
        }
    }

    fn answer(&self) -> Option<String> {
        self.result
            .decision()
            .and_then(|d| d.answer.as_ref())
            .map(|a| a.canonical().to_string())
    }

    fn rounds(&self) -> Vec<Vec<Option<String>>> {
        round_answers(self.result)
    }

    /// Calls a fork reused from its parent instead of asking (0 when the run is no fork).
    fn reused(&self) -> usize {
        self.result
            .records
            .iter()
            .filter(|r| r.reused_from.is_some())
            .count()
    }

    /// The agents whose calls failed, each with its distinct errors.
    pub fn failures(&self) -> Vec<moot_store::AgentFailures> {
        moot_store::agent_failures(&self.result.records)
    }

    /// (agents with an answer in the last round, agents): whose answers the decision read.
    fn decided_by(&self) -> (usize, usize) {
        let t = &self.result.transcript;
        let last = t.rounds().saturating_sub(1);
        let answered = (0..t.agents())
            .filter(|&a| t.effective(last, a).and_then(Outcome::answer).is_some())
            .count();
        (answered, t.agents())
    }

    /// One line per agent whose calls failed, for standard error: `agent gammadown failed in
    /// rounds 0 and 1 (2 calls): connection refused (4 tries, each failing so); decided by 2
    /// of 3 agents`. None when every call got a response.
    pub fn failure_lines(&self) -> Vec<String> {
        let failures = self.failures();
        let (answered, agents) = self.decided_by();
        let decided = if self.answer().is_some() {
            format!("decided by {answered} of {agents} agents")
        } else {
            format!("no answer decided; {answered} of {agents} agents answered the last round")
        };
        failures
            .iter()
            .map(|f| format!("{}; {decided}", f.describe()))
            .collect()
    }

    pub fn json(&self) -> serde_json::Value {
        let usage = self.result.usage();
        let (answered, agents) = self.decided_by();
        json!({
            "run_id": self.result.run_id,
            "answer": self.answer(),
            "rule": self.result.chosen,
            "protocol": self.protocol,
            "rounds": self.rounds(),
            "calls": self.result.records.iter().filter(|r| !r.skipped).count(),
            "calls_skipped": self.result.records.iter().filter(|r| r.skipped).count(),
            "calls_reused": self.reused(),
            "calls_per_round": self.result.calls_per_round().iter().map(|(r, n)| json!({"round": r, "calls": n})).collect::<Vec<_>>(),
            "ncomm": self.result.ncomm(),
            "tokens": {
                "input": usage.input_tokens,
                "output": usage.output_tokens,
                "input_processed": usage.processed_input_tokens,
                "input_cached": usage.cached_input_tokens(),
                "input_cache_writes": usage.cache_write_input_tokens,
            },
            "wall_ms": self.wall.as_millis() as u64,
            "validations": self.result.validations,
            "failures": self.failures(),
            "decided_by": {"agents": answered, "of": agents},
        })
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        let code = self.is_code();
        let programs = if code { self.programs() } else { vec![] };
        let name = |p: &str| match programs.iter().position(|g| g.holds(p)) {
            Some(i) => format!("P{}{}", i + 1, self.mark(p)),
            None => p.to_string(),
        };
        match self.answer() {
            Some(program) if code => out.push_str(&format!(
                "Answer: {} ({})\n```\n{program}\n```\n",
                name(&program),
                self.checks_line(&program)
            )),
            answer => out.push_str(&format!(
                "Answer: {}\n",
                answer.unwrap_or_else(|| "(no answer)".into())
            )),
        }
        let challenges = self
            .result
            .transcript
            .extra_calls()
            .filter(|(k, _)| matches!(k.slot, Slot::Challenge(_)))
            .count();
        let shape = if challenges > 0 {
            plural(challenges, "challenge")
        } else {
            plural(
                self.result.transcript.rounds().saturating_sub(1),
                "debate round",
            )
        };
        out.push_str(&format!(
            "  chosen by {} ({}, {}, {shape})\n",
            self.result.chosen,
            self.protocol,
            plural(self.agent_ids.len(), "agent"),
        ));
        for (r, answers) in self.rounds().iter().enumerate() {
            let cells: Vec<String> = answers
                .iter()
                .enumerate()
                .map(|(a, x)| {
                    let id = self.agent_ids.get(a).map_or("?", String::as_str);
                    let value = match (x, self.result.transcript.get(r, a)) {
                        (Some(v), _) => name(v),
                        // No response: the failure lines (standard error) say why.
                        (None, Some(Outcome::Missing { .. })) => "(failed)".into(),
                        // A deciding agent before its turn, or a debate the protocol skipped.
                        (None, Some(Outcome::Skipped { .. })) => "—".into(),
                        (None, _) => "(no answer)".into(),
                    };
                    format!("{id} {value}")
                })
                .collect();
            out.push_str(&format!("Round {r}: {}\n", cells.join(" · ")));
        }
        for (i, group) in programs.iter().enumerate() {
            let p = &group.shown;
            let first = p.lines().next().unwrap_or("");
            out.push_str(&format!(
                "  P{}: {first} … — {}\n",
                i + 1,
                self.checks_line(p)
            ));
        }
        for d in &self.result.decisions {
            if d.rule != self.result.chosen {
                let a = d
                    .answer
                    .as_ref()
                    .map_or("(no answer)".to_string(), |a| name(a.canonical()));
                out.push_str(&format!("  {} would say: {a}\n", d.rule));
            }
        }
        let u = self.result.usage();
        let processed = u.prompt_cache_note();
        let made = self.result.records.iter().filter(|r| !r.skipped).count();
        let skipped = self.result.records.len() - made;
        let skipped = if skipped > 0 {
            format!(" ({skipped} skipped)")
        } else {
            String::new()
        };
        let reused = match self.reused() {
            0 => String::new(),
            n => format!(" ({n} reused from the parent at 0 tokens)"),
        };
        out.push_str(&format!(
            "Tokens: {} in{processed}, {} out · {}{skipped}{reused} · NComm {} · {:.1} s\n",
            u.input_tokens,
            u.output_tokens,
            plural(made, "call"),
            self.result.ncomm(),
            self.wall.as_secs_f64()
        ));
        if let Some(t) = &self.throughput {
            out.push_str(&format!("{t}\n"));
        }
        if self.lasting {
            out.push_str(&format!(
                "Run: {}  (moot show {})\n",
                self.result.run_id, self.result.run_id
            ));
        } else {
            out.push_str(&format!(
                "Run: {}  (in memory: gone when moot exits)\n",
                self.result.run_id
            ));
        }
        out
    }
}
