#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# tools/ncu_phases.py without a GPU, on a made-up Nsight Compute source page of two kernels:
# phases end after each BAR.SYNC (and EXIT); a barrier wait, sampled at the instruction after
# the barrier, counts for the phase the barrier ends; shares add up; the phase lists its
# memory-ordering instructions; --kernel picks a kernel; --min-share hides small phases; a
# kernel that matches nothing, a file that is no source page and bad arguments fail.
set -u
tool="$top_srcdir/tools/ncu_phases.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }

h='"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_barrier","stall_long_sb","stall_membar"'
cat >"$tmp/page.csv" <<EOF2
"Kernel Name","void send_kernel(int)",
$h
"0x7f0000001000","      LDG.E.STRONG.SYS R2, desc[UR4][R4.64]","10","16","0","10","0"
"0x7f0000001010","      BAR.SYNC.DEFER_BLOCKING 0x0","0","16","0","0","0"
"0x7f0000001020","      BRA 0x7f0000001030","30","16","30","0","0"
"0x7f0000001030","      MEMBAR.SC.SYS","20","1","0","0","20"
"0x7f0000001040","      BAR.SYNC.DEFER_BLOCKING 0x0","0","16","0","0","0"
"0x7f0000001050","      EXIT","40","16","40","0","0"
"0x7f0000001060","      STG.E desc[UR4][R2.64], R3","0","0","0","0","0"
"Kernel Name","void recv_kernel(int)",
$h
"0x7f0000002000","      ATOMG.E.ADD.STRONG.GPU PT, R5, desc[UR4][R4.64], R9","5","1","0","5","0"
EOF2

out=$(python3 "$tool" "$tmp/page.csv" --kernel send) || no "a valid page failed"
echo "$out"
# Phase 0: its own 10 samples and the 30 waiting at the barrier that ends it.
echo "$out" | grep -Eq '^ +0 01000-01010 +40 +40\.0%' || no "phase 0 is not 40 samples, 40%"
# Phase 1: the fence's 20 and the 40 waiting at its barrier (sampled at the EXIT after it).
echo "$out" | grep -Eq '^ +1 01020-01040 +60 +60\.0%.*MEMBAR\.SC\.SYS' ||
    no "phase 1 is not 60 samples, 60%, with its MEMBAR.SC.SYS"
echo "$out" | grep -Eq '^ +1 .*membar 20' || no "phase 1 does not name its membar stalls"
# The EXIT phase keeps no barrier samples: they moved to phase 1.
echo "$out" | grep -Eq '^ +2 01050-01050 +0 +0\.0%' || no "the exit phase is not empty"
# An instruction never executed is not listed as the phase's memory traffic.
echo "$out" | grep -q 'STG.E' && no "an unexecuted STG is listed"
echo "$out" | grep -q 'recv_kernel' && no "--kernel send printed recv_kernel"
echo "$out" | grep -q '100 samples' || no "the send kernel's total is not 100 samples"

out=$(python3 "$tool" "$tmp/page.csv" --kernel send --min-share 50) || no "--min-share failed"
echo "$out" | grep -Eq '^ +0 ' && no "--min-share 50 kept the 40% phase"
echo "$out" | grep -Eq '^ +1 ' || no "--min-share 50 dropped the 60% phase"

out=$(python3 "$tool" "$tmp/page.csv") || no "both kernels failed"
[ "$(echo "$out" | grep -c '^== ')" = 2 ] || no "without --kernel not both kernels"

python3 "$tool" "$tmp/page.csv" --kernel nothing_like_it >/dev/null 2>&1
[ $? -eq 1 ] || no "a kernel that matches nothing did not exit 1"
printf 'a,b\n1,2\n' >"$tmp/other.csv"
python3 "$tool" "$tmp/other.csv" >/dev/null 2>&1
[ $? -eq 1 ] || no "a file that is no source page did not exit 1"
printf '"Kernel Name","k",\n"Address","Source"\n"0x1","EXIT"\n' >"$tmp/nosamples.csv"
python3 "$tool" "$tmp/nosamples.csv" >/dev/null 2>&1
[ $? -eq 1 ] || no "a page without the samples column did not exit 1"
python3 "$tool" >/dev/null 2>&1
[ $? -eq 2 ] || no "no arguments did not exit 2"
python3 "$tool" "$tmp/page.csv" --min-share x >/dev/null 2>&1
[ $? -eq 2 ] || no "a bad --min-share did not exit 2"

[ $fail -eq 0 ] && echo "PASS: ncu_phases.py" || echo "$fail failure(s)"
[ $fail -eq 0 ]
