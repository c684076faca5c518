# SPDX-License-Identifier: BSD-3-Clause
# ucx.m4: UCX (ucp), for the inter-node transport.
#
# COLL_GPU_CHECK_UCX: --with-ucx[=DIR] / --without-ucx.  Found through pkg-config (ucx) or
# DIR, checked with ucp/api/ucp.h and -lucp -lucs.  AM_CONDITIONAL HAVE_UCX, AC_DEFINE
# HAVE_UCX and COLL_GPU_HAVE_UCX (0/1; prefer it in code: Open MPI's opal_config.h defines
# HAVE_UCX when Open MPI itself was built with UCX).  Substitutes UCX_CPPFLAGS UCX_LDFLAGS
# UCX_LIBS; sets ucx_happy/ucx_reason for the summary.
AC_DEFUN([COLL_GPU_CHECK_UCX], [
AC_REQUIRE([COLL_GPU_PKG_CONFIG])
AC_ARG_WITH([ucx],
    [AS_HELP_STRING([--with-ucx@<:@=DIR@:>@],
        [UCX, for the inter-node transport (default: when found, through pkg-config)])],
    [], [with_ucx=check])

ucx_happy=no
ucx_reason=
UCX_CPPFLAGS=
UCX_LDFLAGS=
UCX_LIBS=
AS_CASE([$with_ucx],
    [no], [ucx_reason="disabled by --without-ucx"],
    [yes|check],
        [AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists ucx 2>/dev/null],
               [UCX_CPPFLAGS=`$PKG_CONFIG --cflags-only-I ucx`
                UCX_LDFLAGS=`$PKG_CONFIG --libs-only-L ucx`])],
        [AS_IF([test -d "$with_ucx"], [], [AC_MSG_ERROR([--with-ucx=$with_ucx: no such directory])])
         UCX_CPPFLAGS="-I$with_ucx/include"
         for d in "$with_ucx/lib" "$with_ucx/lib64"; do
             AS_IF([test -d "$d"], [UCX_LDFLAGS="$UCX_LDFLAGS -L$d"])
         done])

AS_IF([test "x$with_ucx" != xno], [
    coll_gpu_save_CPPFLAGS=$CPPFLAGS
    coll_gpu_save_LDFLAGS=$LDFLAGS
    coll_gpu_save_LIBS=$LIBS
    CPPFLAGS="$UCX_CPPFLAGS $CPPFLAGS"
    LDFLAGS="$UCX_LDFLAGS $LDFLAGS"
    AC_CHECK_HEADER([ucp/api/ucp.h],
        [AC_CHECK_LIB([ucp], [ucp_get_version], [ucx_happy=yes; UCX_LIBS="-lucp -lucs"],
                      [ucx_reason="cannot link -lucp -lucs"], [-lucs])],
        [ucx_reason="ucp/api/ucp.h not found (Debian: apt-get install libucx-dev)"])
    CPPFLAGS=$coll_gpu_save_CPPFLAGS
    LDFLAGS=$coll_gpu_save_LDFLAGS
    LIBS=$coll_gpu_save_LIBS
    AS_IF([test "$ucx_happy" = no && test "x$with_ucx" != xcheck],
          [AC_MSG_ERROR([UCX requested (--with-ucx=$with_ucx) but not usable: $ucx_reason])])])

AS_IF([test "$ucx_happy" = yes],
      [COLL_GPU_HAVE_UCX=1
       AC_DEFINE([HAVE_UCX], [1], [Define to 1 if UCX is available])],
      [COLL_GPU_HAVE_UCX=0
       UCX_CPPFLAGS=
       UCX_LDFLAGS=
       UCX_LIBS=])
AC_DEFINE_UNQUOTED([COLL_GPU_HAVE_UCX], [$COLL_GPU_HAVE_UCX], [1 if UCX is available, 0 otherwise])
AM_CONDITIONAL([HAVE_UCX], [test "$ucx_happy" = yes])
AC_SUBST([UCX_CPPFLAGS])
AC_SUBST([UCX_LDFLAGS])
AC_SUBST([UCX_LIBS])
AC_SUBST([COLL_GPU_HAVE_UCX])
])

# COLL_GPU_PKG_CONFIG: find pkg-config without depending on pkg.m4.
AC_DEFUN([COLL_GPU_PKG_CONFIG], [
AC_ARG_VAR([PKG_CONFIG], [path to pkg-config])
AC_PATH_TOOL([PKG_CONFIG], [pkg-config])
])
