#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Dependencies flow one way (docs/architecture.md): lib/core <- lib/plan <- lib/context <-
# {lib/ep, lib/m2n} <- lib/rooms.c (the list of rooms); pmix/ sees only lib/core, and
# lib/context sees pmix/; lib/ may include kernels/ headers (plain structs and launchers),
# kernels/ never includes lib/; a kernels/ folder sees kernels/common.  Every #include "..." of lib/, kernels/ and pmix/ is resolved by name to
# its folder and checked.  An include against the order fails, unless it is listed in
# tests/layers_allowed.txt (today's debt, each with its reason); a listed include that is gone
# fails too, so the list only shrinks.  Prints each finding; exits 1 on any.
set -uo pipefail
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src" || exit 1
allowed=tests/layers_allowed.txt
status=0

rank() { # rank FOLDER -> a number; folders of one rank may not include each other
    case $1 in
        lib/core) echo 0 ;; lib/plan) echo 1 ;; lib/context) echo 2 ;;
        lib/ep | lib/m2n) echo 3 ;; lib) echo 4 ;; *) echo -1 ;;
    esac
}

ok() { # ok FROM_FOLDER TO_FOLDER
    local a=$1 b=$2
    [ "$a" = "$b" ] && return 0
    case $a:$b in
        lib/*:kernels/*) return 0 ;;         # plain structs and extern "C" launchers
        kernels/*:kernels/common) return 0 ;; # what the kernels share
        pmix:lib/core) return 0 ;;
        lib/context:pmix) return 0 ;;
        kernels/*:lib/* | kernels/*:pmix | pmix:*) return 1 ;;
    esac
    local ra rb
    ra=$(rank "$a")
    rb=$(rank "$b")
    [ "$ra" -ge 0 ] && [ "$rb" -ge 0 ] && [ "$rb" -lt "$ra" ]
}

# Every header of the three trees, by name -> its folder.
declare -A folder
while read -r f; do
    name=$(basename "$f")
    [ -n "${folder[$name]-}" ] && { echo "FAIL: two headers named $name"; status=1; }
    folder[$name]=$(dirname "$f")
done < <(find lib kernels pmix -name '*.h' -o -name '*.cuh' | sort)

found=()
while read -r f; do
    from=$(dirname "$f")
    while read -r inc; do
        name=$(basename "$inc")
        to=${folder[$name]-}
        [ -n "$to" ] || continue # a system or public header
        ok "$from" "$to" && continue
        found+=("$f -> $to/$name")
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done < <(find lib kernels pmix -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' | sort)

listed=$(sed -e 's/[[:space:]]*#.*//' -e '/^[[:space:]]*$/d' "$allowed")
for v in "${found[@]}"; do
    if ! grep -qxF "$v" <<<"$listed"; then
        echo "FAIL: $v goes against the layers (docs/architecture.md)"
        status=1
    fi
done
while read -r v; do
    [ -n "$v" ] || continue
    if ! printf '%s\n' "${found[@]}" | grep -qxF "$v"; then
        echo "FAIL: $allowed lists '$v', which is gone: take it off the list"
        status=1
    fi
done <<<"$listed"
[ $status -eq 0 ] && echo "ok: includes follow the layers (${#found[@]} listed exceptions)"
exit $status
