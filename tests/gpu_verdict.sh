#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Usage: tests/gpu_verdict.sh NAME EXIT_STATUS LOG
# The line make check-gpu prints for one GPU test program or script that exited with
# EXIT_STATUS and wrote LOG: "PASS: NAME", "FAIL: NAME (...)" or "SKIP: NAME (...)".  A cmocka
# program passes only if it ran at least one case and skipped none: one that skipped cases
# (a shape the GPU cannot hold) says SKIP with the cases' names, one that ran zero cases (a
# TEST_FILTER that matched nothing, an empty table) fails.  Exit status 77 is automake's SKIP.
# Exits 1 for FAIL, 0 otherwise.
name=$1
rc=$2
log=$3
if [ "$rc" -eq 77 ]; then
    echo "SKIP: $name (exit status 77, see $log)"
    exit 0
fi
if [ "$rc" -ne 0 ]; then
    echo "FAIL: $name (exit status $rc, see $log)"
    exit 1
fi
if grep -q '^\[==========\] ' "$log" 2>/dev/null; then
    ran=$(grep -c '^\[ RUN      \] ' "$log")
    # A case's line names the case; cmocka's closing "[  SKIPPED ] N test(s), listed below:"
    # does not.
    skipped=$(sed -n 's/^\[  SKIPPED \] \(.*\)/\1/p' "$log" | grep -v 'test(s), listed below:' |
        sort -u)
    nskipped=$(printf '%s' "$skipped" | grep -c .)
    skipped=$(printf '%s' "$skipped" | paste -sd' ' -)
    if [ "$ran" -eq 0 ]; then
        echo "FAIL: $name (cmocka ran zero cases, see $log)"
        exit 1
    fi
    if [ -n "$skipped" ]; then
        echo "SKIP: $name ($nskipped of $ran cases skipped: $skipped; see $log)"
        exit 0
    fi
fi
echo "PASS: $name"
exit 0
