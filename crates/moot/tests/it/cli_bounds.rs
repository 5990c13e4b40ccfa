//! Issue 32 item 9: numbers in a configuration that would break later arithmetic are refused
//! where the file is read, by every command, with exit 2 and the key named — never a panic
//! (exit 101) or a run left `running`.

use crate::common;

use std::time::Duration;

use common::Env;

/// A team of two sim agents whose first has `sim` as its table, told the gold answer.
fn sim_config(sim: &str) -> String {
    format!(
        "[debate]\nprotocol = \"som\"\ngold = \"408\"\n\
         [[agents]]\nid = \"odd\"\nbackend = \"sim\"\nsim = {{ {sim} }}\n\
         [[agents]]\nid = \"plain\"\nbackend = \"sim\"\n"
    )
}

/// Files that were accepted (or crashed a command) before, and the key each must be refused by.
fn bad_files() -> Vec<(String, &'static str)> {
    let mut files: Vec<(String, &'static str)> = [
        ("beta_conform = 800", "agents[0].sim.beta_conform"),
        ("beta_conform = 1e308", "agents[0].sim.beta_conform"),
        ("beta_conform = inf", "agents[0].sim.beta_conform"),
        ("beta_conform = nan", "agents[0].sim.beta_conform"),
        ("recency = nan", "agents[0].sim.recency"),
    ]
    .into_iter()
    .map(|(sim, key)| (sim_config(sim), key))
    .collect();
    for v in ["-5", "1e30"] {
        files.push((
            format!("[budget]\nmax_agent_time_sec = {v}\n"),
            "budget.max_agent_time_sec",
        ));
    }
    files
}

#[test]
fn config_check_refuses_each_bad_number_with_exit_2_naming_the_key() {
    let env = Env::new();
    for (i, (text, key)) in bad_files().iter().enumerate() {
        let path = env.write(&format!("bad{i}.toml"), text);
        let err = env.refused(&["config", "check", path.to_str().unwrap()]);
        assert!(err.contains(key), "{text}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_and_bench_refuse_a_sim_agent_beta_conform_800_before_any_run_is_created() {
    let env = Env::new();
    let config = env.write("beta.toml", &sim_config("beta_conform = 800"));
    let config = config.to_str().unwrap();
    let err = env.refused(&["ask", "What is 17 * 24?", "--config", config]);
    assert!(err.contains("agents[0].sim.beta_conform"), "{err}");
    let dataset = common::arith_dataset(&env, 2);
    let err = env.refused(&[
        "bench",
        "--dataset",
        &dataset,
        "--protocol",
        "som",
        "--config",
        config,
    ]);
    assert!(err.contains("agents[0].sim.beta_conform"), "{err}");
    // The store, if either command opened it, holds no run and no benchmark.
    if env.store().exists() {
        let store = moot_store::StoreLocation::parse(&env.store().display().to_string())
            .open(moot_store::Access::Read)
            .await
            .unwrap();
        let runs = store
            .list_runs(&moot_store::RunFilter::newest(10))
            .await
            .unwrap();
        assert!(runs.is_empty(), "{runs:?}");
        assert!(store.list_benches().await.unwrap().is_empty());
    }
}

#[test]
fn health_refuses_budget_seconds_no_duration_holds_with_exit_2_naming_the_key() {
    let env = Env::new();
    for v in ["-5", "1e30"] {
        let path = env.write(
            "health.toml",
            &format!(
                "[budget]\nmax_agent_time_sec = {v}\n[[agents]]\nid = \"s\"\nbackend = \"sim\"\n"
            ),
        );
        let err = env.refused(&["health", "--config", path.to_str().unwrap()]);
        assert!(err.contains("budget.max_agent_time_sec"), "{v}: {err}");
    }
}

#[test]
fn serve_refuses_a_bad_number_with_exit_2_naming_the_key_before_listening() {
    let env = Env::new();
    let config = env.write("beta.toml", &sim_config("beta_conform = inf"));
    let out = env
        .moot()
        .args(["serve", "--port", "0", "--config", config.to_str().unwrap()])
        // A server that wrongly starts is stopped rather than left waiting for requests.
        .timeout(Duration::from_secs(60))
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("agents[0].sim.beta_conform"), "{err}");
    // A listening server says its address first.
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!said.contains("http://"), "{said}");
}
