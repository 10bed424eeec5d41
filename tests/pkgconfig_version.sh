#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# make install puts the archive, the headers and ncclx.pc in place, and examples/version.c
# builds with plain gcc from `pkg-config --static --cflags --libs ncclx` alone, and runs.
set -eu
dest="$top_builddir/tests/pkgconfig-install"
rm -rf "$dest"
$MAKE -C "$top_builddir" install DESTDIR="$dest" >"$dest.log" 2>&1 || {
    cat "$dest.log"; echo "FAIL: make install"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$top_builddir/ncclx.pc")
pcdir="$dest$(sed -n 's/^libdir=//p' "$top_builddir/ncclx.pc" | sed "s|\${exec_prefix}|$prefix|;s|\${prefix}|$prefix|")/pkgconfig"
test -f "$pcdir/ncclx.pc" || { echo "FAIL: ncclx.pc not installed in $pcdir"; exit 1; }
for f in "$dest$prefix/include/ncclx.h" "$dest$prefix/include/ncclx/version.h"; do
    test -f "$f" || { echo "FAIL: $f not installed"; exit 1; }
done
# Relocate the .pc to the staging directory: the only flags used are pkg-config's.
flags=$(PKG_CONFIG_PATH="$pcdir" $PKG_CONFIG --define-variable=prefix="$dest$prefix" \
        --static --cflags --libs ncclx)
echo "pkg-config --static --cflags --libs ncclx: $flags"
gcc -o "$dest/version" "$top_srcdir/examples/version.c" $flags
out=$("$dest/version")
echo "$out"
version=$(sed -n 's/^Version: //p' "$pcdir/ncclx.pc")
echo "$out" | grep -q "^libncclx $version " || { echo "FAIL: version mismatch"; exit 1; }
echo "ok: examples/version.c linked from pkg-config alone"
