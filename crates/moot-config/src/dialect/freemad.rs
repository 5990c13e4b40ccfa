//! freemad's configuration files (YAML or JSON), read as they are, so that a freemad user's
//! configs run under moot unchanged. The facts come from freemad 2.0.0 (see
//! docs/freemad-reference.md); the keys map onto moot's [`Config`] as below, and every place
//! where moot's meaning differs is a [`Note`] (`moot config convert` prints them as comments).
//!
//! - `agents[]` (enabled ones) become `cli` agents whose arguments are exactly the ones freemad
//!   passes: the words of `cli_command` (split as Python's `shlex.split` does), the mode word
//!   when `cli_mode_arg`, `cli_flags`, `cli_args` sorted by key as `--key value` (a key starting
//!   with `-` as it is), then `cli_positional`. The prompt goes on stdin, as in freemad.
//! - `topology`, `deadlines`, `scoring`, `security` and `budget` become moot's protocol
//!   options, debate deadlines, decision settings, security and budget, with freemad's
//!   defaults where the file is silent. Topologies keep freemad's graphs: `ring` is
//!   `next-on-ring`, `k_reviewers` is `freemad-k-reviewers` (the same draw, from
//!   `topology.seed`, which becomes the debate seed), and a `star` whose hub is disabled, where
//!   no agent reads a peer, is groups of one agent.
//! - `output`, `cache`, `validation` and `logging` become moot's transcript files, request
//!   cache, code sandbox and log file.
//!
//! Unlike freemad, unknown keys are errors (freemad ignores them), and values must have the
//! type the key takes (freemad converts with Python's `int()`/`str()` and may crash).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::agent::AgentConfig;
use crate::backend::cli::Cli;
use crate::backend::Backend;
use crate::config::Config;
use crate::error::{invalid, ConfigError};
use crate::names::TieBreakSetting;

/// Where moot reads a freemad key differently from freemad itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The freemad key (`scoring.normalize`, `agents[1].timeout`).
    pub key: String,
    pub message: String,
}

/// The keys only freemad's files have at the top level (moot's own files have none of them).
const FREEMAD_SECTIONS: &[&str] = &[
    "topology",
    "deadlines",
    "scoring",
    "output",
    "logging",
    "validation",
    "cache",
];

/// Whether a parsed file is a freemad configuration: it has a section only freemad has, or an
/// agent with freemad's `type` or `cli_command`.
pub fn recognises(doc: &Value) -> bool {
    let Some(top) = doc.as_object() else {
        return false;
    };
    if FREEMAD_SECTIONS.iter().any(|k| top.contains_key(*k)) {
        return true;
    }
    top.get("agents")
        .and_then(Value::as_array)
        .is_some_and(|agents| {
            agents
                .iter()
                .any(|a| a.get("type").is_some() || a.get("cli_command").is_some())
        })
}

/// A freemad configuration file's keys (freemad 2.0.0's full reference).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FreemadConfig {
    pub agents: Option<Vec<FreemadAgent>>,
    pub topology: Topology,
    pub deadlines: Deadlines,
    pub scoring: Scoring,
    pub security: Security,
    pub budget: Budget,
    pub output: Output,
    pub logging: Logging,
    pub validation: Validation,
    pub cache: Cache,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreemadAgent {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub cli_command: Option<String>,
    #[serde(default)]
    pub cli_mode_arg: bool,
    #[serde(default)]
    pub cli_flags: Vec<Scalar>,
    #[serde(default)]
    pub cli_args: BTreeMap<String, Scalar>,
    #[serde(default)]
    pub cli_positional: Vec<Scalar>,
    /// Seconds.
    #[serde(default = "sixty")]
    pub timeout: f64,
    #[serde(default)]
    pub config: AgentSampling,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSampling {
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
}

/// A YAML/JSON scalar that freemad turns into text with Python's `str()`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    Null,
}

impl Scalar {
    /// The text Python's `str()` gives: `True`, `None`, `7`, `0.5`, `1.0`, `1e+20`.
    pub fn python_str(&self) -> String {
        match self {
            Scalar::Bool(true) => "True".into(),
            Scalar::Bool(false) => "False".into(),
            Scalar::Null => "None".into(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Text(s) => s.clone(),
            Scalar::Float(f) => python_float(*f),
        }
    }
}

/// Python's `repr(float)`: the shortest text that reads back, with `.0` on whole numbers and
/// an exponent (`1e+20`, `1e-05`) outside 1e-4 ≤ |x| < 1e16.
fn python_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let magnitude = f.abs();
    if f == 0.0 || (1e-4..1e16).contains(&magnitude) {
        let text = format!("{f}");
        return if text.contains('.') {
            text
        } else {
            format!("{text}.0")
        };
    }
    // Rust writes `1e20` / `1.5e-7`; Python `1e+20` / `1.5e-07`.
    let text = format!("{f:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exponent),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

fn yes() -> bool {
    true
}

fn sixty() -> f64 {
    60.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Topology {
    #[serde(rename = "type")]
    pub kind: String,
    pub k: Option<usize>,
    pub seed: u64,
    pub hub_agent: Option<String>,
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            kind: "all_to_all".into(),
            k: None,
            seed: 12345,
            hub_agent: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Deadlines {
    pub soft_timeout_ms: u64,
    pub hard_timeout_ms: u64,
    pub min_agents: usize,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            soft_timeout_ms: 15_000,
            hard_timeout_ms: 30_000,
            min_agents: 2,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Scoring {
    pub weights: Vec<f64>,
    pub normalize: bool,
    pub tie_break: String,
    pub random_seed: u64,
}

impl Default for Scoring {
    fn default() -> Self {
        Scoring {
            weights: vec![20.0, 25.0, 30.0, 20.0],
            normalize: true,
            tie_break: "deterministic".into(),
            random_seed: 987_654_321,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Security {
    pub api_key_source: Option<Value>,
    pub api_key_name: Option<Value>,
    pub redact_patterns: Vec<String>,
    /// Characters.
    pub max_requirement_size: usize,
    /// Characters.
    pub max_solution_size: usize,
    pub max_critique_size: usize,
    pub cli_use_shell: bool,
    pub cli_timeout_ms: u64,
    pub cli_allowed_commands: Vec<String>,
}

impl Default for Security {
    fn default() -> Self {
        Security {
            api_key_source: None,
            api_key_name: None,
            redact_patterns: vec![
                r"sk-[A-Za-z0-9_\-]+".into(),
                r"(?i)api[_-]?key\s*[:=]\s*\S+".into(),
            ],
            max_requirement_size: 20_000,
            max_solution_size: 40_000,
            max_critique_size: 20_000,
            cli_use_shell: false,
            cli_timeout_ms: 60_000,
            cli_allowed_commands: vec![
                "zen".into(),
                "zen-mcp".into(),
                "claude".into(),
                "codex".into(),
            ],
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budget {
    pub max_total_time_sec: Option<f64>,
    pub max_round_time_sec: Option<f64>,
    pub max_agent_time_sec: Option<f64>,
    pub max_tokens_per_agent_per_round: Option<u64>,
    pub max_total_tokens: Option<u64>,
    pub enforce_total_tokens: bool,
    pub enable_token_truncation: bool,
    pub max_concurrent_agents: Option<usize>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_total_time_sec: Some(120.0),
            max_round_time_sec: Some(30.0),
            max_agent_time_sec: Some(20.0),
            max_tokens_per_agent_per_round: None,
            max_total_tokens: None,
            enforce_total_tokens: false,
            enable_token_truncation: true,
            max_concurrent_agents: None,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Output {
    pub save_transcript: Option<bool>,
    pub transcript_dir: Option<String>,
    pub format: Option<String>,
    pub verbose: Option<bool>,
    pub include_topology_info: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Logging {
    pub level: Option<String>,
    pub file: Option<String>,
    pub console: Option<bool>,
    pub structured: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Validation {
    pub enable_sandbox: Option<bool>,
    pub sandbox_timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Cache {
    pub enabled: Option<bool>,
    pub dir: Option<String>,
    pub max_entries: Option<u64>,
}

/// The agent types freemad knows (matched without regard to case).
pub const AGENT_TYPES: &[&str] = &["claude_code", "openai_codex"];

/// Splits a command line as Python's `shlex.split` does (POSIX mode, no comments): quotes group
/// words, a backslash escapes outside quotes and, inside double quotes, only `"` and `\`; `#`
/// is an ordinary character. (The `shlex` crate reads `#` as a comment, so it would give other
/// arguments than freemad.) `None` for an unclosed quote or a trailing backslash.
pub fn split_command(line: &str) -> Option<Vec<String>> {
    #[derive(PartialEq)]
    enum In {
        Space,
        Word,
        Single,
        Double,
    }
    let mut words = Vec::new();
    let mut word = String::new();
    let mut state = In::Space;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match state {
            In::Space | In::Word => match c {
                ' ' | '\t' | '\r' | '\n' => {
                    if state == In::Word {
                        words.push(std::mem::take(&mut word));
                        state = In::Space;
                    }
                }
                '\'' => state = In::Single,
                '"' => state = In::Double,
                '\\' => {
                    word.push(chars.next()?);
                    state = In::Word;
                }
                c => {
                    word.push(c);
                    state = In::Word;
                }
            },
            In::Single => match c {
                '\'' => state = In::Word,
                c => word.push(c),
            },
            In::Double => match c {
                '"' => state = In::Word,
                '\\' => match chars.next()? {
                    escaped @ ('"' | '\\') => word.push(escaped),
                    other => {
                        word.push('\\');
                        word.push(other);
                    }
                },
                c => word.push(c),
            },
        }
    }
    match state {
        In::Single | In::Double => None,
        In::Word => {
            words.push(word);
            Some(words)
        }
        In::Space => Some(words),
    }
}

impl FreemadAgent {
    /// The arguments freemad passes after the command's own words and the mode word: the flags,
    /// the `cli_args` sorted by key as `--key value` (a key starting with `-` as it is), then
    /// the positional arguments.
    pub fn args_after_mode(&self) -> Vec<String> {
        let mut argv: Vec<String> = self.cli_flags.iter().map(Scalar::python_str).collect();
        // A BTreeMap of String keys iterates in code-point order, as Python's sorted() does.
        for (key, value) in &self.cli_args {
            argv.push(if key.starts_with('-') {
                key.clone()
            } else {
                format!("--{key}")
            });
            argv.push(value.python_str());
        }
        argv.extend(self.cli_positional.iter().map(Scalar::python_str));
        argv
    }

    /// The call timeout freemad uses: the largest of the agent's `timeout`,
    /// `security.cli_timeout_ms` and `budget.max_agent_time_sec` (unset: no limit).
    fn timeout_sec(&self, security: &Security, budget: &Budget) -> f64 {
        let agent = if self.timeout > 0.0 {
            self.timeout
        } else {
            60.0
        };
        let budget = budget
            .max_agent_time_sec
            .unwrap_or(crate::budget::MAX_SECONDS);
        agent
            .max(security.cli_timeout_ms as f64 / 1000.0)
            .max(budget)
    }
}

/// Reads a parsed freemad file.
pub fn from_value(doc: Value) -> Result<FreemadConfig, ConfigError> {
    serde_path_to_error::deserialize(doc).map_err(|e| {
        let key = e.path().to_string();
        ConfigError::new(
            key.clone(),
            format!("freemad configuration: {key}: {}", e.inner()),
        )
    })
}

impl FreemadConfig {
    /// The moot configuration that runs this freemad one, and where its meaning differs.
    pub fn to_moot(&self) -> Result<(Config, Vec<Note>), ConfigError> {
        self.validate()?;
        let mut notes = Vec::new();
        let mut config = Config::default();
        self.map_agents(&mut config, &mut notes)?;
        self.map_topology(&mut config, &mut notes)?;
        self.map_debate(&mut config, &mut notes);
        self.map_security(&mut config, &mut notes)?;
        self.map_budget(&mut config, &mut notes);
        self.map_cache(&mut config, &mut notes);
        self.map_output(&mut config, &mut notes)?;
        self.map_validation(&mut config, &mut notes);
        self.map_logging(&mut config, &mut notes)?;
        Ok((config, notes))
    }

    fn agents(&self) -> Vec<FreemadAgent> {
        self.agents.clone().unwrap_or_else(|| {
            ["claude", "codex"]
                .iter()
                .zip(AGENT_TYPES)
                .map(|(id, kind)| FreemadAgent {
                    id: id.to_string(),
                    kind: kind.to_string(),
                    enabled: true,
                    cli_command: None,
                    cli_mode_arg: false,
                    cli_flags: vec![],
                    cli_args: BTreeMap::new(),
                    cli_positional: vec![],
                    timeout: 60.0,
                    config: AgentSampling::default(),
                })
                .collect()
        })
    }

    /// freemad's own load-time checks (which count disabled agents too), each an error naming
    /// the key.
    fn validate(&self) -> Result<(), ConfigError> {
        let agents = self.agents();
        let n = agents.len();
        if n < 2 {
            return invalid(
                "agents",
                "agents must contain at least 2 agents (disabled ones count)",
            );
        }
        let mut seen = std::collections::HashSet::new();
        for (i, a) in agents.iter().enumerate() {
            let at = format!("agents[{i}]");
            if a.id.trim().is_empty() {
                return invalid(format!("{at}.id"), format!("{at}.id must not be empty"));
            }
            if !seen.insert(a.id.trim()) {
                return invalid(
                    format!("{at}.id"),
                    format!("{at}.id = {:?} is used by another agent", a.id),
                );
            }
            if !AGENT_TYPES.contains(&a.kind.trim().to_lowercase().as_str()) {
                return invalid(
                    format!("{at}.type"),
                    format!(
                        "{at}.type = {:?} is not a freemad agent type (expected one of {})",
                        a.kind,
                        AGENT_TYPES.join(", ")
                    ),
                );
            }
            if !(a.timeout.is_finite() && a.timeout > 0.0) {
                return invalid(
                    format!("{at}.timeout"),
                    format!("{at}.timeout must be > 0 seconds"),
                );
            }
        }
        if !agents.iter().any(|a| a.enabled) {
            return invalid("agents", "agents: every agent is disabled (enabled: false)");
        }
        let d = &self.deadlines;
        if d.soft_timeout_ms == 0 || d.hard_timeout_ms == 0 {
            return invalid(
                "deadlines",
                "deadlines.soft_timeout_ms and hard_timeout_ms must be > 0",
            );
        }
        if d.soft_timeout_ms >= d.hard_timeout_ms {
            return invalid(
                "deadlines.soft_timeout_ms",
                format!(
                    "deadlines.soft_timeout_ms ({}) must be < deadlines.hard_timeout_ms ({})",
                    d.soft_timeout_ms, d.hard_timeout_ms
                ),
            );
        }
        if !(1..=n).contains(&d.min_agents) {
            return invalid(
                "deadlines.min_agents",
                format!(
                    "deadlines.min_agents = {} must be between 1 and {n}",
                    d.min_agents
                ),
            );
        }
        if self.scoring.weights.len() != 4 {
            return invalid(
                "scoring.weights",
                "scoring.weights must be 4 numbers [initial, change penalty, change reward, keep]",
            );
        }
        if self.security.cli_use_shell {
            return invalid(
                "security.cli_use_shell",
                "security.cli_use_shell must be false: agents are never run through a shell",
            );
        }
        if self.security.cli_timeout_ms == 0 {
            return invalid(
                "security.cli_timeout_ms",
                "security.cli_timeout_ms must be > 0",
            );
        }
        Ok(())
    }

    fn map_agents(&self, config: &mut Config, notes: &mut Vec<Note>) -> Result<(), ConfigError> {
        let mut longest = 0.0f64;
        let mut sampled = Vec::new();
        for (i, a) in self.agents().iter().enumerate() {
            let at = format!("agents[{i}]");
            if !a.enabled {
                continue;
            }
            let Some(line) = a
                .cli_command
                .as_deref()
                .map(str::trim)
                .filter(|c| !c.is_empty())
            else {
                return invalid(
                    format!("{at}.cli_command"),
                    format!("{at} (id {:?}) has no cli_command", a.id),
                );
            };
            let words = split_command(line).ok_or_else(|| {
                ConfigError::new(
                    format!("{at}.cli_command"),
                    format!(
                        "{at}.cli_command = {line:?} has an unclosed quote or a trailing backslash"
                    ),
                )
            })?;
            let Some((command, args)) = words.split_first() else {
                return invalid(
                    format!("{at}.cli_command"),
                    format!("{at}.cli_command is empty"),
                );
            };
            let mut agent = AgentConfig::new(
                a.id.trim(),
                Backend::new(Cli {
                    mode_arg: a.cli_mode_arg,
                    args_after_mode: a.args_after_mode(),
                    ..Cli::new(command.clone(), args.to_vec())
                }),
            );
            agent.contract = moot_core::contract::ReplyContract::Freemad;
            agent.sampling.temperature = a.config.temperature.map(|t| t as f32);
            agent.sampling.max_tokens = a.config.max_tokens;
            config.agents.push(agent);
            longest = longest.max(a.timeout_sec(&self.security, &self.budget));
            if a.config.temperature.is_some() || a.config.max_tokens.is_some() {
                sampled.push(i.to_string());
            }
        }
        if !sampled.is_empty() {
            notes.push(Note {
                key: format!("agents[{}].config", sampled.join(",")),
                message: "temperature and max_tokens are recorded; neither freemad nor moot passes them to a cli agent".into(),
            });
        }
        // freemad asks again only when a reply cannot be parsed; a call that fails fails.
        config.retry.max_retries = 0;
        notes.push(Note {
            key: "retry".into(),
            message: "failed calls are not retried, as in freemad; [retry] max_retries lets moot retry timeouts and crashes".into(),
        });
        let per_call = longest.min(crate::budget::MAX_SECONDS);
        config.budget.max_agent_time_sec = Some(per_call);
        notes.push(Note {
            key: "agents[].timeout".into(),
            message: format!(
                "one call's limit is {per_call} s for every agent: freemad's largest of timeout, security.cli_timeout_ms and budget.max_agent_time_sec, over all agents"
            ),
        });
        Ok(())
    }

    fn map_topology(&self, config: &mut Config, notes: &mut Vec<Note>) -> Result<(), ConfigError> {
        use moot_core::protocol::TopologyName;
        let t = &self.topology;
        let all = self.agents().len();
        let enabled: Vec<String> = self
            .agents()
            .iter()
            .filter(|a| a.enabled)
            .map(|a| a.id.trim().to_string())
            .collect();
        let options = &mut config.protocol;
        match t.kind.trim() {
            "all_to_all" => options.topology = Some(TopologyName::AllToAll),
            // Each agent reads only the next one, as in freemad.
            "ring" => options.topology = Some(TopologyName::NextOnRing),
            "k_reviewers" => {
                let Some(k) = t.k else {
                    return invalid("topology.k", "topology.k is required for k_reviewers");
                };
                // freemad counts disabled agents here; with fewer enabled peers than k an agent
                // reads all of them.
                if k == 0 || k >= all {
                    return invalid(
                        "topology.k",
                        format!(
                            "topology.k = {k} must be between 1 and {} (the agents, disabled ones included, less one)",
                            all.saturating_sub(1)
                        ),
                    );
                }
                // The reviewers are drawn as freemad draws them, from topology.seed (the
                // debate seed below) and the agent ids.
                options.topology = Some(TopologyName::FreemadKReviewers);
                options.k = Some(k);
            }
            "star" => {
                let Some(hub) = &t.hub_agent else {
                    return invalid(
                        "topology.hub_agent",
                        "topology.hub_agent is required for star",
                    );
                };
                if let Some(position) = enabled.iter().position(|id| id == hub.trim()) {
                    options.topology = Some(TopologyName::Star);
                    options.hub = Some(position + 1);
                } else if self.agents().iter().any(|a| a.id.trim() == hub.trim()) {
                    // A disabled hub: freemad assigns every agent the hub, whose solution never
                    // comes, so every critique shows no peers. One agent per group is the same.
                    options.topology = Some(TopologyName::Groups);
                    options.groups = Some(enabled.len());
                    notes.push(Note {
                        key: "topology.hub_agent".into(),
                        message: format!(
                            "the hub {hub:?} is disabled, so, as in freemad, no agent reads a peer (moot runs this as groups of one agent; freemad's transcript lists the hub as assigned, moot's lists no peers)"
                        ),
                    });
                } else {
                    return invalid(
                        "topology.hub_agent",
                        format!("topology.hub_agent = {hub:?} is not an agent id"),
                    );
                }
            }
            other => {
                return invalid(
                    "topology.type",
                    format!(
                    "topology.type = {other:?} is not one of all_to_all, k_reviewers, ring, star"
                ),
                )
            }
        }
        config.debate.seed = t.seed;
        Ok(())
    }

    fn map_debate(&self, config: &mut Config, notes: &mut Vec<Note>) {
        let d = &mut config.debate;
        d.protocol = "free-mad-n".parse().unwrap_or_default();
        d.soft_timeout_ms = self.deadlines.soft_timeout_ms;
        d.hard_timeout_ms = self.deadlines.hard_timeout_ms;
        let enabled = config.agents.len();
        d.min_agents = Some(self.deadlines.min_agents.min(enabled));
        if self.deadlines.min_agents > enabled {
            notes.push(Note {
                key: "deadlines.min_agents".into(),
                message: format!(
                    "{} is more than the {enabled} enabled agents: moot waits for {enabled} (freemad spins until the soft deadline)",
                    self.deadlines.min_agents
                ),
            });
        }
        notes.push(Note {
            key: "deadlines".into(),
            message: "moot's deadlines end a round: after soft_timeout_ms with min_agents answers, at hard_timeout_ms in any case (freemad's soft deadline is only recorded, and its rounds wait for every agent)".into(),
        });
        let w = &self.scoring.weights;
        d.weights = Some([w[0], w[1], w[2], w[3]]);
        d.normalize = self.scoring.normalize;
        d.tie_break = if self.scoring.tie_break.trim().eq_ignore_ascii_case("random") {
            TieBreakSetting::Random
        } else {
            TieBreakSetting::Deterministic
        };
        d.tie_break_seed = Some(self.scoring.random_seed);
        d.decision = Some("free-mad".into());
        d.answer = crate::names::AnswerSetting::Kind(moot_core::answer::AnswerKind::Text);
        notes.push(Note {
            key: "scoring".into(),
            message: "solutions are compared as moot's text answers; freemad compares hashes of the trimmed text (or of its fenced code blocks)".into(),
        });
        if let Some(n) = self.budget.max_concurrent_agents {
            d.max_concurrent_calls = n;
        }
    }

    /// freemad's sandbox on: solutions become code answers checked in moot's sandbox. Off (its
    /// default): freemad runs nothing, and neither does moot.
    fn map_validation(&self, config: &mut Config, notes: &mut Vec<Note>) {
        let v = &self.validation;
        if v.enable_sandbox != Some(true) {
            config.validation.sandbox = false;
            return;
        }
        config.debate.answer =
            crate::names::AnswerSetting::Kind(moot_core::answer::AnswerKind::Code);
        for note in notes.iter_mut().filter(|n| n.key == "scoring") {
            note.message = "solutions are compared as moot's code answers (the program, blind to formatting); freemad compares hashes of the trimmed text (or of its fenced code blocks)".into();
        }
        config.validation.sandbox = true;
        config.validation.timeout_ms = v.sandbox_timeout_ms.unwrap_or(500);
        notes.push(Note {
            key: "validation.enable_sandbox".into(),
            message: "solutions are read as code (the fenced block, or the whole SOLUTION section; equal when only formatting differs) and every distinct one is compiled in moot's sandbox (bubblewrap: no network, read-only system, process, memory and CPU limits, killed at sandbox_timeout_ms, which includes starting Python), where freemad exec()s it in-process with limited builtins. The verdicts are stored with the run and shown; freemad uses them only to break ties, moot makes failing code lose when validation.require_passing is set".into(),
        });
    }

    fn map_security(&self, config: &mut Config, notes: &mut Vec<Note>) -> Result<(), ConfigError> {
        let s = &self.security;
        let out = &mut config.security;
        out.cli_allowed_commands = s.cli_allowed_commands.clone();
        // freemad passes its whole environment to agents; so does moot for its configurations
        // (an agent CLI authenticated by an environment variable works as it did).
        out.cli_env = moot_backends::cli::CliEnv::Inherit;
        out.redact = s.redact_patterns.clone();
        // freemad counts characters; a character is at most 4 bytes of UTF-8.
        out.cli_max_input_bytes = s.max_requirement_size.saturating_mul(4);
        out.cli_max_output_bytes = s.max_solution_size.saturating_mul(4);
        notes.push(Note {
            key: "security".into(),
            message: "max_requirement_size and max_solution_size are caps in characters in freemad (it truncates); moot refuses a prompt or output over 4 bytes per character. Agents get moot's whole environment, as in freemad (cli_env = \"inherit\"; \"clear\" gives them PATH, HOME, LANG and cli_env_allow only); values of variables named *_KEY, *_TOKEN, *_SECRET or *PASSWORD* are redacted from everything stored or printed".into(),
        });
        if s.api_key_source.is_some() || s.api_key_name.is_some() {
            notes.push(Note {
                key: "security.api_key_source".into(),
                message: "unused by freemad 2.0.0 too".into(),
            });
        }
        Ok(())
    }

    fn map_budget(&self, config: &mut Config, notes: &mut Vec<Note>) {
        let b = &self.budget;
        let out = &mut config.budget;
        out.max_total_time_sec = b.max_total_time_sec;
        out.max_round_time_sec = b.max_round_time_sec;
        out.max_tokens_per_agent_per_round = b.max_tokens_per_agent_per_round;
        out.enable_token_truncation = b.enable_token_truncation;
        if b.enforce_total_tokens {
            out.max_total_tokens = b.max_total_tokens;
        } else if b.max_total_tokens.is_some() {
            notes.push(Note {
                key: "budget.max_total_tokens".into(),
                message: "not enforced, as in freemad, because enforce_total_tokens is false"
                    .into(),
            });
        }
    }

    /// freemad's disk cache becomes the store's request cache.
    fn map_cache(&self, config: &mut Config, notes: &mut Vec<Note>) {
        let c = &self.cache;
        config.cache.enabled = c.enabled.unwrap_or(false);
        // freemad reads 0 as no limit.
        config.cache.max_entries = c.max_entries.filter(|&n| n > 0);
        if config.cache.enabled {
            notes.push(Note {
                key: "cache".into(),
                message: "answers are cached in moot's store, not in cache.dir; the key also covers the agent's messages and sampling, and the oldest entry goes first (freemad drops the least recently used)".into(),
            });
        }
    }

    /// freemad writes a transcript file per run unless told not to (`save_transcript` is on by
    /// default); moot writes the same file from its store.
    fn map_output(&self, config: &mut Config, notes: &mut Vec<Note>) -> Result<(), ConfigError> {
        use crate::output::TranscriptFormat;
        let o = &self.output;
        if !o.save_transcript.unwrap_or(true) {
            return Ok(());
        }
        let dir = o
            .transcript_dir
            .clone()
            .unwrap_or_else(|| "transcripts".into());
        if dir.trim().is_empty() {
            return invalid(
                "output.transcript_dir",
                "output.transcript_dir must not be empty",
            );
        }
        config.output.transcript_dir = Some(dir.into());
        config.output.transcript_format = match o.format.as_deref().map(str::trim) {
            None | Some("json") => TranscriptFormat::Json,
            Some("markdown") => TranscriptFormat::Markdown,
            Some(other) => {
                return invalid(
                    "output.format",
                    format!("output.format = {other:?} must be json or markdown"),
                )
            }
        };
        notes.push(Note {
            key: "output".into(),
            message: "transcript files are named transcript-<UTC time>-<run id> (freemad: local time, and runs in the same second overwrite each other); the run also stays in moot's store".into(),
        });
        Ok(())
    }

    /// freemad's log: the file and its layout carry over; the console log is moot's progress
    /// display.
    fn map_logging(&self, config: &mut Config, notes: &mut Vec<Note>) -> Result<(), ConfigError> {
        use crate::logging::LogLevel;
        let l = &self.logging;
        config.logging.level = match l.level.as_deref().unwrap_or("INFO") {
            "DEBUG" => LogLevel::Debug,
            "INFO" => LogLevel::Info,
            "WARNING" => LogLevel::Warning,
            "ERROR" => LogLevel::Error,
            other => {
                return invalid(
                    "logging.level",
                    format!("logging.level must be DEBUG|INFO|WARNING|ERROR (got {other:?})"),
                )
            }
        };
        config.logging.file = l.file.clone().filter(|f| !f.trim().is_empty());
        config.logging.structured = l.structured.unwrap_or(false);
        if config.logging.file.is_some() {
            notes.push(Note {
                key: "logging".into(),
                message: "the log file has freemad's layout (TIME LEVEL [event] k=v, or JSON lines with structured) but moot's events: run_start, round_start, call, round_end, validation_done, run_end; logging.console is moot's progress display on stderr".into(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<(Config, Vec<Note>), ConfigError> {
        let doc: Value = serde_saphyr::from_str(yaml).unwrap();
        assert!(recognises(&doc), "{yaml}");
        from_value(doc)?.to_moot()
    }

    fn argv(config: &Config, i: usize, mode: moot_core::chat::CallMode) -> Vec<String> {
        let cli = config.cli_config(&config.agents[i]).expect("a cli agent");
        std::iter::once(cli.command.clone())
            .chain(cli.arguments(mode))
            .collect()
    }

    /// The three worked examples of docs/freemad-reference.md, whose argv was seen from
    /// freemad 2.0.0 itself.
    #[test]
    fn agents_get_the_argv_freemad_builds() {
        use moot_core::chat::CallMode::{Critique, Generate};
        let (c, _) = read(
            r#"
agents:
  - id: ex1
    type: claude_code
    cli_command: "python3 /tmp/fm-exp/fake_agent.py"
    cli_mode_arg: true
    cli_args: {persona: alpha}
  - id: ex2
    type: openai_codex
    cli_command: "python3 /tmp/fm-exp/fake_agent.py 'two words'"
    cli_flags: ["--verbose", "-q"]
    cli_args: {zeta: 1, --persona: beta, model: "m 1"}
    cli_positional: ["-"]
  - id: ex3
    type: OpenAI_Codex
    cli_command: "/tmp/fm-exp/fake_agent.py exec"
    cli_mode_arg: true
    cli_flags: ["--skip-git-repo-check"]
    cli_args: {--model: gpt, --config: "x='high'", persona: gamma}
    cli_positional: ["-"]
security:
  cli_allowed_commands: ["python3", "/tmp/fm-exp/fake_agent.py"]
"#,
        )
        .unwrap();
        assert_eq!(
            argv(&c, 0, Generate),
            [
                "python3",
                "/tmp/fm-exp/fake_agent.py",
                "generate",
                "--persona",
                "alpha"
            ]
        );
        assert_eq!(
            argv(&c, 0, Critique),
            [
                "python3",
                "/tmp/fm-exp/fake_agent.py",
                "critique",
                "--persona",
                "alpha"
            ]
        );
        let ex2 = [
            "python3",
            "/tmp/fm-exp/fake_agent.py",
            "two words",
            "--verbose",
            "-q",
            "--persona",
            "beta",
            "--model",
            "m 1",
            "--zeta",
            "1",
            "-",
        ];
        assert_eq!(argv(&c, 1, Generate), ex2);
        assert_eq!(argv(&c, 1, Critique), ex2);
        assert_eq!(
            argv(&c, 2, Generate),
            [
                "/tmp/fm-exp/fake_agent.py",
                "exec",
                "generate",
                "--skip-git-repo-check",
                "--config",
                "x='high'",
                "--model",
                "gpt",
                "--persona",
                "gamma",
                "-"
            ]
        );
    }

    /// A freemad file without a per-call limit (`max_agent_time_sec: null`) gets moot's
    /// longest, which moot's own check accepts (before, the 1e9 s it became was refused as "not
    /// a positive number of seconds").
    #[test]
    fn no_per_call_limit_becomes_the_longest_moot_accepts() {
        let (c, _) = read(
            "agents:\n  - {id: a, type: claude_code, cli_command: claude, timeout: 5}\n  - {id: b, type: claude_code, cli_command: claude, timeout: 5}\nbudget:\n  max_agent_time_sec: null\n",
        )
        .unwrap();
        assert_eq!(
            c.budget.max_agent_time_sec,
            Some(crate::budget::MAX_SECONDS)
        );
        c.budget.validate().unwrap();
    }

    #[test]
    fn commands_split_as_python_shlex_does() {
        let split = |s: &str| split_command(s);
        assert_eq!(split("codex exec").unwrap(), ["codex", "exec"]);
        assert_eq!(split("a #b c").unwrap(), ["a", "#b", "c"]);
        assert_eq!(
            split(r#"a "b \" \x" 'c \ d'"#).unwrap(),
            ["a", r#"b " \x"#, r"c \ d"]
        );
        assert_eq!(split(r"a\ b ''").unwrap(), ["a b", ""]);
        assert_eq!(split("x'y'\"z\"").unwrap(), ["xyz"]);
        assert_eq!(split("  ").unwrap(), Vec::<String>::new());
        assert_eq!(split("a 'b"), None);
        assert_eq!(split("a \\"), None);
    }

    #[test]
    fn values_become_text_as_python_str_does() {
        for (value, text) in [
            (Scalar::Bool(true), "True"),
            (Scalar::Null, "None"),
            (Scalar::Int(7), "7"),
            (Scalar::Float(0.5), "0.5"),
            (Scalar::Float(1.0), "1.0"),
            (Scalar::Float(1e20), "1e+20"),
            (Scalar::Float(1.5e-7), "1.5e-07"),
            (Scalar::Text("m 1".into()), "m 1"),
        ] {
            assert_eq!(value.python_str(), text);
        }
    }

    #[test]
    fn freemad_defaults_apply_where_the_file_is_silent() {
        let (c, _) = read(
            "agents:\n  - {id: a, type: claude_code, cli_command: claude}\n  - {id: b, type: claude_code, cli_command: claude, enabled: false}\n  - {id: c, type: openai_codex, cli_command: codex}\n",
        )
        .unwrap();
        assert_eq!(c.agents.len(), 2, "disabled agents do not debate");
        assert!(c
            .agents
            .iter()
            .all(|a| a.contract == moot_core::contract::ReplyContract::Freemad));
        assert_eq!(
            (c.debate.soft_timeout_ms, c.debate.hard_timeout_ms),
            (15_000, 30_000)
        );
        assert_eq!(c.debate.weights, Some([20.0, 25.0, 30.0, 20.0]));
        assert!(c.debate.normalize);
        assert_eq!(c.debate.tie_break_seed, Some(987_654_321));
        assert_eq!(c.budget.max_total_time_sec, Some(120.0));
        assert_eq!(c.budget.max_agent_time_sec, Some(60.0));
        assert_eq!(
            c.security.cli_allowed_commands,
            ["zen", "zen-mcp", "claude", "codex"]
        );
        assert_eq!(c.debate.protocol.as_str(), "free-mad-n");
        assert!(!c.cache.enabled);
        assert_eq!(
            c.output.transcript_dir.as_deref(),
            Some(std::path::Path::new("transcripts")),
            "freemad saves transcripts unless told not to"
        );
    }

    #[test]
    fn the_disk_cache_becomes_the_request_cache() {
        let two = "agents:\n  - {id: a, type: claude_code, cli_command: claude}\n  - {id: b, type: claude_code, cli_command: claude}\n";
        let (c, _) = read(&format!(
            "{two}cache:\n  enabled: true\n  dir: .c\n  max_entries: 50\n"
        ))
        .unwrap();
        assert!(c.cache.enabled);
        assert_eq!(c.cache.max_entries, Some(50));
        assert!(c.engine().cache);
        assert_eq!(c.engine().cache_max_entries, Some(50));
        let (c, _) = read(&format!("{two}cache:\n  enabled: true\n  max_entries: 0\n")).unwrap();
        assert_eq!(c.cache.max_entries, None, "0 is no limit in freemad");
    }

    #[test]
    fn bad_keys_are_named() {
        let bad = |yaml: &str, key: &str| {
            let e = read(yaml).unwrap_err();
            assert!(e.key == key || e.message.contains(key), "{yaml}: {e:?}");
        };
        let two = "agents:\n  - {id: a, type: claude_code, cli_command: claude}\n  - {id: b, type: claude_code, cli_command: claude}\n";
        bad("agents:\n  - {id: a, type: gpt, cli_command: claude}\n  - {id: b, type: claude_code, cli_command: claude}\n", "agents[0].type");
        bad(
            &format!("{two}security:\n  cli_use_shell: true\n"),
            "security.cli_use_shell",
        );
        bad(&format!("{two}topology:\n  type: mesh\n"), "topology.type");
        bad(
            &format!("{two}topology:\n  type: star\n  hub_agent: zed\n"),
            "topology.hub_agent",
        );
        bad(
            &format!("{two}deadlines:\n  soft_timeout_ms: 5\n  hard_timeout_ms: 5\n"),
            "deadlines.soft_timeout_ms",
        );
        bad(&format!("{two}output:\n  format: html\n"), "output.format");
        bad(&format!("{two}scoring:\n  colour: red\n"), "colour");
        bad(&format!("{two}logging:\n  level: info\n"), "logging.level");
        bad(
            "agents:\n  - {id: a, type: claude_code, cli_command: claude}\n",
            "agents",
        );
        bad("agents:\n  - {id: a, type: claude_code, cli_command: \"x 'y\"}\n  - {id: b, type: claude_code, cli_command: claude}\n", "agents[0].cli_command");
    }

    #[test]
    fn logging_and_the_sandbox_carry_over() {
        let two = "agents:\n  - {id: a, type: claude_code, cli_command: claude}\n  - {id: b, type: openai_codex, cli_command: codex}\n";
        let (c, notes) = read(&format!(
            "{two}logging:\n  level: DEBUG\n  file: run.log\n  structured: true\nvalidation:\n  enable_sandbox: true\n  sandbox_timeout_ms: 800\n"
        ))
        .unwrap();
        assert_eq!(c.logging.file.as_deref(), Some("run.log"));
        assert_eq!(c.logging.level, crate::logging::LogLevel::Debug);
        assert!(c.logging.structured);
        assert!(c.validation.sandbox);
        assert_eq!(c.validation.timeout_ms, 800);
        assert_eq!(
            c.debate.answer,
            crate::names::AnswerSetting::Kind(moot_core::answer::AnswerKind::Code)
        );
        for key in ["logging", "validation.enable_sandbox"] {
            assert!(notes.iter().any(|n| n.key == key), "{key}: {notes:?}");
        }
        let scoring = notes.iter().find(|n| n.key == "scoring").unwrap();
        assert!(scoring.message.contains("code answers"), "{scoring:?}");
        // freemad's defaults: no log file, and no sandbox.
        let (c, _) = read(two).unwrap();
        assert_eq!(c.logging.file, None);
        assert!(!c.validation.sandbox);
    }

    #[test]
    fn topologies_map_onto_freemads_own_graphs() {
        use moot_core::protocol::TopologyName;
        let agents = |n: usize, disabled: &[usize]| -> String {
            let mut s = String::from("security:\n  cli_allowed_commands: [sh]\nagents:\n");
            for i in 0..n {
                s.push_str(&format!(
                    "  - {{id: a{i}, type: claude_code, cli_command: sh, enabled: {}}}\n",
                    !disabled.contains(&i)
                ));
            }
            s
        };
        let differs = |notes: &[Note]| notes.iter().any(|n| n.key.starts_with("topology"));
        let (c, notes) = read(&format!("{}topology:\n  type: ring\n", agents(4, &[]))).unwrap();
        assert_eq!(c.protocol.topology, Some(TopologyName::NextOnRing));
        assert!(!differs(&notes), "{notes:?}");

        let (c, notes) = read(&format!(
            "{}topology:\n  type: k_reviewers\n  k: 2\n  seed: 7\n",
            agents(5, &[])
        ))
        .unwrap();
        assert_eq!(c.protocol.topology, Some(TopologyName::FreemadKReviewers));
        assert_eq!((c.protocol.k, c.debate.seed), (Some(2), 7));
        assert!(!differs(&notes), "{notes:?}");
        c.validate().unwrap();
        // freemad counts disabled agents in k's range: k = 3 of four agents, one disabled, reads
        // both enabled peers.
        let (c, _) = read(&format!(
            "{}topology:\n  type: k_reviewers\n  k: 3\n",
            agents(4, &[1])
        ))
        .unwrap();
        assert_eq!(c.protocol.k, Some(3));
        c.validate().unwrap();
        for k in [0, 4] {
            let e = read(&format!(
                "{}topology:\n  type: k_reviewers\n  k: {k}\n",
                agents(4, &[])
            ))
            .unwrap_err();
            assert_eq!(e.key, "topology.k", "{e:?}");
        }

        let (c, notes) = read(&format!(
            "{}topology:\n  type: star\n  hub_agent: a2\n",
            agents(4, &[0])
        ))
        .unwrap();
        assert_eq!(c.protocol.topology, Some(TopologyName::Star));
        assert_eq!(c.protocol.hub, Some(2), "a2 is the second enabled agent");
        assert!(!differs(&notes), "{notes:?}");
        // A disabled hub: nobody reads a peer, as in freemad.
        let (c, notes) = read(&format!(
            "{}topology:\n  type: star\n  hub_agent: a0\n",
            agents(4, &[0])
        ))
        .unwrap();
        assert_eq!(c.protocol.topology, Some(TopologyName::Groups));
        assert_eq!(c.protocol.groups, Some(3));
        assert!(differs(&notes), "{notes:?}");
        c.validate().unwrap();
    }

    #[test]
    fn moot_files_are_not_taken_for_freemad_ones() {
        let doc: Value =
            serde_saphyr::from_str("debate:\n  rounds: 2\nagents:\n  - {id: a, backend: local}\n")
                .unwrap();
        assert!(!recognises(&doc));
    }
}
