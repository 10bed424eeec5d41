# shellcheck shell=bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Shared by the launcher test scripts (sourced): find the probe, bound every launch in time,
# and judge the probe's output.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
probe=${top_builddir:-$here/../..}/tests/launch/bootstrap_probe
# A rank that never reaches a fence turns into a PMIx timeout, not a hang.
export NCCLX_FENCE_TIMEOUT_S=${NCCLX_FENCE_TIMEOUT_S:-30}
NCCLX_LAUNCH_TIMEOUT_S=${NCCLX_LAUNCH_TIMEOUT_S:-180}

fail() {
    echo "FAIL: $*"
    exit 1
}

# need_program NAME DEBIAN_PACKAGE
need_program() {
    command -v "$1" >/dev/null 2>&1 ||
        fail "$1 not found: install the Debian package $2 (apt-get install -y $2)"
}

init_probe=${top_builddir:-$here/../..}/tests/launch/init_probe
[ -x "$probe" ] || fail "probe $probe not built (run make check)"
[ -x "$init_probe" ] || fail "probe $init_probe not built (run make check)"

# Runs "$@" under timeout; the output goes to $probe_out, the status to $probe_rc.  A launch
# that hangs is run once more before it fails: on a busy 2-core CI machine one rank of
# `mpirun -n 4` was once seen to print nothing until the timeout (1 launch in about 60, cause
# not found: not reproduced in 60 further launches).  A hang that repeats still fails, and
# the first attempt's output stays in the log.
run_bounded() {
    local attempt
    for attempt in 1 2; do
        echo "+ $*"
        probe_out=$(timeout --kill-after=10 "$NCCLX_LAUNCH_TIMEOUT_S" "$@" </dev/null 2>&1)
        probe_rc=$?
        printf '%s\n' "$probe_out"
        if [ "$probe_rc" -ne 124 ] && [ "$probe_rc" -ne 137 ]; then
            return 0
        fi
        echo "WARN: attempt $attempt of $1 ran past ${NCCLX_LAUNCH_TIMEOUT_S}s (a hang)"
    done
    fail "$1 ran past ${NCCLX_LAUNCH_TIMEOUT_S}s twice (a hang)"
}

# expect_pass LABEL NRANKS [TAG]: every rank 0..NRANKS-1 printed "TAG: rank R of N (...): PASS"
# exactly once, none FAIL.  TAG is the program's name, bootstrap_probe by default.
expect_pass() {
    local label=$1 n=$2 tag=${3:-bootstrap_probe} r count
    [ "$probe_rc" -eq 0 ] || fail "$label: exit status $probe_rc"
    ! printf '%s\n' "$probe_out" | grep -q "$tag: .*FAIL" ||
        fail "$label: a rank failed"
    for ((r = 0; r < n; r++)); do
        count=$(printf '%s\n' "$probe_out" |
            grep -c "^$tag: rank $r of $n (.*): PASS\$")
        [ "$count" -eq 1 ] || fail "$label: rank $r of $n printed PASS $count times, expected 1"
    done
    count=$(printf '%s\n' "$probe_out" | grep -c "^$tag: rank .*: PASS$")
    [ "$count" -eq "$n" ] || fail "$label: $count PASS lines, expected $n"
    echo "PASS: $label ($n ranks)"
}

# The environment without any PMIx server variable, for a true singleton.
without_pmix_env() {
    local name
    for name in $(env | sed -n 's/^\(PMIX_[A-Za-z0-9_]*\)=.*/\1/p'); do
        unset "$name"
    done
}
