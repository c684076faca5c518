#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Generate configure and the Makefile.in files from configure.ac and the Makefile.am files.
#
#   ./autogen.sh && ./configure && make && make check
#
set -e

cd "$(dirname "$0")"

for tool in autoreconf aclocal automake libtoolize; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "autogen.sh: $tool not found: install autoconf, automake and libtool" >&2
        echo "            (Debian: contrib/install-deps.sh)" >&2
        exit 1
    fi
done

mkdir -p config/m4 config/aux

autoreconf -fi "$@"
