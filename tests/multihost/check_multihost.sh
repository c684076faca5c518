#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Open MPI across 2 real, separate "hosts" on this machine: network namespaces, each with its
# own hostname (a UTS namespace), its loopback and one veth into a bridge that lives in a third
# namespace of its own, so that the hosts reach each other and nothing else (no route, no
# address outside 10.213.0.0/24 on the bridge).  mpirun runs on host 1 and starts the orted of
# host 2 through plm_rsh_agent = a small script of ours that runs the command inside host 2's
# namespaces with an environment as bare as ssh gives; btl tcp between the hosts (vader
# within one), the component's UCX transport over the veth (UCX_TLS=tcp,self).
#   - test_collectives, 2 hosts x 2 ranks, through the component: host buffers in host-buffer
#     mode (coll_gpu_host_buffers=1, native algorithms across the hosts) and emulated device
#     memory (native where it has an algorithm, else staged), and memory kinds that differ
#     across ranks with default parameters (a host of host memory; test_memory_kinds' output,
#     input, allreduce and one_host programs): the call board across real hosts;
#   - test_late_rank (host-buffer mode) and test_alloc_faults (emulated device memory) across
#     the hosts: the failure model where Open MPI itself sees 2 nodes;
#   - test_net_traffic across the hosts: allreduce, allgather, reduce_scatter_block, reduce and
#     bcast within their traffic bounds (the coll_gpu_net_* counters of real hosts), and the
#     leaders' algorithms (allgather hierarchical_doubling, reduce_scatter_block
#     hierarchical_halving): only the leaders talk between the hosts, getting exactly their due;
#   - with MULTIHOST_MPICH=1: MPICH's test/mpi/coll (tests/mpich/run-mpich-coll.sh, modes
#     plain and host) with the ranks of every test spread over the 2 hosts (2 slots each,
#     oversubscribed beyond).  Off by default: over tcp between the namespaces on 2 busy cores
#     a test takes 6-45 s instead of 1 (allredmany over 60 s even alone), about an hour for
#     the suite.
# Needs root and network namespaces: skips (77) saying why where they cannot be made.  The
# namespaces (and with them the bridge and the veths) go when the script ends (trap).
# Exit 0 pass, 1 fail, 77 skip.
#
#   TEST_ENV=build/tests/test_env.sh TEST_BIN_DIR=build/tests/mpi tests/multihost/check_multihost.sh
# MULTIHOST_MPICH=1 adds the MPICH suite (MPICH_COLL_DEADLINE bounds each mode; default 1500 s).
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../mpi/check_common.sh"

skip() {
    echo "SKIP: $*"
    echo "0 passed, 0 failed"
    exit 77
}
[ "${OMPI_MAJOR_VERSION:-4}" -lt 5 ] ||
    skip "written for Open MPI 4.1's launcher (ORTE's parameters); not run on Open MPI 5"
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
for t in ip unshare nsenter; do
    command -v $t >/dev/null || skip "no $t here"
done

id=$$
sw=cgmh$id-sw
hosts=("cgmh$id-h1" "cgmh$id-h2")
addrs=(10.213.0.1 10.213.0.2)
names=(cgmh-host1 cgmh-host2)
made=()
cleanup() {
    local ns
    for ns in "${made[@]}"; do
        # the processes still in it first (a run cut short), then the namespace: its veth
        # end goes with it, and the peer end with the bridge's namespace
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
    rm -rf "$CHECK_LOGDIR"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ip netns add "$sw" 2>"$CHECK_LOGDIR/netns.err" ||
    skip "cannot create a network namespace here: $(cat "$CHECK_LOGDIR/netns.err")"
made+=("$sw")
ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up ||
    skip "cannot create a bridge in a network namespace"
for i in 0 1; do
    ns=${hosts[$i]}
    ip netns add "$ns" || check_die "ip netns add $ns"
    made+=("$ns")
    ip link add mh0 netns "$ns" type veth peer name "p$i" netns "$sw" ||
        skip "cannot create a veth pair between network namespaces"
    ip -n "$sw" link set "p$i" master br0 up &&
        ip -n "$ns" link set lo up &&
        ip -n "$ns" addr add "${addrs[$i]}/24" dev mh0 &&
        ip -n "$ns" link set mh0 up || check_die "cannot set up $ns"
done
# (the bridge has no STP: its ports forward at once)
echo "hosts: ${names[0]} (${addrs[0]}, namespace ${hosts[0]}), ${names[1]} (${addrs[1]}, namespace ${hosts[1]})"

# in_host I CMD...: CMD inside host I (its network namespace and a hostname of its own)
cat >"$CHECK_LOGDIR/in_host" <<EOF
#!/bin/bash
case \$1 in
0) ns=${hosts[0]} name=${names[0]} ;;
1) ns=${hosts[1]} name=${names[1]} ;;
*) echo "in_host: no host \$1" >&2; exit 1 ;;
esac
shift
exec ip netns exec "\$ns" unshare --uts /bin/bash -c 'hostname "\$0" && exec "\$@"' "\$name" "\$@"
EOF
# the rsh agent: "agent HOST COMMAND..." as ssh runs it: COMMAND is a shell line, run by the
# user's shell on HOST with the login environment, not the caller's
cat >"$CHECK_LOGDIR/agent" <<EOF
#!/bin/bash
case \$1 in
${addrs[0]}) h=0 ;;
${addrs[1]}) h=1 ;;
*) echo "agent: unknown host \$1 (only ${addrs[*]})" >&2; exit 255 ;;
esac
shift
exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="\$HOME" \
    USER=root LOGNAME=root SHELL=/bin/bash "$CHECK_LOGDIR/in_host" \$h /bin/bash -c "\$*"
EOF
# mpirun on host 1
cat >"$CHECK_LOGDIR/mpirun" <<EOF
#!/bin/bash
exec "$CHECK_LOGDIR/in_host" 0 "$MPIRUN" "\$@"
EOF
chmod +x "$CHECK_LOGDIR/in_host" "$CHECK_LOGDIR/agent" "$CHECK_LOGDIR/mpirun"
printf '%s slots=2\n' "${addrs[@]}" >"$CHECK_LOGDIR/hostfile"

MPIRUN=$CHECK_LOGDIR/mpirun
export UCX_TLS=tcp,self UCX_NET_DEVICES=mh0 UCX_WARN_UNUSED_ENV_VARS=n
# the hosts, the launcher, the networks; UCX's variables forwarded to the ranks (the agent
# does not pass the environment on, as ssh does not)
NET="orte_default_hostfile=$CHECK_LOGDIR/hostfile plm_rsh_agent=$CHECK_LOGDIR/agent"
NET="$NET oob_tcp_if_include=10.213.0.0/24 btl_tcp_if_include=10.213.0.0/24 btl=self,vader,tcp"
NET="$NET pml=ob1 mca_base_env_list=UCX_TLS;UCX_NET_DEVICES;UCX_WARN_UNUSED_ENV_VARS"
EMU="coll_gpu_accelerator=emulated coll_gpu_staging_buffer_size=65536"

# where the ranks ran: 2 on each host
echo "=== where 4 ranks run"
net_argv=()
for pair in $NET; do net_argv+=(--mca "${pair%%=*}" "${pair#*=}"); done
ran=$(timeout 60 "$MPIRUN" -n 4 "${net_argv[@]}" hostname 2>&1 | sort | uniq -c | tr -s ' ')
echo "$ran"
if [ "$(echo "$ran" | grep -c "^ 2 cgmh-host[12]$")" = 2 ]; then
    check_count PASS "2 ranks on each host"
else
    check_count FAIL "2 ranks on each host"
fi
# the component sees 2 nodes
check_run "2 hosts x 2 ranks: hostnames" 4 "$NET $EMU coll_gpu_host_buffers=1 coll_gpu_verbose=10" \
    test_collectives --kinds=host --small-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "native across the 2 hosts" \
    "over 2 nodes"
# rails auto on real hosts: a host's two ranks share its one interface (UCX_NET_DEVICES=mh0), so
# every rank resolves rails off (the suites run them on: CHECK_DEFAULT_MCA)
check_run "2 hosts x 2 ranks: coll_gpu_tree_rails auto, one interface per host" 4 \
    "$NET $EMU coll_gpu_host_buffers=1 coll_gpu_tree_rails=auto coll_gpu_verbose=1" \
    test_net_traffic --coll=bcast --bytes=1048576 --root=3 --ranks-per-node=2
[ "$CHECK_RESULT" = PASS ] && check_expect_count "every rank: rails off, one interface" 4 \
    "network devices mh0, rails off \(the ranks of a node use the same network devices\)"
check_run "2 hosts x 2 ranks, host buffers, host-buffer mode" 4 "$NET $EMU coll_gpu_host_buffers=1" \
    test_collectives --kinds=host --big=4m
check_run "2 hosts x 2 ranks, emulated device memory" 4 "$NET $EMU" test_collectives \
    --kinds=host,device --big=4m
# memory kinds that differ across ranks, default parameters (the call board across hosts): a
# whole host passing host memory, then host memory on one rank of each host
check_run "2 hosts x 2 ranks, host 1 host memory, host 2 device memory" 4 "$NET $EMU" \
    test_collectives --rank-kinds=host,host,device,device --big=1m
check_run "2 hosts x 2 ranks, even ranks host memory" 4 "$NET $EMU" test_memory_kinds \
    --big=1m --cases=output,input,allreduce,one_host

# the failure model across real hosts: a rank 3 s late (no error, right results), one rank
# failing to allocate or to create a stream
check_run "2 hosts x 2 ranks, host-buffer mode, a rank late" 4 "$NET $EMU coll_gpu_host_buffers=1" \
    test_late_rank --kinds=host --free-waits
check_run "2 hosts x 2 ranks, device memory, one rank failing to allocate" 4 \
    "$NET $EMU $CHECK_NO_HELP_AGGREGATE" test_alloc_faults

# traffic between the real hosts against the bounds (test_net_traffic, as check_net_traffic.sh
# on emulated nodes): every collective with an algorithm spanning nodes, 1 MiB (per block for
# allgather and reduce_scatter_block), rooted ones from the last rank
for coll in allreduce allgather reduce_scatter_block reduce bcast; do
    check_run "2 hosts x 2 ranks, traffic between the hosts: $coll" 4 \
        "$NET $EMU coll_gpu_host_buffers=1" test_net_traffic --coll=$coll --bytes=1048576 \
        --root=3 --ranks-per-node=2
done
# the leaders' algorithms between the real hosts: only a host's first rank talks to the other
# host, putting only signals; allgather's gets exactly the other host's blocks, reduce_scatter's
# one partial of each
check_run "2 hosts x 2 ranks, traffic between the hosts: allgather hierarchical_doubling" 4 \
    "$NET $EMU coll_gpu_host_buffers=1 coll_gpu_allgather_algorithm=hierarchical_doubling" \
    test_net_traffic --coll=allgather --bytes=65536 --doubling --ranks-per-node=2
check_run "2 hosts x 2 ranks, traffic between the hosts: reduce_scatter_block hierarchical_halving" 4 \
    "$NET $EMU coll_gpu_host_buffers=1 coll_gpu_reduce_scatter_block_algorithm=hierarchical_halving" \
    test_net_traffic --coll=reduce_scatter_block --bytes=65536 --doubling --ranks-per-node=2

if [ "${MULTIHOST_MPICH:-0}" = 1 ]; then
    echo "=== MPICH test/mpi/coll across the 2 hosts (plain, and through the component)"
    net_args=""
    for pair in $NET; do net_args="$net_args --mca ${pair%%=*} ${pair#*=}"; done
    MPICH_COLL_MPIRUN=$MPIRUN MPICH_COLL_MPIRUN_ARGS=$net_args \
        bash "$here/../mpich/run-mpich-coll.sh" --modes plain,host >"$CHECK_LOGDIR/mpich.log" 2>&1
    rc=$?
    sed -n '/^mode  *passed/,$p' "$CHECK_LOGDIR/mpich.log" | grep -v '^  [a-z_0-9]*: coll/'
    case $rc in
    0) check_count PASS "MPICH suite across 2 hosts" ;;
    77) check_count SKIP "MPICH suite across 2 hosts"; grep -a '^SKIP' "$CHECK_LOGDIR/mpich.log" ;;
    *)
        cat "$CHECK_LOGDIR/mpich.log"
        check_count FAIL "MPICH suite across 2 hosts"
        ;;
    esac
fi

check_finish
