#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# make install puts the archive, the headers and ncclx.pc in place, and examples/version.c
# builds with plain gcc from `pkg-config --static --cflags --libs ncclx` alone, and runs.
# examples/moe_layer.c (which creates CUDA streams, so includes cuda_runtime_api.h) builds the
# same way: the Cflags carry the CUDA include directory.  It needs a GPU to run, so it is only
# linked here (tests/gpu/run_moe_example.sh runs it in make check-gpu).
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
case " $flags " in *" -I${CUDA_HOME:?CUDA_HOME not set}/include "*) ;; *)
    echo "FAIL: pkg-config --cflags ncclx lacks -I$CUDA_HOME/include"; exit 1 ;; esac
gcc -o "$dest/moe_layer" "$top_srcdir/examples/moe_layer.c" $flags \
    || { echo "FAIL: examples/moe_layer.c does not build from pkg-config alone"; exit 1; }
test -x "$dest/moe_layer" || { echo "FAIL: no $dest/moe_layer"; exit 1; }
echo "ok: examples/moe_layer.c linked from pkg-config alone"
