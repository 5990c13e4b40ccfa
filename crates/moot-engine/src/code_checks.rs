//! Checking a debate's code answers in the sandbox: every distinct program once (all agents and
//! rounds that gave it share the result), its syntax always, and its tests when the debate has
//! them. Checks already in the store (a resumed run) are not run again.

use futures::stream::{self, StreamExt, TryStreamExt};
use moot_core::answer::AnswerKind;
use moot_core::debate::{DebateSpec, Transcript};
use moot_core::validation::{CheckKind, Validation, Validations, Verdict};
use moot_sandbox::Sandbox;
use moot_store::{Store, ValidationRecord};

use crate::error::EngineError;
use crate::ids::timestamp;

/// Sandbox runs at once: each one is a Python process, and this machine class has two cores.
const CONCURRENT_CHECKS: usize = 2;

/// The checks of every code answer in `transcript`, run where the store does not have them yet
/// and recorded as they finish. Not a code debate: no checks.
pub async fn check_code_answers(
    sandbox: &Sandbox,
    spec: &DebateSpec,
    transcript: &Transcript,
    run_id: &str,
    store: &dyn Store,
) -> Result<Validations, EngineError> {
    if spec.kind != AnswerKind::Code {
        return Ok(Validations::new());
    }
    let mut validations = stored_validations(store, run_id).await?;
    // Programs the rules count as one (formattings of one program) are checked once, as the
    // text that shows them; every text of the group gets its checks.
    let mut given = Vec::new();
    if let Some(trajectory) = transcript.trajectory() {
        for round in 0..trajectory.rounds() {
            given.extend(trajectory.round(round).filter_map(|c| c.answer().cloned()));
        }
    }
    let groups = moot_core::answer_groups::group_answers(&given);
    let programs: Vec<String> = groups.iter().map(|g| g.shown.clone()).collect();
    let wanted = |have: Option<&Vec<Validation>>| {
        let has = |k| have.is_some_and(|v| v.iter().any(|c| c.check == k));
        let syntax_ok =
            have.is_some_and(|v| v.iter().any(|c| c.check == CheckKind::Syntax && c.passed()));
        !has(CheckKind::Syntax) || (spec.tests.is_some() && syntax_ok && !has(CheckKind::Tests))
    };
    let todo: Vec<String> = programs
        .into_iter()
        .filter(|p| wanted(validations.get(p)))
        .collect();
    let done: Vec<(String, Vec<Validation>)> = stream::iter(todo)
        .map(|program| {
            let known = validations.get(&program).cloned().unwrap_or_default();
            async move {
                let checks = check_one(sandbox, spec, &program, known).await?;
                for v in &checks {
                    store
                        .record_validation(&to_record(run_id, &program, v))
                        .await?;
                }
                Ok::<_, EngineError>((program, checks))
            }
        })
        .buffer_unordered(CONCURRENT_CHECKS)
        .try_collect()
        .await?;
    for (program, checks) in done {
        validations.insert(program, checks);
    }
    for group in &groups {
        if let Some(checks) = validations.get(&group.shown).cloned() {
            for text in group.texts.iter().filter(|t| **t != group.shown) {
                validations.insert(text.clone(), checks.clone());
            }
        }
    }
    Ok(validations)
}

/// The checks of one program: `known` ones kept, the missing ones run. Tests run only on a
/// program that compiles.
async fn check_one(
    sandbox: &Sandbox,
    spec: &DebateSpec,
    program: &str,
    known: Vec<Validation>,
) -> Result<Vec<Validation>, EngineError> {
    let sandbox_error = |e: moot_sandbox::SandboxError| EngineError::Sandbox(e.to_string());
    let mut checks = known;
    let syntax = match checks.iter().find(|c| c.check == CheckKind::Syntax) {
        Some(s) => s.clone(),
        None => {
            let s = checked(sandbox.check_syntax(program))
                .await
                .map_err(sandbox_error)?;
            checks.push(s.clone());
            s
        }
    };
    if let Some(tests) = &spec.tests {
        if syntax.passed() && !checks.iter().any(|c| c.check == CheckKind::Tests) {
            let run = checked(sandbox.run_tests(program, tests))
                .await
                .map_err(sandbox_error)?;
            checks.push(run);
        }
    }
    checks.sort_by_key(|c| c.check);
    Ok(checks)
}

/// A sandbox check in its span, which records its verdict.
async fn checked(
    check: impl std::future::Future<Output = Result<Validation, moot_sandbox::SandboxError>>,
) -> Result<Validation, moot_sandbox::SandboxError> {
    use tracing::Instrument;
    let span = crate::spans::sandbox_check();
    let result = check.instrument(span.clone()).await;
    let verdict = match &result {
        Ok(v) => serde_json::to_value(v.verdict)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        Err(_) => "error".to_string(),
    };
    span.record(moot_core::semconv::MOOT_SANDBOX_VERDICT, verdict.as_str());
    result
}

/// One program's tests check before and after [`regrade_run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regraded {
    /// The program (the answer's canonical text).
    pub program: String,
    /// Its stored tests check, if it had one.
    pub before: Option<Validation>,
    pub after: Validation,
}

impl Regraded {
    /// Whether the verdict changed (a program checked for the first time counts as changed).
    pub fn changed(&self) -> bool {
        self.before.as_ref().map(|b| b.verdict) != Some(self.after.verdict)
    }
}

/// Runs the tests check of every stored program of `run_id` that compiled again, with
/// `tests` and the sandbox as it is now, and records each new verdict in place of the old one:
/// for stores graded by an older grader (one a program could forge). Programs are checked two
/// at a time, in the order of their text.
pub async fn regrade_run(
    sandbox: &Sandbox,
    tests: &moot_core::validation::TestSuite,
    run_id: &str,
    store: &dyn Store,
) -> Result<Vec<Regraded>, EngineError> {
    let validations = stored_validations(store, run_id).await?;
    let compiled: Vec<(String, Option<Validation>)> = validations
        .iter()
        .filter(|(_, checks)| {
            checks
                .iter()
                .any(|c| c.check == CheckKind::Syntax && c.passed())
        })
        .map(|(program, checks)| {
            let before = checks.iter().find(|c| c.check == CheckKind::Tests).cloned();
            (program.clone(), before)
        })
        .collect();
    let sandbox_error = |e: moot_sandbox::SandboxError| EngineError::Sandbox(e.to_string());
    stream::iter(compiled)
        .map(|(program, before)| async move {
            let after = sandbox
                .run_tests(&program, tests)
                .await
                .map_err(sandbox_error)?;
            store
                .record_validation(&to_record(run_id, &program, &after))
                .await?;
            Ok::<_, EngineError>(Regraded {
                program,
                before,
                after,
            })
        })
        .buffered(CONCURRENT_CHECKS)
        .try_collect()
        .await
}

fn to_record(run_id: &str, program: &str, v: &Validation) -> ValidationRecord {
    ValidationRecord {
        run_id: run_id.to_string(),
        answer: program.to_string(),
        check: v.check.name().to_string(),
        verdict: verdict_name(v.verdict).to_string(),
        detail: v.detail.clone(),
        elapsed_ms: v.elapsed_ms,
        checked_at: timestamp(),
    }
}

/// A stored check; `None` for a row written by a newer moot with names this one does not know.
fn from_record(r: &ValidationRecord) -> Option<Validation> {
    let check = [CheckKind::Syntax, CheckKind::Tests]
        .into_iter()
        .find(|k| k.name() == r.check)?;
    let verdict = Verdict::ALL
        .iter()
        .find(|v| verdict_name(**v) == r.verdict)
        .copied()?;
    Some(Validation {
        check,
        verdict,
        detail: r.detail.clone(),
        elapsed_ms: r.elapsed_ms,
    })
}

/// A run's stored checks, by program.
pub async fn stored_validations(
    store: &dyn Store,
    run_id: &str,
) -> Result<Validations, EngineError> {
    Ok(validations_from(&store.validations(run_id).await?))
}

/// Stored checks by program (rows a newer moot wrote with names this one does not know are
/// left out).
pub fn validations_from(records: &[ValidationRecord]) -> Validations {
    let mut out = Validations::new();
    for record in records {
        if let Some(v) = from_record(record) {
            out.entry(record.answer.clone()).or_default().push(v);
        }
    }
    out
}

/// The stored name of a verdict (its serde name).
fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Passed => "passed",
        Verdict::Failed => "failed",
        Verdict::SyntaxError => "syntax-error",
        Verdict::TimedOut => "timed-out",
        Verdict::Killed => "killed",
        Verdict::OutputLimit => "output-limit",
        Verdict::MemoryLimit => "memory-limit",
        Verdict::ExitedEarly => "exited-early",
        Verdict::Unsupported => "unsupported",
        Verdict::NoTests => "no-tests",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_round_trip() {
        for verdict in Verdict::ALL {
            for check in [CheckKind::Syntax, CheckKind::Tests] {
                let v = Validation {
                    check,
                    verdict,
                    detail: "d".into(),
                    elapsed_ms: 3,
                };
                let r = to_record("r", "p", &v);
                // The stored name is the serde name, so JSON and the store agree.
                assert_eq!(
                    serde_json::to_value(verdict).unwrap(),
                    serde_json::json!(r.verdict)
                );
                assert_eq!(from_record(&r), Some(v));
            }
        }
        let mut unknown = to_record(
            "r",
            "p",
            &Validation {
                check: CheckKind::Tests,
                verdict: Verdict::Passed,
                detail: String::new(),
                elapsed_ms: 0,
            },
        );
        unknown.verdict = "from-the-future".into();
        assert_eq!(from_record(&unknown), None);
    }
}
