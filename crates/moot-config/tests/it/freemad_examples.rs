//! freemad's own example configurations (tests/fixtures/freemad, see its NOTICE), read by
//! moot's freemad dialect.

use std::path::{Path, PathBuf};

use moot_config::dialect::{from_json, from_yaml};
use moot_config::{Config, Dialect};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/freemad")
        .join(name)
}

fn text(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

/// The example with transcript files turned off.
fn without_transcripts(text: &str) -> String {
    text.replacen("save_transcript: true", "save_transcript: false", 1)
        .replacen("\"save_transcript\": true", "\"save_transcript\": false", 1)
}

fn argv(config: &Config, id: &str, mode: moot_core::chat::CallMode) -> Vec<String> {
    let agent = config.agents.iter().find(|a| a.id == id).unwrap();
    let cli = config.cli_config(agent).expect("a cli agent");
    std::iter::once(cli.command.clone())
        .chain(cli.arguments(mode))
        .collect()
}

#[test]
fn the_examples_are_recognised_as_they_are() {
    for name in ["mock_agents.yaml", "multi_agent.yaml", "multi_agent.json"] {
        let (config, dialect) = if name.ends_with(".json") {
            from_json(&text(name))
        } else {
            from_yaml(&text(name))
        }
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(matches!(dialect, Dialect::Freemad(_)), "{name}");
        assert_eq!(config.debate.protocol.as_str(), "free-mad-n");
        assert_eq!(
            config.output.transcript_dir.as_deref(),
            Some(Path::new("transcripts")),
            "{name}"
        );
    }
}

#[test]
fn the_multi_agent_example_maps_as_freemad_runs_it() {
    use moot_core::chat::CallMode::{Critique, Generate};
    let (yaml, _) = from_yaml(&without_transcripts(&text("multi_agent.yaml"))).unwrap();
    let (json, _) = from_json(&without_transcripts(&text("multi_agent.json"))).unwrap();
    assert_eq!(
        yaml, json,
        "the YAML and JSON examples are the same configuration"
    );
    let ids: Vec<&str> = yaml.agents.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "claude-sonnet",
            "claude-opus",
            "gpt-5-high",
            "gpt-5-codex",
            "gpt-5-codex-mini"
        ],
        "claude-haiku is disabled"
    );
    let codex = [
        "codex",
        "exec",
        "--skip-git-repo-check",
        "--cd",
        "/PATH/TO/DIR",
        "--enable",
        "web_search_request",
        "--model",
        "gpt-5.1",
        "-",
    ];
    assert_eq!(argv(&yaml, "gpt-5-high", Generate), codex);
    assert_eq!(
        argv(&yaml, "gpt-5-high", Critique),
        codex,
        "no cli_mode_arg"
    );
    assert_eq!(
        argv(&yaml, "claude-opus", Generate),
        ["claude", "--add-dir", "/PATH/TO/DIR", "--model", "opus"]
    );
    assert_eq!(
        (yaml.debate.soft_timeout_ms, yaml.debate.min_agents),
        (15_000_000, Some(3))
    );
    assert_eq!(yaml.debate.seed, 427);
    assert_eq!(yaml.budget.max_agent_time_sec, Some(12_000.0));
    assert_eq!(yaml.security.cli_allowed_commands, ["claude", "codex"]);
}

#[test]
fn the_mock_example_passes_the_mode_word() {
    use moot_core::chat::CallMode::{Critique, Generate};
    let (c, _) = from_yaml(&without_transcripts(&text("mock_agents.yaml"))).unwrap();
    assert_eq!(
        argv(&c, "mock-claude", Generate),
        ["python", "bin/mock_agent.py", "generate"]
    );
    assert_eq!(
        argv(&c, "mock-codex", Critique),
        ["python", "bin/mock_agent.py", "critique"]
    );
    // freemad's call limit is the largest of timeout (60), cli_timeout_ms (60 s) and
    // max_agent_time_sec (5).
    assert_eq!(c.budget.max_agent_time_sec, Some(60.0));
}

#[test]
fn a_file_is_read_by_its_dialect() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fm.yaml");
    std::fs::write(&path, without_transcripts(&text("mock_agents.yaml"))).unwrap();
    // The allow-listed `python` must exist for the checks that follow reading.
    let result = moot_config::load_with_dialect(&path);
    match result {
        Ok((_, Dialect::Freemad(notes))) => assert!(!notes.is_empty()),
        Ok((_, Dialect::Moot)) => panic!("read as moot's own format"),
        Err(e) => assert!(
            e.to_string().contains("python")
                && e.to_string().starts_with(&path.display().to_string()),
            "{e}"
        ),
    }
}
