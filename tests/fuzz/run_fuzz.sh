#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Builds the fuzz targets (tests/fuzz.am) with clang, libFuzzer, ASan and UBSan in a build
# directory of their own (the library's host code compiled again with clang's coverage
# instrumentation), then fuzzes each for NCCLX_FUZZ_SECONDS seconds from its seed corpus.
# Fails when a target crashes, breaks a property or leaks; the crashing input is printed
# (hex) with the report, and kept under <build>/fuzz-artifacts/.  No GPU is used.
#
#   tests/fuzz/run_fuzz.sh [BUILD_DIR]     (default: build-fuzz/ in the source tree)
#
# NCCLX_FUZZ_SECONDS   seconds per target (default 60)
# NCCLX_FUZZ_TARGETS   targets to run (default: plan env handle_import m2n)
# NCCLX_FUZZ_CUDA_HOME the CUDA toolkit for configure (default $CUDA_HOME or /usr/local/cuda)
# NCCLX_FUZZ_CC        the compiler (default clang: Debian's clang 14 and libclang-rt-dev)
# NCCLX_FUZZ_KERNELS   a configured build directory whose kernels/*/*.o (nvcc, the same for any C
#                      compiler) are copied instead of compiled again (CI: build-ci)
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-fuzz}
seconds=${NCCLX_FUZZ_SECONDS:-60}
targets=${NCCLX_FUZZ_TARGETS:-"plan env handle_import m2n"}
cuda=${NCCLX_FUZZ_CUDA_HOME:-${CUDA_HOME:-/usr/local/cuda}}
cc=${NCCLX_FUZZ_CC:-clang}
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"

if ! command -v "$cc" >/dev/null; then
    echo "run_fuzz: no $cc (Debian: apt-get install clang libclang-rt-dev)"; exit 1
fi
if [ ! -x "$src/configure" ]; then
    echo "run_fuzz: run ./autogen.sh in $src first"; exit 1
fi
mkdir -p "$build" && cd "$build" || exit 1
build=$(pwd)
if [ ! -f config.status ]; then
    # No -Werror: clang warns about things gcc does not; the normal build enforces warnings.
    if ! "$src/configure" --with-cuda="$cuda" CC="$cc" \
        CFLAGS="-O1 -g -fno-omit-frame-pointer $san -fsanitize=fuzzer-no-link" \
        LDFLAGS="$san" >configure.log 2>&1; then
        tail -40 configure.log; echo "run_fuzz: configure failed (log: $build/configure.log)"
        exit 1
    fi
fi
if [ -n "${NCCLX_FUZZ_KERNELS:-}" ]; then
    # kernels/<folder>/*.o, each to the same place here
    (cd "$NCCLX_FUZZ_KERNELS" && find kernels -name '*.o') | while read -r o; do
        [ -f "$o" ] || { mkdir -p "$(dirname "$o")" && cp -p "$NCCLX_FUZZ_KERNELS/$o" "$o"; }
    done
fi
bins=
for t in $targets; do bins="$bins tests/fuzz/fuzz_$t"; done
if ! make -j2 libncclx.a >build.log 2>&1 ||
    ! make -j2 NCCLX_FUZZ_MODE_DEFS=-DNCCLX_FUZZ_LIBFUZZER NCCLX_FUZZ_MODE_LINK=-fsanitize=fuzzer \
        $bins >>build.log 2>&1; then
    tail -40 build.log; echo "run_fuzz: build failed (log: $build/build.log)"; exit 1
fi

failed=0
for t in $targets; do
    work=fuzz-corpus/$t
    log=fuzz-$t.log
    rm -rf "fuzz-artifacts/$t" && mkdir -p "$work" "fuzz-artifacts/$t"
    # New inputs go to the first directory (kept between runs); the seeds are only read.
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "./tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
        -max_len=4096 -print_final_stats=1 -artifact_prefix="fuzz-artifacts/$t/" \
        "$work" "$src/tests/fuzz/corpus/$t" </dev/null >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    if [ $rc -eq 0 ]; then
        echo "fuzz_$t: ${runs:-?} inputs in ${seconds} s, no failure"
        continue
    fi
    failed=$((failed + 1))
    echo "FAIL: fuzz_$t (exit $rc; log: $build/$log); its end:"
    tail -60 "$log"
    for a in "fuzz-artifacts/$t"/*; do
        [ -f "$a" ] || continue
        echo "--- failing input $build/$a ($(wc -c <"$a") bytes, hex); save it as"
        echo "--- tests/fuzz/corpus/$t/regress-<name> once fixed:"
        od -An -tx1 -v "$a"
    done
done
echo "run_fuzz: $failed of $(echo $targets | wc -w) target(s) failed"
[ $failed -eq 0 ]
