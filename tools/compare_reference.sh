#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# compare_reference.sh: run NVIDIA's reference nccl_ep (and nccl_m2n) benches and libncclx's
# on the same shapes, on one GPU, in one go (docs/performance.md, "The reference
# implementation, side by side").
#
# Usage: tools/compare_reference.sh REF_DIR BUILD_DIR LOG_DIR [--dry-run]
#
#   REF_DIR    what tools/build_reference.sh wrote (env.sh, lib/, include/, test/nccl_ep/,
#              bin/): the reference's programs and the NCCL they run on.
#   BUILD_DIR  a libncclx build (tools/ncclx-bench in it), best configured with
#              --with-nccl=REF_DIR so that both sides run on the same NCCL.
#   LOG_DIR    each run's output (NAME.log), ours.csv (our rows) and summary.txt.
#   --dry-run  print the commands and run none (no GPU needed).
#
# One GPU allows one real communicator: one rank.  The reference runs under mpirun (its
# programs bootstrap through MPI); ours with mpirun -n 1 and --comm, LL also on a zero-copy
# group (its one-copy path).  Shapes: LL DeepSeek-V3 decode (128 tokens, hidden 7168, top-8,
# 256 experts; and 1 token), HT prefill (4096 tokens, flat).  The reference's M2N needs two
# ranks, which one GPU cannot host: it is run anyway and its refusal logged.  PyTorch's gather
# and scatter-add of the same LL rows (tools/torch_baseline.py, 128 tokens and 1 token, graph
# replay; $PYTHON, default python3, run without LD_LIBRARY_PATH so that torch loads its own
# NCCL) are the one-rank yardstick of docs/performance.md; a machine without torch logs why and
# goes on.  Exits non-zero if a run fails (the M2N and PyTorch ones excepted).
set -uo pipefail
prog=${0##*/}
die() {
    printf '%s: error: %s\n' "$prog" "$*" >&2
    exit 2
}
dry=0
args=()
for a in "$@"; do
    case "$a" in
        --dry-run) dry=1 ;;
        -h | --help)
            sed -n '5,26p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        -*) die "unknown option '$a' (try --help)" ;;
        *) args+=("$a") ;;
    esac
done
((${#args[@]} == 3)) || die "usage: $prog REF_DIR BUILD_DIR LOG_DIR [--dry-run]"
ref=${args[0]} build=${args[1]} logs=${args[2]}
[[ -f $ref/env.sh ]] || die "'$ref' has no env.sh: give the directory tools/build_reference.sh wrote"
[[ -x $ref/test/nccl_ep/ep_bench ]] || die "no $ref/test/nccl_ep/ep_bench"
[[ -x $build/tools/ncclx-bench ]] || die "no $build/tools/ncclx-bench: build libncclx first"
ref=$(cd "$ref" && pwd) build=$(cd "$build" && pwd)
mpirun=${MPIRUN:-mpirun}
mpi=("$mpirun" --oversubscribe)
if [[ $(id -u) == 0 ]]; then
    mpi+=(--allow-run-as-root)
fi
mpi+=(-x LD_LIBRARY_PATH -x NCCL_HOME -x NCCL_EP_HOME -x CUDA_HOME -x PATH
    -x CUDA_DEVICE_MAX_CONNECTIONS)
bench=$build/tools/ncclx-bench
python=${PYTHON:-python3}
torch_baseline=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/torch_baseline.py
ll=(-d 7168 -k 8 -e 256)
status=0

# run NAME EXPECT_OK cmd...: one program, its output in LOG_DIR/NAME.log.
run() {
    local name=$1 must=$2
    shift 2
    echo "+ $*"
    ((dry)) && return 0
    "$@" >"$logs/$name.log" 2>&1
    local rc=$?
    echo "  $name: exit $rc"
    if ((rc != 0 && must)); then
        status=1
    fi
}

if ((!dry)); then
    mkdir -p "$logs" || die "cannot create $logs"
    rm -f "$logs/ours.csv"
fi
# shellcheck source=/dev/null
. "$ref/env.sh"
export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-32}

run ref_ll_validate 1 "${mpi[@]}" -n 1 ep_bench -a ll -t 128 "${ll[@]}" -w 5 -i 5 --validate
run ref_ll 1 "${mpi[@]}" -n 1 ep_bench -a ll -t 128 "${ll[@]}" -w 20 -i 200
run ref_ll_t1 1 "${mpi[@]}" -n 1 ep_bench -a ll -t 1 "${ll[@]}" -w 20 -i 200
run ref_ht 1 "${mpi[@]}" -n 1 ep_bench -a ht -t 4096 "${ll[@]}" -w 10 -i 50
run ref_ht_validate 1 "${mpi[@]}" -n 1 ep_bench -a ht -t 4096 "${ll[@]}" -w 2 -i 2 --validate
run ref_m2n 0 "${mpi[@]}" -n 2 reshard_bench --src-mesh-dims 1,1 --dst-mesh-dims 1,1 \
    --tensor-dims 8192,4096 --src-shard-dim 0 --dst-shard-dim 0 --validate
csv=(--csv "$logs/ours.csv")
run ours_ll 1 "${mpi[@]}" -n 1 "$bench" --comm --check "${csv[@]}"
run ours_ll_graph 1 "${mpi[@]}" -n 1 "$bench" --comm --graph "${csv[@]}"
run ours_ll_t1_graph 1 "${mpi[@]}" -n 1 "$bench" --comm --tokens 1 --graph "${csv[@]}"
# The one-copy path (issue 30's one-rank rows): a group planned with zero copy, rows received in
# place and combined by pulling them.
run ours_ll_zc_graph 1 "${mpi[@]}" -n 1 "$bench" --comm --zero-copy --check --graph "${csv[@]}"
run ours_ll_zc_t1_graph 1 "${mpi[@]}" -n 1 "$bench" --comm --zero-copy --tokens 1 --check \
    --graph "${csv[@]}"
run ours_ht 1 "${mpi[@]}" -n 1 "$bench" --algo ht --comm --check --iters 20 --warmup 5 "${csv[@]}"
run ours_ht_graph 1 "${mpi[@]}" -n 1 "$bench" --algo ht --comm --graph --iters 20 --warmup 5 \
    "${csv[@]}"
run torch_ll 0 env -u LD_LIBRARY_PATH "$python" "$torch_baseline" --graph
run torch_ll_t1 0 env -u LD_LIBRARY_PATH "$python" "$torch_baseline" --graph --tokens 1
((dry)) && exit 0

# The summary: the reference's host-observed and kernel-only times, our medians.
{
    echo "# reference (ep_bench, host-observed avg / kernels only), libncclx and PyTorch (median)"
    for f in ref_ll ref_ll_t1 ref_ht; do
        echo "## $f"
        grep -E '^(Dispatch|Combine)' "$logs/$f.log" || echo "(no times: see $f.log)"
    done
    for f in ref_ll_validate ref_ht_validate; do
        echo "## $f: $(grep -E 'Global validation' "$logs/$f.log" || echo 'no validation line')"
    done
    echo "## ref_m2n: $(grep -m1 -E 'error|Error' "$logs/ref_m2n.log" || echo 'ran')"
    for f in ours_ll ours_ll_graph ours_ll_t1_graph ours_ll_zc_graph ours_ll_zc_t1_graph ours_ht \
        ours_ht_graph torch_ll torch_ll_t1; do
        echo "## $f"
        grep -E '^ +[0-9]+ +[0-9]+' "$logs/$f.log" || echo "(no row: see $f.log)"
    done
} >"$logs/summary.txt"
cat "$logs/summary.txt"
exit $status
