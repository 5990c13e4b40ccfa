//! The configuration file (TOML or YAML, one schema) and its defaults.
//!
//! Unknown keys and invalid values are errors that name the key and the file. With no file,
//! `moot ask` debates among three agents on the embedded default model.

use std::path::Path;

use moot_core::answer::AnswerKind;
use moot_core::decision::rule_names;
use moot_core::protocol::{build_protocol, ProtocolOptions, PROTOCOLS};
use serde::{Deserialize, Serialize};

use crate::input::InputError;
use moot_core::text::plural;

/// Agents `moot ask` and `moot bench` debate among when neither the configuration nor
/// `--agents` says (and the number `moot config check` assumes then).
pub const DEFAULT_AGENTS: usize = 3;

/// `debate.min_agents` when unset: a round proceeds at its soft deadline once two agents
/// answered (or every agent, when the debate has fewer).
pub const DEFAULT_MIN_AGENTS: usize = 2;

/// The most debate rounds a debate runs without a token budget. Every round is one call per
/// agent, and every call is stored, so a slip such as `--rounds 1000000` would otherwise run for
/// hours and fill the store; the papers debate for 1 to 5 rounds, and answers rarely change after
/// a few. A `budget.max_total_tokens` that pays for more raises it (see [`Config::validate_size`]).
pub const MAX_ROUNDS: usize = 10;

/// The most agents a debate has without a token budget: more than the papers use (3 to 9), and as
/// many as the embedded model serves as parallel sequences. A `budget.max_total_tokens` that pays
/// for more raises it.
pub const MAX_AGENTS: usize = 16;

/// What no budget raises: every debate holds an agents × rounds grid in memory, and each of an
/// agent's prompts carries its peers' responses (cost grows with the square of the agents).
pub const CEILING_ROUNDS: usize = 1000;
/// See [`CEILING_ROUNDS`].
pub const CEILING_AGENTS: usize = 256;

/// The least one call is taken to cost when a token budget raises [`MAX_ROUNDS`] or
/// [`MAX_AGENTS`]: a prompt with the question and the answer format plus a reply hardly ever take
/// fewer tokens. A budget of T tokens thus pays for at most T / 100 calls; a debate that planned
/// more would only record the rest as skipped.
pub const MIN_TOKENS_PER_CALL: u64 = 100;

/// The size of the debates a configuration is checked for (by [`Config::validate_size`]) and
/// where each number came from, so that an error names the flag or key the user set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebateSize {
    pub agents: usize,
    /// Debate rounds after round 0, as requested (before a protocol's own shape).
    pub rounds: usize,
    /// The number of agents came from `--agents` (else from the `[[agents]]` list or the default).
    pub agents_flag: bool,
    /// The number of rounds came from `--rounds` (else from `debate.rounds`).
    pub rounds_flag: bool,
    /// The configuration file, named in errors about its keys.
    pub file: Option<String>,
}

impl DebateSize {
    /// The size a configuration gives on its own: its agents (or [`DEFAULT_AGENTS`]) and
    /// `debate.rounds`.
    pub fn of(config: &Config) -> DebateSize {
        DebateSize {
            agents: if config.agents.is_empty() {
                DEFAULT_AGENTS
            } else {
                config.agents.len()
            },
            rounds: config.debate.rounds,
            agents_flag: false,
            rounds_flag: false,
            file: None,
        }
    }

    /// `key` as an error names it: prefixed with the configuration file, if there is one.
    fn config_key(&self, key: &str) -> String {
        match &self.file {
            Some(f) => format!("{f}: {key}"),
            None => key.to_string(),
        }
    }

    /// How the number of agents was given, e.g. `--agents 20` or `agents (20 configured)`.
    fn agents_key(&self) -> String {
        if self.agents_flag {
            format!("--agents {}", self.agents)
        } else {
            self.config_key(&format!("agents ({} configured)", self.agents))
        }
    }

    /// How the number of rounds was given, e.g. `--rounds 50` or `debate.rounds = 50`.
    fn rounds_key(&self) -> String {
        if self.rounds_flag {
            format!("--rounds {}", self.rounds)
        } else {
            self.config_key(&format!("debate.rounds = {}", self.rounds))
        }
    }

    /// "the 3 agents of the debate" / "the 2 agents --agents asks for".
    fn the_agents(&self) -> String {
        if self.agents_flag {
            format!("the {} --agents asks for", plural(self.agents, "agent"))
        } else {
            format!("the debate's {}", plural(self.agents, "agent"))
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub debate: DebateSection,
    /// Options of the chosen protocol (topology, masking, ordering, SVR-MAD, faults…).
    #[serde(default)]
    pub protocol: ProtocolOptions,
    #[serde(default)]
    pub security: SecuritySection,
    /// Retries of failed calls (network and process backends).
    #[serde(default)]
    pub retry: RetrySection,
    /// Limits on each debate (freemad's `budget` block).
    #[serde(default)]
    pub budget: BudgetSection,
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
}

/// Limits on each debate; unset is unlimited. When time or tokens run out, the remaining calls
/// are recorded as skipped with the reason and the decision uses what exists.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetSection {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_total_time_sec: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_round_time_sec: Option<f64>,
    /// One call, retries included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_agent_time_sec: Option<f64>,
    /// Input plus output tokens of a whole debate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// The prompt of one call, in estimated tokens (characters / 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens_per_agent_per_round: Option<u64>,
    /// Cut a longer prompt to fit (recorded) instead of not sending it.
    pub enable_token_truncation: bool,
}

impl BudgetSection {
    fn validate(&self) -> Result<(), String> {
        for (key, v) in [
            ("max_total_time_sec", self.max_total_time_sec),
            ("max_round_time_sec", self.max_round_time_sec),
            ("max_agent_time_sec", self.max_agent_time_sec),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v > 0.0 && v < 1e9) {
                    return Err(format!(
                        "budget.{key} = {v} must be a positive number of seconds"
                    ));
                }
            }
        }
        for (key, v) in [
            ("max_total_tokens", self.max_total_tokens),
            (
                "max_tokens_per_agent_per_round",
                self.max_tokens_per_agent_per_round,
            ),
        ] {
            if v == Some(0) {
                return Err(format!("budget.{key} must be > 0"));
            }
        }
        Ok(())
    }

    pub fn budget(&self) -> moot_engine::Budget {
        let secs = |v: Option<f64>| v.map(std::time::Duration::from_secs_f64);
        moot_engine::Budget {
            max_total_time: secs(self.max_total_time_sec),
            max_round_time: secs(self.max_round_time_sec),
            max_call_time: secs(self.max_agent_time_sec),
            max_total_tokens: self.max_total_tokens,
            max_prompt_tokens: self.max_tokens_per_agent_per_round,
            truncate_prompts: self.enable_token_truncation,
        }
    }
}

/// How failed calls are retried: rate-limited and transient failures only, with capped
/// exponential backoff and jitter; a server's `Retry-After` replaces the backoff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetrySection {
    /// Retries after the first attempt (0 turns retries off).
    pub max_retries: usize,
    pub min_delay_ms: u64,
    pub max_delay_ms: u64,
    pub jitter: bool,
}

impl Default for RetrySection {
    fn default() -> Self {
        let p = moot_backends::retry::RetryPolicy::default();
        RetrySection {
            max_retries: p.max_retries,
            min_delay_ms: p.min_delay.as_millis() as u64,
            max_delay_ms: p.max_delay.as_millis() as u64,
            jitter: p.jitter,
        }
    }
}

impl RetrySection {
    pub fn policy(&self) -> moot_backends::retry::RetryPolicy {
        moot_backends::retry::RetryPolicy {
            max_retries: self.max_retries,
            min_delay: std::time::Duration::from_millis(self.min_delay_ms),
            max_delay: std::time::Duration::from_millis(self.max_delay_ms),
            jitter: self.jitter,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DebateSection {
    pub protocol: String,
    /// Debate rounds after round 0.
    pub rounds: usize,
    /// numeric | choice | yes-no | math | text | auto (guess from the question).
    pub answer: String,
    /// Overrides the protocol's default decision rule.
    pub decision: Option<String>,
    pub seed: u64,
    pub soft_timeout_ms: u64,
    pub hard_timeout_ms: u64,
    /// A round proceeds at its soft deadline once this many agents answered; at most the number
    /// of agents ([`DEFAULT_MIN_AGENTS`] when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_agents: Option<usize>,
    pub max_concurrent_calls: usize,
    /// FREE-MAD weights [initial, abandon, adopt, keep].
    pub weights: Option<[f64; 4]>,
    /// "deterministic" or "random" (seeded with `seed`).
    pub tie_break: String,
    /// The gold answer, when known: `sim` agents need it, and the analysis-only orderings
    /// `truth-first` / `truth-last` read it.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "moot_core::faults::answer_text"
    )]
    pub gold: Option<String>,
    /// Ask an agent once more, for its final line only, when its answer cannot be read.
    pub reask: bool,
}

impl Default for DebateSection {
    fn default() -> Self {
        DebateSection {
            protocol: "free-mad-n".into(),
            rounds: 1,
            answer: "auto".into(),
            decision: None,
            seed: 41,
            // Local models on two cores need a while per round; remote setups usually lower these.
            soft_timeout_ms: 120_000,
            hard_timeout_ms: 300_000,
            min_agents: None,
            max_concurrent_calls: 8,
            weights: None,
            tie_break: "deterministic".into(),
            gold: None,
            reask: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecuritySection {
    /// Commands `cli` agents may run (exact string or the same resolved file).
    pub cli_allowed_commands: Vec<String>,
    /// Environment variables passed to `cli` agents besides PATH, HOME and LANG.
    pub cli_env_allow: Vec<String>,
    /// Regular expressions of secrets to remove from everything stored or printed, besides the
    /// built-in ones (`sk-…` keys, `Bearer …` tokens, …) and the API keys agents name.
    pub redact: Vec<String>,
    /// Cap on a `cli` agent's stdout and on its stderr, in bytes (freemad's
    /// `max_solution_size`).
    pub cli_max_output_bytes: usize,
    /// Cap on the prompt a `cli` agent is given, in bytes (freemad's `max_requirement_size`).
    pub cli_max_input_bytes: usize,
}

impl Default for SecuritySection {
    fn default() -> Self {
        SecuritySection {
            cli_allowed_commands: Vec::new(),
            cli_env_allow: Vec::new(),
            redact: Vec::new(),
            cli_max_output_bytes: moot_backends::cli::DEFAULT_MAX_OUTPUT_BYTES,
            cli_max_input_bytes: moot_backends::cli::DEFAULT_MAX_INPUT_BYTES,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub id: String,
    /// local | openai | anthropic | cli | scripted | sim
    pub backend: String,
    /// local: a known model name or a .gguf path; openai: the served model's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// openai, anthropic: several endpoints serving the same model, used in turn; one that
    /// fails is taken out for a while and the call goes to the next.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_urls: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Request token logprobs (openai, local).
    #[serde(default)]
    pub logprobs: bool,
    /// openai: use server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// openai: which server this is (auto | openai | vllm | llama.cpp | ollama | generic), for
    /// the request fields servers disagree on; `auto` guesses from the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    /// scripted: the replies, in order (the last repeats).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub responses: Vec<String>,
    /// sim: the simulated agent's parameters (see `moot_backends::sim::SimAgent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim: Option<moot_backends::sim::SimAgent>,
    /// Limits of this agent's provider and model, shared by every agent and debate in the
    /// process that calls the same one (they must agree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_minute: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<usize>,
    /// cli: the directory the command runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<std::path::PathBuf>,
}

impl AgentConfig {
    /// The rate limits this agent asks for.
    pub fn limits(&self) -> moot_backends::limits::Limits {
        use std::num::NonZeroU32;
        moot_backends::limits::Limits {
            requests_per_minute: self.requests_per_minute.and_then(NonZeroU32::new),
            tokens_per_minute: self.tokens_per_minute.and_then(NonZeroU32::new),
            max_in_flight: self.max_in_flight,
        }
    }
}

pub const BACKENDS: &[&str] = &["local", "openai", "anthropic", "cli", "scripted", "sim"];

/// The commented example `moot config example` prints.
pub const EXAMPLE: &str = r#"# moot configuration (TOML; the same keys work in YAML).

[debate]
protocol = "free-mad-n"        # cot | cot-sc | som | free-mad-n | free-mad-c | mad-m2 | madc | svr-mad | sparse | group-debate | s2-mad | sid-et
rounds = 1                     # debate rounds after round 0 (at most 10, unless budget.max_total_tokens pays for more)
answer = "numeric"             # numeric | choice | yes-no | math | text | auto
# decision = "free-mad"        # optional override of the protocol's rule: majority-last | free-mad | max-consistency | svr | sid-et
# gold = "408"                 # the known answer: sim agents and truth-first/-last orderings need it
seed = 41
soft_timeout_ms = 15000        # proceed once min_agents answered and this has passed
hard_timeout_ms = 30000        # cancel whatever is still running
min_agents = 2                 # at most the number of agents
max_concurrent_calls = 8
# weights = [20, 25, 30, 20]   # FREE-MAD [initial, abandon, adopt, keep]
# tie_break = "deterministic"  # or "random" (seeded)
# reask = true                 # one follow-up for the final line when an answer cannot be read

[protocol]                     # options of the chosen protocol; each names what reads it
# topology = "ring"            # all-to-all | ring | k-reviewers (k = 2) | star (hub = 1) | groups (groups = 2)
# masking = "subjective-strict" # mad-m2: subjective-strict | subjective-loose | objective
# judging = "shared"           # mad-m2 subjective: shared | per-agent
# keep = "lowest"              # mad-m2 objective: lowest | below-median
# ordering = "consistency-last" # fixed | random | consistency-last | truth-first | truth-last (need debate.gold)
# prior = "min-ll"             # svr-mad: min-ll | ppl | confidence
# challengers = 2              # svr-mad S
# accept_after = 2             # svr-mad C
# threshold = -1.0             # sid-et: min token log-likelihood above which the debate is skipped

# [protocol.faults]            # any protocol; seeded and recorded
# cut_off = 0.5                # fraction of agents that receive no peer messages
# malicious = 0.34             # fraction of agents arguing for malicious_answer
# malicious_answer = "42"
# drop = 0.1                   # chance that one peer message is lost
# delay = 0.1                  # chance that one peer message arrives a round late

[security]
cli_allowed_commands = ["/usr/local/bin/my-agent"]
# redact = ["corp-[0-9]{6}"]   # more secret patterns to remove from everything stored or printed
# cli_max_output_bytes = 1048576  # cap on a cli agent's stdout and stderr (freemad max_solution_size)
# cli_max_input_bytes = 1048576   # cap on the prompt a cli agent is given (max_requirement_size)

[budget]                       # limits on each debate; unset is unlimited
# (a debate has at most 10 rounds and 16 agents unless max_total_tokens pays for more, at 100 tokens a call)
# max_total_time_sec = 600     # then the remaining calls are skipped and the decision uses what exists
# max_round_time_sec = 120
# max_agent_time_sec = 60      # one call, retries included
# max_total_tokens = 200000    # input + output of the whole debate
# max_tokens_per_agent_per_round = 8000  # a prompt's estimated tokens (characters / 4)
# enable_token_truncation = true         # cut a longer prompt's middle (recorded) instead of not sending it

[retry]                        # rate-limited and transient failures; a server's Retry-After wins
max_retries = 3                # 0 turns retries off
min_delay_ms = 500             # doubled each retry, with jitter
max_delay_ms = 30000

[[agents]]
id = "a1"
backend = "openai"             # an OpenAI-compatible server: OpenAI, vLLM, llama.cpp, Ollama
base_url = "http://127.0.0.1:8080/v1"
model = "qwen2.5-0.5b"
# base_urls = ["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]  # instead: replicas used in turn, with failover
# dialect = "llama.cpp"        # auto | openai | vllm | llama.cpp | ollama | generic (auto: guessed from the URL)
api_key_env = "OPENAI_API_KEY" # optional: the NAME of the variable holding the key
temperature = 0.7
max_tokens = 512
# requests_per_minute = 500    # limits of this provider and model, shared by all its agents
# tokens_per_minute = 200000
# max_in_flight = 8

[[agents]]
id = "claude"
backend = "anthropic"          # Anthropic's Messages API (no logprobs: not for svr-mad/sid-et/objective masking)
model = "claude-sonnet-4-5"
api_key_env = "ANTHROPIC_API_KEY"
# base_url = "https://api.anthropic.com"  # the default
# max_tokens = 1024            # required by the API; this is the default

# [[agents]]
# id = "c1"
# backend = "cli"              # freemad's agent CLI contract: `command args… generate|critique`
# command = "/usr/local/bin/my-agent"  # must exist, be executable and be in security.cli_allowed_commands
# args = []
# working_dir = "/tmp/agent-sandbox"  # where it runs; its environment is emptied but for PATH, HOME, LANG and cli_env_allow

[[agents]]
id = "l1"
backend = "local"              # the embedded model
model = "qwen2.5-coder-0.5b"   # a known name or a .gguf path

# [[agents]]
# id = "s1"
# backend = "sim"              # a simulated agent (needs debate.gold): for research and tests
# sim = { accuracy = 0.6, beta = 1.0, alpha = 0.5, calibrated = true, judge_accuracy = 0.8 }
"#;

impl Config {
    /// Reads a TOML (`.toml`), YAML (`.yaml`/`.yml`) or JSON (`.json`) file; other extensions
    /// are tried as TOML then YAML. Errors name the file and, where the parser knows it, the key
    /// and line; text that is not UTF-8 names the offset, line and column of the first bad byte.
    ///
    /// The settings are checked ([`Config::validate_settings`]); the debate's size is not, as
    /// `--agents` and `--rounds` may still change it: callers check it with
    /// [`Config::validate_size`].
    pub fn load(path: &Path) -> Result<Config, InputError> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path)
            .map_err(|e| InputError(format!("cannot read config {name}: {e}")))?;
        let text = crate::input::utf8_text(&format!("config {name}"), bytes)?;
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_lowercase();
        let config = match ext.as_str() {
            "yaml" | "yml" => Self::from_yaml(&text),
            "toml" => Self::from_toml(&text),
            "json" => Self::from_json(&text),
            _ => Self::from_toml(&text)
                .or_else(|toml_err| Self::from_yaml(&text).map_err(|_| toml_err)),
        }
        .map_err(|e| InputError(format!("{name}: {e}")))?;
        config
            .validate_settings()
            .map_err(|e| InputError(format!("{name}: {e}")))?;
        Ok(config)
    }

    pub fn from_toml(text: &str) -> Result<Config, String> {
        toml::from_str(text).map_err(|e| e.to_string().trim().replace('\n', " "))
    }

    pub fn from_yaml(text: &str) -> Result<Config, String> {
        serde_saphyr::from_str(text).map_err(|e| e.to_string().trim().replace('\n', " "))
    }

    /// Errors quote the line up to where the parser stopped, so that they show the key.
    pub fn from_json(text: &str) -> Result<Config, String> {
        serde_json::from_str(text).map_err(|e| {
            let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
            let mut end = e.column().min(line.len());
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            let mut start = end.saturating_sub(60);
            while !line.is_char_boundary(start) {
                start += 1;
            }
            let near = line[start..end].trim();
            if near.is_empty() {
                e.to_string()
            } else {
                format!("{e}: `{near}`")
            }
        })
    }

    /// The configured decision rule, if `debate.decision` names one, and the rules' settings.
    pub fn decision(
        &self,
    ) -> Result<(Option<&'static str>, moot_core::decision::DecisionConfig), InputError> {
        use moot_core::decision::{DecisionConfig, FreeMadWeights, TieBreak, RULES};
        let d = &self.debate;
        let rule = match &d.decision {
            Some(r) => Some(
                RULES
                    .iter()
                    .find(|x| x.name == r)
                    .map(|x| x.name)
                    .ok_or_else(|| InputError(format!("unknown decision rule {r:?}")))?,
            ),
            None => None,
        };
        let config = DecisionConfig {
            tie_break: if d.tie_break == "random" {
                TieBreak::Random { seed: d.seed }
            } else {
                TieBreak::Deterministic
            },
            weights: match d.weights {
                Some(w) => FreeMadWeights::new(w)
                    .map_err(|err| InputError(format!("debate.weights: {err}")))?,
                None => FreeMadWeights::default(),
            },
            normalize: false,
        };
        Ok((rule, config))
    }

    /// Deadlines and parallelism of every debate.
    pub fn engine(&self) -> moot_engine::EngineConfig {
        let d = &self.debate;
        moot_engine::EngineConfig {
            soft_timeout: std::time::Duration::from_millis(d.soft_timeout_ms),
            hard_timeout: std::time::Duration::from_millis(d.hard_timeout_ms),
            min_agents: d.min_agents.unwrap_or(DEFAULT_MIN_AGENTS),
            max_concurrent_calls: d.max_concurrent_calls,
            cache: false,
            budget: self.budget.budget(),
            reask: d.reask,
        }
    }

    /// The protocol's options, with `debate.gold` passed on when the protocol reads it.
    pub fn protocol_options(&self) -> ProtocolOptions {
        let mut options = self.protocol.clone();
        let reads_gold = PROTOCOLS
            .iter()
            .any(|p| p.name == self.debate.protocol && p.options.contains(&"gold"));
        if options.gold.is_none() && reads_gold {
            options.gold = self.debate.gold.clone();
        }
        options
    }

    /// The protocol a stored run ran, rebuilt from the run's stored configuration with just the
    /// options that protocol reads (a benchmark stores one configuration for all its protocols);
    /// `None` when the configuration no longer reads or builds.
    pub fn protocol_of_run(
        run: &moot_store::RunRecord,
    ) -> Option<Box<dyn moot_core::protocol::Protocol>> {
        let config: Config = serde_json::from_value(run.config.clone()).ok()?;
        let reads = PROTOCOLS.iter().find(|p| p.name == run.protocol)?.options;
        moot_core::protocol::build_protocol(
            &run.protocol,
            &config.protocol_options().restricted_to(reads),
        )
        .ok()
    }

    /// What removes secrets from stored and printed text: the built-in patterns, the configured
    /// ones, and the values of the API keys the agents name (when set).
    pub fn redactor(&self) -> Result<moot_core::redact::Redactor, InputError> {
        let secrets = self
            .agents
            .iter()
            .filter_map(|a| a.api_key_env.as_deref())
            .filter_map(|var| std::env::var(var).ok())
            .collect();
        moot_core::redact::Redactor::new(&self.security.redact, secrets)
            .map_err(|e| InputError(format!("security.redact: {e}")))
    }

    /// Checks the whole configuration for the debate it describes on its own:
    /// [`Config::validate_settings`], then [`Config::validate_size`] for [`DebateSize::of`] it.
    pub fn validate(&self) -> Result<(), String> {
        self.validate_settings()?;
        self.validate_size(&DebateSize::of(self))
    }

    /// Checks that a debate of `size` can run under these settings with the configured protocol:
    /// see [`Config::validate_size_for`].
    pub fn validate_size(&self, size: &DebateSize) -> Result<(), String> {
        self.validate_size_for(size, &[self.debate.protocol.as_str()])
    }

    /// Checks that a debate of `size` can run under these settings with each of `protocols`
    /// (each given the options it reads):
    /// - at most [`MAX_ROUNDS`] rounds and [`MAX_AGENTS`] agents, unless `budget.max_total_tokens`
    ///   pays for every call at [`MIN_TOKENS_PER_CALL`] each, and never more than
    ///   [`CEILING_ROUNDS`] and [`CEILING_AGENTS`];
    /// - `debate.min_agents` no more than the agents;
    /// - topology and quorum options that the agents can satisfy (`k` < agents, `hub` an agent,
    ///   `groups` ≤ agents, SVR-MAD's `challengers` and `accept_after` < agents).
    pub fn validate_size_for(&self, size: &DebateSize, protocols: &[&str]) -> Result<(), String> {
        self.check_caps(size)?;
        self.check_protocol_counts()?;
        let n = size.agents;
        if let Some(m) = self.debate.min_agents {
            if m > n {
                return Err(format!(
                    "{} is more than {}: a round could never reach its quorum (lower debate.min_agents or add agents)",
                    size.config_key(&format!("debate.min_agents = {m}")),
                    size.the_agents()
                ));
            }
        }
        let o = &self.protocol;
        // Protocol options may come from the file or from `-o`: named without the file.
        let key = |k: &str, v: usize| format!("protocol.{k} = {v}");
        if let Some(k) = o.k {
            if k >= n {
                return Err(format!(
                    "{} needs more agents than {}: each agent reviews k of its peers, so k must be at most {}",
                    key("k", k),
                    size.the_agents(),
                    n.saturating_sub(1)
                ));
            }
        }
        if let Some(hub) = o.hub {
            if hub > n {
                return Err(format!(
                    "{} is not an agent: {} are numbered 1 to {n}",
                    key("hub", hub),
                    size.the_agents()
                ));
            }
        }
        if let Some(g) = o.groups {
            if g > n {
                return Err(format!(
                    "{} is more groups than {}",
                    key("groups", g),
                    size.the_agents()
                ));
            }
        }
        if let Some(c) = o.challengers {
            if c >= n {
                return Err(format!(
                    "{} needs more agents than {}: a receiver's challengers are its peers, at most {}",
                    key("challengers", c),
                    size.the_agents(),
                    n.saturating_sub(1)
                ));
            }
        }
        if let Some(c) = o.accept_after {
            if c >= n {
                return Err(format!(
                    "{} can never be reached with {}: a receiver meets at most {}",
                    key("accept_after", c),
                    size.the_agents(),
                    plural(n.saturating_sub(1), "challenger")
                ));
            }
        }
        // What the protocols' own defaults need (a ring or k-reviewers default, two groups…).
        let options = self.protocol_options();
        for name in protocols {
            let Some(entry) = PROTOCOLS.iter().find(|p| p.name == *name) else {
                continue;
            };
            let mut options = if protocols.len() > 1 {
                options.restricted_to(entry.options)
            } else {
                options.clone()
            };
            // The gold answer is checked where it is known (`moot ask`; each bench item has one).
            if options.gold.is_none() && entry.options.contains(&"gold") {
                options.gold = Some(String::new());
            }
            let Ok(protocol) = build_protocol(name, &options) else {
                continue; // the settings' check reports it
            };
            let (agents, rounds) = protocol.shape(n, size.rounds);
            let spec = moot_core::debate::DebateSpec::with_agents(
                "",
                AnswerKind::Numeric,
                agents,
                rounds,
                self.debate.seed,
            );
            protocol
                .validate(&spec)
                .map_err(|e| format!("protocol {name} with {}: {e}", size.the_agents()))?;
        }
        Ok(())
    }

    /// The protocol options that count something are at least 1.
    fn check_protocol_counts(&self) -> Result<(), String> {
        let o = &self.protocol;
        for (key, value) in [
            ("k", o.k),
            ("hub", o.hub),
            ("groups", o.groups),
            ("challengers", o.challengers),
            ("accept_after", o.accept_after),
        ] {
            if value == Some(0) {
                let why = if key == "hub" {
                    " (agents are numbered from 1)"
                } else {
                    ""
                };
                return Err(format!("protocol.{key} must be at least 1{why}"));
            }
        }
        Ok(())
    }

    /// [`MAX_ROUNDS`] and [`MAX_AGENTS`], raised (up to [`CEILING_ROUNDS`] and
    /// [`CEILING_AGENTS`]) by a token budget that pays for the calls.
    fn check_caps(&self, size: &DebateSize) -> Result<(), String> {
        for (over, key, ceiling, noun) in [
            (
                size.rounds > CEILING_ROUNDS,
                size.rounds_key(),
                CEILING_ROUNDS,
                "debate round",
            ),
            (
                size.agents > CEILING_AGENTS,
                size.agents_key(),
                CEILING_AGENTS,
                "agent",
            ),
        ] {
            if over {
                return Err(format!(
                    "{key} is over the limit of {}, the most one debate may have whatever its budget",
                    plural(ceiling, noun)
                ));
            }
        }
        let calls = (size.agents as u64).saturating_mul((size.rounds as u64).saturating_add(1));
        let needed = calls.saturating_mul(MIN_TOKENS_PER_CALL);
        let budget = self.budget.max_total_tokens;
        if budget.is_some_and(|t| t >= needed) {
            return Ok(());
        }
        let (key, limit) = if size.rounds > MAX_ROUNDS {
            (size.rounds_key(), plural(MAX_ROUNDS, "debate round"))
        } else if size.agents > MAX_AGENTS {
            (size.agents_key(), plural(MAX_AGENTS, "agent"))
        } else {
            return Ok(());
        };
        let how = match budget {
            None => format!("set budget.max_total_tokens to at least {needed}"),
            Some(t) => format!("raise budget.max_total_tokens from {t} to at least {needed}"),
        };
        Err(format!(
            "{key} is over the limit of {limit} a debate has without a token budget that pays for it; to raise the limit, {how} in the configuration ({} × {} at {MIN_TOKENS_PER_CALL} tokens per call)",
            plural(size.agents, "agent"),
            plural(size.rounds.saturating_add(1), "round"),
        ))
    }

    /// Checks values the types cannot, key by key: names, ranges, which keys each backend uses,
    /// that a `cli` agent's program exists and is executable. The debate's size is checked
    /// apart ([`Config::validate_size`]).
    pub fn validate_settings(&self) -> Result<(), String> {
        let d = &self.debate;
        if !PROTOCOLS.iter().any(|p| p.name == d.protocol) {
            return Err(format!(
                "debate.protocol = {:?} is not a protocol (expected one of {})",
                d.protocol,
                PROTOCOLS
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        self.check_protocol_counts()?;
        let options = self.protocol_options();
        build_protocol(&d.protocol, &options).map_err(|e| format!("protocol: {e}"))?;

        if d.answer != "auto" && d.answer.parse::<AnswerKind>().is_err() {
            return Err(format!(
                "debate.answer = {:?} is not an answer kind (numeric, choice, yes-no, math, text, auto)",
                d.answer
            ));
        }
        if let Some(rule) = &d.decision {
            if !rule_names().contains(&rule.as_str()) {
                return Err(format!(
                    "debate.decision = {rule:?} is not a decision rule (expected one of {})",
                    rule_names().join(", ")
                ));
            }
        }
        if d.hard_timeout_ms < d.soft_timeout_ms {
            return Err(format!(
                "debate.hard_timeout_ms ({}) must be >= debate.soft_timeout_ms ({})",
                d.hard_timeout_ms, d.soft_timeout_ms
            ));
        }
        if d.soft_timeout_ms == 0 {
            return Err("debate.soft_timeout_ms must be > 0".into());
        }
        if d.min_agents == Some(0) {
            return Err("debate.min_agents must be >= 1".into());
        }
        if d.max_concurrent_calls == 0 {
            return Err("debate.max_concurrent_calls must be >= 1".into());
        }
        if !["deterministic", "random"].contains(&d.tie_break.as_str()) {
            return Err(format!(
                "debate.tie_break = {:?} must be \"deterministic\" or \"random\"",
                d.tie_break
            ));
        }
        if let Some(w) = d.weights {
            if let Some((i, v)) = w
                .iter()
                .enumerate()
                .find(|(_, v)| !v.is_finite() || **v < 0.0)
            {
                return Err(format!(
                    "debate.weights[{i}] = {v} must be a finite number >= 0"
                ));
            }
        }
        if let Err(e) = moot_core::redact::Redactor::new(&self.security.redact, Vec::new()) {
            return Err(format!("security.redact: {e}"));
        }
        self.budget.validate()?;
        for (key, v) in [
            ("cli_max_output_bytes", self.security.cli_max_output_bytes),
            ("cli_max_input_bytes", self.security.cli_max_input_bytes),
        ] {
            if v == 0 {
                return Err(format!("security.{key} must be > 0"));
            }
        }
        let r = &self.retry;
        if r.min_delay_ms > r.max_delay_ms {
            return Err(format!(
                "retry.min_delay_ms = {} must not exceed retry.max_delay_ms = {}",
                r.min_delay_ms, r.max_delay_ms
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, a) in self.agents.iter().enumerate() {
            let at = format!("agents[{i}]");
            if a.base_url.is_some() && !a.base_urls.is_empty() {
                return Err(format!("{at}: give base_url or base_urls, not both"));
            }
            if !a.base_urls.is_empty() && !matches!(a.backend.as_str(), "openai" | "anthropic") {
                return Err(format!(
                    "{at}.base_urls is not used by backend {:?}",
                    a.backend
                ));
            }
            if a.id.trim().is_empty() {
                return Err(format!("{at}.id must not be empty"));
            }
            if let Some(dialect) = &a.dialect {
                if a.backend != "openai" {
                    return Err(format!("{at}.dialect is only used by backend \"openai\""));
                }
                moot_backends::openai::Dialect::resolve(Some(dialect), "")
                    .map_err(|e| format!("{at}.dialect: {e}"))?;
            }
            if !seen.insert(a.id.as_str()) {
                return Err(format!("{at}.id = {:?} is used by another agent", a.id));
            }
            if !BACKENDS.contains(&a.backend.as_str()) {
                return Err(format!(
                    "{at}.backend = {:?} is not a backend (expected one of {})",
                    a.backend,
                    BACKENDS.join(", ")
                ));
            }
            if let Some(t) = a.temperature {
                if !(0.0..=2.0).contains(&t) {
                    return Err(format!("{at}.temperature = {t} must be between 0 and 2"));
                }
            }
            if let Some(p) = a.top_p {
                if !(p > 0.0 && p <= 1.0) {
                    return Err(format!("{at}.top_p = {p} must be in (0, 1]"));
                }
            }
            if a.max_tokens == Some(0) {
                return Err(format!("{at}.max_tokens must be > 0"));
            }
            for (key, value) in [
                (
                    "requests_per_minute",
                    a.requests_per_minute.map(|v| v as u64),
                ),
                ("tokens_per_minute", a.tokens_per_minute.map(|v| v as u64)),
                ("max_in_flight", a.max_in_flight.map(|v| v as u64)),
            ] {
                if value == Some(0) {
                    return Err(format!("{at}.{key} must be > 0"));
                }
            }
            let unused = |key: &str, set: bool| -> Result<(), String> {
                if set {
                    Err(format!("{at}.{key} is not used by backend {:?}", a.backend))
                } else {
                    Ok(())
                }
            };
            match a.backend.as_str() {
                "openai" => {
                    if (a.base_url.is_none() && a.base_urls.is_empty()) || a.model.is_none() {
                        return Err(format!(
                            "{at}: backend \"openai\" needs base_url (or base_urls) and model"
                        ));
                    }
                    unused("working_dir", a.working_dir.is_some())?;
                    unused("command", a.command.is_some())?;
                    unused("args", !a.args.is_empty())?;
                    unused("responses", !a.responses.is_empty())?;
                }
                "anthropic" => {
                    if a.model.is_none() {
                        return Err(format!("{at}: backend \"anthropic\" needs model"));
                    }
                    if a.temperature.is_some_and(|t| t > 1.0) {
                        return Err(format!(
                            "{at}.temperature must be at most 1 for backend \"anthropic\""
                        ));
                    }
                    if a.logprobs {
                        return Err(format!(
                            "{at}.logprobs: backend \"anthropic\" has no token logprobs"
                        ));
                    }
                    unused("working_dir", a.working_dir.is_some())?;
                    unused("command", a.command.is_some())?;
                    unused("args", !a.args.is_empty())?;
                    unused("responses", !a.responses.is_empty())?;
                }
                "cli" => {
                    let Some(command) = &a.command else {
                        return Err(format!("{at}: backend \"cli\" needs command"));
                    };
                    if !self
                        .security
                        .cli_allowed_commands
                        .iter()
                        .any(|c| c == command)
                    {
                        return Err(format!(
                            "{at}.command = {command:?} is not in security.cli_allowed_commands"
                        ));
                    }
                    if let Some(dir) = &a.working_dir {
                        if !dir.is_dir() {
                            return Err(format!(
                                "{at}.working_dir = {} is not a directory",
                                dir.display()
                            ));
                        }
                    }
                    if let Some(problem) = program_problem(command, a.working_dir.as_deref()) {
                        return Err(format!("{at} (id {:?}): {problem}", a.id));
                    }
                    unused("base_url", a.base_url.is_some())?;
                    unused("api_key_env", a.api_key_env.is_some())?;
                    unused("responses", !a.responses.is_empty())?;
                }
                "local" => {
                    unused("base_url", a.base_url.is_some())?;
                    unused("api_key_env", a.api_key_env.is_some())?;
                    unused("command", a.command.is_some())?;
                    unused("args", !a.args.is_empty())?;
                    unused("responses", !a.responses.is_empty())?;
                    if let Some(m) = &a.model {
                        moot_backends::models::ModelRef::parse(m)
                            .map_err(|e| format!("{at}.model: {e}"))?;
                    }
                }
                "scripted" if a.responses.is_empty() => {
                    return Err(format!("{at}: backend \"scripted\" needs responses"));
                }
                // The gold answer a sim agent needs comes from `debate.gold` for `moot ask` and
                // from each item for `moot bench`; `ask` checks it.
                "sim" => {
                    let sim = a.sim.clone().unwrap_or_default();
                    for (key, v) in [
                        ("accuracy", sim.accuracy),
                        ("alpha", sim.alpha),
                        ("judge_accuracy", sim.judge_accuracy),
                        ("unsure", sim.unsure),
                    ] {
                        if !(0.0..=1.0).contains(&v) {
                            return Err(format!("{at}.sim.{key} = {v} must be between 0 and 1"));
                        }
                    }
                    unused("base_url", a.base_url.is_some())?;
                    unused("command", a.command.is_some())?;
                    unused("responses", !a.responses.is_empty())?;
                }
                _ => {}
            }
            if a.sim.is_some() && a.backend != "sim" {
                return Err(format!("{at}.sim is not used by backend {:?}", a.backend));
            }
        }
        Ok(())
    }
}

/// Why `command` cannot be started the way the `cli` backend starts it, if it cannot: a path
/// (with a `/`; a relative one from `working_dir`, where the agent runs) that does not exist or
/// is not an executable file, or a bare name that no directory of `PATH` holds as an executable
/// file.
pub fn program_problem(command: &str, working_dir: Option<&Path>) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    enum Found {
        Missing,
        NotExecutable(String),
        Executable,
    }
    let look = |path: &Path| -> Found {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Found::Missing,
            Err(e) => Found::NotExecutable(format!("cannot be read ({e})")),
            Ok(m) if !m.is_file() => Found::NotExecutable("is not a file".into()),
            Ok(m) if m.permissions().mode() & 0o111 == 0 => {
                Found::NotExecutable("is not executable".into())
            }
            Ok(_) => Found::Executable,
        }
    };
    if command.trim().is_empty() {
        return Some("command is empty".into());
    }
    if command.contains('/') {
        let path = match working_dir {
            Some(dir) if Path::new(command).is_relative() => dir.join(command),
            _ => Path::new(command).to_path_buf(),
        };
        return match look(&path) {
            Found::Executable => None,
            Found::Missing => Some(format!("command {} does not exist", path.display())),
            Found::NotExecutable(why) => Some(format!("command {} {why}", path.display())),
        };
    }
    // As the spawn searches PATH: the first executable file of that name wins; files that are
    // not executable are passed over.
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let mut unusable = None;
    for dir in std::env::split_paths(&path_var) {
        let candidate = dir.join(command);
        match look(&candidate) {
            Found::Executable => return None,
            Found::NotExecutable(why) if unusable.is_none() => {
                unusable = Some(format!("command {} {why}", candidate.display()));
            }
            _ => {}
        }
    }
    Some(unusable.unwrap_or_else(|| format!("command {command:?} is not found on PATH")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_is_valid_toml_and_yaml_round_trips() {
        let c = Config::from_toml(EXAMPLE).unwrap();
        c.validate().unwrap();
        assert_eq!(c.agents.len(), 3);
        assert_eq!(c.debate.soft_timeout_ms, 15_000);
        let yaml =
            "debate:\n  protocol: som\n  rounds: 2\nagents:\n  - id: l1\n    backend: local\n";
        let y = Config::from_yaml(yaml).unwrap();
        y.validate().unwrap();
        assert_eq!(
            (y.debate.protocol.as_str(), y.debate.rounds, y.agents.len()),
            ("som", 2, 1)
        );
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let e = Config::from_toml("[debate]\nprotocl = \"som\"\n").unwrap_err();
        assert!(e.contains("protocl"), "{e}");
        let e = Config::from_yaml("debate:\n  rounds: 1\n  colour: red\n").unwrap_err();
        assert!(e.contains("colour"), "{e}");
        let e = Config::from_toml("[debate]\nrounds = \"two\"\n").unwrap_err();
        assert!(e.contains("rounds"), "{e}");
        let bad = |toml: &str, needle: &str| {
            let c = Config::from_toml(toml).unwrap();
            let e = c.validate().unwrap_err();
            assert!(e.contains(needle), "{toml}: {e}");
        };
        bad("[debate]\nprotocol = \"vote\"\n", "debate.protocol");
        bad("[debate]\nanswer = \"number\"\n", "debate.answer");
        bad(
            "[debate]\nsoft_timeout_ms = 10\nhard_timeout_ms = 5\n",
            "hard_timeout_ms",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"gpt\"\n",
            "agents[0].backend",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"openai\"\n",
            "needs base_url",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"cli\"\ncommand = \"/bin/sh\"\n",
            "cli_allowed_commands",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"local\"\ncommand = \"x\"\n",
            "agents[0].command",
        );
        bad("[[agents]]\nid = \"a\"\nbackend = \"local\"\n[[agents]]\nid = \"a\"\nbackend = \"local\"\n", "agents[1].id");
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"local\"\ntemperature = 9.0\n",
            "temperature",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"openai\"\nbase_url = \"http://h/v1\"\nmodel = \"m\"\ndialect = \"lmstudio\"\n",
            "agents[0].dialect: configuration: dialect \"lmstudio\" is not one of auto, openai, vllm, llama.cpp, ollama, generic",
        );
        bad(
            "[[agents]]\nid = \"a\"\nbackend = \"anthropic\"\nmodel = \"m\"\ndialect = \"vllm\"\n",
            "agents[0].dialect is only used by backend \"openai\"",
        );
        bad("[protocol]\nmasking = \"objective\"\n", "masking");
        bad(
            "[debate]\nprotocol = \"madc\"\n[protocol]\nordering = \"truth-last\"\n[protocol.faults]\ndrop = 2.0\n",
            "faults.drop",
        );
        bad(
            "[debate]\ngold = \"1\"\n[[agents]]\nid = \"s\"\nbackend = \"sim\"\nsim = { accuracy = 2.0 }\n",
            "agents[0].sim.accuracy",
        );
        let numeric = Config::from_toml(
            "[debate]\ngold = 408\n[protocol.faults]\nmalicious = 0.3\nmalicious_answer = 7\n",
        )
        .unwrap();
        assert_eq!(numeric.debate.gold.as_deref(), Some("408"));
        assert_eq!(
            numeric.protocol.faults.malicious_answer.as_deref(),
            Some("7")
        );
        let e = Config::from_toml("[protocol]\nmaskng = \"objective\"\n").unwrap_err();
        assert!(e.contains("maskng"), "{e}");
    }

    fn size(agents: usize, rounds: usize) -> DebateSize {
        DebateSize {
            agents,
            rounds,
            agents_flag: true,
            rounds_flag: true,
            file: Some("f.toml".into()),
        }
    }

    #[test]
    fn sizes_are_capped_unless_the_token_budget_pays() {
        let c = Config::default();
        c.validate_size(&size(MAX_AGENTS, MAX_ROUNDS)).unwrap();
        let e = c.validate_size(&size(3, MAX_ROUNDS + 1)).unwrap_err();
        assert!(
            e.starts_with("--rounds 11 is over the limit of 10 debate rounds")
                && e.contains("set budget.max_total_tokens to at least 3600"),
            "{e}"
        );
        let e = c.validate_size(&size(MAX_AGENTS + 1, 1)).unwrap_err();
        assert!(
            e.starts_with("--agents 17 is over the limit of 16 agents"),
            "{e}"
        );
        let mut budgeted = Config::default();
        budgeted.budget.max_total_tokens = Some(3600);
        budgeted.validate_size(&size(3, 11)).unwrap();
        let e = budgeted.validate_size(&size(3, 12)).unwrap_err();
        assert!(e.contains("from 3600 to at least 3900"), "{e}");
        budgeted.budget.max_total_tokens = Some(u64::MAX);
        budgeted
            .validate_size(&size(CEILING_AGENTS, CEILING_ROUNDS))
            .unwrap();
        let e = budgeted.validate_size(&size(3, usize::MAX)).unwrap_err();
        assert!(e.contains("limit of 1000 debate rounds"), "{e}");
        let e = budgeted
            .validate_size(&size(usize::MAX, usize::MAX))
            .unwrap_err();
        assert!(e.contains("limit of 1000 debate rounds"), "{e}");
        // From the file, the key and the file are named.
        let mut file = Config::from_toml("[debate]\nrounds = 20\n").unwrap();
        let e = file.validate().unwrap_err();
        assert!(e.starts_with("debate.rounds = 20 is over"), "{e}");
        file.debate.rounds = 2;
        file.debate.min_agents = Some(4);
        let e = file
            .validate_size(&DebateSize {
                file: Some("f.toml".into()),
                ..DebateSize::of(&file)
            })
            .unwrap_err();
        assert!(
            e.starts_with("f.toml: debate.min_agents = 4 is more than the debate's 3 agents"),
            "{e}"
        );
    }

    #[test]
    fn programs_are_found_as_the_spawn_finds_them() {
        let dir = std::env::temp_dir().join(format!("moot-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("plain");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let p = plain.to_str().unwrap();
        assert!(program_problem(p, None)
            .unwrap()
            .ends_with("is not executable"));
        assert!(program_problem("plain", None).is_some());
        // Relative paths are taken from the agent's working directory.
        assert!(program_problem("./plain", Some(&dir))
            .unwrap()
            .ends_with("is not executable"));
        let d = dir.to_str().unwrap();
        assert!(program_problem(d, None).unwrap().ends_with("is not a file"));
        let gone = dir.join("gone");
        assert!(program_problem(gone.to_str().unwrap(), None)
            .unwrap()
            .ends_with("does not exist"));
        assert_eq!(program_problem("sh", None), None);
        assert_eq!(program_problem("/bin/sh", None), None);
        assert!(program_problem("", None).is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
