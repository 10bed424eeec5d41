#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# profile_ll.sh: where the LL kernels' time goes, step by step, on one GPU in one go
# (docs/performance.md, "Where the one-block send's time goes").
#
# Usage: tools/profile_ll.sh BUILD_DIR LOG_DIR [--kernels REGEX] [--dry-run] [-- BENCH_ARGS...]
#
#   BUILD_DIR  a libncclx build (tools/ncclx-bench in it)
#   LOG_DIR    profile.ncu-rep (the report), source.csv (its SASS page with the warp stall
#              samples), phases.txt (tools/ncu_phases.py over it: each kernel's samples per step
#              between block barriers), durations.txt (each kernel's time and grid), bench.log
#   --kernels  the kernels to profile (ncu -k regex; default: every LL dispatch and combine
#              kernel, 'dispatch_|combine_')
#   --dry-run  print the commands and run none (no GPU needed)
#   BENCH_ARGS ncclx-bench options (default: --comm --tokens 1 --zero-copy): the bench runs
#              one warm-up and one timed iteration, eager (--no-gate), so that each kernel
#              appears twice, warm-up first; read the second of each name.
#
# Nsight Compute (ncu, from the CUDA toolkit, or $NCU) samples every warp every 32 cycles
# (--warp-sampling-interval 0) with the clocks left as they run; the profiler runs kernels one
# at a time, so a kernel's duration here is its own, not the overlapped time of a graph replay.
# Exits non-zero if ncu or the phase summary fails.
set -uo pipefail
prog=${0##*/}
die() {
    printf '%s: error: %s\n' "$prog" "$*" >&2
    exit 2
}
dry=0 kernels='dispatch_|combine_'
args=() bench_args=()
while (($#)); do
    case "$1" in
        --dry-run) dry=1 ;;
        --kernels)
            (($# >= 2)) || die "--kernels needs a regex"
            kernels=$2
            shift
            ;;
        --)
            shift
            bench_args=("$@")
            break
            ;;
        -h | --help)
            sed -n '5,25p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        -*) die "unknown option '$1' (try --help)" ;;
        *) args+=("$1") ;;
    esac
    shift
done
((${#args[@]} == 2)) || die "usage: $prog BUILD_DIR LOG_DIR [--kernels REGEX] [--dry-run] [-- BENCH_ARGS...]"
build=${args[0]} logs=${args[1]}
((${#bench_args[@]} > 0)) || bench_args=(--comm --tokens 1 --zero-copy)
[[ -x $build/tools/ncclx-bench ]] || die "no $build/tools/ncclx-bench: build libncclx first"
ncu=${NCU:-ncu}
tools=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$logs" || die "cannot create '$logs'"
logs=$(cd "$logs" && pwd)
report=$logs/profile

# Each command is printed (on the script's stdout, whatever its own output is redirected to).
exec 3>&1
run() {
    {
        printf '+'
        printf ' %q' "$@"
        printf '\n'
    } >&3
    ((dry)) || "$@"
}

# The profile, then its SASS page and the kernels' durations, then the phases.
run "$ncu" --set full --import-source no --clock-control none --warp-sampling-interval 0 \
    -k "regex:$kernels" -f -o "$report" \
    "$build/tools/ncclx-bench" --no-gate --warmup 1 --iters 1 "${bench_args[@]}" \
    >"$logs/bench.log" 2>&1 || { ((dry)) || { tail -20 "$logs/bench.log"; exit 1; }; }
run "$ncu" -i "$report.ncu-rep" --page source --csv --print-source sass >"$logs/source.csv" ||
    exit 1
run "$ncu" -i "$report.ncu-rep" --page details >"$logs/details.txt" || exit 1
((dry)) && exit 0
# Each kernel's name, grid and duration, in launch order.
awk '/^  [^ ].*\([0-9]+, 1, 1\)x\(/ { name = $0; sub(/^  (void )?/, "", name); sub(/^.*unnamed>::/, "", name);
                                     sub(/\(ncclx_ep.*\) \(/, " (", name); sub(/, Context.*/, "", name) }
     /^ +Duration / && name != "" { print name ":", $NF, $(NF-1); name = "" }' \
    "$logs/details.txt" >"$logs/durations.txt"
python3 "$tools/ncu_phases.py" "$logs/source.csv" --min-share 2 >"$logs/phases.txt" || exit 1
cat "$logs/durations.txt" "$logs/phases.txt"
