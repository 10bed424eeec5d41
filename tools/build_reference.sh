#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# build_reference.sh: build NVIDIA's reference NCCL (with contrib/nccl_ep and
# contrib/nccl_m2n) beside libncclx, so that their benchmarks can be run on the
# same GPU machine as ours.
#
# Usage: tools/build_reference.sh NCCL_SOURCE_TREE BUILD_DIR [-j N]
#                                 [--minimal-kernels | --only-funcs PATTERN]
#                                 [--no-cupti] [--strip]
#
#   NCCL_SOURCE_TREE  an unpacked NCCL source tree (e.g. 2.30.7, from
#                     `git archive`); it is only read, never modified.
#   BUILD_DIR         everything is written here: lib/, include/, bin/,
#                     test/nccl_ep/, obj/, logs/ and env.sh.
#   -j N              parallel jobs (default: number of CPUs).
#   --minimal-kernels build only the NCCL collective kernels that nccl_ep and
#                     nccl_m2n call (AllGather, AllReduce Sum int32, SendRecv).
#                     Faster, but every other collective of this libnccl then
#                     silently runs a no-op kernel: use it only for ep/m2n.
#   --only-funcs P    pass P as NCCL's ONLY_FUNCS (see src/device/generate.py).
#   --no-cupti        build ep_bench without CUPTI kernel timing.
#   --strip           strip host debug info from the installed libraries and
#                     binaries (device code is kept) to make them smaller.
#
# Environment: CUDA_HOME (else taken from nvcc in PATH, else /usr/local/cuda),
# MPI_HOME (else found through mpicc), CXX (default g++), NVCC_GENCODE
# (default sm_90 only).
#
# The script works offline and does not touch libncclx's own build: it only
# runs the upstream Makefiles with extra variables on their command lines.

set -euo pipefail

prog=${0##*/}

die() {
    printf '%s: error: %s\n' "$prog" "$*" >&2
    exit 1
}

note() {
    printf '%s: %s\n' "$prog" "$*"
}

usage() {
    sed -n '5,31p' "$0" | sed 's/^# \{0,1\}//'
}

# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------
jobs=""
only_funcs=""
use_cupti=1
do_strip=0
positional=()
while (($#)); do
    case "$1" in
        -h | --help)
            usage
            exit 0
            ;;
        -j)
            (($# >= 2)) || die "-j needs a number"
            jobs=$2
            shift 2
            ;;
        -j*)
            jobs=${1#-j}
            shift
            ;;
        --minimal-kernels)
            # nccl_ep calls ncclAllGather (uint8) and ncclAllReduce (int32 sum, as
            # a barrier); nccl_m2n calls no NCCL collective. SendRecv is kept since
            # it is NCCL's generic point-to-point kernel. On a 1-rank communicator
            # NCCL does not even launch these (it copies locally).
            only_funcs='AllGather * *|AllReduce Sum (i32|u32) * *|SendRecv'
            shift
            ;;
        --only-funcs)
            (($# >= 2)) || die "--only-funcs needs a pattern"
            only_funcs=$2
            shift 2
            ;;
        --no-cupti)
            use_cupti=0
            shift
            ;;
        --strip)
            do_strip=1
            shift
            ;;
        --)
            shift
            positional+=("$@")
            break
            ;;
        -*)
            die "unknown option '$1' (try --help)"
            ;;
        *)
            positional+=("$1")
            shift
            ;;
    esac
done

((${#positional[@]} == 2)) || {
    usage >&2
    exit 2
}

if [[ -z $jobs ]]; then
    jobs=$(nproc 2>/dev/null || echo 1)
fi
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "-j wants a positive integer, got '$jobs'"

[[ -d ${positional[0]} ]] || die "NCCL source tree '${positional[0]}' is not a directory"
src=$(cd "${positional[0]}" && pwd -P)
build=$(realpath -m "${positional[1]}")
case "$build/" in
    "$src"/*) die "BUILD_DIR must lie outside the NCCL source tree (the tree stays read-only)" ;;
esac

# ---------------------------------------------------------------------------
# Source tree sanity: the three Makefiles this script drives must be there.
# ---------------------------------------------------------------------------
for f in makefiles/version.mk src/Makefile src/device/generate.py \
    contrib/nccl_ep/Makefile contrib/nccl_ep/ep_bench.cu \
    contrib/nccl_m2n/Makefile contrib/nccl_m2n/benchmarks/reshard_bench.cc; do
    [[ -f $src/$f ]] ||
        die "'$src' is not an NCCL tree with contrib/nccl_ep and contrib/nccl_m2n (no $f)"
done

nccl_version=$(awk -F':= *' '
    /^NCCL_MAJOR/ {ma = $2} /^NCCL_MINOR/ {mi = $2} /^NCCL_PATCH/ {pa = $2}
    END {gsub(/ /, "", ma); gsub(/ /, "", mi); gsub(/ /, "", pa); print ma "." mi "." pa}
' "$src/makefiles/version.mk")
if [[ $nccl_version != 2.30.7 ]]; then
    note "warning: source is NCCL $nccl_version; this script was written for 2.30.7"
fi

# ---------------------------------------------------------------------------
# Tools. Each check names the missing piece, since the GPU machine has no
# internet and nothing can be fetched there.
# ---------------------------------------------------------------------------
command -v make >/dev/null || die "'make' not found (Debian/Ubuntu: apt-get install make)"
# NCCL generates its device sources with python3.
command -v python3 >/dev/null ||
    die "'python3' not found; NCCL's build generates its kernel sources with it"
CXX=${CXX:-g++}
command -v "$CXX" >/dev/null || die "C++ compiler '$CXX' not found (set CXX or install g++)"

if [[ -z ${CUDA_HOME:-} ]]; then
    if command -v nvcc >/dev/null; then
        CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
    else
        CUDA_HOME=/usr/local/cuda
    fi
fi
nvcc=$CUDA_HOME/bin/nvcc
[[ -x $nvcc ]] || die "nvcc not found at '$nvcc': install the CUDA toolkit (13.x) or set CUDA_HOME"
cuda_version=$("$nvcc" --version |
    sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n1)
[[ -n $cuda_version ]] || die "cannot read the CUDA version from '$nvcc --version'"
# nccl_ep's README requires CUDA 13+, and 2.30's Makefiles pick C++17 from it.
((${cuda_version%%.*} >= 13)) ||
    die "CUDA $cuda_version at $CUDA_HOME is too old: nccl_ep needs CUDA 13 or newer"
[[ -f $CUDA_HOME/include/cuda.h ]] || die "CUDA headers missing ($CUDA_HOME/include/cuda.h)"

# The host may have no GPU (build machine): nothing here needs one, but the
# link of libnccl_ep.so and the benchmarks wants libcuda.so; the toolkit's
# stub satisfies the linker when no driver is installed.
cuda_stub_dir=""
if ! "$CXX" -print-file-name=libcuda.so | grep -q /; then
    for d in "$CUDA_HOME/lib64/stubs" "$CUDA_HOME/lib/stubs" \
        "$CUDA_HOME/targets/x86_64-linux/lib/stubs"; do
        if [[ -f $d/libcuda.so ]]; then
            cuda_stub_dir=$d
            break
        fi
    done
fi

# MPI: ep_bench, ep_test and reshard_bench bootstrap NCCL through MPI. Find
# its headers and library rather than trusting MPI_HOME/include and
# MPI_HOME/lib, since Debian/Ubuntu Open MPI splits them.
mpi_incs=()
mpi_libs=()
mpi_how="mpicc in PATH"
if [[ -n ${MPI_HOME:-} ]]; then
    mpi_how="MPI_HOME=$MPI_HOME"
    mpi_incs=("$MPI_HOME/include")
    mpi_libs=("$MPI_HOME/lib" "$MPI_HOME/lib64")
elif command -v mpicc >/dev/null; then
    if mpicc --showme:incdirs >/dev/null 2>&1; then # Open MPI
        read -r -a mpi_incs <<<"$(mpicc --showme:incdirs)"
        read -r -a mpi_libs <<<"$(mpicc --showme:libdirs)"
    else # MPICH and derivatives
        for w in $(mpicc -show 2>/dev/null); do
            case "$w" in
                -I*) mpi_incs+=("${w#-I}") ;;
                -L*) mpi_libs+=("${w#-L}") ;;
            esac
        done
    fi
fi
mpi_inc=""
for d in "${mpi_incs[@]}"; do
    if [[ -f $d/mpi.h ]]; then
        mpi_inc=$d
        break
    fi
done
mpi_lib=""
for d in "${mpi_libs[@]}"; do
    if [[ -e $d/libmpi.so ]]; then
        mpi_lib=$d
        break
    fi
done
if [[ -z $mpi_inc || -z $mpi_lib ]]; then
    die "MPI not found (need mpi.h and libmpi.so; looked via $mpi_how). \
ep_bench and reshard_bench are launched with mpirun: install an MPI with its headers \
(Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin) or set MPI_HOME"
fi
mpi_home=${MPI_HOME:-$(dirname "$mpi_lib")}
# The programs use only MPI's C API; Open MPI's mpi.h would otherwise pull in
# its deprecated C++ bindings in these C++ sources, which then need
# libmpi_cxx at link time (reshard_bench fails to link without it).
mpi_cflags=" -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1"
for d in "${mpi_incs[@]}"; do
    if [[ -d $d ]]; then
        mpi_cflags+=" -I$d"
    fi
done
mpi_ldflags="-L$mpi_lib -lmpi"

# CUPTI (optional) gives ep_bench kernel-only timings. nccl_ep's Makefile only
# probes the host compiler's default include path, which usually misses the
# toolkit's copy, so the decision is made here and passed down explicitly.
cupti_args=(CUPTI_AVAILABLE=0 CUPTI_CFLAGS= CUPTI_LDFLAGS=)
cupti_note="off"
if ((use_cupti)); then
    for d in "$CUDA_HOME/include" "$CUDA_HOME/extras/CUPTI/include"; do
        [[ -f $d/cupti.h ]] || continue
        for l in "$CUDA_HOME/lib64" "$CUDA_HOME/extras/CUPTI/lib64" "$CUDA_HOME/lib"; do
            if [[ -e $l/libcupti.so ]]; then
                cupti_args=(CUPTI_AVAILABLE=1 "CUPTI_CFLAGS=-DHAVE_CUPTI -I$d"
                    "CUPTI_LDFLAGS=-L$l -lcupti")
                cupti_note="on ($l/libcupti.so)"
                break 2
            fi
        done
    done
    [[ $cupti_note != off ]] ||
        note "warning: no CUPTI under $CUDA_HOME; ep_bench will report no kernel-only timings"
fi

gencode=${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}

mkdir -p "$build/logs" || die "cannot create BUILD_DIR '$build'"
note "NCCL $nccl_version from $src"
note "build dir   $build"
note "CUDA        $cuda_version at $CUDA_HOME"
note "MPI         include $mpi_inc, lib $mpi_lib"
note "gencode     $gencode"
note "kernels     ${only_funcs:-all}"
note "CUPTI       $cupti_note"
note "jobs        $jobs"

# Make does not notice a changed gencode or kernel set (NCCL generates its
# kernel sources once), so refuse to mix configurations in one BUILD_DIR.
config="src=$src cuda=$CUDA_HOME gencode=$gencode only_funcs=$only_funcs"
if [[ -f $build/.build_reference.config ]]; then
    if [[ $(<"$build/.build_reference.config") != "$config" ]]; then
        die "$build was built with another configuration" \
            "($(<"$build/.build_reference.config")); use a new BUILD_DIR or delete it"
    fi
else
    printf '%s\n' "$config" >"$build/.build_reference.config"
fi

# Runs one make step, logging to BUILD_DIR/logs/NAME.log and timing it.
step_times=()
run_step() {
    local name=$1
    shift
    local log=$build/logs/$name.log t0 t1
    note "[$name] $* (log: $log)"
    t0=$(date +%s)
    if ! "$@" >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        die "step '$name' failed; full log in $log"
    fi
    t1=$(date +%s)
    step_times+=("$name $((t1 - t0))s")
    note "[$name] done in $((t1 - t0)) s"
}

# With no driver installed, pass the stub directory to every link below.
stub_ldflags=""
if [[ -n $cuda_stub_dir ]]; then
    stub_ldflags="-L$cuda_stub_dir"
    note "libcuda.so not installed; linking against the stub in $cuda_stub_dir"
fi

t_start=$(date +%s)

# ---------------------------------------------------------------------------
# 1. NCCL core: only the shared library and its headers (`src.lib`), not the
#    static archive, which nothing here uses. The gencode is sm_90 only, which
#    is what makes the build affordable: by default CUDA 13 builds six SASS
#    arches plus PTX.
# ---------------------------------------------------------------------------
# NCCL's host-compiled kernel tables (src/device/*.cc) see -I $(CUDA_INC)
# before NCCL's own include directories, so a toolkit that ships an older
# nccl.h / nccl_device/ in $CUDA_HOME/include (CUDA 13.0 images do, with NCCL
# 2.28) breaks them. CXXSTD is the one variable common.mk places ahead of
# -I $(CUDA_INC), so this tree's headers are put first through it.
nccl_args=(BUILDDIR="$build" CUDA_HOME="$CUDA_HOME" NVCC="$nvcc" CXX="$CXX"
    NVCC_GENCODE="$gencode"
    CXXSTD="-std=c++17 -I$build/include -I$src/src/include")
if [[ -n $only_funcs ]]; then
    nccl_args+=(ONLY_FUNCS="$only_funcs")
fi
run_step nccl make -C "$src" -j "$jobs" src.lib "${nccl_args[@]}"
[[ -e $build/lib/libnccl.so.2 && -f $build/include/nccl_device.h ]] ||
    die "NCCL build finished but $build/lib/libnccl.so.2 or include/nccl_device.h is missing"

# ---------------------------------------------------------------------------
# The same shadowing hits both contrib Makefiles (nccl_ep via -I $(CUDA_INC)
# in CXXFLAGS; nccl_m2n via -isystem, which nvcc's own -I of the toolkit
# beats): they would compile against the toolkit's older NCCL headers. CXXSTD
# comes before those paths in both, so the new headers are prepended there.
# ---------------------------------------------------------------------------
cxxstd="-std=c++17 -I$build/include -I$build/include/nccl_device"

# ---------------------------------------------------------------------------
# 2. nccl_ep: libnccl_ep.{a,so}, its headers (also read at run time by the HT
#    kernels' NVCC JIT) and the ep_test / ep_bench MPI programs.
# ---------------------------------------------------------------------------
ep_args=(MPI=1 BUILDDIR="$build" NCCL_HOME="$build" CUDA_HOME="$CUDA_HOME"
    NVCC="$nvcc" CXX="$CXX" NVCC_GENCODE="$gencode" CXXSTD="$cxxstd"
    MPI_HOME="$mpi_home" MPI_CFLAGS="-DMPI_SUPPORT$mpi_cflags"
    MPI_LDFLAGS="$mpi_ldflags $stub_ldflags" "${cupti_args[@]}")
if [[ -n $stub_ldflags ]]; then
    ep_args+=(LDFLAGS="$stub_ldflags")
fi
# Two passes: the programs' link rules depend on libnccl_ep.so.X.Y.Z but not
# on the libnccl_ep.so symlink, so in one parallel make `-lnccl_ep` can run
# before the symlink exists and silently link the static libnccl_ep.a.
run_step nccl_ep_lib make -C "$src/contrib/nccl_ep" -j "$jobs" lib "${ep_args[@]}"
run_step nccl_ep_bench make -C "$src/contrib/nccl_ep" -j "$jobs" ep_test ep_bench "${ep_args[@]}"
if ! readelf -d "$build/test/nccl_ep/ep_bench" | grep -q 'NEEDED.*libnccl_ep\.so'; then
    die "ep_bench was not linked against libnccl_ep.so"
fi

# ---------------------------------------------------------------------------
# 3. nccl_m2n: libnccl_m2n.so and its benchmarks (reshard_bench is the
#    canonical one). Its outputs share BUILD_DIR/lib and BUILD_DIR/bin, so the
#    $ORIGIN rpaths it sets find libnccl.so.2 and libnccl_m2n.so there.
# ---------------------------------------------------------------------------
m2n_args=(BUILDDIR="$build" NCCL_HOME="$build" CUDA_HOME="$CUDA_HOME"
    NVCC="$nvcc" CXX="$CXX" NVCC_GENCODE="$gencode" CXXSTD="$cxxstd"
    MPI_HOME="$mpi_home" MPI_CFLAGS="$mpi_cflags"
    MPI_LDFLAGS="$mpi_ldflags $stub_ldflags")
run_step nccl_m2n_lib make -C "$src/contrib/nccl_m2n" -j "$jobs" lib "${m2n_args[@]}"
run_step nccl_m2n_bench make -C "$src/contrib/nccl_m2n/benchmarks" -j "$jobs" bench "${m2n_args[@]}"

outputs=(
    "$build/lib/libnccl.so.2"
    "$build/lib/libnccl_ep.so"
    "$build/lib/libnccl_m2n.so"
    "$build/test/nccl_ep/ep_bench"
    "$build/test/nccl_ep/ep_test"
    "$build/bin/reshard_bench"
    "$build/bin/reshard_batch_bench_user_window"
    "$build/bin/reshard_model_bench"
    "$build/include/nccl_ep.h"
    "$build/include/nccl_m2n.h"
)
for f in "${outputs[@]}"; do
    [[ -e $f ]] || die "expected output $f is missing"
done

if ((do_strip)); then
    # Host debug info only; the CUDA fatbins are ordinary data sections.
    for f in "$build"/lib/libnccl.so.*.*.* "$build"/lib/libnccl_ep.so.*.*.* \
        "$build/lib/libnccl_m2n.so" "$build"/test/nccl_ep/ep_{bench,test} \
        "$build"/bin/reshard_*bench*; do
        if [[ -f $f && ! -L $f ]]; then
            strip --strip-debug "$f"
        fi
    done
    note "stripped host debug info"
fi

# ---------------------------------------------------------------------------
# Run-time environment, relative to wherever BUILD_DIR ends up, so the tree
# can be moved to the GPU machine. NCCL_HOME/NCCL_EP_HOME point the HT JIT at
# the headers it compiles against (their build-time paths are only defaults).
# ---------------------------------------------------------------------------
cat >"$build/env.sh" <<'EOF'
# Source this file (bash) to run the reference NCCL build in this directory.
# Generated by libncclx tools/build_reference.sh.
_ref_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
export NCCL_HOME="$_ref_dir"     # HT JIT: NCCL device headers in $NCCL_HOME/include
export NCCL_EP_HOME="$_ref_dir"  # HT JIT: nccl_ep kernel headers in include/nccl_ep
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"  # HT JIT runs $CUDA_HOME/bin/nvcc
# This directory first, so no other libnccl.so.2 (e.g. one in the CUDA
# toolkit's lib64) is picked up. The CUDA lib dirs are for libcupti.
_ref_cupti="$CUDA_HOME/lib64:$CUDA_HOME/extras/CUPTI/lib64"
export LD_LIBRARY_PATH="$_ref_dir/lib:$_ref_cupti${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$_ref_dir/test/nccl_ep:$_ref_dir/bin:$PATH"
unset _ref_dir _ref_cupti
EOF

# BUILD_INFO.txt gets one block per run, so an incremental re-run does not
# hide how long the first, full build took.
t_end=$(date +%s)
{
    echo "== NCCL $nccl_version reference build (tools/build_reference.sh)"
    echo "source:    $src"
    echo "date:      $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host:      $(uname -srm), $(nproc) CPUs, -j $jobs"
    echo "CUDA:      $cuda_version ($CUDA_HOME)"
    echo "MPI:       $mpi_inc / $mpi_lib"
    echo "gencode:   $gencode"
    echo "kernels:   ${only_funcs:-all}"
    echo "CUPTI:     $cupti_note"
    echo "stripped:  $do_strip"
    printf 'step time: %s\n' "${step_times[@]}"
    echo "total:     $((t_end - t_start)) s"
} >>"$build/BUILD_INFO.txt"

note "all done in $((t_end - t_start)) s; outputs:"
for f in "${outputs[@]}"; do
    printf '  %8s  %s\n' "$(du -hL "$f" | cut -f1)" "$f"
done
note "at run time: source $build/env.sh"
