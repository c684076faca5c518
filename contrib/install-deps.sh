#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Install what coll/gpu needs to build and test on Debian 12 (bookworm) or a close relative
# (gnuplot-nox: the PNG plots of perf/compare, which works without it; tcl and lua5.3: make
# check loads the modulefiles with them when neither Environment Modules nor Lmod is there).
# Idempotent: installs only the missing packages and runs "apt-get update" only when one of
# them has no install candidate (empty or stale package lists).  Not CUDA: that is optional,
# and configure uses /usr/local/cuda when it exists (or --with-cuda=DIR).
#
#   contrib/install-deps.sh          (as root, or through sudo)
#
set -e

PACKAGES="build-essential autoconf automake libtool pkg-config
openmpi-bin libopenmpi-dev libucx-dev libhwloc-dev libibverbs-dev librdmacm-dev
valgrind clang-format
gnuplot-nox tcl lua5.3"

if ! command -v apt-get >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    echo "install-deps.sh: apt-get not found: install by hand:" $PACKAGES >&2
    exit 1
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=sudo
    else
        echo "install-deps.sh: run as root (or install sudo)" >&2
        exit 1
    fi
fi

missing=
for pkg in $PACKAGES; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    case $status in
    *" installed") ;;
    *) missing="$missing $pkg" ;;
    esac
done

if [ -z "$missing" ]; then
    echo "install-deps.sh: all packages already installed"
    exit 0
fi
echo "install-deps.sh: installing:$missing"

# Update the package lists only if some missing package has no candidate.
need_update=no
for pkg in $missing; do
    candidate=$(apt-cache policy "$pkg" 2>/dev/null | sed -n 's/^ *Candidate: *//p')
    if [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then
        need_update=yes
        break
    fi
done

export DEBIAN_FRONTEND=noninteractive
if [ "$need_update" = yes ]; then
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update
fi
# shellcheck disable=SC2086
if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing; then
    # A stale list can name package versions the mirror no longer has: refresh once, retry.
    if [ "$need_update" = no ]; then
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
    else
        exit 1
    fi
fi
echo "install-deps.sh: done"
