#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# A private one-node Slurm cluster for launcher tests: munged, slurmctld and slurmd run as
# root out of one state directory, with a generated munge key, a generated slurm.conf, free
# TCP ports and the PMIx MPI plugin, so that `srun --mpi=pmix` works without touching the
# machine's own /etc/slurm or /etc/munge.
#
# NCCLX_SLURM_NODES=N (default 1) makes the one machine pose as N Slurm nodes, ncclx-n0 ..
# ncclx-n<N-1>: one slurmd per node (slurmd -N NAME), all at 127.0.0.1 on ports of their own,
# with per-node spool, TmpFS, log and pid files (%n in slurm.conf), each slurmd in a UTS
# namespace whose host name is its node name (needs CAP_SYS_ADMIN), so that `srun -N 2` runs
# a job whose PMIx data says two nodes.  Debian's Slurm 22.05.8 does this as it is: it refuses
# only a NodeName given twice, and the node names need not resolve (NodeAddr reaches them).
#
#   slurm_cluster.sh start DIR   start the daemons in DIR (absent or empty, named
#                                */ncclx-slurm.*); writes DIR/env (export SLURM_CONF=...)
#   slurm_cluster.sh stop DIR    cancel leftover jobs, stop the daemons, remove DIR
#
# Every wait is bounded; a failed start prints the daemons' logs and stops what it started.

set -u

NCCLX_SLURM_CPUS=${NCCLX_SLURM_CPUS:-4}
NCCLX_SLURM_START_TIMEOUT_S=${NCCLX_SLURM_START_TIMEOUT_S:-60}
NCCLX_SLURM_NODES=${NCCLX_SLURM_NODES:-1}

die() {
    echo "slurm_cluster.sh: $*" >&2
    exit 1
}

# Debian names of the programs we need, so that a missing one says what to install.
require_programs() {
    local missing=""
    local pair
    for pair in munged:munge mungekey:munge slurmctld:slurmctld slurmd:slurmd srun:slurm-client \
        sinfo:slurm-client scontrol:slurm-client scancel:slurm-client squeue:slurm-client; do
        if ! command -v "${pair%%:*}" >/dev/null 2>&1 && [ ! -x "/usr/sbin/${pair%%:*}" ]; then
            missing="$missing ${pair%%:*} (Debian package ${pair#*:})"
        fi
    done
    [ -z "$missing" ] || die "cannot start Slurm, missing:$missing." \
        "Install: apt-get install -y munge slurmctld slurmd slurm-client libpmix-dev"
}

sbin() {
    if command -v "$1" >/dev/null 2>&1; then command -v "$1"; else echo "/usr/sbin/$1"; fi
}

# A TCP port nothing listens on (bash's /dev/tcp connect fails), outside the kernel's range of
# ephemeral ports: a port there can be the local end of some outgoing connection, which no
# connect test sees and which makes the daemon's bind fail ("Address already in use").
free_port() {
    local port tries=0 low=32768 high=60999 first span
    read -r low high </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    if [ "$low" -gt 12000 ]; then
        first=10000 span=$((low - 10000))
    else
        first=$((high + 1)) span=$((65535 - high))
    fi
    [ "$span" -ge 100 ] || die "no room for ports outside the ephemeral range $low-$high"
    while [ $tries -lt 200 ]; do
        port=$((first + RANDOM % span))
        if ! (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
        tries=$((tries + 1))
    done
    die "no free TCP port found"
}

# distinct_ports COUNT TAKEN: COUNT free ports, one a line, none in the list TAKEN.
distinct_ports() {
    local count=$1 taken=" $2 " port
    while [ "$count" -gt 0 ]; do
        port=$(free_port) || return 1
        case "$taken" in *" $port "*) continue ;; esac
        taken="$taken$port "
        echo "$port"
        count=$((count - 1))
    done
}

# Polls "$@" every 0.5 s until it succeeds or $1 seconds pass.
wait_for() {
    local limit=$1
    shift
    local deadline=$((SECONDS + limit))
    while [ $SECONDS -lt $deadline ]; do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    return 1
}

# The names of the emulated nodes, one a line (only with NCCLX_SLURM_NODES > 1).
node_names() {
    local i
    for ((i = 0; i < NCCLX_SLURM_NODES; i++)); do
        echo "ncclx-n$i"
    done
}

# write_conf DIR HOST CTLD_PORT SLURMD_PORT...: one slurmd port per node.
write_conf() {
    local dir=$1 host=$2 ctld_port=$3 slurmd_port=$4
    local title="a private one-node test cluster." spool="$dir/spool" tmp_fs="$dir/tmp"
    local slurmd_pid="$dir/run/slurmd.pid" slurmd_log="$dir/log/slurmd.log"
    local nodes="NodeName=$host NodeAddr=127.0.0.1 CPUs=$NCCLX_SLURM_CPUS RealMemory=1024"
    local node_list=$host name
    nodes="$nodes State=UNKNOWN"
    if [ "$NCCLX_SLURM_NODES" -gt 1 ]; then
        # slurmd expands %n to its node name: each emulated node keeps its own files.  TmpFS
        # too: the PMIx plugin makes its directory there, named after job and step only
        # (spmix_appdir_UID_JOB.STEP), so with one TmpFS the second node's step fails with
        # "Cannot create client cli tmpdir ... File exists".
        title="$NCCLX_SLURM_NODES emulated nodes on one host."
        spool="$dir/spool/%n" slurmd_pid="$dir/run/slurmd.%n.pid" tmp_fs="$dir/tmp/%n"
        slurmd_log="$dir/log/slurmd.%n.log" nodes="" node_list=""
        shift 3
        for name in $(node_names); do
            nodes="$nodes${nodes:+$'\n'}NodeName=$name NodeHostname=$name NodeAddr=127.0.0.1"
            nodes="$nodes Port=$1 CPUs=$NCCLX_SLURM_CPUS RealMemory=1024 State=UNKNOWN"
            node_list="$node_list${node_list:+,}$name"
            shift
        done
    fi
    cat >"$dir/slurm.conf" <<EOF
# Generated by libncclx tests/launch/slurm_cluster.sh: $title
ClusterName=ncclxtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/run/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$slurmd_pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$slurmd_log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=$tmp_fs
PlugStackConfig=$dir/plugstack.conf
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdParameters=config_overrides
MailProg=/bin/true
$nodes
PartitionName=ncclx Nodes=$node_list Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
    : >"$dir/plugstack.conf"
}

start_munge() {
    local dir=$1
    mungekey -c -k "$dir/munge/munge.key" -b 1024 || die "mungekey failed"
    # munged insists that the socket's directory (and its parents) be searchable by all.
    $(sbin munged) --key-file="$dir/munge/munge.key" --socket="$dir/run/munge.socket" \
        --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$dir/munge/munged.seed" </dev/null >"$dir/log/munged.out" 2>&1 ||
        { cat "$dir/log/munged.log" >&2; return 1; }
    wait_for 10 sh -c "munge -S '$dir/run/munge.socket' -n | unmunge -S '$dir/run/munge.socket'" ||
        { echo "munged does not answer on $dir/run/munge.socket" >&2; return 1; }
}

# Every node idle (sinfo -N: one line per node).
node_idle() {
    [ "$(sinfo -h -N -o '%T' 2>/dev/null | grep -cx 'idle')" -eq "$NCCLX_SLURM_NODES" ]
}

start_slurm() {
    local dir=$1
    export SLURM_CONF="$dir/slurm.conf"
    $(sbin slurmctld) -i -f "$SLURM_CONF" </dev/null >"$dir/log/slurmctld.out" 2>&1 ||
        { echo "slurmctld did not start" >&2; return 1; }
    wait_for 20 scontrol ping ||
        { echo "slurmctld does not answer scontrol ping" >&2; return 1; }
    if [ "$NCCLX_SLURM_NODES" -eq 1 ]; then
        $(sbin slurmd) -f "$SLURM_CONF" </dev/null >"$dir/log/slurmd.out" 2>&1 ||
            { echo "slurmd did not start" >&2; return 1; }
    else
        local name
        # Each slurmd in a UTS namespace of its own whose host name is its node name, which its
        # tasks inherit: as on a real cluster, gethostname() then agrees with the PMIX_HOSTNAME
        # Slurm's PMIx plugin gives them (the node name), and tasks of different nodes do not
        # share a host name.
        for name in $(node_names); do
            # slurmd makes neither TmpFS nor (before it complains) its spool directory.
            mkdir -p "$dir/spool/$name" "$dir/tmp/$name" || return 1
            # shellcheck disable=SC2016 # expanded by that sh
            unshare --uts sh -c 'hostname "$1" && exec "$2" -f "$3" -N "$1"' sh \
                "$name" "$(sbin slurmd)" "$SLURM_CONF" </dev/null \
                >"$dir/log/slurmd.$name.out" 2>&1 ||
                { echo "slurmd -N $name did not start" >&2; return 1; }
        done
    fi
    wait_for "$NCCLX_SLURM_START_TIMEOUT_S" node_idle ||
        { echo "node not idle after ${NCCLX_SLURM_START_TIMEOUT_S}s:" \
               "$(sinfo -h -N -o '%N %T %E' 2>&1)" >&2; return 1; }
}

show_logs() {
    local dir=$1 log
    for log in "$dir"/log/*; do
        [ -f "$log" ] || continue
        echo "---- $log (last 30 lines)" >&2
        tail -n 30 "$log" >&2
    done
}

cmd_start() {
    local dir=$1 host ctld_port slurmd_port node_ports try
    [ "$(id -u)" -eq 0 ] || die "the private cluster runs its daemons as root: run as root"
    case "$NCCLX_SLURM_NODES" in
    [1-9] | 1[0-6]) ;;
    *) die "NCCLX_SLURM_NODES='$NCCLX_SLURM_NODES': expected a number of nodes, 1 to 16" ;;
    esac
    require_programs
    # Checked before any daemon starts: see start_slurm.
    if [ "$NCCLX_SLURM_NODES" -gt 1 ] && ! unshare --uts true 2>/dev/null; then
        die "$NCCLX_SLURM_NODES emulated nodes need \`unshare --uts\` (root with CAP_SYS_ADMIN):" \
            "$(unshare --uts true 2>&1)"
    fi
    case "$dir" in
    /*/ncclx-slurm.*) ;;
    *) die "DIR must be an absolute path named .../ncclx-slurm.* (stop removes it)" ;;
    esac
    [ -z "$(ls -A "$dir" 2>/dev/null)" ] || die "$dir is not empty"
    host=$(hostname -s) || die "hostname -s failed"
    # A port taken between the check and the bind is not a reason to fail: up to 3 tries,
    # each with new ports in an emptied directory.
    for try in 1 2 3; do
        mkdir -p "$dir/munge" "$dir/run" "$dir/log" "$dir/state" "$dir/spool" "$dir/tmp" ||
            die "cannot create $dir"
        chmod 755 "$dir" "$dir/run" || die "chmod in $dir failed"
        chmod 700 "$dir/munge" || die "chmod in $dir failed"
        ctld_port=$(free_port) && slurmd_port=$(free_port) || exit 1
        while [ "$slurmd_port" = "$ctld_port" ]; do
            slurmd_port=$(free_port) || exit 1
        done
        node_ports=""
        if [ "$NCCLX_SLURM_NODES" -gt 1 ]; then
            node_ports=$(distinct_ports $((NCCLX_SLURM_NODES - 1)) "$ctld_port $slurmd_port") ||
                exit 1
        fi
        # shellcheck disable=SC2086 # one word per port
        write_conf "$dir" "$host" "$ctld_port" "$slurmd_port" $node_ports
        echo "export SLURM_CONF='$dir/slurm.conf'" >"$dir/env"
        if start_munge "$dir" && start_slurm "$dir"; then
            return 0
        fi
        show_logs "$dir"
        if [ "$try" -lt 3 ] && grep -qs "Address already in use" "$dir"/log/*; then
            echo "slurm_cluster.sh: a port was taken (try $try of 3): again with new ports" >&2
            stop_daemons "$dir"
            rm -rf "${dir:?}"/* || die "cannot empty $dir"
            continue
        fi
        break
    done
    cmd_stop "$dir"
    die "could not start the private Slurm cluster in $dir"
}

# The pid in pid file $1 if that process is alive and one of ours (its command line names
# our directory $2: a stale pid file must not make us signal a stranger).  A zombie counts as
# gone: PID 1 here may take a while to reap orphans, and kill -0 succeeds on zombies.
our_pid() {
    local pidfile=$1 dir=$2 pid state
    [ -s "$pidfile" ] || return 1
    pid=$(cat "$pidfile")
    case "$pid" in '' | *[!0-9]*) return 1 ;; esac
    state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)
    [ -n "$state" ] && [ "$state" != Z ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$dir" || return 1
    echo "$pid"
}

# TERM to every daemon still running, then KILL to those alive 15 s later.  The slurmd pid
# files are run/slurmd.pid, or run/slurmd.NODE.pid with emulated nodes.
stop_daemons() {
    local dir=$1 pidfile name pid deadline=$((SECONDS + 15)) left
    for pidfile in "$dir"/run/slurmd*.pid "$dir/run/slurmctld.pid" "$dir/run/munged.pid"; do
        pid=$(our_pid "$pidfile" "$dir") && kill -TERM "$pid" 2>/dev/null
    done
    while :; do
        left=""
        for pidfile in "$dir"/run/slurmd*.pid "$dir/run/slurmctld.pid" "$dir/run/munged.pid"; do
            name=${pidfile##*/}
            pid=$(our_pid "$pidfile" "$dir") && left="$left ${name%.pid}:$pid"
        done
        [ -n "$left" ] || return 0
        [ $SECONDS -lt $deadline ] || break
        sleep 0.2
    done
    echo "slurm_cluster.sh: still running after SIGTERM, killing:$left" >&2
    for name in $left; do
        kill -KILL "${name#*:}" 2>/dev/null
    done
}

cmd_stop() {
    local dir=$1
    [ -d "$dir" ] || return 0
    if [ -f "$dir/slurm.conf" ] && [ -s "$dir/run/slurmctld.pid" ]; then
        export SLURM_CONF="$dir/slurm.conf"
        # Jobs first, so that slurmd's step daemons (slurmstepd) exit on their own.
        timeout 10 scancel --full --quiet --partition=ncclx >/dev/null 2>&1
        # shellcheck disable=SC2016 # expanded by that sh, at each try
        wait_for 20 sh -c '[ -z "$(squeue -h 2>/dev/null)" ]' ||
            echo "slurm_cluster.sh: jobs still listed after scancel: $(squeue -h 2>&1)" >&2
    fi
    stop_daemons "$dir"
    case "$dir" in
    /*/ncclx-slurm.*) rm -rf "$dir" ;;
    *) echo "slurm_cluster.sh: left $dir in place (not a ncclx-slurm.* directory)" >&2 ;;
    esac
}

case "${1:-}" in
start) [ $# -eq 2 ] || die "usage: $0 start DIR"; cmd_start "$2" ;;
stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; cmd_stop "$2" ;;
*) die "usage: $0 start|stop DIR" ;;
esac
