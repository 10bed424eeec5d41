# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# NCCLX_CHECK_CUDA: --with-cuda=DIR (default /usr/local/cuda) and --with-cuda-arch=SM.
# Exports CUDA_HOME, CUDA_CPPFLAGS, CUDA_LDFLAGS, CUDA_LIBS, CUDA_LIBDIR, NVCC, NVCCFLAGS,
# CUDA_ARCH (the requested architectures, comma separated), CUDA_ARCH_PTX (the one whose PTX
# is embedded).  We link the shared CUDA runtime (-lcudart): applications that hand us their
# streams and events use the same runtime instance as we do.
AC_DEFUN([NCCLX_CHECK_CUDA], [
    AC_ARG_WITH([cuda],
        [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit root (default: /usr/local/cuda)])],
        [], [with_cuda=/usr/local/cuda])
    AS_IF([test "x$with_cuda" = xno],
        [AC_MSG_ERROR([libncclx needs the CUDA toolkit; --without-cuda is not supported])])
    AC_ARG_WITH([cuda-arch],
        [AS_HELP_STRING([--with-cuda-arch=SM],
                        [GPU architecture(s) to build for, comma separated (default: 90); the highest also gets PTX])],
        [], [with_cuda_arch=90])

    CUDA_HOME=$with_cuda
    CUDA_CPPFLAGS="-I$CUDA_HOME/include"
    CUDA_LIBDIR=""
    for d in "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib"; do
        AS_IF([test -z "$CUDA_LIBDIR" && test -e "$d/libcudart.so"], [CUDA_LIBDIR=$d])
    done
    AS_IF([test -z "$CUDA_LIBDIR"], [CUDA_LIBDIR="$CUDA_HOME/lib64"])
    CUDA_LDFLAGS="-L$CUDA_LIBDIR"
    CUDA_LIBS="-lcudart"

    AC_PATH_PROG([NVCC], [nvcc], [no], [$CUDA_HOME/bin$PATH_SEPARATOR$PATH])
    AS_IF([test "x$NVCC" = xno],
        [AC_MSG_ERROR([nvcc not found under $CUDA_HOME/bin. Install the CUDA toolkit (NVIDIA's
                       cuda-toolkit package, or Debian's nvidia-cuda-toolkit) or pass
                       --with-cuda=DIR])])

    ncclx_save_CPPFLAGS=$CPPFLAGS
    ncclx_save_LDFLAGS=$LDFLAGS
    ncclx_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
    LDFLAGS="$LDFLAGS $CUDA_LDFLAGS"
    AC_CHECK_HEADER([cuda_runtime_api.h], [],
        [AC_MSG_ERROR([cuda_runtime_api.h not found in $CUDA_HOME/include. Install the CUDA
                       toolkit (Debian: nvidia-cuda-toolkit) or pass --with-cuda=DIR])])
    AC_CHECK_LIB([cudart], [cudaRuntimeGetVersion], [],
        [AC_MSG_ERROR([libcudart not found in $CUDA_LIBDIR. Install the CUDA toolkit
                       (Debian: nvidia-cuda-toolkit) or pass --with-cuda=DIR])])
    CPPFLAGS=$ncclx_save_CPPFLAGS
    LDFLAGS=$ncclx_save_LDFLAGS
    LIBS=$ncclx_save_LIBS

    # SASS (sm_XX) for every requested architecture, plus the PTX (compute_XX) of the highest
    # one, which the driver JIT-compiles for GPUs newer than any listed (as NCCL does).  No
    # arch-specific variants (sm_90a): the kernels use no Hopper-only instructions, and sm_90a
    # code would not run on later GPUs.
    CUDA_ARCH=$with_cuda_arch
    NVCC_GENCODE=""
    ncclx_cuda_arch_max=0
    for a in `echo "$with_cuda_arch" | tr ',' ' '`; do
        AS_CASE([$a],
            [*[[!0-9]]*], [AC_MSG_ERROR([--with-cuda-arch: '$a' is not a compute capability such as 90 (a list: 90,100)])])
        NVCC_GENCODE="$NVCC_GENCODE -gencode=arch=compute_$a,code=sm_$a"
        AS_IF([test "$a" -gt "$ncclx_cuda_arch_max"], [ncclx_cuda_arch_max=$a])
    done
    AS_IF([test "$ncclx_cuda_arch_max" = 0],
        [AC_MSG_ERROR([--with-cuda-arch: no architecture given (for example 90, or 90,100)])])
    NVCC_GENCODE="$NVCC_GENCODE -gencode=arch=compute_$ncclx_cuda_arch_max,code=compute_$ncclx_cuda_arch_max"
    CUDA_ARCH_PTX=$ncclx_cuda_arch_max
    NVCCFLAGS="-std=c++17 -O3 $NVCC_GENCODE -Xcompiler -Wall,-Wextra"
    AC_SUBST([CUDA_HOME])
    AC_SUBST([CUDA_CPPFLAGS])
    AC_SUBST([CUDA_LDFLAGS])
    AC_SUBST([CUDA_LIBS])
    AC_SUBST([CUDA_LIBDIR])
    AC_SUBST([CUDA_ARCH])
    AC_SUBST([CUDA_ARCH_PTX])
    AC_SUBST([NVCCFLAGS])
])
