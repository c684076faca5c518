#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# check-recipe.sh: checks contrib/spack/package.py without Spack and without network.
#
#   contrib/spack/check-recipe.sh [--args-only] [--variants 'SPEC'] [--work DIR] [--keep]
#
# 1. package.py compiles (python3 -m py_compile) and loads with spack_stub.py, a stand-in
#    for the part of Spack's package API it uses (nothing is imported from Spack).
# 2. For each variant set (~cuda~ucx; +ucx; +cuda cuda_arch=80,90 +ucx when a CUDA toolkit is
#    here) the configure line the recipe gives is printed, and every option in it must be
#    one that configure knows (configure --help).
#    --args-only stops here (a few seconds: what make check runs).
# 3. With the variants of --variants (default: +cuda when /usr/local/cuda exists, +ucx), it
#    does what Spack's AutotoolsPackage does in the stage: configure --prefix=PREFIX <the
#    recipe's arguments>, make, make install, into a scratch prefix, against an Open MPI
#    laid out as Spack installs it (a prefix with bin/ and lib/openmpi/: symlinks to the
#    Open MPI on PATH).  Then it checks the installed files, and that with the environment
#    of the recipe's setup_run_environment (what "spack load" and Spack's modules set)
#    ompi_info loads the component from the package's prefix and an MPI program runs with
#    it.  About a minute (two with CUDA).
#
# Exit 0 when everything passed.  The scratch directory is removed unless --keep.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
args_only=0 keep=0 variants='' work=''
while [ $# -gt 0 ]; do
    case $1 in
    --args-only) args_only=1; shift ;;
    --variants) variants=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "usage: $0 [--args-only] [--variants SPEC] [--work DIR] [--keep]" >&2; exit 2 ;;
    esac
done
say() { echo "check-recipe: $*"; }
fail() { echo "check-recipe: FAIL: $*" >&2; exit 1; }
command -v python3 >/dev/null || { say "SKIP: no python3"; exit 77; }

cuda=${CUDA_HOME:-/usr/local/cuda}
[ -x "$cuda/bin/nvcc" ] || cuda=

# A configure script to ask for its options: the source tree's, or (a checkout without one)
# the build tree's top_srcdir is the same tree.
configure=$top/configure
[ -x "$configure" ] || fail "no $configure: run ./autogen.sh first"

work=${work:-$(mktemp -d "${TMPDIR:-/tmp}/coll-gpu-spack.XXXXXX")}
mkdir -p "$work"
cleanup() { [ "$keep" -eq 1 ] || rm -rf "$work"; }
trap cleanup EXIT

# 1. Python
python3 -m py_compile "$here/package.py" 2>&1 || fail "package.py does not compile"
rm -rf "$here/__pycache__"
say "package.py compiles"

# The Open MPI of PATH, as Spack lays it out: PREFIX/bin and PREFIX/lib/openmpi.
ompi_info=$(command -v ompi_info) || fail "no ompi_info on PATH"
pkglibdir=$("$ompi_info" --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
ompi=$work/openmpi
mkdir -p "$ompi/bin" "$ompi/lib"
for t in mpicc ompi_info mpirun mpiexec; do
    p=$(command -v "$t" 2>/dev/null) && ln -sf "$p" "$ompi/bin/$t"
done
ln -sfn "$pkglibdir" "$ompi/lib/openmpi"
[ -e "$pkglibdir/mca_coll_gpu.so" ] && [ "$args_only" -eq 0 ] &&
    say "warning: $pkglibdir has a mca_coll_gpu.so too: step 3 may load that one"
deps=(--dep "openmpi=$ompi" --dep ucx=/usr --dep hwloc=/usr --dep rdma-core=/usr)
[ -n "$cuda" ] && deps+=(--dep "cuda=$cuda")

stub() { # stub VARIANTS PREFIX: the recipe's JSON
    python3 "$here/spack_stub.py" "$here/package.py" --variants "$1" --prefix "$2" "${deps[@]}"
}
json_list() { # json_list FILE KEY: one element per line
    python3 -c 'import json,sys; [print(a) for a in json.load(open(sys.argv[1]))[sys.argv[2]]]' "$1" "$2"
}

# 2. The configure lines, and every option known to configure.
known=$("$configure" --help)
sets=("~cuda ~ucx" "~cuda +ucx")
[ -n "$cuda" ] && sets+=("+cuda cuda_arch=80,90 +ucx")
for v in "${sets[@]}"; do
    stub "$v" /opt/spack/coll-gpu >"$work/recipe.json" || fail "the recipe did not load ($v)"
    say "spack install coll-gpu $v would run:"
    line="  ./configure"
    while IFS= read -r a; do
        line="$line '$a'"
        opt=${a%%=*}
        case $opt in
        --prefix) ;;
        *) with=${opt/#--without-/--with-}
           grep -Eq -- "^ *$with(\[|=|[[:space:]]|$)" <<<"$known" || fail "configure has no option $opt" ;;
        esac
    done < <(json_list "$work/recipe.json" configure)
    echo "$line"
done
# (grep reads the whole list: grep -q would quit at the match and, under pipefail, fail the
# pipeline when json_list then writes into the closed pipe)
json_list "$work/recipe.json" variants | grep -x cuda_arch >/dev/null || fail "no cuda_arch variant"
json_list "$work/recipe.json" variants | grep -x ucx >/dev/null || fail "no ucx variant"
say "every option of the recipe's configure lines is one configure has"
[ "$args_only" -eq 1 ] && exit 0

# 3. Build and install as Spack would, into a scratch prefix.
if [ -z "$variants" ]; then
    variants="~cuda +ucx"
    [ -n "$cuda" ] && variants="+cuda cuda_arch=90 +ucx"
fi
prefix=$work/prefix
stub "$variants" "$prefix" >"$work/recipe.json" || fail "the recipe did not load ($variants)"
mapfile -t cfg < <(json_list "$work/recipe.json" configure)
say "building $variants in $work/build: configure ${cfg[*]}"
mkdir -p "$work/build"
(cd "$work/build" && "$configure" "${cfg[@]}" >configure.log 2>&1) ||
    { tail -n 30 "$work/build/configure.log"; fail "configure"; }
(cd "$work/build" && make -j"$(nproc)" >make.log 2>&1) ||
    { tail -n 30 "$work/build/make.log"; fail "make"; }
(cd "$work/build" && make install >install.log 2>&1) ||
    { tail -n 30 "$work/build/install.log"; fail "make install"; }

(cd "$prefix" && find . \( -type f -o -type l \) | sed 's|^\./||' | LC_ALL=C sort) >"$work/installed"
say "installed under $prefix:"
sed 's/^/  /' "$work/installed"
version=$(sed -n 's/^VERSION = //p' "$work/build/Makefile")
for f in lib/openmpi/mca_coll_gpu.so lib/openmpi/mca_coll_gpu.la \
    share/coll-gpu/help-mpi-coll-gpu.txt include/coll_gpu_ext.h share/man/man7/coll_gpu.7 \
    share/doc/coll-gpu/README.md share/doc/coll-gpu/LICENSE share/doc/coll-gpu/docs/README.md \
    share/doc/coll-gpu/openmpi-mca-params.conf \
    "share/doc/coll-gpu/modulefiles/lmod/coll-gpu/$version.lua" \
    "share/doc/coll-gpu/modulefiles/tcl/coll-gpu/$version"; do
    grep -qx "$f" "$work/installed" || fail "not installed: $f"
done
if [ -n "$cuda" ] && [[ $variants == *+cuda* ]]; then
    grep -q '^#define COLL_GPU_HAVE_CUDA 1' "$work/build/config.h" || fail "+cuda built without CUDA"
fi

# The run environment of the recipe (spack load), applied to a clean copy of ours.
envfile=$work/env.sh
python3 - "$work/recipe.json" >"$envfile" <<'EOF'
import json, shlex, sys
for action, name, value in json.load(open(sys.argv[1]))["env"]:
    if action == "prepend_path":
        print('export %s=%s${%s:+:$%s}' % (name, shlex.quote(value), name, name))
    elif action == "append_path":
        print('export %s=${%s:+$%s:}%s' % (name, name, name, shlex.quote(value)))
    elif action == "set":
        print("export %s=%s" % (name, shlex.quote(value)))
    elif action == "unset":
        print("unset %s" % name)
EOF
say "spack load would set:"
sed 's/^/  /' "$envfile"
(
    unset OMPI_MCA_mca_base_component_path
    # shellcheck disable=SC1090
    . "$envfile"
    "$ompi_info" --param coll gpu --level 9 --parsable >"$work/ompi_info.txt" 2>&1
    grep -q '^mca:coll:gpu:param:coll_gpu_priority:' "$work/ompi_info.txt" ||
        { cat "$work/ompi_info.txt"; fail "ompi_info does not find the component in $prefix"; }
    MANPATH=${MANPATH:-}: man -w coll_gpu >"$work/man.txt" 2>&1 && grep -q "^$prefix/" "$work/man.txt" ||
        { cat "$work/man.txt"; fail "man coll_gpu does not find the installed page"; }
    # An MPI program with the component active (host buffers: passed through).
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    cat >"$work/hello.c" <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int r, s;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Allreduce(&r, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (r == 0) printf("allreduce %d\n", s);
    MPI_Finalize();
    return 0;
}
C
    "$ompi/bin/mpicc" -o "$work/hello" "$work/hello.c"
    "$ompi/bin/mpirun" -np 2 --mca coll gpu,tuned,libnbc,basic,self --mca coll_gpu_verbose 1 \
        --mca coll_gpu_accelerator emulated "$work/hello" >"$work/run.txt" 2>&1 ||
        { cat "$work/run.txt"; fail "mpirun with the component from $prefix"; }
    grep -q '^allreduce 1$' "$work/run.txt" || { cat "$work/run.txt"; fail "wrong allreduce"; }
    grep -q 'coll:gpu' "$work/run.txt" || { cat "$work/run.txt"; fail "coll/gpu said nothing at verbose 1"; }
)
say "ompi_info and mpirun load mca_coll_gpu.so from $prefix/lib/openmpi; man coll_gpu finds the page"
grep 'coll:gpu' "$work/run.txt" | head -n 2 | sed 's/^/  /'
say "PASS"
