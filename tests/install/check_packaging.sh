#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Packaging: the Spack recipe compiles and gives configure only options it has
# (contrib/spack/check-recipe.sh --args-only), and the modulefiles written by make
# (contrib/modulefiles) set what they must, loaded by the real module tools where they are
# installed (Lmod; Environment Modules' modulecmd.tcl), else by a small stand-in for their
# commands (lua, tclsh).  Both branches are checked: component in Open MPI's own directory
# (the modulefile leaves the component path alone) and in a directory of its own (prepended,
# followed by Open MPI's directory and ~/.openmpi/components).  Unload restores the
# environment.  Parts whose tools are missing are reported and skipped.
#
set -u
: "${abs_srcdir:?run by make check}" "${abs_top_builddir:?run by make check}"
top_srcdir=$(cd "$abs_srcdir/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/coll-gpu-check-pkg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0 ran=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. Spack recipe
if command -v python3 >/dev/null 2>&1; then
    if bash "$top_srcdir/contrib/spack/check-recipe.sh" --args-only --work "$tmp/spack" >"$tmp/spack.log" 2>&1; then
        cat "$tmp/spack.log"
        ran=$((ran + 1))
    else
        cat "$tmp/spack.log"
        fail "contrib/spack/check-recipe.sh --args-only"
    fi
else
    echo "skipped: the Spack recipe (no python3)"
fi

# 2. Modulefiles
mf=$abs_top_builddir/contrib/modulefiles
[ -f "$mf/coll-gpu.lua" ] && [ -f "$mf/coll-gpu.tcl" ] ||
    { fail "no $mf/coll-gpu.lua and .tcl (make in contrib/modulefiles)"; exit 1; }
mcadir=$(sed -n 's/^local mca_dir = "\(.*\)"$/\1/p' "$mf/coll-gpu.lua")
pkglibdir=$(sed -n 's/^local ompi_pkglibdir = "\(.*\)"$/\1/p' "$mf/coll-gpu.lua")
mandir=$(sed -n 's/^prepend_path("MANPATH", "\(.*\)")$/\1/p' "$mf/coll-gpu.lua")
[ -n "$mcadir" ] && [ -n "$pkglibdir" ] && [ -n "$mandir" ] || fail "cannot read the paths of coll-gpu.lua"
grep -q '@[A-Za-z_]*@' "$mf/coll-gpu.lua" "$mf/coll-gpu.tcl" && fail "placeholders left in the modulefiles"
own=/opt/site/coll-gpu/lib/openmpi
# The two installations: as configured, and with the component in a directory of its own.
mkdir -p "$tmp/mp/lmod/coll-gpu" "$tmp/mp/tcl/coll-gpu" "$tmp/mp/lmod-own/coll-gpu" "$tmp/mp/tcl-own/coll-gpu"
cp "$mf/coll-gpu.lua" "$tmp/mp/lmod/coll-gpu/1.lua"
cp "$mf/coll-gpu.tcl" "$tmp/mp/tcl/coll-gpu/1"
sed "s|^local mca_dir = .*|local mca_dir = \"$own\"|" "$mf/coll-gpu.lua" >"$tmp/mp/lmod-own/coll-gpu/1.lua"
sed "s|^set mca_dir  .*|set mca_dir \"$own\"|" "$mf/coll-gpu.tcl" >"$tmp/mp/tcl-own/coll-gpu/1"

home=$tmp/home
# expect KIND NAME: what the component path must be after "module load"
expect_path() {
    case $1 in
    own) echo "$own:$pkglibdir:$home/.openmpi/components" ;;
    *) if [ "$mcadir" = "$pkglibdir" ]; then echo "(unset)"; else
           echo "$mcadir:$pkglibdir:$home/.openmpi/components"; fi ;;
    esac
}
# check TOOL KIND SHELLCODE_OF_LOAD SHELLCODE_OF_UNLOAD
check_env() {
    local tool=$1 kind=$2 got want man before=$fails
    got=$(env -i HOME="$home" PATH="$PATH" MANPATH=/usr/share/man sh -c "$3
        echo \"\${OMPI_MCA_mca_base_component_path-(unset)}|\$MANPATH\"")
    want=$(expect_path "$kind")
    man=${got#*|}
    got=${got%%|*}
    [ "$got" = "$want" ] || fail "$tool ($kind): OMPI_MCA_mca_base_component_path=$got, not $want"
    case $man in "$mandir":*) ;; *) fail "$tool ($kind): MANPATH=$man does not start with $mandir" ;; esac
    if [ -n "${4:-}" ]; then
        got=$(env -i HOME="$home" PATH="$PATH" MANPATH=/usr/share/man sh -c "$3
            $4
            echo \"\${OMPI_MCA_mca_base_component_path-(unset)}|\$MANPATH\"")
        [ "$got" = "(unset)|/usr/share/man" ] || fail "$tool ($kind): after unload: $got"
    fi
    [ "$fails" -eq "$before" ] &&
        echo "$tool ($kind): OMPI_MCA_mca_base_component_path=$want, MANPATH=$mandir:..."
}

# Lmod
# (CHECK_MODULES_STANDIN=1: the stand-ins even where the real tools are installed)
standin=${CHECK_MODULES_STANDIN:-0}
luacmd=
for l in lua lua5.4 lua5.3; do command -v $l >/dev/null 2>&1 && luacmd=$l && break; done
lmod=${LMOD_CMD:-}
[ -n "$lmod" ] || [ "$standin" = 1 ] || for l in /usr/share/lmod/lmod/libexec/lmod /opt/apps/lmod/lmod/libexec/lmod; do
    [ -x "$l" ] && lmod=$l && break
done
if [ -n "$lmod" ]; then
    for kind in conf own; do
        d=$tmp/mp/lmod; [ $kind = own ] && d=$tmp/mp/lmod-own
        load=$(env -i HOME="$home" PATH="$PATH" MANPATH=/usr/share/man MODULEPATH="$d" \
            LMOD_ALLOW_ROOT_USE=yes "$lmod" sh load coll-gpu 2>"$tmp/lmod.err") ||
            { fail "lmod load: $(cat "$tmp/lmod.err")"; continue; }
        check_env "Lmod $($lmod --version 2>&1 | sed -n 's/.*Version \([0-9.]*\).*/\1/p' | head -n 1)" \
            "$kind" "export MODULEPATH='$d' LMOD_ALLOW_ROOT_USE=yes; $load" \
            "eval \"\$('$lmod' sh unload coll-gpu 2>/dev/null)\""
        ran=$((ran + 1))
    done
elif [ -n "$luacmd" ]; then
    # Lmod's functions, enough for this modulefile: print shell code.
    cat >"$tmp/standin.lua" <<'LUA'
local function get(n) return os.getenv(n) end
local env = {}
local function cur(n) if env[n] ~= nil then return env[n] end return get(n) end
function prepend_path(n, v) local c = cur(n); env[n] = (c and c ~= "") and (v .. ":" .. c) or v end
function append_path(n, v) local c = cur(n); env[n] = (c and c ~= "") and (c .. ":" .. v) or v end
function setenv(n, v) env[n] = v end
function pathJoin(a, b) return a .. "/" .. b end
function whatis() end
function help() end
dofile(arg[1])
for n, v in pairs(env) do print("export " .. n .. "=\"" .. v .. "\"") end
LUA
    for kind in conf own; do
        f=$tmp/mp/lmod/coll-gpu/1.lua; [ $kind = own ] && f=$tmp/mp/lmod-own/coll-gpu/1.lua
        load=$(HOME="$home" MANPATH=/usr/share/man $luacmd "$tmp/standin.lua" "$f") ||
            { fail "lua could not run $f"; continue; }
        check_env "$($luacmd -v 2>&1 | cut -d' ' -f1-2) stand-in" "$kind" "$load"
        ran=$((ran + 1))
    done
else
    echo "skipped: the Lmod modulefile (neither Lmod nor lua)"
fi

# Environment Modules (Tcl)
modulecmd=${MODULES_CMD:-}
[ -n "$modulecmd" ] || [ "$standin" = 1 ] || for m in /usr/lib/x86_64-linux-gnu/modulecmd.tcl /usr/lib/modulecmd.tcl \
    /usr/share/modules/libexec/modulecmd.tcl /usr/local/Modules/libexec/modulecmd.tcl; do
    [ -f "$m" ] && modulecmd=$m && break
done
if [ -n "$modulecmd" ] && command -v tclsh >/dev/null 2>&1; then
    for kind in conf own; do
        d=$tmp/mp/tcl; [ $kind = own ] && d=$tmp/mp/tcl-own
        load=$(env -i HOME="$home" PATH="$PATH" MANPATH=/usr/share/man MODULEPATH="$d" \
            tclsh "$modulecmd" sh load coll-gpu 2>"$tmp/mod.err") ||
            { fail "modulecmd load: $(cat "$tmp/mod.err")"; continue; }
        [ -s "$tmp/mod.err" ] && fail "modulecmd load: $(cat "$tmp/mod.err")"
        check_env "Environment Modules $(tclsh "$modulecmd" sh --version 2>&1 | sed -n 's/^Modules Release \([^ ]*\).*/\1/p')" \
            "$kind" "export MODULEPATH='$d'; $load" \
            "eval \"\$(tclsh '$modulecmd' sh unload coll-gpu 2>/dev/null)\""
        ran=$((ran + 1))
    done
elif command -v tclsh >/dev/null 2>&1; then
    for kind in conf own; do
        f=$tmp/mp/tcl/coll-gpu/1; [ $kind = own ] && f=$tmp/mp/tcl-own/coll-gpu/1
        load=$(HOME="$home" MANPATH=/usr/share/man tclsh /dev/stdin "$f" <<'TCL'
array set out {}
proc cur {n} { global out env
    if {[info exists out($n)]} { return $out($n) }
    if {[info exists env($n)]} { return $env($n) }
    return "" }
proc prepend-path {n v} { global out; set c [cur $n]; set out($n) [expr {$c eq "" ? $v : "$v:$c"}] }
proc append-path {n v} { global out; set c [cur $n]; set out($n) [expr {$c eq "" ? $v : "$c:$v"}] }
proc setenv {n v} { global out; set out($n) $v }
proc module-whatis {args} {}
source [lindex $argv 0]
foreach n [array names out] { puts "export $n=\"$out($n)\"" }
TCL
        ) || { fail "tclsh could not run $f"; continue; }
        check_env "tclsh $(echo 'puts [info patchlevel]' | tclsh) stand-in" "$kind" "$load"
        ran=$((ran + 1))
    done
else
    echo "skipped: the Tcl modulefile (neither modulecmd.tcl nor tclsh)"
fi

[ "$fails" -eq 0 ] || exit 1
[ "$ran" -gt 0 ] || { echo "SKIP: no tool to check the packaging with"; exit 77; }
echo "PASS ($ran checks)"
