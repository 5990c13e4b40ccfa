//! A stored run as freemad's transcript (`moot show RUN --format freemad`, and the file
//! `[output] transcript_dir` asks for after each `moot ask`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use moot_config::{Config, TranscriptFormat};
use moot_core::debate::DebateSpec;
use moot_core::protocol::TopologyName;
use moot_store::{CallRecord, RunRecord};
use serde_json::{json, Value};

/// The run's transcript in freemad's JSON shape.
pub fn json(
    run: &RunRecord,
    calls: &[CallRecord],
    validations: &moot_core::validation::Validations,
) -> Result<Value> {
    let spec: DebateSpec = serde_json::from_value(run.spec.clone())
        .with_context(|| format!("run {}: the stored debate spec is unreadable", run.id))?;
    // A run stored without a readable configuration is shown with the default settings.
    let config: Config = serde_json::from_value(run.config.clone()).unwrap_or_default();
    let (_, decision) = config.decision().unwrap_or_default();
    let view = moot_freemad::transcript::Run {
        record: run,
        spec: &spec,
        calls,
        decision: &decision,
        redact_patterns: &config.security.redact,
        topology_info: topology_info(&config, &spec),
        validations,
    };
    Ok(view.json())
}

/// freemad's `topology_info` for the run's topology.
fn topology_info(config: &Config, spec: &DebateSpec) -> Value {
    let o = &config.protocol;
    match o.topology {
        None | Some(TopologyName::AllToAll) => json!({"type": "all_to_all"}),
        // freemad's own ring shows one neighbour; moot's `ring` shows both.
        Some(TopologyName::NextOnRing) => json!({"type": "ring", "neighbors": 1}),
        Some(TopologyName::Ring) => json!({"type": "ring", "neighbors": 2}),
        Some(TopologyName::KReviewers | TopologyName::FreemadKReviewers) => {
            json!({"type": "k_reviewers", "k": o.k, "seed": config.debate.seed})
        }
        Some(TopologyName::Star) => {
            let hub = o
                .hub
                .and_then(|h| spec.agents.get(h.saturating_sub(1)))
                .map(|a| a.id.clone());
            json!({"type": "star", "hub": hub})
        }
        Some(TopologyName::Groups) => json!({"type": "groups", "groups": o.groups}),
    }
}

/// Writes the run's transcript into `dir` (created if missing) as
/// `transcript-<UTC time>-<run id>.json` or `.md`; returns the file's path.
pub fn write(
    dir: &Path,
    format: TranscriptFormat,
    run: &RunRecord,
    calls: &[CallRecord],
    validations: &moot_core::validation::Validations,
) -> Result<PathBuf> {
    let transcript = json(run, calls, validations)?;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the transcript folder {}", dir.display()))?;
    // YYYYmmdd-HHMMSS from the RFC 3339 time, as freemad names its files; the run id keeps two
    // runs of one second apart.
    let now = moot_engine::timestamp();
    let digits: String = now.chars().filter(char::is_ascii_digit).take(14).collect();
    let stamp = format!(
        "{}-{}",
        &digits[..8.min(digits.len())],
        &digits[8.min(digits.len())..]
    );
    let (text, ext) = match format {
        TranscriptFormat::Json => (
            serde_json::to_string_pretty(&transcript).context("writing the transcript")?,
            "json",
        ),
        TranscriptFormat::Markdown => (
            moot_freemad::transcript::markdown(&transcript, &stamp),
            "md",
        ),
    };
    let path = dir.join(format!("transcript-{stamp}-{}.{ext}", run.id));
    moot_files::write_output(&path, text)?;
    Ok(path)
}
