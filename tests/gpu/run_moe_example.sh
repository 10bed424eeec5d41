#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
# examples/moe_layer end to end: a loopback team of 4 ranks on one GPU, then a real 1-rank
# communicator (ncclxInit as a singleton); then examples/moe_layer_ht (HT) on a loopback team
# of 4.  Every rank must print PASS.
set -eu
example="$top_builddir/examples/moe_layer"
out=$(timeout 300 "$example" --loopback 4)
echo "$out"
test "$(echo "$out" | grep -c ': PASS$')" -eq 4
out=$(timeout 300 "$example" --comm)
echo "$out"
echo "$out" | grep -q '^rank 0 of 1: PASS$'
out=$(timeout 300 "$top_builddir/examples/moe_layer_ht" --loopback 4)
echo "$out"
test "$(echo "$out" | grep -c ': PASS$')" -eq 4
