#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Usage: .ci/summary.sh BUILD_DIR...
# Automake hides test output in .log files: print each cmocka summary, then count every test
# that ran (each cmocka case, and each non-cmocka test script as one) and print
# "N passed, M failed".
passed=0
failed=0
for dir in "$@"; do
    while IFS= read -r trs; do
        log=${trs%.trs}.log
        result=$(sed -n 's/^:test-result: //p' "$trs" | head -1)
        name=${trs#"$dir"/}
        if grep -q '^\[==========\] .* test(s) run\.' "$log" 2>/dev/null; then
            p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' "$log" | awk '{s+=$1} END {print s+0}')
            f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
            # A crash ends cmocka before its summary: count the program as failed.
            if [ "$result" != PASS ] && [ "$f" -eq 0 ]; then f=1; fi
            echo "cmocka ${name%.trs}: $p passed, $f failed ($result)"
        else
            if [ "$result" = PASS ]; then p=1; f=0; else p=0; f=1; fi
            echo "script ${name%.trs}: $result"
        fi
        passed=$((passed + p))
        failed=$((failed + f))
    done < <(find "$dir" -name '*.trs' -not -path '*/libncclx-*/*' | sort)
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
