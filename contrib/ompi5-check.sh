#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds coll/gpu against Open MPI 5.0 and runs its whole test suite there:
# inside a Debian 13 (trixie) root made with debootstrap, whose Open MPI is
# 5.0.7.  Debian 13's libopenmpi-dev lacks some devel headers; they come from
# Debian's source package of the same version (apt-get source openmpi), given
# to configure as --with-ompi-src.  The CUDA toolkit, when present, is
# bind-mounted so the 5.0 build includes CUDA too.
#
#   contrib/ompi5-check.sh [ROOT_DIR]      (default: /var/tmp/coll-gpu-trixie; as root)
#
# The root is kept between runs (a cache: debootstrap is the slow part);
# /proc, /sys, /dev and the bind mounts are unmounted when the script ends,
# whether the tests passed or not.  Prints the same closing line as
# contrib/run-tests.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/var/tmp/coll-gpu-trixie}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cuda=${CUDA_HOME:-/usr/local/cuda}
packages=build-essential,autoconf,automake,libtool,pkg-config,dpkg-dev,valgrind,openmpi-bin,libopenmpi-dev,libpmix-dev,libucx-dev,libhwloc-dev,libibverbs-dev,librdmacm-dev

[ "$(id -u)" -eq 0 ] || { echo "ompi5-check.sh: run as root (debootstrap, chroot, mount)" >&2; exit 1; }
command -v debootstrap >/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null

# Mounts an interrupted earlier run left under the root (a killed run skips its EXIT trap):
# gone first, so that nothing below goes through them (rm -rf would, into /dev and the tree).
findmnt -rn -o TARGET | awk -v r="$root/" 'index($0, r) == 1' | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done

t0=$(date +%s)
if [ ! -x "$root/usr/bin/mpicc" ]; then
    rm -rf "$root"
    debootstrap --variant=minbase --include="$packages" trixie "$root" "$mirror" >"$root.log" 2>&1 ||
        { tail -n 20 "$root.log"; exit 1; }
fi

mounts=()
cleanup() {
    local i
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
        umount -l "${mounts[$i]}" 2>/dev/null || true
    done
}
trap cleanup EXIT
bind() { # bind SRC DST [--rbind]
    mkdir -p "$2"
    mount "${3:---bind}" "$1" "$2"
    mounts+=("$2")
}
mkdir -p "$root/proc"
mount -t proc proc "$root/proc"
mounts+=("$root/proc")
bind /sys "$root/sys" --rbind
bind /dev "$root/dev" --rbind
bind "$top" "$root/src"
if [ -d "$cuda" ]; then
    bind "$cuda" "$root/usr/local/cuda"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# debootstrap's minbase root has no /etc/hosts: every lookup of this host's name or of localhost
# (Open MPI's runtime, UCX) then went to the DNS server and waited out its timeout, 5 s and more
# per mpirun (a 4-rank run: 5.7 s against 0.55 s with the host's file)
if [ -r /etc/hosts ]; then cp /etc/hosts "$root/etc/hosts"; fi

# Open MPI's sources of the version the root has, for the headers Debian does not ship.
ompi_version=$(chroot "$root" dpkg-query -W -f='${Version}' libopenmpi-dev)
ompi_src=/opt/ompi-src/openmpi-${ompi_version%%-*}
if [ ! -d "$root$ompi_src" ]; then
    grep -q '^deb-src' "$root/etc/apt/sources.list" ||
        echo "deb-src $mirror trixie main" >>"$root/etc/apt/sources.list"
    chroot "$root" bash -c "apt-get update -q >/dev/null && mkdir -p /opt/ompi-src &&
        cd /opt/ompi-src && apt-get source -q openmpi=$ompi_version >/dev/null"
fi
t1=$(date +%s)

# Build out of the tree (the tree is mounted read-write, but left alone).
status=0
chroot "$root" bash -c "
    set -e
    cd /src && { [ -x configure ] || ./autogen.sh >/dev/null; }
    rm -rf /tmp/build && mkdir -p /tmp/build && cd /tmp/build
    # session directories a killed job of an earlier run left in the cached root: Open MPI 5's
    # runtime refuses to start where one of its name (its PID, reused) exists
    rm -rf /tmp/prterun.*
    /src/configure --with-ompi-src=$ompi_src --enable-werror >configure.log 2>&1 ||
        { tail -n 30 configure.log; exit 1; }
    sed -n '/^coll\/gpu .* configuration/,\$p' configure.log
    make -j$(nproc) >make.log 2>&1 || { tail -n 40 make.log; exit 1; }
" || status=$?
t2=$(date +%s)
if [ "$status" -eq 0 ]; then
    # MPICH's collective suite runs in the Open MPI 4.1 part only (its time; and its dtpools
    # use MPI-1 functions Open MPI 5 no longer has)
    chroot "$root" bash -c "cd /tmp/build && COLL_GPU_SKIP_MPICH=1 make -j$(nproc) check >check.log 2>&1" || status=$?
fi
t3=$(date +%s)

. "$top/contrib/test-summary.sh"
test_summary "$root/tmp/build/tests" "$root/tmp/build/" " (Open MPI 5)"
pass=$test_pass fail=$test_fail skip=$test_skip
[ "$status" -eq 0 ] || [ "$fail" -gt 0 ] || fail=1
echo "Open MPI 5 times: root and sources $((t1 - t0)) s, build $((t2 - t1)) s, tests $((t3 - t2)) s"
echo "Open MPI 5: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
