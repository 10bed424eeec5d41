# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# NCCLX_CHECK_HWLOC: --with-hwloc[=DIR].  Without DIR, pkg-config's "hwloc" module is used.
# Needs hwloc >= 2.0 (PCI and OS devices, XML topologies).  Exports HWLOC_CPPFLAGS,
# HWLOC_LDFLAGS, HWLOC_LIBS.
AC_DEFUN([NCCLX_CHECK_HWLOC], [
    AC_ARG_WITH([hwloc],
        [AS_HELP_STRING([--with-hwloc=DIR], [hwloc root (default: pkg-config hwloc)])],
        [], [with_hwloc=yes])
    AS_IF([test "x$with_hwloc" = xno],
        [AC_MSG_ERROR([libncclx places processes with hwloc; --without-hwloc is not supported])])
    AS_IF([test "x$with_hwloc" = xyes],
        [PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0],
            [HWLOC_CPPFLAGS=$HWLOC_CFLAGS
             HWLOC_LDFLAGS=`$PKG_CONFIG --libs-only-L hwloc`],
            [AC_MSG_ERROR([hwloc >= 2.0 not found by pkg-config. Install it (Debian: apt-get
                           install libhwloc-dev) or pass --with-hwloc=DIR])])],
        [HWLOC_CPPFLAGS="-I$with_hwloc/include"
         HWLOC_LDFLAGS="-L$with_hwloc/lib"
         AS_IF([test -d "$with_hwloc/lib64"], [HWLOC_LDFLAGS="-L$with_hwloc/lib64"])
         HWLOC_LIBS="-lhwloc"])

    ncclx_save_CPPFLAGS=$CPPFLAGS
    ncclx_save_LDFLAGS=$LDFLAGS
    ncclx_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $HWLOC_CPPFLAGS"
    LDFLAGS="$LDFLAGS $HWLOC_LDFLAGS"
    AC_CHECK_HEADER([hwloc.h], [],
        [AC_MSG_ERROR([hwloc.h not found. Install hwloc (Debian: apt-get install libhwloc-dev)
                       or pass --with-hwloc=DIR])])
    AC_MSG_CHECKING([for hwloc >= 2.0 API])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <hwloc.h>]],
        [[#if HWLOC_API_VERSION < 0x00020000
          #error too old
          #endif]])],
        [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])
         AC_MSG_ERROR([hwloc is older than 2.0. Install libhwloc-dev >= 2.0])])
    AC_CHECK_LIB([hwloc], [hwloc_topology_init], [],
        [AC_MSG_ERROR([libhwloc not found. Install hwloc (Debian: apt-get install
                       libhwloc-dev) or pass --with-hwloc=DIR])])
    CPPFLAGS=$ncclx_save_CPPFLAGS
    LDFLAGS=$ncclx_save_LDFLAGS
    LIBS=$ncclx_save_LIBS
    AC_SUBST([HWLOC_CPPFLAGS])
    AC_SUBST([HWLOC_LDFLAGS])
    AC_SUBST([HWLOC_LIBS])
])
