#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Usage: tests/gpu/run_gpu_suite.sh LOG_DIR [configure options...]
# On a machine with a CUDA GPU: build out of tree, run `make check-gpu`, compute-sanitizer
# (memcheck, racecheck) over the tests, benches and the example, record ncclx-info and this
# machine's topology; logs land in LOG_DIR.
set -uo pipefail
log_dir=$1
shift
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build-gpu
status=0
mkdir -p "$log_dir"
(cd "$src" && ./autogen.sh) >"$log_dir/autogen.log" 2>&1 || { echo "autogen failed"; exit 1; }
rm -rf "$build" && mkdir -p "$build" && cd "$build" || exit 1
../configure --enable-werror "$@" >"$log_dir/configure.log" 2>&1 ||
    { tail -30 "$log_dir/configure.log"; exit 1; }
make -j"$(nproc)" >"$log_dir/make.log" 2>&1 || { tail -40 "$log_dir/make.log"; exit 1; }
make check-gpu >"$log_dir/check-gpu.log" 2>&1 || status=1
grep -E '^(PASS|FAIL|ERROR|# )' "$log_dir/check-gpu.log"
cat tests/gpu/*.log >"$log_dir/gpu-tests.log" 2>/dev/null
# compute-sanitizer.  memcheck: the fill kernel, the EP LL test program (real 1-rank
# communicator and loopback teams of 2, 4 and 8: the sanitizer keeps the ranks' kernels
# concurrent), loopback benches over both layouts, FP8 and an active mask, and a whole MoE
# layer; racecheck: the MoE layer and the bench on a 1-rank communicator, both layouts.
if command -v compute-sanitizer >/dev/null 2>&1; then
    bench="tools/ncclx-bench --check --iters 2 --warmup 0 --timeout 60"
    while read -r tool name cmd; do
        if NCCLX_TIMEOUT_MS=60000 timeout 300 compute-sanitizer --tool "$tool" --report-api-errors no \
            --error-exitcode 1 $cmd >"$log_dir/$tool-$name.log" 2>&1; then
            echo "$tool $name: clean"
        else
            echo "$tool $name: errors or timeout (see $tool-$name.log)"
            status=1
        fi
    done <<EOF_CHECKS
memcheck test_fill tests/gpu/test_fill
memcheck test_ep_ll tests/gpu/test_ep_ll
memcheck bench-loopback4 $bench --loopback 4
memcheck bench-loopback4-rank-fp8 $bench --loopback 4 --layout rank --recipe fp8
memcheck bench-loopback4-mask $bench --loopback 4 --mask
memcheck moe_layer examples/moe_layer --comm
racecheck moe_layer examples/moe_layer --comm
racecheck bench-comm $bench --comm
racecheck bench-comm-rank-fp32 $bench --comm --layout rank --dtype fp32
EOF_CHECKS
fi
tools/ncclx-info >"$log_dir/ncclx-info.txt" 2>&1
tools/ncclx-info --export-topology "$log_dir/topology.xml" >/dev/null 2>&1
exit $status
