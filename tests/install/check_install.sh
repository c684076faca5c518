#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# "make install DESTDIR=STAGE" installs exactly the component (mca_coll_gpu.so and its .la),
# its help file, the public header coll_gpu_ext.h, coll_gpu(7), and the docs (README.md,
# LICENSE, the pages of docs/, the annotated openmpi-mca-params.conf, the Lmod and Tcl
# modulefiles) -- nothing else; the
# installed component loads (ompi_info); the modulefiles carry the installation's paths; and
# "make uninstall DESTDIR=STAGE" leaves no file behind.
#
set -u
: "${abs_srcdir:?run by make check}" "${abs_top_builddir:?run by make check}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/coll-gpu-check-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The installation directories, expanded as make expands them.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${MAKE:-make} "$@"; }
printf 'print-dirs:\n\t@echo "$(COLL_GPU_MCA_DIR)|$(datadir)|$(includedir)|$(mandir)|$(docdir)|$(VERSION)|$(OMPI_PKGLIBDIR)"\n' \
    >"$tmp/print.mk"
dirs=$(mk -s -C "$abs_top_builddir" -f Makefile -f "$tmp/print.mk" print-dirs) ||
    { echo "FAIL: cannot read the installation directories"; exit 1; }
IFS='|' read -r mcadir datadir includedir mandir docdir version pkglibdir <<EOF
$dirs
EOF

cat >"$tmp/expected.in" <<EOF
$mcadir/mca_coll_gpu.la
$mcadir/mca_coll_gpu.so
$datadir/coll-gpu/help-mpi-coll-gpu.txt
$includedir/coll_gpu_ext.h
$mandir/man7/coll_gpu.7
$docdir/README.md
$docdir/LICENSE
$docdir/openmpi-mca-params.conf
$docdir/docs/README.md
$docdir/docs/adding-an-algorithm.md
$docdir/docs/algorithms.md
$docdir/docs/allreduce.md
$docdir/docs/benchmarks.md
$docdir/docs/building.md
$docdir/docs/collectives.md
$docdir/docs/cost-model.md
$docdir/docs/cost-model-crossovers.md
$docdir/docs/design.md
$docdir/docs/example.md
$docdir/docs/failure-model.md
$docdir/docs/kernels.md
$docdir/docs/many-nodes.md
$docdir/docs/nonblocking.md
$docdir/docs/results-between-nodes.md
$docdir/docs/results.md
$docdir/docs/testing.md
$docdir/docs/transport.md
$docdir/docs/tuning.md
$docdir/modulefiles/lmod/coll-gpu/$version.lua
$docdir/modulefiles/tcl/coll-gpu/$version
EOF
LC_ALL=C sort "$tmp/expected.in" >"$tmp/expected"

if ! mk -C "$abs_top_builddir" install DESTDIR="$stage" >"$tmp/install.log" 2>&1; then
    tail -n 30 "$tmp/install.log"
    echo "FAIL: make install DESTDIR=$stage"
    exit 1
fi
(cd "$stage" && find . \( -type f -o -type l \) | sed 's|^\.||' | LC_ALL=C sort) >"$tmp/installed"
echo "make install DESTDIR=STAGE installed:"
sed 's/^/  STAGE/' "$tmp/installed"
LC_ALL=C comm -13 "$tmp/expected" "$tmp/installed" >"$tmp/extra"
LC_ALL=C comm -23 "$tmp/expected" "$tmp/installed" >"$tmp/missing"
[ -s "$tmp/extra" ] && { fail "installed but not expected:"; cat "$tmp/extra"; }
[ -s "$tmp/missing" ] && { fail "expected but not installed:"; cat "$tmp/missing"; }

# The installed page is the generated one; the modulefiles name the installed paths.
grep -q '^\.\\" generated: parameters begin' "$stage$mandir/man7/coll_gpu.7" ||
    fail "the installed man page has no generated parameter list"
lua=$stage$docdir/modulefiles/lmod/coll-gpu/$version.lua
tcl=$stage$docdir/modulefiles/tcl/coll-gpu/$version
if [ -f "$lua" ] && [ -f "$tcl" ]; then
    grep -qF "local mca_dir = \"$mcadir\"" "$lua" || fail "$lua does not name $mcadir"
    grep -qF "set mca_dir        \"$mcadir\"" "$tcl" || fail "$tcl does not name $mcadir"
    grep -q '@[A-Za-z_]*@' "$lua" "$tcl" && fail "placeholders left in the modulefiles"
fi

# The installed component loads.
if [ -n "$OMPI_INFO" ] && [ -f "$stage$mcadir/mca_coll_gpu.so" ]; then
    # shellcheck disable=SC2046
    env $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/-u \1/p') \
        OMPI_MCA_mca_base_component_path="$stage$mcadir:$pkglibdir" \
        "$OMPI_INFO" --param coll gpu --level 9 --parsable >"$tmp/ompi_info" 2>&1
    grep -q '^mca:coll:gpu:param:coll_gpu_priority:' "$tmp/ompi_info" ||
        { fail "ompi_info does not load the installed component"; head -n 5 "$tmp/ompi_info"; }
fi

if ! mk -C "$abs_top_builddir" uninstall DESTDIR="$stage" >"$tmp/uninstall.log" 2>&1; then
    tail -n 30 "$tmp/uninstall.log"
    fail "make uninstall DESTDIR=$stage"
fi
left=$(cd "$stage" && find . \( -type f -o -type l \))
[ -z "$left" ] || fail "make uninstall left:" $left

[ "$fails" -eq 0 ] || exit 1
echo "PASS: $(wc -l <"$tmp/installed") files installed, as expected; none left by uninstall"
