#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# source_id.sh: names the source a build is made from, for the benches' headers (docs/
# performance.md: a row says what it timed).  Prints one line:
#   git REV[+] sources DIGEST
# REV: the commit of SRCDIR's git work tree, "+" when a tracked file differs from it ("git -"
# outside git: an archive, a copied tree; "git ?" where git refuses the tree); DIGEST: the first
# 12 hex digits of a SHA-256 over the paths and contents of the files the build compiles (lib,
# kernels, include, pmix, tools, examples, tests, m4 and the build files), so that two trees of
# the same code, with or without git, name it alike ("unknown" without sha256sum).
#
# With MANIFEST (the build folder's record of each file's hash at its previous make): every file
# whose content changed since then is touched, so that make rebuilds what depends on it even
# when its time did not move past the objects' (a tree replaced by `git archive` of another
# commit keeps the commits' times: make alone would keep objects of the old code under the new
# name); such a file is named on stderr.  The manifest is then rewritten.  --strict: exit 3
# after touching such a file (the make that runs this one has read the times already: a make
# of a single target must be run again).
#
# Usage: tools/source_id.sh [--strict] SRCDIR [MANIFEST]
set -eu
strict=0
if [ "${1:-}" = --strict ]; then
    strict=1
    shift
fi
src=${1:?usage: source_id.sh [--strict] SRCDIR [MANIFEST]}
manifest=${2:-}
case "$manifest" in
    "" | /*) ;;
    *) manifest=$(pwd)/$manifest ;;
esac
cd "$src"
here=$(pwd -P)
rev=-
if [ -e .git ] && command -v git >/dev/null 2>&1; then
    # A tree owned by another user (make install as root) is refused by git unless trusted.
    g() { git -c safe.directory="$here" "$@"; }
    if [ "$(g rev-parse --show-toplevel 2>/dev/null)" = "$here" ]; then
        rev=$(g rev-parse --short=12 HEAD 2>/dev/null || echo '?')
        if [ "$rev" != '?' ] && ! g diff --quiet HEAD -- 2>/dev/null; then
            rev="$rev+"
        fi
    else
        rev='?'
        echo "source_id.sh: warning: git does not take $here as its work tree: no commit named" >&2
    fi
fi
if ! command -v sha256sum >/dev/null 2>&1; then
    echo "source_id.sh: warning: no sha256sum: the sources are not named" >&2
    printf 'git %s sources unknown\n' "$rev"
    exit 0
fi
# Not what a build writes into the tree (an in-tree build; Makefile.in, which autogen.sh writes
# and whose text depends on the Automake version): the digest is the code's.
list=$(find lib kernels include pmix tools examples tests m4 configure.ac Makefile.am \
    ncclx.pc.in -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \
    -o -name '*.h.in' -o -name '*.pc.in' -o -name '*.am' -o -name '*.ac' -o -name '*.m4' \) \
    ! -path include/ncclx/version.h ! -path tools/source_id.h 2>/dev/null | LC_ALL=C sort |
    tr '\n' '\0' | xargs -0 sha256sum)
touched=0
if [ -n "$manifest" ]; then
    if [ -f "$manifest" ]; then
        # sha256sum's lines: 64 hex digits, two characters, the path (spaces and all).
        changed=$(printf '%s\n' "$list" |
            awk 'NR == FNR { was[substr($0, 67)] = substr($0, 1, 64); next }
                 { f = substr($0, 67) } (f in was) && was[f] != substr($0, 1, 64) { print f }' \
                "$manifest" -)
        if [ -n "$changed" ]; then
            while IFS= read -r f; do
                # A time that moved past the previous make's: make sees it anyway, say nothing.
                stale=0
                [ -n "$(find "$f" -newer "$manifest" 2>/dev/null)" ] || stale=1
                if touch "$f" 2>/dev/null; then
                    if [ "$stale" = 1 ]; then
                        echo "source_id.sh: $f changed without a newer time: touched, to be rebuilt" >&2
                        touched=1
                    fi
                elif [ "$stale" = 1 ]; then
                    echo "source_id.sh: warning: $f changed without a newer time and cannot be touched: objects of it may be stale" >&2
                fi
            done <<EOF_CHANGED
$changed
EOF_CHANGED
        fi
    fi
    printf '%s\n' "$list" >"$manifest.tmp" && mv "$manifest.tmp" "$manifest"
fi
digest=$(printf '%s\n' "$list" | sha256sum | cut -c1-12)
printf 'git %s sources %s\n' "$rev" "$digest"
if [ "$strict" = 1 ] && [ "$touched" = 1 ]; then
    echo "source_id.sh: sources touched after this make read their times: run make again" >&2
    exit 3
fi
