#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
# tests/gpu/test_m2n and test_m2n_faults again with their loopback teams shaped as emulated
# nodes (TEST_NODES, tests/gpu/m2n_harness.c): every pair whose ranks are on different nodes
# then moves its slices, votes and error bits through the emulated network, the way a trainer
# on some nodes refits a generator on others.  2 nodes for both programs, 4 nodes for the
# reshards (a team whose size the count does not divide keeps no shape).
set -eu
bin="$top_builddir/tests/gpu"
TEST_NODES=2 timeout 600 "$bin/test_m2n"
TEST_NODES=2 timeout 600 "$bin/test_m2n_faults"
TEST_NODES=4 exec timeout 600 "$bin/test_m2n"
