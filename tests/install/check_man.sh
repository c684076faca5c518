#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# coll_gpu(7) lists exactly the parameters and pvars the component registers (names and
# defaults, as ompi_info shows them), so the page can never fall behind the code; groff
# formats it without a warning.  Also: the annotated openmpi-mca-params.conf and the
# modulefiles name no parameter the component does not have.
# Skipped (77) where ompi_info cannot load the component just built.
#
set -u
: "${abs_srcdir:?run by make check}" "${abs_top_builddir:?run by make check}"
top_srcdir=$(cd "$abs_srcdir/.." && pwd)
page=$abs_top_builddir/man/coll_gpu.7
[ -f "$page" ] || page=$top_srcdir/man/coll_gpu.7
[ -f "$page" ] || { echo "FAIL: no man/coll_gpu.7 (make in man/)"; exit 1; }
[ -n "$OMPI_INFO" ] || { echo "SKIP: no ompi_info"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/coll-gpu-check-man.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# What the component registers: the same clean environment as man/gen-man.sh.
# shellcheck disable=SC2046
env $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/-u \1/p') \
    OMPI_MCA_mca_base_component_path="$COLL_GPU_COMPONENT_PATH" \
    OMPI_MCA_mca_base_param_files=/dev/null \
    "$OMPI_INFO" --param coll gpu --level 9 --parsable >"$tmp/parsable" 2>&1
sed -n 's/^mca:coll:gpu:param:\([^:]*\):value:\(.*\)$/\1 \2/p' "$tmp/parsable" |
    sed 's/ "\(.*\)"$/ \1/; s/ $/ (empty)/' | LC_ALL=C sort >"$tmp/params.ompi"
sed -n 's/^mca:coll:gpu:pvar:\([^:]*\):class:.*$/\1/p' "$tmp/parsable" | LC_ALL=C sort -u >"$tmp/pvars.ompi"
if ! [ -s "$tmp/params.ompi" ]; then
    echo "SKIP: ompi_info does not load the component from $COLL_GPU_BUILD_DIR"
    head -n 5 "$tmp/parsable"
    exit 77
fi

# What the page says, from its generated sections: ".B name" after ".TP", then the line
# "Type T, default \fBVALUE\fR; ...".
section() { # section NAME: the lines between the page's generated markers
    sed -n "/^\\.\\\\\" generated: $1 begin/,/^\\.\\\\\" generated: $1 end/p" "$page"
}
unesc() { sed 's/\\-/-/g; s/\\e/\\/g; s/\\&//g'; }
section parameters | awk '
    prev == ".TP" && /^\.B / { name = substr($0, 4) }
    /^Type / && name != "" {
        d = $0; sub(/^[^\\]*\\fB/, "", d); sub(/\\fR.*$/, "", d)
        print name " " d; name = ""
    }
    { prev = $0 }' | unesc | LC_ALL=C sort >"$tmp/params.man"
section pvars | awk 'prev == ".TP" && /^\.B / { print substr($0, 4) } { prev = $0 }' | unesc |
    LC_ALL=C sort -u >"$tmp/pvars.man"

cut -d' ' -f1 "$tmp/params.ompi" >"$tmp/names.ompi"
cut -d' ' -f1 "$tmp/params.man" >"$tmp/names.man"
missing=$(LC_ALL=C comm -23 "$tmp/names.ompi" "$tmp/names.man")
stale=$(LC_ALL=C comm -13 "$tmp/names.ompi" "$tmp/names.man")
[ -z "$missing" ] || fail "parameters missing from the man page (rebuild it: make -C man):" $missing
[ -z "$stale" ] || fail "parameters in the man page the component does not have:" $stale
if [ -z "$missing$stale" ]; then
    LC_ALL=C diff "$tmp/params.ompi" "$tmp/params.man" >"$tmp/diff" ||
        { fail "defaults differ (< ompi_info, > man page):"; cat "$tmp/diff"; }
fi
missing=$(LC_ALL=C comm -23 "$tmp/pvars.ompi" "$tmp/pvars.man")
stale=$(LC_ALL=C comm -13 "$tmp/pvars.ompi" "$tmp/pvars.man")
[ -z "$missing" ] || fail "pvars missing from the man page:" $missing
[ -z "$stale" ] || fail "pvars in the man page the component does not have:" $stale
echo "man page lists $(wc -l <"$tmp/names.man") parameters, $(wc -l <"$tmp/pvars.man") pvars;" \
    "ompi_info $(wc -l <"$tmp/names.ompi") and $(wc -l <"$tmp/pvars.ompi") ($page)"

# The hand-written body: every section there, no placeholder left.
for s in NAME SYNOPSIS DESCRIPTION PARAMETERS "PERFORMANCE VARIABLES" "TUNING FILE" \
    ENVIRONMENT FILES LIMITS "SEE ALSO"; do
    grep -q "^\\.SH \"*$s\"*\$" "$page" || fail "no section $s"
done
grep -n '@[A-Za-z_]*@' "$page" && fail "placeholders left in the page"

# groff: no warning (-ww), and it renders.
if command -v groff >/dev/null 2>&1; then
    groff -man -Tutf8 -ww -z "$page" >"$tmp/groff" 2>&1
    if [ -s "$tmp/groff" ]; then fail "groff warnings:"; cat "$tmp/groff"; fi
    groff -man -Tascii -P-c -P-b -P-o -P-u "$page" 2>/dev/null | grep -q 'coll_gpu_priority' ||
        fail "the rendered page has no coll_gpu_priority"
fi

# Settings in the example parameter file and the modulefiles name existing parameters.
for f in "$top_srcdir/contrib/openmpi-mca-params.conf" \
    "$top_srcdir/contrib/modulefiles/coll-gpu.lua.in" "$top_srcdir/contrib/modulefiles/coll-gpu.tcl.in"; do
    names=$(sed -n -e 's/^#*\(coll_gpu_[a-z0-9_]*\) *=.*/\1/p' \
        -e 's/.*setenv[ ("]*OMPI_MCA_\(coll_gpu_[a-z0-9_]*\).*/\1/p' "$f" | LC_ALL=C sort -u)
    for n in $names; do
        grep -qx "$n" "$tmp/names.ompi" || fail "$(basename "$f") sets $n, which the component does not have"
    done
    echo "$(basename "$f"): $(echo $names | wc -w) settings, all known"
done

[ "$fails" -eq 0 ] || exit 1
echo "PASS"
