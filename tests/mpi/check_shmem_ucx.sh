#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The ucx backend of shmem-transport (test_shmem_ucx) without NIC or GPU: UCX over tcp and over
# shared memory between 2, 3 and 4 processes (and 8 over tcp, smaller sizes): put/get of host
# memory with content checks, put_signal ordering under the three orderings (active message,
# flush, fence) and signals never lowering a slot,
# emulated device memory through the staged pipeline, bounds errors, endpoint counts, a peer
# that dies (error within the timeout), create/destroy cycles without fd or memory growth
# (1,000 in the first run), the NIC choice ("" here, and said why at verbose level 1).
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

if [ "${COLL_GPU_HAVE_UCX:-0}" != 1 ]; then
    echo "SKIP: built without UCX"
    echo "0 passed, 0 failed"
    exit 77
fi

# AddressSanitizer's quarantine makes resident memory meaningless (its leak check covers it).
RSS=
[ "${COLL_GPU_ASAN:-0}" = 1 ] && RSS=--rss-limit=1048576

# UCX_TLS from the environment (as a user sets it), and once through the team parameter.
run_tls() {
    local tls=$1
    shift
    UCX_TLS=$tls check_run "$@"
}

# 2 ranks over tcp: 1,000 create/destroy cycles (sizes up to 1 MiB: the others run them all),
# a dying peer, and what verbose level 1 says (the NIC choice and why, staging, signal order).
run_tls tcp,self "2 ranks, UCX_TLS=tcp,self, 1000 cycles, dead peer" 2 "" test_shmem_ucx \
    --cycles=1000 --dead-peer --max=1048576 -v $RSS
[ "$CHECK_RESULT" = SKIP ] ||
    check_expect_output "verbose output" "network devices all \(nearest NIC: .+\)" \
        "TLS tcp,self;" "staged through pinned host buffers" "signals ordered by active message"
# 8 B .. 16 MiB over shared memory, and a dying peer found by the timeout there.  Without
# cma: UCX 1.18's cma transport aborts the process when its process_vm_writev meets a dead
# peer (Debian 13), instead of failing the endpoint; posix and sysv segments fail cleanly.
run_tls sysv,posix,self "2 ranks, UCX_TLS=sysv,posix,self, dead peer" 2 "" test_shmem_ucx \
    --cycles=20 --dead-peer $RSS
# 8 B .. 16 MiB over tcp; the transport list as the team parameter; the fence and flush
# orderings of signals (single-lane here, where UCX's weak fence suffices)
CGT_UCX_SIGNAL=fence check_run "3 ranks, --tls=tcp,self, fence ordering" 3 "" \
    test_shmem_ucx --tls=tcp,self --cycles=10 -v $RSS
[ "$CHECK_RESULT" = SKIP ] || check_expect_output "fence ordering" "signals ordered by fence"
CGT_UCX_SIGNAL=flush check_run "3 ranks, UCX_TLS=tcp,self, flush ordering" 3 "" \
    test_shmem_ucx --tls=tcp,self --cycles=3 --max=65537 -v $RSS
[ "$CHECK_RESULT" = SKIP ] || check_expect_output "flush ordering" "signals ordered by flush"
run_tls shm,self "4 ranks, UCX_TLS=shm,self" 4 "" test_shmem_ucx --cycles=10 --max=4194304 $RSS
run_tls tcp,self "8 ranks, UCX_TLS=tcp,self" 8 "" test_shmem_ucx --cycles=3 --max=65537 $RSS

check_finish
