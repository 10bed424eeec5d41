#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
# The GPU init tests again as rank 0 of a 1-process mpirun job (real PMIx server).
set -eu
exec timeout 300 mpirun --allow-run-as-root --oversubscribe -n 1 \
    "$top_builddir/tests/gpu/test_init"
