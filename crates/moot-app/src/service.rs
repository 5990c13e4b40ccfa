//! Debates for a server: [`Runner`] is what `moot-serve` asks of whoever runs debates, and
//! [`DebateService`] is the one that runs them, from a base configuration and a store. The
//! server only starts debates and reads the store; a test may give it a runner of its own.

use std::collections::BTreeMap;
use std::sync::Arc;

pub use moot_backends::human::{HumanReply, QueueDesk, Waiting, MAX_HUMAN_ANSWER_BYTES};

use async_trait::async_trait;
use moot_config::{Config, DebateSize, ProtocolName, Via};
use moot_engine::NoObserver;
use moot_store::Store;
use serde::{Deserialize, Serialize};

use crate::ask::{AskRequest, PreparedAsk};
use crate::error::InputError;
use crate::request::Settings;

/// A debate to start: the question and what the request changes of the configured debate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DebateRequest {
    pub question: String,
    /// A protocol's name (default: the configured one).
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub rounds: Option<usize>,
    /// Who debates (default: the configured team).
    #[serde(default)]
    pub agents: Option<AgentsChoice>,
    /// Protocol options, as `moot ask -o KEY=VALUE` takes them.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// Debate among agents on this model of the configured OpenAI-compatible upstream instead
    /// of the configured team (`moot/PROTOCOL/MODEL`).
    #[serde(default)]
    pub model: Option<String>,
    /// What the request sets of every agent's sampling (the OpenAI endpoint's `temperature`,
    /// `top_p`, `max_tokens` and `seed`). Not a field of `/api/runs`' body.
    #[serde(skip)]
    pub sampling: SamplingOverride,
}

/// Sampling a request sets for every agent of its debate, each value already in the range the
/// request's front end allows; whether each agent can take it is [`DebateService`]'s to check.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SamplingOverride {
    /// Every agent samples at this temperature.
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    /// No agent's call writes more tokens than this (a configured lower cap stays).
    pub max_tokens: Option<u32>,
    /// The debate's seed: its orderings and faults, and each agent's seed unless configured.
    pub seed: Option<u64>,
}

impl SamplingOverride {
    /// The name of the first value that needs an agent that samples, if any is set.
    fn needs_sampling(&self) -> Option<&'static str> {
        [
            ("temperature", self.temperature.is_some()),
            ("top_p", self.top_p.is_some()),
            ("max_tokens", self.max_tokens.is_some()),
        ]
        .into_iter()
        .find_map(|(name, set)| set.then_some(name))
    }

    /// Sets these values on every agent of `agents`; refused, naming the value, for an agent
    /// that would drop it (its backend hands none to a model) or cannot take it (Anthropic's
    /// temperature is at most 1).
    fn apply(&self, agents: &mut [moot_config::AgentConfig]) -> Result<(), BadParam> {
        for agent in agents.iter_mut() {
            let entry = agent.backend.entry();
            if let Some(param) = self.needs_sampling().filter(|_| !entry.samples) {
                return Err(BadParam {
                    param,
                    message: format!(
                        "{param}: agent {} runs on backend {:?}, which samples with no {param}, so it cannot be honoured (leave it out, or debate with agents on openai, anthropic or local)",
                        moot_core::escape::terminal(&agent.id),
                        entry.name
                    ),
                });
            }
            if let Some(t) = self.temperature {
                if t > entry.max_temperature {
                    return Err(BadParam {
                        param: "temperature",
                        message: format!(
                            "temperature: {t} is over {}, the most agent {}'s backend {:?} takes",
                            entry.max_temperature,
                            moot_core::escape::terminal(&agent.id),
                            entry.name
                        ),
                    });
                }
                agent.sampling.temperature = Some(t);
            }
            if let Some(p) = self.top_p {
                agent.sampling.top_p = Some(p);
            }
            if let Some(cap) = self.max_tokens {
                // The request's cap bounds every call; a configured smaller one still holds.
                agent.sampling.max_tokens =
                    Some(agent.sampling.max_tokens.map_or(cap, |c| c.min(cap)));
            }
        }
        Ok(())
    }
}

/// A request's value that cannot be honoured, named as the request named it.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct BadParam {
    pub param: &'static str,
    pub message: String,
}

/// Who debates: a number of agents (the configured team, cycled to that size, as `--agents`
/// does), or configured agents picked by id (`["a", "c"]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AgentsChoice {
    Count(usize),
    Ids(Vec<String>),
}

/// A started debate: its run row exists when this is returned.
pub struct Started {
    pub run_id: String,
    /// Resolves when the debate has ended (its decision stored), or with why it failed.
    pub finished: tokio::sync::oneshot::Receiver<Result<(), String>>,
    /// Sending on it cancels the debate (its calls stop; the run is recorded as failed); a
    /// sender dropped without sending leaves the debate running, as `/api/runs` wants.
    pub cancel: tokio::sync::oneshot::Sender<()>,
}

/// The configured team, as `/v1/models` and the start form show it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Team {
    pub protocol: String,
    pub rounds: usize,
    /// Each agent as `id (backend model)`.
    pub agents: Vec<String>,
    /// The configured agents' ids, to pick from (empty for the embedded default team).
    pub ids: Vec<String>,
    /// The OpenAI-compatible upstream that `moot/PROTOCOL/MODEL` debates on, if one is set.
    pub upstream: Option<String>,
}

/// A benchmark's report, as `moot report` writes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchReport {
    /// The report in Markdown; its plots are linked as `plots/FILE.svg`.
    pub markdown: String,
    /// `(FILE.svg, the SVG)`.
    pub plots: Vec<(String, String)>,
    /// Each reported debate's run id and whether its chosen answer was right.
    pub graded: Vec<(String, bool)>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The request cannot run as given (unknown protocol, bad option, too many agents).
    #[error("{0}")]
    BadRequest(String),
    /// One of the request's values cannot be honoured (`param` names it as the request did).
    #[error("{message}")]
    BadParam {
        param: &'static str,
        message: String,
    },
    /// Something failed on the server's side (the store, building agents).
    #[error("{0}")]
    Internal(String),
    /// Something the request needs is not here yet (the embedded model, not pulled): the
    /// server fetches nothing on a request's path.
    #[error("{0}")]
    Unavailable(String),
}

/// A request [`Runner::check`] found runnable, ready for [`Runner::start`]: prepared once.
pub struct Checked {
    pub request: DebateRequest,
    /// The debate prepared from it (a runner that prepares nothing leaves it `None`).
    pub prepared: Option<Box<PreparedAsk>>,
}

impl Checked {
    /// `request`, checked by a runner that keeps nothing of the check.
    pub fn new(request: DebateRequest) -> Checked {
        Checked {
            request,
            prepared: None,
        }
    }
}

#[async_trait]
pub trait Runner: Send + Sync {
    /// Whether `request` could run (protocol, options, team size), without starting it: a bad
    /// request is told so even when every slot is busy. What is prepared is kept for `start`.
    fn check(&self, request: DebateRequest) -> Result<Checked, RunnerError>;
    /// Starts a checked debate; the debate goes on after this returns.
    async fn start(&self, checked: Checked) -> Result<Started, RunnerError>;
    fn team(&self) -> Team;
    /// Checks a configuration text (TOML, YAML or JSON in any dialect moot reads) as
    /// `moot config check` does: `Ok` with a summary, or the error naming the key.
    fn check_config(&self, text: &str) -> Result<String, String>;
    /// The report of the benchmark `name` (`None` before any of its debates has finished).
    async fn bench_report(&self, name: &str) -> Result<Option<BenchReport>, RunnerError>;
    /// Where the people its debates ask (agents with `backend = "human"`) find their
    /// questions and answer them; `None` when it asks nobody.
    fn people(&self) -> Option<Arc<QueueDesk>> {
        None
    }
}

/// Runs debates for the server: each on its own thread with its own runtime, so the engine's
/// futures need not be `Send` and a debate's model work never stalls the server's.
pub struct DebateService {
    base: Config,
    store: Arc<dyn Store>,
    warn: crate::prepare::Warn,
    /// The questions its debates put to people, waiting for the server's page.
    people: Arc<QueueDesk>,
}

impl DebateService {
    /// Debates from `base` (the server's configuration), recorded in `store`; warnings (a
    /// problem after a debate was answered, such as a transcript file it could not write) go
    /// to `warn`, for the front end to print: moot-app prints nothing itself.
    pub fn new(base: Config, store: Arc<dyn Store>, warn: crate::prepare::Warn) -> DebateService {
        DebateService {
            base,
            store,
            warn,
            people: Arc::new(QueueDesk::default()),
        }
    }

    /// One request prepared as `moot ask` prepares its flags (the same [`Settings`], from
    /// HTTP): the base configuration with the request's protocol, rounds, options and team
    /// applied, checked, the protocol built and the team fitted to it.
    fn prepare(&self, req: &DebateRequest) -> anyhow::Result<PreparedAsk> {
        let bad = |m: String| anyhow::Error::new(InputError(m));
        let protocol = match &req.protocol {
            Some(p) => Some(
                p.parse::<ProtocolName>()
                    .map_err(|e| bad(format!("\"protocol\": {e}")))?,
            ),
            None => None,
        };
        let mut settings = Settings {
            config: Some(self.base.clone()),
            protocol,
            rounds: req.rounds,
            protocol_options: req
                .options
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
            ..Settings::from(Via::Http)
        };
        let mut config = settings.load_config()?;
        settings.apply(&mut config)?;
        let count = match &req.agents {
            None => None,
            Some(AgentsChoice::Count(n)) => {
                // Checked before any agent is built from it: a request may ask for 10^8.
                let size = DebateSize {
                    agents: *n,
                    agents_from: Some(Via::Http),
                    rounds_from: req.rounds.map(|_| Via::Http),
                    ..DebateSize::of(&config)
                };
                config.validate_size(&size)?;
                Some(*n)
            }
            Some(AgentsChoice::Ids(ids)) => {
                if req.model.is_some() {
                    return Err(bad(
                        "\"agents\": a moot/PROTOCOL/MODEL team is made on the upstream; give a number of agents, not ids".into(),
                    ));
                }
                config.agents = pick_agents(&config, ids).map_err(bad)?;
                Some(ids.len())
            }
        };
        if let Some(model) = &req.model {
            config.agents = upstream_team(&config, model, count).map_err(bad)?;
        }
        if let Some(seed) = req.sampling.seed {
            config.debate.seed = seed;
        }
        settings.agents = count;
        if req.question.trim().is_empty() {
            return Err(bad("the question is empty".into()));
        }
        let mut prepared = settings.prepare_config(config, &req.question)?;
        // On the agents that debate, once the team is sized and fitted to the protocol (the
        // embedded default team is made there).
        req.sampling.apply(&mut prepared.config.agents)?;
        let mut prepared = AskRequest {
            settings,
            ..AskRequest::new(req.question.clone())
        }
        .prepared(prepared)?;
        // A person answering for an agent is asked on the server's page.
        prepared.desk = Some(self.people.clone());
        Ok(prepared)
    }
}

/// A request's error as the server answers it: what the request got wrong is a bad request
/// (400), the rest the server's (500).
fn runner_error(e: anyhow::Error) -> RunnerError {
    if let Some(bad) = e.downcast_ref::<BadParam>() {
        return RunnerError::BadParam {
            param: bad.param,
            message: bad.message.clone(),
        };
    }
    match crate::error::kind_of(&e) {
        crate::error::ErrorKind::Input => RunnerError::BadRequest(format!("{e:#}")),
        _ => RunnerError::Internal(format!("{e:#}")),
    }
}

/// The configured agents named by `ids`, in that order.
fn pick_agents(config: &Config, ids: &[String]) -> Result<Vec<moot_config::AgentConfig>, String> {
    if ids.is_empty() {
        return Err("\"agents\": the list of agent ids is empty".into());
    }
    let known: Vec<&str> = config.agents.iter().map(|a| a.id.as_str()).collect();
    let mut picked = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            return Err(format!("\"agents\": {id:?} is listed twice"));
        }
        match config.agents.iter().find(|a| &a.id == id) {
            Some(a) => picked.push(a.clone()),
            None => {
                return Err(format!(
                    "\"agents\": no configured agent {id:?} (configured: {})",
                    if known.is_empty() {
                        "none; the embedded default team has no ids to pick".to_string()
                    } else {
                        known.join(", ")
                    }
                ))
            }
        }
    }
    Ok(picked)
}

/// The longest model name a request may give.
const MAX_MODEL_NAME: usize = 128;

/// Whether `model` is a plain model name: 1 to [`MAX_MODEL_NAME`] characters of letters,
/// digits and `. _ : / + -` (what model names use: `qwen2.5-coder:0.5b`,
/// `meta-llama/Llama-3.1-8B-Instruct`), not starting with a separator, and no `..`. A request
/// names a model; it never writes configuration.
fn check_model_name(model: &str) -> Result<(), String> {
    let plain = !model.is_empty()
        && model.len() <= MAX_MODEL_NAME
        && model
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && !model.contains("..")
        && model
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:/+-".contains(c));
    if plain {
        Ok(())
    } else {
        Err(format!(
            "\"model\": not a model name (1 to {MAX_MODEL_NAME} letters, digits and . _ : / + -, starting with a letter or digit)"
        ))
    }
}

/// A team of the configured size on `model` at the configured upstream, built as values: the
/// request's model name is a checked plain name that goes into a field, never into text that
/// is parsed as configuration.
fn upstream_team(
    config: &Config,
    model: &str,
    agents: Option<usize>,
) -> Result<Vec<moot_config::AgentConfig>, String> {
    check_model_name(model)?;
    let url = config.serve.upstream.as_deref().ok_or_else(|| {
        format!("model moot/…/{model}: this server has no upstream (set [serve] upstream in its configuration)")
    })?;
    let n = agents.unwrap_or(DebateSize::of(config).agents);
    let agent = |i: usize| {
        let mut table = toml::Table::new();
        let mut put = |key: &str, value: &str| {
            table.insert(key.to_string(), toml::Value::String(value.to_string()));
        };
        put("id", &format!("{model}-{i}"));
        put("backend", "openai");
        put("base_url", url);
        put("model", model);
        if let Some(key) = &config.serve.upstream_api_key_env {
            put("api_key_env", key);
        }
        toml::Value::Table(table)
    };
    let mut root = toml::Table::new();
    root.insert(
        "agents".to_string(),
        toml::Value::Array((0..n).map(agent).collect()),
    );
    let parsed: Config = toml::Value::Table(root)
        .try_into()
        .map_err(|e: toml::de::Error| format!("model {model:?}: {}", e.message()))?;
    Ok(parsed.agents)
}

#[async_trait]
impl Runner for DebateService {
    fn people(&self) -> Option<Arc<QueueDesk>> {
        Some(self.people.clone())
    }

    fn check(&self, request: DebateRequest) -> Result<Checked, RunnerError> {
        let prepared = self.prepare(&request).map_err(runner_error)?;
        // Building an agent on the embedded model pulls a missing model (491 MB for the
        // default one): never on a request's path. Until `moot model pull` has run, refused.
        for agent in &prepared.config.agents {
            if let Some(local) = agent
                .backend
                .settings::<moot_config::backend::local::Local>()
            {
                moot_config::BackendSettings::ready(local).map_err(|why| {
                    RunnerError::Unavailable(format!(
                        "agent {}: {why}; the server downloads no model while it answers",
                        moot_core::escape::terminal(&agent.id)
                    ))
                })?;
            }
        }
        Ok(Checked {
            request,
            prepared: Some(Box::new(prepared)),
        })
    }

    async fn start(&self, checked: Checked) -> Result<Started, RunnerError> {
        let prepared = match checked.prepared {
            Some(prepared) => *prepared,
            None => self.prepare(&checked.request).map_err(runner_error)?,
        };
        let run_id = prepared.run_id.clone();
        let store = self.store.clone();
        let warn = self.warn.clone();
        let (created_tx, created_rx) = tokio::sync::oneshot::channel::<Result<(), RunnerError>>();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        let (cancel_tx, cancel_rx) = tokio::sync::oneshot::channel::<()>();
        let id = run_id.clone();
        let thread = std::thread::Builder::new()
            .name(format!("debate {id}"))
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = created_tx.send(Err(RunnerError::Internal(format!(
                            "starting the debate's runtime: {e}"
                        ))));
                        return;
                    }
                };
                rt.block_on(async move {
                    // Building agents may load an embedded model: seconds, on this thread.
                    // `[logging]` and `[output]` apply to debates the server starts as to
                    // `moot ask`'s: the session writes both.
                    let session = match prepared.session(store.as_ref(), &mut |_| {}) {
                        Ok(session) => session,
                        Err(e) => {
                            let _ = created_tx.send(Err(runner_error(e)));
                            return;
                        }
                    };
                    // Told once the run is recorded; until then a failure is the request's.
                    let created = std::sync::Mutex::new(Some(created_tx));
                    let mut on_created = |_: &str| {
                        if let Some(tx) = created.lock().ok().and_then(|mut c| c.take()) {
                            let _ = tx.send(Ok(()));
                        }
                    };
                    let running = crate::session::run(session, &NoObserver, &mut on_created);
                    // Run until done, or until the only client asks to cancel (a sender
                    // dropped without a word is no request: the debate goes on).
                    let cancelled = async {
                        if cancel_rx.await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    };
                    let outcome = tokio::select! {
                        outcome = running => outcome,
                        () = cancelled => {
                            // Dropping the debate stopped its calls; what it recorded stays.
                            let at = moot_engine::timestamp();
                            let _ = store
                                .finish_run(&id, moot_store::RunStatus::Failed, None, &at)
                                .await;
                            let _ = done_tx.send(Err("cancelled: its client went away".into()));
                            return;
                        }
                    };
                    let not_created = created.lock().ok().and_then(|mut c| c.take());
                    match (outcome, not_created) {
                        (Err(e), Some(created_tx)) => {
                            let _ = created_tx.send(Err(runner_error(e)));
                        }
                        (Err(e), None) => {
                            let _ = done_tx.send(Err(e.to_string()));
                        }
                        (Ok(finished), _) => {
                            if let Some(Err(e)) = &finished.transcript {
                                warn(&format!("run {id}: writing its transcript: {e:#}"));
                            }
                            let _ = done_tx.send(Ok(()));
                        }
                    }
                });
            })
            .map_err(|e| RunnerError::Internal(format!("starting the debate's thread: {e}")))?;
        drop(thread);
        match created_rx.await {
            Ok(Ok(())) => Ok(Started {
                run_id,
                finished: done_rx,
                cancel: cancel_tx,
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(RunnerError::Internal(
                "the debate's thread ended before its run was recorded".into(),
            )),
        }
    }

    fn team(&self) -> Team {
        let size = DebateSize::of(&self.base);
        let agents = if self.base.agents.is_empty() {
            (0..size.agents)
                .map(|i| format!("agent {} (the embedded default model)", i + 1))
                .collect()
        } else {
            self.base
                .agents
                .iter()
                .map(|a| format!("{} ({})", a.id, a.backend.name()))
                .collect()
        };
        Team {
            ids: self.base.agents.iter().map(|a| a.id.clone()).collect(),
            protocol: self.base.debate.protocol.to_string(),
            rounds: self.base.debate.rounds,
            agents,
            upstream: self.base.serve.upstream.clone(),
        }
    }

    async fn bench_report(&self, name: &str) -> Result<Option<BenchReport>, RunnerError> {
        let loaded = crate::bench_report::load(self.store.as_ref(), name)
            .await
            .map_err(|e| match e.downcast_ref::<moot_store::StoreError>() {
                Some(moot_store::StoreError::BenchNotFound(_)) => {
                    RunnerError::BadRequest(format!("no benchmark named {name:?}"))
                }
                _ => RunnerError::Internal(format!("{e:#}")),
            })?;
        let fork = crate::bench_report::against_parent(self.store.as_ref(), &loaded)
            .await
            .map_err(|e| RunnerError::Internal(format!("{e:#}")))?;
        let (infos, results, items) = crate::bench_report::combine(vec![loaded])
            .map_err(|e| RunnerError::Internal(format!("{e:#}")))?;
        if results.is_empty() {
            return Ok(None);
        }
        // As `moot report` does by default: protocols compared on the items all finished.
        let (results, left_out) = moot_eval::report::common_items(results);
        if results.is_empty() {
            return Ok(None);
        }
        let mut report = moot_eval::report::Report::new(infos, &results, &items);
        report.left_out = left_out;
        report.fork = fork;
        let plots = crate::bench_report::plots(&report)
            .map_err(|e| RunnerError::Internal(format!("{e:#}")))?;
        let links: Vec<(&str, String)> = plots
            .iter()
            .map(|(caption, file, _)| (*caption, format!("plots/{file}")))
            .collect();
        let links: Vec<(&str, &str)> = links.iter().map(|(c, f)| (*c, f.as_str())).collect();
        let graded = results
            .iter()
            .filter_map(|r| {
                let item = items.iter().find(|i| i.id == r.item_id)?;
                Some((r.run_id.clone(), r.correct(item)))
            })
            .collect();
        Ok(Some(BenchReport {
            markdown: report.markdown(&links),
            plots: plots
                .into_iter()
                .map(|(_, file, svg)| (file.to_string(), svg))
                .collect(),
            graded,
        }))
    }

    fn check_config(&self, text: &str) -> Result<String, String> {
        let (c, dialect) =
            moot_config::from_text(text, "the pasted configuration").map_err(on_the_server)?;
        let size = DebateSize::of(&c);
        c.validate_size(&size).map_err(|e| e.to_string())?;
        let from = match dialect {
            moot_config::Dialect::Moot => "moot's format",
            moot_config::Dialect::Freemad(_) => "freemad's format",
        };
        Ok(format!(
            "ok ({from}; {}{}, protocol {}, {})",
            moot_core::text::plural(size.agents, "agent"),
            c.deciders_suffix(),
            c.debate.protocol,
            moot_core::text::plural(c.debate.rounds, "debate round")
        ))
    }
}

/// A configuration error as the server's checker says it. Whether a `cli` agent's command or
/// working directory exists, and why it cannot run, would tell any visitor which files exist
/// on this machine: the checker says only that it is not usable here.
fn on_the_server(e: moot_config::ConfigError) -> String {
    let host_path = e.key.ends_with(".working_dir")
        || (e.key.ends_with(".command") && !e.message.contains("cli_allowed_commands"));
    if !host_path {
        return e.to_string();
    }
    let key = &e.key;
    let what = if key.ends_with(".working_dir") {
        "working directory"
    } else {
        "command"
    };
    let said = moot_config::ConfigError {
        message: format!("{key}: the {what} is not usable on this server"),
        ..e
    };
    said.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_team_size_past_the_bound_is_refused_before_any_agent_is_built() {
        let mut base = Config::default();
        base.serve.upstream = Some("http://127.0.0.1:9/v1".into());
        let service = DebateService::new(
            base,
            Arc::new(moot_store::MemoryStore::default()),
            Arc::new(|_: &str| {}),
        );
        // Building 10^8 agent tables first took past 5 GB; the bound is checked on the number.
        let request = DebateRequest {
            question: "What is 2 + 2?".into(),
            agents: Some(AgentsChoice::Count(100_000_000)),
            model: Some("m".into()),
            ..DebateRequest::default()
        };
        let refused = format!("{:#}", service.prepare(&request).map(|_| ()).unwrap_err());
        assert!(refused.contains("\"agents\": 100000000"), "{refused}");
        // Within the bound, the team is made on the upstream.
        let request = DebateRequest {
            agents: Some(AgentsChoice::Count(3)),
            ..request
        };
        let prepared = service.prepare(&request).unwrap();
        assert_eq!(prepared.config.agents.len(), 3);
    }

    /// Issue 43: a request's values are named as the request named them, and a request is
    /// prepared once: what `check` prepares is what `start` runs.
    #[test]
    fn an_http_request_is_told_of_its_own_fields_and_is_prepared_once() {
        let service = DebateService::new(
            Config::default(),
            Arc::new(moot_store::MemoryStore::default()),
            Arc::new(|_: &str| {}),
        );
        let request = DebateRequest {
            question: "What is 2 + 2?".into(),
            rounds: Some(11),
            ..DebateRequest::default()
        };
        let Err(RunnerError::BadRequest(refused)) = service.check(request) else {
            panic!("refused as a bad request");
        };
        assert!(
            refused.starts_with("\"rounds\": 11 is over the limit"),
            "{refused}"
        );
        assert!(!refused.contains("--"), "{refused}");
        let request = DebateRequest {
            question: "What is 2 + 2?".into(),
            options: [("topology".to_string(), "nowhere".to_string())].into(),
            ..DebateRequest::default()
        };
        let Err(RunnerError::BadRequest(refused)) = service.check(request) else {
            panic!("refused as a bad request");
        };
        assert!(refused.contains("\"options\": \"topology\""), "{refused}");
        let checked = service
            .check(DebateRequest {
                question: "What is 2 + 2?".into(),
                rounds: Some(1),
                ..DebateRequest::default()
            })
            .unwrap();
        let prepared = checked.prepared.as_ref().expect("prepared by check");
        assert_eq!(prepared.config.debate.rounds, 1);
        assert_eq!(prepared.via, Via::Http);
    }
}
