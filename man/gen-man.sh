#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# gen-man.sh: writes coll_gpu(7) from its hand-written source (coll_gpu.7.in) and the
# parameters and performance variables of the component itself, as ompi_info lists them.
#
#   gen-man.sh [options] coll_gpu.7.in > coll_gpu.7
#
#   --ompi-info PROG        ompi_info of the Open MPI the component was built against
#   --component-dir DIR     directory holding the freshly built mca_coll_gpu.so (.libs)
#   --ompi-pkglibdir DIR    Open MPI's own component directory (searched after DIR)
#   --fallback PAGE         a page generated before (a dist tarball's): where ompi_info cannot
#                           load the component, its generated sections are used instead
#   --parsable FILE         read "ompi_info --parsable" output from FILE (tests; no ompi_info)
#   --preload LIB           LD_PRELOAD for ompi_info (an ASan build's runtime)
#   -D NAME=VALUE           replace @NAME@ in the source by VALUE
#
# The source holds two marker lines, @COLL_GPU_PARAMETERS@ and @COLL_GPU_PVARS@, replaced by
# one ".TP" entry per parameter (name, type, default, values, ompi_info level, help) and per
# pvar (class, type, help), in the order the component registers them.  The generated parts
# are framed by '.\" generated:' comments, which is how --fallback finds them again.
#
# ompi_info runs in a clean environment: no OMPI_MCA_* variable of the caller and no parameter
# file (a site's openmpi-mca-params.conf would otherwise turn its values into "defaults").
# Exit status: 0 with the page on stdout (a warning on stderr when the fallback was used),
# 1 when neither ompi_info nor the fallback gave the lists.
#
set -eu

ompi_info=ompi_info component_dir='' pkglibdir='' fallback='' parsable='' defs='' preload=''
while [ $# -gt 1 ]; do
    case $1 in
    --ompi-info) ompi_info=$2; shift 2 ;;
    --component-dir) component_dir=$2; shift 2 ;;
    --ompi-pkglibdir) pkglibdir=$2; shift 2 ;;
    --fallback) fallback=$2; shift 2 ;;
    --parsable) parsable=$2; shift 2 ;;
    --preload) preload=$2; shift 2 ;;
    -D) defs="$defs
$2"; shift 2 ;;
    *) break ;;
    esac
done
[ $# -eq 1 ] || { echo "usage: $0 [options] coll_gpu.7.in" >&2; exit 2; }
src=$1
me=gen-man.sh

tmp=$(mktemp -d "${TMPDIR:-/tmp}/coll-gpu-man.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# 1. The component's variables, from ompi_info (or the file given).
if [ -n "$parsable" ]; then
    cp "$parsable" "$tmp/parsable"
elif [ -n "$ompi_info" ] && [ -n "$component_dir" ]; then
    path=$component_dir${pkglibdir:+:$pkglibdir}
    # shellcheck disable=SC2046
    env $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/-u \1/p') \
        OMPI_MCA_mca_base_component_path="$path" OMPI_MCA_mca_base_param_files=/dev/null \
        ${preload:+LD_PRELOAD="$preload"} "$ompi_info" --param coll gpu --level 9 --parsable >"$tmp/parsable" 2>"$tmp/err" ||
        true
else
    : >"$tmp/parsable"
fi

# 2. Format them: one .TP entry per variable.  Fields: mca:coll:gpu:param|pvar:NAME:KEY:VALUE
# (VALUE may contain ':').  Text is escaped for roff: backslashes, a leading '.' or "'".
cat >"$tmp/params.awk" <<'AWK'
function esc(s) {
    gsub(/\\/, "\\e", s)
    if (s ~ /^[.']/) s = "\\&" s
    return s
}
function lit(s) {
    s = esc(s)
    gsub(/-/, "\\-", s)
    return s
}
$1 == "mca" && $2 == "coll" && $3 == "gpu" && $4 == want_kind {
    name = $5; key = $6
    rest = $0; for (i = 1; i <= 6; i++) sub(/^[^:]*:/, "", rest)
    if (!(name in seen)) { seen[name] = 1; order[++n] = name }
    if (key == "enumerator") {
        sub(/^value:[^:]*:/, "", rest)
        enums[name] = (nenum[name]++ > 0) ? enums[name] ", " rest : rest
    } else if (key == "synonym") {
        sub(/^name:/, "", rest)
        syn[name] = (nsyn[name]++ > 0) ? syn[name] ", " rest : rest
    } else {
        v[name, key] = rest
    }
}
END {
    for (i = 1; i <= n; i++) {
        name = order[i]
        print ".TP"
        print ".B " lit(name)
        if (want_kind == "param") {
            def = v[name, "value"]
            gsub(/^"|"$/, "", def)
            if (def == "") def = "(empty)"
            line = "Type " v[name, "type"] ", default \\fB" lit(def) "\\fR"
            if (name in enums) line = line "; values " lit(enums[name])
            line = line "; level " v[name, "level"]
            if (v[name, "deprecated"] == "yes") line = line "; deprecated"
            if (name in syn) line = line "; synonyms " lit(syn[name])
            print line "."
        } else {
            print "A " v[name, "class"] " of type " v[name, "type"] "."
        }
        print ".br"
        help = v[name, "help"]
        if (help !~ /[.)]$/) help = help "."
        print esc(help)
    }
}
AWK
awk -F: -v want_kind=param -f "$tmp/params.awk" "$tmp/parsable" >"$tmp/params"
cat >"$tmp/pvars.awk" <<'AWK'
function esc(s) {
    gsub(/\\/, "\\e", s)
    if (s ~ /^[.']/) s = "\\&" s
    return s
}
function lit(s) {
    s = esc(s)
    gsub(/-/, "\\-", s)
    return s
}
$1 == "mca" && $2 == "coll" && $3 == "gpu" && $4 == want_kind {
    name = $5; key = $6
    rest = $0; for (i = 1; i <= 6; i++) sub(/^[^:]*:/, "", rest)
    if (!(name in seen)) { seen[name] = 1; order[++n] = name }
    v[name, key] = rest
}
END {
    for (i = 1; i <= n; i++) {
        name = order[i]
        print ".TP"
        print ".B " lit(name)
        print "Class " v[name, "class"] ", type " v[name, "type"] \
            (v[name, "continuous"] == "true" ? ", continuous" : "") "."
        print ".br"
        help = v[name, "help"]
        if (help !~ /[.)]$/) help = help "."
        print esc(help)
    }
}
AWK
awk -F: -v want_kind=pvar -f "$tmp/pvars.awk" "$tmp/parsable" >"$tmp/pvars"

# 3. Not loadable here (a dist tarball built without a working ompi_info, say): the generated
# sections of the page made where it was.
source_of_lists="ompi_info"
if ! [ -s "$tmp/params" ]; then
    if [ -n "$fallback" ] && [ -f "$fallback" ]; then
        sed -n '/^\.\\" generated: parameters begin/,/^\.\\" generated: parameters end/p' \
            "$fallback" | sed '1d;$d' >"$tmp/params"
        sed -n '/^\.\\" generated: pvars begin/,/^\.\\" generated: pvars end/p' \
            "$fallback" | sed '1d;$d' >"$tmp/pvars"
        source_of_lists=$(sed -n 's/^\.\\" generated: lists from \(.*\)$/\1/p' "$fallback" |
            head -n 1)
        source_of_lists=${source_of_lists:-a page generated earlier}
        echo "$me: warning: ompi_info could not list the component's parameters" \
            "(${component_dir:-no component dir}); using the lists of $fallback" >&2
        [ -s "$tmp/err" ] && sed 's/^/  ompi_info: /' "$tmp/err" | head -n 5 >&2
    fi
    if ! [ -s "$tmp/params" ]; then
        echo "$me: error: ompi_info ($ompi_info) did not list the parameters of coll gpu" \
            "from ${component_dir:-?} and there is no generated page to fall back on" >&2
        [ -s "$tmp/err" ] && sed 's/^/  ompi_info: /' "$tmp/err" | head -n 5 >&2
        exit 1
    fi
else
    version=$(sed -n 's/^mca:coll:gpu:version:"component:\(.*\)"$/\1/p' "$tmp/parsable")
    ompi=$("$ompi_info" --version 2>/dev/null | sed -n 's/^Open MPI v\([^ ]*\).*$/\1/p' | head -n 1) || true
    source_of_lists="ompi_info of Open MPI ${ompi:-?} and coll/gpu ${version:-?}"
fi

# 4. The page: the source with @NAME@ replaced and the marker lines expanded.
{
    printf '%s\n' "$defs" | sed '/^$/d'
} >"$tmp/defs"
awk -v params="$tmp/params" -v pvars="$tmp/pvars" -v defs="$tmp/defs" \
    -v lists="$source_of_lists" '
function cat(file, what,    line) {
    print ".\\\" generated: " what " begin"
    while ((getline line < file) > 0) print line
    close(file)
    print ".\\\" generated: " what " end"
}
BEGIN {
    while ((getline line < defs) > 0) {
        k = line; sub(/=.*/, "", k); val = line; sub(/^[^=]*=/, "", val)
        gsub(/\\/, "\\e", val); gsub(/-/, "\\-", val); gsub(/&/, "\\\\&", val)
        key[++nk] = "@" k "@"; value[nk] = val
    }
}
NR == 1 { print ".\\\" Generated by man/gen-man.sh from coll_gpu.7.in: edit that file." }
/^\.\\"/ && !body { next }
{ body = 1 }
/^@COLL_GPU_PARAMETERS@$/ { print ".\\\" generated: lists from " lists; cat(params, "parameters"); next }
/^@COLL_GPU_PVARS@$/ { cat(pvars, "pvars"); next }
{
    for (i = 1; i <= nk; i++) gsub(key[i], value[i])
    print
}' "$src" >"$tmp/page"

if grep -n '@[A-Za-z_][A-Za-z0-9_]*@' "$tmp/page" >&2; then
    echo "$me: error: unreplaced @NAME@ in the page (above)" >&2
    exit 1
fi
cat "$tmp/page"
