#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Usage: tests/gpu/run_gpu_suite.sh LOG_DIR [configure options...]
# On a machine with a CUDA GPU: build out of tree, run `make check-gpu`, the fill kernel under
# compute-sanitizer, record ncclx-info and this machine's topology; logs land in LOG_DIR.
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
# compute-sanitizer over the fill kernel and a whole MoE layer on a 1-rank communicator
# (routing, dispatch, combine, the LL waits): memcheck and racecheck.  (A loopback team would
# need its ranks' kernels to run concurrently, which the sanitizer does not promise.)
if command -v compute-sanitizer >/dev/null 2>&1; then
    for check in "memcheck tests/gpu/test_fill" "memcheck examples/moe_layer --comm" \
                 "racecheck examples/moe_layer --comm"; do
        set -- $check
        tool=$1
        shift
        name=$(basename "$1")
        if NCCLX_TIMEOUT_MS=30000 timeout 120 compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 1 \
            "$@" >"$log_dir/$tool-$name.log" 2>&1; then
            echo "$tool $name: clean"
        else
            echo "$tool $name: errors (see $tool-$name.log)"
            status=1
        fi
    done
fi
tools/ncclx-info >"$log_dir/ncclx-info.txt" 2>&1
tools/ncclx-info --export-topology "$log_dir/topology.xml" >/dev/null 2>&1
exit $status
