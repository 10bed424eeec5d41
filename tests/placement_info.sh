#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# tools/ncclx-info on the recorded topologies: the key=value lines it prints, with both of
# hwloc's XML parsers, its exit codes (bad bus id, bad usage, no CUDA device), and --env.
set -u
info="$top_builddir/tools/ncclx-info"
topo="$top_srcdir/tests/topologies"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
unset NCCL_IB_HCA NCCLX_BIND NCCLX_CUDA_DEVICE NCCLX_DEBUG NCCLX_DEBUG_FILE

# run NAME ARGS...: runs ncclx-info with the variables in $with (VAR=value ...), keeps stdout
# in $tmp/NAME.out, stderr in .err, the status in rc
with=""
run() {
    name=$1
    shift
    # shellcheck disable=SC2086
    env $with "$info" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    rc=$?
}

# expect NAME LINE...: every LINE is a whole line of $tmp/NAME.out
expect() {
    name=$1
    shift
    for line in "$@"; do
        if ! grep -qxF -- "$line" "$tmp/$name.out"; then
            echo "FAIL: $name: no line '$line' in:"; sed 's/^/    /' "$tmp/$name.out"
            fail=$((fail + 1))
        fi
    done
}

# expect_rc NAME CODE [STDERR-SUBSTRING]
expect_rc() {
    if [ "$rc" -ne "$2" ]; then
        echo "FAIL: $1: exit status $rc, expected $2"; cat "$tmp/$1.err"; fail=$((fail + 1))
    elif [ $# -ge 3 ] && ! grep -qF -- "$3" "$tmp/$1.err"; then
        echo "FAIL: $1: stderr lacks '$3':"; cat "$tmp/$1.err"; fail=$((fail + 1))
    else
        echo "ok: $1 (exit $rc)"
    fi
}

# DGX-like, GPU 4 (socket 1, sub-switch with mlx5_4 on bus 96).
run dgx --topology "$topo/dgx-h100-like.xml" --gpu-busid 0000:95:00.0 --local-rank 4 \
    --local-size 8
expect_rc dgx 0
expect dgx "gpu_busid=0000:95:00.0" "numa=1" "cpuset=0x0000f0f0" "cpus=4-7,12-15" \
    "nic=mlx5_4" "nic_busid=0000:96:00.0" "nic_distance=4" "nic_ties=1" "bind=yes" \
    "local_rank=4" "local_size=8" "cuda_device=none" "nccl_ib_hca==mlx5_4"

# The user's NCCL_IB_HCA is what NCCL will see; NCCLX_BIND=NONE switches binding off.
with="NCCL_IB_HCA=mlx5_9 NCCLX_BIND=NONE"
run dgx_env --topology "$topo/dgx-h100-like.xml" --gpu-busid 0000:15:00.0
expect_rc dgx_env 0
expect dgx_env "nic=mlx5_0" "nccl_ib_hca=mlx5_9" "bind=no" "bind_reason=NCCLX_BIND=NONE"

# Every topology, with libxml2 and with hwloc's minimalistic parser (what runs when
# libhwloc-plugins is not installed).
for parser in 1 0; do
    with="HWLOC_LIBXML_IMPORT=$parser"
    run k40_$parser --topology "$topo/2socket-k40-mlx5.xml" \
        --gpu-busid 0000:84:00.0
    expect_rc k40_$parser 0
    expect k40_$parser "numa=1" "cpuset=0xff00ff00" "cpus=8-15,24-31" "nic=mlx5_0" \
        "nic_distance=2"
    run ties_$parser --topology "$topo/1socket-h100-nic-ties.xml" \
        --gpu-busid 0000:43:00.0 --local-rank 1 --local-size 2
    expect_rc ties_$parser 0
    expect ties_$parser "nic=mlx5_1" "nic_ties=2" "nic_distance=4" "bind=no"
    run nonic_$parser \
        --topology "$topo/1socket-nps2-4gpu-nonic.xml" --gpu-busid 0000:21:00.0
    expect_rc nonic_$parser 0
    expect nonic_$parser "numa=0" "cpus=0-3" "nic=none" "nic_distance=none" \
        "nccl_ib_hca=none"
    run dgx_$parser --topology "$topo/dgx-h100-like.xml" \
        --gpu-busid 0000:b9:00.0
    expect_rc dgx_$parser 0
    expect dgx_$parser "nic=mlx5_7" "numa=1"
done
with=""

# A bus id the machine does not have, or no bus at all: a clear error naming it.
run badbus --topology "$topo/dgx-h100-like.xml" --gpu-busid 0000:77:00.0
expect_rc badbus 1 "0000:77:00.0"
run badsyntax --topology "$topo/dgx-h100-like.xml" --gpu-busid gpu0
expect_rc badsyntax 1 "'gpu0' is not a PCI bus id"
run nobus --topology "$topo/dgx-h100-like.xml"
expect_rc nobus 2 "--gpu-busid"
run badrank --local-rank x
expect_rc badrank 2 "--local-rank 'x'"
run nofile --topology "$tmp/missing.xml" --gpu-busid 0000:95:00.0
expect_rc nofile 1 "cannot open topology XML"

# This machine, asking CUDA: a real answer with a GPU, else a clear CUDA error, never a crash.
run live
if [ "$rc" -eq 0 ]; then
    expect live "cuda_device=0"
    echo "ok: live (a CUDA device is present)"
else
    expect_rc live 1 "CUDA"
fi

run help --help
expect_rc help 0
grep -q "^usage: ncclx-info" "$tmp/help.out" || { echo "FAIL: --help"; fail=$((fail + 1)); }

# --env lists every variable with its default and current value.
with="NCCLX_DEBUG=INFO"
run env --env
with=""
expect_rc env 0
for var in NCCLX_DEBUG NCCLX_DEBUG_FILE NCCLX_BIND NCCLX_CUDA_DEVICE; do
    grep -q "^$var default=" "$tmp/env.out" ||
        { echo "FAIL: --env lacks $var"; fail=$((fail + 1)); }
done
grep -q "^NCCLX_DEBUG default=WARN current=INFO # " "$tmp/env.out" ||
    { echo "FAIL: --env NCCLX_DEBUG line:"; cat "$tmp/env.out"; fail=$((fail + 1)); }
grep -q "^NCCLX_BIND default=AUTO current=(unset) # " "$tmp/env.out" ||
    { echo "FAIL: --env NCCLX_BIND line:"; cat "$tmp/env.out"; fail=$((fail + 1)); }

# The GPU test machine's own export: one H200, one NUMA node, no RDMA NIC.
run h200 --topology "$topo/h200-1gpu-vm.xml" --gpu-busid 0000:00:06.0
expect_rc h200 0
expect h200 "gpu_busid=0000:00:06.0" "numa=0" "cpus=0-15" "nic=none" "nic_distance=none"

# This machine's topology round-trips: export it, then decide on the export.
run export --export-topology "$tmp/this-machine.xml"
expect_rc export 0
grep -q '<topology version=' "$tmp/this-machine.xml" 2>/dev/null ||
    { echo "FAIL: --export-topology wrote no hwloc XML"; fail=$((fail + 1)); }
run reread --topology "$tmp/this-machine.xml" --gpu-busid 0000:00:00.0
expect_rc reread 0

[ $fail -eq 0 ] && echo "all ncclx-info checks passed"
[ $fail -eq 0 ]
