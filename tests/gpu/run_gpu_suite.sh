#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Usage: tests/gpu/run_gpu_suite.sh LOG_DIR [configure options...]
# On a machine with a CUDA GPU: build out of tree, run `make check-gpu`, compute-sanitizer
# (memcheck, racecheck) over the tests, benches and the example, record ncclx-info and this
# machine's topology; logs land in LOG_DIR.
# Every run, also one that stops at configure or build, appends one line to docs/gpu-runs.md
# (date, commit, GPU, each GPU test program's and sanitizer run's result; the format and how
# to commit it are explained there).  NCCLX_GPU_RUNS_FILE=FILE appends to FILE instead,
# NCCLX_GPU_RUNS_FILE=/dev/null records nothing (a trial run).
# GPU_SUITE_BUDGET_S=N (a machine lent for a limited time): no sanitizer run starts past N
# seconds from the start, each is cut at the budget's end (recorded "cut (budget, ...)", not a
# failure, when it had reported no error), and those left out are recorded as "skipped (budget)".
set -uo pipefail
# The loopback teams' streams need their own hardware queues.  ncclxLoopbackInit sets this
# only when CUDA has not started yet in the process, and compute-sanitizer starts it before
# the test's main: without the export the sanitized 8-rank MXFP8 routing timed out.
export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-32}
suite_start=$(date +%s)
budget=${GPU_SUITE_BUDGET_S:-0}
log_dir=$1
shift
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build-gpu
runs_file=${NCCLX_GPU_RUNS_FILE:-$src/docs/gpu-runs.md}
status=0
mkdir -p "$log_dir"

# What ran: HEAD, marked when tracked files differ from it (the commit then does not name the
# code that was tested; only docs/gpu-runs.md itself may differ).
commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null) || commit="no-git"
if [ -n "$(git -C "$src" status --porcelain --untracked-files=no -- . ':!docs/gpu-runs.md' 2>/dev/null)" ]; then
    commit="$commit+uncommitted"
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c |
    awk '{ n = $1; $1 = ""; printf "%s%dx%s", sep, n, $0; sep = ", " }')
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
gpu="${gpu:-no GPU visible}${driver:+ (driver $driver)}"
tests=""
sanitizers="not run"

# record RESULT: append this run's line (the table's columns, docs/gpu-runs.md).
record() {
    local toolkit line
    toolkit=$(sed -n 's/^NVCC = //p' "$build/Makefile" 2>/dev/null | head -1)
    toolkit=$([ -n "$toolkit" ] && "$toolkit" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/CUDA \1/p')
    line="| $(date -u '+%Y-%m-%d %H:%M') | $commit | $gpu${toolkit:+, $toolkit} | $1 | ${tests:-none ran} | $sanitizers |"
    if [ "$runs_file" = /dev/null ]; then
        echo "not recorded: $line"
    elif [ -f "$runs_file" ]; then
        echo "$line" >>"$runs_file"
        echo "recorded in $runs_file (commit it): $line"
    else
        echo "no $runs_file, not recorded: $line"
    fi
}

(cd "$src" && ./autogen.sh) >"$log_dir/autogen.log" 2>&1 ||
    { echo "autogen failed"; record "FAIL (autogen)"; exit 1; }
rm -rf "$build" && mkdir -p "$build" && cd "$build" || exit 1
../configure --enable-werror "$@" >"$log_dir/configure.log" 2>&1 ||
    { tail -30 "$log_dir/configure.log"; record "FAIL (configure)"; exit 1; }
make -j"$(nproc)" >"$log_dir/make.log" 2>&1 ||
    { tail -40 "$log_dir/make.log"; record "FAIL (build)"; exit 1; }
make check-gpu >"$log_dir/check-gpu.log" 2>&1 || status=1
grep -E '^(PASS|FAIL|SKIP|ERROR|# )' "$log_dir/check-gpu.log"
cat tests/gpu/*.log >"$log_dir/gpu-tests.log" 2>/dev/null
# "test_fill PASS, test_init FAIL, ...": one entry per program or script check-gpu ran.
tests=$(sed -n 's/^\(PASS\|FAIL\|SKIP\): \([^ ]*\).*/\2 \1/p' "$log_dir/check-gpu.log" |
    while read -r t r; do echo "${t##*/} $r"; done | paste -sd, - | sed 's/,/, /g')
if [ -z "$tests" ] && [ $status -ne 0 ]; then
    tests="make check-gpu failed before any test ran (check-gpu.log)"
fi
# compute-sanitizer.  memcheck: the PyTorch graph pattern (EP and M2N) and the stream-ordered
# M2N clear, the EP HT test program (its team matrix, DROP, determinism
# and two graph replays), the fill kernel, the EP LL test program (real 1-rank
# communicator and loopback teams of 2, 4 and 8: the sanitizer keeps the ranks' kernels
# concurrent), the protocol test, odd grids and FP8 special values, one timeout event with
# its eviction and clean (a timeout long enough for the sanitizer's pace), loopback benches
# over both layouts, FP8 and an active mask, and a whole MoE layer; racecheck: the MoE layer
# and the bench on a 1-rank communicator, both layouts.
if command -v compute-sanitizer >/dev/null 2>&1; then
    sanitizers=""
    bench="tools/ncclx-bench --check --iters 2 --warmup 0 --timeout 60"
    # Each line: tool, name, the environment of the run (comma separated, - for none), command.
    while read -r tool name envs cmd; do
        [ "$envs" = - ] && envs=""
        limit=300
        if [ "$budget" -gt 0 ]; then
            left=$((budget - ($(date +%s) - suite_start)))
            if [ "$left" -lt 30 ]; then
                echo "$tool $name: skipped (GPU_SUITE_BUDGET_S=$budget spent)"
                sanitizers+="${sanitizers:+, }$tool $name skipped (budget)"
                continue
            fi
            [ "$left" -lt "$limit" ] && limit=$left
        fi
        # shellcheck disable=SC2086 # word splitting of envs and cmd is intended (globs off:
        # TEST_FILTER patterns must reach the test as written)
        set -f
        env NCCLX_TIMEOUT_MS=60000 ${envs//,/ } timeout "$limit" compute-sanitizer --tool "$tool" \
            --report-api-errors no --error-exitcode 1 $cmd >"$log_dir/$tool-$name.log" 2>&1
        rc=$?
        set +f
        if [ "$rc" -eq 0 ]; then
            echo "$tool $name: clean"
            sanitizers+="${sanitizers:+, }$tool $name clean"
        elif [ "$rc" -eq 124 ] && [ "$limit" -lt 300 ] && ! grep -q "ERROR SUMMARY: [1-9]" \
            "$log_dir/$tool-$name.log"; then
            # Cut by GPU_SUITE_BUDGET_S before it finished, no error reported until then: not
            # a result either way.
            echo "$tool $name: cut at the budget's end, no error before (see $tool-$name.log)"
            sanitizers+="${sanitizers:+, }$tool $name cut (budget, no error before)"
        else
            echo "$tool $name: errors or timeout (see $tool-$name.log)"
            sanitizers+="${sanitizers:+, }$tool $name FAIL"
            status=1
        fi
    done <<EOF_CHECKS
memcheck test_ep_streams - tests/gpu/test_ep_streams
memcheck test_m2n-streams TEST_FILTER=test_stream_pattern tests/gpu/test_m2n
memcheck test_m2n_faults-clear TEST_FILTER=test_clear_stream_ordered tests/gpu/test_m2n_faults
memcheck test_ep_ht TEST_FILTER=test_*_teams,TEST_HT_REPLAYS=2 tests/gpu/test_ep_ht
memcheck test_ep_ht-drop-graph TEST_FILTER=test_[dg]*,TEST_HT_REPLAYS=2 tests/gpu/test_ep_ht
memcheck test_ep_ht-mxfp8 TEST_FILTER=test_mxfp8_combine,TEST_SM_BUDGET=8 tests/gpu/test_ep_ht
memcheck test_ep_ll_protocol - tests/gpu/test_ep_ll_protocol
memcheck test_ep_ll_shapes TEST_FILTER=test_grid_*_blocks tests/gpu/test_ep_ll_shapes
memcheck test_ep_ll_shapes-fp8 TEST_FILTER=test_fp8_special_values tests/gpu/test_ep_ll_shapes
memcheck test_ep_ll_mask_repeat TEST_MASK_CYCLES=1,TEST_MASK_TIMEOUT_MS=10000 tests/gpu/test_ep_ll_mask_repeat
memcheck test_fill - tests/gpu/test_fill
memcheck test_ep_ll - tests/gpu/test_ep_ll
memcheck bench-loopback4 - $bench --loopback 4
memcheck bench-loopback4-rank-fp8 - $bench --loopback 4 --layout rank --recipe fp8
memcheck bench-loopback4-mask - $bench --loopback 4 --mask
memcheck bench-loopback4-zero-copy - $bench --loopback 4 --zero-copy
memcheck test_ep_ll_zero_copy TEST_FILTER=test_in_place_4_ranks|test_graph_capture|test_two_handles tests/gpu/test_ep_ll_zero_copy
memcheck moe_layer - examples/moe_layer --comm
racecheck moe_layer - examples/moe_layer --comm
racecheck bench-comm - $bench --comm
racecheck bench-comm-rank-fp32 - $bench --comm --layout rank --dtype fp32
EOF_CHECKS
else
    sanitizers="not run (no compute-sanitizer)"
fi
tools/ncclx-info >"$log_dir/ncclx-info.txt" 2>&1
tools/ncclx-info --export-topology "$log_dir/topology.xml" >/dev/null 2>&1
if [ $status -eq 0 ]; then record PASS; else record FAIL; fi
exit $status
