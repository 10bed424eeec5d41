#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# The tools on a machine without a GPU (or without its driver): tools/ncclx-bench and a bare
# tools/ncclx-info say so in the user's words, not in the CUDA runtime's ("CUDA driver version
# is insufficient for CUDA runtime version"), name what still works, and fail; what they name
# (ncclx-plan, ncclx-info --env / --gpu-busid) does work.  Skipped (77) where a GPU is visible.
set -u
tools="$top_builddir/tools"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
unset NCCLX_DEBUG NCCLX_DEBUG_FILE NCCLX_CUDA_DEVICE PMIX_RANK

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "SKIP: a GPU is visible (nvidia-smi -L)"
    exit 77
fi

# A short run: where a GPU turns out to be usable after all, it ends quickly and we skip.
# --rank-starts rides along: an option the parser refused would end it with another message.
"$tools/ncclx-bench" --loopback 2 --tokens 1 --experts 2 --topk 1 --hidden 128 --iters 1 \
    --warmup 0 --rank-starts >"$tmp/bench.out" 2>"$tmp/bench.err"
rc=$?
if [ "$rc" -eq 0 ]; then
    echo "SKIP: ncclx-bench ran, a GPU is usable"
    exit 77
fi

# check NAME RC WANT_RC TEXT...: the exit status, and every TEXT in NAME's stderr.
check() {
    name=$1 got=$2 want=$3
    shift 3
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: $name: exit status $got, expected $want"; cat "$tmp/$name.err"
        fail=$((fail + 1))
        return
    fi
    for text in "$@"; do
        if ! grep -qF -- "$text" "$tmp/$name.err"; then
            echo "FAIL: $name: stderr lacks '$text':"; cat "$tmp/$name.err"
            fail=$((fail + 1))
            return
        fi
    done
    echo "ok: $name (exit $got)"
}

# What is wrong (no driver, or no GPU visible), that it needs one, and what works without.
nogpu_re='no usable GPU: (no NVIDIA driver is installed|no GPU is visible|the NVIDIA driver is older)'
check bench "$rc" 1 "ncclx-bench: no usable GPU: " "needs an NVIDIA GPU and its driver" \
    "tools/ncclx-plan" "tools/ncclx-info"
grep -qE "^ncclx-bench: $nogpu_re" "$tmp/bench.err" ||
    { echo "FAIL: bench: no reason in the user's words"; cat "$tmp/bench.err"; fail=$((fail + 1)); }
# Without a driver at all, CUDA's own words are not printed.
if [ ! -e /proc/driver/nvidia/version ] &&
    grep -qF "CUDA driver version is insufficient" "$tmp/bench.err"; then
    echo "FAIL: bench: the CUDA runtime's message is still printed:"; cat "$tmp/bench.err"
    fail=$((fail + 1))
fi
grep -q . "$tmp/bench.out" && { echo "FAIL: bench: printed results"; fail=$((fail + 1)); }

# --team-graph: taken on a loopback team (then only the GPU is missing), refused where it has no
# meaning, before any GPU is looked for.
"$tools/ncclx-bench" --loopback 2 --tokens 1 --experts 2 --topk 1 --hidden 128 --iters 1 \
    --warmup 0 --team-graph >"$tmp/team.out" 2>"$tmp/team.err"
check team $? 1 "ncclx-bench: no usable GPU: "
"$tools/ncclx-bench" --comm --team-graph >"$tmp/team-comm.out" 2>"$tmp/team-comm.err"
check team-comm $? 2 "--team-graph is a loopback option"
"$tools/ncclx-bench" --team-graph --rank-starts >"$tmp/team-starts.out" 2>"$tmp/team-starts.err"
check team-starts $? 2 "--rank-starts takes --graph"

# --zero-copy: taken by LL of either layout (FP8 too) and by HT (then only the GPU is missing),
# refused with LL where a zero-copy group cannot be planned (an active mask, several load/store
# domains), before any GPU is looked for.
small="--loopback 2 --tokens 1 --experts 2 --topk 1 --hidden 128 --iters 1 --warmup 0"
# shellcheck disable=SC2086 # $small is a list of options
"$tools/ncclx-bench" $small --zero-copy --check --recipe fp8 >"$tmp/zc.out" 2>"$tmp/zc.err"
check zc $? 1 "ncclx-bench: no usable GPU: "
# shellcheck disable=SC2086
"$tools/ncclx-bench" $small --algo ht --zero-copy >"$tmp/zc-ht.out" 2>"$tmp/zc-ht.err"
check zc-ht $? 1 "ncclx-bench: no usable GPU: "
# shellcheck disable=SC2086
"$tools/ncclx-bench" $small --zero-copy --layout rank >"$tmp/zc-rank.out" 2>"$tmp/zc-rank.err"
check zc-rank $? 1 "ncclx-bench: no usable GPU: "
"$tools/ncclx-bench" --zero-copy --mask >"$tmp/zc-mask.out" 2>"$tmp/zc-mask.err"
check zc-mask $? 2 "--zero-copy and --mask"
"$tools/ncclx-bench" --zero-copy --nodes 2 >"$tmp/zc-nodes.out" 2>"$tmp/zc-nodes.err"
check zc-nodes $? 2 "--zero-copy needs one load/store domain"

"$tools/ncclx-info" >"$tmp/info.out" 2>"$tmp/info.err"
check info $? 1 "ncclx-info: no usable GPU: " "tools/ncclx-plan" "--gpu-busid ID" "--env"
grep -qE "^ncclx-info: $nogpu_re" "$tmp/info.err" ||
    { echo "FAIL: info: no reason in the user's words"; cat "$tmp/info.err"; fail=$((fail + 1)); }

# What the messages promise works without a GPU.
"$tools/ncclx-plan" --ranks 8 >"$tmp/plan.out" 2>"$tmp/plan.err"
check plan $? 0
grep -q "^ *8 " "$tmp/plan.out" || { echo "FAIL: plan: no row for 8 ranks"; fail=$((fail + 1)); }
# 64 MiB of M2N staging on 8 ranks: 8 MiB per source, 64 channels of 32 KiB (docs/m2n.md).
"$tools/ncclx-plan" --ranks 8 --ll-tokens 0 --m2n 67108864 --regions >"$tmp/m2n.out" 2>&1
check plan-m2n $? 0
grep -q "^# M2N ring per source rank: 64 channel(s) of 4 x 32768-byte slices (8388608 of the 8388608" \
    "$tmp/m2n.out" || { echo "FAIL: plan --m2n: no ring line"; cat "$tmp/m2n.out"; fail=$((fail + 1)); }
"$tools/ncclx-info" --env >"$tmp/env.out" 2>"$tmp/env.err"
check env $? 0
grep -q "^NCCLX_DEBUG " "$tmp/env.out" || { echo "FAIL: info --env: no NCCLX_DEBUG"; fail=$((fail + 1)); }
busid=""
for dev in /sys/bus/pci/devices/*; do
    [ -e "$dev" ] && busid=${dev##*/}
    break
done
if [ -n "$busid" ]; then
    "$tools/ncclx-info" --gpu-busid "$busid" >"$tmp/busid.out" 2>"$tmp/busid.err"
    check busid $? 0
    grep -qx "cuda_device=none" "$tmp/busid.out" ||
        { echo "FAIL: info --gpu-busid: no cuda_device=none"; fail=$((fail + 1)); }
fi

[ "$fail" -eq 0 ] || { echo "$fail check(s) failed"; exit 1; }
exit 0
