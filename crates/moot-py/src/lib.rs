//! `moot._moot`: the extension module under moot's Python package (`python/moot`). It is a thin
//! face over the application layer (`moot-app`): it turns Python arguments into moot-app's
//! requests, runs them with the GIL released, and hands results back as JSON text, which the
//! Python side turns into objects and tables. Nothing here decides anything a front end of
//! moot-app would not.
//!
//! Running: every call that reaches a model or the store runs on the `Store`'s runtime with
//! the GIL released, so other Python threads and asyncio tasks go on meanwhile. While it runs it
//! looks every 50 ms for a Python signal (Ctrl-C raises `KeyboardInterrupt` in the main thread)
//! and for its `Cancel` token: either drops the debate, which stops its calls and ends the agent
//! processes it started, records the run as failed, and raises. The library installs no signal
//! handler of its own.

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use moot_app::ask::{AskRequest, Context, Tests};
use moot_app::benchmark::{BenchEvents, BenchRequest};
use moot_app::error::{kind_of, ErrorKind};
use moot_app::fork::{Change, ForkRequest};
use moot_app::prepare::StoreArg;
use moot_app::request::Settings;
use moot_config::{AnswerSetting, Config, Field, ProtocolName, Via};
use moot_eval::bench::ItemResult;
use moot_store::{Access, RunFilter, RunStatus};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use serde_json::{json, Value};

create_exception!(
    _moot,
    MootError,
    PyException,
    "The base of every error moot raises."
);
create_exception!(
    _moot,
    InputError,
    MootError,
    "What was asked cannot run as given (an argument, a question, a protocol option, a team \
     size); the message says what to change."
);
create_exception!(
    _moot,
    ConfigError,
    InputError,
    "A configuration (a file or a dict) cannot be used; the message names the file and key."
);
create_exception!(
    _moot,
    StoreError,
    MootError,
    "The store cannot be used as it is, or failed while in use."
);

/// How often a running call looks for a Python signal and its cancel token.
const POLL: Duration = Duration::from_millis(50);

/// `e` as the Python exception of its kind, with moot's message: a configuration that cannot
/// be used is the `InputError` that `ConfigError` narrows.
fn to_py(e: anyhow::Error) -> PyErr {
    // As the CLI prints it: text quoted from a file or a server must not drive the terminal a
    // traceback is printed on (line breaks stay).
    let message = moot_core::escape::terminal(&format!("{e:#}")).into_owned();
    match kind_of(&e) {
        ErrorKind::Input if e.chain().any(|l| l.is::<moot_config::ConfigError>()) => {
            ConfigError::new_err(message)
        }
        ErrorKind::Input => InputError::new_err(message),
        ErrorKind::UnusableStore | ErrorKind::Store => StoreError::new_err(message),
        ErrorKind::Other => MootError::new_err(message),
    }
}

fn input(message: impl Into<String>) -> PyErr {
    InputError::new_err(message.into())
}

/// A token that cancels the call it is given to (`ask(..., cancel=token)`), from any thread:
/// what `ask_async` uses when its task is cancelled.
#[pyclass(frozen)]
#[derive(Default)]
struct Cancel {
    flag: Arc<AtomicBool>,
}

#[pymethods]
impl Cancel {
    #[new]
    fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels the call: it stops within 50 ms and raises `asyncio.CancelledError`'s cause,
    /// `moot.MootError("cancelled")`.
    fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    #[getter]
    fn cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

/// How a detached call ended.
enum Ended<T> {
    Done(anyhow::Result<T>),
    Cancelled,
    Signal(PyErr),
}

/// Runs the future `make` builds on `rt` with the GIL released, until it ends, the token is
/// cancelled, or a Python signal handler raises (Ctrl-C); the future is dropped on the way out,
/// which stops whatever it was doing.
fn detached<T, F, Fut>(
    py: Python<'_>,
    rt: &tokio::runtime::Runtime,
    cancel: Option<&Cancel>,
    make: F,
) -> Ended<T>
where
    T: Send,
    F: FnOnce() -> Fut + Send,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let flag = cancel.map(|c| c.flag.clone());
    py.detach(move || {
        rt.block_on(async move {
            let work = make();
            tokio::pin!(work);
            let mut tick = tokio::time::interval(POLL);
            loop {
                tokio::select! {
                    ended = &mut work => return Ended::Done(ended),
                    _ = tick.tick() => {
                        if flag.as_ref().is_some_and(|f| f.load(Ordering::SeqCst)) {
                            return Ended::Cancelled;
                        }
                        if let Err(e) = Python::attach(|py| py.check_signals()) {
                            return Ended::Signal(e);
                        }
                    }
                }
            }
        })
    })
}

/// A store of runs, opened once and shared by every call given it.
#[pyclass(frozen)]
struct Store {
    store: Arc<dyn moot_store::Store>,
    rt: Arc<tokio::runtime::Runtime>,
    location: String,
}

impl Store {
    /// The stored run `run_id` whole (an unknown run is an input error).
    fn records(
        &self,
        py: Python<'_>,
        run_id: String,
    ) -> PyResult<moot_app::run_records::RunRecords> {
        let store = self.store.clone();
        py.detach(|| {
            self.rt.block_on(async move {
                moot_app::run_records::RunRecords::load(store.as_ref(), &run_id).await
            })
        })
        .map_err(to_py)
    }

    /// Ends `ended`: a result, or after a cancel or a signal, the run `run_id` (if it was
    /// created) recorded as failed and the matching Python error.
    fn finish<T>(
        &self,
        py: Python<'_>,
        ended: Ended<T>,
        run_id: &Mutex<Option<String>>,
    ) -> PyResult<T> {
        let stopped = match ended {
            Ended::Done(result) => return result.map_err(to_py),
            Ended::Cancelled => MootError::new_err("cancelled"),
            Ended::Signal(e) => e,
        };
        let id = run_id.lock().ok().and_then(|mut id| id.take());
        if let Some(id) = id {
            let store = self.store.clone();
            py.detach(|| {
                self.rt.block_on(async move {
                    let at = moot_engine::timestamp();
                    // The run's calls so far stay stored; it is failed, not interrupted: no
                    // process will resume it by itself.
                    let _ = store.finish_run(&id, RunStatus::Failed, None, &at).await;
                })
            });
        }
        Err(stopped)
    }
}

#[pymethods]
impl Store {
    /// Opens (creating it if needed) the store at `location`: a SQLite file path or
    /// `sqlite://` URL, a `postgres://` URL, `memory:` (kept only while this object lives), or
    /// `None` for moot's default (`MOOT_STORE`, else `moot.db` in the user's data directory).
    #[new]
    #[pyo3(signature = (location=None))]
    fn new(py: Python<'_>, location: Option<String>) -> PyResult<Store> {
        let given = location.filter(|l| !l.trim().is_empty());
        let from_env = given.is_none();
        let spec = given.or_else(|| std::env::var("MOOT_STORE").ok().filter(|l| !l.is_empty()));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("moot")
            .build()
            .map_err(|e| MootError::new_err(format!("starting moot's runtime: {e}")))?;
        // Opened as the CLI opens it: its rate limits shared with every process recording to
        // it; what the store says of them (an allowance it reset) becomes a Python warning.
        let arg = StoreArg {
            from_env: from_env && spec.is_some(),
            spec: spec.clone(),
            warn: Arc::new(|message: &str| {
                Python::attach(|py| {
                    let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
                    let _ = PyErr::warn(
                        py,
                        &category,
                        &std::ffi::CString::new(message).unwrap_or_default(),
                        1,
                    );
                })
            }),
        };
        let store = py
            .detach(|| arg.open_shared(Access::Create, &rt))
            .map_err(to_py)?;
        Ok(Store {
            store,
            rt: Arc::new(rt),
            location: spec.unwrap_or_else(|| "the default store".into()),
        })
    }

    fn __repr__(&self) -> String {
        format!("moot.Store({:?})", self.location)
    }

    /// Stored runs, newest first, as JSON: those of `protocol`, whose answer contains
    /// `answer`, created from `since` up to the end of `until` (RFC 3339 prefixes such as
    /// `2026-11-27`).
    #[pyo3(signature = (protocol=None, answer=None, since=None, until=None, offset=0, limit=100))]
    #[allow(clippy::too_many_arguments)]
    fn runs(
        &self,
        py: Python<'_>,
        protocol: Option<String>,
        answer: Option<String>,
        since: Option<String>,
        until: Option<String>,
        offset: u32,
        limit: u32,
    ) -> PyResult<String> {
        let filter = RunFilter {
            protocol,
            answer,
            from: since,
            to: until,
            outside_benches: false,
            offset,
            limit,
        };
        let store = self.store.clone();
        let runs = py
            .detach(|| {
                self.rt
                    .block_on(async move { store.list_runs(&filter).await })
            })
            .map_err(|e| to_py(anyhow::Error::new(e)))?;
        let shown: Vec<Value> = runs.iter().map(moot_app::run_records::run_json).collect();
        Ok(Value::Array(shown).to_string())
    }

    /// The stored run `run_id` whole, as JSON: the run, its calls, decisions and code checks,
    /// and the view the web pages show of it.
    fn run(&self, py: Python<'_>, run_id: String) -> PyResult<String> {
        let records = self.records(py, run_id)?;
        let mut value = records.json();
        let view = moot_app::view::run_view(
            &records.run,
            &records.calls,
            &records.decisions,
            &records.validations,
        );
        value["view"] = serde_json::to_value(&view).unwrap_or(Value::Null);
        Ok(value.to_string())
    }

    /// The stored calls of run `run_id`, in order, as JSON.
    fn calls(&self, py: Python<'_>, run_id: String) -> PyResult<String> {
        let records = self.records(py, run_id)?;
        Ok(serde_json::to_string(&records.calls).unwrap_or_else(|_| "[]".into()))
    }

    /// Run `run_id` decided again under `rule` (every rule when `None`), at no token cost, as
    /// JSON.
    #[pyo3(signature = (run_id, rule=None))]
    fn decide(&self, py: Python<'_>, run_id: String, rule: Option<String>) -> PyResult<String> {
        let rules = moot_app::decide::Rules::parse(rule.as_deref().unwrap_or("all"), Via::Python)
            .map_err(to_py)?;
        let store = self.store.clone();
        let stored = py
            .detach(|| {
                self.rt.block_on(async move {
                    moot_app::decide::StoredRun::load(store.as_ref(), &run_id).await
                })
            })
            .map_err(to_py)?;
        let decided = moot_app::decide::decide(
            &rules,
            moot_app::decide::Decided::Stored(Box::new(stored)),
            None,
            &moot_app::decide::SettingOverrides {
                via: Via::Python,
                ..Default::default()
            },
        )
        .map_err(to_py)?;
        Ok(decided.to_string())
    }

    /// Closes the store (a SQLite file then holds everything written). Calls after this fail.
    fn close(&self, py: Python<'_>) {
        let store = self.store.clone();
        py.detach(|| self.rt.block_on(async move { store.close().await }));
    }
}

/// The configuration a call is given, as moot-app's request takes it: a file's path (read when
/// the request is prepared), or a text (a dict as JSON), or neither.
fn configuration(path: Option<String>, text: Option<String>) -> PyResult<Settings> {
    let mut settings = Settings::from(Via::Python);
    match (path, text) {
        (Some(_), Some(_)) => return Err(input("config: give a file's path or a dict, not both")),
        (Some(path), None) => settings.config_file = Some(PathBuf::from(path)),
        (None, Some(text)) => {
            let config = moot_app::request::config_from_json(&text, "the config dict")
                .map_err(|e| to_py(e.into()))?;
            settings.config = Some(config);
        }
        (None, None) => {}
    }
    Ok(settings)
}

/// A protocol's name, parsed as Python gave it.
fn protocol_name(protocol: String) -> PyResult<ProtocolName> {
    protocol
        .parse::<ProtocolName>()
        .map_err(|e| input(format!("{} {e}", Via::Python.name(Field::Protocol))))
}

/// Debates `question` and returns the summary `moot ask --json` prints, as JSON.
#[pyfunction]
#[pyo3(signature = (
    store, question, *, protocol=None, agents=None, rounds=None, config_path=None,
    config_text=None, sim=false, gold=None, options=Vec::new(), answer=None,
    choices=Vec::new(), tests=None, context=None, require_passing=false, cancel=None
))]
#[allow(clippy::too_many_arguments)]
fn ask(
    py: Python<'_>,
    store: &Store,
    question: String,
    protocol: Option<String>,
    agents: Option<usize>,
    rounds: Option<usize>,
    config_path: Option<String>,
    config_text: Option<String>,
    sim: bool,
    gold: Option<String>,
    options: Vec<String>,
    answer: Option<String>,
    choices: Vec<String>,
    tests: Option<String>,
    context: Option<String>,
    require_passing: bool,
    cancel: Option<&Cancel>,
) -> PyResult<String> {
    let answer = answer
        .map(|a| {
            a.parse::<AnswerSetting>()
                .map_err(|e| input(format!("{} {e}", Via::Python.name(Field::Answer))))
        })
        .transpose()?;
    let request = AskRequest {
        settings: Settings {
            protocol: protocol.map(protocol_name).transpose()?,
            rounds,
            agents,
            sim,
            answer,
            gold,
            protocol_options: options,
            ..configuration(config_path, config_text)?
        },
        choices,
        tests: tests.map(Tests::Text),
        context: context.map(Context::Text),
        require_passing,
        ..AskRequest::new(question)
    };
    let run_id = Mutex::new(None);
    let shared = store.store.clone();
    let id_cell = &run_id;
    let ended = detached(py, &store.rt, cancel, move || async move {
        let session = request.session(shared.as_ref(), &mut |_| {})?;
        if let Ok(mut id) = id_cell.lock() {
            *id = Some(session.run_id.clone());
        }
        let finished =
            moot_app::session::run(session, &moot_engine::NoObserver, &mut |_| {}).await?;
        Ok(finished.json().to_string())
    });
    store.finish(py, ended, &run_id)
}

/// Benchmarks `protocols` on `dataset` and returns the report (as `moot bench --json` prints
/// it) with each debate's row under `"results"`, as JSON; with `sc_at_budget`, then the
/// self-consistency arm that pays for the costliest debate, reported together; with `detach`,
/// only records the plan for `moot work` and returns `{"bench", "planned", "added"}`.
#[pyfunction(name = "bench")]
#[pyo3(signature = (
    store, dataset, protocols, *, limit=None, seed=moot_config::DEFAULT_SEED, concurrency=4,
    rounds=None, agents=None, sim=false, name=None, data_dir=None, config_path=None,
    config_text=None, options=Vec::new(), no_cache=false, sc_at_budget=false, detach=false,
    skip_invalid=false, cancel=None
))]
#[allow(clippy::too_many_arguments)]
fn benchmark(
    py: Python<'_>,
    store: &Store,
    dataset: String,
    protocols: Vec<String>,
    limit: Option<usize>,
    seed: u64,
    concurrency: usize,
    rounds: Option<usize>,
    agents: Option<usize>,
    sim: bool,
    name: Option<String>,
    data_dir: Option<String>,
    config_path: Option<String>,
    config_text: Option<String>,
    options: Vec<String>,
    no_cache: bool,
    sc_at_budget: bool,
    detach: bool,
    skip_invalid: bool,
    cancel: Option<&Cancel>,
) -> PyResult<String> {
    if detach && sc_at_budget {
        return Err(input(
            "detach=True only plans the benchmark; sc_at_budget=True needs it run: give one",
        ));
    }
    if detach && name.is_none() {
        return Err(input(
            "detach=True needs name=: workers find the planned benchmark by its name",
        ));
    }
    let protocols = protocols
        .into_iter()
        .map(protocol_name)
        .collect::<PyResult<Vec<_>>>()?;
    let request = BenchRequest {
        settings: Settings {
            rounds,
            agents,
            sim,
            protocol_options: options,
            ..configuration(config_path, config_text)?
        },
        dataset,
        protocols,
        limit,
        seed,
        concurrency,
        name,
        data_dir: data_dir.map(PathBuf::from),
        no_cache,
        sc_at_budget,
        resumed: false,
        skip_invalid,
    };
    let shared = store.store.clone();
    let ended = detached(py, &store.rt, cancel, move || async move {
        if detach {
            let prepared =
                moot_app::benchmark::Prepared::new(&request, None, shared.as_ref(), &mut |_| {})
                    .await?;
            let (planned, added) = prepared
                .plan_for_workers(shared.as_ref(), request.concurrency)
                .await?;
            return Ok(
                json!({"bench": prepared.name, "planned": planned, "added": added}).to_string(),
            );
        }
        let mut rows = Rows::default();
        let done = moot_app::benchmark::run(&request, shared.as_ref(), &mut rows).await?;
        let mut report = done.json()?;
        report["bench"] = json!(done.names.first());
        report["results"] = Value::Array(rows.rows);
        Ok(report.to_string())
    });
    // A benchmark's debates are resumable runs: a cancelled one is left to `moot resume`.
    store.finish(py, ended, &Mutex::new(None))
}

/// This machine's configuration as a fork reads it: what may run, where requests go, the
/// limits, the agents `model` may name. `None` when none was given.
fn local_config(
    config_path: Option<String>,
    config_text: Option<String>,
) -> PyResult<Option<Config>> {
    let given = configuration(config_path, config_text)?;
    if given.config.is_some() || given.config_file.is_some() {
        Ok(Some(given.load_config().map_err(|e| to_py(e.into()))?))
    } else {
        Ok(None)
    }
}

/// Forks the finished run `parent` at `round` (as `moot fork` does): no change (the round
/// asked again, the null fork), `say` (the text `agent` says in the round) or `model` (the
/// agent's model from the round on). Returns the fork's summary, as `moot fork --json` prints
/// it, as JSON.
#[pyfunction]
#[pyo3(signature = (
    store, parent, round, *, agent=None, say=None, model=None, config_path=None,
    config_text=None, cancel=None
))]
#[allow(clippy::too_many_arguments)]
fn fork(
    py: Python<'_>,
    store: &Store,
    parent: String,
    round: usize,
    agent: Option<String>,
    say: Option<String>,
    model: Option<String>,
    config_path: Option<String>,
    config_text: Option<String>,
    cancel: Option<&Cancel>,
) -> PyResult<String> {
    let change = Change::from_parts(agent, say, model, Via::Python).map_err(|e| to_py(e.into()))?;
    let request = ForkRequest {
        via: Via::Python,
        parent,
        round,
        change,
        local: local_config(config_path, config_text)?,
        run_id: None,
    };
    let run_id = Mutex::new(None);
    let shared = store.store.clone();
    let id_cell = &run_id;
    let ended = detached(py, &store.rt, cancel, move || async move {
        let forked = moot_app::fork::prepare(shared.as_ref(), request, &mut |_| {}).await?;
        if let Ok(mut id) = id_cell.lock() {
            *id = Some(forked.session.run_id.clone());
        }
        let finished =
            moot_app::session::run(forked.session, &moot_engine::NoObserver, &mut |_| {}).await?;
        Ok(finished.json().to_string())
    });
    store.finish(py, ended, &run_id)
}

/// Forks every debate of the stored benchmark `parent` at `round` with one intervention (as
/// `moot bench --fork-of` does): none (the round resampled), `say` (a template said by
/// `agent`), `say_wrong`, or `model` (the agent's model from the round on). Returns the fork
/// benchmark's report, paired with its parent's, with this run under `"fork_run"`, as JSON.
#[pyfunction]
#[pyo3(signature = (
    store, parent, round, *, agent=None, say=None, say_wrong=false, model=None, name=None,
    concurrency=4, config_path=None, config_text=None, cancel=None
))]
#[allow(clippy::too_many_arguments)]
fn fork_bench(
    py: Python<'_>,
    store: &Store,
    parent: String,
    round: usize,
    agent: Option<String>,
    say: Option<String>,
    say_wrong: bool,
    model: Option<String>,
    name: Option<String>,
    concurrency: usize,
    config_path: Option<String>,
    config_text: Option<String>,
    cancel: Option<&Cancel>,
) -> PyResult<String> {
    let change =
        moot_app::bench_fork::BenchChange::from_parts(agent, say, say_wrong, model, Via::Python)
            .map_err(|e| to_py(e.into()))?;
    // This machine's configuration: what may run, where requests go, the limits.
    let local = local_config(config_path, config_text)?;
    let request = moot_app::bench_fork::BenchForkRequest {
        via: Via::Python,
        parent,
        round,
        change,
        name,
        concurrency,
        local,
    };
    let shared = store.store.clone();
    let ended = detached(py, &store.rt, cancel, move || async move {
        let done =
            moot_app::bench_fork::run(shared.as_ref(), &request, &mut |_, _| {}, &mut |_| {})
                .await?;
        Ok(done
            .report_json(shared.as_ref(), Via::Python)
            .await?
            .to_string())
    });
    store.finish(py, ended, &Mutex::new(None))
}

/// Each debate of a benchmark as a row, as it ends, with the benchmark it belongs to (the one
/// asked for, or its self-consistency arm).
#[derive(Default)]
struct Rows {
    bench: String,
    rows: Vec<Value>,
}

impl BenchEvents for Rows {
    fn started(&mut self, prepared: &moot_app::benchmark::Prepared) {
        self.bench = prepared.name.clone();
    }

    fn result(&mut self, result: &ItemResult, correct: bool) {
        let mut row = moot_app::bench_report::row_json(result, correct);
        row["bench"] = json!(self.bench);
        self.rows.push(row);
    }
}

/// moot's extension module; `import moot` is the way in.
#[pymodule]
fn _moot(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MootError", m.py().get_type::<MootError>())?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("StoreError", m.py().get_type::<StoreError>())?;
    m.add_class::<Store>()?;
    m.add_class::<Cancel>()?;
    m.add_function(wrap_pyfunction!(ask, m)?)?;
    m.add_function(wrap_pyfunction!(benchmark, m)?)?;
    m.add_function(wrap_pyfunction!(fork_bench, m)?)?;
    m.add_function(wrap_pyfunction!(fork, m)?)?;
    Ok(())
}
