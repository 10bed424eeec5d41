#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# source_id.sh: names the source a build is made from, for the benches' headers (docs/
# performance.md: a row says what it timed).  Prints one line:
#   git REV[+] sources DIGEST
# REV: the commit of SRCDIR's git work tree, "+" when a tracked file differs from it ("git -"
# outside git: an archive, a copied tree); DIGEST: the first 12 hex digits of a SHA-256 over the
# paths and contents of the files a build compiles (lib, kernels, include, pmix, tools, the
# build files), so that two trees of the same code, with or without git, name it alike.
#
# With MANIFEST (the build's record of each file's hash at its previous make): a file whose
# content changed since then but whose time did not move past that make (a tree replaced by
# `git archive` of another commit keeps the commits' times) is touched, so that make rebuilds
# what depends on it instead of keeping objects of the old code under the new name; the
# manifest is then rewritten.
#
# Usage: tools/source_id.sh SRCDIR [MANIFEST]
set -eu
src=${1:?usage: source_id.sh SRCDIR [MANIFEST]}
manifest=${2:-}
case "$manifest" in
    "" | /*) ;;
    *) manifest=$(pwd)/$manifest ;;
esac
cd "$src"
rev=-
if command -v git >/dev/null 2>&1 && git rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
    [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
    rev=$(git rev-parse --short=12 HEAD 2>/dev/null || echo -)
    if [ "$rev" != - ] && ! git diff --quiet HEAD -- 2>/dev/null; then
        rev="$rev+"
    fi
fi
# Not what a build writes into the tree (an in-tree build; Makefile.in, which autogen.sh writes
# and whose text depends on the Automake version): the digest is the code's.
list=$(find lib kernels include pmix tools configure.ac Makefile.am ncclx.pc.in -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h.in' \
    -o -name '*.pc.in' -o -name '*.am' -o -name '*.ac' \) \
    ! -path include/ncclx/version.h ! -path tools/source_id.h 2>/dev/null | LC_ALL=C sort |
    while IFS= read -r f; do
        h=$(sha256sum <"$f" | cut -c1-64)
        printf '%s %s\n' "$h" "$f"
    done)
if [ -n "$manifest" ]; then
    if [ -f "$manifest" ]; then
        printf '%s\n' "$list" |
            awk 'NR == FNR { was[$2] = $1; next } ($2 in was) && was[$2] != $1 { print $2 }' \
                "$manifest" - | while IFS= read -r f; do
            if [ ! "$f" -nt "$manifest" ]; then
                if touch "$f" 2>/dev/null; then
                    echo "source_id.sh: $f changed without a newer time: touched, to be rebuilt" >&2
                else
                    echo "source_id.sh: warning: $f changed without a newer time and cannot be touched: objects of it may be stale" >&2
                fi
            fi
        done
    fi
    printf '%s\n' "$list" >"$manifest.tmp" && mv "$manifest.tmp" "$manifest"
fi
digest=$(printf '%s\n' "$list" | sha256sum | cut -c1-12)
printf 'git %s sources %s\n' "$rev" "$digest"
