#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# PMIx bootstrap across nodes under `srun --mpi=pmix -N 2 --ntasks-per-node 2`, on a private
# Slurm cluster in which this one machine poses as two nodes (NCCLX_SLURM_NODES=2 of
# tests/launch/slurm_cluster.sh: two slurmd, each in a UTS namespace named after its node, so
# root with CAP_SYS_ADMIN), started here and always stopped: PMIx must say two nodes, node ids
# 0 and 1, two local ranks each.  Missing Slurm or munge is a failure naming the package, not a
# skip: CI installs them.
set -u
. "$(dirname "$0")/probe_lib.sh"

start_slurm_cluster 2

# Block distribution: ranks 0-1 on ncclx-n0, 2-3 on ncclx-n1.
run_bounded srun --mpi=pmix -N 2 --ntasks-per-node 2 --distribution=block --time=5 \
    --kill-on-bad-exit=1 "$probe" --size 4 --nodes 2
expect_pass "srun --mpi=pmix -N 2 --ntasks-per-node 2" 4

# ncclxInit on the same placement gets as far as the GPU (a CUDA error on a machine without
# one is a pass, as in run_srun.sh).
run_bounded srun --mpi=pmix -N 2 --ntasks-per-node 2 --distribution=block --time=5 \
    "$init_probe" 4
expect_pass "srun --mpi=pmix -N 2 --ntasks-per-node 2 ncclxInit" 4 init_probe

# Cyclic distribution (ranks 0,2 on ncclx-n0, 1,3 on ncclx-n1): every rank refuses the placement
# before touching a GPU, naming what it needs, instead of treating ranks of two hosts as
# load/store peers.
run_bounded srun --mpi=pmix -N 2 --ntasks-per-node 2 --distribution=cyclic --time=5 \
    "$init_probe" 4 --expect "unsupported:libncclx needs each node's ranks consecutive"
expect_pass "srun --mpi=pmix -N 2 --ntasks-per-node 2 --distribution=cyclic ncclxInit" 4 init_probe
