#!/usr/bin/env python3
"""Fits the sim's conformity β(p) to a real model's measured adoption rates.

Reads the real-model benchmark `gsm8k-30-beta` (three agents, one round, FREE-MAD under its
three prompts; `results/gsm8k-30/run.sh`) from its store and, for each prompt, the share of
agent-rounds in which an agent that had read a peer answer different from its own adopted one
of those answers (`moot report --json`, "adoption"). Then it finds, for each prompt, the β at
which a simulated team reproduces that rate:

- the simulated agents answer alone with the model's measured round-0 accuracy, re-derive their
  answer every round (α = 1: a sampled model does not copy its previous turn), and fall for
  several distinct wrong answers (a small model's wrong answers rarely coincide);
- the sim's adoption rate is measured on a grid of β, one β for every prompt, on 400 simulated
  GSM8K debates per point; it rises with β, so each measured rate maps to one β by linear
  interpolation, and its 95% Wilson interval maps to an interval of β the same way;
- a check run then gives the sim the three fitted values (`beta_conform`, `beta`, `beta_anti`)
  and measures its adoption under each prompt again.

Writes results/sim/beta-fit.md (and prints it). Run from the repository root:
    experiments/sim/fit-beta.py [--store results/gsm8k-30.db] [--moot target/release/moot]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

PROMPTS = [
    ("free-mad-c", "conformity", "beta_conform"),
    ("free-mad-neutral", "neutral", "beta"),
    ("free-mad-n", "anti-conformity", "beta_anti"),
]
GRID = [x / 2 for x in range(-12, 17)]  # β from −6 to 8 in steps of 0.5
DISTRACTORS = ["100001", "100002", "100003", "100004", "100005", "100006"]
SIM_DEBATES = 400


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def moot_json(moot, args):
    """Runs moot with `args` (which ask for JSON) and parses what it prints."""
    out = subprocess.run([moot, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def protocols_of(report):
    return {p["protocol"]: p for p in report["protocols"]}


def sim_config(accuracy, betas):
    agent = (
        f'sim = {{ accuracy = {accuracy:.4f}, alpha = 1.0, distractors = {json.dumps(DISTRACTORS)}, '
        f'beta = {betas["beta"]}, beta_conform = {betas["beta_conform"]}, beta_anti = {betas["beta_anti"]} }}'
    )
    text = "[debate]\nrounds = 1\n"
    for i in range(3):
        text += f'\n[[agents]]\nid = "q{i + 1}"\nbackend = "sim"\n{agent}\n'
    return text


def sim_adoption(moot, accuracy, betas, protocols):
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(sim_config(accuracy, betas))
        path = f.name
    try:
        report = moot_json(
            moot,
            ["--store", "memory:", "bench", "--dataset", "gsm8k", "--limit", str(SIM_DEBATES),
             "--seed", "41", "--config", path, "--protocol", ",".join(protocols), "--rounds", "1", "--json"],
        )
    finally:
        os.unlink(path)
    return {name: p["adoption"] for name, p in protocols_of(report).items()}


def rate(a):
    return a["adopted"] / a["exposed"] if a["exposed"] else float("nan")


def invert(curve, target):
    """β at which the (β, rate) curve, made non-decreasing, reaches `target`; clamped to the grid."""
    xs = [b for b, _ in curve]
    ys = []
    for _, r in curve:
        ys.append(max(r, ys[-1]) if ys else r)
    if target <= ys[0]:
        return xs[0], True
    if target >= ys[-1]:
        return xs[-1], True
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if y0 <= target <= y1:
            return (x0 if y1 == y0 else x0 + (target - y0) * (x1 - x0) / (y1 - y0)), False
    return xs[-1], True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="results/gsm8k-30.db")
    ap.add_argument("--moot", default="target/release/moot")
    ap.add_argument("--bench", default="gsm8k-30-beta")
    ap.add_argument("--out", default="results/sim/beta-fit.md")
    args = ap.parse_args()

    real = protocols_of(
        moot_json(args.moot, ["--store", args.store, "report", args.bench, "--format", "json"])
    )
    missing = [p for p, _, _ in PROMPTS if p not in real]
    if missing:
        sys.exit(f"benchmark {args.bench} has no {', '.join(missing)}")
    items = min(real[p]["items"] for p, _, _ in PROMPTS)
    accuracy = sum(real[p]["round_gold_share"][0] for p, _, _ in PROMPTS) / len(PROMPTS)

    curve = []
    for b in GRID:
        a = sim_adoption(args.moot, accuracy, {"beta": b, "beta_conform": b, "beta_anti": b}, ["free-mad-neutral"])
        curve.append((b, rate(a["free-mad-neutral"])))
        print(f"β = {b:+.1f}: sim adoption {curve[-1][1]:.3f}", file=sys.stderr)

    fitted = {}
    rows = []
    for protocol, prompt, field in PROMPTS:
        a = real[protocol]["adoption"]
        r = rate(a)
        lo, hi = wilson(a["adopted"], a["exposed"])
        beta, clamped = invert(curve, r)
        b_lo, _ = invert(curve, lo)
        b_hi, _ = invert(curve, hi)
        fitted[field] = round(beta, 2)
        rows.append((prompt, protocol, a, r, lo, hi, beta, b_lo, b_hi, clamped, field))

    check = sim_adoption(args.moot, accuracy, fitted, [p for p, _, _ in PROMPTS])

    cmd = f"experiments/sim/fit-beta.py --store {args.store} --bench {args.bench}"
    md = [
        "# β(p) of the embedded default model, fitted from measured adoption",
        "",
        f"$ {cmd}",
        "",
        f"Real model: benchmark `{args.bench}` ({items} GSM8K items that all three prompts finished; "
        "three agents on the embedded Qwen2.5-Coder-0.5B, temperature 0.7, one debate round). "
        "`results/gsm8k-30/run.sh` makes it. Round 0 is shared between prompts only where the "
        "request cache served it: two debates of one item that start together (the first 21 "
        "questions ran two at a time) each sample their own, so the rates below are not paired "
        "agent by agent. An agent is *exposed* in round 1 when some peer's round-0 answer differs from "
        "its own; it *adopts* when its round-1 answer is one of those different answers.",
        "",
        f"Round-0 individual accuracy: {accuracy:.3f}.",
        "",
        "| prompt | protocol | exposed | adopted | kept | other | adoption (95% CI) | fitted β (from the CI) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for prompt, protocol, a, r, lo, hi, beta, b_lo, b_hi, clamped, field in rows:
        note = " (at the grid's edge)" if clamped else ""
        md.append(
            f"| {prompt} | `{protocol}` | {a['exposed']} | {a['adopted']} | {a['kept']} | {a['other']} "
            f"| {r:.3f} ({lo:.3f}–{hi:.3f}) | `{field}` = {beta:+.2f}{note} ({b_lo:+.2f} to {b_hi:+.2f}) |"
        )
    md += [
        "",
        "Method: a simulated team of three (accuracy as measured, α = 1, six distinct distractors) "
        f"with one β under every prompt was run on {SIM_DEBATES} GSM8K debates for each β from "
        f"{GRID[0]} to {GRID[-1]} in steps of 0.5; its adoption rate rises with β, and each measured "
        "rate (and the ends of its Wilson interval) maps to the β where the sim's curve reaches it "
        "(linear interpolation).",
        "",
        "| β | sim adoption |",
        "|---|---|",
    ]
    md += [f"| {b:+.1f} | {r:.3f} |" for b, r in curve]
    md += [
        "",
        "Check: the sim with the fitted values, under each prompt:",
        "",
        "| prompt | measured | sim with the fit |",
        "|---|---|---|",
    ]
    for prompt, protocol, a, r, *_ in rows:
        md.append(f"| {prompt} | {r:.3f} | {rate(check[protocol]):.3f} |")
    md += [
        "",
        "Fitted preset (`sim = { preset = \"qwen-0.5b-like\" }`): "
        + ", ".join(f"`{k} = {v}`" for k, v in fitted.items())
        + f", `accuracy = {accuracy:.2f}`, `alpha = 1.0`.",
        "",
    ]
    text = "\n".join(md)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
