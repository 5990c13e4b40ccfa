//! moot against freemad 2.0.0 itself, on the same configuration: each agent must receive
//! exactly the arguments freemad gives it.
//!
//! Ignored by default: the first run installs freemad==2.0.0 from PyPI into a venv under the
//! target directory (shared by later runs). `scripts/test` runs it.

use crate::common;

use std::collections::BTreeSet;

use common::run_ok;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const FREEMAD: &str = "freemad==2.0.0";

/// The `freemad` program of a venv holding freemad 2.0.0 (see [`common::venv_with`]).
fn freemad() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| common::venv_with(FREEMAD).join("bin/freemad"))
}

/// The question every run here is asked.
const QUESTION: &str = "What is 6 times 7?";

/// freemad 2.0.0 on `config`, run in `cwd` with one critique round.
fn run_freemad(cwd: &Path, config: &Path) -> std::process::Output {
    run_ok(
        Command::new(freemad())
            .current_dir(cwd)
            .arg(QUESTION)
            .arg("--config")
            .arg(config)
            .args(["--rounds", "1"]),
        "freemad",
    )
}

/// `moot ask --json` on `config`, run in `cwd` with one debate round and its store at `store`:
/// the result it prints.
fn run_moot(cwd: &Path, config: &Path, store: &Path) -> serde_json::Value {
    let asked = run_ok(
        Command::new(assert_cmd::cargo::cargo_bin("moot"))
            .current_dir(cwd)
            .args(["ask", QUESTION, "--rounds", "1", "--json", "--store"])
            .arg(store)
            .arg("--config")
            .arg(config),
        "moot ask",
    );
    serde_json::from_slice(&asked.stdout).unwrap()
}

/// freemad's `agents:` entries `a0`, `a1`, … for `personas` of the persona agent.
fn persona_team(agent: &Path, personas: &[&str]) -> String {
    let a = agent.display();
    personas
        .iter()
        .enumerate()
        .map(|(i, p)| {
            format!("  - {{id: a{i}, type: claude_code, cli_command: \"sh {a}\", cli_args: {{persona: {p}}}}}\n")
        })
        .collect()
}

/// Writes a freemad configuration of `agents` (entries of [`persona_team`]) whose commands run
/// through `sh`, with the YAML sections `extra`; returns its path.
fn team_config(path: &Path, agents: &str, extra: &str) -> PathBuf {
    std::fs::write(
        path,
        format!("agents:\n{agents}security:\n  cli_allowed_commands: [\"sh\"]\n{extra}"),
    )
    .unwrap();
    path.to_path_buf()
}

/// A fake agent that writes its arguments (separated by the unit separator) to a file of its
/// own in the folder `log` (agents run at once, so one shared file could interleave their
/// lines), and answers in freemad's contract whatever it is asked. It is run as
/// `sh SCRIPT …`, so it logs what follows the script's path; the program and script words
/// themselves are the same in both configurations but for the folder, and the dialect's unit
/// tests check them.
fn fake_agent(dir: &Path, log: &Path) -> PathBuf {
    std::fs::create_dir_all(log).unwrap();
    executable(
        &dir.join("agent.sh"),
        &format!(
            concat!(
                "#!/bin/sh\n",
                "out=$(mktemp '{}/call.XXXXXX')\n",
                "for a in \"$@\"; do printf '%s\\037' \"$a\"; done > \"$out\"\n",
                "cat > /dev/null\n",
                "printf 'DECISION: KEEP\\nSOLUTION: 42\\nREASONING: r\\n'\n",
            ),
            log.display()
        ),
    )
}

/// Writes `text` to `path` as an executable script.
fn executable(path: &Path, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_path_buf()
}

/// The distinct argument lists the fake agent logged in the folder `log`.
fn argv_seen(log: &Path) -> BTreeSet<Vec<String>> {
    std::fs::read_dir(log)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| std::fs::read_to_string(e.path()).ok())
                .map(|line| {
                    line.split('\u{1f}')
                        .filter(|a| !a.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
#[ignore = "installs freemad 2.0.0 from PyPI into a venv; scripts/test runs it"]
fn every_agent_gets_the_arguments_freemad_gives_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (freemad_log, moot_log) = (d.join("freemad-calls"), d.join("moot-calls"));
    let config = |log: &Path, sub: &str| {
        let agent = fake_agent(&d.join(sub), log);
        let a = agent.display();
        format!(
            r#"agents:
  - id: ex1
    type: claude_code
    cli_command: "sh {a}"
    cli_mode_arg: true
    cli_args: {{persona: alpha}}
  - id: ex2
    type: openai_codex
    cli_command: "sh {a} 'two words' #x"
    cli_flags: ["--verbose", "-q"]
    cli_args: {{zeta: 1, --persona: beta, model: "m 1", flag: true, none: null, ratio: 0.5}}
    cli_positional: ["-"]
  - id: ex3
    type: OpenAI_Codex
    cli_command: "sh {a} exec"
    cli_mode_arg: true
    cli_flags: ["--skip-git-repo-check"]
    cli_args: {{--model: gpt, --config: "x='high'", persona: gamma}}
    cli_positional: ["-"]
security:
  cli_allowed_commands: ["sh"]
output:
  save_transcript: false
"#
        )
    };
    for sub in ["f", "m"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    let freemad_config = d.join("f/fm.yaml");
    std::fs::write(&freemad_config, config(&freemad_log, "f")).unwrap();
    let moot_config = d.join("m/fm.yaml");
    std::fs::write(&moot_config, config(&moot_log, "m")).unwrap();

    run_freemad(&d.join("f"), &freemad_config);
    let result = run_moot(&d.join("m"), &moot_config, &d.join("m/moot.db"));
    // The agents answer `SOLUTION: 42`, then KEEP: read under freemad's contract, 42 wins.
    assert_eq!(result["answer"], "42", "{result}");
    let from_freemad = argv_seen(&freemad_log);
    let from_moot = argv_seen(&moot_log);
    // Generation and critique for ex1 and ex3 (the mode word differs), one list for ex2.
    assert_eq!(from_freemad.len(), 5, "{from_freemad:#?}");
    assert_eq!(from_moot, from_freemad);
}

/// The start of every persona agent's script: the shell, and `$persona` from `--persona`.
macro_rules! persona_head {
    () => {
        concat!(
            "#!/bin/sh\n",
            "persona=''\n",
            "while [ $# -gt 0 ]; do [ \"$1\" = --persona ] && persona=\"$2\"; shift; done\n",
        )
    };
}

/// A fake agent whose replies depend on its `--persona` and on whether it is asked for a first
/// answer or a critique (a critique prompt names DECISION, in freemad's words and in moot's).
fn persona_agent(dir: &Path) -> PathBuf {
    executable(
        &dir.join("persona.sh"),
        concat!(
            persona_head!(),
            "case \"$(cat)\" in *DECISION*) mode=critique;; *) mode=generate;; esac\n",
            "case \"$persona:$mode\" in\n",
            "  alpha:generate) printf 'SOLUTION: 42\\nREASONING: r\\n';;\n",
            "  alpha:critique) printf 'DECISION: KEEP\\nREASONING: mine holds\\n';;\n",
            "  beta:generate) printf 'SOLUTION: 41\\nREASONING: r\\n';;\n",
            "  beta:critique) printf 'DECISION: REVISE\\nREVISED_SOLUTION: 42\\nREASONING: Peer #1\\n';;\n",
            "  gamma:generate) printf 'SOLUTION: 41\\nREASONING: r\\n';;\n",
            "  gamma:critique) printf 'DECISION: KEEP\\nREASONING: r\\n';;\n",
            "  delta:generate) printf 'SOLUTION: 40\\nREASONING: r\\n';;\n",
            "  delta:critique) printf 'DECISION: REVISE\\nREVISED_SOLUTION: 41\\nREASONING: Peer #2\\n';;\n",
            "esac\n",
        ),
    )
}

/// The agents holding moot's answer at the end of the run `run` in `store`.
fn moot_winners(store: &Path, run: &str, answer: &str) -> BTreeSet<String> {
    let shown = run_ok(
        Command::new(assert_cmd::cargo::cargo_bin("moot"))
            .args(["show", run, "--format", "json", "--store"])
            .arg(store),
        "moot show",
    );
    let doc: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let calls = doc["calls"].as_array().expect("calls");
    let last = calls
        .iter()
        .filter_map(|c| c["round"].as_u64())
        .max()
        .unwrap_or(0);
    calls
        .iter()
        .filter(|c| c["round"].as_u64() == Some(last) && c["slot"] == "answer")
        .filter(|c| c["answer"] == answer)
        .filter_map(|c| c["agent_id"].as_str().map(str::to_string))
        .collect()
}

#[test]
#[ignore = "installs freemad 2.0.0 from PyPI into a venv; scripts/test runs it"]
fn deterministic_agents_reach_freemads_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let agent = persona_agent(d);
    // Two teams. In the first a revision carries 42. In the second a fourth agent moves to 41:
    // the last round ties 2-2, and 41's raw score is the higher (52.5 against 45), but
    // freemad's normalisation divides by the agents that ever held an answer (three for 41, two
    // for 42), so 42 wins: moot must get there too.
    let teams: [(&[&str], &str, &[&str]); 2] = [
        (&["alpha", "beta", "gamma"], "42", &["a0", "a1"]),
        (&["alpha", "beta", "gamma", "delta"], "42", &["a0", "a1"]),
    ];
    for (personas, expected, winners) in teams {
        let agents = persona_team(&agent, personas);
        let config = team_config(
            &d.join(format!("team{}.yaml", personas.len())),
            &agents,
            "output:\n  save_transcript: false\n",
        );
        let freemad_out = run_freemad(d, &config);
        let said = String::from_utf8_lossy(&freemad_out.stdout);
        let freemad_winners: BTreeSet<String> = said
            .lines()
            .find_map(|l| l.trim().strip_prefix("- Winning agents:"))
            .unwrap_or_else(|| panic!("freemad printed no winners: {said}"))
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let store = d.join(format!("team{}.db", personas.len()));
        let result = run_moot(d, &config, &store);
        assert_eq!(result["answer"], expected, "{result}");
        let run = result["run_id"].as_str().unwrap();
        let expected_winners: BTreeSet<String> = winners.iter().map(|s| s.to_string()).collect();
        assert_eq!(freemad_winners, expected_winners, "freemad: {said}");
        assert_eq!(moot_winners(&store, run, expected), freemad_winners);
    }
}

/// The one transcript file a run wrote into `dir`.
fn transcript_in(dir: &Path) -> serde_json::Value {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap()
}

fn close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() < 1e-9,
        _ => a == b,
    }
}

/// Score maps equal to within rounding.
fn same_scores(a: &serde_json::Value, b: &serde_json::Value, what: &str) {
    let (a, b) = (a.as_object().unwrap(), b.as_object().unwrap());
    assert_eq!(
        a.keys().collect::<BTreeSet<_>>(),
        b.keys().collect::<BTreeSet<_>>(),
        "{what}"
    );
    for (k, v) in a {
        assert!(close(v, &b[k]), "{what} {k}: {v} against {}", b[k]);
    }
}

fn string_set(v: &serde_json::Value) -> BTreeSet<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
#[ignore = "installs freemad 2.0.0 from PyPI into a venv; scripts/test runs it"]
fn the_transcript_file_has_freemads_shape_and_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let agent = persona_agent(d);
    let agents = persona_team(&agent, &["alpha", "beta", "gamma", "delta"]);
    let config = team_config(&d.join("team.yaml"), &agents, "");
    for sub in ["f", "m"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    run_freemad(&d.join("f"), &config);
    run_moot(&d.join("m"), &config, &d.join("m.db"));
    let fm = transcript_in(&d.join("f/transcripts"));
    let ours = transcript_in(&d.join("m/transcripts"));
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&ours), keys(&fm), "top-level keys, in order");
    for key in ["final_answer_id", "final_solution", "early_stop_reason"] {
        assert_eq!(ours[key], fm[key], "{key}");
    }
    same_scores(&ours["scores"], &fm["scores"], "scores");
    same_scores(&ours["raw_scores"], &fm["raw_scores"], "raw_scores");
    for key in ["winning_agents", "origin_agents"] {
        assert_eq!(string_set(&ours[key]), string_set(&fm[key]), "{key}");
    }
    for (round, holders) in fm["holders_history"].as_object().unwrap() {
        assert_eq!(
            string_set(holders),
            string_set(&ours["holders_history"][round]),
            "holders of round {round}"
        );
    }
    let rounds = fm["transcript"].as_array().unwrap();
    assert_eq!(rounds.len(), ours["transcript"].as_array().unwrap().len());
    for (r, theirs) in rounds.iter().enumerate() {
        let mine = &ours["transcript"][r];
        assert_eq!(keys(mine), keys(theirs), "round {r} keys");
        assert_eq!(mine["type"], theirs["type"]);
        same_scores(
            &mine["scores"],
            &theirs["scores"],
            &format!("round {r} scores"),
        );
        for (id, entry) in theirs["agents"].as_object().unwrap() {
            let m = &mine["agents"][id];
            assert_eq!(keys(m), keys(entry), "round {r} {id}");
            for field in ["solution", "decision", "changed", "answer_id"] {
                assert_eq!(
                    m["response"][field], entry["response"][field],
                    "round {r} {id} {field}"
                );
            }
            assert_eq!(
                string_set(&m["peers_assigned"]),
                string_set(&entry["peers_assigned"]),
                "round {r} {id} peers"
            );
        }
    }
    assert_eq!(ours["validation"], fm["validation"]);
    same_scores(
        &ours["validator_confidence"],
        &fm["validator_confidence"],
        "validator_confidence",
    );
    for key in [
        "num_rounds",
        "num_agents",
        "opinion_changes",
        "agreement_rate",
        "score_min",
        "score_max",
        "score_mean",
        "validation_pass_rate",
    ] {
        assert!(
            close(&ours["metrics"][key], &fm["metrics"][key]),
            "metrics.{key}: {} against {}",
            ours["metrics"][key],
            fm["metrics"][key]
        );
    }
    // Explainers: the same events per answer, whatever the order of round 0's completions.
    let events = |v: &serde_json::Value| -> BTreeSet<String> {
        v.as_object()
            .unwrap()
            .iter()
            .flat_map(|(id, list)| {
                list.as_array().unwrap().iter().map(move |e| {
                    format!(
                        "{id} {} {} {} {}",
                        e["round"], e["agent_id"], e["action"], e["deltas"]
                    )
                })
            })
            .collect()
    };
    assert_eq!(
        events(&ours["score_explainers"]),
        events(&fm["score_explainers"])
    );
}

/// A fake agent for the topology cases. Its `--persona` is `ROLE:VALUE`: it first answers
/// VALUE; in a critique, `follow` revises to the solution of `Peer #1`, `last` to that of the
/// last peer shown, and `keep` keeps (as does anyone whose pick is its own solution, or who is
/// shown no peer). So who reads whom, and in which order, decides the outcome.
fn topology_agent(dir: &Path) -> PathBuf {
    executable(
        &dir.join("topology.sh"),
        concat!(
            persona_head!(),
            "role=${persona%%:*}; value=${persona#*:}\n",
            "input=$(cat)\n",
            "case \"$input\" in *DECISION*) ;; *) printf 'SOLUTION: %s\\nREASONING: r\\n' \"$value\"; exit 0;; esac\n",
            "own=$(printf '%s\\n' \"$input\" | sed -n '/^Your prior solution:$/{n;p;q;}')\n",
            "case \"$role\" in\n",
            "  follow) pick=$(printf '%s\\n' \"$input\" | sed -n '/^Peer #1:$/{n;p;q;}');;\n",
            "  last) pick=$(printf '%s\\n' \"$input\" | sed -n '/^Peer #[0-9]*:$/{n;h;};${x;p;}');;\n",
            "  *) pick='';;\n",
            "esac\n",
            "if [ -n \"$pick\" ] && [ \"$pick\" != \"$own\" ]; then\n",
            "  printf 'DECISION: REVISE\\nREVISED_SOLUTION: %s\\nREASONING: a peer\\n' \"$pick\"\n",
            "else\n",
            "  printf 'DECISION: KEEP\\nREASONING: mine\\n'\n",
            "fi\n",
        ),
    )
}

/// Each agent's `peers_assigned` in each critique round of a freemad transcript, in order.
fn peers_by_round(transcript: &serde_json::Value) -> Vec<Vec<(String, Vec<String>)>> {
    transcript["transcript"]
        .as_array()
        .expect("rounds")
        .iter()
        .skip(1)
        .map(|round| {
            let mut agents: Vec<(String, Vec<String>)> = round["agents"]
                .as_object()
                .expect("agents")
                .iter()
                .map(|(id, entry)| {
                    let peers = entry["peers_assigned"]
                        .as_array()
                        .expect("peers_assigned")
                        .iter()
                        .map(|p| p.as_str().unwrap_or_default().to_string())
                        .collect();
                    (id.clone(), peers)
                })
                .collect();
            agents.sort();
            agents
        })
        .collect()
}

/// freemad and moot on one team of [`topology_agent`]s under `topology` (freemad's YAML): the
/// same final solution (`expected`), winners (`winners`, which the personas are chosen to make
/// depend on the graph), topology info and peers per agent, in freemad's order.
fn same_outcome_under(topology: &str, personas: &[&str], expected: &str, winners: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let agent = topology_agent(d);
    let agents = persona_team(&agent, personas);
    let config = team_config(
        &d.join("team.yaml"),
        &agents,
        &format!("topology:\n{topology}"),
    );
    for sub in ["f", "m"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    run_freemad(&d.join("f"), &config);
    let result = run_moot(&d.join("m"), &config, &d.join("m.db"));
    let fm = transcript_in(&d.join("f/transcripts"));
    let ours = transcript_in(&d.join("m/transcripts"));
    let winners: BTreeSet<String> = winners.iter().map(|s| s.to_string()).collect();
    assert_eq!(fm["final_solution"], expected, "freemad under {topology}");
    assert_eq!(
        string_set(&fm["winning_agents"]),
        winners,
        "freemad under {topology}"
    );
    assert_eq!(
        result["answer"], expected,
        "moot under {topology}: {result}"
    );
    assert_eq!(ours["final_solution"], fm["final_solution"], "{topology}");
    assert_eq!(
        string_set(&ours["winning_agents"]),
        winners,
        "moot under {topology}"
    );
    let run = result["run_id"].as_str().unwrap();
    assert_eq!(moot_winners(&d.join("m.db"), run, expected), winners);
    same_scores(&ours["scores"], &fm["scores"], "scores");
    assert_eq!(
        peers_by_round(&ours),
        peers_by_round(&fm),
        "peers per agent under {topology}"
    );
    for (r, theirs) in fm["transcript"].as_array().unwrap().iter().enumerate() {
        assert_eq!(
            ours["transcript"][r]["topology_info"], theirs["topology_info"],
            "round {r} topology_info"
        );
    }
}

#[test]
#[ignore = "installs freemad 2.0.0 from PyPI into a venv; scripts/test runs it"]
fn rings_show_only_the_next_agent_as_in_freemad() {
    // Reading both neighbours, a1 would follow a0 to 1, and freemad's normalised score would
    // make 2 win.
    same_outcome_under(
        "  type: ring\n",
        &["keep:1", "follow:3", "keep:2", "follow:1"],
        "1",
        &["a0", "a3"],
    );
}

#[test]
#[ignore = "installs freemad 2.0.0 from PyPI into a venv; scripts/test runs it"]
fn k_reviewers_are_the_ones_freemad_draws() {
    // k = 1, seed 12345: a0:[a1] a1:[a2] a2:[a0] a3:[a0] a4:[a0]. All-to-all gives 4.
    same_outcome_under(
        "  type: k_reviewers\n  k: 1\n",
        &["keep:4", "last:2", "keep:2", "follow:3", "follow:1"],
        "2",
        &["a1", "a2"],
    );
    // k = 2, seed 0: a0:[a4,a1] a1:[a0,a3] a2:[a4,a0] a3:[a2,a4] a4:[a2,a3], in drawn order;
    // shown in agent order instead, 4 would win.
    same_outcome_under(
        "  type: k_reviewers\n  k: 2\n  seed: 0\n",
        &["follow:1", "last:3", "keep:4", "follow:3", "keep:1"],
        "1",
        &["a0", "a4"],
    );
}

#[test]
#[ignore = "installs freemad 2.0.0 from PyPI into a venv; scripts/test runs it"]
fn a_star_shows_the_hub_everyone_and_everyone_the_hub() {
    // All-to-all gives 3; a star around a0 gives 4.
    same_outcome_under(
        "  type: star\n  hub_agent: a2\n",
        &["last:4", "last:1", "last:1", "follow:3"],
        "1",
        &["a0", "a1", "a3"],
    );
}

/// A fake agent like [`persona_agent`] whose solutions are Python programs in fenced blocks.
fn code_agent(dir: &Path) -> PathBuf {
    let program =
        |n: u32| format!("SOLUTION:\\n```python\\ndef answer():\\n    return {n}\\n```\\n");
    executable(
        &dir.join("code.sh"),
        &format!(
            concat!(
                persona_head!(),
                "case \"$(cat)\" in *DECISION*) mode=critique;; *) mode=generate;; esac\n",
                "case \"$persona:$mode\" in\n",
                "  alpha:generate) printf '{a}REASONING: r\\n';;\n",
                "  alpha:critique) printf 'DECISION: KEEP\\nREASONING: mine holds\\n';;\n",
                "  beta:generate) printf '{b}REASONING: r\\n';;\n",
                "  beta:critique) printf 'DECISION: REVISE\\nREVISED_SOLUTION:\\n```python\\ndef answer():\\n    return 42\\n```\\nREASONING: Peer #1\\n';;\n",
                "  gamma:generate) printf '{b}REASONING: r\\n';;\n",
                "  gamma:critique) printf 'DECISION: KEEP\\nREASONING: r\\n';;\n",
                "esac\n",
            ),
            a = program(42),
            b = program(41),
        ),
    )
}

/// freemad's sandbox on: moot reads the solutions as code, checks each in its own sandbox, and
/// still reaches freemad's final solution and winners.
#[test]
#[ignore = "installs freemad 2.0.0 from PyPI into a venv; scripts/test runs it"]
fn code_solutions_with_the_sandbox_on_reach_freemads_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let agents = persona_team(&code_agent(d), &["alpha", "beta", "gamma"]);
    let config = team_config(
        &d.join("code.yaml"),
        &agents,
        "validation:\n  enable_sandbox: true\n  sandbox_timeout_ms: 3000\noutput:\n  save_transcript: true\n  transcript_dir: fm\n",
    );
    run_freemad(d, &config);
    let freemad_doc = transcript_in(&d.join("fm"));
    let store = d.join("code.db");
    // moot writes its own transcript into the same folder name; keep them apart.
    let moot_dir = d.join("moot");
    std::fs::create_dir_all(&moot_dir).unwrap();
    let result = run_moot(&moot_dir, &config, &store);
    let program = "def answer():\n    return 42";
    assert_eq!(result["answer"], program, "{result}");
    let freemad_final = freemad_doc["final_solution"].as_str().unwrap();
    assert_eq!(
        moot_core::answer::Answer::parse(
            moot_core::answer::AnswerKind::Code,
            freemad_final,
            &Default::default()
        )
        .map(|a| a.canonical().to_string())
        .as_deref(),
        Some(program),
        "freemad's final solution: {freemad_final:?}"
    );
    let freemad_winners = string_set(&freemad_doc["winning_agents"]);
    let run = result["run_id"].as_str().unwrap();
    assert_eq!(moot_winners(&store, run, program), freemad_winners);
    assert_eq!(
        freemad_winners,
        ["a0", "a1"].iter().map(|s| s.to_string()).collect()
    );
    // Both programs were compiled in moot's sandbox, and passed.
    let checks = result["validations"].as_object().unwrap();
    assert_eq!(checks.len(), 2, "{result}");
    assert!(checks
        .values()
        .all(|c| c[0]["check"] == "syntax" && c[0]["verdict"] == "passed"));
}
