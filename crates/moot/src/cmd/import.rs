//! `moot import DIR`: freemad transcript files (JSON, or its Markdown form) into the store, as
//! runs that `moot show`, `moot decide --run` and `moot report` read like any other.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use moot_core::decision::{DecisionConfig, Evidence, FreeMadWeights};
use moot_store::{DecisionRecord, RunStatus, Store, StoreError};

use crate::input::{bad_input, InputError};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A folder of freemad transcripts (`transcript-*.json` or `.md`), or one file.
    path: PathBuf,
}

pub fn run(args: Args, store: &dyn Store, rt: &tokio::runtime::Runtime) -> Result<()> {
    let files = transcript_files(&args.path)?;
    if files.is_empty() {
        return bad_input(format!(
            "no freemad transcript (.json or .md) in {}",
            args.path.display()
        ));
    }
    for file in files {
        let id = run_id(&file);
        match rt.block_on(store.run(&id)) {
            Ok(_) => {
                outln!("{}: already imported as {id}", file.display());
                continue;
            }
            Err(StoreError::RunNotFound(_)) => {}
            Err(e) => return Err(e.into()),
        }
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let doc = moot_freemad::import::transcript_json(&text)
            .map_err(|e| InputError(format!("{}: {e}", file.display())))?;
        let source = file.display().to_string();
        let imported = moot_freemad::import::import(&id, &source, &doc, &moot_engine::timestamp())
            .map_err(|e| InputError(format!("{}: {e}", file.display())))?;
        rt.block_on(store_run(store, &imported))?;
        outln!("{}: imported as {id}", file.display());
    }
    Ok(())
}

/// The transcript files `path` names: itself, or the `.json` and `.md` files in it, sorted.
fn transcript_files(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path)
        .map_err(|e| InputError(format!("cannot read {}: {e}", path.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json" || x == "md"))
        .collect();
    files.sort();
    Ok(files)
}

/// The run id a file becomes: `fm-` and its name, so importing it again finds it.
fn run_id(file: &Path) -> String {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let safe: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("fm-{safe}")
}

/// Stores the run, its calls, every rule's decision (with freemad's scoring defaults), and
/// finishes it with freemad's final solution.
async fn store_run(store: &dyn Store, imported: &moot_freemad::import::Imported) -> Result<()> {
    let run = &imported.run;
    store.create_run(run).await?;
    for call in &imported.calls {
        store.record_call(call).await?;
    }
    let spec = serde_json::from_value(run.spec.clone()).context("the imported spec")?;
    let transcript = moot_engine::transcript_of(&spec, &imported.calls);
    let config = DecisionConfig {
        weights: FreeMadWeights::default(),
        normalize: true,
        ..DecisionConfig::default()
    };
    for d in moot_engine::decide_all_with(
        &transcript,
        &Evidence::default(),
        &Default::default(),
        &config,
    ) {
        store
            .record_decision(&DecisionRecord {
                run_id: run.id.clone(),
                rule: d.rule.to_string(),
                answer: d.answer.as_ref().map(|a| a.canonical().to_string()),
                decision: moot_engine::decision_json(&d),
                decided_at: run.created_at.clone(),
            })
            .await?;
    }
    let at = run
        .finished_at
        .clone()
        .unwrap_or_else(moot_engine::timestamp);
    store
        .finish_run(&run.id, RunStatus::Done, run.answer.as_deref(), &at)
        .await?;
    Ok(())
}
