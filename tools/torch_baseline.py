#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
"""PyTorch baseline of EP dispatch and combine for one rank on one GPU.

What a single-GPU MoE layer does without a communication library:
  dispatch = index_select of the token rows into expert-major order (one row per
             (token, expert) pair, sorted by expert, then token);
  combine  = index_add_ of the weighted expert rows back into [tokens, hidden].
The routing (the sort) is computed once, outside the timed region, as ncclx-bench routes its
handle outside the timed region.  Times come from CUDA events around each operation (median,
min, max over the timed iterations), bytes are counted as ncclx-bench counts them (valid
top-k entries x hidden x element bytes), and the roofline is a device-to-device copy of the
same bytes timed the same way.  As in ncclx-bench, timed iterations are enqueued in chunks of
16 behind a gate (a spin kernel, torch.cuda._sleep; tools/gated_timing.py), so the GPU never
waits for the host's launch inside a timed interval; --no-gate times them as the host launches
them, the launch included.  Needs only python3 and torch.

--ht is the stand-in for ncclx-bench --algo ht (4096 tokens, 50 + 10 iterations by default):
  dispatch = index_select of the token rows into one row per (token, destination rank) pair,
             ordered by (rank, token), the ranks being --ranks owners of experts / ranks
             experts each (--layout expert: one row per (token, expert), by expert then token);
  combine  = index_add_ of those rows, unweighted (HT rows come back already weighted), into
             [tokens, hidden];
bytes = rows x hidden x element bytes, as ncclx-bench --algo ht counts its rows.

--csv FILE appends the rows in ncclx-bench's CSV columns (tools/plot_bench.py), with %hbm
counted as ncclx-bench counts a one-pass path: dispatch reads each token once and writes each
row once, combine reads each row once and writes each token once.
"""
import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gated_timing import CHUNK, run_gated  # noqa: E402 (next to this script)

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=None,
                   help="tokens (128, --ht 4096; --sweep: the largest)")
    p.add_argument("--hidden", type=int, default=7168)
    p.add_argument("--topk", type=int, default=8)
    p.add_argument("--experts", type=int, default=256)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--iters", type=int, default=None, help="timed iterations (200, --ht 50)")
    p.add_argument("--warmup", type=int, default=None, help="untimed iterations (20, --ht 10)")
    p.add_argument("--graph", action="store_true", help="replay each operation from a CUDA graph")
    p.add_argument("--sweep", action="store_true", help="tokens 1, 2, 4, ... up to --tokens")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--no-gate", action="store_true",
                   help="enqueue each timed iteration as the host gets to it (the launch "
                   "inside the time) instead of in chunks behind a spin kernel")
    p.add_argument("--ht", action="store_true",
                   help="stand-in for ncclx-bench --algo ht: rows per (token, destination rank)")
    p.add_argument("--layout", choices=("flat", "expert"), default=None,
                   help="--ht rows: flat (per destination rank, default) or expert")
    p.add_argument("--ranks", type=int, default=None,
                   help="--ht: destination ranks of the flat rows (8)")
    p.add_argument("--csv", default=None,
                   help="append the rows to this file in ncclx-bench's CSV columns")
    args = p.parse_args()
    if not args.ht and (args.layout is not None or args.ranks is not None):
        p.error("--layout and --ranks go with --ht")
    args.tokens = args.tokens if args.tokens is not None else 4096 if args.ht else 128
    args.iters = args.iters if args.iters is not None else 50 if args.ht else 200
    args.warmup = args.warmup if args.warmup is not None else 10 if args.ht else 20
    args.layout = args.layout or "flat"
    args.ranks = args.ranks if args.ranks is not None else 8
    if args.topk > args.experts or min(args.tokens, args.hidden, args.topk, args.iters) < 1:
        p.error("need 1 <= topk <= experts and positive tokens, hidden, iters")
    if args.ht and (args.ranks < 1 or args.experts % args.ranks != 0):
        p.error("--ht needs experts divisible by ranks >= 1")
    return args


def make_gate(enabled):
    """hold(us): a spin of about us microseconds on the current stream, or None (no gate)."""
    if not enabled:
        return None
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        sys.exit("torch_baseline: this torch has no torch.cuda._sleep for the gate; "
                 "run with --no-gate (the host's launches are then inside the times)")
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    cycles = 1 << 20
    sleep(1000)  # loads the kernel
    start.record()
    sleep(cycles)
    end.record()
    torch.cuda.synchronize()
    per_us = cycles / max(start.elapsed_time(end) * 1000.0, 1e-3)
    return lambda us: sleep(int(us * per_us))


def time_op(fn, iters, warmup, graph, gate):
    """Median, min and max in microseconds of fn, each call between two CUDA events, the timed
    calls enqueued in chunks behind gate (make_gate; None: as the host launches them)."""
    if graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()  # warm up allocations and kernels before capture
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        fn = g.replay
    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    torch.cuda.synchronize()

    def enqueue(i):
        starts[i].record()
        fn()
        ends[i].record()

    run_gated(enqueue, iters, gate, torch.cuda.synchronize)
    us = [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends)]
    return statistics.median(us), min(us), max(us)


def time_copy(nbytes, iters, warmup, device, gate):
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    return time_op(lambda: dst.copy_(src), iters, warmup, False, gate)[0]


def make_inputs(args, tokens, device):
    """Top-k distinct experts per token, uniform; weights in [0.05, 1); tokens in [-2, 2)."""
    dtype = DTYPES[args.dtype]
    gen = torch.Generator(device="cpu").manual_seed(args.seed)
    topk_idx = torch.rand(tokens, args.experts, generator=gen).argsort(dim=1)[:, : args.topk]
    weights = 0.05 + 0.95 * torch.rand(tokens, args.topk, generator=gen)
    x = (torch.randint(-128, 128, (tokens, args.hidden), generator=gen) / 64.0).to(dtype)
    return topk_idx.to(device), weights.to(device), x.to(device)


def time_row(args, nbytes, ops, device):
    """The table's timing columns of dispatch and combine, each with its copy roofline."""
    row = []
    for fn in ops:
        med, lo, hi = time_op(fn, args.iters, args.warmup, args.graph, args.gate)
        copy = time_copy(nbytes, args.iters, args.warmup, device, args.gate)
        row += [nbytes, med, lo, hi, nbytes / (med * 1e3), copy / med * 100.0]
    return row


def run_row(args, tokens, device):
    dtype = DTYPES[args.dtype]
    topk_idx, weights, x = make_inputs(args, tokens, device)

    # Routing, untimed: the (token, expert) pairs in expert-major order.
    order = torch.argsort(topk_idx.flatten(), stable=True)
    pair_token = order // args.topk
    pair_weight = weights.flatten()[order].to(dtype).unsqueeze(1)
    recv = torch.empty(tokens * args.topk, args.hidden, dtype=dtype, device=device)
    out = torch.empty(tokens, args.hidden, dtype=dtype, device=device)

    def dispatch():
        torch.index_select(x, 0, pair_token, out=recv)

    def combine():
        out.zero_()
        out.index_add_(0, pair_token, recv * pair_weight)

    dispatch()
    combine()
    torch.cuda.synchronize()
    # Identity experts: combine(dispatch(x)) = x * sum_k w_k.  Every term has the sign of x, so
    # K + 1 roundings in dtype (the product, then each addition) bound the error.
    want = x.float() * weights.to(dtype).float().sum(dim=1, keepdim=True)
    unit = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}[dtype]
    tol = (args.topk + 2) * unit
    wrong = int((out.float() - want).abs().gt(tol * want.abs() + 1e-6).sum().item())

    nbytes = tokens * args.topk * args.hidden * x.element_size()
    return [tokens] + time_row(args, nbytes, (dispatch, combine), device) + [wrong]


def ht_rows(args, topk_idx, tokens):
    """Source token of each row, and the rows of each token (untimed routing)."""
    if args.layout == "expert":
        order = torch.argsort(topk_idx.flatten(), stable=True)  # by expert, then token
        return order // args.topk, torch.full((tokens,), args.topk, device=topk_idx.device)
    dest = topk_idx // (args.experts // args.ranks)
    hit = torch.zeros(tokens, args.ranks, dtype=torch.bool, device=topk_idx.device)
    hit.scatter_(1, dest, True)
    pairs = hit.t().nonzero()  # (rank, token), by rank, then token
    return pairs[:, 1].contiguous(), hit.sum(dim=1)


def run_row_ht(args, tokens, device):
    dtype = DTYPES[args.dtype]
    topk_idx, _, x = make_inputs(args, tokens, device)
    pair_token, per_token = ht_rows(args, topk_idx, tokens)
    recv = torch.empty(pair_token.numel(), args.hidden, dtype=dtype, device=device)
    out = torch.empty(tokens, args.hidden, dtype=dtype, device=device)

    def dispatch():
        torch.index_select(x, 0, pair_token, out=recv)

    def combine():
        out.zero_()
        out.index_add_(0, pair_token, recv)

    dispatch()
    combine()
    torch.cuda.synchronize()
    # Identity experts: combine(dispatch(x)) = x * (rows of the token).  Every term has the
    # sign of x, so one rounding per addition in dtype bounds the error.
    want = x.float() * per_token.float().unsqueeze(1)
    unit = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}[dtype]
    tol = (args.topk + 2) * unit
    wrong = int((out.float() - want).abs().gt(tol * want.abs() + 1e-6).sum().item())

    nbytes = pair_token.numel() * args.hidden * x.element_size()
    return [tokens] + time_row(args, nbytes, (dispatch, combine), device) + [wrong]


CSV_HEADER = ("tool,label,ranks,nodes,algo,layout,pass,recipe,dtype,experts,hidden,topk,graph,"
              "tokens,op,path,bytes_per_rank,med_us,min_us,max_us,gbps_per_rank,pct_roof,"
              "hbm_bytes,pct_hbm,wrong\n")


def write_csv(args, r):
    """Dispatch and combine of one printed row r, in ncclx-bench's CSV columns."""
    tokens = r[0]
    elem = {"bf16": 2, "fp16": 2, "fp32": 4}[args.dtype]
    token_bytes = tokens * args.hidden * elem
    new = not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0
    with open(args.csv, "a") as f:
        if new:
            f.write(CSV_HEADER)
        for op, path, cols in (("dispatch", "torch index_select", r[1:7]),
                               ("combine", "torch index_add_", r[7:13])):
            nbytes, med, lo, hi, gbps, roof = cols
            hbm = nbytes + token_bytes  # rows once + tokens once
            pct_hbm = roof * hbm / (2.0 * nbytes) if nbytes else 0.0
            label = "PyTorch on one GPU (baseline" + ("" if args.gate else ", no gate") + ")"
            f.write(f'torch_baseline,"{label}",1,0,'  # quoted: ", no gate"
                    f"{'ht' if args.ht else 'll'},{args.layout if args.ht else 'expert'},fwd,none,"
                    f"{args.dtype},{args.experts},{args.hidden},{args.topk},{int(args.graph)},"
                    f"{tokens},{op},{path},{nbytes},{med:.2f},{lo:.2f},{hi:.2f},{gbps:.2f},"
                    f"{roof:.1f},{hbm},{pct_hbm:.1f},{r[-1]}\n")


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_baseline: no CUDA device visible to torch")
    device = torch.device("cuda", args.device)
    torch.cuda.set_device(device)
    props = torch.cuda.get_device_properties(device)
    args.gate = make_gate(not args.no_gate)
    flat = args.layout == "flat"
    if args.ht:
        print("# torch_baseline: HT stand-in, index_select dispatch into one row per (token, "
              f"{'destination rank' if flat else 'expert'}), index_add_ combine, one GPU")
    else:
        print("# torch_baseline: index_select dispatch, index_add_ combine, one rank, one GPU")
    print(f"# torch {torch.__version__}, CUDA {torch.version.cuda}, GPU {args.device}: "
          f"{props.name}, {props.multi_processor_count} SMs")
    shape = ""
    if args.ht:
        shape = ", layout flat, %d destination ranks" % args.ranks if flat else ", expert-major"
    print(f"# experts {args.experts}, hidden {args.hidden}, top-k {args.topk}, "
          f"dtype {args.dtype}, seed {args.seed}{shape}")
    print(f"# {'CUDA graphs' if args.graph else 'eager'}; {args.warmup} warm-up + "
          f"{args.iters} timed iterations; CUDA events around each operation, "
          + (f"enqueued in chunks of {CHUNK} behind a gate (a spin kernel), as ncclx-bench"
             if args.gate else "as the host launches them, with no gate (launch included)"))
    if args.ht:
        print("# bytes: rows x hidden x element bytes, one row per token and destination "
              f"{'rank' if flat else 'expert'}; GB/s = bytes / median; "
              "%roof = device-to-device copy of the bytes / median")
    else:
        print("# bytes: tokens x top-k x hidden x element bytes; GB/s = bytes / median; "
              "%roof = device-to-device copy of the bytes / median")
    print("#")
    print(f"#{'dispatch':>42}{'combine':>58}")
    hdr = ("tokens", "bytes", "med_us", "min_us", "max_us", "GB/s", "%roof")
    print("# %6s  %12s %9s %9s %9s %8s %6s  %12s %9s %9s %9s %8s %6s  %7s"
          % (hdr + hdr[1:] + ("#wrong",)))
    counts = [args.tokens]
    if args.sweep:
        counts, n = [], 1
        while n < args.tokens:
            counts.append(n)
            n *= 2
        counts.append(args.tokens)
    wrong = 0
    for tokens in counts:
        r = run_row_ht(args, tokens, device) if args.ht else run_row(args, tokens, device)
        wrong += r[-1]
        print("  %6u  %12u %9.2f %9.2f %9.2f %8.2f %6.1f  %12u %9.2f %9.2f %9.2f %8.2f %6.1f  %7u"
              % tuple(r), flush=True)
        if args.csv:
            write_csv(args, r)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
