#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# The library compiles against the nccl.h of the NCCL that configure found and checked
# (--with-nccl), not another one earlier on its include path: CUDA 13 toolkits may carry their
# own nccl.h in $CUDA_HOME/include, and a header of one NCCL with the library of another builds
# structs of the wrong layout.  Preprocesses nccl.h with the build's own include flags and
# compares its version with $NCCL_HOME/include/nccl.h's.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
want_h="$NCCL_HOME/include/nccl.h"
if [ ! -f "$want_h" ]; then
    echo "FAIL: configure's NCCL has no $want_h"
    exit 1
fi
printf 'ncclx_probe NCCL_MAJOR NCCL_MINOR NCCL_PATCH\n' >"$tmp/probe.h"
version() { # include flags...: the version nccl.h gives, as major.minor.patch
    printf '#include <nccl.h>\n#include "%s"\n' "$tmp/probe.h" >"$tmp/t.c"
    # shellcheck disable=SC2068
    $CC -E -P $@ "$tmp/t.c" 2>"$tmp/err" |
        sed -n 's/^ncclx_probe *\([0-9]*\) *\([0-9]*\) *\([0-9]*\).*/\1.\2.\3/p'
}
# shellcheck disable=SC2086
built=$(version $NCCLX_DEP_CPPFLAGS)
checked=$(version -isystem "$NCCL_HOME/include" $NCCLX_DEP_CPPFLAGS)
if [ -z "$built" ] || [ -z "$checked" ]; then
    echo "FAIL: cannot preprocess nccl.h with the build's flags: $(cat "$tmp/err")"
    exit 1
fi
if [ "$built" != "$checked" ]; then
    echo "FAIL: the build's include flags ($NCCLX_DEP_CPPFLAGS) find an nccl.h of NCCL $built," \
        "not $want_h (NCCL $checked) that configure checked"
    exit 1
fi
echo "ok: the build compiles against $want_h (NCCL $checked)"
