#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# PMIx bootstrap under Open MPI's mpirun (its PMIx server) with 4 ranks, and as a singleton
# (a plain ./app with no PMIx server: rank 0 of 1); ncclxInit when one rank's plan differs or
# one rank fails alone (every rank must return the error); ranks that cannot reach mpirun's
# PMIx server must fail, not run as singletons; then a rank that misses a fence must turn into
# ncclxTimeout on the others after NCCLX_FENCE_TIMEOUT_S.
set -u
. "$(dirname "$0")/probe_lib.sh"

need_program mpirun openmpi-bin

(
    without_pmix_env
    run_bounded "$probe" --singleton --size 1 --nodes 1
    expect_pass "singleton" 1
    run_bounded "$init_probe" 1
    expect_pass "singleton ncclxInit" 1 init_probe
) || exit 1

run_bounded mpirun --allow-run-as-root --oversubscribe -n 4 "$init_probe" 4
expect_pass "mpirun -n 4 ncclxInit" 4 init_probe

# Rank 0 calls ncclxInit 2 s late: no other rank may return before (with PMIx 4.2 a rank that
# exits while a peer is still in PMIx_Init can leave that peer waiting forever, docs/init.md).
run_bounded mpirun --allow-run-as-root --oversubscribe -n 4 "$init_probe" 4 --odd-rank 0 \
    --odd-delay 2
expect_pass "mpirun -n 4 ncclxInit, rank 0 late" 4 init_probe

# Rank 2 plans another hidden size: every rank must fail, naming the group and the field,
# right after the bootstrap (before placement: no GPU is needed to see it).
run_bounded mpirun --allow-run-as-root --oversubscribe -n 4 "$init_probe" 4 --odd-rank 2 \
    --odd-hidden 4096 \
    --expect "invalid argument:plan.ep_groups[0]->hidden is 4096 on rank 2 but 256 on rank 0"
expect_pass "mpirun -n 4 ncclxInit, plans differ" 4 init_probe

# Rank 2 alone fails a step (a bad NCCLX_* value): every rank must return an error, none may be
# left waiting in the next collective.
run_bounded mpirun --allow-run-as-root --oversubscribe -n 4 "$init_probe" 4 --odd-rank 2 \
    --odd-env NCCLX_BIND=sideways --expect-odd "invalid argument:NCCLX_BIND='sideways'" \
    --expect "remote error:rank 2 failed at init step 'arguments' (invalid argument): NCCLX_BIND"
expect_pass "mpirun -n 4 ncclxInit, rank 2 fails alone" 4 init_probe

# PMIx unreachable under mpirun (its PMIX_* variables removed from the ranks): every rank must
# refuse to run as a singleton and name the launcher's variable.
run_bounded mpirun --allow-run-as-root --oversubscribe -n 2 \
    bash -c 'for v in ${!PMIX_@}; do unset "$v"; done; exec "$@"' no_pmix \
    "$init_probe" 2 --expect "PMIx error:OMPI_COMM_WORLD_SIZE=2 says a launcher started"
expect_pass "mpirun -n 2 without PMIx" 2 init_probe

run_bounded mpirun --allow-run-as-root --oversubscribe -n 4 "$probe" --size 4 --nodes 1
expect_pass "mpirun -n 4" 4

run_bounded env NCCLX_FENCE_TIMEOUT_S=2 mpirun --allow-run-as-root --oversubscribe -n 4 \
    -x NCCLX_FENCE_TIMEOUT_S "$probe" --size 4 --nodes 1 --straggler 2
expect_pass "mpirun -n 4, fence timeout" 4
