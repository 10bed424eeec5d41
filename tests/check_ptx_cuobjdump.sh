#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# make check-gpu (where the toolkit has cuobjdump): cuobjdump lists PTX for the highest
# configured architecture and SASS for every configured one in libncclx.a, the same promise
# tests/check_ptx.sh checks in make check without cuobjdump.
set -eu
lib=$top_builddir/libncclx.a
cuobjdump=${CUDA_HOME:?CUDA_HOME not set}/bin/cuobjdump
ptx=$("$cuobjdump" --list-ptx "$lib") || { echo "FAIL: $cuobjdump --list-ptx $lib"; exit 1; }
elf=$("$cuobjdump" --list-elf "$lib") || { echo "FAIL: $cuobjdump --list-elf $lib"; exit 1; }
echo "$ptx"
echo "$elf"
echo "$ptx" | grep -q "sm_${CUDA_ARCH_PTX:?CUDA_ARCH_PTX not set}\([^0-9]\|$\)" \
    || { echo "FAIL: no PTX for compute_$CUDA_ARCH_PTX in $lib"; exit 1; }
for a in $(echo "${CUDA_ARCH:?CUDA_ARCH not set}" | tr ',' ' '); do
    echo "$elf" | grep -q "sm_$a\([^0-9]\|$\)" || { echo "FAIL: no SASS for sm_$a in $lib"; exit 1; }
done
echo "ok: cuobjdump lists PTX for compute_$CUDA_ARCH_PTX and SASS for sm_$CUDA_ARCH"
