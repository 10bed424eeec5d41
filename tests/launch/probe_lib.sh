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

# One launcher script at a time, even under make -j: with PMIx 4.2 a rank's PMIx_Init was seen
# to block forever (about 1 launch in 300) when another PMIx job on the node started or ended
# meanwhile (docs/init.md).  The lock (fd 9) is held until the script exits; daemons the
# script starts must not inherit it (9>&-).  A lock still held after 10 minutes is ignored.
if command -v flock >/dev/null 2>&1 &&
    exec 9>"${top_builddir:-$here/../..}/tests/launch/launchers.lock"; then
    flock -w 600 9 || echo "WARN: launcher lock still held after 600 s; running anyway"
fi

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

# Runs "$@" under timeout; the output goes to $probe_out, the status to $probe_rc (124 or 137:
# it hung).  A hang is never retried: shortly before the timeout fires, every probe process
# still running is described (its rank, state, kernel wait channel and, with gdb, the stack of
# each thread), so the log says where each rank stopped; expect_pass then says which ranks
# printed what.
run_bounded() {
    local out pid deadline
    out=$(mktemp) || fail "mktemp failed"
    echo "+ $*"
    timeout --kill-after=10 "$NCCLX_LAUNCH_TIMEOUT_S" "$@" </dev/null >"$out" 2>&1 &
    pid=$!
    deadline=$((SECONDS + NCCLX_LAUNCH_TIMEOUT_S - 5))
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "HANG: the launch still runs after $((NCCLX_LAUNCH_TIMEOUT_S - 5))s; its probes:"
        describe_probes
    fi
    wait "$pid"
    probe_rc=$?
    probe_out=$(cat "$out")
    rm -f "$out"
    printf '%s\n' "$probe_out"
    if [ "$probe_rc" -eq 124 ] || [ "$probe_rc" -eq 137 ]; then
        echo "HANG: the launch ran past ${NCCLX_LAUNCH_TIMEOUT_S}s and was killed"
    fi
}

# Every process running one of our probes: rank, state, wait channel, threads' stacks.
describe_probes() {
    local pid rank
    for pid in $(pgrep -f -- "^($probe|$init_probe)( |\$)"); do
        rank=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
            sed -n 's/^\(PMIX_RANK\|OMPI_COMM_WORLD_RANK\|SLURM_PROCID\)=//p' | head -n 1)
        echo "---- pid $pid, rank ${rank:-?}: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
        echo "state: $(sed -n 's/^State:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null)," \
            "wchan: $(cat "/proc/$pid/wchan" 2>/dev/null)"
        if command -v gdb >/dev/null 2>&1; then
            timeout 30 gdb -p "$pid" -batch -ex "thread apply all bt" 2>&1 |
                grep -E '^(Thread|#[0-9])'
        fi
    done
}

# expect_pass LABEL NRANKS [TAG]: every rank 0..NRANKS-1 printed "TAG: rank R of N (...): PASS"
# exactly once, none FAIL.  TAG is the program's name, bootstrap_probe by default.
expect_pass() {
    local label=$1 n=$2 tag=${3:-bootstrap_probe} r count
    if [ "$probe_rc" -eq 124 ] || [ "$probe_rc" -eq 137 ]; then
        for ((r = 0; r < n; r++)); do
            count=$(printf '%s\n' "$probe_out" | grep -c "^$tag: rank $r of $n (.*): ")
            echo "$label: rank $r printed ${count} result line(s):" \
                "$(printf '%s\n' "$probe_out" | grep "^$tag: rank $r[ :]" | tr '\n' ' ')"
        done
        fail "$label: a hang (see the ranks above and the stacks before)"
    fi
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

# start_slurm_cluster NODES: a private Slurm cluster of NODES emulated nodes
# (tests/launch/slurm_cluster.sh) in a fresh cluster_dir, stopped when the script exits, its
# environment sourced; fails unless srun offers the PMIx plugin.
start_slurm_cluster() {
    local nodes=$1 mpi_list
    cluster="$here/slurm_cluster.sh"
    cluster_dir=$(mktemp -d /tmp/ncclx-slurm.XXXXXX) || fail "mktemp failed"
    # shellcheck disable=SC2064 # the paths are fixed now
    trap "\"$cluster\" stop \"$cluster_dir\" 9>&-" EXIT
    trap 'exit 1' INT TERM HUP
    NCCLX_SLURM_NODES=$nodes timeout 120 "$cluster" start "$cluster_dir" 9>&- ||
        fail "could not start the private Slurm cluster of $nodes node(s)"
    # shellcheck source=/dev/null
    . "$cluster_dir/env"
    echo "+ private Slurm cluster in $cluster_dir:" \
        "$(timeout 10 sinfo -h -N -o '%N %T %c CPUs' | tr '\n' ' ')"
    mpi_list=$(timeout 30 srun --mpi=list 2>&1)
    echo "+ srun --mpi=list:" "$(printf '%s' "$mpi_list" | tr '\n\t' '  ')"
    printf '%s\n' "$mpi_list" | grep -qw pmix ||
        fail "srun --mpi=list does not list pmix (Debian: slurm-wlm-basic-plugins, libpmix2):" \
            "$mpi_list"
}
