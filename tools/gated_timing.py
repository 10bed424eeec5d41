# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
"""Iterations enqueued behind a gate, as ncclx-bench times them (docs/performance.md, "How it
is timed").

CUDA events around an operation measure GPU time from the start event to the end event.  When
the host enqueues one iteration after another and the GPU is idle, the GPU reaches the start
event as soon as the host records it and then waits for the host to launch the operation: the
host's launch cost (a graph replay is several microseconds) lands inside the interval, and it
moves with the CPU's clock and load.  ncclx-bench holds its stream with a gate while the host
enqueues a chunk of iterations, so that the GPU then runs them back to back.  run_gated does
the same with a spin on the stream (torch.cuda._sleep in tools/torch_baseline.py), checked
after each chunk: a chunk that the host took longer to enqueue than half the spin is enqueued
again behind a longer one.  No torch here, so that tests can drive it with a simulated GPU.
"""
import time

CHUNK = 16  # iterations enqueued behind one gate (ncclx-bench's BENCH_CHUNK)
MAX_REDO = 8  # chunks enqueued again before giving up (a host that never keeps up)


def run_gated(enqueue, iters, hold, sync, hold_us=1000.0, chunk=CHUNK, clock=time.perf_counter):
    """Enqueue iterations 0 .. iters-1 with enqueue(i), in chunks of `chunk`, each behind
    hold(us), a spin of about `us` microseconds on the stream (hold None: no gate), and wait for
    each chunk with sync().  A chunk whose enqueue took the host more than half the spin may
    have been started by the GPU before it was whole; it is enqueued again (enqueue records its
    iterations' events anew) behind a spin four times the host's time.  Returns (the last
    spin's us, how many chunks were enqueued again)."""
    redone = 0
    first = 0
    while first < iters:
        n = min(chunk, iters - first)
        if hold is not None:
            hold(hold_us)
        start = clock()
        for i in range(first, first + n):
            enqueue(i)
        took_us = (clock() - start) * 1e6
        sync()
        if hold is not None and took_us > 0.5 * hold_us:
            if redone == MAX_REDO:
                raise RuntimeError(f"gate: the host took {took_us:.0f} us to enqueue {n} "
                                   f"iterations, more than half of a {hold_us:.0f} us spin, "
                                   f"{MAX_REDO + 1} times")
            hold_us = 4.0 * took_us
            redone += 1
            continue
        first += n
    return hold_us, redone
