//! Agents as older versions of moot stored them (a run's `config_json`) read back as the same
//! agents, and agents read from each file format keep the values the format gives them.

use std::path::Path;

use moot_config::dialect::native::{from_toml, from_value, from_yaml};

/// One agent of every backend, each key of its backend set.
const TEAM: &str = r#"
[[agents]]
id = "l"
backend = "local"
model = "qwen2.5-coder-0.5b"
logprobs = true
temperature = 0.5
top_p = 0.9
max_tokens = 100
seed = 7
persona = "careful"
contract = "freemad"
role = "judge"
requests_per_minute = 10
tokens_per_minute = 1000
max_in_flight = 2

[[agents]]
id = "o1"
backend = "openai"
model = "m"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "MOOT_TEST_KEY"
logprobs = true
stream = true
dialect = "vllm"

[[agents]]
id = "o2"
backend = "openai"
model = "m"
base_urls = ["http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"]

[[agents]]
id = "a"
backend = "anthropic"
model = "claude"
base_url = "http://127.0.0.1:9"
api_key_env = "MOOT_TEST_KEY"
stream = true

[[agents]]
id = "a2"
backend = "anthropic"
model = "claude"
base_urls = ["http://127.0.0.1:9", "http://127.0.0.1:10"]

[[agents]]
id = "c"
backend = "cli"
command = "/bin/sh"
args = ["-c", "echo 1"]
mode_arg = false
args_after_mode = ["--x"]
working_dir = "/tmp"

[[agents]]
id = "r"
backend = "scripted"
responses = ["1", "2"]

[[agents]]
id = "s"
backend = "sim"
sim = { accuracy = 0.3, distractors = ["41", "43"] }
logprobs = true
"#;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/stored")
        .join(name)
}

fn agents(config: moot_config::Config) -> Vec<moot_config::AgentConfig> {
    config.agents
}

/// `fixtures/stored/agents.json` is [`TEAM`] as moot stored it before backends were one module
/// each (every agent with `logprobs` and `stream`, in the flat order of that version).
#[test]
fn agents_stored_by_an_older_moot_read_back_as_the_same_agents() {
    let text = std::fs::read_to_string(fixture("agents.json")).unwrap();
    let stored = from_value(serde_json::from_str(&text).unwrap()).unwrap();
    assert_eq!(agents(stored), agents(from_toml(TEAM).unwrap()));
}

#[test]
fn agents_read_back_as_they_are_stored_and_converted() {
    let config = from_toml(TEAM).unwrap();
    let json = serde_json::to_value(&config).unwrap();
    assert_eq!(from_value(json).unwrap(), config);
    let toml = toml::to_string(&config).unwrap();
    assert_eq!(from_toml(&toml).unwrap(), config, "{toml}");
}

/// YAML reads a plain `8080` as a string where a string is wanted: backend keys keep that.
#[test]
fn yaml_reads_backend_keys_as_the_types_they_are() {
    let config = from_yaml(
        "agents:\n  - id: c\n    backend: cli\n    command: /bin/sh\n    args: [--port, 8080]\n  - id: r\n    backend: scripted\n    responses: [42, yes]\n  - id: s\n    backend: sim\n    sim: {distractors: [41, 43]}\n",
    )
    .unwrap();
    let json = serde_json::to_value(&config).unwrap();
    assert_eq!(
        json["agents"][0]["args"],
        serde_json::json!(["--port", "8080"])
    );
    assert_eq!(
        json["agents"][1]["responses"],
        serde_json::json!(["42", "yes"])
    );
    assert_eq!(
        json["agents"][2]["sim"]["distractors"],
        serde_json::json!(["41", "43"])
    );
}
