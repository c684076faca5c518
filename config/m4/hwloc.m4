# SPDX-License-Identifier: BSD-3-Clause
# hwloc.m4: hwloc, for the node topology (GPU/NIC affinity).
#
# COLL_GPU_CHECK_HWLOC: --with-hwloc[=DIR] / --without-hwloc.  Found through pkg-config
# (hwloc) or DIR, checked with hwloc.h and -lhwloc.  AM_CONDITIONAL HAVE_HWLOC, AC_DEFINE
# HAVE_HWLOC and COLL_GPU_HAVE_HWLOC (0/1).  Substitutes HWLOC_CPPFLAGS HWLOC_LDFLAGS
# HWLOC_LIBS; sets hwloc_happy/hwloc_reason for the summary.
AC_DEFUN([COLL_GPU_CHECK_HWLOC], [
AC_REQUIRE([COLL_GPU_PKG_CONFIG])
AC_ARG_WITH([hwloc],
    [AS_HELP_STRING([--with-hwloc@<:@=DIR@:>@],
        [hwloc, for the node topology (default: when found, through pkg-config)])],
    [], [with_hwloc=check])

hwloc_happy=no
hwloc_reason=
HWLOC_CPPFLAGS=
HWLOC_LDFLAGS=
HWLOC_LIBS=
AS_CASE([$with_hwloc],
    [no], [hwloc_reason="disabled by --without-hwloc"],
    [yes|check],
        [AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists hwloc 2>/dev/null],
               [HWLOC_CPPFLAGS=`$PKG_CONFIG --cflags-only-I hwloc`
                HWLOC_LDFLAGS=`$PKG_CONFIG --libs-only-L hwloc`])],
        [AS_IF([test -d "$with_hwloc"], [], [AC_MSG_ERROR([--with-hwloc=$with_hwloc: no such directory])])
         HWLOC_CPPFLAGS="-I$with_hwloc/include"
         for d in "$with_hwloc/lib" "$with_hwloc/lib64"; do
             AS_IF([test -d "$d"], [HWLOC_LDFLAGS="$HWLOC_LDFLAGS -L$d"])
         done])

AS_IF([test "x$with_hwloc" != xno], [
    coll_gpu_save_CPPFLAGS=$CPPFLAGS
    coll_gpu_save_LDFLAGS=$LDFLAGS
    coll_gpu_save_LIBS=$LIBS
    CPPFLAGS="$HWLOC_CPPFLAGS $CPPFLAGS"
    LDFLAGS="$HWLOC_LDFLAGS $LDFLAGS"
    AC_CHECK_HEADER([hwloc.h],
        [AC_CHECK_LIB([hwloc], [hwloc_topology_init], [hwloc_happy=yes; HWLOC_LIBS="-lhwloc"],
                      [hwloc_reason="cannot link -lhwloc"])],
        [hwloc_reason="hwloc.h not found (Debian: apt-get install libhwloc-dev)"])
    CPPFLAGS=$coll_gpu_save_CPPFLAGS
    LDFLAGS=$coll_gpu_save_LDFLAGS
    LIBS=$coll_gpu_save_LIBS
    AS_IF([test "$hwloc_happy" = no && test "x$with_hwloc" != xcheck],
          [AC_MSG_ERROR([hwloc requested (--with-hwloc=$with_hwloc) but not usable: $hwloc_reason])])])

AS_IF([test "$hwloc_happy" = yes],
      [COLL_GPU_HAVE_HWLOC=1
       AC_DEFINE([HAVE_HWLOC], [1], [Define to 1 if hwloc is available])],
      [COLL_GPU_HAVE_HWLOC=0
       HWLOC_CPPFLAGS=
       HWLOC_LDFLAGS=
       HWLOC_LIBS=])
AC_DEFINE_UNQUOTED([COLL_GPU_HAVE_HWLOC], [$COLL_GPU_HAVE_HWLOC], [1 if hwloc is available, 0 otherwise])
AM_CONDITIONAL([HAVE_HWLOC], [test "$hwloc_happy" = yes])
AC_SUBST([HWLOC_CPPFLAGS])
AC_SUBST([HWLOC_LDFLAGS])
AC_SUBST([HWLOC_LIBS])
AC_SUBST([COLL_GPU_HAVE_HWLOC])
])
