#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Without cmocka, make check-gpu stops at once and names the package to install, instead of
# running the few scripts that need no cmocka and looking like a GPU test run.  Configure's
# finding is stood in for by overriding NCCLX_GPU_HAVE_CMOCKA (tests/gpu.am).
set -u
out=$($MAKE -s -C "$top_builddir" check-gpu NCCLX_GPU_HAVE_CMOCKA=no 2>&1)
rc=$?
echo "$out"
test "$rc" -ne 0 || { echo "FAIL: make check-gpu succeeded without cmocka"; exit 1; }
echo "$out" | grep -q "libcmocka-dev" || { echo "FAIL: the message does not name libcmocka-dev"; exit 1; }
if echo "$out" | grep -q "^\(PASS\|FAIL\|SKIP\): "; then
    echo "FAIL: make check-gpu ran tests without cmocka"; exit 1
fi
echo "ok: make check-gpu without cmocka fails at once and names libcmocka-dev"
