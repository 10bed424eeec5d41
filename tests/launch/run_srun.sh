#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# PMIx bootstrap under `srun --mpi=pmix -n 4` on a private one-node Slurm cluster that this
# script starts (tests/launch/slurm_cluster.sh) and always stops, with ncclxInit when one rank's
# plan differs or one rank fails alone; tasks of `srun --mpi=none` must refuse to run as
# singletons; then a rank that misses a fence must turn into ncclxTimeout on the others after
# NCCLX_FENCE_TIMEOUT_S.  Missing Slurm or munge is a failure naming the package, not a skip:
# CI installs them.
set -u
. "$(dirname "$0")/probe_lib.sh"

start_slurm_cluster 1

run_bounded srun --mpi=pmix -n 4 -N 1 --time=5 --kill-on-bad-exit=1 "$probe" --size 4 --nodes 1
expect_pass "srun --mpi=pmix -n 4" 4

run_bounded srun --mpi=pmix -n 4 -N 1 --time=5 --kill-on-bad-exit=1 "$init_probe" 4
expect_pass "srun --mpi=pmix -n 4 ncclxInit" 4 init_probe

run_bounded srun --mpi=pmix -n 4 -N 1 --time=5 "$init_probe" 4 --odd-rank 0 --odd-delay 2
expect_pass "srun --mpi=pmix -n 4 ncclxInit, rank 0 late" 4 init_probe

run_bounded srun --mpi=pmix -n 4 -N 1 --time=5 "$init_probe" 4 --odd-rank 2 --odd-hidden 4096 \
    --expect "invalid argument:plan.ep_groups[0]->hidden is 4096 on rank 2 but 256 on rank 0"
expect_pass "srun --mpi=pmix -n 4 ncclxInit, plans differ" 4 init_probe

run_bounded srun --mpi=pmix -n 4 -N 1 --time=5 "$init_probe" 4 --odd-rank 2 \
    --odd-env NCCLX_BIND=sideways --expect-odd "invalid argument:NCCLX_BIND='sideways'" \
    --expect "remote error:rank 2 failed at init step 'arguments' (invalid argument): NCCLX_BIND"
expect_pass "srun --mpi=pmix -n 4 ncclxInit, rank 2 fails alone" 4 init_probe

# Tasks started without PMIx (--mpi=none) must fail naming Slurm's task count, not run as
# singletons on GPU 0.
run_bounded srun --mpi=none -n 2 -N 1 --time=5 "$init_probe" 2 \
    --expect "PMIx error:SLURM_STEP_NUM_TASKS=2 says a launcher started"
expect_pass "srun --mpi=none -n 2 ncclxInit" 2 init_probe

run_bounded env NCCLX_FENCE_TIMEOUT_S=2 srun --mpi=pmix -n 4 -N 1 --time=5 \
    --kill-on-bad-exit=1 "$probe" --size 4 --nodes 1 --straggler 2
expect_pass "srun --mpi=pmix -n 4, fence timeout" 4
