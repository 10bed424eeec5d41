#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# libncclx.a's kernels carry SASS for every architecture configure was asked for and the PTX
# of the highest one (forward compatibility: the driver JIT-compiles that PTX on newer GPUs).
# The CUDA toolkit of the CPU CI machine has no cuobjdump, so this reads the fat binaries
# itself with binutils and coreutils only: `ar x` the archive, `objcopy --only-section
# =.nv_fatbin` each object, then walk the fatbin with od.  A fatbin is a 16-byte header
# (magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries) followed by entries;
# each entry starts with u16 kind (1 = PTX, 2 = ELF/SASS), u32 header size at byte 4, u64
# payload size at byte 8 and u32 architecture at byte 28.  The PTX payload is usually
# compressed, so looking for PTX text (".version") in it would miss it.
# (make check-gpu repeats the check with cuobjdump --list-ptx where the toolkit has it.)
set -eu
lib=${1:-$top_builddir/libncclx.a}
want_sass=$(echo "${CUDA_ARCH:?CUDA_ARCH not set}" | tr ',' ' ')
want_ptx=${CUDA_ARCH_PTX:?CUDA_ARCH_PTX not set}
test -f "$lib" || { echo "FAIL: $lib not found"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ncclx-ptx.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && ar x "$lib") || { echo "FAIL: ar x $lib"; exit 1; }

u() { # u BYTES OFFSET FILE: unsigned little-endian integer (the host order on x86-64/aarch64)
    od -A n -t "u$1" -j "$2" -N "$1" "$3" | tr -d ' '
}

objs=0
failed=0
for o in "$work"/*.o; do
    fb="$o.fatbin"
    objcopy -O binary --only-section=.nv_fatbin "$o" "$fb" 2>/dev/null || continue
    size=$(wc -c <"$fb")
    test "$size" -gt 0 || continue
    objs=$((objs + 1))
    found=""
    off=0
    while [ $((off + 16)) -le "$size" ]; do
        magic=$(u 4 "$off" "$fb")
        if [ "$magic" != 3126193488 ]; then # 0xBA55ED50
            off=$((off + 8)) # padding between the fatbins of one section
            continue
        fi
        hsize=$(u 2 $((off + 6)) "$fb")
        fsize=$(u 8 $((off + 8)) "$fb")
        e=$((off + hsize))
        end=$((e + fsize))
        while [ "$e" -lt "$end" ]; do
            kind=$(u 2 "$e" "$fb")
            ehsize=$(u 4 $((e + 4)) "$fb")
            psize=$(u 8 $((e + 8)) "$fb")
            arch=$(u 4 $((e + 28)) "$fb")
            case $kind in
            1) found="$found ptx_$arch" ;;
            2) found="$found sass_$arch" ;;
            esac
            test "$ehsize" -gt 0 || { echo "FAIL: $(basename "$o"): bad fatbin entry"; exit 1; }
            e=$((e + ehsize + psize))
        done
        off=$end
    done
    missing=""
    for a in $want_sass; do
        case " $found " in *" sass_$a "*) ;; *) missing="$missing sm_$a(SASS)" ;; esac
    done
    case " $found " in *" ptx_$want_ptx "*) ;; *) missing="$missing compute_$want_ptx(PTX)" ;; esac
    if [ -n "$missing" ]; then
        echo "FAIL: $(basename "$o") lacks$missing; it holds:${found:- nothing}"
        failed=$((failed + 1))
    else
        echo "ok: $(basename "$o"):$found"
    fi
done
test "$objs" -gt 0 || { echo "FAIL: no object in $lib has a .nv_fatbin section"; exit 1; }
test "$failed" -eq 0 || exit 1
echo "ok: $objs kernel objects carry SASS for $want_sass and PTX for compute_$want_ptx"
