#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# tools/source_id.sh, which names the source in the benches' headers: two trees of the same code
# get the same digest, with or without git; a changed byte, a renamed file or a new source file
# changes it; what a build writes into an in-tree build (tools/source_id.h, Makefile.in,
# include/ncclx/version.h) does not; with the build's manifest, a changed file is touched (one
# changed without a newer time named, and --strict then stops); a git work tree gives its
# commit, "+" once a tracked file differs from it, a tree outside git "git -".  Also this
# build's bench header line.
set -u
script="$top_srcdir/tools/source_id.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
id() { sh "$script" "$1"; }
digest() { id "$1" | sed -n 's/^git [^ ]* sources \([0-9a-f]\{12\}\)$/\1/p'; }

mkdir -p "$tmp/a/lib" "$tmp/a/kernels" "$tmp/a/include/ncclx" "$tmp/a/tools"
printf 'int f(void) { return 1; }\n' >"$tmp/a/lib/f.c"
printf '__global__ void k() {}\n' >"$tmp/a/kernels/k.cu"
printf 'AC_INIT([x], [1])\n' >"$tmp/a/configure.ac"
printf 'lib_LIBRARIES = x.a\n' >"$tmp/a/Makefile.am"
cp -R "$tmp/a" "$tmp/b"
d=$(digest "$tmp/a")
[ -n "$d" ] || no "no 'git - sources DIGEST' line: $(id "$tmp/a")"
[ "$(id "$tmp/a")" = "git - sources $d" ] || no "a tree outside git is not 'git -': $(id "$tmp/a")"
[ "$(digest "$tmp/b")" = "$d" ] || no "two copies of one tree differ"
# What a build writes in the tree does not count.
printf '#define NCCLX_SOURCE_ID "x"\n' >"$tmp/b/tools/source_id.h"
printf 'generated\n' >"$tmp/b/Makefile.in"
printf '#define NCCLX_VERSION 1\n' >"$tmp/b/include/ncclx/version.h"
printf 'obj\n' >"$tmp/b/lib/f.o"
[ "$(digest "$tmp/b")" = "$d" ] || no "files a build writes changed the digest"
# One byte, a rename, a new source: each changes it.
printf 'int f(void) { return 2; }\n' >"$tmp/b/lib/f.c"
[ "$(digest "$tmp/b")" != "$d" ] || no "a changed source kept the digest"
cp "$tmp/a/lib/f.c" "$tmp/b/lib/f.c"
[ "$(digest "$tmp/b")" = "$d" ] || no "the source put back did not give the digest back"
mv "$tmp/b/lib/f.c" "$tmp/b/lib/g.c"
[ "$(digest "$tmp/b")" != "$d" ] || no "a renamed source kept the digest"
mv "$tmp/b/lib/g.c" "$tmp/b/lib/f.c"
printf 'int g;\n' >"$tmp/b/kernels/g.cuh"
[ "$(digest "$tmp/b")" != "$d" ] || no "a new source kept the digest"
rm "$tmp/b/kernels/g.cuh"
# With a manifest: a file whose content changed but whose time is older than the previous make
# (as `git archive` of another commit leaves it) is touched, so that make rebuilds it; one
# changed with a newer time is left alone (make sees it); the manifest follows the tree.
id_m() { sh "$script" "$1" "$tmp/manifest" 2>"$tmp/err"; }
id_m "$tmp/a" >/dev/null || no "a first run with a manifest failed: $(cat "$tmp/err")"
[ "$(grep -c ' lib/f.c$' "$tmp/manifest")" -eq 1 ] || no "the manifest lacks lib/f.c: $(cat "$tmp/manifest")"
[ -s "$tmp/err" ] && no "a first run with a manifest said something: $(cat "$tmp/err")"
touch -t 200101010000 "$tmp/manifest" # the previous make, in 2001
printf 'int f(void) { return 3; }\n' >"$tmp/a/lib/f.c"
touch -t 200001010000 "$tmp/a/lib/f.c"
printf '__global__ void k2() {}\n' >"$tmp/a/kernels/k.cu"
touch -t 200001010000 "$tmp/a/Makefile.am" # unchanged, old: not touched
id_m "$tmp/a" >/dev/null || no "a run with a manifest failed: $(cat "$tmp/err")"
[ "$tmp/a/lib/f.c" -nt "$tmp/a/Makefile.am" ] || no "an old-dated changed source was not touched"
grep -q 'lib/f.c changed without a newer time: touched' "$tmp/err" ||
    no "the touched source is not named: $(cat "$tmp/err")"
grep -q 'kernels/k.cu' "$tmp/err" && no "a source with a newer time was named: $(cat "$tmp/err")"
grep -q 'Makefile.am' "$tmp/err" && no "an unchanged file was touched: $(cat "$tmp/err")"
[ "$tmp/a/lib/f.c" -nt "$tmp/a/Makefile.am" ] || no "Makefile.am, unchanged, was touched"
id_m "$tmp/a" >/dev/null
[ -s "$tmp/err" ] && no "a second run over the same tree touched again: $(cat "$tmp/err")"
# --strict (a make of single targets, which has read the times already): exit 3 after touching
# such a file, 0 when every change has a newer time.
touch -t 200101010000 "$tmp/manifest"
cp "$tmp/b/lib/f.c" "$tmp/a/lib/f.c"
touch -t 200001010000 "$tmp/a/lib/f.c"
sh "$script" --strict "$tmp/a" "$tmp/manifest" >/dev/null 2>"$tmp/err"
[ $? -eq 3 ] || no "--strict did not stop after touching a stale source: $(cat "$tmp/err")"
grep -q 'run make again' "$tmp/err" || no "--strict does not say to run make again: $(cat "$tmp/err")"
cp "$tmp/b/kernels/k.cu" "$tmp/a/kernels/k.cu"
sh "$script" --strict "$tmp/a" "$tmp/manifest" >/dev/null 2>"$tmp/err" ||
    no "--strict stopped over a change with a newer time: $(cat "$tmp/err")"
[ "$(digest "$tmp/a")" = "$d" ] || no "the tree put back does not give its digest back"
# examples, tests and m4 count too (make compiles them; m4 holds the compiler's flags).
mkdir -p "$tmp/b/tests" "$tmp/b/m4"
printf 'int t;\n' >"$tmp/b/tests/t.c"
[ "$(digest "$tmp/b")" != "$d" ] || no "a test source kept the digest"
rm "$tmp/b/tests/t.c"
printf 'dnl flags\n' >"$tmp/b/m4/x.m4"
[ "$(digest "$tmp/b")" != "$d" ] || no "an m4 file kept the digest"
rm "$tmp/b/m4/x.m4"
# A git work tree: its commit, then "+" once a tracked file changes; the digest as without git.
if command -v git >/dev/null 2>&1; then
    (cd "$tmp/b" && git init -q && git add lib kernels configure.ac Makefile.am &&
        git -c user.name=t -c user.email=t@t -c commit.gpgsign=false -c core.hooksPath=/dev/null \
            commit -qm t) || no "git init failed"
    rev=$(cd "$tmp/b" && git rev-parse --short=12 HEAD)
    [ "$(id "$tmp/b")" = "git $rev sources $d" ] || no "a clean work tree: $(id "$tmp/b"), expected git $rev"
    printf '/* x */\n' >>"$tmp/b/lib/f.c"
    case "$(id "$tmp/b")" in
        "git $rev+ sources "*) ;;
        *) no "a changed work tree is not '$rev+': $(id "$tmp/b")" ;;
    esac
fi
# This build's bench names its source in its header (the line tools/bench_ab.sh reads).
here=$(id "$top_srcdir")
grep -qF "#define NCCLX_SOURCE_ID \"$here\"" tools/source_id.h 2>/dev/null ||
    no "tools/source_id.h does not name this tree's source ($here): $(cat tools/source_id.h 2>&1)"

[ "$fail" -eq 0 ] && echo "PASS: tools/source_id.sh" || echo "$fail failure(s)"
[ "$fail" -eq 0 ]
