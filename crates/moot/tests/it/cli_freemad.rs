//! freemad compatibility through the binary: `config check` and `config convert` on freemad's
//! own example configurations, its reply contract, and importing its transcripts.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{script, Env};
use moot_store::{Access, RunFilter, SqliteStore, Store};

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../moot-config/tests/fixtures/freemad")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Stand-ins for the programs freemad's examples allow (`claude`, `codex`) in a folder of
/// `env`, and the `PATH` that finds them first, so that the check that they exist passes.
fn fake_programs(env: &Env) -> String {
    std::fs::create_dir_all(env.dir.path().join("bin")).unwrap();
    for name in ["bin/claude", "bin/codex"] {
        script(env, name, "#!/bin/sh\necho 'SOLUTION: 1'\n");
    }
    format!(
        "{}:{}",
        env.dir.path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `moot ARGS` with `path_var` as its `PATH`.
fn moot_with_path(env: &Env, path_var: &str, args: &[&str]) -> std::process::Output {
    env.moot()
        .env("PATH", path_var)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn freemad_examples_are_checked_as_they_are() {
    let env = Env::new();
    let path_var = fake_programs(&env);
    for name in ["multi_agent.yaml", "multi_agent.json"] {
        let file = env.write(name, &fixture(name));
        let out = moot_with_path(
            &env,
            &path_var,
            &["config", "check", file.to_str().unwrap()],
        );
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
    let env = Env::new();
    let path_var = fake_programs(&env);
    let text =
        fixture("multi_agent.yaml").replacen("save_transcript: true", "save_transcript: false", 1);
    let file = env.write("fm.yaml", &text);
    let out = moot_with_path(
        &env,
        &path_var,
        &["config", "convert", file.to_str().unwrap()],
    );
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
    let converted = env.write("fm.toml", &toml);
    let again = moot_with_path(
        &env,
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
fn freemads_topologies_convert_to_moot_toml_that_reads_back() {
    let env = Env::new();
    let path_var = fake_programs(&env);
    let team = "agents:\n  - {id: a, type: claude_code, cli_command: claude}\n  - {id: b, type: claude_code, cli_command: claude}\n  - {id: c, type: openai_codex, cli_command: codex}\n  - {id: d, type: openai_codex, cli_command: codex, enabled: false}\noutput:\n  save_transcript: false\n";
    for (topology, lines) in [
        ("{type: ring}", &["topology = \"next-on-ring\""][..]),
        (
            "{type: k_reviewers, k: 3, seed: 99}",
            &["topology = \"freemad-k-reviewers\"", "k = 3", "seed = 99"][..],
        ),
        (
            "{type: star, hub_agent: b}",
            &["topology = \"star\"", "hub = 2"][..],
        ),
        (
            "{type: star, hub_agent: d}",
            &["topology = \"groups\"", "groups = 3"][..],
        ),
    ] {
        let file = env.write("fm.yaml", &format!("{team}topology: {topology}\n"));
        let convert = |path: &Path| {
            let out = moot_with_path(
                &env,
                &path_var,
                &["config", "convert", path.to_str().unwrap()],
            );
            assert!(
                out.status.success(),
                "{topology}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let toml = convert(&file);
        for line in lines {
            assert!(
                toml.lines().any(|l| l == *line),
                "{topology}: no {line} in\n{toml}"
            );
        }
        assert!(
            !toml.contains("topology.type"),
            "{topology}: a note says it differs:\n{toml}"
        );
        let converted = env.write("fm.toml", &toml);
        let body = |t: &str| {
            t.lines()
                .skip_while(|l| l.starts_with('#') || l.is_empty())
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(body(&convert(&converted)), body(&toml), "{topology}");
        let checked = moot_with_path(
            &env,
            &path_var,
            &["config", "check", converted.to_str().unwrap()],
        );
        assert!(
            checked.status.success(),
            "{topology}: {}",
            String::from_utf8_lossy(&checked.stderr)
        );
    }
}

#[test]
fn a_bad_freemad_file_names_the_key_and_the_file() {
    let env = Env::new();
    let path_var = fake_programs(&env);
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
        let file = env.write("bad.yaml", text);
        let out = moot_with_path(&env, &path_var, &["config", "check", file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&file.display().to_string()) && err.contains(key), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn replies_under_freemads_contract_are_read_and_shown_by_decision() {
    let env = Env::new();
    let config = env.write(
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
    let result = env.json(&[
        "ask",
        "What is 6 times 7?",
        "--json",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(result["answer"], "42", "{result}");
    let run = result["run_id"].as_str().unwrap();
    let text = env.stdout(&["show", run]);
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
    let env = Env::new();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/freemad/transcript-team4.json");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let folder = env.dir.path().join("transcripts");
    std::fs::create_dir_all(&folder).unwrap();
    env.write("transcripts/team4.json", &text);
    // freemad's Markdown form holds the same JSON.
    env.write(
        "transcripts/team4-md.md",
        &format!("# FREE-MAD Run x\n\nFinal answer id: y\nWinning agents: a0, a1\n\n## Transcript (JSON)\n```json\n{text}\n```"),
    );
    let said = env.stdout(&["import", folder.to_str().unwrap()]);
    assert!(
        said.contains("team4.json: imported as fm-team4.json\n")
            && said.contains("team4-md.md: imported as fm-team4-md.md\n"),
        "{said}"
    );
    assert!(env
        .stdout(&["import", folder.to_str().unwrap()])
        .contains("team4.json: already imported as fm-team4.json\n"));
    for run in ["fm-team4.json", "fm-team4-md.md"] {
        let shown = env.stdout(&["show", run]);
        assert!(shown.contains("answer: **42**"), "{shown}");
        assert!(
            shown.contains("freemad contract: decision REVISE, answer changed"),
            "{shown}"
        );
        // freemad normalises FREE-MAD's scores: 42 (45 over two holders) beats 41 (52.5 over
        // three). The imported run carries that setting; --normalize false overrides it.
        let decide = |extra: &[&str]| {
            let mut args = vec!["decide", "--run", run, "--rule", "free-mad"];
            args.extend_from_slice(extra);
            env.json(&args)
        };
        assert_eq!(decide(&[])["answer"], "42");
        assert_eq!(decide(&["--normalize"])["answer"], "42");
        assert_eq!(decide(&["--normalize", "false"])["answer"], "41");
        let again = env.json(&["show", run, "--format", "freemad"]);
        let original: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(again["final_answer_id"], original["final_answer_id"]);
        assert_eq!(again["raw_scores"], original["raw_scores"]);
    }
}

/// `moot decide --run` re-decides with the settings the run was decided with (here custom
/// FREE-MAD weights and a normalisation), so it reproduces the stored decision; flags override.
#[test]
fn decide_run_uses_the_runs_own_settings() {
    let env = Env::new();
    let config = env.write(
        "w.toml",
        "[debate]\nweights = [1.0, 2.0, 3.0, 4.0]\nnormalize = true\n",
    );
    let asked = env.json(&[
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
    ]);
    let run = asked["run_id"].as_str().unwrap();
    let shown = env.json(&["show", run, "--format", "json"]);
    let stored = shown["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["rule"] == "free-mad")
        .unwrap()
        .clone();
    let again = env.json(&["decide", "--run", run, "--rule", "free-mad"]);
    assert_eq!(again["scores"], stored["scores"], "{again}\n{stored}");
    let defaults = env.json(&[
        "decide",
        "--run",
        run,
        "--rule",
        "free-mad",
        "--weights",
        "20,25,30,20",
        "--normalize",
        "false",
    ]);
    assert_ne!(defaults["scores"], stored["scores"]);
}

/// Issue 31 item 15: a freemad configuration's agents get moot's whole environment, as under
/// freemad (an agent CLI authenticated by a variable works); moot's own configurations keep it
/// clear. `config convert` writes the policy it used, `moot health` says which applies, and the
/// value of a variable named like a secret never reaches the store.
#[test]
fn freemad_configurations_pass_the_environment_and_moots_keep_it_clear() {
    let env = Env::new();
    let dir = env.dir.path().display().to_string();
    // The agent notes what it was given and echoes the token back, as a careless CLI might.
    let agent = script(
        &env,
        "agent.sh",
        &format!(
            "#!/bin/sh\ncat > /dev/null\nprintf '%s' \"$AGENT_LOGIN_TOKEN\" > \"$(mktemp {dir}/seen-XXXXXX)\"\necho \"SOLUTION: 408\"\necho \"REASONING: logged in as $AGENT_LOGIN_TOKEN\"\n"
        ),
    );
    let a = agent.display().to_string();
    let freemad = env.write(
        "freemad.yaml",
        &format!(
            "agents:\n  - id: one\n    type: claude_code\n    cli_command: \"{a}\"\n    timeout: 30\n  - id: two\n    type: openai_codex\n    cli_command: \"{a}\"\n    timeout: 30\nsecurity:\n  cli_allowed_commands:\n    - \"{a}\"\nbudget:\n  max_total_time_sec: 60\n"
        ),
    );
    let secret = "tok-3f9a61c2e8b74d05";
    let seen = || -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(env.dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("seen-")
            {
                found.push(std::fs::read_to_string(&path).unwrap());
                std::fs::remove_file(&path).unwrap();
            }
        }
        found
    };
    let ask = |config: &Path| {
        // freemad files save transcripts under ./transcripts: in the test's folder, not the
        // crate's.
        let out = env
            .moot()
            .current_dir(env.dir.path())
            .env("AGENT_LOGIN_TOKEN", secret)
            .args(["ask", "What is 17 * 24?", "--json", "--rounds", "0"])
            .args(["--config", config.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["run_id"].as_str().unwrap().to_string()
    };
    let run = ask(&freemad);
    assert_eq!(
        seen(),
        vec![secret.to_string(); 2],
        "both agents inherited it"
    );
    let shown = env.stdout(&["show", &run, "--format", "json"]);
    assert!(shown.contains("logged in as [REDACTED]"), "{shown}");
    assert!(!shown.contains(secret), "the secret was stored");
    let health = env
        .moot()
        .env("AGENT_LOGIN_TOKEN", secret)
        .args(["health", "--config", freemad.to_str().unwrap()])
        .output()
        .unwrap();
    let health = String::from_utf8_lossy(&health.stdout);
    assert_eq!(seen(), vec![secret.to_string(); 2], "probed with it too");
    assert!(
        health.contains("environment: inherit: cli agents get moot's whole environment"),
        "{health}"
    );
    // Converted, the policy is written down; a moot configuration without it is clear.
    let converted = env.stdout(&["config", "convert", freemad.to_str().unwrap()]);
    assert!(converted.contains("cli_env = \"inherit\""), "{converted}");
    let cleared = env.write(
        "cleared.toml",
        &converted.replace("cli_env = \"inherit\"", "cli_env = \"clear\""),
    );
    ask(&cleared);
    assert_eq!(seen(), vec![String::new(); 2], "neither agent got it");
    let health = env.stdout(&["health", "--config", cleared.to_str().unwrap()]);
    assert!(
        health.contains("environment: clear: cli agents get PATH, HOME, LANG only"),
        "{health}"
    );
}

/// freemad's transcript of a four-agent debate (the fixture), as its file holds it.
fn team4() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/freemad/transcript-team4.json");
    std::fs::read_to_string(&path).unwrap()
}

/// The folder `name` in `env`, made empty.
fn folder(env: &Env, name: &str) -> PathBuf {
    let dir = env.dir.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What `moot import ARGS` did: its exit code, stdout and stderr. It is given two minutes: an
/// import that blocked on a FIFO would otherwise never end (and is then killed, no code).
fn import(env: &Env, args: &[&str]) -> (Option<i32>, String, String) {
    let out = env
        .moot()
        .arg("import")
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The lines of `text` that mention `needle`.
fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

/// The ids of the runs in `env`'s store, sorted.
fn stored_runs(env: &Env) -> Vec<String> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = SqliteStore::open_with(&env.store(), Access::Read)
            .await
            .unwrap();
        let mut ids: Vec<String> = store
            .list_runs(&RunFilter::newest(1000))
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        store.close().await;
        ids.sort();
        ids
    })
}

/// Stores `imported`'s run and calls in `env`'s store as they are.
fn put_run(env: &Env, imported: moot_freemad::import::Imported) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = SqliteStore::open(&env.store()).await.unwrap();
        store.create_run(&imported.run).await.unwrap();
        for call in &imported.calls {
            store.record_call(call).await.unwrap();
        }
        store.close().await;
    });
}

/// Issue 32 item 6: a 200 MB transcript was read whole (10 GB of memory). A file larger than
/// `--max-file-bytes` is reported, naming the flag and the value that reads it, and the others
/// are imported; the command fails at the end. Raising the cap imports it.
#[test]
fn a_file_past_the_size_cap_is_reported_naming_the_flag_and_the_rest_imported() {
    let env = Env::new();
    let dir = folder(&env, "in");
    std::fs::write(dir.join("team4.json"), team4()).unwrap();
    // Still a transcript: JSON ending in spaces.
    let big = format!("{}{}", team4(), " ".repeat(30_000));
    std::fs::write(dir.join("big.json"), &big).unwrap();
    let (code, out, err) = import(&env, &[dir.to_str().unwrap(), "--max-file-bytes", "20000"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        out.contains("team4.json: imported as fm-team4.json\n"),
        "{out}"
    );
    let said = lines_with(&err, "big.json");
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].ends_with(&format!(
            "big.json: not imported: {} bytes, more than the 20000 bytes moot import reads from a file (--max-file-bytes {} or more reads it)",
            big.len(),
            big.len()
        )),
        "{err}"
    );
    assert!(
        err.contains("1 of 2 files not imported (each is named above)"),
        "{err}"
    );
    assert_eq!(stored_runs(&env), ["fm-team4.json"]);
    let raised = big.len().to_string();
    let (code, out, err) = import(&env, &[dir.to_str().unwrap(), "--max-file-bytes", &raised]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("big.json: imported as fm-big.json\n"), "{out}");
    assert!(
        out.contains("team4.json: already imported as fm-team4.json\n"),
        "{out}"
    );
}

/// Issue 32 item 6: a FIFO hung the import forever and a link to `/dev/zero` was read until
/// memory ran out. Only regular files are opened, and a folder's links only to a file inside
/// it; each other entry is reported on its line and the rest imported.
#[test]
fn fifos_devices_and_links_out_of_the_folder_are_never_read() {
    use std::os::unix::fs::symlink;
    let env = Env::new();
    let dir = folder(&env, "in");
    std::fs::write(dir.join("team4.json"), team4()).unwrap();
    let fifo = dir.join("fifo.json");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the file.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
    symlink("/dev/zero", dir.join("zero.json")).unwrap();
    let outside = env.write("outside.json", &team4());
    symlink(&outside, dir.join("out.json")).unwrap();
    // A link to a file in the folder is read.
    symlink("team4.json", dir.join("in-link.json")).unwrap();
    let (code, out, err) = import(&env, &[dir.to_str().unwrap()]);
    assert_eq!(code, Some(2), "stdout: {out}\nstderr: {err}");
    assert!(
        out.contains("team4.json: imported as fm-team4.json\n")
            && out.contains("in-link.json: imported as fm-in-link.json\n"),
        "{out}"
    );
    let one = |file: &str, why: &str| {
        let said = lines_with(&err, file);
        assert_eq!(said.len(), 1, "{err}");
        assert!(
            said[0].contains(&format!("{file}: not imported: {why}")),
            "{err}"
        );
    };
    one("fifo.json", "a FIFO, not a regular file");
    one(
        "zero.json",
        "a symbolic link to /dev/zero, outside the folder: not read",
    );
    one(
        "out.json",
        &format!(
            "a symbolic link to {}, outside the folder: not read",
            outside.canonicalize().unwrap().display()
        ),
    );
    assert!(
        err.contains("3 of 5 files not imported (each is named above)"),
        "{err}"
    );
    assert_eq!(stored_runs(&env), ["fm-in-link.json", "fm-team4.json"]);
    // Named on their own, a device and a FIFO are not opened either.
    for (file, why) in [
        ("/dev/zero", "a device, not a regular file"),
        (fifo.to_str().unwrap(), "a FIFO, not a regular file"),
    ] {
        let (code, _, err) = import(&env, &[file]);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("{file}: not imported: {why}")),
            "{err}"
        );
    }
}

/// Issue 32 item 6: one file that was not UTF-8 stopped the import of the whole folder.
#[test]
fn a_file_that_is_not_utf8_is_reported_and_the_rest_imported() {
    let env = Env::new();
    let dir = folder(&env, "in");
    std::fs::write(dir.join("a-latin1.json"), b"{\"x\": \"caf\xe9\"}").unwrap();
    std::fs::write(dir.join("team4.json"), team4()).unwrap();
    let (code, out, err) = import(&env, &[dir.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        out.contains("team4.json: imported as fm-team4.json\n"),
        "{out}"
    );
    assert!(
        err.contains("a-latin1.json: not imported: the file is not valid UTF-8: byte 0xE9 at byte offset 10 (line 1, column 11)"),
        "{err}"
    );
    assert_eq!(stored_runs(&env), ["fm-team4.json"]);
}

/// Issue 32 item 6: `a.b.json` and `a-b.json` both became `fm-a-b`, so the second was taken
/// for the first. Each file's run id keeps its whole name; importing again finds each.
#[test]
fn distinct_files_get_distinct_runs_and_importing_again_finds_each() {
    let env = Env::new();
    let dir = folder(&env, "in");
    for name in ["a.b.json", "a-b.json", "a b.json", "a~b.json", "a-b.md"] {
        std::fs::write(dir.join(name), team4()).unwrap();
    }
    let expected = [
        ("a b.json", "fm-a~20b.json"),
        ("a-b.json", "fm-a-b.json"),
        ("a-b.md", "fm-a-b.md"),
        ("a.b.json", "fm-a.b.json"),
        ("a~b.json", "fm-a~7eb.json"),
    ];
    let (code, out, err) = import(&env, &[dir.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    for (name, id) in expected {
        assert!(
            out.contains(&format!("/{name}: imported as {id}\n")),
            "{out}"
        );
    }
    let mut ids: Vec<&str> = expected.iter().map(|(_, id)| *id).collect();
    ids.sort();
    assert_eq!(stored_runs(&env), ids);
    let (code, out, err) = import(&env, &[dir.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    for (name, id) in expected {
        assert!(
            out.contains(&format!("/{name}: already imported as {id}\n")),
            "{out}"
        );
    }
    assert_eq!(stored_runs(&env), ids);
}

/// A store an older moot imported into holds `fm-<stem>` runs: the file that run was made
/// from is found under it, not imported twice, while another file whose name mapped to the
/// same old id (`x.b.json` to `fm-x-b`) is imported under its own.
#[test]
fn a_file_imported_under_its_earlier_id_is_found_and_another_of_that_id_imported() {
    let env = Env::new();
    let doc: serde_json::Value = serde_json::from_str(&team4()).unwrap();
    let earlier = moot_freemad::import::import("fm-x-b", "/old/place/x-b.json", &doc, "t").unwrap();
    put_run(&env, earlier);
    let dir = folder(&env, "in");
    std::fs::write(dir.join("x-b.json"), team4()).unwrap();
    std::fs::write(dir.join("x.b.json"), team4()).unwrap();
    let (code, out, err) = import(&env, &[dir.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("x-b.json: already imported as fm-x-b\n")
            && out.contains("x.b.json: imported as fm-x.b.json\n"),
        "{out}"
    );
    assert_eq!(stored_runs(&env), ["fm-x-b", "fm-x.b.json"]);
}

/// Issue 32 item 6: a file that failed while it was being stored left a `done` run with part
/// of its records, which every later import called "already imported". A file is stored in
/// one transaction: one the store refuses (here a trigger refuses its decisions, written after
/// the run and its calls) leaves nothing, the other files are imported, and importing again
/// once the store takes it stores it whole.
#[test]
fn a_file_the_store_refuses_leaves_no_trace_and_importing_again_stores_it_whole() {
    let env = Env::new();
    let dir = folder(&env, "in");
    std::fs::write(dir.join("bad.json"), team4()).unwrap();
    std::fs::write(dir.join("good.json"), team4()).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async { SqliteStore::open(&env.store()).await.unwrap().close().await });
    common::sqlite_exec(
        &env.store(),
        "CREATE TRIGGER refuse BEFORE INSERT ON decisions WHEN NEW.run_id LIKE 'fm-bad%'
         BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
    );
    let (code, out, err) = import(&env, &[dir.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        out.contains("good.json: imported as fm-good.json\n"),
        "{out}"
    );
    let said = lines_with(&err, "bad.json");
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].contains("bad.json: not imported: the store refused it: ")
            && said[0].contains("refused by the test"),
        "{err}"
    );
    assert_eq!(stored_runs(&env), ["fm-good.json"], "no trace of bad.json");
    common::sqlite_exec(&env.store(), "DROP TRIGGER refuse;");
    let (code, out, err) = import(&env, &[dir.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("bad.json: imported as fm-bad.json\n"), "{out}");
    let shown = |run: &str| env.json(&["show", run, "--format", "json"]);
    let (bad, good) = (shown("fm-bad.json"), shown("fm-good.json"));
    for part in ["calls", "decisions"] {
        let n = bad[part].as_array().map_or(0, Vec::len);
        assert!(n > 0, "{part}: {bad}");
        assert_eq!(n, good[part].as_array().map_or(0, Vec::len), "{part}");
    }
    assert_eq!(bad["run"]["status"], "done");
}

/// Issue 32 item 10: a token count up to `u64::MAX` was imported, stored as -1 and shown as 0.
/// The file is refused, naming it, the turn and the field, and nothing of it is stored.
#[test]
fn an_imported_token_count_no_call_spends_is_refused_naming_the_file_and_field() {
    let env = Env::new();
    let dir = folder(&env, "in");
    let mut doc: serde_json::Value = serde_json::from_str(&team4()).unwrap();
    doc["transcript"][1]["agents"]["a1"]["response"]["metadata"]["tokens"]["prompt"] =
        u64::MAX.into();
    std::fs::write(dir.join("huge.json"), doc.to_string()).unwrap();
    let (code, _, err) = import(&env, &[dir.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    let said = lines_with(&err, "huge.json: ");
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].contains("round 1, agent \"a1\": response.metadata.tokens.prompt is 18446744073709551615, not a token count (a whole number up to 4294967296)"),
        "{err}"
    );
    assert!(stored_runs(&env).is_empty());
}

/// Issue 32 item 10: totals of token counts read from a store stop at `u64::MAX` instead of
/// wrapping (or, as here in a debug build, panicking): three calls of `i64::MAX` each.
#[test]
fn show_totals_token_counts_past_u64_max_without_wrapping() {
    let env = Env::new();
    let doc: serde_json::Value = serde_json::from_str(&team4()).unwrap();
    let mut imported = moot_freemad::import::import("fm-x", "x.json", &doc, "t").unwrap();
    for call in &mut imported.calls {
        call.input_tokens = i64::MAX as u64;
    }
    put_run(&env, imported);
    let shown = env.stdout(&["show", "fm-x"]);
    assert!(shown.contains(&format!("{} input / ", u64::MAX)), "{shown}");
}

/// Issue 32 item 6 on PostgreSQL, which refuses a NUL in text: the file whose turn holds one
/// left a run with part of its calls there. Nothing of it is stored; the others are.
#[test]
#[ignore = "needs PostgreSQL; scripts/test runs it"]
fn a_file_postgresql_refuses_leaves_no_trace_there() {
    let env = Env::new();
    let pg = moot_pgtest::PgServer::shared().fresh_database();
    let dir = folder(&env, "in");
    let mut doc: serde_json::Value = serde_json::from_str(&team4()).unwrap();
    doc["transcript"][1]["agents"]["a2"]["response"]["reasoning"] = "nul \u{0} here".into();
    std::fs::write(dir.join("nul.json"), doc.to_string()).unwrap();
    std::fs::write(dir.join("team4.json"), team4()).unwrap();
    let out = env
        .moot()
        .env("MOOT_STORE", &pg)
        .args(["import", dir.to_str().unwrap()])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let (said, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        said.contains("team4.json: imported as fm-team4.json\n"),
        "{said}"
    );
    assert!(
        err.contains("nul.json: not imported: the store refused it: "),
        "{err}"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = moot_store::PostgresStore::open_with(&pg, Access::Read)
            .await
            .unwrap();
        assert!(matches!(
            store.run("fm-nul.json").await,
            Err(moot_store::StoreError::RunNotFound(_))
        ));
        assert_eq!(store.calls("fm-nul.json").await.unwrap(), vec![]);
        let runs = store.list_runs(&RunFilter::newest(10)).await.unwrap();
        assert_eq!(runs.len(), 1, "only team4.json's");
        store.close().await;
    });
}
