#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
# tests/gpu/test_m2n and test_m2n_faults again with NCCLX_M2N_PATH=STAGED: on one GPU the default path copies tile
# to tile, so this is the run that covers the staging ring (the path every multi-GPU team
# takes) on a machine of one GPU.
set -eu
NCCLX_M2N_PATH=STAGED timeout 600 "$top_builddir/tests/gpu/test_m2n"
NCCLX_M2N_PATH=STAGED exec timeout 600 "$top_builddir/tests/gpu/test_m2n_faults"
