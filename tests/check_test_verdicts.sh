#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# The verdicts of the test reports, on made-up logs: tests/gpu_verdict.sh (what make check-gpu
# prints per program) says SKIP for a cmocka program that skipped cases, FAIL for one that ran
# zero cases or exited nonzero, PASS only for one that ran cases and skipped none; and
# .ci/summary.sh (CI's count) fails a cmocka program that ran zero cases; and
# tests/check_layers.sh refuses includes against the layers.
set -u
srcdir=${top_srcdir:-.}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
expect() { # expect WANT_PREFIX WANT_RC NAME RC LOG
    local out rc
    out=$(sh "$srcdir/tests/gpu_verdict.sh" "$3" "$4" "$5")
    rc=$?
    case $out in
        "$1"*) ;;
        *) echo "FAIL: gpu_verdict $3: printed '$out', want '$1...'"; status=1 ;;
    esac
    [ "$rc" -eq "$2" ] || { echo "FAIL: gpu_verdict $3: exit $rc, want $2"; status=1; }
}
cmocka_log() { # cmocka_log FILE CASE:STATUS...
    local f=$1 c
    shift
    echo "[==========] Running $# test(s)." >"$f"
    for c in "$@"; do
        echo "[ RUN      ] ${c%%:*}" >>"$f"
        case ${c##*:} in
            ok) echo "[       OK ] ${c%%:*}" >>"$f" ;;
            skip) echo "[  SKIPPED ] ${c%%:*}" >>"$f" ;;
            fail) echo "[  FAILED  ] ${c%%:*}" >>"$f" ;;
        esac
    done
    echo "[==========] $# test(s) run." >>"$f"
    # cmocka's closing lines, as a real program prints them.
    local skipped=""
    for c in "$@"; do
        [ "${c##*:}" = skip ] && skipped="$skipped ${c%%:*}"
    done
    if [ -n "$skipped" ]; then
        echo "[  SKIPPED ] $(echo $skipped | wc -w) test(s), listed below:" >>"$f"
        for c in $skipped; do echo "[  SKIPPED ] $c" >>"$f"; done
    fi
}
cmocka_log "$work/pass.log" a:ok b:ok
cmocka_log "$work/skip.log" a:ok shape_big:skip
cmocka_log "$work/none.log"
echo "a script's output" >"$work/script.log"
expect "PASS: prog" 0 prog 0 "$work/pass.log"
expect "SKIP: prog (1 of 2 cases skipped: shape_big;" 0 prog 0 "$work/skip.log"
expect "FAIL: prog (cmocka ran zero cases" 1 prog 0 "$work/none.log"
expect "FAIL: prog (exit status 1" 1 prog 1 "$work/pass.log"
expect "SKIP: prog (exit status 77" 0 prog 77 "$work/pass.log"
expect "PASS: run.sh" 0 run.sh 0 "$work/script.log"
expect "FAIL: run.sh (exit status 2" 1 run.sh 2 "$work/script.log"

# .ci/summary.sh over a made-up build directory: one cmocka program with two passing cases,
# one with none (exit status 0, automake PASS): the second must fail the summary.
mkdir -p "$work/build/t"
printf 'print-tests:\n\t@echo t/good t/empty\n' >"$work/build/Makefile"
cmocka_log "$work/build/t/good.log" a:ok b:ok
cmocka_log "$work/build/t/empty.log"
printf ':test-result: PASS\n' >"$work/build/t/good.trs"
printf ':test-result: PASS\n' >"$work/build/t/empty.trs"
out=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL bash "$srcdir/.ci/summary.sh" "$work/build" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] || ! echo "$out" | grep -q "ran zero cases" ||
    ! echo "$out" | grep -q "^2 passed, 1 failed$"; then
    echo "FAIL: .ci/summary.sh did not fail a cmocka program that ran zero cases (exit $rc):"
    echo "$out"
    status=1
fi
# Without the empty program the same directory passes.
printf 'print-tests:\n\t@echo t/good\n' >"$work/build/Makefile"
out=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL bash "$srcdir/.ci/summary.sh" "$work/build" 2>&1) ||
    { echo "FAIL: .ci/summary.sh failed a directory of passing cases:"; echo "$out"; status=1; }
# tests/check_layers.sh over a made-up tree: a core file that includes a plan header fails;
# listed in the allowed file it passes; listed while gone it fails.
layers() { # layers ALLOWED_LINE... -> the check's exit status over $work/tree
    printf '%s\n' "$@" >"$work/tree/tests/layers_allowed.txt"
    top_srcdir="$work/tree" bash "$srcdir/tests/check_layers.sh" >"$work/layers.log" 2>&1
}
mkdir -p "$work/tree/lib/core" "$work/tree/lib/plan" "$work/tree/kernels/common" \
    "$work/tree/pmix" "$work/tree/tests"
printf '#include "core.h"\n' >"$work/tree/lib/plan/plan.c"
printf '/* core */\n' >"$work/tree/lib/core/core.h"
printf '/* plan */\n' >"$work/tree/lib/plan/plan.h"
layers "" || { echo "FAIL: check_layers.sh refused plan -> core"; cat "$work/layers.log"; status=1; }
printf '#include "plan.h"\n' >"$work/tree/lib/core/core.c"
layers "" && { echo "FAIL: check_layers.sh let core include plan"; status=1; }
layers "lib/core/core.c -> lib/plan/plan.h" ||
    { echo "FAIL: check_layers.sh refused a listed exception"; cat "$work/layers.log"; status=1; }
rm "$work/tree/lib/core/core.c"
layers "lib/core/core.c -> lib/plan/plan.h" &&
    { echo "FAIL: check_layers.sh kept a listed exception that is gone"; status=1; }
printf '#include "plan.h"\n' >"$work/tree/kernels/common/k.cu"
layers "" && { echo "FAIL: check_layers.sh let kernels include lib"; status=1; }
[ $status -eq 0 ] && echo "ok: gpu_verdict.sh, .ci/summary.sh and check_layers.sh verdicts"
exit $status
