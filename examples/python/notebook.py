"""A notebook-style tour of moot from Python: debates, a small benchmark, runs loaded into a
DataFrame, and accuracy by protocol plotted. Runs as it is (simulated agents, no model needed):

    python examples/python/notebook.py [OUTPUT.svg]

Replace `sim=True, gold=...` by `config="agents.toml"` to debate with real models.
"""

import asyncio
import json
import sys
import tempfile
from pathlib import Path

import moot

work = Path(tempfile.mkdtemp(prefix="moot-notebook-"))
store = moot.Store(work / "moot.db")

# %% One debate: three simulated agents, one debate round, FREE-MAD's decision rule.
r = moot.ask(
    "What is 17 * 24?",
    protocol="free-mad-n",
    agents=3,
    rounds=1,
    sim=True,
    gold="408",
    store=store,
)
print(r)
print(r.to_pandas())

# %% Many debates at once from asyncio (the GIL is released while they run).
async def many():
    return await asyncio.gather(
        *[
            moot.ask_async(f"What is {i} * 3?", agents=3, rounds=1, sim=True, gold=str(3 * i), store=store)
            for i in range(1, 11)
        ]
    )


answers = asyncio.run(many())
print([a.answer for a in answers])

# %% A small benchmark: 20 arithmetic items under three protocols.
items = work / "items.jsonl"
items.write_text(
    "\n".join(json.dumps({"question": f"What is {i} + {i * 2}?", "answer": str(3 * i)}) for i in range(20))
)
report = moot.bench(
    f"jsonl:{items}?kind=numeric",
    ["cot", "som", "free-mad-n"],
    agents=3,
    rounds=2,
    sim=True,
    name="notebook",
    store=store,
)

# %% Every run of the store in a DataFrame, and accuracy by protocol from the benchmark.
runs = store.runs(limit=1000).to_pandas()
print(runs[["id", "protocol", "answer", "status"]].head())
frame = report.to_pandas()
accuracy = frame.groupby("protocol")["correct"].mean().sort_values()
print(accuracy)

# %% Plot it (matplotlib, if installed).
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = accuracy.plot.barh(xlim=(0, 1), title="accuracy by protocol (simulated agents)")
    ax.set_xlabel("accuracy")
    out = sys.argv[1] if len(sys.argv) > 1 else str(work / "accuracy.svg")
    plt.tight_layout()
    plt.savefig(out)
    print(f"plot: {out}")
except ImportError:
    print("(pip install matplotlib to plot)")
