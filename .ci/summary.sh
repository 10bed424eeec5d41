#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Usage: .ci/summary.sh BUILD_DIR[:LIST_TARGET]...
# Automake hides test output in .log files.  In each build directory, `make LIST_TARGET`
# (default print-tests: everything make check runs) names the tests that had to run there,
# and each must have left a result: one that did not is a failure.  A cmocka program counts
# each of its cases (plus one failure if it ended badly outside a case: a crash, a sanitizer
# report at exit, a timeout; and one if it ran zero cases); any other test counts as one.  A
# test run in several directories (the unit tests again under ASan/UBSan) is counted once: it
# passes only if it passed in each.  Skipped cases and tests are listed.  Ends with "N passed,
# M failed"; exits nonzero if anything failed, did not run, or a directory holds no build to
# ask.
set -uo pipefail

declare -A final # "test: case" -> pass | skip | fail, merged over the directories
order=()         # the keys in the order first seen

record() { # record KEY STATUS
    local key=$1 st=$2 old=${final[$1]-}
    [ -n "$old" ] || order+=("$key")
    if [ "$old" = fail ] || [ "$st" = fail ]; then
        final[$key]=fail
    elif [ "$old" = pass ] || [ "$st" = pass ]; then
        final[$key]=pass
    else
        final[$key]=skip
    fi
}

# One line per cmocka case: "pass|fail|skip|crash<TAB>name" (a case that started and never
# ended is a crash; a name seen twice gets "#2").
cmocka_cases() {
    awk '
        function name() { return substr($0, 14) }
        function key(n) { return seen[n] > 1 ? n "#" seen[n] : n }
        /^\[ RUN      \] / { n = name(); seen[n]++; k = key(n); st[k] = "crash"; keys[++count] = k; next }
        /^\[       OK \] / { k = key(name()); if (st[k] == "crash") st[k] = "pass"; next }
        /^\[  SKIPPED \] / { k = key(name()); if (st[k] == "crash") st[k] = "skip"; next }
        /^\[  (FAILED  |ERROR   )\] / { k = key(name()); if (st[k] == "crash") st[k] = "fail"; next }
        END { for (i = 1; i <= count; i++) print st[keys[i]] "\t" keys[i] }
    ' "$1"
}

for arg in "$@"; do
    dir=$arg
    target=print-tests
    if [ ! -d "$arg" ] && [[ $arg =~ ^(.*):([a-z][a-z-]*)$ ]]; then
        dir=${BASH_REMATCH[1]}
        target=${BASH_REMATCH[2]}
    fi
    label=$(basename "$dir")
    echo "== $label (tests from make $target)"
    if [ ! -f "$dir/Makefile" ]; then
        echo "FAIL: $dir has no Makefile: not a configured build directory, no tests ran there"
        record "$label: (no build)" fail
        continue
    fi
    # The last line: a stale Makefile regenerates itself first and prints on the way.
    if ! expected=$(make -s --no-print-directory -C "$dir" "$target" 2>&1 | tail -n 1) ||
        [ -z "$expected" ] || [[ $expected == *"No rule to make target"* ]]; then
        echo "FAIL: make $target in $dir listed no tests: ${expected:-nothing printed}"
        record "$label: (make $target)" fail
        continue
    fi
    for t in $expected; do
        trs=$dir/$t.trs
        log=$dir/$t.log
        if [ ! -f "$trs" ]; then
            echo "FAIL: $t did not run (no $t.trs in $label)"
            record "$t" fail
            continue
        fi
        result=$(sed -n 's/^:test-result: //p' "$trs" | head -1)
        why=""
        grep -q '^timeout: sending signal' "$log" 2>/dev/null && why=" TIMEOUT (per-test limit)"
        if grep -q '^\[==========\] ' "$log" 2>/dev/null; then
            p=0 f=0 s=0 lines=""
            while IFS=$'\t' read -r st name; do
                case $st in
                    pass) p=$((p + 1)); record "$t: $name" pass ;;
                    skip) s=$((s + 1)); record "$t: $name" skip; lines+="    skipped: $name"$'\n' ;;
                    *) f=$((f + 1)); record "$t: $name" fail; lines+="    $st: $name"$'\n' ;;
                esac
            done < <(cmocka_cases "$log")
            # A cmocka program that ran no case tested nothing (an empty table, a filter that
            # matched nothing): that is a failure, not a pass.
            if [ $((p + f + s)) -eq 0 ]; then
                f=1
                record "$t: (no cases)" fail
                lines+="    ran zero cases: it tested nothing (see $t.log)"$'\n'
            fi
            # Ended badly outside any case (exit status, sanitizer report at exit, timeout).
            if [ "$result" != PASS ] && [ "$result" != SKIP ] && [ "$f" -eq 0 ]; then
                f=1
                record "$t: (exit)" fail
                lines+="    failed after its cases (exit status, sanitizer or timeout: see $t.log)"$'\n'
            fi
            echo "cmocka $t: $p passed, $f failed, $s skipped ($result$why)"
            printf '%s' "$lines"
        else
            case $result in
                PASS | XFAIL) record "$t" pass ;;
                SKIP) record "$t" skip ;;
                *) record "$t" fail ;;
            esac
            echo "script $t: ${result:-no result}$why"
        fi
    done
done

passed=0 failed=0 skipped=0
for key in "${order[@]}"; do
    case ${final[$key]} in
        pass) passed=$((passed + 1)) ;;
        skip) skipped=$((skipped + 1)) ;;
        *) failed=$((failed + 1)) ;;
    esac
done
if [ "$skipped" -gt 0 ]; then
    echo "skipped (counted neither passed nor failed):"
    for key in "${order[@]}"; do
        [ "${final[$key]}" = skip ] && echo "    $key"
    done
fi
if [ "$failed" -gt 0 ]; then
    echo "failed:"
    for key in "${order[@]}"; do
        [ "${final[$key]}" = fail ] && echo "    $key"
    done
fi
[ $# -gt 0 ] || { echo "usage: $0 BUILD_DIR[:LIST_TARGET]..."; failed=1; }
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
