# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# NCCLX_CHECK_NCCL: --with-nccl=DIR (default: the CUDA root).  Requires NCCL >= 2.28 with the
# device API: nccl_device.h and ncclCommWindowRegister.  Exports NCCL_HOME, NCCL_CPPFLAGS,
# NCCL_LDFLAGS, NCCL_LIBS, NCCL_LIBDIR.
AC_DEFUN([NCCLX_CHECK_NCCL], [
    AC_REQUIRE([NCCLX_CHECK_CUDA])
    AC_ARG_WITH([nccl],
        [AS_HELP_STRING([--with-nccl=DIR], [NCCL root (default: the CUDA root)])],
        [], [with_nccl=$CUDA_HOME])
    AS_IF([test "x$with_nccl" = xno],
        [AC_MSG_ERROR([libncclx is built on NCCL; --without-nccl is not supported])])
    NCCL_HOME=$with_nccl
    NCCL_CPPFLAGS="-I$NCCL_HOME/include"
    NCCL_LIBDIR=""
    for d in "$NCCL_HOME/lib64" "$NCCL_HOME/lib" "$NCCL_HOME/lib/x86_64-linux-gnu"; do
        AS_IF([test -z "$NCCL_LIBDIR" && test -e "$d/libnccl.so"], [NCCL_LIBDIR=$d])
    done
    AS_IF([test -z "$NCCL_LIBDIR"], [NCCL_LIBDIR="$NCCL_HOME/lib"])
    NCCL_LDFLAGS="-L$NCCL_LIBDIR"
    NCCL_LIBS="-lnccl"

    ncclx_save_CPPFLAGS=$CPPFLAGS
    ncclx_save_LDFLAGS=$LDFLAGS
    ncclx_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $NCCL_CPPFLAGS $CUDA_CPPFLAGS"
    LDFLAGS="$LDFLAGS $NCCL_LDFLAGS $CUDA_LDFLAGS"
    AC_CHECK_HEADER([nccl.h], [],
        [AC_MSG_ERROR([nccl.h not found in $NCCL_HOME/include. Install NCCL >= 2.28 (NVIDIA's
                       libnccl-dev package) or pass --with-nccl=DIR])])
    AC_MSG_CHECKING([for NCCL >= 2.28])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]],
        [[#if NCCL_VERSION_CODE < 22800
          #error too old
          #endif]])],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])
         AC_MSG_ERROR([NCCL in $NCCL_HOME is older than 2.28. libncclx needs the NCCL device API
                       (symmetric windows, LSA, GIN) that arrived in 2.28. Install libnccl-dev
                       >= 2.28 or pass --with-nccl=DIR])])
    AC_CHECK_FILE([$NCCL_HOME/include/nccl_device.h], [],
        [AC_MSG_ERROR([nccl_device.h not found in $NCCL_HOME/include: this NCCL has no device
                       API. Install libnccl-dev >= 2.28 or pass --with-nccl=DIR])])
    AC_CHECK_LIB([nccl], [ncclCommWindowRegister], [],
        [AC_MSG_ERROR([libnccl in $NCCL_LIBDIR lacks ncclCommWindowRegister (symmetric
                       windows, NCCL >= 2.28). Install libnccl2 >= 2.28 or pass --with-nccl=DIR])])
    CPPFLAGS=$ncclx_save_CPPFLAGS
    LDFLAGS=$ncclx_save_LDFLAGS
    LIBS=$ncclx_save_LIBS
    AC_SUBST([NCCL_HOME])
    AC_SUBST([NCCL_CPPFLAGS])
    AC_SUBST([NCCL_LDFLAGS])
    AC_SUBST([NCCL_LIBS])
    AC_SUBST([NCCL_LIBDIR])
])
