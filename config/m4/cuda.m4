# SPDX-License-Identifier: BSD-3-Clause
# cuda.m4: CUDA toolkit (cuda.h, nvcc, static cudart) and the GPU architectures to build for.
#
# COLL_GPU_CHECK_CUDA: AM_CONDITIONAL HAVE_CUDA, AC_DEFINE HAVE_CUDA and
# COLL_GPU_HAVE_CUDA (0/1); substitutes
#   CUDA_CPPFLAGS     -I<cuda>/include (for C sources that include cuda.h)
#   CUDA_STATIC_LIBS  static cudart and what it and nvcc's host code need (-ldl -lpthread
#                     -lrt -lstdc++); the driver (libcuda) is never linked:
#                     the code dlopens it, so the component loads on nodes without a driver
#   NVCC NVCC_FLAGS   nvcc and its flags: -gencode per kept arch + PTX for the highest,
#                     optimization, and host-compiler flags that config/nvcc_wrap.sh passes
#                     through -Xcompiler
#   CUDA_ARCHS CUDA_ARCHS_DROPPED CUDA_VERSION COLL_GPU_HAVE_CUDA
# and sets cuda_happy (yes/no), cuda_reason (why not) for the summary.

# COLL_GPU_CUDA_FAIL(REASON): give up on CUDA; an error when CUDA was asked for explicitly.
AC_DEFUN([COLL_GPU_CUDA_FAIL], [
    cuda_reason="$1"
    AS_IF([test "x$cuda_required" = xyes], [AC_MSG_ERROR([CUDA: $cuda_reason])])
    AC_MSG_WARN([CUDA disabled: $cuda_reason])
    cuda_dir=
])

AC_DEFUN([COLL_GPU_CHECK_CUDA], [
AC_REQUIRE([COLL_GPU_COMPILER_FLAGS])
AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
        [CUDA toolkit (default: /usr/local/cuda when present, else no CUDA);
         --without-cuda builds host-only])],
    [], [with_cuda=check])
AC_ARG_WITH([cuda-arch],
    [AS_HELP_STRING([--with-cuda-arch="ARCHS"],
        [SM architectures for the kernels (default: "70 80 90"); those nvcc does not
         support are dropped; PTX is embedded for the highest])],
    [], [with_cuda_arch="70 80 90"])
AC_ARG_VAR([NVCC], [CUDA compiler (default: DIR/bin/nvcc of --with-cuda)])
AC_ARG_VAR([NVCCFLAGS], [extra flags for nvcc])

cuda_happy=no
cuda_reason=
cuda_required=no
cuda_dir=
CUDA_CPPFLAGS=
CUDA_STATIC_LIBS=
NVCC_FLAGS=
CUDA_ARCHS=
CUDA_ARCHS_DROPPED=
CUDA_VERSION=

AS_CASE([$with_cuda],
    [no],    [cuda_reason="disabled by --without-cuda"],
    [check], [AS_IF([test -d /usr/local/cuda], [cuda_dir=/usr/local/cuda],
                    [cuda_reason="/usr/local/cuda not found (use --with-cuda=DIR)"])],
    [yes],   [cuda_required=yes
              AS_IF([test -d /usr/local/cuda], [cuda_dir=/usr/local/cuda],
                    [AC_PATH_PROG([coll_gpu_nvcc_in_path], [nvcc])
                     AS_IF([test -n "$coll_gpu_nvcc_in_path"],
                           [cuda_dir=`dirname "$coll_gpu_nvcc_in_path"`
                            cuda_dir=`dirname "$cuda_dir"`],
                           [AC_MSG_ERROR([--with-cuda: neither /usr/local/cuda nor nvcc in PATH; use --with-cuda=DIR])])])],
    [cuda_required=yes
     cuda_dir=$with_cuda
     AS_IF([test -d "$cuda_dir"], [], [AC_MSG_ERROR([--with-cuda=$cuda_dir: no such directory])])])

# cuda.h
AS_IF([test -n "$cuda_dir"], [
    AC_MSG_CHECKING([for cuda.h in $cuda_dir/include])
    AS_IF([test -f "$cuda_dir/include/cuda.h"],
          [AC_MSG_RESULT([yes])
           CUDA_CPPFLAGS="-I$cuda_dir/include"],
          [AC_MSG_RESULT([no])
           COLL_GPU_CUDA_FAIL([cuda.h not found in $cuda_dir/include])])])

# nvcc
AS_IF([test -n "$cuda_dir"], [
    AC_PATH_PROG([NVCC], [nvcc], [], [$cuda_dir/bin])
    AS_IF([test -z "$NVCC"], [COLL_GPU_CUDA_FAIL([nvcc not found in $cuda_dir/bin])])])
AS_IF([test -n "$cuda_dir"], [
    AC_MSG_CHECKING([nvcc version])
    CUDA_VERSION=`$NVCC --version 2>/dev/null | sed -n 's/.*release \([[0-9.]]*\),.*/\1/p'`
    AC_MSG_RESULT([${CUDA_VERSION:-unknown}])])

# Static cudart.
AS_IF([test -n "$cuda_dir"], [
    AC_MSG_CHECKING([for libcudart_static.a])
    cuda_libdir=
    for d in "$cuda_dir/lib64" "$cuda_dir/lib" "$cuda_dir"/targets/*/lib; do
        AS_IF([test -z "$cuda_libdir" && test -f "$d/libcudart_static.a"], [cuda_libdir=$d])
    done
    AC_MSG_RESULT([${cuda_libdir:-no}])
    AS_IF([test -z "$cuda_libdir"],
          [COLL_GPU_CUDA_FAIL([libcudart_static.a not found under $cuda_dir])],
          [# -lstdc++: nvcc compiles the host side of .cu files as C++ (static-init guards,
           # exception personality); libstdc++ is part of every gcc runtime.
           CUDA_STATIC_LIBS="-L$cuda_libdir -lcudart_static -ldl -lpthread -lrt -lstdc++"])])
AS_IF([test -n "$cuda_dir"], [
    AC_MSG_CHECKING([whether a program links with static cudart])
    coll_gpu_save_CPPFLAGS=$CPPFLAGS
    coll_gpu_save_LIBS=$LIBS
    CPPFLAGS="$CUDA_CPPFLAGS $CPPFLAGS"
    LIBS="$CUDA_STATIC_LIBS $LIBS"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>]],
                                    [[int v; return (int)cudaRuntimeGetVersion(&v);]])],
                   [AC_MSG_RESULT([yes])],
                   [AC_MSG_RESULT([no])
                    COLL_GPU_CUDA_FAIL([cannot link a program with $CUDA_STATIC_LIBS])])
    CPPFLAGS=$coll_gpu_save_CPPFLAGS
    LIBS=$coll_gpu_save_LIBS])

# Architectures: keep those nvcc supports ("nvcc --list-gpu-arch", CUDA >= 11.5; older nvcc:
# try to compile for each).
AS_IF([test -n "$cuda_dir"], [
    AC_MSG_CHECKING([GPU architectures nvcc supports])
    cuda_supported=`$NVCC --list-gpu-arch 2>/dev/null | sed -n 's/^compute_\([[0-9]]*\)$/\1/p' | tr '\n' ' '`
    AC_MSG_RESULT([${cuda_supported:-unknown (nvcc has no --list-gpu-arch: trying each)}])
    AS_IF([test -z "$cuda_supported"],
          [printf '__global__ void coll_gpu_k(int *x) { *x = 1; }\n' > conftest.cu])
    for arch in `echo "$with_cuda_arch" | tr ',' ' '`; do
        arch=`echo "$arch" | sed 's/^sm_//; s/^compute_//'`
        AC_MSG_CHECKING([whether nvcc supports sm_$arch])
        arch_ok=no
        AS_IF([test -n "$cuda_supported"],
              [AS_CASE([" $cuda_supported "], [*" $arch "*], [arch_ok=yes])],
              [AS_IF([$NVCC -c -o conftest.o conftest.cu -gencode=arch=compute_$arch,code=sm_$arch >&AS_MESSAGE_LOG_FD 2>&1],
                     [arch_ok=yes])])
        AC_MSG_RESULT([$arch_ok])
        AS_IF([test "$arch_ok" = yes],
              [CUDA_ARCHS="$CUDA_ARCHS $arch"],
              [CUDA_ARCHS_DROPPED="$CUDA_ARCHS_DROPPED $arch"])
    done
    rm -f conftest.cu conftest.o
    CUDA_ARCHS=`echo $CUDA_ARCHS`
    CUDA_ARCHS_DROPPED=`echo $CUDA_ARCHS_DROPPED`
    AS_IF([test -z "$CUDA_ARCHS"],
          [COLL_GPU_CUDA_FAIL([nvcc $CUDA_VERSION supports none of the architectures '$with_cuda_arch' (--with-cuda-arch)])])])

AS_IF([test -n "$cuda_dir"], [
    cuda_highest=`for a in $CUDA_ARCHS; do echo $a; done | sort -n | tail -n 1`
    for arch in $CUDA_ARCHS; do
        NVCC_FLAGS="$NVCC_FLAGS -gencode=arch=compute_$arch,code=sm_$arch"
    done
    NVCC_FLAGS="$NVCC_FLAGS -gencode=arch=compute_$cuda_highest,code=compute_$cuda_highest"
    AS_IF([test "x$enable_debug" = xyes],
          [NVCC_FLAGS="$NVCC_FLAGS -O0 -g -lineinfo"],
          [NVCC_FLAGS="$NVCC_FLAGS -O3"])
    NVCC_FLAGS="$NVCC_FLAGS -Wno-deprecated-gpu-targets $COLL_GPU_NVCC_HOST_FLAGS"
    NVCC_FLAGS=`echo $NVCC_FLAGS`])

# A kernel compiles with those flags, through the wrapper, as the build will do it.
AS_IF([test -n "$cuda_dir"], [
    AC_MSG_CHECKING([whether nvcc compiles a kernel with these flags])
    printf '__global__ void coll_gpu_k(int *x) { *x = 1; }\n' > conftest.cu
    AS_IF([$SHELL "$srcdir/config/nvcc_wrap.sh" $NVCC $NVCC_FLAGS $NVCCFLAGS -fPIC -c conftest.cu -o conftest.o >&AS_MESSAGE_LOG_FD 2>&1],
          [AC_MSG_RESULT([yes])],
          [AC_MSG_RESULT([no])
           COLL_GPU_CUDA_FAIL([nvcc cannot compile a kernel with: $NVCC_FLAGS $NVCCFLAGS (see config.log)])])
    rm -f conftest.cu conftest.o])

AS_IF([test -n "$cuda_dir"], [
    cuda_happy=yes
    CUDA_DIR=$cuda_dir
    COLL_GPU_HAVE_CUDA=1
    AC_DEFINE([HAVE_CUDA], [1], [Define to 1 if the CUDA backend is built])
], [
    CUDA_DIR=
    COLL_GPU_HAVE_CUDA=0
    CUDA_CPPFLAGS=
    CUDA_STATIC_LIBS=
    NVCC_FLAGS=
])
AC_DEFINE_UNQUOTED([COLL_GPU_HAVE_CUDA], [$COLL_GPU_HAVE_CUDA],
    [1 if the CUDA backend is built, 0 otherwise])
AM_CONDITIONAL([HAVE_CUDA], [test "$cuda_happy" = yes])
AC_SUBST([CUDA_DIR])
AC_SUBST([CUDA_CPPFLAGS])
AC_SUBST([CUDA_STATIC_LIBS])
AC_SUBST([NVCC_FLAGS])
AC_SUBST([CUDA_ARCHS])
AC_SUBST([CUDA_ARCHS_DROPPED])
AC_SUBST([CUDA_VERSION])
AC_SUBST([COLL_GPU_HAVE_CUDA])
])
