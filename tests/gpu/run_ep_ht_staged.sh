#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
# tests/gpu/test_ep_ht and test_ep_ht_late again with NCCLX_EP_HT_PATH=STAGED: on one GPU the default path pushes
# rows straight into the caller's outputs and reads the caller's expert outputs in place, so
# this is the run that covers the group's rows (the path every multi-GPU team takes) on a
# machine of one GPU.
set -eu
NCCLX_EP_HT_PATH=STAGED timeout 900 "$top_builddir/tests/gpu/test_ep_ht"
NCCLX_EP_HT_PATH=STAGED exec timeout 300 "$top_builddir/tests/gpu/test_ep_ht_late"
