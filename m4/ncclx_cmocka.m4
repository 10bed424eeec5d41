# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# NCCLX_CHECK_CMOCKA: --with-cmocka[=DIR] (tests only).  Default: use it when pkg-config finds
# it; `make check` then says how to get it if it is missing.  Exports CMOCKA_CPPFLAGS,
# CMOCKA_LDFLAGS, CMOCKA_LIBS and the conditional HAVE_CMOCKA.
AC_DEFUN([NCCLX_CHECK_CMOCKA], [
    AC_ARG_WITH([cmocka],
        [AS_HELP_STRING([--with-cmocka=DIR],
                        [cmocka root, for make check (default: pkg-config cmocka if present)])],
        [], [with_cmocka=check])
    have_cmocka=no
    AS_CASE([$with_cmocka],
        [no], [],
        [yes|check],
            [PKG_CHECK_MODULES([CMOCKA], [cmocka >= 1.1],
                [have_cmocka=yes
                 CMOCKA_CPPFLAGS=$CMOCKA_CFLAGS
                 CMOCKA_LDFLAGS=""],
                [AS_IF([test "x$with_cmocka" = xyes],
                    [AC_MSG_ERROR([cmocka >= 1.1 not found by pkg-config. Install it (Debian:
                                   apt-get install libcmocka-dev) or pass --with-cmocka=DIR])])])],
        [CMOCKA_CPPFLAGS="-I$with_cmocka/include"
         CMOCKA_LDFLAGS="-L$with_cmocka/lib"
         CMOCKA_LIBS="-lcmocka"
         ncclx_save_CPPFLAGS=$CPPFLAGS
         CPPFLAGS="$CPPFLAGS $CMOCKA_CPPFLAGS"
         AC_CHECK_HEADER([cmocka.h], [have_cmocka=yes],
             [AC_MSG_ERROR([cmocka.h not found in $with_cmocka/include. Install libcmocka-dev])],
             [[#include <stdarg.h>
               #include <stddef.h>
               #include <stdint.h>
               #include <setjmp.h>]])
         CPPFLAGS=$ncclx_save_CPPFLAGS])
    AC_SUBST([CMOCKA_CPPFLAGS])
    AC_SUBST([CMOCKA_LDFLAGS])
    AC_SUBST([CMOCKA_LIBS])
    AM_CONDITIONAL([HAVE_CMOCKA], [test "x$have_cmocka" = xyes])
])
