#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
"""Plots ncclx-bench / torch_baseline.py sweeps from their --csv files.

One figure per algorithm (--algo ll or ht): time per operation (median, log-log) and %hbm
(the path's least HBM traffic at the copy's bandwidth, docs/performance.md) against tokens
per rank, one line per (tool, rows label, operation, path).  Rows of other algorithms, of a
single token count, and routing/layer rows are left out.

    tools/plot_bench.py --algo ll --out docs/img/ll-sweep.svg ll.csv torch-ll.csv

Needs python3 and matplotlib (Debian: python3-matplotlib).
"""
import argparse
import csv
import sys
from collections import defaultdict


def load(paths, algo):
    """{(tool, label, op, path): [(tokens, med_us, pct_hbm)]} of the sweeps of algo."""
    lines = defaultdict(list)
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row.get("algo") != algo or row.get("op") not in ("dispatch", "combine"):
                    continue
                key = (row["tool"], row["label"], row["op"], row["path"])
                hbm = float(row["pct_hbm"])
                lines[key].append((int(row["tokens"]), float(row["med_us"]),
                                   hbm if hbm >= 0 else None))
    return {k: sorted(v) for k, v in lines.items() if len({t for t, _, _ in v}) > 1}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algo", choices=("ll", "ht"), required=True)
    p.add_argument("--out", required=True, help="the picture (.svg or .png)")
    p.add_argument("--title", default=None)
    p.add_argument("csv", nargs="+")
    args = p.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_bench.py: needs matplotlib (Debian: apt-get install python3-matplotlib)")
    lines = load(args.csv, args.algo)
    if not lines:
        sys.exit(f"plot_bench.py: no {args.algo} sweep (several token counts) in {args.csv}")
    fig, (ax_t, ax_h) = plt.subplots(1, 2, figsize=(13, 5))
    for (tool, label, op, path), pts in sorted(lines.items()):
        name = f"{'libncclx' if tool == 'ncclx-bench' else 'PyTorch'} {op} ({path}; {label})"
        style = "-" if op == "dispatch" else "--"
        tokens = [t for t, _, _ in pts]
        ax_t.plot(tokens, [us for _, us, _ in pts], style, marker="o", ms=3, label=name)
        hbm = [(t, h) for t, _, h in pts if h is not None]
        if hbm:
            ax_h.plot([t for t, _ in hbm], [h for _, h in hbm], style, marker="o", ms=3)
    ax_t.set_xscale("log", base=2)
    ax_t.set_yscale("log")
    ax_t.set_xlabel("tokens per rank")
    ax_t.set_ylabel("median time per operation (us)")
    ax_h.set_xscale("log", base=2)
    ax_h.set_xlabel("tokens per rank")
    ax_h.set_ylabel("%hbm (least HBM traffic of the path at copy bandwidth)")
    ax_h.axhline(100, color="gray", lw=0.5)
    for ax in (ax_t, ax_h):
        ax.grid(True, which="both", lw=0.3)
    fig.legend(loc="lower center", ncol=2, fontsize=7, frameon=False)
    fig.suptitle(args.title or f"{args.algo.upper()} dispatch and combine against tokens per rank")
    fig.tight_layout(rect=(0, 0.18, 1, 0.95))
    fig.savefig(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
