"""How fast moot runs from Python, against the CLI measured in the same run.

    scripts/python-tests --collect-only -q   # builds the wheel into target/py-venv first
    target/py-venv/bin/python crates/moot-py/bench/debates.py [--debates 1000] [--moot target/release/moot]

1. The same N simulated debates (free-mad-n, 3 agents, 1 debate round, one item each) three
   ways: `moot bench --sim` in one CLI process (the baseline), `moot.bench(...)` from Python,
   and `moot.ask(...)` called N times from Python. Each prints its wall time and its ratio to
   the baseline; the Python paths should be within 1.2x.
2. asyncio overlap: K one-call debates against a fake OpenAI-compatible server that waits
   D seconds per request, one after another and then with asyncio.gather; the ratio shows how
   much they overlapped (K for perfect overlap).
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import moot

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from conftest import SlowOpenAi  # noqa: E402


def items(path: Path, n: int) -> str:
    path.write_text(
        "\n".join(json.dumps({"question": f"What is {i} + {i}?", "answer": str(2 * i)}) for i in range(n))
    )
    return f"jsonl:{path}?kind=numeric"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--debates", type=int, default=1000)
    parser.add_argument("--moot", default=os.environ.get("MOOT_BIN", "target/debug/moot"))
    parser.add_argument("--overlap", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.2)
    args = parser.parse_args()
    n = args.debates
    work = Path(tempfile.mkdtemp(prefix="moot-pybench-"))
    dataset = items(work / "items.jsonl", n)
    common = ["--protocol", "free-mad-n", "--agents", "3", "--rounds", "1", "--sim"]

    t0 = time.perf_counter()
    subprocess.run(
        [args.moot, "--store", str(work / "cli.db"), "bench", "--dataset", dataset, *common,
         "--concurrency", "4", "--json"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    cli = time.perf_counter() - t0

    store = moot.Store(work / "py-bench.db")
    t0 = time.perf_counter()
    report = moot.bench(dataset, ["free-mad-n"], agents=3, rounds=1, sim=True, concurrency=4, store=store)
    py_bench = time.perf_counter() - t0
    assert len(report.results) == n

    store = moot.Store(work / "py-ask.db")
    questions = [json.loads(line)["question"] for line in (work / "items.jsonl").read_text().splitlines()]
    golds = [str(2 * i) for i in range(n)]
    t0 = time.perf_counter()
    for q, g in zip(questions, golds):
        moot.ask(q, protocol="free-mad-n", agents=3, rounds=1, sim=True, gold=g, store=store)
    py_ask = time.perf_counter() - t0

    print(f"{n} simulated debates (free-mad-n, 3 agents, 1 round)")
    print(f"  CLI  moot bench --sim, one process   {cli:7.2f} s  (baseline)")
    print(f"  Python moot.bench                    {py_bench:7.2f} s  {py_bench / cli:5.2f}x")
    print(f"  Python moot.ask x {n:<5}              {py_ask:7.2f} s  {py_ask / cli:5.2f}x")

    fake = SlowOpenAi(delay=args.delay)
    store = moot.Store("memory:")
    k = args.overlap
    t0 = time.perf_counter()
    for _ in range(k):
        moot.ask("What is 3 + 4?", config=fake.config(), store=store)
    serial = time.perf_counter() - t0

    async def together():
        return await asyncio.gather(
            *[moot.ask_async("What is 3 + 4?", config=fake.config(), store=store) for _ in range(k)]
        )

    fake.most_at_once = 0
    t0 = time.perf_counter()
    asyncio.run(together())
    gathered = time.perf_counter() - t0
    fake.close()
    print(f"{k} debates against a server that waits {args.delay:.1f} s per request")
    print(f"  one after another {serial:6.2f} s; asyncio.gather {gathered:6.2f} s; "
          f"overlap {serial / gathered:4.1f}x (at most {fake.most_at_once} requests at once)")


if __name__ == "__main__":
    main()
