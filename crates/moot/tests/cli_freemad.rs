//! `moot config check` and `moot config convert` on freemad's own example configurations.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../moot-config/tests/fixtures/freemad")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A folder with stand-ins for the programs freemad's examples allow (`claude`, `codex`), so
/// that the check that they exist passes.
fn fake_programs(dir: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["claude", "codex"] {
        let path = bin.join(name);
        std::fs::write(&path, "#!/bin/sh\necho 'SOLUTION: 1'\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn moot(path_var: &str, args: &[&str]) -> std::process::Output {
    Command::cargo_bin("moot")
        .unwrap()
        .env("PATH", path_var)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn freemad_examples_are_checked_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let path_var = fake_programs(dir.path());
    for name in ["multi_agent.yaml", "multi_agent.json"] {
        let file = write(dir.path(), name, &fixture(name));
        let out = moot(&path_var, &["config", "check", file.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("ok (5 agents, protocol free-mad-n"), "{said}");
    }
}

#[test]
fn a_converted_freemad_file_reads_back_as_the_same_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let path_var = fake_programs(dir.path());
    let text =
        fixture("multi_agent.yaml").replacen("save_transcript: true", "save_transcript: false", 1);
    let file = write(dir.path(), "fm.yaml", &text);
    let out = moot(&path_var, &["config", "convert", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let toml = String::from_utf8(out.stdout).unwrap();
    assert!(
        toml.starts_with("# Converted from the freemad configuration"),
        "{toml}"
    );
    assert!(
        toml.contains("# - deadlines: moot's deadlines end a round"),
        "{toml}"
    );
    let converted = write(dir.path(), "fm.toml", &toml);
    let again = moot(
        &path_var,
        &["config", "convert", converted.to_str().unwrap()],
    );
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let body = |t: &str| {
        t.lines()
            .skip_while(|l| l.starts_with('#') || l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        body(&String::from_utf8(again.stdout).unwrap()),
        body(&toml),
        "moot's TOML of the freemad file converts to itself"
    );
}

#[test]
fn a_bad_freemad_file_names_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path_var = fake_programs(dir.path());
    for (text, key) in [
        (
            "agents:\n  - {id: a, type: gemini, cli_command: claude}\n  - {id: b, type: claude_code, cli_command: claude}\n",
            "agents[0].type = \"gemini\" is not a freemad agent type (expected one of claude_code, openai_codex)",
        ),
        (
            "agents:\n  - {id: a, type: claude_code, cli_command: claude}\n  - {id: b, type: claude_code, cli_command: claude}\ntopology:\n  k: \"1\"\n",
            "topology.k",
        ),
        (
            "agents:\n  - {id: a, type: claude_code, cli_command: claude}\n  - {id: b, type: claude_code, cli_command: claude}\nsecurity:\n  cli_use_shell: true\n",
            "security.cli_use_shell must be false",
        ),
    ] {
        let file = write(dir.path(), "bad.yaml", text);
        let out = moot(&path_var, &["config", "check", file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&file.display().to_string()) && err.contains(key), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn replies_under_freemads_contract_are_read_and_shown_by_decision() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "contract.toml",
        r#"[debate]
answer = "numeric"
[[agents]]
id = "keeper"
backend = "scripted"
contract = "freemad"
responses = ["SOLUTION: 42\nREASONING: r", "DECISION: KEEP\nREASONING: fine"]
[[agents]]
id = "reviser"
backend = "scripted"
contract = "freemad"
responses = ["SOLUTION: 41\nREASONING: r", "DECISION: REVISE\nREVISED_SOLUTION: 42\nREASONING: Peer #1"]
"#,
    );
    let store = dir.path().join("m.db");
    let out = Command::cargo_bin("moot")
        .unwrap()
        .args(["ask", "What is 6 times 7?", "--json", "--store"])
        .arg(&store)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["answer"], "42", "{result}");
    let run = result["run_id"].as_str().unwrap();
    let shown = Command::cargo_bin("moot")
        .unwrap()
        .args(["show", run, "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let text = String::from_utf8(shown.stdout).unwrap();
    assert!(
        text.contains("freemad contract: decision KEEP, answer unchanged"),
        "{text}"
    );
    assert!(
        text.contains("freemad contract: decision REVISE, answer changed"),
        "{text}"
    );
}

#[test]
fn freemad_transcripts_are_imported_and_re_decided() {
    let dir = tempfile::tempdir().unwrap();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/freemad/transcript-team4.json");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let folder = dir.path().join("transcripts");
    std::fs::create_dir_all(&folder).unwrap();
    write(&folder, "team4.json", &text);
    // freemad's Markdown form holds the same JSON.
    write(
        &folder,
        "team4-md.md",
        &format!("# FREE-MAD Run x\n\nFinal answer id: y\nWinning agents: a0, a1\n\n## Transcript (JSON)\n```json\n{text}\n```"),
    );
    let store = dir.path().join("m.db");
    let moot = |args: &[&str]| {
        let out = Command::cargo_bin("moot")
            .unwrap()
            .args(args)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let said = moot(&["import", folder.to_str().unwrap()]);
    assert!(
        said.contains("imported as fm-team4\n") && said.contains("imported as fm-team4-md"),
        "{said}"
    );
    assert!(moot(&["import", folder.to_str().unwrap()]).contains("already imported as fm-team4"));
    for run in ["fm-team4", "fm-team4-md"] {
        let shown = moot(&["show", run]);
        assert!(shown.contains("answer: **42**"), "{shown}");
        assert!(
            shown.contains("freemad contract: decision REVISE, answer changed"),
            "{shown}"
        );
        // freemad normalises FREE-MAD's scores: 42 (45 over two holders) beats 41 (52.5 over three).
        let decided: serde_json::Value = serde_json::from_str(&moot(&[
            "decide",
            "--run",
            run,
            "--rule",
            "free-mad",
            "--normalize",
        ]))
        .unwrap();
        assert_eq!(decided["answer"], "42", "{decided}");
        let agents = moot(&["show", run, "--format", "freemad"]);
        let again: serde_json::Value = serde_json::from_str(&agents).unwrap();
        let original: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(again["final_answer_id"], original["final_answer_id"]);
        assert_eq!(again["raw_scores"], original["raw_scores"]);
    }
}

/// `moot decide --run` re-decides with the settings the run was decided with (here custom
/// FREE-MAD weights and a normalisation), so it reproduces the stored decision; flags override.
#[test]
fn decide_run_uses_the_runs_own_settings() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "w.toml",
        "[debate]\nweights = [1.0, 2.0, 3.0, 4.0]\nnormalize = true\n",
    );
    let store = dir.path().join("w.db");
    let moot = |args: &[&str]| -> String {
        let out = Command::cargo_bin("moot")
            .unwrap()
            .args(args)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let asked: serde_json::Value = serde_json::from_str(&moot(&[
        "ask",
        "What is 6 times 7?",
        "--sim",
        "--gold",
        "42",
        "--agents",
        "4",
        "--rounds",
        "2",
        "--json",
        "--config",
        config.to_str().unwrap(),
    ]))
    .unwrap();
    let run = asked["run_id"].as_str().unwrap();
    let shown: serde_json::Value =
        serde_json::from_str(&moot(&["show", run, "--format", "json"])).unwrap();
    let stored = shown["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["rule"] == "free-mad")
        .unwrap()
        .clone();
    let again: serde_json::Value =
        serde_json::from_str(&moot(&["decide", "--run", run, "--rule", "free-mad"])).unwrap();
    assert_eq!(again["scores"], stored["scores"], "{again}\n{stored}");
    let defaults: serde_json::Value = serde_json::from_str(&moot(&[
        "decide",
        "--run",
        run,
        "--rule",
        "free-mad",
        "--weights",
        "20,25,30,20",
        "--normalize",
        "false",
    ]))
    .unwrap();
    assert_ne!(defaults["scores"], stored["scores"]);
}
