#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Every installed header compiles on its own, as C11 and as C++, without warnings: users may
# include any of them first.
set -u
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
inc="-I$top_builddir/include -I$top_srcdir/include"
for h in "$top_srcdir"/include/ncclx.h "$top_srcdir"/include/ncclx/*.h \
         "$top_builddir"/include/ncclx/version.h; do
    name=${h#"$top_srcdir"/include/}
    name=${name#"$top_builddir"/include/}
    printf '#include <%s>\n#include <%s>\nint ncclx_header_check;\n' "$name" "$name" > "$tmp/t.c"
    cp "$tmp/t.c" "$tmp/t.cc"
    if ! $CC -std=c11 -Wall -Wextra -Werror -pedantic $inc -c "$tmp/t.c" -o "$tmp/t.o"; then
        echo "FAIL: $name does not compile alone as C11"; fail=$((fail + 1))
    elif ! $CXX -std=c++11 -Wall -Wextra -Werror $inc -c "$tmp/t.cc" -o "$tmp/t.o"; then
        echo "FAIL: $name does not compile alone as C++"; fail=$((fail + 1))
    else
        echo "ok: $name"
    fi
done
# No header may define a symbol outside the ncclx/NCCLX namespace.
bad=$(grep -hoE '^#define [A-Za-z_][A-Za-z0-9_]*' "$top_srcdir"/include/ncclx.h \
      "$top_srcdir"/include/ncclx/*.h | awk '{print $2}' | grep -v -E '^_?NCCLX' || true)
if [ -n "$bad" ]; then
    echo "FAIL: macros outside the NCCLX_ prefix: $bad"; fail=$((fail + 1))
fi
[ $fail -eq 0 ]
