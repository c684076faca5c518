# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the perf/ scripts: sets top_build (make check's build directory, the current one
# when it is a build directory, else the source tree of an in-tree build) and sources its
# tests/test_env.sh ($MPIRUN, $COLL_GPU_MCA).
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
top_build=${abs_top_builddir:-}
if [ -z "$top_build" ]; then
    if [ -f "$PWD/tests/test_env.sh" ]; then top_build=$PWD; else top_build=$(cd "$here/.." && pwd); fi
fi
# shellcheck disable=SC1091
. "${TEST_ENV:-$top_build/tests/test_env.sh}"
