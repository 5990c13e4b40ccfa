//! Where things are (issue 58, item 3), through the binary: `moot list` lists the store's runs
//! and benchmarks, `moot store path` names the store in use, a name the store does not hold is
//! said with the store looked in and the names close to it, `moot serve` never creates a store,
//! and a run kept in memory is not offered to `moot show`.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::{self, Env};

/// One simulated debate under `protocol`, answered 408; its run id.
fn ask(env: &Env, protocol: &str) -> String {
    let v = env.json(&[
        "ask",
        "What is 17 * 24?",
        "--sim",
        "--gold",
        "408",
        "--answer",
        "numeric",
        "--rounds",
        "1",
        "--protocol",
        protocol,
        "--json",
    ]);
    v["run_id"].as_str().unwrap().to_string()
}

/// A store holding, oldest first: a `som` run, the benchmark `arith` (3 items under `som` and
/// `cot`), a `cot` run. Returns the two run ids.
fn stocked(env: &Env) -> (String, String) {
    let first = ask(env, "som");
    std::thread::sleep(Duration::from_millis(20));
    common::arith_bench(env, 3);
    std::thread::sleep(Duration::from_millis(20));
    let last = ask(env, "cot");
    (first, last)
}

/// `moot list ARGS --json`, as an array.
fn listed(env: &Env, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["list"];
    all.extend_from_slice(args);
    all.push("--json");
    env.raw_json(&all).as_array().expect("an array").clone()
}

fn names(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| {
            e.get("id")
                .or_else(|| e.get("name"))
                .and_then(Value::as_str)
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn list_shows_runs_and_each_benchmark_as_one_entry_newest_first_with_its_accuracy() {
    let env = Env::new();
    let (first, last) = stocked(&env);
    let entries = listed(&env, &[]);
    assert_eq!(
        names(&entries),
        [last.clone(), "arith".into(), first.clone()]
    );
    let run = &entries[0];
    assert_eq!(run["kind"], "run");
    assert_eq!(run["protocol"], "cot");
    assert_eq!(run["status"], "done");
    assert_eq!(run["answer"], "408");
    let bench = &entries[1];
    assert_eq!(bench["kind"], "benchmark");
    assert_eq!(bench["status"], "done");
    assert_eq!(bench["protocols"], serde_json::json!(["som", "cot"]));
    let accuracy = bench["accuracy"].as_array().unwrap();
    assert_eq!(accuracy.len(), 2, "{bench}");
    for (a, protocol) in accuracy.iter().zip(["som", "cot"]) {
        assert_eq!(a["protocol"], protocol);
        assert_eq!(a["total"], 3, "{a}");
        assert!(a["correct"].as_u64().unwrap() <= 3, "{a}");
    }
    // As text: one line per entry under a header, the benchmark's scores on its line.
    let text = env.stdout(&["list"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("ID / NAME"), "{text}");
    assert!(
        lines[1].starts_with(&last) && lines[1].contains("408"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("arith")
            && lines[2].contains("benchmark")
            && lines[2].contains("som ")
            && lines[2].contains("/3"),
        "{text}"
    );
    assert!(lines[3].starts_with(&first), "{text}");
}

#[test]
fn list_filters_by_kind_protocol_status_date_and_limit_and_lists_a_benchmarks_debates() {
    let env = Env::new();
    let (first, last) = stocked(&env);
    assert_eq!(
        names(&listed(&env, &["--runs"])),
        [last.clone(), first.clone()]
    );
    assert_eq!(names(&listed(&env, &["--benchmarks"])), ["arith"]);
    assert_eq!(
        names(&listed(&env, &["--protocol", "som"])),
        ["arith".to_string(), first.clone()]
    );
    assert_eq!(names(&listed(&env, &["--status", "failed"])).len(), 0);
    assert_eq!(names(&listed(&env, &["--status", "done"])).len(), 3);
    assert_eq!(names(&listed(&env, &["--since", "1d"])).len(), 3);
    assert_eq!(names(&listed(&env, &["--since", "2999-01-01"])).len(), 0);
    // A limit shows the newest and says how many more there are.
    let out = env
        .moot()
        .args(["list", "--limit", "1"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().nth(1).unwrap().starts_with(&last), "{text}");
    assert!(text.contains("2 more not shown"), "{text}");
    // A benchmark's debates, one entry each.
    let debates = listed(&env, &["--bench", "arith"]);
    assert_eq!(debates.len(), 6, "{debates:?}");
    assert!(debates
        .iter()
        .all(|d| d["kind"] == "run" && d["bench"] == "arith"));
    assert_eq!(
        listed(&env, &["--bench", "arith", "--protocol", "cot"]).len(),
        3
    );
}

#[test]
fn list_refuses_a_bad_status_date_or_protocol_naming_the_flag() {
    let env = Env::new();
    ask(&env, "som");
    for (args, flag) in [
        (vec!["list", "--status", "finished"], "--status"),
        (vec!["list", "--since", "yesterday"], "--since"),
        (vec!["list", "--protocol", "nope"], "--protocol"),
        (vec!["list", "--limit", "0"], "--limit"),
    ] {
        let err = env.refused(&args);
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}

#[test]
fn list_on_a_missing_store_says_no_store_and_creates_nothing() {
    let env = Env::new();
    let err = env.refused(&["list"]);
    assert_eq!(
        err,
        format!(
            "moot: error: no store at {} (MOOT_STORE)\n",
            env.store().display()
        )
    );
    assert!(!env.store().exists());
}

#[test]
fn store_path_prints_the_store_in_use_and_whether_it_exists() {
    let env = Env::new();
    let run = |c: &mut assert_cmd::Command| {
        let out = c.assert().success().get_output().clone();
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    // From MOOT_STORE, before anything is stored.
    let (out, err) = run(env.moot().args(["store", "path"]));
    assert_eq!(out, format!("{}\n", env.store().display()));
    assert!(
        err.contains("MOOT_STORE") && err.contains("no store there yet"),
        "{err}"
    );
    assert!(!env.store().exists());
    ask(&env, "som");
    let (_, err) = run(env.moot().args(["store", "path"]));
    assert!(err.contains("a store is there"), "{err}");
    // --store wins over MOOT_STORE.
    let other = env.dir.path().join("other.db");
    let v: Value = serde_json::from_str(
        &run(env
            .moot()
            .args(["store", "path", "--json", "--store"])
            .arg(&other))
        .0,
    )
    .unwrap();
    assert_eq!(
        v,
        serde_json::json!({"store": other.display().to_string(), "from": "flag", "exists": false})
    );
    // Neither: the default location in the user's data directory.
    let data = env.dir.path().join("data");
    let (out, err) = run(assert_cmd::Command::cargo_bin("moot")
        .unwrap()
        .env_remove("MOOT_STORE")
        .env("XDG_DATA_HOME", &data)
        .env("HOME", env.dir.path().join("home"))
        .args(["store", "path"]));
    assert_eq!(
        out,
        format!("{}\n", data.join("moot").join("moot.db").display())
    );
    assert!(err.contains("the default location"), "{err}");
    assert!(!data.exists());
}

#[test]
fn store_init_creates_an_empty_store_that_list_reads() {
    let env = Env::new();
    assert!(env.stdout(&["store", "init"]).contains("created the store"));
    assert!(env.store().is_file());
    assert_eq!(listed(&env, &[]).len(), 0);
    assert!(env.stdout(&["store", "init"]).contains("already"));
}

/// Every command that looks a run or benchmark up by name, given a name one letter off.
#[test]
fn a_name_not_found_names_the_store_and_suggests_close_names() {
    let env = Env::new();
    let (run, _) = stocked(&env);
    let typo = format!("{}x", &run[..run.len() - 1]);
    let store = env.store().display().to_string();
    for args in [
        vec!["show", typo.as_str()],
        vec!["decide", "--run", typo.as_str()],
        vec!["resume", typo.as_str()],
        vec!["fork", typo.as_str(), "--round", "1"],
        vec!["regrade", typo.as_str()],
    ] {
        let err = env.refused(&args);
        assert!(
            err.contains(&format!("{typo:?} in the store {store}"))
                && err.contains(&format!("did you mean {run}")),
            "{args:?}: {err}"
        );
    }
    for args in [
        vec!["report", "arith2"],
        vec!["resume", "arith2"],
        vec!["regrade", "arith2"],
        vec!["list", "--bench", "arith2"],
        vec!["bench", "status", "arith2"],
    ] {
        let err = env.refused(&args);
        assert!(
            err.contains(&format!("\"arith2\" in the store {store}"))
                && err.contains("did you mean arith?"),
            "{args:?}: {err}"
        );
    }
    // Nothing close: the store alone.
    let err = env.refused(&["show", "zzzzzzzz"]);
    assert_eq!(
        err,
        format!("moot: error: no run named \"zzzzzzzz\" in the store {store}\n")
    );
}

#[test]
fn serve_refuses_a_missing_store_as_show_does_and_creates_nothing() {
    let env = Env::new();
    let missing = env.dir.path().join("typo.db");
    let out = env
        .moot()
        .args(["serve", "--port", "0", "--store"])
        .arg(&missing)
        .timeout(Duration::from_secs(60))
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "moot: error: no store at {}; a server serves an existing store: moot store init (with the same --store) makes an empty one\n",
            missing.display()
        )
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("http://"));
    assert!(!missing.exists());
    assert!(!Path::new(&format!("{}-wal", missing.display())).exists());
}

#[test]
fn a_run_kept_in_memory_is_not_offered_to_moot_show() {
    let env = Env::new();
    let text = env.stdout(&[
        "ask",
        "What is 17 * 24?",
        "--sim",
        "--gold",
        "408",
        "--store",
        "memory:",
    ]);
    assert!(text.contains("Run: "), "{text}");
    assert!(!text.contains("moot show"), "{text}");
    // A lasting store's run is.
    let text = env.stdout(&["ask", "What is 17 * 24?", "--sim", "--gold", "408"]);
    assert!(text.contains("moot show"), "{text}");
}

/// A stored benchmark's limit is data: one near u64::MAX, times its protocols, is no panic for
/// `moot list`.
#[test]
fn list_reads_a_benchmark_whose_stored_limit_would_overflow() {
    let env = Env::new();
    common::arith_bench(&env, 2);
    common::sqlite_exec(
        &env.store(),
        "UPDATE benches SET item_limit = 9223372036854775807 WHERE name = 'arith'",
    );
    let listed = env.stdout(&["list"]);
    assert!(listed.contains("arith"), "{listed}");
}

/// A benchmark planned for workers that none has started is `planned` (its way on is `moot
/// work NAME`), not `interrupted`.
#[test]
fn a_benchmark_planned_for_workers_is_listed_as_planned() {
    let env = Env::new();
    let data = crate::common::arith_dataset(&env, 2);
    env.stdout(&[
        "bench",
        "--dataset",
        &data,
        "--protocol",
        "som",
        "--sim",
        "--name",
        "det",
        "--detach",
    ]);
    let listed = env.stdout(&["list"]);
    let line = listed
        .lines()
        .find(|l| l.starts_with("det "))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(line.contains("planned"), "{line}");
    assert!(!line.contains("interrupted"), "{line}");
    let planned = env.stdout(&["list", "--status", "planned"]);
    assert!(planned.contains("det "), "{planned}");
}
