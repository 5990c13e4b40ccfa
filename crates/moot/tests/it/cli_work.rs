//! Benchmarks worked by many processes, driven through the binary: `moot bench --detach`,
//! `moot work`, `moot bench status`, `moot report` on a partial benchmark, `moot store copy`,
//! and every command on a real PostgreSQL (started by moot-pgtest in a temporary folder).
//!
//! The PostgreSQL tests are ignored in a quick `cargo test`; `scripts/test` runs them.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;

use common::fake_openai::FakeOpenAi;
use common::{arith_dataset, json_on, stdout_on as on, Env};

fn moot_bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("moot")
}

/// A report without what differs between two runs of the same debates: model time, the
/// invocation's throughput and the benchmark's name.
fn comparable(mut report: Value) -> Value {
    if let Some(o) = report.as_object_mut() {
        o.remove("timing");
        o.remove("throughput");
    }
    if let Some(benches) = report["benches"].as_array_mut() {
        for b in benches {
            b["name"] = Value::Null;
        }
    }
    report
}

/// How many times the server saw each request.
fn counts(seen: &[common::fake_openai::Seen]) -> std::collections::HashMap<u64, usize> {
    let mut n = std::collections::HashMap::new();
    for s in seen {
        *n.entry(s.key).or_default() += 1;
    }
    n
}

/// `moot bench --config TEAM --dataset DATASET --protocol som --run b --no-cache EXTRA` on
/// `store`.
fn team_bench(env: &Env, team: &std::path::Path, dataset: &str, store: &str, extra: &[&str]) {
    let mut args = vec![
        "bench",
        "--config",
        team.to_str().unwrap(),
        "--dataset",
        dataset,
        "--protocol",
        "som",
        "--run",
        "b",
        "--no-cache",
    ];
    args.extend_from_slice(extra);
    on(env, store, &args);
}

/// `moot bench --sim --dataset DATASET --protocol PROTOCOLS --run NAME` on `store`.
fn sim_bench(env: &Env, store: &str, dataset: &str, protocols: &str, name: &str) {
    on(
        env,
        store,
        &[
            "bench",
            "--sim",
            "--dataset",
            dataset,
            "--protocol",
            protocols,
            "--run",
            name,
        ],
    );
}

/// `moot work NAME ARGS` on `store`, started in the background.
fn worker(store: &str, name: &str, id: &str, args: &[&str]) -> Child {
    Command::new(moot_bin())
        .env("MOOT_STORE", store)
        .env_remove("MOOT_MODEL_DIR")
        .args(["work", name, "--worker-id", id, "--json"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start moot work")
}

/// Waits for a worker and returns its JSON summary (it must have succeeded).
fn finished(child: Child) -> Value {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "moot work failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_detached_benchmark_reports_as_one_process_whichever_workers_ran_its_debates() {
    let env = Env::new();
    let dataset = arith_dataset(&env, 8);
    let bench = |store: &str, extra: &[&str]| {
        let mut args = vec![
            "bench",
            "--sim",
            "--dataset",
            &dataset,
            "--protocol",
            "som,free-mad-n",
            "--run",
            "b1",
            "--no-cache",
        ];
        args.extend_from_slice(extra);
        on(&env, store, &args)
    };
    let one = env.dir.path().join("one.db").display().to_string();
    let many = env.dir.path().join("many.db").display().to_string();
    bench(&one, &["--json"]);
    let planned = bench(&many, &["--detach", "--json"]);
    let planned: Value = serde_json::from_str(&planned).unwrap();
    assert_eq!(planned["planned"], 16);
    assert_eq!(planned["added"], 16);
    // Planning again adds nothing; planning it otherwise is refused.
    assert_eq!(
        serde_json::from_str::<Value>(&bench(&many, &["--detach", "--json"])).unwrap()["added"],
        0
    );
    let status = json_on(&env, &many, &["bench", "status", "b1", "--json"]);
    assert_eq!(status["counts"]["pending"], 16, "{status}");
    assert_eq!(status["workers"], serde_json::json!([]));
    // Before any worker: the report says nothing is finished yet.
    let e = env
        .moot()
        .env("MOOT_STORE", &many)
        .args(["report", "b1"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(
        String::from_utf8_lossy(&e).contains("b1 has no finished debate yet (16 not finished"),
        "{}",
        String::from_utf8_lossy(&e)
    );
    let workers = [
        worker(&many, "b1", "w1", &["--poll", "100ms", "--no-cache"]),
        worker(&many, "b1", "w2", &["--poll", "100ms", "--no-cache"]),
    ];
    let summaries: Vec<Value> = workers.into_iter().map(finished).collect();
    let debates: u64 = summaries
        .iter()
        .map(|s| s["debates"].as_u64().unwrap())
        .sum();
    assert_eq!(debates, 16, "{summaries:?}");
    for s in &summaries {
        assert_eq!(s["counts"]["done"], 16);
        assert_eq!(s["failed"], 0);
    }
    let status = json_on(&env, &many, &["bench", "status", "b1", "--json"]);
    assert_eq!(status["counts"]["done"], 16);
    let states: Vec<&str> = status["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["exited", "exited"]);
    let text = on(&env, &many, &["bench", "status", "b1"]);
    assert!(text.contains("done         16  100.0%"), "{text}");
    let report = |store: &str| json_on(&env, store, &["report", "b1", "--format", "json"]);
    assert_eq!(comparable(report(&many)), comparable(report(&one)));
    // A worker started after the end finds nothing to do and says so.
    let late = finished(worker(&many, "b1", "w3", &["--poll", "100ms"]));
    assert_eq!(late["debates"], 0);
}

#[test]
fn work_refuses_what_it_cannot_do_in_one_line() {
    let env = Env::new();
    let store = env.store().display().to_string();
    let dataset = arith_dataset(&env, 2);
    // A benchmark run by `moot bench` itself has no jobs to work.
    sim_bench(&env, &store, &dataset, "som", "done");
    // No benchmark of that name.
    let e = env.refused(&["work", "nope"]);
    assert!(
        e.contains("no benchmark named \"nope\" in the store: plan one with moot bench … --name nope --detach"),
        "{e}"
    );
    let e = env.refused(&["bench", "status", "nope"]);
    assert!(e.contains("no benchmark named \"nope\""), "{e}");
    // --detach needs a name to give the workers.
    let e = env.refused(&[
        "bench",
        "--sim",
        "--dataset",
        &dataset,
        "--protocol",
        "som",
        "--detach",
    ]);
    assert!(e.contains("--name"), "{e}");
    let e = env.refused(&["work", "done"]);
    assert!(e.contains("benchmark done has no planned jobs"), "{e}");
    // Its status comes from its debates.
    let status = json_on(&env, &store, &["bench", "status", "done", "--json"]);
    assert_eq!(status["worked"], false);
    assert_eq!(status["counts"]["done"], 2);
    for bad in ["--lease", "--poll"] {
        let e = env.refused(&["work", "done", bad, "5ms"]);
        assert!(e.contains("too short"), "{e}");
    }
}

#[test]
fn a_worker_name_in_use_by_a_live_worker_is_refused() {
    let env = Env::new();
    let store = env.store().display().to_string();
    let model = FakeOpenAi::start(Duration::from_millis(300));
    let team = env.write("team.toml", &model.team(3, 1));
    let dataset = arith_dataset(&env, 6);
    on(
        &env,
        &store,
        &[
            "bench",
            "--config",
            team.to_str().unwrap(),
            "--dataset",
            &dataset,
            "--protocol",
            "som",
            "--run",
            "b",
            "--detach",
        ],
    );
    // This machine's configuration gives the agents (a stored one grants no endpoint).
    let local = team.to_str().unwrap();
    let first = worker(
        &store,
        "b",
        "same",
        &["--concurrency", "1", "--poll", "100ms", "--config", local],
    );
    let started = Instant::now();
    while model.seen().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(30), "no request");
        std::thread::sleep(Duration::from_millis(20));
    }
    let e = env.refused(&["work", "b", "--worker-id", "same", "--config", local]);
    assert!(
        e.contains("worker \"same\" is already working benchmark b"),
        "{e}"
    );
    assert_eq!(finished(first)["debates"], 6);
}

/// Copies between SQLite files keep every run and benchmark: reports and transcripts read the
/// same, and copying again adds nothing.
#[test]
fn store_copy_moves_runs_and_benchmarks() {
    let env = Env::new();
    let src = env.store().display().to_string();
    let dataset = arith_dataset(&env, 3);
    sim_bench(&env, &src, &dataset, "som,cot", "b");
    let dst = env.dir.path().join("copy.db").display().to_string();
    let copied = json_on(&env, &src, &["store", "copy", &src, &dst, "--json"]);
    assert_eq!(copied["runs"], 6, "{copied}");
    assert_eq!(copied["benches"], 1);
    let again = json_on(&env, &src, &["store", "copy", &src, &dst, "--json"]);
    assert_eq!(
        (again["runs"].clone(), again["runs_present"].clone()),
        (0.into(), 6.into())
    );
    let report = |store: &str| json_on(&env, store, &["report", "b", "--format", "json"]);
    assert_eq!(report(&src), report(&dst));
    let show = |store: &str| on(&env, store, &["show", "b/som/q1", "--format", "json"]);
    assert_eq!(show(&src), show(&dst));
    // A source that is not there is refused, and no destination is made.
    let missing = env.dir.path().join("missing.db").display().to_string();
    let other = env.dir.path().join("other.db");
    let e = env.refused(&["store", "copy", &missing, other.to_str().unwrap()]);
    assert!(e.contains("no store at"), "{e}");
    assert!(!other.exists());
}

/// Issue 32 item 7: a copy that stopped on a bad row left the run in the destination
/// `running` with none of its calls, and copying again (the row mended) called it "already
/// there". Each run is copied whole or not at all: the failed copy names the row and leaves no
/// trace of the run in `dst`, and copying again copies it whole.
fn interrupted_copy_is_completed_by_copying_again(env: &Env, dst: &str) {
    let src_path = env.store();
    let src = src_path.display().to_string();
    let ask = || {
        json_on(
            env,
            &src,
            &[
                "ask",
                "What is 17 * 24?",
                "--sim",
                "--gold",
                "408",
                "--rounds",
                "1",
                "--json",
            ],
        )["run_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (first, second) = (ask(), ask());
    // The second call row of the second run, as a damaged file or another program leaves it.
    let row = format!(
        "(SELECT rowid FROM calls WHERE run_id = '{second}' ORDER BY round, agent, slot LIMIT 1 OFFSET 1)"
    );
    let place = common::sqlite_text(
        &src_path,
        &format!(
            "SELECT 'round ' || round || ', agent ' || agent || ' (' || slot || ')' FROM calls WHERE rowid = {row}"
        ),
    )
    .unwrap();
    let messages = common::sqlite_text(
        &src_path,
        &format!("SELECT messages_json FROM calls WHERE rowid = {row}"),
    )
    .unwrap();
    common::sqlite_exec(
        &src_path,
        &format!("UPDATE calls SET messages_json = '{{' WHERE rowid = {row}"),
    );
    let out = env
        .moot()
        .args(["store", "copy", &src, dst])
        .assert()
        .failure()
        .get_output()
        .clone();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains(&format!(
            "stored messages of the call in {place} of run {second} is unreadable"
        )),
        "{e}"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let read = |id: &str| {
        rt.block_on(async {
            let store = moot_store::StoreLocation::parse(dst)
                .open(moot_store::Access::Read)
                .await
                .unwrap();
            let found = match store.run(id).await {
                Ok(run) => Some((run.status, store.calls(id).await.unwrap().len())),
                Err(moot_store::StoreError::RunNotFound(_)) => None,
                Err(e) => panic!("{e}"),
            };
            store.close().await;
            found
        })
    };
    assert_eq!(read(&second), None, "no trace of the run that failed");
    // Mended, and copied again: whole, as in the source.
    common::sqlite_exec(
        &src_path,
        &format!(
            "UPDATE calls SET messages_json = '{}' WHERE rowid = {row}",
            messages.replace('\'', "''")
        ),
    );
    on(env, &src, &["store", "copy", &src, dst]);
    let show = |store: &str, run: &str| on(env, store, &["show", run, "--format", "json"]);
    for run in [&first, &second] {
        assert_eq!(show(&src, run), show(dst, run), "{run}");
    }
    let (status, calls) = read(&second).unwrap();
    assert_eq!(status, moot_store::RunStatus::Done);
    assert!(calls > 1, "{calls}");
}

#[test]
fn an_interrupted_copy_leaves_no_half_run_and_copying_again_completes_it() {
    let env = Env::new();
    let dst = env.dir.path().join("copy.db").display().to_string();
    interrupted_copy_is_completed_by_copying_again(&env, &dst);
}

#[test]
#[ignore = "needs PostgreSQL; scripts/test runs it"]
fn an_interrupted_copy_to_postgres_leaves_no_half_run_and_copying_again_completes_it() {
    let env = Env::new();
    let dst = moot_pgtest::PgServer::shared().fresh_database();
    interrupted_copy_is_completed_by_copying_again(&env, &dst);
}

/// A bad PostgreSQL URL is the user's to fix (exit 2, the password hidden); a server that
/// is not there is named with the reason.
#[test]
fn bad_and_unreachable_postgres_urls_are_named_without_their_password() {
    let env = Env::new();
    let out = env
        .moot()
        .env(
            "MOOT_STORE",
            "postgres://moot:s3cret@127.0.0.1:notaport/moot",
        )
        .args(["show", "x"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("postgres://moot:***@127.0.0.1:notaport/moot: not a usable PostgreSQL URL"),
        "{e}"
    );
    assert!(!e.contains("s3cret"), "{e}");
    let (_refusing, port) = common::refusing_port();
    let url = format!("postgres://moot:s3cret@127.0.0.1:{port}/moot");
    let out = env
        .moot()
        .env("MOOT_STORE", &url)
        .args(["show", "x"])
        .assert()
        .failure()
        .get_output()
        .clone();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains(&format!(
            "the store postgres://moot:***@127.0.0.1:{port}/moot cannot be reached"
        )),
        "{e}"
    );
    assert!(!e.contains("s3cret"), "{e}");
}

/// The body of `GET PATH` from the server at `url` (`http://HOST:PORT`).
fn http_get(url: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    reply
}

/// Every command that opens a store works on PostgreSQL as on SQLite: `ask`, `show`,
/// `decide --run`, `resume` (refusing a finished run), `bench`, `report`, `serve`; and
/// `moot store copy` moves a store to PostgreSQL and back unchanged.
#[test]
#[ignore = "needs PostgreSQL; scripts/test runs it"]
fn every_command_works_on_postgres() {
    let env = Env::new();
    let pg = moot_pgtest::PgServer::shared().fresh_database();
    let asked = json_on(
        &env,
        &pg,
        &[
            "ask",
            "What is 17 * 24?",
            "--sim",
            "--gold",
            "408",
            "--answer",
            "numeric",
            "--rounds",
            "1",
            "--json",
        ],
    );
    let run = asked["run_id"].as_str().unwrap().to_string();
    let shown = json_on(&env, &pg, &["show", &run, "--format", "json"]);
    assert_eq!(shown["run"]["id"].as_str(), Some(run.as_str()), "{shown}");
    let decided = on(&env, &pg, &["decide", "--run", &run]);
    assert!(decided.contains("majority-last"), "{decided}");
    let e = env
        .moot()
        .env("MOOT_STORE", &pg)
        .args(["resume", &run])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8_lossy(&e).contains("already finished"));
    let dataset = arith_dataset(&env, 3);
    sim_bench(&env, &pg, &dataset, "som,cot", "b");
    let report = json_on(&env, &pg, &["report", "b", "--format", "json"]);
    assert_eq!(report["items"], 3);
    // The server reads the same store.
    let served = common::moot_serve_on(&pg, &[], &[]);
    let runs = http_get(&served.url, "/api/runs");
    drop(served);
    assert!(runs.contains(&run), "{runs}");
    // To SQLite and back to another PostgreSQL database: nothing changes.
    let file = env.dir.path().join("copy.db").display().to_string();
    let pg2 = moot_pgtest::PgServer::shared().fresh_database();
    on(&env, &pg, &["store", "copy", &pg, &file]);
    on(&env, &pg, &["store", "copy", &file, &pg2]);
    for store in [&file, &pg2] {
        assert_eq!(
            json_on(&env, store, &["report", "b", "--format", "json"]),
            report
        );
        assert_eq!(
            json_on(&env, store, &["show", &run, "--format", "json"]),
            shown
        );
    }
}

/// The scale-out guarantee: four workers on PostgreSQL, two killed with SIGKILL mid-run and
/// one started late, end with the report one process gives for the same benchmark, and the
/// model server sees no request twice but the calls the killed workers had in flight.
#[test]
#[ignore = "needs PostgreSQL; scripts/test runs it"]
fn killed_and_late_workers_lose_nothing_and_repeat_only_their_calls_in_flight() {
    let env = Env::new();
    let items = 10;
    let (agents, concurrency) = (3, 2);
    let dataset = arith_dataset(&env, items);
    let bench_args = |team: &str| -> Vec<String> {
        [
            "bench",
            "--config",
            team,
            "--dataset",
            &dataset,
            "--protocol",
            "som,free-mad-n",
            "--run",
            "b",
            "--no-cache",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    // One process, on SQLite, against a server of its own.
    let reference_model = FakeOpenAi::start(Duration::from_millis(20));
    let team = env.write("one.toml", &reference_model.team(agents, 1));
    let one = env.store().display().to_string();
    let args = bench_args(team.to_str().unwrap());
    on(
        &env,
        &one,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let reference = json_on(&env, &one, &["report", "b", "--format", "json"]);
    // How often one process asks each request (som and free-mad-n may ask the same first one).
    let asked_once = counts(&reference_model.seen());
    let total_calls = reference_model.seen().len();

    // Many workers, on PostgreSQL, against a slower server (so kills land mid-debate).
    let model = FakeOpenAi::start(Duration::from_millis(150));
    let team = env.write("many.toml", &model.team(agents, 1));
    let pg = moot_pgtest::PgServer::shared().fresh_database();
    let mut args = bench_args(team.to_str().unwrap());
    args.push("--detach".into());
    on(
        &env,
        &pg,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let work = |id: &str| {
        worker(
            &pg,
            "b",
            id,
            &[
                "--concurrency",
                &concurrency.to_string(),
                "--lease",
                "2s",
                "--poll",
                "200ms",
                "--no-cache",
                "--config",
                team.to_str().unwrap(),
            ],
        )
    };
    let wait_for_requests = |n: usize| {
        let started = Instant::now();
        while model.seen().len() < n {
            assert!(started.elapsed() < Duration::from_secs(120), "stuck at {n}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let mut doomed = [work("doomed-1"), work("doomed-2")];
    let survivor = work("survivor");
    // Kill the first two a quarter and a half of the way in, while they have calls in flight.
    let mut killed_at = Vec::new();
    for (child, fraction) in doomed.iter_mut().zip([4, 2]) {
        wait_for_requests(total_calls / fraction);
        child.kill().unwrap();
        child.wait().unwrap();
        killed_at.push(Instant::now());
    }
    // Mid-run, the report covers what is finished and says what is not.
    let partial = json_on(
        &env,
        &pg,
        &["report", "b", "--format", "json", "--all-items"],
    );
    let unfinished = partial["benches"][0]["unfinished"].as_u64().unwrap();
    assert!(unfinished > 0, "{partial}");
    let markdown = on(&env, &pg, &["report", "b", "--all-items"]);
    assert!(markdown.contains("unfinished and left out"), "{markdown}");
    let late = work("late");
    let summaries = [finished(survivor), finished(late)];
    let status = json_on(&env, &pg, &["bench", "status", "b", "--json"]);
    assert_eq!(status["counts"]["done"], items * 2, "{status}");
    assert_eq!(status["counts"]["failed"], 0, "{status}");
    let taken_over: u64 = summaries
        .iter()
        .map(|s| s["taken_over"].as_u64().unwrap())
        .sum();
    assert!(
        taken_over >= 1,
        "the killed workers' debates were taken over: {summaries:?}"
    );
    let mut silent: Vec<&str> = status["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["exited"] == false)
        .map(|w| w["worker"].as_str().unwrap())
        .collect();
    silent.sort();
    assert_eq!(silent, ["doomed-1", "doomed-2"], "{status}");

    let distributed = json_on(&env, &pg, &["report", "b", "--format", "json"]);
    assert_eq!(comparable(distributed), comparable(reference));
    // A request asked more often than one process asks it was repeated after a kill: each
    // killed worker had at most `concurrency` debates of `agents` calls in flight, and every
    // repeat was first asked before the last kill.
    let seen = model.seen();
    let last_kill = *killed_at.last().unwrap();
    let mut repeats = 0;
    for (key, n) in counts(&seen) {
        let once = asked_once.get(&key).copied().unwrap_or(0);
        assert!(once > 0, "a request one process never asks");
        if n > once {
            repeats += n - once;
            let first = seen.iter().find(|s| s.key == key).unwrap();
            assert!(
                first.at <= last_kill,
                "a request repeated that no killed worker held"
            );
        }
    }
    let bound = 2 * concurrency * agents;
    assert!(
        repeats <= bound,
        "{repeats} repeated requests, at most {bound} were in flight"
    );
    assert_eq!(seen.len(), total_calls + repeats);
    eprintln!(
        "{total_calls} calls, {repeats} repeated after the kills, {taken_over} debates taken over"
    );
}

/// A database that goes away under running workers: each exits with a one-line error naming
/// the store (without its password), having lost nothing; once the database is back, a new
/// worker finishes the benchmark and the report is the one a single process gives.
#[test]
#[ignore = "needs PostgreSQL; scripts/test runs it"]
fn workers_that_lose_the_database_stop_cleanly_and_a_new_one_finishes() {
    let env = Env::new();
    let dataset = arith_dataset(&env, 6);
    // Slow model calls (200 ms each), so the database goes while debates run.
    let model = FakeOpenAi::start(Duration::from_millis(200));
    let team = env.write("team.toml", &model.team(3, 1));
    let bench = |store: &str, extra: &[&str]| team_bench(&env, &team, &dataset, store, extra);
    let one = env.store().display().to_string();
    bench(&one, &[]);
    let server = moot_pgtest::PgServer::start();
    let pg = server.fresh_database();
    bench(&pg, &["--detach"]);
    let running = Command::new(moot_bin())
        .env("MOOT_STORE", &pg)
        .args([
            "work",
            "b",
            "--worker-id",
            "w1",
            "--concurrency",
            "2",
            "--lease",
            "2s",
            "--no-cache",
            "--config",
            team.to_str().unwrap(),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The database goes while debates run: once the worker's first request reached the model
    // (it claimed a debate and recorded its start), not after a guessed delay.
    let before = model.seen().len();
    let started = Instant::now();
    while model.seen().len() == before {
        assert!(started.elapsed() < Duration::from_secs(30), "no request");
        std::thread::sleep(Duration::from_millis(10));
    }
    server.stop();
    let out = running.wait_with_output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert_eq!(e.matches("cannot be reached").count(), 1, "said once: {e}");
    assert!(
        e.contains(&format!(
            "the store {} cannot be reached",
            moot_store::redact_url(&pg)
        )),
        "{e}"
    );
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    server.restart();
    let done = finished(worker(
        &pg,
        "b",
        "w2",
        &[
            "--lease",
            "1s",
            "--poll",
            "100ms",
            "--no-cache",
            "--config",
            team.to_str().unwrap(),
        ],
    ));
    assert!(done["debates"].as_u64().unwrap() >= 1, "{done}");
    let report = |store: &str| json_on(&env, store, &["report", "b", "--format", "json"]);
    assert_eq!(comparable(report(&pg)), comparable(report(&one)));
}

/// A PostgreSQL store written by a newer moot is refused by every command, in one line, and
/// left as it was.
#[test]
#[ignore = "needs PostgreSQL; scripts/test runs it"]
fn a_postgres_store_from_a_newer_moot_is_refused_by_every_command() {
    let env = Env::new();
    let pg = moot_pgtest::PgServer::shared().fresh_database();
    let dataset = arith_dataset(&env, 2);
    sim_bench(&env, &pg, &dataset, "som", "b");
    let psql = |sql: &str| {
        let out = Command::new("psql")
            .args([pg.as_str(), "-qAtc", sql])
            .output()
            .expect("psql");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    psql("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (20991231000001, 'from the future', TRUE, '\\x00', 0)");
    let before = psql("SELECT count(*) FROM calls");
    for args in [
        &["show", "b/som/q1"][..],
        &["report", "b"],
        &["bench", "status", "b"],
        &["work", "b"],
        &["resume", "b"],
        &["ask", "What is 2 * 3?", "--sim", "--gold", "6"],
    ] {
        let out = env
            .moot()
            .env("MOOT_STORE", &pg)
            .args(args)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(
            e.contains("was written by a newer moot (schema version 20991231000001"),
            "{args:?}: {e}"
        );
        assert_eq!(e.trim().lines().count(), 1, "{e}");
    }
    assert_eq!(psql("SELECT count(*) FROM calls"), before);
}

/// A worker told to stop (SIGTERM, as Kubernetes and Slurm do) hands its debates back at once:
/// another worker continues them without waiting out the lease, and the report is the one a
/// single process gives.
#[test]
fn a_worker_stopped_by_sigterm_hands_its_debates_back_at_once() {
    let env = Env::new();
    let model = FakeOpenAi::start(Duration::from_millis(300));
    let team = env.write("team.toml", &model.team(3, 1));
    let dataset = arith_dataset(&env, 4);
    let bench = |store: &str, extra: &[&str]| team_bench(&env, &team, &dataset, store, extra);
    let one = env.dir.path().join("one.db").display().to_string();
    bench(&one, &[]);
    let many = env.store().display().to_string();
    bench(&many, &["--detach"]);
    // A lease far longer than the test: only handing back lets the next worker in soon.
    let first = worker(
        &many,
        "b",
        "first",
        &[
            "--concurrency",
            "2",
            "--lease",
            "10m",
            "--no-cache",
            "--config",
            team.to_str().unwrap(),
        ],
    );
    // The reference run asked its requests already: wait for the worker's first three.
    let before = model.seen().len();
    let started = Instant::now();
    while model.seen().len() < before + 3 {
        assert!(started.elapsed() < Duration::from_secs(30), "no request");
        std::thread::sleep(Duration::from_millis(10));
    }
    let killed = Command::new("kill")
        .args(["-TERM", &first.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = first.wait_with_output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(
        e.contains("worker first was stopped by a signal before benchmark b was done; 2 debates handed back"),
        "{e}"
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (summary["stopped"].clone(), summary["released"].clone()),
        (true.into(), 2.into())
    );
    let second = Instant::now();
    let done = finished(worker(
        &many,
        "b",
        "second",
        &[
            "--poll",
            "100ms",
            "--no-cache",
            "--config",
            team.to_str().unwrap(),
        ],
    ));
    assert!(
        second.elapsed() < Duration::from_secs(30),
        "{:?}",
        second.elapsed()
    );
    assert_eq!(done["taken_over"], 2, "{done}");
    let report = |store: &str| json_on(&env, store, &["report", "b", "--format", "json"]);
    assert_eq!(comparable(report(&many)), comparable(report(&one)));
}

/// The hints that name a benchmark for the shell quote it, so that pasting them runs `moot
/// work` on that benchmark and nothing else.
#[test]
fn hints_quote_the_benchmark_name_for_the_shell() {
    let env = Env::new();
    let dataset = arith_dataset(&env, 1);
    let name = "g1'; touch pwned; echo '$(id)";
    let store = env.dir.path().join("hint.db").display().to_string();
    let hints = [
        on(
            &env,
            &store,
            &[
                "bench",
                "--sim",
                "--dataset",
                &dataset,
                "--protocol",
                "cot",
                "--run",
                name,
                "--detach",
            ],
        ),
        on(&env, &store, &["bench", "status", name]),
    ];
    for hint in hints {
        let at = hint
            .find("moot work ")
            .unwrap_or_else(|| panic!("no hint in {hint}"));
        let command = hint[at..].lines().next().unwrap().trim_end();
        // The shell reads the hint's argument back as exactly the name.
        let out = Command::new("sh")
            .current_dir(env.dir.path())
            .arg("-c")
            .arg(format!(
                "printf '%s' {}",
                command.trim_start_matches("moot work ")
            ))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), name, "{command}");
        assert!(!env.dir.path().join("pwned").exists(), "{command}");
    }
}

/// `--no-cache` given when planning is part of the plan: workers follow it, so a worked
/// benchmark asks the model exactly as often as the same benchmark run by one process; a
/// worker flag that contradicts the plan is refused.
#[test]
fn settings_that_change_results_travel_with_the_plan() {
    let env = Env::new();
    let dataset = arith_dataset(&env, 4);
    let run = |extra: &[&str], work: bool| {
        let server = FakeOpenAi::start(Duration::ZERO);
        let team = env.write("team.toml", &server.team(3, 1));
        let store = env
            .dir
            .path()
            .join(format!(
                "s{}.db",
                server.url.rsplit(':').next().unwrap().replace("/v1", "")
            ))
            .display()
            .to_string();
        let mut args = vec![
            "bench",
            "--config",
            team.to_str().unwrap(),
            "--dataset",
            &dataset,
            "--protocol",
            "som,free-mad-n",
            "--run",
            "nc",
            // One debate at a time: which requests the cache answers then does not depend on
            // which of two concurrent debates asks first.
            "--concurrency",
            "1",
        ];
        args.extend_from_slice(extra);
        on(&env, &store, &args);
        if work {
            on(
                &env,
                &store,
                &[
                    "work",
                    "nc",
                    "--worker-id",
                    "w1",
                    "--concurrency",
                    "1",
                    "--config",
                    team.to_str().unwrap(),
                ],
            );
        }
        server.seen().len()
    };
    let one_process = run(&["--no-cache"], false);
    let worked = run(&["--no-cache", "--detach"], true);
    assert_eq!(worked, one_process, "requests seen by the model server");
    // Caching makes a difference here, or the comparison above would prove nothing.
    assert!(run(&["--detach"], true) < one_process);
    assert!(run(&[], false) < one_process);

    // A plan with the cache on, and a worker that asks for none.
    let server = FakeOpenAi::start(Duration::ZERO);
    let team = env.write("team.toml", &server.team(3, 1));
    let store = env.dir.path().join("contra.db").display().to_string();
    on(
        &env,
        &store,
        &[
            "bench",
            "--config",
            team.to_str().unwrap(),
            "--dataset",
            &dataset,
            "--protocol",
            "som",
            "--run",
            "c",
            "--detach",
        ],
    );
    let out = env
        .moot()
        .env("MOOT_STORE", &store)
        .args([
            "work",
            "c",
            "--no-cache",
            "--config",
            team.to_str().unwrap(),
        ])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--no-cache") && err.contains("planned"),
        "{err}"
    );
    assert_eq!(server.seen().len(), 0);
    // A refused worker holds no name.
    let status = json_on(&env, &store, &["bench", "status", "c", "--json"]);
    assert_eq!(status["workers"], serde_json::json!([]), "{status}");
}

/// Issue 31 item 11: a worker killed with SIGKILL (nothing it can catch) right after finishing
/// a debate shows in `bench status` as gone, with that debate counted, not as a worker still
/// working that did nothing.
#[test]
fn a_killed_worker_shows_as_gone_with_the_debates_it_finished() {
    let env = Env::new();
    let model = FakeOpenAi::start(Duration::from_millis(200));
    let team = env.write("team.toml", &model.team(3, 1));
    let dataset = arith_dataset(&env, 6);
    let store = env.store().display().to_string();
    team_bench(&env, &team, &dataset, &store, &["--detach"]);
    let mut first = worker(
        &store,
        "b",
        "doomed",
        &[
            "--concurrency",
            "1",
            "--lease",
            "10m",
            "--no-cache",
            "--config",
            team.to_str().unwrap(),
        ],
    );
    let started = Instant::now();
    let status = || json_on(&env, &store, &["bench", "status", "b", "--json"]);
    while status()["counts"]["done"].as_u64().unwrap() < 1 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no debate done"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    let after = status();
    let done = after["counts"]["done"].as_u64().unwrap();
    let shown = &after["workers"][0];
    assert_eq!(shown["worker"], "doomed", "{after}");
    assert_eq!(shown["state"], "gone", "{after}");
    assert_eq!(shown["debates"].as_u64(), Some(done), "{after}");
    let text = on(&env, &store, &["bench", "status", "b"]);
    assert!(
        text.lines()
            .any(|l| l.contains("doomed") && l.contains(" gone ")),
        "{text}"
    );
}

/// Issue 31 item 6: `moot resume` of a benchmark planned for workers, beside a live worker,
/// works it as one more worker: the model server sees every request of the benchmark once
/// (before, resuming beside a worker asked everything twice), and both processes did debates.
#[test]
fn resuming_a_detached_benchmark_beside_a_live_worker_asks_nothing_twice() {
    let env = Env::new();
    let model = FakeOpenAi::start(Duration::from_millis(150));
    let team = env.write("team.toml", &model.team(2, 1));
    let dataset = arith_dataset(&env, 8);
    let store = env.store().display().to_string();
    team_bench(&env, &team, &dataset, &store, &["--detach"]);
    let local = team.to_str().unwrap();
    let live = worker(
        &store,
        "b",
        "live",
        &["--concurrency", "1", "--no-cache", "--config", local],
    );
    // The worker is under way: its first request reached the model.
    let started = Instant::now();
    while model.seen().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(30), "no request");
        std::thread::sleep(Duration::from_millis(10));
    }
    let resumed = env
        .moot()
        .env("MOOT_STORE", &store)
        .args([
            "resume",
            "b",
            "--json",
            "--concurrency",
            "1",
            "--config",
            local,
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let resumed: Value = serde_json::from_slice(&resumed.stdout).unwrap();
    let live = finished(live);
    let repeated: Vec<_> = counts(&model.seen())
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .collect();
    assert!(repeated.is_empty(), "requests asked twice: {repeated:?}");
    assert_eq!(model.seen().len(), 8 * 4, "8 items × 2 agents × 2 rounds");
    let (a, b) = (
        live["debates"].as_u64().unwrap(),
        resumed["debates"].as_u64().unwrap(),
    );
    assert_eq!(a + b, 8, "{live} {resumed}");
    assert!(a > 0 && b > 0, "both worked: {live} {resumed}");
}

/// Issue 31 item 8: four workers together keep an agent's `requests_per_minute`, shared through
/// the store, instead of four times it. 600 a minute is ten a second in bursts of ten, so in any
/// second the model server sees at most 20 requests per model (the burst and a second's
/// share); four workers each keeping the limit alone would send up to 80.
#[test]
fn four_workers_together_keep_an_agents_requests_per_minute() {
    let env = Env::new();
    let model = FakeOpenAi::start(Duration::from_millis(1));
    let team = model.team(2, 1).replace(
        "stream = false\n",
        "stream = false\nrequests_per_minute = 600\n",
    );
    let team = env.write("team.toml", &team);
    let dataset = arith_dataset(&env, 16);
    let store = env.store().display().to_string();
    team_bench(&env, &team, &dataset, &store, &["--detach"]);
    let workers: Vec<Child> = (0..4)
        .map(|w| {
            worker(
                &store,
                "b",
                &format!("w{w}"),
                &[
                    "--concurrency",
                    "4",
                    "--poll",
                    "100ms",
                    "--no-cache",
                    "--config",
                    team.to_str().unwrap(),
                ],
            )
        })
        .collect();
    let summaries: Vec<Value> = workers.into_iter().map(finished).collect();
    let debates: u64 = summaries
        .iter()
        .map(|s| s["debates"].as_u64().unwrap())
        .sum();
    assert_eq!(debates, 16, "{summaries:?}");
    assert!(
        summaries.iter().all(|s| s["debates"].as_u64() > Some(0)),
        "every worker worked: {summaries:?}"
    );
    let seen = model.seen();
    assert_eq!(seen.len(), 64, "16 items × 2 agents × 2 rounds");
    for name in ["fake-a", "fake-b"] {
        let mut at: Vec<Instant> = seen
            .iter()
            .filter(|s| s.model == name)
            .map(|s| s.at)
            .collect();
        at.sort();
        let busiest = at
            .iter()
            .map(|&start| {
                at.iter()
                    .filter(|&&t| t >= start && t < start + Duration::from_secs(1))
                    .count()
            })
            .max()
            .unwrap();
        assert!(
            busiest <= 21,
            "{name}: {busiest} requests in one second under a limit of 600 a minute"
        );
        let span = *at.last().unwrap() - at[0];
        // 32 requests at ten a second after a burst of ten take at least 2.1 s.
        assert!(
            span >= Duration::from_millis(2_000),
            "{name}: all in {span:?}"
        );
    }
}

/// `moot work --metrics ADDR` serves `/metrics` while it works, behind its token; off
/// loopback it needs one.
#[test]
fn a_worker_serves_its_metrics_while_it_works_behind_its_token() {
    use std::io::BufRead;
    let env = Env::new();
    let model = FakeOpenAi::start(Duration::from_millis(300));
    let team = env.write("team.toml", &model.team(3, 1));
    let dataset = arith_dataset(&env, 4);
    let store = env.store().display().to_string();
    team_bench(&env, &team, &dataset, &store, &["--detach"]);

    // Anything but loopback needs a token.
    let refused = Command::new(moot_bin())
        .env("MOOT_STORE", &store)
        .env_remove("MOOT_METRICS_TOKEN")
        .args(["work", "b", "--metrics", "0.0.0.0:0"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(e.contains("--metrics-token"), "{e}");

    let token = "w0rker-metrics";
    let mut child = worker(
        &store,
        "b",
        "metrics",
        &[
            "--no-cache",
            "--config",
            team.to_str().unwrap(),
            "--metrics",
            "127.0.0.1:0",
            "--metrics-token",
            token,
        ],
    );
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = std::io::BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the worker's metrics line")
            .expect("stderr");
        if let Some(rest) = line.strip_prefix("moot work: metrics at ") {
            break rest.to_string();
        }
    };
    // Keep reading stderr, so that the worker never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let client = reqwest::blocking::Client::new();
    assert_eq!(client.get(&url).send().unwrap().status(), 401);
    // The first answered calls show while the worker still works (each takes 300 ms).
    let started = Instant::now();
    let text = loop {
        let text = client
            .get(&url)
            .bearer_auth(token)
            .send()
            .unwrap()
            .text()
            .unwrap();
        if text.contains("moot_calls_total{backend=\"openai\"") {
            break text;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(text.contains("moot_debates_in_flight"), "{text}");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", out.status);
}
