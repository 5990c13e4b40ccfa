"""moot: multi-agent debate from Python.

Several language-model agents answer a question, read each other's answers over rounds, and a
decision rule picks the final answer. This package runs moot's engine (Rust) in this process::

    import moot
    r = moot.ask("What is 17 * 24?", protocol="free-mad-n", agents=3, rounds=1,
                 sim=True, gold="408", store="memory:")
    r.answer          # '408'
    r.to_pandas()     # one row per agent and round

Debates release the GIL while they run, and ``await moot.ask_async(...)`` runs many at once
from asyncio. Ctrl-C stops a running debate (its agent processes too) and raises
``KeyboardInterrupt``. Results, runs and calls become pandas DataFrames (``.to_pandas()``) or
Arrow tables (``.to_arrow()``) when those packages are installed; neither is needed otherwise.
Errors are ``moot.MootError`` and its kinds: ``InputError`` (what was asked cannot run),
``ConfigError`` (a configuration's file and key), ``StoreError``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _moot
from ._moot import ConfigError, InputError, MootError, StoreError, __version__
from ._tables import Table

__all__ = [
    "ask",
    "ask_async",
    "bench",
    "plan",
    "fork",
    "fork_bench",
    "Store",
    "Result",
    "BenchReport",
    "Table",
    "MootError",
    "InputError",
    "ConfigError",
    "StoreError",
    "inspect_solver",
    "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]
ConfigArg = Union[PathLike, Mapping[str, Any], None]
OptionsArg = Union[Mapping[str, Any], Sequence[str], None]


class Store:
    """A store of runs: a SQLite file path or ``sqlite://`` URL, a ``postgres://`` URL,
    ``"memory:"`` (kept while this object lives), or ``None`` for moot's default store
    (``MOOT_STORE``, else ``moot.db`` in the user's data directory). Created if missing."""

    def __init__(self, location: Optional[PathLike] = None) -> None:
        self._inner = _moot.Store(None if location is None else os.fspath(location))

    def __repr__(self) -> str:
        return repr(self._inner)

    def runs(
        self,
        protocol: Optional[str] = None,
        answer: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        offset: int = 0,
        limit: int = 100,
    ) -> Table:
        """Stored runs, newest first: those of ``protocol``, whose answer contains ``answer``,
        created from ``since`` to the end of ``until`` (``"2026-11-27"`` style prefixes)."""
        rows = json.loads(self._inner.runs(protocol, answer, since, until, offset, limit))
        return Table(rows)

    def run(self, run_id: str) -> Dict[str, Any]:
        """The stored run whole: ``run``, ``calls``, ``decisions``, ``validations`` and
        ``view`` (what the web page shows: the grid of answers, each rule's decision)."""
        return json.loads(self._inner.run(run_id))

    def calls(self, run_id: str) -> Table:
        """Every stored call of the run, in order: round, agent, slot, prompt, response,
        answer, tokens, latency."""
        return Table(json.loads(self._inner.calls(run_id)))

    def decide(self, run_id: str, rule: Optional[str] = None) -> Dict[str, Any]:
        """The run decided again under ``rule`` (every rule when ``None``), at no token
        cost."""
        return json.loads(self._inner.decide(run_id, rule))

    def close(self) -> None:
        """Closes the store; a SQLite file then holds everything written."""
        self._inner.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Result:
    """A finished debate: its chosen ``answer`` (``None`` when no agent gave one), the
    ``rule`` that chose it, each round's answers (``rounds[r][a]``), ``tokens``, ``ncomm``
    and the stored ``run_id`` (``Store.run(run_id)`` reads it back)."""

    def __init__(self, data: Dict[str, Any]) -> None:
        self.data = data
        self.run_id: str = data["run_id"]
        self.answer: Optional[str] = data.get("answer")
        self.rule: str = data["rule"]
        self.protocol: str = data["protocol"]
        self.rounds: List[List[Optional[str]]] = data.get("rounds", [])
        self.tokens: Dict[str, int] = data.get("tokens", {})
        self.ncomm: int = data.get("ncomm", 0)
        self.calls: int = data.get("calls", 0)
        self.wall_ms: int = data.get("wall_ms", 0)

    def __repr__(self) -> str:
        return (
            f"moot.Result(answer={self.answer!r}, rule={self.rule!r}, "
            f"protocol={self.protocol!r}, run_id={self.run_id!r})"
        )

    def rows(self) -> List[Dict[str, Any]]:
        """One row per agent and round: run id, protocol, round, agent, answer."""
        return [
            {
                "run_id": self.run_id,
                "protocol": self.protocol,
                "round": r,
                "agent": a,
                "answer": answer,
            }
            for r, answers in enumerate(self.rounds)
            for a, answer in enumerate(answers)
        ]

    def to_pandas(self) -> Any:
        """:meth:`rows` as a pandas DataFrame."""
        return Table(self.rows()).to_pandas()

    def to_arrow(self) -> Any:
        """:meth:`rows` as a pyarrow Table."""
        return Table(self.rows()).to_arrow()


class BenchReport:
    """A benchmark's report: ``data`` is what ``moot bench --json`` prints (per protocol:
    accuracy with its interval, tokens, NComm, flips; paired tests), ``results`` one row per
    debate (protocol, item, run id, gold, answer, correct, tokens)."""

    def __init__(self, data: Dict[str, Any]) -> None:
        self.data = data
        self.name: str = data.get("bench", "")
        self.results = Table(data.get("results", []))

    def __repr__(self) -> str:
        return f"moot.BenchReport(name={self.name!r}, debates={len(self.results)})"

    @property
    def left_out(self) -> Table:
        """The dataset's items left out because they cannot be scored (``skip_invalid=True``),
        one row each: bench, id, place, problem, message. Empty when none were."""
        rows = []
        for bench in self.data.get("benches", []):
            for item in (bench.get("left_out") or {}).get("items", []):
                rows.append({"bench": bench.get("name", ""), **item})
        return Table(rows)

    def accuracy(self) -> Dict[str, float]:
        """Each protocol's share of right answers among its debates here. A protocol run by
        several benchmarks here (a ``sc_at_budget`` arm's ``cot-sc``) is named with each, as
        the report names it: ``cot-sc (NAME)``."""
        benches: Dict[str, set] = {}
        for row in self.results:
            benches.setdefault(row["protocol"], set()).add(row.get("bench", ""))
        totals: Dict[str, List[int]] = {}
        for row in self.results:
            key = row["protocol"]
            if len(benches[key]) > 1:
                key = f"{key} ({row.get('bench', '')})"
            t = totals.setdefault(key, [0, 0])
            t[0] += 1 if row["correct"] else 0
            t[1] += 1
        return {p: right / n for p, (right, n) in totals.items()}

    def controls(self, which: str) -> Table:
        """One of the report's controls as a table (``.to_pandas()``, ``.to_arrow()``), a row
        per protocol and what the control is about:

        - ``"vote"``: the debate against its own round-0 vote, paired on the same items
          (accuracies, the 2×2 table, the exact McNemar p-value);
        - ``"martingale"``: per protocol and debate round, the mean change in the share of
          agents holding the right answer, with its 95% interval;
        - ``"flips"``: per protocol and agent, its changes of answer (right→wrong,
          wrong→right, between consecutive rounds and first to last);
        - ``"flips_by_mix"``: the same per team mix, with the decision's accuracy;
        - ``"sc_at_budget"``: self-consistency at the debate's token budget, paired."""
        controls = self.data.get("controls") or {}
        rows: List[Dict[str, Any]] = []
        if which == "vote":
            for c in controls.get("vote_vs_decision", []):
                rows.append({"protocol": c["protocol"], **(c.get("paired") or {})})
        elif which == "martingale":
            for c in controls.get("martingale", []):
                for r in c.get("rounds", []):
                    low, high = r.get("ci95") or (None, None)
                    rows.append(
                        {
                            "protocol": c["protocol"],
                            "round": r["round"],
                            "items": r["items"],
                            "left_out": r["left_out"],
                            "mean": r.get("mean"),
                            "ci95_low": low,
                            "ci95_high": high,
                        }
                    )
        elif which in ("flips", "flips_by_mix"):
            key, label = ("by_agent", "agent") if which == "flips" else ("by_mix", "mix")
            for c in controls.get("flips", []):
                for f in c.get(key, []):
                    row = {"protocol": c["protocol"]}
                    row.update({k: v for k, v in f.items() if k != "flips"})
                    row.update(f.get("flips") or {})
                    rows.append(row)
        elif which == "sc_at_budget":
            for c in controls.get("self_consistency", []):
                row = {k: v for k, v in c.items() if k != "paired"}
                row.update(c.get("paired") or {})
                rows.append(row)
        else:
            raise ValueError(
                f"no control {which!r} (controls: vote, martingale, flips, flips_by_mix, "
                "sc_at_budget)"
            )
        return Table(rows)

    def to_pandas(self) -> Any:
        """The per-debate rows as a pandas DataFrame."""
        return self.results.to_pandas()

    def to_arrow(self) -> Any:
        """The per-debate rows as a pyarrow Table."""
        return self.results.to_arrow()


_stores: Dict[str, Store] = {}
_stores_lock = threading.Lock()


def _store(store: Union[Store, PathLike, None]) -> Store:
    """The store a call is given, opened once per location and reused."""
    if isinstance(store, Store):
        return store
    key = "" if store is None else os.fspath(store)
    with _stores_lock:
        if key not in _stores:
            _stores[key] = Store(store)
        return _stores[key]


def _config(config: ConfigArg) -> Dict[str, Optional[str]]:
    if config is None:
        return {"config_path": None, "config_text": None}
    if isinstance(config, Mapping):
        return {"config_path": None, "config_text": json.dumps(dict(config))}
    return {"config_path": os.fspath(config), "config_text": None}


def _options(options: OptionsArg) -> List[str]:
    if options is None:
        return []
    if isinstance(options, Mapping):
        return [f"{k}={v}" for k, v in options.items()]
    if isinstance(options, str):
        return [options]
    return [str(o) for o in options]


def ask(
    question: str,
    *,
    protocol: Optional[str] = None,
    agents: Optional[int] = None,
    rounds: Optional[int] = None,
    config: ConfigArg = None,
    store: Union[Store, PathLike, None] = None,
    sim: bool = False,
    gold: Optional[str] = None,
    options: OptionsArg = None,
    answer: Optional[str] = None,
    choices: Optional[Sequence[str]] = None,
    tests: Optional[str] = None,
    context: Optional[str] = None,
    require_passing: bool = False,
    _cancel: Optional["_moot.Cancel"] = None,
) -> Result:
    """Debates ``question`` and returns the :class:`Result`, as ``moot ask`` does.

    ``protocol``, ``agents`` and ``rounds`` override the configuration (``config``: a file's
    path, or a dict in moot's or freemad's format; without one, the embedded default team).
    ``sim=True`` debates among simulated agents, which need ``gold``. ``options`` are protocol
    options (``{"topology": "ring"}``), ``answer`` the answer kind (``numeric``, ``choice``,
    ``code``, …), ``choices`` a choice question's options, ``tests`` Python tests for a code
    answer. ``context`` is a passage the question is about: the debaters read it, a judge (or
    aggregator, or chairman) never does and sees only what the debaters quote, each quote checked
    against it. The run is recorded in ``store`` (see :class:`Store`).
    """
    if not isinstance(question, str):
        raise TypeError("question must be a str")
    text = _moot.ask(
        _store(store)._inner,
        question,
        protocol=protocol,
        agents=agents,
        rounds=rounds,
        sim=sim,
        gold=None if gold is None else str(gold),
        options=_options(options),
        answer=answer,
        choices=list(choices or []),
        tests=tests,
        context=context,
        require_passing=require_passing,
        cancel=_cancel,
        **_config(config),
    )
    return Result(json.loads(text))


_executor: Optional[concurrent.futures.ThreadPoolExecutor] = None
_executor_lock = threading.Lock()


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            # Debates wait on models, not on this process: many may run at once.
            _executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=64, thread_name_prefix="moot-debate"
            )
        return _executor


async def ask_async(question: str, **kwargs: Any) -> Result:
    """:func:`ask` for asyncio: the debate runs on a worker thread with the GIL released, so
    many run at once (``asyncio.gather``). Cancelling the task cancels the debate (its run is
    recorded as failed)."""
    cancel = _moot.Cancel()
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(
        _pool(), lambda: ask(question, _cancel=cancel, **kwargs)
    )
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        cancel.cancel()
        try:
            await future
        except MootError:
            pass
        raise


def _bench(
    dataset: str,
    protocols: Union[str, Sequence[str]],
    store: Union[Store, PathLike, None],
    config: ConfigArg,
    seed: Optional[int],
    **kwargs: Any,
) -> str:
    """``_moot.bench`` with the arguments :func:`bench` and :func:`plan` share read."""
    if isinstance(protocols, str):
        protocols = [p for p in protocols.split(",") if p]
    if seed is not None:
        kwargs["seed"] = seed
    text: str = _moot.bench(
        _store(store)._inner, dataset, list(protocols), **kwargs, **_config(config)
    )
    return text


def bench(
    dataset: Optional[str] = None,
    protocols: Union[str, Sequence[str], None] = None,
    *,
    limit: Optional[int] = None,
    seed: Optional[int] = None,
    concurrency: int = 4,
    rounds: Optional[int] = None,
    agents: Optional[int] = None,
    sim: bool = False,
    name: Optional[str] = None,
    data_dir: Optional[PathLike] = None,
    config: ConfigArg = None,
    store: Union[Store, PathLike, None] = None,
    options: OptionsArg = None,
    no_cache: bool = False,
    sc_at_budget: bool = False,
    fork_of: Optional[str] = None,
    round: Optional[int] = None,
    agent: Optional[Union[int, str]] = None,
    say: Optional[str] = None,
    say_wrong: bool = False,
    model: Optional[str] = None,
    skip_invalid: bool = False,
) -> BenchReport:
    """Runs every item of ``dataset`` (``gsm8k``, ``mmlu:SUBJECT``, ``jsonl:PATH?kind=…``, …;
    ``limit`` of them, drawn with ``seed``) under each of ``protocols`` and returns the
    :class:`BenchReport`, as ``moot bench`` does. The same ``name`` resumes it.
    ``sc_at_budget=True`` then runs a self-consistency arm that spends what the costliest
    debate spent (``cot-sc`` with as many samples as that pays for, as the benchmark
    ``NAME-scK``) and reports both, as ``moot bench --sc-at-budget`` does.
    ``skip_invalid=True`` leaves out the dataset's items that cannot be scored (a gold that
    does not parse, a field missing), as ``moot bench --skip-invalid`` does; they are in
    :attr:`BenchReport.left_out`.

    ``fork_of=PARENT`` with ``round=R`` forks every debate of the stored benchmark PARENT
    instead, as ``moot bench --fork-of`` does (see :func:`fork_bench`: ``agent``, ``say``,
    ``say_wrong``, ``model``); the dataset and protocols are the parent's."""
    if fork_of is not None:
        given = {
            "dataset": dataset, "protocols": protocols, "limit": limit, "seed": seed,
            "rounds": rounds, "agents": agents, "data_dir": data_dir, "options": options,
        }
        clash = [k for k, v in given.items() if v is not None]
        switches = {"sim": sim, "no_cache": no_cache, "sc_at_budget": sc_at_budget,
                    "skip_invalid": skip_invalid}
        clash += [k for k, v in switches.items() if v]
        if clash:
            raise InputError(
                f"fork_of= forks the parent's debates as they were: {', '.join(clash)} "
                "cannot be set with it"
            )
        if round is None:
            raise InputError("fork_of= needs round=: the round at which the forks differ")
        return fork_bench(
            fork_of, round, agent=agent, say=say, say_wrong=say_wrong, model=model,
            name=name, concurrency=concurrency, config=config, store=store,
        )
    forking = {"round": round, "agent": agent, "say": say, "model": model}
    stray = [k for k, v in forking.items() if v is not None] + (["say_wrong"] if say_wrong else [])
    if stray:
        raise InputError(f"{', '.join(stray)} fork(s) a benchmark: give fork_of= with it")
    if dataset is None or protocols is None:
        raise InputError("bench needs a dataset and protocols (or fork_of=)")
    text = _bench(
        dataset,
        protocols,
        store,
        config,
        seed,
        limit=limit,
        concurrency=concurrency,
        rounds=rounds,
        agents=agents,
        sim=sim,
        name=name,
        data_dir=None if data_dir is None else os.fspath(data_dir),
        options=_options(options),
        no_cache=no_cache,
        sc_at_budget=sc_at_budget,
        skip_invalid=skip_invalid,
    )
    return BenchReport(json.loads(text))


def plan(
    dataset: str,
    protocols: Union[str, Sequence[str]],
    name: str,
    *,
    limit: Optional[int] = None,
    seed: Optional[int] = None,
    rounds: Optional[int] = None,
    agents: Optional[int] = None,
    sim: bool = False,
    data_dir: Optional[PathLike] = None,
    config: ConfigArg = None,
    store: Union[Store, PathLike, None] = None,
    options: OptionsArg = None,
    no_cache: bool = False,
    skip_invalid: bool = False,
) -> Dict[str, Any]:
    """Records the benchmark ``name`` without running it, as ``moot bench … --detach`` does:
    ``moot work NAME`` processes on any machines sharing the store then work it. Planning the
    same benchmark again adds only what is missing. Returns ``{"bench", "planned", "added"}``."""
    text = _bench(
        dataset,
        protocols,
        store,
        config,
        seed,
        limit=limit,
        rounds=rounds,
        agents=agents,
        sim=sim,
        name=name,
        data_dir=None if data_dir is None else os.fspath(data_dir),
        options=_options(options),
        no_cache=no_cache,
        skip_invalid=skip_invalid,
        detach=True,
    )
    result: Dict[str, Any] = json.loads(text)
    return result


def fork_bench(
    parent: str,
    round: int,
    *,
    agent: Optional[Union[int, str]] = None,
    say: Optional[str] = None,
    say_wrong: bool = False,
    model: Optional[str] = None,
    name: Optional[str] = None,
    concurrency: int = 4,
    config: ConfigArg = None,
    store: Union[Store, PathLike, None] = None,
) -> BenchReport:
    """Forks every debate of the stored benchmark ``parent`` at ``round`` with one
    intervention, as ``moot bench --fork-of`` does: none (the round resampled), ``say`` (a
    template ``agent`` says: ``{wrong}``, ``{gold}``, ``{answer}`` filled per item),
    ``say_wrong=True``, or ``model`` (``agent``'s model from the round on). ``agent`` is a
    number from 1 or an agent's id; ``config`` is this machine's configuration (what may run,
    the limits). Returns the fork benchmark's report, paired with its parent's; the same
    ``name`` resumes it."""
    text = _moot.fork_bench(
        _store(store)._inner,
        parent,
        round,
        agent=None if agent is None else str(agent),
        say=say,
        say_wrong=say_wrong,
        model=model,
        name=name,
        concurrency=concurrency,
        **_config(config),
    )
    data: Dict[str, Any] = json.loads(text)
    data.setdefault("bench", data.get("fork_run", {}).get("name", ""))
    return BenchReport(data)


def fork(
    run: str,
    round: int,
    *,
    agent: Optional[Union[int, str]] = None,
    say: Optional[str] = None,
    model: Optional[str] = None,
    config: ConfigArg = None,
    store: Union[Store, PathLike, None] = None,
) -> Result:
    """Forks the finished debate ``run`` at ``round``, as ``moot fork`` does: without a change
    the round is asked again (the null fork, the control); ``say`` puts that text in place of
    ``agent``'s response of the round; ``model`` lets ``agent`` answer with another model from
    the round on (an agent id of ``config``, else a model of the agent's own backend).
    ``agent`` is a number from 1 or an agent's id; ``config`` is this machine's configuration
    (what may run, the limits). Returns the fork's :class:`Result`; the rounds before ``round``
    are the parent's, copied at no cost."""
    text = _moot.fork(
        _store(store)._inner,
        run,
        round,
        agent=None if agent is None else str(agent),
        say=say,
        model=model,
        **_config(config),
    )
    return Result(json.loads(text))


def inspect_solver(**kwargs: Any) -> Any:
    """An inspect_ai solver that answers each sample by a debate (see
    :func:`moot.inspect.debate`); needs ``inspect-ai``."""
    from .inspect import debate

    return debate(**kwargs)
