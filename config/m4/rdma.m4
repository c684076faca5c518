# SPDX-License-Identifier: BSD-3-Clause
# rdma.m4: rdma-core (libibverbs; librdmacm alongside when present).
#
# COLL_GPU_CHECK_VERBS: --with-verbs[=DIR] / --without-verbs.  Checked with
# infiniband/verbs.h and -libverbs (pkg-config libibverbs for the flags when available).
# AM_CONDITIONAL HAVE_VERBS, AC_DEFINE HAVE_VERBS and COLL_GPU_HAVE_VERBS (0/1); substitutes
# VERBS_CPPFLAGS VERBS_LDFLAGS VERBS_LIBS.  librdmacm (rdma/rdma_cma.h, -lrdmacm), only
# looked for when verbs is found: AM_CONDITIONAL HAVE_RDMACM, AC_DEFINE HAVE_RDMACM,
# RDMACM_LIBS.  Sets verbs_happy/verbs_reason, rdmacm_happy/rdmacm_reason for the summary.
AC_DEFUN([COLL_GPU_CHECK_VERBS], [
AC_REQUIRE([COLL_GPU_PKG_CONFIG])
AC_ARG_WITH([verbs],
    [AS_HELP_STRING([--with-verbs@<:@=DIR@:>@],
        [rdma-core's libibverbs (default: when found)])],
    [], [with_verbs=check])

verbs_happy=no
verbs_reason=
rdmacm_happy=no
rdmacm_reason="needs verbs"
VERBS_CPPFLAGS=
VERBS_LDFLAGS=
VERBS_LIBS=
RDMACM_LIBS=
AS_CASE([$with_verbs],
    [no], [verbs_reason="disabled by --without-verbs"],
    [yes|check],
        [AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists libibverbs 2>/dev/null],
               [VERBS_CPPFLAGS=`$PKG_CONFIG --cflags-only-I libibverbs`
                VERBS_LDFLAGS=`$PKG_CONFIG --libs-only-L libibverbs`])],
        [AS_IF([test -d "$with_verbs"], [], [AC_MSG_ERROR([--with-verbs=$with_verbs: no such directory])])
         VERBS_CPPFLAGS="-I$with_verbs/include"
         for d in "$with_verbs/lib" "$with_verbs/lib64"; do
             AS_IF([test -d "$d"], [VERBS_LDFLAGS="$VERBS_LDFLAGS -L$d"])
         done])

AS_IF([test "x$with_verbs" != xno], [
    coll_gpu_save_CPPFLAGS=$CPPFLAGS
    coll_gpu_save_LDFLAGS=$LDFLAGS
    coll_gpu_save_LIBS=$LIBS
    CPPFLAGS="$VERBS_CPPFLAGS $CPPFLAGS"
    LDFLAGS="$VERBS_LDFLAGS $LDFLAGS"
    AC_CHECK_HEADER([infiniband/verbs.h],
        [AC_CHECK_LIB([ibverbs], [ibv_get_device_list], [verbs_happy=yes; VERBS_LIBS="-libverbs"],
                      [verbs_reason="cannot link -libverbs"])],
        [verbs_reason="infiniband/verbs.h not found (Debian: apt-get install libibverbs-dev)"])
    AS_IF([test "$verbs_happy" = yes], [
        rdmacm_reason=
        AC_CHECK_HEADER([rdma/rdma_cma.h],
            [AC_CHECK_LIB([rdmacm], [rdma_create_event_channel],
                          [rdmacm_happy=yes; RDMACM_LIBS="-lrdmacm"],
                          [rdmacm_reason="cannot link -lrdmacm"])],
            [rdmacm_reason="rdma/rdma_cma.h not found (Debian: apt-get install librdmacm-dev)"])])
    CPPFLAGS=$coll_gpu_save_CPPFLAGS
    LDFLAGS=$coll_gpu_save_LDFLAGS
    LIBS=$coll_gpu_save_LIBS
    AS_IF([test "$verbs_happy" = no && test "x$with_verbs" != xcheck],
          [AC_MSG_ERROR([verbs requested (--with-verbs=$with_verbs) but not usable: $verbs_reason])])])

AS_IF([test "$verbs_happy" = yes],
      [COLL_GPU_HAVE_VERBS=1
       AC_DEFINE([HAVE_VERBS], [1], [Define to 1 if rdma-core's libibverbs is available])],
      [COLL_GPU_HAVE_VERBS=0
       VERBS_CPPFLAGS=
       VERBS_LDFLAGS=
       VERBS_LIBS=])
AS_IF([test "$rdmacm_happy" = yes],
      [AC_DEFINE([HAVE_RDMACM], [1], [Define to 1 if librdmacm is available])])
AC_DEFINE_UNQUOTED([COLL_GPU_HAVE_VERBS], [$COLL_GPU_HAVE_VERBS], [1 if libibverbs is available, 0 otherwise])
AM_CONDITIONAL([HAVE_VERBS], [test "$verbs_happy" = yes])
AM_CONDITIONAL([HAVE_RDMACM], [test "$rdmacm_happy" = yes])
AC_SUBST([VERBS_CPPFLAGS])
AC_SUBST([VERBS_LDFLAGS])
AC_SUBST([VERBS_LIBS])
AC_SUBST([RDMACM_LIBS])
AC_SUBST([COLL_GPU_HAVE_VERBS])
])
