//! `moot fork` and `moot bench --fork-of` driven through the binary with simulated agents, on
//! a real SQLite store and on a real PostgreSQL (started by moot-pgtest; ignored in a quick
//! `cargo test`, `scripts/test` runs it): calls before the round and later ones with the
//! parent's request are reused at 0 tokens and never asked again, a null fork asks its round
//! afresh, an injected response reaches the next round, protocols refuse what they must with
//! their reasons, and the lineage shows in `moot show` and survives `moot store copy`.

use serde_json::Value;

use crate::common;

use common::{arith_dataset, json_on, stdout_on, Env};

/// `moot ARGS` on `store`, refused as bad input (exit 2): its stderr.
fn refused_on(env: &Env, store: &str, args: &[&str]) -> String {
    let out = env
        .moot()
        .env("MOOT_STORE", store)
        .args(args)
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    String::from_utf8_lossy(&out).into_owned()
}

/// A finished simulated debate of `protocol` with 3 agents and 2 debate rounds; its run id.
fn parent(env: &Env, store: &str, protocol: &str, options: &[&str]) -> String {
    let mut args = vec![
        "ask",
        "What is 17 * 24?",
        "--sim",
        "--gold",
        "408",
        "--answer",
        "numeric",
        "--agents",
        "3",
        "--rounds",
        "2",
        "--protocol",
        protocol,
        "--json",
    ];
    args.extend_from_slice(options);
    json_on(env, store, &args)["run_id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn calls(shown: &Value) -> Vec<Value> {
    shown["calls"].as_array().unwrap().clone()
}

fn at(calls: &[Value], round: u64, agent: u64) -> Value {
    calls
        .iter()
        .find(|c| c["round"] == round && c["agent"] == agent && c["slot"] == "answer")
        .unwrap_or_else(|| panic!("no call of agent {agent} in round {round}"))
        .clone()
}

fn tokens(call: &Value) -> (u64, u64) {
    (
        call["input_tokens"].as_u64().unwrap(),
        call["output_tokens"].as_u64().unwrap(),
    )
}

/// Everything `moot fork` promises, on the store `store`.
fn forks_of_one_debate(env: &Env, store: &str) {
    let run = parent(env, store, "som", &[]);
    let before = json_on(env, store, &["show", &run, "--format", "json"]);
    let parent_calls = calls(&before);

    // A null fork: round 0 is the parent's at 0 tokens, round 1 is asked afresh (salted, so
    // neither reused nor served from a cache), and what was asked is exactly what is not reused.
    let null = json_on(env, store, &["fork", &run, "--round", "1", "--json"]);
    let null_id = null["run_id"].as_str().unwrap().to_string();
    let shown = json_on(env, store, &["show", &null_id, "--format", "json"]);
    // Round 0's three calls are copied. A round-2 call is reused exactly when its request is
    // the parent's: when the resampled round 1 happened to give the parent's texts (sim texts
    // follow from the answers, so this happens by chance), and never otherwise.
    let forked_calls = calls(&shown);
    let same_request_later = (0..3)
        .filter(|&agent| {
            at(&forked_calls, 2, agent)["request_key"] == at(&parent_calls, 2, agent)["request_key"]
        })
        .count();
    let reused_later = (0..3)
        .filter(|&agent| at(&forked_calls, 2, agent)["reused_from"] == run.as_str())
        .count();
    assert_eq!(reused_later, same_request_later, "{null}");
    assert_eq!(null["calls_reused"], 3 + same_request_later, "{null}");
    assert_eq!(shown["run"]["fork"]["parent"], run.as_str());
    assert_eq!(shown["run"]["fork"]["round"], 1);
    assert_eq!(shown["run"]["fork"]["intervention"]["kind"], "null");
    let forked = calls(&shown);
    for agent in 0..3 {
        let copy = at(&forked, 0, agent);
        assert_eq!(copy["reused_from"], run.as_str());
        assert_eq!(tokens(&copy), (0, 0));
        assert_eq!(
            copy["response_text"],
            at(&parent_calls, 0, agent)["response_text"]
        );
        let fresh = at(&forked, 1, agent);
        assert!(fresh.get("reused_from").is_none(), "{fresh}");
        assert_eq!(fresh["cached"], false);
        assert!(tokens(&fresh).1 > 0, "{fresh}");
        assert_ne!(
            fresh["request_key"],
            at(&parent_calls, 1, agent)["request_key"]
        );
    }
    let asked_tokens: u64 = forked
        .iter()
        .filter(|c| c.get("reused_from").is_none())
        .map(|c| tokens(c).1)
        .sum();
    assert_eq!(
        null["tokens"]["output"], asked_tokens,
        "only asked calls cost"
    );

    // Agent 2 says 999 in round 1: its answer is read from the text, the others' round-1
    // calls are the parent's (same prompts), and round 2 reads what it said.
    let said = json_on(
        env,
        store,
        &[
            "fork",
            &run,
            "--round",
            "1",
            "--agent",
            "2",
            "--say",
            "Checked twice.\nFinal answer: 999",
            "--json",
        ],
    );
    let said_id = said["run_id"].as_str().unwrap().to_string();
    assert_eq!(said["rounds"][1][1], "999", "{said}");
    let shown = json_on(env, store, &["show", &said_id, "--format", "json"]);
    assert_eq!(shown["run"]["fork"]["intervention"]["kind"], "say");
    assert_eq!(shown["run"]["fork"]["intervention"]["agent"], 1);
    let forked = calls(&shown);
    let injected = at(&forked, 1, 1);
    assert_eq!(injected["answer"], "999");
    assert_eq!(injected["notes"]["injected"], true);
    assert_eq!(tokens(&injected), (0, 0));
    assert!(injected["logprob_min"].is_null());
    for agent in [0, 2] {
        assert_eq!(at(&forked, 1, agent)["reused_from"], run.as_str());
        let next = at(&forked, 2, agent);
        assert!(next.get("reused_from").is_none());
        assert!(
            next["messages"].to_string().contains("Final answer: 999"),
            "round 2 reads the injected text: {next}"
        );
    }
    assert_eq!(said["calls_reused"], 5, "round 0 and two of round 1");

    // Agent 1 on the expert preset from round 1: its backend changes there, not before.
    let model = json_on(
        env,
        store,
        &[
            "fork", &run, "--round", "1", "--agent", "1", "--model", "expert", "--json",
        ],
    );
    let model_id = model["run_id"].as_str().unwrap().to_string();
    let shown = json_on(env, store, &["show", &model_id, "--format", "json"]);
    let forked = calls(&shown);
    assert_eq!(
        at(&forked, 0, 0)["backend"],
        at(&parent_calls, 0, 0)["backend"]
    );
    let expert = at(&forked, 1, 0)["backend"].as_str().unwrap().to_string();
    assert!(expert.starts_with("sim:p=1,"), "{expert}");
    assert_eq!(
        shown["run"]["fork"]["intervention"]["backend"],
        expert.as_str()
    );
    assert_eq!(
        at(&forked, 1, 0)["answer"],
        "408",
        "the expert is always right"
    );

    // The parent lists its forks, oldest first; the Markdown says both ends.
    let shown = json_on(env, store, &["show", &run, "--format", "json"]);
    let listed: Vec<&str> = shown["forks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        [null_id.as_str(), said_id.as_str(), model_id.as_str()]
    );
    assert_eq!(
        shown["forks"][1]["intervention"]["text"],
        "Checked twice.\nFinal answer: 999"
    );
    let md = stdout_on(env, store, &["show", &run]);
    assert!(md.contains("Forks of this run:"), "{md}");
    assert!(
        md.contains(&format!("`{said_id}` at round 1: agent 2 says")),
        "{md}"
    );
    let md = stdout_on(env, store, &["show", &said_id]);
    assert!(
        md.contains(&format!("Fork of run `{run}` at round 1")),
        "{md}"
    );
    assert!(md.contains("injected by a fork"), "{md}");
    assert!(md.contains(&format!("reused from run {run}")), "{md}");

    refusals(env, store, &run);
}

/// What is refused, each with its reason, and nothing recorded for it.
fn refusals(env: &Env, store: &str, som: &str) {
    let listed = |run: &str| {
        json_on(env, store, &["show", run, "--format", "json"])["forks"]
            .as_array()
            .unwrap()
            .len()
    };
    let som_forks = listed(som);
    let e = refused_on(env, store, &["fork", som, "--round", "3"]);
    assert!(e.contains("rounds are 0 to 2"), "{e}");
    let e = refused_on(
        env,
        store,
        &["fork", som, "--round", "1", "--agent", "9", "--say", "x"],
    );
    assert!(e.contains("agents are 1 to 3"), "{e}");
    let e = refused_on(env, store, &["fork", "no-such-run", "--round", "0"]);
    assert!(
        e.contains("no run named \"no-such-run\" in the store"),
        "{e}"
    );
    assert_eq!(listed(som), som_forks, "a refused fork records nothing");
    let svr = parent(env, store, "svr-mad", &[]);
    let e = refused_on(env, store, &["fork", &svr, "--round", "1"]);
    assert!(e.contains("challenge steps"), "{e}");
    let sid = parent(env, store, "sid-et", &[]);
    let say = ["--round", "1", "--agent", "1", "--say", "Final answer: 1"];
    let e = refused_on(
        env,
        store,
        &[&["fork", sid.as_str()][..], &say[..]].concat(),
    );
    assert!(e.contains("log-likelihoods"), "{e}");
    let masked = parent(env, store, "mad-m2", &["-o", "masking=objective"]);
    let e = refused_on(
        env,
        store,
        &[&["fork", masked.as_str()][..], &say[..]].concat(),
    );
    assert!(
        e.contains("perplexity") && e.contains("log-probabilities"),
        "{e}"
    );
    let cot = parent(env, store, "cot", &[]);
    let e = refused_on(env, store, &["fork", &cot, "--round", "1"]);
    assert!(e.contains("rounds are 0 to 0"), "{e}");
    // At round 0 cot's single answer can be resampled.
    json_on(env, store, &["fork", &cot, "--round", "0", "--json"]);
}

/// `moot bench --fork-of` with a wrong answer said on every item: each pair with the parent,
/// McNemar, the protocols left out with their reasons; the same command again reads it back.
fn forks_of_a_benchmark(env: &Env, store: &str) {
    let data = arith_dataset(env, 6);
    json_on(
        env,
        store,
        &[
            "bench",
            "--dataset",
            &data,
            "--protocol",
            "som,cot-sc,svr-mad",
            "--sim",
            "--agents",
            "3",
            "--rounds",
            "2",
            "--run",
            "par",
            "--json",
        ],
    );
    let args = [
        "bench",
        "--fork-of",
        "par",
        "--round",
        "1",
        "--agent",
        "1",
        "--say-wrong",
        "--run",
        "wrong",
        "--json",
    ];
    let report = json_on(env, store, &args);
    let fork = &report["fork"];
    assert_eq!(fork["parent"], "par");
    assert_eq!(fork["round"], 1);
    let protocols = fork["protocols"].as_array().unwrap();
    assert_eq!(protocols.len(), 1, "{fork}");
    let som = &protocols[0];
    assert_eq!(som["protocol"], "som");
    assert_eq!(som["items"], 6);
    let n = |k: &str| som[k].as_u64().unwrap();
    assert_eq!(n("parent_correct"), n("both_correct") + n("parent_only"));
    assert_eq!(n("fork_correct"), n("both_correct") + n("fork_only"));
    assert_eq!(
        n("both_correct") + n("parent_only") + n("fork_only") + n("both_wrong"),
        6
    );
    let p = som["p_value"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&p), "{p}");
    assert_eq!(som["pairs"].as_array().unwrap().len(), 6);
    let refused = report["fork_run"]["refused"].as_array().unwrap();
    let refused: Vec<(&str, &str)> = refused
        .iter()
        .map(|r| (r[0].as_str().unwrap(), r[1].as_str().unwrap()))
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused[0].0 == "cot-sc" && refused[0].1.contains("rounds are 0 to 0"));
    assert!(refused[1].0 == "svr-mad" && refused[1].1.contains("challenge steps"));
    assert_eq!(report["fork_run"]["forked"], 6);
    // Every fork's agent 1 said a wrong answer in round 1, and round 0 is the parent's.
    for i in 1..=6 {
        let id = format!("wrong/som/q{i}");
        let shown = json_on(env, store, &["show", &id, "--format", "json"]);
        let forked = calls(&shown);
        let said = at(&forked, 1, 0);
        assert_eq!(said["notes"]["injected"], true);
        assert_ne!(
            said["answer"].as_str().unwrap(),
            (i * 7).to_string(),
            "{said}"
        );
        assert_eq!(at(&forked, 0, 0)["reused_from"], format!("par/som/q{i}"));
    }
    // `moot report` of the fork carries the same pairs.
    let again = json_on(env, store, &["report", "wrong", "--format", "json"]);
    assert_eq!(again["fork"], report["fork"]);
    // The same command continues it: everything is read back, nothing forked again.
    let rerun = json_on(env, store, &args);
    assert_eq!(rerun["fork_run"]["forked"], 0);
    assert_eq!(rerun["fork_run"]["read_back"], 6);
    assert_eq!(rerun["fork"], report["fork"]);
    // The null fork is the control: cot-sc has no round 1 either.
    let null = json_on(
        env,
        store,
        &[
            "bench",
            "--fork-of",
            "par",
            "--round",
            "1",
            "--run",
            "ctl",
            "--json",
        ],
    );
    assert_eq!(null["fork"]["protocols"][0]["items"], 6);
    assert_eq!(null["fork"]["intervention"], "null (the round resampled)");
}

/// Lineage in a copied store: the fork still names its parent, the parent its forks, the
/// benchmark its parent benchmark.
fn lineage_survives_a_copy(env: &Env, from: &str, to: &str) {
    stdout_on(env, from, &["store", "copy", from, to]);
    let fork = json_on(env, to, &["show", "wrong/som/q1", "--format", "json"]);
    assert_eq!(fork["run"]["fork"]["parent"], "par/som/q1");
    assert_eq!(fork["run"]["fork"]["intervention"]["kind"], "say");
    let reused = calls(&fork)
        .iter()
        .filter(|c| c["reused_from"] == "par/som/q1")
        .count();
    assert!(reused >= 3, "round 0 at least");
    let parent = json_on(env, to, &["show", "par/som/q1", "--format", "json"]);
    let forks: Vec<&str> = parent["forks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(forks, ["wrong/som/q1", "ctl/som/q1"]);
    let report = json_on(env, to, &["report", "wrong", "--format", "json"]);
    assert_eq!(report["fork"]["parent"], "par");
}

#[test]
fn forks_on_sqlite() {
    let env = Env::new();
    let store = env.store().display().to_string();
    forks_of_one_debate(&env, &store);
    forks_of_a_benchmark(&env, &store);
    let copy = env.dir.path().join("copy.db").display().to_string();
    lineage_survives_a_copy(&env, &store, &copy);
}

#[test]
#[ignore = "needs PostgreSQL; scripts/test runs it"]
fn forks_on_postgres() {
    let env = Env::new();
    let pg = moot_pgtest::PgServer::shared().fresh_database();
    forks_of_one_debate(&env, &pg);
    forks_of_a_benchmark(&env, &pg);
    // PostgreSQL to SQLite, and back to another PostgreSQL database.
    let file = env.dir.path().join("copy.db").display().to_string();
    lineage_survives_a_copy(&env, &pg, &file);
    let pg2 = moot_pgtest::PgServer::shared().fresh_database();
    lineage_survives_a_copy(&env, &file, &pg2);
}

/// A benchmark of configured (not simulated) agents builds them once, seeded from its
/// configuration's seed rather than each item's: a fork of one of its debates must ask with
/// those seeds, or no request is the parent's and nothing after the fork's round is reused.
/// Here a wrong answer said at round 0 leaves the other agents' round-0 calls reused.
#[test]
fn a_benchmark_of_configured_agents_forks_reusing_the_other_agents_calls() {
    let env = common::Env::new();
    let data = common::arith_dataset(&env, 3);
    let mut team = String::from("[debate]\nrounds = 1\n");
    for id in ["a", "b", "c"] {
        team.push_str(&format!(
            "[[agents]]\nid = \"{id}\"\nbackend = \"scripted\"\nresponses = [\"Final answer: 7\"]\n\n"
        ));
    }
    let config = env.write("team.toml", &team);
    env.json(&[
        "bench",
        "--dataset",
        &data,
        "--protocol",
        "som",
        "--config",
        config.to_str().unwrap(),
        "--run",
        "base",
        "--json",
    ]);
    env.json(&[
        "bench",
        "--fork-of",
        "base",
        "--round",
        "0",
        "--agent",
        "1",
        "--say-wrong",
        "--run",
        "wrong",
        "--json",
    ]);
    let shown = env.json(&["show", "wrong/som/q1", "--format", "json"]);
    let round0: Vec<&Value> = shown["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["round"] == 0)
        .collect();
    assert_eq!(round0.len(), 3);
    for c in &round0 {
        let reused = &c["reused_from"];
        if c["agent"] == 0 {
            assert!(reused.is_null(), "the said answer is the fork's own: {c}");
        } else {
            assert_eq!(reused, "base/som/q1", "{c}");
        }
    }
}
