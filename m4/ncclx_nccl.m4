# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# NCCLX_CHECK_NCCL: --with-nccl=DIR.  Without it, the first of these that has nccl.h: the CUDA
# root, /usr (Debian's libnccl-dev), and the NCCL of Python's nvidia-nccl wheel (the one PyTorch
# installs: `python3 -c "import nvidia.nccl"`).  Requires NCCL >= 2.28 with the device API:
# nccl_device.h and ncclCommWindowRegister.  A library shipped as libnccl.so.2 alone (the wheel
# has no libnccl.so link) is linked by that name, and a library outside the system's directories
# gets an rpath, so the tools run without LD_LIBRARY_PATH.  Exports NCCL_HOME, NCCL_CPPFLAGS,
# NCCL_LDFLAGS, NCCL_LIBS, NCCL_LIBDIR.
AC_DEFUN([NCCLX_CHECK_NCCL], [
    AC_REQUIRE([NCCLX_CHECK_CUDA])
    AC_ARG_WITH([nccl],
        [AS_HELP_STRING([--with-nccl=DIR],
            [NCCL root (default: the CUDA root, /usr, or Python's nvidia-nccl wheel)])],
        [], [with_nccl=auto])
    AS_IF([test "x$with_nccl" = xno],
        [AC_MSG_ERROR([libncclx is built on NCCL; --without-nccl is not supported])])
    AS_IF([test "x$with_nccl" = xauto || test "x$with_nccl" = xyes], [
        AC_MSG_CHECKING([where NCCL is])
        ncclx_wheel=`python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[[0]])' 2>/dev/null`
        with_nccl=""
        for d in "$CUDA_HOME" /usr $ncclx_wheel; do
            AS_IF([test -z "$with_nccl" && test -n "$d" && test -f "$d/include/nccl.h"],
                [with_nccl=$d])
        done
        AS_IF([test -z "$with_nccl"], [with_nccl=$CUDA_HOME])
        AC_MSG_RESULT([$with_nccl])
    ])
    NCCL_HOME=$with_nccl
    # A system NCCL (/usr) needs no -I: naming /usr/include on the command line breaks the C++
    # headers' #include_next chain under nvcc ("math.h: No such file or directory").
    AS_CASE([$NCCL_HOME],
        [/usr|/usr/], [NCCL_CPPFLAGS=""],
        [NCCL_CPPFLAGS="-I$NCCL_HOME/include"])
    NCCL_LIBDIR=""
    NCCL_LIBS="-lnccl"
    for d in "$NCCL_HOME/lib64" "$NCCL_HOME/lib" "$NCCL_HOME/lib/x86_64-linux-gnu"; do
        AS_IF([test -z "$NCCL_LIBDIR" && test -e "$d/libnccl.so"], [NCCL_LIBDIR=$d])
    done
    for d in "$NCCL_HOME/lib64" "$NCCL_HOME/lib" "$NCCL_HOME/lib/x86_64-linux-gnu"; do
        AS_IF([test -z "$NCCL_LIBDIR" && test -e "$d/libnccl.so.2"],
            [NCCL_LIBDIR=$d; NCCL_LIBS="-l:libnccl.so.2"])
    done
    AS_IF([test -z "$NCCL_LIBDIR"], [NCCL_LIBDIR="$NCCL_HOME/lib"])
    NCCL_LDFLAGS="-L$NCCL_LIBDIR"
    AS_CASE([$NCCL_LIBDIR],
        [/usr/lib|/usr/lib64|/usr/lib/x86_64-linux-gnu|/lib|/lib64], [],
        [NCCL_LDFLAGS="$NCCL_LDFLAGS -Wl,-rpath,$NCCL_LIBDIR"])

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
    AC_MSG_CHECKING([for ncclCommWindowRegister in $NCCL_LIBS])
    LIBS="$NCCL_LIBS $LIBS"
    AC_LINK_IFELSE([AC_LANG_CALL([], [ncclCommWindowRegister])], [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])
         AC_MSG_ERROR([libnccl in $NCCL_LIBDIR lacks ncclCommWindowRegister (symmetric
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
