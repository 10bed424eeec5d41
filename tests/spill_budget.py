#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
"""Register spills of the kernels against tests/spill_budget.txt (tests/check_spills.sh).

A kernel that spills more than it did stores and reloads registers through local memory on
its critical path; the LL kernels sit at the 64 registers of two 512-thread blocks an SM, where
one more live value can add spill stores without any test noticing (docs/performance.md weighs
every candidate by them).  Spill bytes are the compiler's deterministic output for one nvcc
release, one NCCL (kernels inline its device API) and one architecture, so the budget records
them and holds each kernel's exact spill stores: any change, up or down, fails until the
budget is written again, so that a change which adds spills says so in its diff.

  spill_budget.py compare LOG BUDGET --nvcc RELEASE --nccl CODE [--self-test]
      LOG: the -Xptxas -v output of every kernel file, each file's output after a line
      "== FILE" (FILE relative to kernels/); RELEASE: the release of the nvcc that wrote it;
      CODE: the NCCL_VERSION_CODE of the nccl.h it compiled with.
      Exits 0 when every (file, kernel) of the budget's architecture spills exactly its
      budget, 1 otherwise, 77 (skip) when the budget was written for another nvcc release or
      NCCL, or the log has no kernel of its architecture.  --self-test also checks that a
      budget one entry lower, and one with an entry missing, are both reported.
  spill_budget.py write LOG NVCC_RELEASE NCCL_CODE ARCH
      Prints a budget for the log (to update tests/spill_budget.txt after a change).
"""
import argparse
import re
import subprocess
import sys

HEADER = """# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Spill stores (bytes) of every kernel, as ptxas reports them for one nvcc release, one NCCL and
# one architecture: tests/check_spills.sh fails on any difference (tests/spill_budget.py says why).
# (NCCL because some kernels inline its device API.)  After a kernel change meant to move them:
# tests/spill_budget.py write BUILD/tests/spills.log %s %s ARCH > tests/spill_budget.txt
# Then one line per kernel: FILE (under kernels/) KERNEL BYTES.
"""
ENTRY = re.compile(r"Compiling entry function '([^']+)' for 'sm_(\d+)'")
PROPS = re.compile(r"Function properties for (\S+)")
SPILLS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def demangle(names):
    """Readable kernel names, without namespaces or parameters: dispatch_send_kernel<false,true>."""
    if not names:
        return {}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    short = {}
    for mangled, full in zip(names, out):
        name = full.replace("(anonymous namespace)::", "").replace("ncclx::", "")
        if name.startswith("void "):  # a template's return type
            name = name[len("void "):]
        depth = 0
        for i, ch in enumerate(name):
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
            elif ch == "(" and depth == 0:
                name = name[:i]
                break
        short[mangled] = name.replace(" ", "")
    return short


def parse_log(path):
    """{(file, mangled kernel, arch): spill store bytes} of the entry functions in the log."""
    found = {}
    current_file, entry, props_for = None, None, None
    with open(path) as log:
        for line in log:
            if line.startswith("== "):
                current_file, entry, props_for = line[3:].strip(), None, None
                continue
            m = ENTRY.search(line)
            if m:
                entry = (m.group(1), m.group(2))
                continue
            m = PROPS.search(line)
            if m:
                props_for = m.group(1)
                continue
            m = SPILLS.search(line)
            if m and entry is not None and props_for == entry[0]:
                found[(current_file, entry[0], entry[1])] = int(m.group(2))
                entry = None
    return found


def measured_for(log, arch):
    raw = {k: v for k, v in parse_log(log).items() if k[2] == arch}
    names = demangle(sorted({k[1] for k in raw}))
    return {(f, names[k]): v for (f, k, _), v in raw.items()}


def read_budget(path):
    release, nccl, arch, entries = None, None, None, {}
    with open(path) as budget:
        for n, line in enumerate(budget, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            words = line.split()
            if words[0] == "nvcc" and len(words) == 2:
                release = words[1]
            elif words[0] == "nccl" and len(words) == 2:
                nccl = words[1]
            elif words[0] == "sm" and len(words) == 2:
                arch = words[1]
            elif len(words) == 3 and words[2].isdigit():
                entries[(words[0], words[1])] = int(words[2])
            else:
                sys.exit("%s:%d: expected 'nvcc R', 'nccl CODE', 'sm N' or 'FILE KERNEL BYTES'"
                         % (path, n))
    if release is None or nccl is None or arch is None:
        sys.exit("%s: needs 'nvcc RELEASE', 'nccl CODE' and 'sm ARCH' lines" % path)
    return release, nccl, arch, entries


def differences(measured, budget):
    """One line per (file, kernel) whose spill stores differ from its budget."""
    out = []
    for key in sorted(set(measured) | set(budget)):
        f, k = key
        if key not in budget:
            out.append("%s %s: %d bytes of spill stores, no budget (a new kernel?)"
                       % (f, k, measured[key]))
        elif key not in measured:
            out.append("%s %s: in the budget, not built (renamed or removed?)" % (f, k))
        elif measured[key] != budget[key]:
            out.append("%s %s: %d bytes of spill stores, budget %d (%s)"
                       % (f, k, measured[key], budget[key],
                          "more" if measured[key] > budget[key] else "fewer: lower the budget"))
    return out


def self_test(measured, budget):
    """The comparison must report a budget one entry lower and one with an entry missing."""
    spilling = [key for key in sorted(budget) if budget[key] > 0 and key in measured]
    if not spilling:
        return ["self-test: no kernel spills, so no lowered budget to try"]
    key = spilling[0]
    lowered = dict(budget)
    lowered[key] -= 4
    problems = []
    if not any(line.startswith("%s %s:" % key) for line in differences(measured, lowered)):
        problems.append("self-test: a budget lowered for %s %s was not reported" % key)
    missing = dict(budget)
    del missing[key]
    if not differences(measured, missing):
        problems.append("self-test: a budget without %s %s was not reported" % key)
    return problems


def main(argv):
    parser = argparse.ArgumentParser(description="kernel spill stores against their budget")
    sub = parser.add_subparsers(dest="mode", required=True)
    cmp = sub.add_parser("compare")
    cmp.add_argument("log")
    cmp.add_argument("budget")
    cmp.add_argument("--nvcc", required=True, help="release of the nvcc that wrote the log")
    cmp.add_argument("--nccl", required=True, help="NCCL_VERSION_CODE of the nccl.h it used")
    cmp.add_argument("--self-test", action="store_true")
    wr = sub.add_parser("write")
    wr.add_argument("log")
    wr.add_argument("nvcc")
    wr.add_argument("nccl")
    wr.add_argument("arch")
    args = parser.parse_args(argv)
    if args.mode == "write":
        measured = measured_for(args.log, args.arch)
        print(HEADER % (args.nvcc, args.nccl), end="")
        print("nvcc %s" % args.nvcc)
        print("nccl %s" % args.nccl)
        print("sm %s" % args.arch)
        for (f, k), v in sorted(measured.items()):
            print("%s %s %d" % (f, k, v))
        return 0
    release, nccl, arch, budget = read_budget(args.budget)
    if args.nvcc != release or args.nccl != nccl:
        print("SKIP: the budget is for nvcc %s and NCCL %s, this is nvcc %s and NCCL %s (spills "
              "depend on the compiler and on NCCL's inlined device code)"
              % (release, nccl, args.nvcc, args.nccl))
        return 77
    measured = measured_for(args.log, arch)
    if not measured:
        print("SKIP: no kernel built for sm_%s" % arch)
        return 77
    problems = differences(measured, budget)
    if args.self_test:
        problems += self_test(measured, budget)
    spilling = sum(1 for v in measured.values() if v > 0)
    print("%d kernels for sm_%s, %d of them spilling, %d bytes of spill stores in all"
          % (len(measured), arch, spilling, sum(measured.values())))
    for line in problems:
        print("FAIL: " + line)
    if problems:
        print("if the change is meant, write the budget again: "
              "tests/spill_budget.py write LOG %s %s %s > tests/spill_budget.txt"
              % (release, nccl, arch))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
