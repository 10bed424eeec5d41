# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# NCCLX_CHECK_PMIX: --with-pmix[=DIR].  Without DIR, pkg-config's "pmix" module is used.
# Exports PMIX_CPPFLAGS, PMIX_LDFLAGS, PMIX_LIBS.
AC_DEFUN([NCCLX_CHECK_PMIX], [
    AC_ARG_WITH([pmix],
        [AS_HELP_STRING([--with-pmix=DIR], [PMIx root (default: pkg-config pmix)])],
        [], [with_pmix=yes])
    AS_IF([test "x$with_pmix" = xno],
        [AC_MSG_ERROR([libncclx bootstraps from PMIx; --without-pmix is not supported])])
    AS_IF([test "x$with_pmix" = xyes],
        [PKG_CHECK_MODULES([PMIX], [pmix >= 4],
            [PMIX_CPPFLAGS=$PMIX_CFLAGS
             PMIX_LDFLAGS=`$PKG_CONFIG --libs-only-L pmix`
             PMIX_LIBDIR=`$PKG_CONFIG --variable=libdir pmix`],
            [AC_MSG_ERROR([PMIx >= 4 not found by pkg-config. Install it (Debian: apt-get
                           install libpmix-dev) or pass --with-pmix=DIR])])],
        [PMIX_CPPFLAGS="-I$with_pmix/include"
         PMIX_LIBDIR="$with_pmix/lib"
         AS_IF([test -d "$with_pmix/lib64"], [PMIX_LIBDIR="$with_pmix/lib64"])
         PMIX_LDFLAGS="-L$PMIX_LIBDIR"
         PMIX_LIBS="-lpmix"])

    ncclx_save_CPPFLAGS=$CPPFLAGS
    ncclx_save_LDFLAGS=$LDFLAGS
    ncclx_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $PMIX_CPPFLAGS"
    LDFLAGS="$LDFLAGS $PMIX_LDFLAGS"
    AC_CHECK_HEADER([pmix.h], [],
        [AC_MSG_ERROR([pmix.h not found. Install PMIx (Debian: apt-get install libpmix-dev) or
                       pass --with-pmix=DIR])])
    AC_CHECK_LIB([pmix], [PMIx_Init], [],
        [AC_MSG_ERROR([libpmix not found. Install PMIx (Debian: apt-get install libpmix-dev) or
                       pass --with-pmix=DIR])])
    CPPFLAGS=$ncclx_save_CPPFLAGS
    LDFLAGS=$ncclx_save_LDFLAGS
    LIBS=$ncclx_save_LIBS
    # PMIx may live outside the default search path (Debian: .../pmix2/lib): record it for
    # the programs we link and for ncclx.pc.
    AS_IF([test -n "$PMIX_LIBDIR"], [PMIX_LDFLAGS="$PMIX_LDFLAGS -Wl,-rpath,$PMIX_LIBDIR"])
    AC_SUBST([PMIX_CPPFLAGS])
    AC_SUBST([PMIX_LDFLAGS])
    AC_SUBST([PMIX_LIBS])
])
