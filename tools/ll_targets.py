#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
"""ll_targets.py: issue 30's LL targets, measured in one go on one GPU and judged from the rows.

    tools/ll_targets.py run BUILD LOG_DIR [--no-torch] [--python PY] [--torch-script FILE]
    tools/ll_targets.py report LOG_DIR

run: every row below with BUILD/tools/ncclx-bench (NAME.csv, NAME.log), PyTorch's gated
baseline at 128 tokens and at 1 (tools/torch_baseline.py --graph; torch.csv, torch-t1.csv;
PY defaults to python3, run without LD_LIBRARY_PATH so that torch loads its own NCCL) and
BUILD/tools/ncclx-plan --ranks 8 (plan.txt), then the report.  report: targets.txt (also
printed), one line per target: what each path measured and whether the target is met, and by
which path.  Rows that were not measured say "no data"; PyTorch rows timed without the gate
(their CSV label says "no gate") are not compared with ours (docs/performance.md, "The
PyTorch baseline").  Two targets need more than one build and are left to their tools: the
reference's one-rank LL (tools/compare_reference.sh) and "no sweep row slower than before"
(tools/bench_ab.sh against the build of that day).  Exits 1 when a run failed or a --check
row counted wrong elements, 2 on bad arguments; a missed target is reported, not failed.
"""
import argparse
import csv
import os
import subprocess
import sys

# (name, ncclx-bench arguments): issue 30's rows at the default shape (DeepSeek-V3 decode:
# 256 experts, hidden 7168, top-8, BF16, 128 tokens a rank), graph replay, checked.
ROWS = [
    ("loop8", "--graph --check"),
    ("loop8-zc", "--graph --check --zero-copy"),
    ("loop8-rank", "--graph --check --layout rank"),
    ("loop8-rank-zc", "--graph --check --layout rank --zero-copy"),
    ("loop8-fp8", "--graph --check --recipe fp8"),
    ("loop8-fp8-zc", "--graph --check --recipe fp8 --zero-copy"),
    ("loop8-mask", "--graph --check --mask"),
    ("loop8-small", "--graph --check --sweep --tokens 8"),
    ("loop8-small-zc", "--graph --check --sweep --tokens 8 --zero-copy"),
    ("one", "--comm --graph --check"),
    ("one-zc", "--comm --graph --check --zero-copy"),
    ("one-t1", "--comm --graph --check --tokens 1"),
    ("one-zc-t1", "--comm --graph --check --tokens 1 --zero-copy"),
]
TORCH_ROWS = [("torch", "--graph"), ("torch-t1", "--graph --tokens 1")]
PATHS = {"": "two-pass", "-zc": "zero copy"}  # a row name's suffix -> the path it measures


def run(args):
    build, logs = args.build, args.logs
    bench = os.path.join(build, "tools", "ncclx-bench")
    plan = os.path.join(build, "tools", "ncclx-plan")
    for prog in (bench, plan):
        if not os.access(prog, os.X_OK):
            sys.exit(f"ll_targets.py: no {prog}: build libncclx there first")
    os.makedirs(logs, exist_ok=True)
    failed = 0
    jobs = [(n, [bench] + a.split()) for n, a in ROWS]
    if not args.no_torch:
        env_torch = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        jobs += [(n, [args.python, args.torch_script] + a.split()) for n, a in TORCH_ROWS]
    for name, cmd in jobs:
        csv_path = os.path.join(logs, name + ".csv")
        if os.path.exists(csv_path):
            os.remove(csv_path)  # a CSV is appended to: start each run's afresh
        cmd = cmd + ["--csv", csv_path]
        env = env_torch if name.startswith("torch") else None
        with open(os.path.join(logs, name + ".log"), "w") as log:
            rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        print(f"{name}: {' '.join(cmd)}: {'ok' if rc == 0 else f'FAILED (exit {rc})'}",
              flush=True)
        failed |= rc != 0
    with open(os.path.join(logs, "plan.txt"), "w") as out:
        rc = subprocess.call([plan, "--ranks", "8"], stdout=out, stderr=subprocess.STDOUT)
    failed |= rc != 0
    return report(logs) | failed


def load(logs, name):
    """{(op, tokens): row} of NAME.csv, or None when there is none."""
    path = os.path.join(logs, name + ".csv")
    if not os.path.exists(path):
        return None
    with open(path, newline="") as f:
        return {(r["op"], int(r["tokens"])): r for r in csv.DictReader(f)}


def header_line(logs, prefix):
    for name, _ in ROWS:
        path = os.path.join(logs, name + ".log")
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    if line.startswith(prefix):
                        return line[len(prefix):].strip()
    return "unknown"


class Board:
    def __init__(self, logs):
        self.rows = {n: load(logs, n) for n, _ in ROWS + TORCH_ROWS}
        self.lines = []

    def value(self, name, op, field, tokens=128):
        rows = self.rows.get(name)
        r = rows.get((op, tokens)) if rows else None
        return float(r[field]) if r is not None else None

    def gated(self, name):
        rows = self.rows.get(name)
        return bool(rows) and all("no gate" not in r["label"] for r in rows.values())

    def judge(self, target, measured, ok, unit):
        """measured: [(path, value or None)]; ok(value) -> bool."""
        shown = "; ".join(f"{p} {'no data' if v is None else f'{v:.1f}{unit}'}"
                          for p, v in measured)
        have = [(p, v) for p, v in measured if v is not None]
        met = [p for p, v in have if ok(v)]
        verdict = ("no data" if not have else
                   f"met ({', '.join(met)})" if met else "missed")
        self.lines.append((target, shown, verdict))

    def by_path(self, base, op, field, tokens=128):
        return [(PATHS[s], self.value(base + s, op, field, tokens)) for s in PATHS]


def plan_memory(logs):
    """(ours, the reference's LL buffer) MiB per rank at 8 ranks, from plan.txt."""
    path = os.path.join(logs, "plan.txt")
    if not os.path.exists(path):
        return None
    cols = None
    with open(path) as f:
        for line in f:
            words = line.split()
            if words[:2] == ["ranks", "nodes"]:
                cols = words
            elif cols and words and words[0] == "8":
                try:
                    return (float(words[cols.index("symmetric")]),
                            float(words[cols.index("nccl_ep_ll")]))
                except (ValueError, IndexError):
                    return None
    return None


def report(logs):
    b = Board(logs)
    bad = 0
    for name, rows in b.rows.items():
        for (op, tokens), r in sorted((rows or {}).items()):
            if r.get("wrong", "-") not in ("-", "0"):
                print(f"ll_targets.py: {name} {op} {tokens} tokens: {r['wrong']} wrong elements")
                bad = 1
    for op, lim in (("dispatch", 65.0), ("combine", 60.0)):
        b.judge(f"loopback 8 expert-major {op} >= {lim:.0f}% of the copy roofline",
                b.by_path("loop8", op, "pct_roof"), lambda v, lim=lim: v >= lim, "%")
    for op in ("dispatch", "combine"):
        b.judge(f"loopback 8 expert-major {op} >= 80% of %hbm",
                b.by_path("loop8", op, "pct_hbm"), lambda v: v >= 80.0, "%")
    for op in ("dispatch", "combine"):
        b.judge(f"loopback 8 rank-major {op} >= 70% of the copy roofline",
                b.by_path("loop8-rank", op, "pct_roof"), lambda v: v >= 70.0, "%")
    b.judge("loopback 8 FP8 dispatch >= 45% of the copy roofline",
            b.by_path("loop8-fp8", "dispatch", "pct_roof"), lambda v: v >= 45.0, "%")
    for op in ("dispatch", "combine"):
        plain, masked = b.value("loop8", op, "med_us"), b.value("loop8-mask", op, "med_us")
        change = (masked - plain) / plain * 100.0 if plain and masked is not None else None
        b.judge(f"loopback 8 {op} with an active mask no more than 5% slower (two-pass; zero "
                "copy has no mask)", [("two-pass", change)], lambda v: v <= 5.0, "%")
    for tokens, ours, theirs in ((128, "one", "torch"), (1, "one-t1", "torch-t1")):
        ref = b.value(theirs, "dispatch", "med_us", tokens)
        if ref is not None and not b.gated(theirs):
            b.lines.append((f"one rank, {tokens} token{'s' * (tokens != 1)}: dispatch no slower than index_select",
                            f"index_select {ref:.2f} us timed without the gate",
                            "not comparable (rerun torch_baseline.py with its gate)"))
            continue
        measured = [(PATHS[s], None if ref is None or v is None else v / ref)
                    for s, v in ((s, b.value(ours.replace("one", "one" + s), "dispatch",
                                             "med_us", tokens)) for s in PATHS)]
        b.judge(f"one rank, {tokens} token{'s' * (tokens != 1)}: dispatch no slower than index_select"
                + ("" if ref is None else f" ({ref:.2f} us)") + ": ours / index_select <= 1",
                measured, lambda v: v <= 1.0, "x")
    ref = b.value("torch", "combine", "med_us")
    measured = [(PATHS[s], None if ref is None or v is None else ref / v)
                for s, v in ((s, b.value("one" + s, "combine", "med_us")) for s in PATHS)]
    b.judge("one rank: combine >= 2.5x faster than index_add_"
            + ("" if ref is None else f" ({ref:.2f} us)") + ": index_add_ / ours",
            measured, lambda v: v >= 2.5, "x")
    for op in ("dispatch", "combine"):
        worst = []
        for s in PATHS:
            vals = [b.value("loop8-small" + s, op, "med_us", t) for t in (1, 2, 4, 8)]
            worst.append((PATHS[s], None if None in vals else max(vals)))
        b.judge(f"loopback 8, 1 to 8 tokens: every {op} <= 20 us (the slowest shown)", worst,
                lambda v: v <= 20.0, " us")
    mem = plan_memory(logs)
    b.judge("symmetric memory per rank (default plan, 8 ranks) < 10% of the reference's LL "
            "buffer", [("default plan", None if mem is None else mem[0] / mem[1] * 100.0)],
            lambda v: v < 10.0, "%")
    width = max(len(t) for t, _, _ in b.lines)
    out = [f"# GPU: {header_line(logs, '# GPU 0: ')}",
           f"# source: {header_line(logs, '# source: ')}",
           "# not judged here: the reference's one-rank LL (tools/compare_reference.sh) and the "
           "sweep against the issue's day (tools/bench_ab.sh)"]
    out += [f"{t:<{width}}  {v:<10}  {m}" for t, m, v in b.lines]
    with open(os.path.join(logs, "targets.txt"), "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))
    return bad


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run", help="measure every row with BUILD, then report")
    r.add_argument("build")
    r.add_argument("logs")
    r.add_argument("--no-torch", action="store_true", help="no PyTorch rows")
    r.add_argument("--python", default="python3", help="the python with torch (python3)")
    r.add_argument("--torch-script", default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "torch_baseline.py"), help=argparse.SUPPRESS)
    q = sub.add_parser("report", help="judge LOG_DIR's rows again, no GPU needed")
    q.add_argument("logs")
    args = p.parse_args()
    if args.what == "run":
        return 1 if run(args) else 0
    if not os.path.isdir(args.logs):
        p.error(f"no log folder '{args.logs}'")
    return 1 if report(args.logs) else 0


if __name__ == "__main__":
    sys.exit(main())
