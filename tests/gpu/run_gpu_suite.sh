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
# compute-sanitizer over the fill kernel and a whole MoE layer on a 2-rank loopback team
# (dispatch, combine, routing, the LL waits), memcheck and racecheck.
if command -v compute-sanitizer >/dev/null 2>&1; then
    for tool in memcheck racecheck; do
        for prog in "tests/gpu/test_fill" "examples/moe_layer --loopback 2"; do
            name=$(basename "${prog%% *}")
            # shellcheck disable=SC2086
            if timeout 300 compute-sanitizer --tool $tool --error-exitcode 1 $prog \
                >"$log_dir/$tool-$name.log" 2>&1; then
                echo "$tool $name: clean"
            else
                echo "$tool $name: errors (see $tool-$name.log)"
                status=1
            fi
        done
    done
fi
tools/ncclx-info >"$log_dir/ncclx-info.txt" 2>&1
tools/ncclx-info --export-topology "$log_dir/topology.xml" >/dev/null 2>&1
exit $status
