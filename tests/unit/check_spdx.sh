#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Every file of coll/gpu that git tracks names its license (LICENSE) in its first two lines:
# "SPDX-License-Identifier: BSD-3-Clause" in the file's own comment syntax (line 2 where line
# 1 must stay what it is: a "#!" line, an editor mode line, "#%Module").  Documentation
# (*.md, LICENSE), images and the two tool settings (.gitignore, .clang-format) are exempt.
# An executable file must still start with "#!" (a license line put above it would break it).
#
# Reads the file list from git: skips (77) outside a git checkout (a dist tarball), where
# what is tracked is not known.  Runs from "make check" or by hand: tests/unit/check_spdx.sh
#
top=$(cd "$(dirname "$0")/../.." && pwd)
spdx='SPDX-License-Identifier: BSD-3-Clause'

if ! command -v git >/dev/null 2>&1 || ! git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
    echo "SKIP: $top is not a git checkout (the tracked files are not known)"
    echo "0 passed, 0 failed"
    exit 77
fi
list=$(mktemp "${TMPDIR:-/tmp}/check_spdx.XXXXXX") || exit 1
trap 'rm -f "$list"' EXIT
git -C "$top" ls-files >"$list" || {
    echo "git ls-files failed in $top"
    echo "0 passed, 1 failed"
    exit 1
}

pass=0
fail=0
while IFS= read -r f; do
    case $f in
    *.md | LICENSE | *.png | .gitignore | .clang-format) continue ;;
    esac
    path=$top/$f
    [ -f "$path" ] || continue # deleted in the work tree, not yet committed
    if head -n 2 "$path" | grep -qF "$spdx"; then
        pass=$((pass + 1))
    else
        echo "FAIL: $f: no \"$spdx\" in its first two lines"
        fail=$((fail + 1))
    fi
    if [ -x "$path" ] && [ "$(head -c 2 "$path")" != '#!' ]; then
        echo "FAIL: $f: executable but its first line is not \"#!\""
        fail=$((fail + 1))
    fi
done <"$list"

[ -r "$top/LICENSE" ] && grep -q 'Redistribution and use in source and binary forms' "$top/LICENSE" || {
    echo "FAIL: LICENSE missing or not the BSD-3-Clause text"
    fail=$((fail + 1))
}
echo "check_spdx: $pass files name their license"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
