#!/usr/bin/env python3
"""Draws the oversight sweep as the papers draw it: the judge's accuracy (its verdict's, under
each protocol) against the debaters' strength, one panel per judge strength, with 95% Wilson
intervals and the judge alone (its own accuracy) as a dashed line.

    results/oversight/plot.py results/oversight/oversight.csv results/oversight/judge-vs-debaters.svg

Reads the CSV `moot sweep` writes (x axis first, y axis second, then per arm `ARM_accuracy`,
`ARM_ci_low`, `ARM_ci_high`); the standard library only."""

import csv
import sys
from xml.sax.saxutils import escape

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
PANEL_W, PANEL_H, MARGIN, GAP = 300, 260, 50, 30


def main(src: str, out: str) -> None:
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{src}: no rows")
    header = list(rows[0].keys())
    x_name, y_name = header[0], header[1]
    arms = [h[: -len("_accuracy")] for h in header if h.endswith("_accuracy")]
    judges = sorted({float(r[y_name]) for r in rows})
    xs = sorted({float(r[x_name]) for r in rows})
    width = MARGIN + len(judges) * (PANEL_W + GAP) + 140
    height = PANEL_H + 2 * MARGIN + 20
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]

    def px(panel: int, x: float) -> float:
        lo, hi = xs[0], xs[-1]
        return MARGIN + panel * (PANEL_W + GAP) + (x - lo) / (hi - lo or 1) * PANEL_W

    def py(y: float) -> float:
        return MARGIN + (1 - y) * PANEL_H

    for p, judge in enumerate(judges):
        left = MARGIN + p * (PANEL_W + GAP)
        svg.append(
            f'<rect x="{left}" y="{MARGIN}" width="{PANEL_W}" height="{PANEL_H}" '
            'fill="none" stroke="#999"/>'
        )
        svg.append(
            f'<text x="{left + PANEL_W / 2}" y="{MARGIN - 10}" text-anchor="middle">'
            f"judge accuracy alone {judge:g}</text>"
        )
        for tick in (0, 0.25, 0.5, 0.75, 1):
            svg.append(
                f'<line x1="{left}" x2="{left + PANEL_W}" y1="{py(tick)}" y2="{py(tick)}" '
                'stroke="#eee"/>'
            )
            if p == 0:
                svg.append(
                    f'<text x="{left - 6}" y="{py(tick) + 4}" text-anchor="end">{tick:g}</text>'
                )
        for x in xs:
            svg.append(
                f'<text x="{px(p, x)}" y="{MARGIN + PANEL_H + 16}" text-anchor="middle">{x:g}</text>'
            )
        svg.append(
            f'<line x1="{left}" x2="{left + PANEL_W}" y1="{py(judge)}" y2="{py(judge)}" '
            'stroke="black" stroke-dasharray="5,4"/>'
        )
        cells = sorted((r for r in rows if float(r[y_name]) == judge), key=lambda r: float(r[x_name]))
        for a, arm in enumerate(arms):
            colour = COLOURS[a % len(COLOURS)]
            points = [(px(p, float(r[x_name])), py(float(r[f"{arm}_accuracy"]))) for r in cells]
            svg.append(
                '<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'.format(
                    colour, " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
                )
            )
            for r, (x, _) in zip(cells, points):
                low, high = py(float(r[f"{arm}_ci_low"])), py(float(r[f"{arm}_ci_high"]))
                svg.append(f'<line x1="{x}" x2="{x}" y1="{low}" y2="{high}" stroke="{colour}"/>')
    svg.append(
        f'<text x="{MARGIN + len(judges) * (PANEL_W + GAP) / 2}" y="{height - 12}" '
        f'text-anchor="middle">debaters\' accuracy alone ({escape(x_name)})</text>'
    )
    svg.append(
        f'<text x="14" y="{MARGIN + PANEL_H / 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {MARGIN + PANEL_H / 2})">accuracy of the verdict</text>'
    )
    legend_x = MARGIN + len(judges) * (PANEL_W + GAP)
    for a, arm in enumerate(arms + ["judge alone"]):
        y = MARGIN + 20 * a + 10
        dash = ' stroke-dasharray="5,4"' if arm == "judge alone" else ""
        colour = "black" if arm == "judge alone" else COLOURS[a % len(COLOURS)]
        svg.append(
            f'<line x1="{legend_x}" x2="{legend_x + 24}" y1="{y}" y2="{y}" stroke="{colour}" '
            f'stroke-width="2"{dash}/>'
        )
        svg.append(f'<text x="{legend_x + 30}" y="{y + 4}">{escape(arm)}</text>')
    svg.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
