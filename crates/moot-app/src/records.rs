//! Everything the store holds of one run — the run, its calls, its decisions and the sandbox's
//! checks — read at once, for `moot show` and anything else that shows a whole run.

use anyhow::Result;
use moot_store::{CallRecord, DecisionRecord, RunRecord, Store, StoreError, ValidationRecord};
use serde_json::{json, Value};

use crate::error::InputError;

/// A run record as JSON, with the status it is shown with (`interrupted` for a running run
/// whose process is gone) rather than the one stored.
pub fn run_json(run: &RunRecord) -> Value {
    let mut shown = serde_json::to_value(run).unwrap_or_default();
    shown["status"] = json!(run.shown_status());
    shown
}

/// One stored run with everything recorded about it.
#[derive(Debug, Clone)]
pub struct RunRecords {
    pub run: RunRecord,
    pub calls: Vec<CallRecord>,
    pub decisions: Vec<DecisionRecord>,
    pub validations: Vec<ValidationRecord>,
}

impl RunRecords {
    /// The run `run_id` as stored; a run the store does not hold is an [`InputError`] that says
    /// so.
    pub async fn load(store: &dyn Store, run_id: &str) -> Result<RunRecords> {
        let read = async {
            Ok::<_, StoreError>(RunRecords {
                run: store.run(run_id).await?,
                calls: store.calls(run_id).await?,
                decisions: store.decisions(run_id).await?,
                validations: store.validations(run_id).await?,
            })
        };
        read.await.map_err(|e| match e {
            StoreError::RunNotFound(_) => anyhow::Error::new(InputError(e.to_string())),
            other => other.into(),
        })
    }

    /// The run as one JSON document (`moot show --format json`): the run with the status it is
    /// shown with, its calls, each rule's decision and the checks.
    pub fn json(&self) -> Value {
        json!({
            "run": run_json(&self.run),
            "calls": self.calls,
            "decisions": self.decisions.iter().map(|d| &d.decision).collect::<Vec<_>>(),
            "validations": self.validations,
        })
    }

    /// The run as freemad's transcript JSON (`moot show --format freemad`).
    pub fn freemad(&self) -> Result<Value> {
        crate::transcript::json(
            &self.run,
            &self.calls,
            &moot_engine::validations_from(&self.validations),
        )
    }
}
