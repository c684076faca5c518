# SPDX-License-Identifier: BSD-3-Clause
# compiler.m4: build modes (--enable-debug, --enable-asan, --enable-werror), warnings,
# symbol visibility.
#
# COLL_GPU_ARG_DEBUG: must run before AC_PROG_CC, so that --enable-debug replaces the
# default "-g -O2" instead of being overridden by it.
AC_DEFUN([COLL_GPU_ARG_DEBUG], [
AC_ARG_ENABLE([debug],
    [AS_HELP_STRING([--enable-debug], [build with -O0 -g (and -lineinfo for CUDA kernels)])],
    [], [enable_debug=no])
AS_IF([test "x$enable_debug" = xyes],
      [# Appended, so -O0 wins over an -O given in CFLAGS.
       CFLAGS="${CFLAGS:+$CFLAGS }-O0 -g"])
])

# COLL_GPU_CHECK_CC_FLAG(FLAG, ACTION-IF-OK, ACTION-IF-NOT): does $CC accept FLAG
# (without a warning)?
AC_DEFUN([COLL_GPU_CHECK_CC_FLAG], [
AS_VAR_PUSHDEF([cache_var], [coll_gpu_cv_cc_flag_$1])
AC_CACHE_CHECK([whether $CC accepts $1], [cache_var], [
    coll_gpu_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror $1"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
                      [AS_VAR_SET([cache_var], [yes])], [AS_VAR_SET([cache_var], [no])])
    CFLAGS=$coll_gpu_save_CFLAGS])
AS_VAR_IF([cache_var], [yes], [$2], [$3])
AS_VAR_POPDEF([cache_var])
])

# COLL_GPU_COMPILER_FLAGS: after AC_PROG_CC.  Substitutes
#   COLL_GPU_CFLAGS       warnings (+ -Werror), for every C source of the project
#   COLL_GPU_VISIBILITY   -fvisibility=hidden, for the sources that go into the component
#   COLL_GPU_DSO_LDFLAGS  for the component: keeps the symbols of static libraries
#                         (cudart_static) out of its dynamic symbol table, and -z defs
#   COLL_GPU_NVCC_HOST_FLAGS  the same host-side flags for nvcc (see config/nvcc_wrap.sh)
AC_DEFUN([COLL_GPU_COMPILER_FLAGS], [
AC_REQUIRE([AC_PROG_CC])
AC_ARG_ENABLE([asan],
    [AS_HELP_STRING([--enable-asan], [build with AddressSanitizer (-fsanitize=address)])],
    [], [enable_asan=no])
AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors])],
    [], [enable_werror=no])

COLL_GPU_NVCC_HOST_FLAGS=
AS_IF([test "x$enable_debug" = xyes],
      [AC_DEFINE([COLL_GPU_DEBUG], [1], [Define to 1 for a debug build (--enable-debug)])])

AS_IF([test "x$enable_asan" = xyes], [
    asan_flags="-fsanitize=address -fno-omit-frame-pointer"
    # Kept in CFLAGS/LDFLAGS (not only the project's flags): every object and every
    # program, configure's own link tests included, must use the ASan runtime.
    CFLAGS="$CFLAGS $asan_flags"
    LDFLAGS="$LDFLAGS -fsanitize=address"
    AC_MSG_CHECKING([whether $CC can build with AddressSanitizer])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])], [AC_MSG_RESULT([yes])],
        [AC_MSG_RESULT([no])
         AC_MSG_ERROR([--enable-asan: $CC cannot link with -fsanitize=address (Debian: gcc ships libasan)])])
    COLL_GPU_NVCC_HOST_FLAGS="$COLL_GPU_NVCC_HOST_FLAGS $asan_flags"])

COLL_GPU_CFLAGS=
for flag in -Wall -Wextra; do
    COLL_GPU_CHECK_CC_FLAG([$flag], [COLL_GPU_CFLAGS="$COLL_GPU_CFLAGS $flag"])
done
COLL_GPU_NVCC_HOST_FLAGS="$COLL_GPU_NVCC_HOST_FLAGS $COLL_GPU_CFLAGS"
# -Werror reaches nvcc's host compiler (config/nvcc_wrap.sh); -Werror=all-warnings is nvcc's own,
# for the device code's warnings (an unused variable, say).
AS_IF([test "x$enable_werror" = xyes],
      [COLL_GPU_CFLAGS="$COLL_GPU_CFLAGS -Werror"
       COLL_GPU_NVCC_HOST_FLAGS="$COLL_GPU_NVCC_HOST_FLAGS -Werror -Werror=all-warnings"])

COLL_GPU_CHECK_CC_FLAG([-fvisibility=hidden],
    [COLL_GPU_VISIBILITY=-fvisibility=hidden],
    [COLL_GPU_VISIBILITY=
     AC_MSG_WARN([$CC does not support -fvisibility=hidden: every symbol of the component will be exported])])
COLL_GPU_NVCC_HOST_FLAGS="$COLL_GPU_NVCC_HOST_FLAGS $COLL_GPU_VISIBILITY"

AC_CACHE_CHECK([whether the linker supports --exclude-libs], [coll_gpu_cv_ld_exclude_libs], [
    coll_gpu_save_LDFLAGS=$LDFLAGS
    LDFLAGS="$LDFLAGS -Wl,--exclude-libs,ALL"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
                   [coll_gpu_cv_ld_exclude_libs=yes], [coll_gpu_cv_ld_exclude_libs=no])
    LDFLAGS=$coll_gpu_save_LDFLAGS])
AS_IF([test "x$coll_gpu_cv_ld_exclude_libs" = xyes],
      [COLL_GPU_DSO_LDFLAGS="-Wl,--exclude-libs,ALL"], [COLL_GPU_DSO_LDFLAGS=])

# -z defs: a symbol the component leaves unresolved is a link error (Open MPI would only
# skip the component at run time, "undefined symbol ... (ignored)").
AC_CACHE_CHECK([whether the linker supports -z defs], [coll_gpu_cv_ld_z_defs], [
    coll_gpu_save_LDFLAGS=$LDFLAGS
    LDFLAGS="$LDFLAGS -Wl,-z,defs"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])],
                   [coll_gpu_cv_ld_z_defs=yes], [coll_gpu_cv_ld_z_defs=no])
    LDFLAGS=$coll_gpu_save_LDFLAGS])
AS_IF([test "x$coll_gpu_cv_ld_z_defs" = xyes],
      [COLL_GPU_DSO_LDFLAGS="$COLL_GPU_DSO_LDFLAGS -Wl,-z,defs"])

AM_CONDITIONAL([ENABLE_ASAN], [test "x$enable_asan" = xyes])
AC_SUBST([COLL_GPU_CFLAGS])
AC_SUBST([COLL_GPU_VISIBILITY])
AC_SUBST([COLL_GPU_DSO_LDFLAGS])
AC_SUBST([COLL_GPU_NVCC_HOST_FLAGS])
])
