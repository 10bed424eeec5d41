#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
"""Where a kernel's time goes, phase by phase, from Nsight Compute's warp stall samples.

The LL kernels are chains of steps that every warp of a block goes through together, each step
ended by a block barrier: a warp with nothing to do in a step waits at its barrier, so the
samples of a step (its own instructions and the barrier that ends it) are about its share of
the kernel's time.  This splits a kernel's SASS, in address order, after each BAR.SYNC (and
EXIT), and prints each phase's samples, share, main stall reasons and the memory-ordering and
global-memory instructions in it, so that two builds' profiles compare step by step.

    ncu --set full --warp-sampling-interval 0 -k regex:NAME -s S -c 1 -o REP PROGRAM ...
    ncu -i REP.ncu-rep --page source --csv --print-source sass > REP.csv
    tools/ncu_phases.py REP.csv [--kernel REGEX] [--min-share PCT]

Address order is program order for straight-line code; a loop's body is one phase unless it
holds a barrier, and a branch's code lies where the compiler put it (docs/performance.md
shows the phases of the dispatch send read this way).  A phase's samples are those of its
instructions, less the barrier waits sampled there, plus the waits at the barrier that ends
it.  Exit status: 0, 1 when no kernel matched or a file is not such a CSV, 2 on bad arguments.
"""
import argparse
import csv
import io
import re
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
# What a phase waits for: loads and atomics on global memory, fences, barriers.
NOTABLE = re.compile(r"\b(?:LDG|STG|LD|ST|ATOMG|ATOM|RED|MEMBAR|ERRBAR|CCTL|ACQBULK|BAR)\b[.A-Z0-9]*")


def kernels_of(text):
    """(kernel name, rows as dicts) for each kernel of a --page source --csv file."""
    out = []
    name, lines = None, []
    for line in text.splitlines():
        if line.startswith('"Kernel Name"'):
            if name is not None:
                out.append((name, lines))
            fields = next(csv.reader([line]))
            name, lines = (fields[1] if len(fields) > 1 else "?"), []
        elif name is not None:
            lines.append(line)
    if name is not None:
        out.append((name, lines))
    result = []
    for name, lines in out:
        rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
        if rows and SAMPLES not in rows[0]:
            raise ValueError(f"kernel {name}: no '{SAMPLES}' column (a --page source --csv file?)")
        result.append((name, [r for r in rows if r.get("Address")]))
    return result


def samples(row):
    try:
        return float(row.get(SAMPLES) or 0)
    except ValueError:
        return 0.0


def phases_of(rows):
    """Consecutive rows in address order, each phase ending after a BAR.SYNC or EXIT."""
    rows = sorted(rows, key=lambda r: int(r["Address"], 16))
    phases, cur = [], []
    for r in rows:
        cur.append(r)
        sass = r.get("Source", "").strip()
        if re.search(r"\bBAR\.SYNC|\bEXIT\b", sass):
            phases.append(cur)
            cur = []
    if cur:
        phases.append(cur)
    return phases


def stalls_of(rows):
    """Samples per stall reason over rows."""
    agg = {}
    for r in rows:
        for k, v in r.items():
            if k and k.startswith("stall_") and "Not Issued" not in k:
                try:
                    agg[k[6:]] = agg.get(k[6:], 0.0) + float(v or 0)
                except ValueError:
                    pass
    return agg


def phase_stalls(phases):
    """Each phase's stall samples by reason.  A warp waiting at a barrier is sampled at the
    instruction after it, which lies in the next phase: those 'barrier' samples belong to the
    phase the barrier ends (the wait is for that step's slowest warp), and move there."""
    own = [stalls_of(ph) for ph in phases]
    waits = [agg.pop("barrier", 0.0) for agg in own]
    for i in range(1, len(own)):
        if waits[i]:
            own[i - 1]["barrier"] = own[i - 1].get("barrier", 0.0) + waits[i]
    if waits and waits[0]:  # sampled before any barrier: nothing before it to belong to
        own[0]["barrier"] = own[0].get("barrier", 0.0) + waits[0]
    return own


def reasons_text(agg, top=2):
    best = sorted(((v, k) for k, v in agg.items() if v > 0), reverse=True)[:top]
    return ", ".join(f"{k} {v:.0f}" for v, k in best)


def notable_of(rows, limit=6):
    seen = []
    for r in rows:
        executed = r.get("Instructions Executed", "1") or "0"
        try:
            if float(executed) == 0:
                continue
        except ValueError:
            pass
        m = NOTABLE.search(r.get("Source", ""))
        if m and m.group(0) not in seen:
            seen.append(m.group(0))
    more = len(seen) > limit
    return " ".join(seen[:limit]) + (" ..." if more else "")


def report(name, rows, min_share, out):
    total = sum(samples(r) for r in rows)
    out.write(f"== {name}\n   {total:.0f} samples, {len(rows)} instructions\n")
    if total == 0:
        out.write("   no samples (profile with --warp-sampling-interval 0, or a longer kernel)\n")
        return
    out.write(f"   {'phase':>5} {'addresses':>13} {'samples':>8} {'share':>6}  "
              f"{'main stalls':<28} memory and ordering\n")
    phases = phases_of(rows)
    for i, (ph, agg) in enumerate(zip(phases, phase_stalls(phases))):
        s = sum(agg.values())
        share = 100.0 * s / total
        if share < min_share:
            continue
        lo = int(ph[0]["Address"], 16) & 0xFFFFF
        hi = int(ph[-1]["Address"], 16) & 0xFFFFF
        out.write(f"   {i:5d} {lo:05x}-{hi:05x} {s:8.0f} {share:5.1f}%  {reasons_text(agg):<28} "
                  f"{notable_of(ph)}\n")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv", help="ncu -i REP --page source --csv --print-source sass output")
    p.add_argument("--kernel", default="", help="only kernels whose name matches this regex")
    p.add_argument("--min-share", type=float, default=0.0,
                   help="leave out phases under this share of the samples, in percent")
    args = p.parse_args(argv)
    try:
        with open(args.csv, encoding="utf-8", errors="replace") as f:
            kernels = kernels_of(f.read())
    except (OSError, ValueError) as e:
        print(f"ncu_phases.py: {e}", file=sys.stderr)
        return 1
    pattern = re.compile(args.kernel)
    chosen = [(n, r) for n, r in kernels if pattern.search(n)]
    if not chosen:
        print(f"ncu_phases.py: no kernel in {args.csv} matches '{args.kernel}'", file=sys.stderr)
        return 1
    for name, rows in chosen:
        report(name, rows, args.min_share, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
