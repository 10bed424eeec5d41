#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Usage: tests/gpu/run_mask_repeat.sh BUILD_DIR LOG_DIR [TIMES]
# The active-mask suite TIMES times in a row (default 50): test_ep_ll_mask,
# test_ep_ll_straggler and test_ep_ll_mask_repeat, each run with a fresh seed.  A dead-rank run
# must be exact every time: prints one line per round and a tally, keeps the log of every failed
# run (with its seed, to replay it with TEST_SEED), and exits non-zero if any run failed.
set -uo pipefail
build=$(cd "$1" && pwd)
log_dir=$2
times=${3:-50}
mkdir -p "$log_dir"
failed=0
for i in $(seq 1 "$times"); do
    line="round $i:"
    for t in test_ep_ll_mask test_ep_ll_straggler test_ep_ll_mask_repeat; do
        log="$log_dir/$t-$i.log"
        if timeout 300 "$build/tests/gpu/$t" >"$log" 2>&1; then
            line="$line $t PASS"
            rm -f "$log"
        else
            line="$line $t FAIL ($(grep -o 'TEST_SEED=[0-9]*' "$log" | head -1))"
            failed=$((failed + 1))
        fi
    done
    echo "$line"
done
echo "mask suite x$times: $failed failed run(s)"
test "$failed" -eq 0
