#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
# The active-mask programs again with their loopback teams shaped as emulated nodes
# (TEST_NODES, tests/gpu/ep_ll_harness.c): a rank that dies, a straggler that resumes and a
# lone clean then have peers on other nodes, reached only through the emulated network.  2
# nodes for both programs, 4 nodes for the mask program (its teams of 4 and 8 ranks; a team
# whose size the count does not divide keeps no shape).
set -eu
bin="$top_builddir/tests/gpu"
TEST_NODES=2 timeout 600 "$bin/test_ep_ll_mask"
TEST_NODES=2 timeout 600 "$bin/test_ep_ll_straggler"
TEST_NODES=4 exec timeout 600 "$bin/test_ep_ll_mask"
