#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
# tests/gpu/test_ep_ht and test_ep_ht_late again with their loopback teams shaped as emulated nodes (TEST_NODES,
# tests/gpu/ep_ll_harness.c): every team of 2, 4 and 8 ranks then spans 2 (and, in the second
# run, 4) load/store domains, so routing, dispatch and combine cross the emulated network
# through the relays (docs/ep-ht.md), with every output checked bit for bit as on one domain.
# A team whose size the count does not divide (1 and 3 ranks) keeps no shape.  The MXFP8 cases
# are skipped there (refused across domains), and the direct-path expectations give way to the
# staged path's.  Skipped (77) where no GPU is visible.
set -eu
: "${top_builddir:?set top_builddir to the build directory (make check-gpu does)}"
# No GPU: nvidia-smi lists none, or (without nvidia-smi) no /dev/nvidia device exists.
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || { echo "SKIP: nvidia-smi -L lists no GPU"; exit 77; }
elif ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
    echo "SKIP: no GPU (no nvidia-smi, no /dev/nvidia device)"
    exit 77
fi
bin="$top_builddir/tests/gpu"
TEST_NODES=2 timeout 900 "$bin/test_ep_ht"
TEST_NODES=2 timeout 300 "$bin/test_ep_ht_late"
TEST_NODES=4 timeout 900 "$bin/test_ep_ht"
TEST_NODES=4 exec timeout 300 "$bin/test_ep_ht_late"
