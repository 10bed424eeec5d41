#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# make check: the gate of tools/torch_baseline.py (tools/gated_timing.py) on a simulated GPU.
# The simulation keeps a host clock and the time the GPU is next free: a command reaches the
# GPU when the host has enqueued it and the GPU has finished the ones before it; an event's
# time is when the GPU reaches it.  Its host launch of an operation (8 us) costs more than the
# operation's kernel (3 us), as a graph replay of a small gather does on a real machine, so
# events around ungated iterations measure the launch (11 us), and events around gated ones
# the kernel alone (3 us).  torch_baseline.py is loaded with a stand-in `torch` module backed
# by the same simulation, so that its time_op is checked as it runs, not only the helper.

import importlib.util
import os
import sys
import types

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (read-only under distcheck)

top_srcdir = os.environ.get("top_srcdir") or os.path.join(os.path.dirname(__file__), "..")
tools = os.path.join(top_srcdir, "tools")
sys.path.insert(0, tools)
import gated_timing  # noqa: E402

failures = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


class Gpu:
    """One stream: host and GPU clocks in microseconds."""

    def __init__(self, launch_us=8.0, kernel_us=3.0, record_us=1.0, cycles_per_us=1980.0):
        self.host = 0.0
        self.free = 0.0  # when the GPU has done everything enqueued so far
        self.launch_us, self.kernel_us, self.record_us = launch_us, kernel_us, record_us
        self.cycles_per_us = cycles_per_us
        self.holds = []

    def clock(self):  # seconds, as time.perf_counter
        return self.host / 1e6

    def run(self, host_cost, gpu_us):
        """The host spends host_cost enqueueing a command that keeps the GPU gpu_us busy; the
        time the GPU starts it."""
        self.host += host_cost
        start = max(self.free, self.host)
        self.free = start + gpu_us
        return start

    def kernel(self):
        self.run(self.launch_us, self.kernel_us)

    def sleep(self, cycles):
        self.holds.append(cycles / self.cycles_per_us)
        self.run(1.0, cycles / self.cycles_per_us)

    def hold(self, us):
        self.sleep(int(us * self.cycles_per_us))

    def synchronize(self):
        self.host = max(self.host, self.free)


def event_class(gpu):
    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            self.t = gpu.run(gpu.record_us, 0.0)

        def elapsed_time(self, end):  # milliseconds, as torch
            return (end.t - self.t) / 1000.0

    return Event


def timed(gpu, iters, hold, hold_us=1000.0):
    """Event times (us) of iters kernels enqueued by run_gated with the simulated clock."""
    event = event_class(gpu)
    starts = [event() for _ in range(iters)]
    ends = [event() for _ in range(iters)]

    def enqueue(i):
        starts[i].record()
        gpu.kernel()
        ends[i].record()

    last, redone = gated_timing.run_gated(enqueue, iters, hold, gpu.synchronize, hold_us=hold_us,
                                          clock=gpu.clock)
    return [(e.t - s.t) for s, e in zip(starts, ends)], last, redone


# Without a gate the host's launch is inside every interval.
gpu = Gpu()
us, _, redone = timed(gpu, 40, None)
check(min(us) >= gpu.launch_us,
      f"no gate: every interval holds the launch ({min(us):.1f} us >= 8)")
check(not gpu.holds and redone == 0, "no gate: no spin enqueued")

# Behind the gate the GPU runs the chunk back to back: the kernel alone.
gpu = Gpu()
us, last, redone = timed(gpu, 40, gpu.hold)
check(max(us) == gpu.kernel_us, f"gate: every interval is the kernel's 3 us (max {max(us):.1f})")
check(len(gpu.holds) == 3, f"gate: 40 iterations in chunks of 16 behind 3 spins ({len(gpu.holds)})")
check(redone == 0 and last == 1000.0, "gate: a host that keeps up enqueues no chunk again")

# A host slower than the spin: the chunk is enqueued again behind a longer one.
gpu = Gpu(launch_us=100.0)
us, last, redone = timed(gpu, 16, gpu.hold)
check(redone == 1, f"slow host: the chunk enqueued again once ({redone})")
check(last >= 4 * 16 * 100.0, f"slow host: the spin grew past 4x the host's time ({last:.0f} us)")
check(max(us) == gpu.kernel_us, f"slow host: the kept intervals are the kernel's ({max(us):.1f})")

# A host that never keeps up is an error, not a silent launch-bound row.
ticks = [0.0, 0.0]  # [now, the next chunk's enqueue time] in seconds: 10x longer every chunk


def slower_clock():
    ticks[0] += ticks[1]
    ticks[1] = ticks[1] * 10.0 if ticks[1] else 0.001
    return ticks[0]


try:
    gated_timing.run_gated(lambda i: None, 16, lambda us: None, lambda: None,
                           clock=slower_clock)
    check(False, "a host that never keeps up raises")
except RuntimeError as e:
    check("more than half" in str(e), "a host that never keeps up raises: " + str(e))

# torch_baseline.py's own time_op and gate, on a stand-in torch backed by the simulation.
gpu = Gpu()
fake = types.ModuleType("torch")
fake.bfloat16, fake.float16, fake.float32, fake.uint8 = "bf16", "fp16", "fp32", "u8"
fake.cuda = types.SimpleNamespace(Event=event_class(gpu), synchronize=gpu.synchronize,
                                  _sleep=gpu.sleep)
sys.modules["torch"] = fake
spec = importlib.util.spec_from_file_location("torch_baseline",
                                              os.path.join(tools, "torch_baseline.py"))
baseline = importlib.util.module_from_spec(spec)
spec.loader.exec_module(baseline)
check(baseline.make_gate(False) is None, "torch_baseline --no-gate: no gate")
gate = baseline.make_gate(True)
med, lo, hi = baseline.time_op(gpu.kernel, 40, 2, False, gate)
check(med == lo == hi == gpu.kernel_us, f"torch_baseline gated: median {med:.1f} us = the kernel's")
med, lo, hi = baseline.time_op(gpu.kernel, 40, 2, False, None)
check(lo >= gpu.launch_us, f"torch_baseline --no-gate: {lo:.1f} us, launch included")
del fake.cuda._sleep
try:
    baseline.make_gate(True)
    check(False, "a torch without _sleep is refused")
except SystemExit as e:
    check("--no-gate" in str(e), "a torch without _sleep is refused, naming --no-gate")

# Its CSV rows parse with the label whole: an ungated row's label holds a comma.
import csv  # noqa: E402
import tempfile  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "torch.csv")
    args = types.SimpleNamespace(csv=path, gate=None, ht=False, layout="flat", dtype="bf16",
                                 experts=256, hidden=7168, topk=8, graph=True)
    baseline.write_csv(args, [128] + [14680064, 10.0, 9.5, 11.0, 1468.0, 50.0] * 2 + [0])
    args.gate = gate
    baseline.write_csv(args, [1] + [114688, 3.0, 2.9, 3.1, 38.2, 20.0] * 2 + [0])
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    check(len(rows) == 4 and all(None not in r for r in rows),
          f"torch_baseline's CSV: 4 rows, no extra column ({len(rows)})")
    check([r["label"] for r in rows] == ["PyTorch on one GPU (baseline, no gate)"] * 2
          + ["PyTorch on one GPU (baseline)"] * 2, "torch_baseline's CSV labels say which rows had no gate")
    check([r["tokens"] for r in rows] == ["128", "128", "1", "1"] and rows[0]["med_us"] == "10.00",
          "torch_baseline's CSV columns line up with the header")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all gate checks passed")
