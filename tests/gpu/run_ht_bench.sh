#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Usage: tests/gpu/run_ht_bench.sh BUILD_DIR LOG_DIR [ITERS]
# On a machine with a GPU (after a build in BUILD_DIR): every HT row that docs/performance.md
# records, on a loopback team of 8 ranks, DeepSeek-V3 prefill (4096 tokens per rank, hidden
# 7168, top-8, 256 experts, BF16), each checked: flat and expert-major, forward and backward,
# eager and graph, with the caller's buffers and zero copy, the MXFP8 combine; then the LL
# graph row (the regression check) and the PyTorch baseline when torch is there.  One table row per run on
# stdout, every log in LOG_DIR; exits non-zero when a run fails or has a wrong element.
# HT_BENCH_ROWS=REGEX runs only the rows whose name matches (e.g. 'flat-.*|ll-graph');
# HT_BENCH_TORCH=0 leaves the PyTorch baseline out.
set -uo pipefail
build=$(cd "$1" && pwd)
log_dir=$2
iters=${3:-20}
mkdir -p "$log_dir"
status=0
bench="$build/tools/ncclx-bench --check --iters $iters --warmup 5"
while read -r name args; do
    if [ -n "${HT_BENCH_ROWS:-}" ] && ! [[ $name =~ ^($HT_BENCH_ROWS)$ ]]; then
        continue
    fi
    echo "== $name: ncclx-bench --check --iters $iters --warmup 5 $args"
    if timeout 300 $bench $args >"$log_dir/ht-$name.txt" 2>&1; then
        grep -E '^# symmetric' "$log_dir/ht-$name.txt"
        grep -v '^#' "$log_dir/ht-$name.txt"
    else
        echo "failed (see ht-$name.txt)"
        status=1
    fi
done <<'EOF_RUNS'
flat-graph --algo ht --graph
flat-graph-zc --algo ht --graph --zero-copy
flat-eager --algo ht
flat-bwd-graph --algo ht --graph --pass bwd
em-graph --algo ht --layout expert --graph
em-graph-zc --algo ht --layout expert --graph --zero-copy
em-graph-mxfp8 --algo ht --layout expert --graph --recipe mxfp8
em-eager --algo ht --layout expert
em-bwd-graph --algo ht --layout expert --graph --pass bwd
ll-graph --graph
EOF_RUNS
if [ "${HT_BENCH_TORCH:-1}" != 0 ] && python3 -c 'import torch' 2>/dev/null; then
    src=$(cd "$(dirname "$0")/../.." && pwd)
    timeout 300 python3 "$src/tools/torch_baseline.py" --ht --graph >"$log_dir/torch-ht.txt" 2>&1 ||
        status=1
    grep -v '^#' "$log_dir/torch-ht.txt"
fi
exit $status
