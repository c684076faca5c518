#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds MPICH's collective tests (test/mpi/coll of an MPICH 4.x source tree) against the MPI
# whose mpicc is first in PATH (Open MPI here), without MPICH's configure: our own
# mpitestconf.h and dtpoolsconf.h, the harness's util files (mtest.c, mtest_common.c,
# mtest_single.c) and dtpools (the datatype pools of the allred/reduce/op_coll/bcast tests)
# in one archive, then one program per name in coll/testlist.in, with the per-program
# sources and -D flags of coll/Makefile.am (the nb* variants: -DUSE_MTEST_NBC).
#
#   tests/mpich/build-mpich-coll.sh MPICH_TEST_MPI_DIR OUT_DIR
#
# OUT_DIR gets the programs, logs/NAME.log (each compiler run), and not-buildable.txt: one
# line "NAME: first error" per program that does not compile or link (tests of MPI-4
# functions an MPI-3.1 library lacks: MPI_Bcast_init ...).  Exit 0 when the library built
# (whatever the programs did), 1 otherwise.
set -euo pipefail
src=$(cd "${1:?usage: build-mpich-coll.sh MPICH_TEST_MPI_DIR OUT_DIR}" && pwd)
mkdir -p "${2:?usage: build-mpich-coll.sh MPICH_TEST_MPI_DIR OUT_DIR}"
out=$(cd "$2" && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
: "${MPICC:=mpicc}"
coll=$src/coll
[ -r "$coll/testlist.in" ] && [ -r "$coll/Makefile.am" ] ||
    { echo "build-mpich-coll.sh: $coll has no testlist.in / Makefile.am" >&2; exit 1; }
mkdir -p "$out/include" "$out/obj" "$out/logs"

# What MPICH's configure would find on Linux/glibc with gcc.  USE_STRICT_MPI: the MPI under
# test is not MPICH (no MPIX_ extensions), as configure --enable-strictmpi sets.
cat >"$out/include/mpitestconf.h" <<'EOF'
/* written by coll/gpu's tests/mpich/build-mpich-coll.sh in place of MPICH's configure */
#define HAVE_STDARG_H 1
#define HAVE_STDINT_H 1
#define HAVE_STRING_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_UNISTD_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE__BOOL 1
#define HAVE_FLOAT__COMPLEX 1
#define HAVE_DOUBLE__COMPLEX 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define USE_LONG_DOUBLE_COMPLEX 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_INIT_THREAD 1
#define USE_STRICT_MPI 1
#define SIZEOF_INT 4
#define SIZEOF_LONG 8
#define SIZEOF_LONG_LONG 8
#define SIZEOF_SHORT 2
#define SIZEOF_VOID_P 8
#define POINTERINT_t long
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_NONE
EOF
# dtpools_internal.h includes "../dtpoolsconf.h" beside its own directory
cat >"$src/dtpools/dtpoolsconf.h" <<'EOF'
/* written by coll/gpu's tests/mpich/build-mpich-coll.sh in place of dtpools' configure */
#define HAVE_LIMITS_H 1
#define HAVE_MEMSET 1
#define HAVE_STDINT_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_STRDUP 1
EOF

# One Makefile: the library, then every program (make -k: a program that fails is left out).
includes="-I$out/include -I$src/include -I$src/dtpools/include"
lib_srcs="$src/util/mtest.c $src/util/mtest_common.c $src/util/mtest_single.c"
lib_srcs="$lib_srcs $(ls "$src"/dtpools/src/*.c | tr '\n' ' ')"
# Makefile.am's NAME_SOURCES / NAME_CPPFLAGS (one line each in MPICH 4.x)
am_value() {
    sed -n "s/^$1[ \t]*=[ \t]*//p" "$coll/Makefile.am" | head -n 1 |
        sed 's/\$(AM_CPPFLAGS)//; s/[ \t]*$//'
}
programs=$(awk '!/^[ \t]*(#|$|@)/ { print $1 }' "$coll/testlist.in" | sort -u)
mk=$out/Makefile
{
    echo "CC = $MPICC"
    # dtpools calls MPI_Type_hvector/hindexed, removed in MPI-3.0: Open MPI 4.1 still has
    # them, its mpi.h declares them on request
    echo "CFLAGS = -O1 -g -w -DOMPI_OMIT_MPI1_COMPAT_DECLS=0 $includes"
    echo "LIB = $out/libmtest.a"
    echo "all:"
    objs=""
    for f in $lib_srcs; do
        o=$out/obj/$(basename "$f" .c).o
        objs="$objs $o"
        printf '%s: %s\n\t$(CC) $(CFLAGS) -c -o $@ %s\n' "$o" "$f" "$f"
    done
    printf '$(LIB):%s\n\trm -f $@ && ar rcs $@ %s\n' "$objs" "$objs"
    for p in $programs; do
        srcs=$(am_value "${p}_SOURCES")
        flags=$(am_value "${p}_CPPFLAGS")
        [ -n "$srcs" ] || srcs=$p.c
        srcs=$(for s in $srcs; do printf '%s ' "$coll/$s"; done)
        printf 'all: %s\n%s: $(LIB)\n' "$out/$p" "$out/$p"
        printf '\t@$(CC) $(CFLAGS) %s -o $@ %s $(LIB) -lm >%s 2>&1 || { rm -f $@; exit 1; }\n' \
            "$flags" "$srcs" "$out/logs/$p.log"
    done
} >"$mk"

make -C "$out" -f "$mk" -j"$jobs" "$out/libmtest.a" >"$out/logs/libmtest.log" 2>&1 ||
    { tail -n 30 "$out/logs/libmtest.log" >&2; echo "build-mpich-coll.sh: the mtest library did not build" >&2; exit 1; }
make -C "$out" -f "$mk" -k -j"$jobs" all >/dev/null 2>&1 || true

: >"$out/not-buildable.txt"
built=0
for p in $programs; do
    if [ -x "$out/$p" ]; then
        built=$((built + 1))
    else
        why=$(grep -m 1 -E 'error|undefined reference' "$out/logs/$p.log" 2>/dev/null | sed "s|$src/||g")
        echo "$p: ${why:-did not build}" >>"$out/not-buildable.txt"
    fi
done
echo "build-mpich-coll.sh: $built programs built, $(wc -l <"$out/not-buildable.txt") not buildable (against $($MPICC --showme:version 2>/dev/null || $MPICC --version | head -n 1))"
