#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Traffic between nodes against the bounds of bandwidth-optimal algorithms (test_net_traffic,
# the coll_gpu_net_* pvars around one native call on emulated nodes, host buffers; they count,
# they do not time, so oversubscribed runs are fine):
#   - MPI_Allreduce of 4 MiB + 12 bytes and of 100 KiB + 4 on 2, 3 (even and uneven: 2+2+1),
#     5, 8 and 16 nodes of 1 and 2 ranks, auto (hierarchical, or the ring from
#     coll_gpu_allreduce_ring_min_bytes where every node has one rank) and hierarchical forced: every rank moves at most 2 (nnodes - 1) / nnodes x its
#     shard between nodes (+ 16 bytes per inter-node message), and the result is right;
#   - MPI_Allgather and MPI_Reduce_scatter_block of 256 KiB + 4 bytes per block on 2 to 5 nodes
#     of 1 to 3 ranks, even and uneven: every block crosses to each other node once, every node
#     sends one partial per block of the other nodes, and each rank's share is bounded
#     (test_net_traffic's header says how);
#   - MPI_Reduce of 1 MiB + 4 bytes, hierarchical, from two roots on 2 to 8 nodes of 1 to 3
#     ranks: every node sends at most 1 x the message (its partial), the root receives at most
#     nnodes - 1;
#   - MPI_Gather and MPI_Scatter of 64 KiB blocks on 3 and 5 nodes of 2 and 3 ranks, even and
#     uneven, the root on a full node and alone on its node: every other node's blocks cross
#     the root's node's links once, each rank getting exactly the runs it carries or leads (with
#     rails the root's node's ranks share the other nodes out; without, the root takes them all,
#     which fails the rails' counts), the root exchanges at most one data message per other node,
#     one rank of each other node gets from the root's (direct forced: neither, shown by the
#     counts); with rails in many steps too; auto's compiled band of hierarchical against
#     direct (direct on 5 nodes but for scatters of 1.5 MiB or more; without rails direct; a band
#     set by parameter holds);
#   - MPI_Alltoall of 1 KiB blocks on 3 to 5 nodes of 1 to 3 ranks, even and uneven: every
#     block crosses once; hierarchical (auto): one rank of each node gets from each other node,
#     at most 2 ceil(nnodes / L) messages per rank, and a node leader the agreement's (direct
#     forced: neither, shown by the counts); at most coll_gpu_alltoall_max_outstanding gets in
#     flight (8, 2, 1); each rank's messages equal to the cost model's, also with the agreement
#     in several rounds (coll_gpu_agreement_radix=2);
#   - MPI_Bcast of 4 MiB + 12 bytes, pipelined, from two roots on 2 to 8 nodes: every rank moves at most
#     1 x the message between nodes, and every node sends at most 1 x the message to the others
#     (what their ranks got from it: coll_gpu_net_bytes_received_by_node), the root's included;
#   - MPI_Allreduce of 64 bytes on 3 to 16 nodes, hierarchical and auto: at most
#     2 ceil(log2 nnodes) + 1 inter-node rounds per rank (coll_gpu_net_rounds), and
#     recursive_doubling forced on 5 and 8 nodes; auto's ring from
#     coll_gpu_allreduce_ring_min_bytes on;
#   - the per-call verbose line names each rank's traffic between nodes;
#   - hierarchical_doubling (forced, and auto from coll_gpu_allreduce_doubling_min_nodes): only
#     node leaders exchange messages between nodes, at most 2 (log2 p + 1) x the message each;
#     at most 2 ceil(log2 nnodes) + 1 inter-node rounds on 3, 5, 8 and 16 nodes;
#   - allgather hierarchical_doubling (forced, by a tuning rule, and auto's from
#     coll_gpu_allgather_doubling_min_nodes): only node leaders exchange messages between
#     nodes, each gets exactly the other nodes' blocks and puts only signals; at most
#     2 ceil(log2 nnodes) + 1 rounds on 3, 5, 8 and 16 nodes; bytes and messages per rank
#     against the cost model's (2+2+1, 6 nodes of 1 with radix 2);
#   - reduce_scatter_block hierarchical_halving (forced): only node leaders exchange messages
#     between nodes, putting only signals, each getting exactly the other nodes' blocks on 4
#     nodes of 2, 8 and 16 of 1, in at most 2 ceil(log2 nnodes) + 1 rounds; bytes and messages
#     per rank against the cost model's (2+2+1, 6 nodes of 1 with radix 2);
#   - bcast binomial (forced): only node leaders exchange messages between nodes, putting only
#     signals; every other node's leader gets the message once, each node serves it once per
#     child of its tree position; at most 2 ceil(log2 nnodes) + 1 rounds on 3, 5, 8 and 16
#     nodes, 1 MiB in 8 chunks on 5 nodes of 2; bytes and messages per rank against the cost
#     model's (2+2+1); pipelined fails those bounds; reduce binomial alike (every node but the
#     root's serves its partial once, a leader gets one per child; hierarchical fails); auto
#     with the compiled bands (the cost model's with rails) takes binomial for a 4 MiB bcast on
#     3 nodes of 2 and a 1 MiB reduce on 2 nodes of 2, within binomial's and the rails' bounds;
#     without rails the model's bands without them: pipelined and hierarchical there (a band
#     set by parameter holds); coll_gpu_tree_rails=auto off where a node's ranks share their
#     network devices (the one-leader counts), on where they differ, off on nodes of one rank;
#   - gather and scatter binomial (forced): only node leaders exchange messages between nodes,
#     putting only signals; a node's subtree's blocks cross its link once (gather: node j serves
#     its subtree's blocks, a leader gets its children's subtrees'; scatter backwards), at most
#     2 ceil(log2 nnodes) + 1 rounds on 5, 8 and 3 nodes, 256 KiB blocks in many steps;
#     hierarchical fails those bounds;
#   - alltoall's compiled band (direct on 4 nodes of 2 at 8 B and 1 KiB), a band set by parameter
#     (or by its deprecated name, coll_gpu_alltoall_aggregate_max_bytes) taken;
#   - ranks given different native parameters (one more on odd local ranks: a band parameter at
#     its compiled value under rails auto, the chunk size): every rank stages, rank 0 says why;
#     verbosity alone changes nothing;
#   - hierarchical_rabenseifner (forced): the allreduce bound on 4, 8 and 16 nodes, its rounds
#     pipelined (K chunks: K x 2 ceil(log2 nnodes) + the agreement's, no barrier); its bytes
#     against the cost model's on 2+2+1 and 8 nodes of 2;
#   - perf/cost_model --traffic's bytes between nodes against the counters' (allgather,
#     reduce_scatter_block, reduce, allreduce, bcast, alltoall; even and uneven nodes; direct too),
#     and its messages per rank for alltoall (hierarchical on 3+3+1, direct on 2+2) and
#     allreduce hierarchical_doubling (2+2+1, 5 nodes of 2 with radix 2), exactly.
# Exit 0 pass, 1 fail, 77 skip.
#
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"
. "$(dirname "$0")/check_common.sh"

# rails on: the target machine's (a network interface per GPU); this one's ranks share the
# loopback, where coll_gpu_tree_rails=auto resolves to off (its own runs below)
BASE="coll_gpu_accelerator=emulated coll_gpu_host_buffers=1 coll_gpu_tree_rails=on"
MODEL="$(cd "$(dirname "$0")/../.." && pwd)/perf/cost_model"

# check_model COLL ALG NODE_SIZES BYTES ROOT: the bytes the last run's ranks received between
# nodes (its closing line) are what perf/cost_model --traffic predicts for that layout, within
# 1 % + 1 KiB (allreduce's shards rounded to whole elements)
check_model() {
    local label="cost model: $1 $2 on nodes $3, $4 bytes" measured predicted
    if ! command -v python3 >/dev/null; then
        return
    fi
    measured=$(grep -ao 'between nodes in all, [0-9]* received' "$LAST_LOG" | tail -n 1 |
        grep -o '[0-9]*')
    predicted=$("$MODEL" --traffic --node-sizes "$3" --coll "$1" --traffic-alg "$2" \
        --sizes "$4" --root "$5" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["total_received"]))')
    if [ -n "$measured" ] && [ -n "$predicted" ] &&
        [ $(((measured > predicted ? measured - predicted : predicted - measured) * 100)) -le $((predicted + 102400)) ]; then
        echo "    $label: PASS (measured $measured, model $predicted)"
        check_count PASS "$label"
    else
        echo "    $label: FAIL (measured '$measured', model '$predicted')"
        check_count FAIL "$label"
    fi
}

# check_model_messages COLL ALG NODE_SIZES [RADIX]: every rank's messages between nodes in the
# last run (a one-step call: "COLL: rank R node N...: ... messages M") are what perf/cost_model
# --traffic predicts for that layout (and coll_gpu_agreement_radix, default 8), exactly
check_model_messages() {
    local measured predicted
    if ! command -v python3 >/dev/null; then
        return
    fi
    measured=$(grep -aoE "^$1: rank [0-9]+ node [0-9]+[a-z ]*: .* messages [0-9]+" "$LAST_LOG" |
        sed 's/.* messages //' | tr '\n' ' ')
    predicted=$("$MODEL" --traffic --node-sizes "$3" --coll "$1" --traffic-alg "$2" \
        --sizes 1024 --agreement-radix "${4:-8}" | python3 -c 'import json,sys; print(" ".join(str(m) for m in json.load(sys.stdin)["messages"]) + " ")')
    # measured first: an empty count fails
    check_equal "cost model" "$1 $2 on nodes $3 (radix ${4:-8}), messages per rank" \
        "$measured" "$predicted"
}

# (10 and 16 ranks: one size, the mpirun starts of 16 ranks on 2 cores cost more than the rest)
for topo in "4 2" "6 2" "5 2" "5 1" "10 2" "8 1" "16 2" "16 1"; do
    read -r np rpn <<<"$topo"
    nodes=$(((np + rpn - 1) / rpn))
    sizes="4194316 102404"
    [ "$np" -ge 10 ] && sizes=4194316
    for bytes in $sizes; do
        check_run "allreduce, $bytes bytes, $np ranks on $nodes nodes of $rpn, auto" $np \
            "$BASE coll_gpu_ranks_per_node=$rpn" test_net_traffic --coll=allreduce --bytes=$bytes
        if [ "$rpn" = 1 ]; then
            check_run "allreduce, $bytes bytes, $np ranks on $nodes nodes of 1, hierarchical" $np \
                "$BASE coll_gpu_ranks_per_node=1 coll_gpu_allreduce_algorithm=hierarchical" \
                test_net_traffic --coll=allreduce --bytes=$bytes
        fi
    done
done

# MPI_Bcast of 4 MiB + 12 bytes from rank 1 and from the last rank, pipelined (forced: auto's
# compiled band takes binomial there from 3 nodes, below): every rank moves at most 1 x the
# message between nodes, and no node sends more than 1 x the message (the chain); on 3 nodes or
# more (the chain) the rails too: every rank off the root's node gets at most the message / its
# node's ranks + a chunk, each node's ranks together exactly the message
for topo in "4 2" "6 2" "5 2" "5 1" "10 2" "8 1" "16 2"; do
    read -r np rpn <<<"$topo"
    nodes=$(((np + rpn - 1) / rpn))
    roots="1 $((np - 1))"
    [ "$np" -ge 10 ] && roots=$((np - 1)) # (10 and 16 ranks: one root, as above)
    rails=
    [ "$nodes" -ge 3 ] && rails=--rails
    for root in $roots; do
        check_run "bcast pipelined, 4194316 bytes from rank $root, $np ranks on $nodes nodes of $rpn" $np \
            "$BASE coll_gpu_ranks_per_node=$rpn coll_gpu_bcast_algorithm=pipelined" \
            test_net_traffic --coll=bcast --root=$root $rails
    done
done
# without rails (coll_gpu_tree_rails=0) the root's rail carries the whole message: the rails'
# bound fails (counts only; reduce binomial's below)
check_run "bcast chain without rails against the rails' bound, 6 ranks on 3 nodes of 2 (counts only)" 6 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_tree_rails=0 coll_gpu_bcast_algorithm=pipelined" \
    test_net_traffic --coll=bcast --root=1 --rails --count-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "one leader per node fails the rails' bound" \
    "NOTE bound not enforced: bcast \(rails\): rank [0-9]+ \(node [12] of 2 ranks\) got 4194316 bytes"

# coll_gpu_tree_rails=auto: off where a node's ranks use the same network devices (here every
# rank's are UCX's "all": the chain on one leader per node fails the rails' bound, as above), on
# where they differ (--odd-net-devices: a node's odd local ranks on UCX_NET_DEVICES=lo, as a
# GPU's own NIC: the rails' bound holds), off on nodes of one rank; each rank says which and why
check_run "bcast chain, rails auto, one network device per node: off (counts only)" 6 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_tree_rails=auto coll_gpu_bcast_algorithm=pipelined coll_gpu_verbose=1" \
    test_net_traffic --coll=bcast --root=1 --rails --count-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto: one leader per node fails the rails' bound" \
    "NOTE bound not enforced: bcast \(rails\): rank [0-9]+ \(node [12] of 2 ranks\) got 4194316 bytes"
[ "$CHECK_RESULT" = PASS ] && check_expect_count "auto: every rank says rails off, and why" 6 \
    "network devices all, rails off \(the ranks of a node use the same network devices\)"
check_run "bcast chain, rails auto, each node's ranks on two network devices: on" 6 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_tree_rails=auto coll_gpu_bcast_algorithm=pipelined coll_gpu_verbose=1" \
    test_net_traffic --coll=bcast --root=1 --rails --odd-net-devices=lo
[ "$CHECK_RESULT" = PASS ] && check_expect_count "auto: every rank says rails on, and why" 6 \
    "rails on \(the ranks of every node use different network devices\)"
check_run "scatter hierarchical, rails auto, each node's ranks on two network devices: on" 10 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_tree_rails=auto coll_gpu_scatter_algorithm=hierarchical" \
    test_net_traffic --coll=scatter --bytes=65536 --root=3 --rails --odd-net-devices=lo
check_run "scatter hierarchical, rails auto, one network device per node: off (counts only)" 10 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_tree_rails=auto coll_gpu_scatter_algorithm=hierarchical" \
    test_net_traffic --coll=scatter --bytes=65536 --root=3 --rails --count-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto: the root carries every node: the rails' counts fail" \
    "NOTE bound not enforced: scatter \(rails\): rank [0-9] \(node [0-9]\) got 0 bytes from other nodes, not the [1-9][0-9]* of the runs"
check_run "bcast chain, rails auto, nodes of one rank: off" 3 \
    "$BASE coll_gpu_ranks_per_node=1 coll_gpu_tree_rails=auto coll_gpu_bcast_algorithm=pipelined coll_gpu_verbose=1" \
    test_net_traffic --coll=bcast --root=1 --odd-net-devices=lo
[ "$CHECK_RESULT" = PASS ] && check_expect_count "auto: nodes of one rank, rails off" 3 "rails off \(one rank per node\)"

# Ranks given different native parameters (--odd-env: a node's odd local ranks get one more):
# the communicator's configuration hashes differ, so every rank stages its device collectives
# and rank 0 says why (--staged: none ran natively, the result right).  A band parameter set to
# its compiled value (bcast binomial from 2 nodes, the band with rails) under rails auto (off
# here): the ranks that set it take that band, the others the band without rails, so it must
# count (the hash once swallowed it); verbosity changes no algorithm and must not.
check_run "bcast, rails auto, odd ranks set coll_gpu_bcast_binomial_min_nodes to its default: staged" 4 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_tree_rails=auto" \
    test_net_traffic --coll=bcast --staged --odd-env=OMPI_MCA_coll_gpu_bcast_binomial_min_nodes=2
[ "$CHECK_RESULT" = PASS ] && check_expect_count "different parameters: rank 0 says so, once" 1 \
    "the ranks were given different coll_gpu parameters or tuning rules for the native algorithms: its device collectives are staged"
check_run "allreduce, odd ranks set coll_gpu_native_chunk_size: staged" 4 \
    "$BASE coll_gpu_ranks_per_node=2" \
    test_net_traffic --coll=allreduce --staged --odd-env=OMPI_MCA_coll_gpu_native_chunk_size=1048576
check_run "bcast, odd ranks set coll_gpu_verbose only: native" 4 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_tree_rails=auto" \
    test_net_traffic --coll=bcast --count-only --odd-env=OMPI_MCA_coll_gpu_verbose=0
[ "$CHECK_RESULT" = PASS ] && check_expect_count "the same native parameters: no word of a difference" 0 \
    "the ranks were given different coll_gpu parameters"

# MPI_Allgather and MPI_Reduce_scatter_block of 256 KiB + 4 bytes per block (auto: hierarchical
# where a node has several ranks): every block crosses to each other node once (allgather), each
# node sends one partial per block of the other nodes (reduce_scatter_block), and a rank's share
# of it is bounded; on nodes of one rank direct, which meets the same bounds.  Uneven nodes: 5
# ranks on 2+2+1, 7 on 3+3+1.
for topo in "4 2" "5 2" "6 3" "7 3" "10 2" "8 1"; do
    read -r np rpn <<<"$topo"
    nodes=$(((np + rpn - 1) / rpn))
    for coll in allgather reduce_scatter_block; do
        check_run "$coll, 262148 bytes per block, $np ranks on $nodes nodes of $rpn" $np \
            "$BASE coll_gpu_ranks_per_node=$rpn" test_net_traffic --coll=$coll --bytes=262148
    done
done

# the cost model's traffic (perf/cost_model --traffic) against the counters, one run each
check_run "model: allgather, 5 ranks on 2+2+1" 5 "$BASE coll_gpu_ranks_per_node=2" \
    test_net_traffic --coll=allgather --bytes=262144
check_model allgather hierarchical 2,2,1 262144 0
check_run "model: reduce_scatter_block, 7 ranks on 3+3+1" 7 "$BASE coll_gpu_ranks_per_node=3" \
    test_net_traffic --coll=reduce_scatter_block --bytes=262144
check_model reduce_scatter_block hierarchical 3,3,1 262144 0
# (direct exceeds the bound where nodes have several ranks: its counts only)
check_run "model: allgather direct, 4 ranks on 2+2" 4 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_allgather_algorithm=direct" \
    test_net_traffic --coll=allgather --bytes=262144 --count-only
check_model allgather direct 2,2 262144 0
check_run "model: reduce from rank 4, 5 ranks on 2+2+1" 5 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_reduce_algorithm=hierarchical" \
    test_net_traffic --coll=reduce --bytes=1048576 --root=4
check_model reduce hierarchical 2,2,1 1048576 4
check_run "model: allreduce, 6 ranks on 3 nodes of 2" 6 "$BASE coll_gpu_ranks_per_node=2" \
    test_net_traffic --coll=allreduce --bytes=4194304
check_model allreduce hierarchical 2,2,2 4194304 0
check_run "model: alltoall, 7 ranks on 3+3+1" 7 "$BASE coll_gpu_ranks_per_node=3" \
    test_net_traffic --coll=alltoall --bytes=1024
check_model alltoall hierarchical 3,3,1 1024 0
check_model_messages alltoall hierarchical 3,3,1
check_run "model: alltoall direct, 4 ranks on 2+2" 4 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_alltoall_algorithm=direct" \
    test_net_traffic --coll=alltoall --bytes=1024
check_model alltoall direct 2,2 1024 0
check_model_messages alltoall direct 2,2
# the agreement between node leaders in several rounds (radix 2: 3 rounds on 5 nodes)
check_run "model: alltoall direct, 5 nodes of 1, coll_gpu_agreement_radix=2" 5 \
    "$BASE coll_gpu_ranks_per_node=1 coll_gpu_agreement_radix=2" \
    test_net_traffic --coll=alltoall --bytes=1024
check_model_messages alltoall direct 1,1,1,1,1 2
check_run "model: alltoall, 10 ranks on 5 nodes of 2, coll_gpu_agreement_radix=2" 10 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_agreement_radix=2" \
    test_net_traffic --coll=alltoall --bytes=1024 --one-getter-per-node
check_model_messages alltoall hierarchical 2,2,2,2,2 2
# a radix below 2 is refused with the help message, and 2 is used (the same counts as above);
# repeated until the message arrives (Open MPI 4.1 loses some on their way to mpirun)
check_run_until "MCA parameter coll_gpu_agreement_radix has the value 1" \
    "coll_gpu_agreement_radix=1: refused, 2 used" 5 \
    "$BASE coll_gpu_ranks_per_node=1 coll_gpu_agreement_radix=1" \
    test_net_traffic --coll=alltoall --bytes=1024
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the invalid radix named" \
    "MCA parameter coll_gpu_agreement_radix has the value 1" "It uses 2 instead"
LAST_LOG=$LAST_RUN_LOG # the counts of one run
check_model_messages alltoall direct 1,1,1,1,1 2
check_run "model: bcast from rank 3, 8 ranks on 4 nodes of 2" 8 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_bcast_algorithm=pipelined" \
    test_net_traffic --coll=bcast --bytes=4194304 --root=3 --rails
check_model bcast chain 2,2,2,2 4194304 3

# MPI_Reduce of 1 MiB + 4 bytes, hierarchical (forced: auto's compiled band takes binomial there,
# below) from the last rank and from rank 1: each node sends the message at most once, the root
# receives at most nnodes - 1 messages
for topo in "4 2" "5 2" "7 3" "8 1"; do
    read -r np rpn <<<"$topo"
    nodes=$(((np + rpn - 1) / rpn))
    for root in 1 $((np - 1)); do
        check_run "reduce hierarchical, 1048580 bytes from rank $root, $np ranks on $nodes nodes of $rpn" $np \
            "$BASE coll_gpu_ranks_per_node=$rpn coll_gpu_reduce_algorithm=hierarchical" \
            test_net_traffic --coll=reduce --bytes=1048580 --root=$root
    done
done

# MPI_Gather and MPI_Scatter of 64 KiB blocks (auto: hierarchical where a node has several
# ranks; one step): every other node's blocks cross the root's node's links once, between the
# node's leader and its carrier, and each rank gets exactly the runs it carries (gather) or leads
# (scatter): with rails (coll_gpu_tree_rails: on, or auto where a node's ranks use different NICs) the root's node's ranks share the
# other nodes out, each node's leader on its carrier's rail (--rails); the root's messages
# between nodes at most nnodes - 1 gets, and where it leads its node the step's barrier and the
# closing agreement between node leaders, nnodes - 1 each with the default radix; one rank of
# each other node gets the node's blocks from the root's; direct forced fails both (the root
# gets every remote block alone, every remote rank gets its own)
for spec in "9 3 4" "10 2 3" "7 3 6" "7 3 0"; do
    read -r np rpn root <<<"$spec"
    nodes=$(((np + rpn - 1) / rpn))
    root_node=$((root / rpn))
    # the root's messages: a get per other node, and where it leads its node (its first rank)
    # the step's and the closing agreement's between node leaders (nodes - 1 each, radix 8)
    leads=$((root % rpn == 0 ? 1 : 0))
    for coll in gather scatter; do
        check_run "$coll, 65536 bytes per block from rank $root, $np ranks on $nodes nodes of $rpn" \
            $np "$BASE coll_gpu_ranks_per_node=$rpn" test_net_traffic --coll=$coll --bytes=65536 \
            --root=$root --root-messages=$((nodes - 1 + leads * 2 * (nodes - 1))) --one-getter-per-node \
            --rails
    done
done
# without rails the root carries every node (exactly the other nodes' blocks), and fails the
# rails' expectations; with rails in many steps (32 KiB halves: 3 KiB of each block a step)
for coll in gather scatter; do
    check_run "$coll without rails, 65536 bytes per block from rank 3, 10 ranks on 5 nodes of 2" 10 \
        "$BASE coll_gpu_ranks_per_node=2 coll_gpu_tree_rails=0" test_net_traffic --coll=$coll \
        --bytes=65536 --root=3 --root-messages=4 --one-getter-per-node
    check_run "$coll without rails against the rails' expectations (counts only)" 10 \
        "$BASE coll_gpu_ranks_per_node=2 coll_gpu_tree_rails=0" test_net_traffic --coll=$coll \
        --bytes=65536 --root=3 --rails --count-only
    [ "$CHECK_RESULT" = PASS ] && check_expect_output "the root carries every node: the rails' counts fail" \
        "NOTE bound not enforced: $coll \(rails\): rank [0-9] \(node [0-9]\) got 0 bytes from other nodes, not the [1-9][0-9]* of the runs"
    check_run "$coll with rails in many steps, 262144 bytes per block from rank 8, 9 ranks on 3 nodes of 3" 9 \
        "$BASE coll_gpu_ranks_per_node=3 coll_gpu_native_chunk_size=16384 coll_gpu_allreduce_one_shot_max_bytes=16384" \
        test_net_traffic --coll=$coll --bytes=262144 --root=8 --rails --one-getter-per-node
done
# auto's own band of hierarchical against direct (the suites run hierarchical on every call:
# CHECK_DEFAULT_MCA; here CHECK_AUTO_MCA, the compiled band): with rails gather hierarchical from
# 16 nodes, so on 5 nodes of 2 direct; scatter from 3 nodes from 1.5 MiB scattered, so 256 KiB
# blocks on 10 ranks (2.5 MiB) hierarchical, 64 KiB (640 KiB) direct; without rails scatter's
# band is never (direct); a band set by parameter holds
CHECK_DEFAULT_MCA=$CHECK_AUTO_MCA check_run "gather, 65536 bytes per block to rank 3, 10 ranks on 5 nodes of 2, auto's band: direct" 10 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" test_net_traffic --coll=gather \
    --bytes=65536 --root=3 --count-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "gather direct outside hierarchical's band" \
    "MPI_Gather on MPI_COMM_WORLD: 65536 x 1 bytes, host memory: direct \(not hierarchical's band: 5 nodes >= coll_gpu_gather_hierarchical_min_nodes=[0-9]+; "
CHECK_DEFAULT_MCA=$CHECK_AUTO_MCA check_run "scatter, 262144 bytes per block from rank 3, 10 ranks on 5 nodes of 2, auto's band: hierarchical" 10 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" test_net_traffic --coll=scatter \
    --bytes=262144 --root=3 --one-getter-per-node --rails
[ "$CHECK_RESULT" = PASS ] && check_expect_output "scatter hierarchical on its band" \
    "MPI_Scatter on MPI_COMM_WORLD: 262144 x 1 bytes, host memory: hierarchical"
CHECK_DEFAULT_MCA=$CHECK_AUTO_MCA check_run "scatter, 65536 bytes per block from rank 3, 10 ranks on 5 nodes of 2, auto's band: direct" 10 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" test_net_traffic --coll=scatter \
    --bytes=65536 --root=3 --count-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "scatter direct below its band: every remote rank gets its own block" \
    "MPI_Scatter on MPI_COMM_WORLD: 65536 x 1 bytes, host memory: direct \(not hierarchical's band: 5 nodes >= coll_gpu_scatter_hierarchical_min_nodes=[0-9]+; " \
    "NOTE bound not enforced: scatter: rank 9 \(node 4\) got 65536 bytes from other nodes" \
    "NOTE bound not enforced: scatter: rank 8 \(node 4\) got 65536 bytes from other nodes"
CHECK_DEFAULT_MCA=$CHECK_AUTO_MCA check_run "scatter, 262144 bytes per block, 5 nodes of 2, auto without rails: direct" 10 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10 coll_gpu_tree_rails=off" \
    test_net_traffic --coll=scatter --bytes=262144 --root=3 --count-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "scatter without rails: the band without them" \
    "MPI_Scatter on MPI_COMM_WORLD: 262144 x 1 bytes, host memory: direct \(not hierarchical's band: no rails, the cost model's band without them: "
CHECK_DEFAULT_MCA=$CHECK_AUTO_MCA check_run "gather, 65536 bytes per block, 5 nodes of 2, the band set from 2 nodes: hierarchical" 10 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10 coll_gpu_gather_hierarchical_min_nodes=2" \
    test_net_traffic --coll=gather --bytes=65536 --root=3 --rails
[ "$CHECK_RESULT" = PASS ] && check_expect_output "gather hierarchical on a band set by parameter" \
    "MPI_Gather on MPI_COMM_WORLD: 65536 x 1 bytes, host memory: hierarchical"
check_run "gather direct forced, 9 ranks on 3 nodes of 3 (counts only)" 9 \
    "$BASE coll_gpu_ranks_per_node=3 coll_gpu_gather_algorithm=direct" test_net_traffic \
    --coll=gather --bytes=65536 --root=4 --root-messages=2 --count-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "gather direct: the root's messages exceed it" \
    "NOTE bound not enforced: gather: the root exchanged 6 messages with other nodes > 2"
check_run "scatter direct forced, 9 ranks on 3 nodes of 3 (counts only)" 9 \
    "$BASE coll_gpu_ranks_per_node=3 coll_gpu_scatter_algorithm=direct" test_net_traffic \
    --coll=scatter --bytes=65536 --root=4 --one-getter-per-node --count-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "scatter direct: every remote rank gets" \
    "NOTE bound not enforced: scatter: 3 ranks of node 0 got data from other nodes, not one"

# MPI_Alltoall of 1 KiB blocks (auto: hierarchical, node-aggregated, across nodes of several
# ranks; direct across nodes of one): every block crosses once (each node sends exactly its
# blocks for the other nodes); for every pair of nodes one rank of each gets from the other, and
# a rank of a node of L ranks exchanges at most 2 ceil(nnodes / L) messages with other nodes, plus
# the agreement's on a node's first rank; at most coll_gpu_alltoall_max_outstanding (8) gets in
# flight
for topo in "8 2" "7 3" "9 3" "10 2" "5 1"; do
    read -r np rpn <<<"$topo"
    nodes=$(((np + rpn - 1) / rpn))
    check_run "alltoall, 1024 bytes per block, $np ranks on $nodes nodes of $rpn" $np \
        "$BASE coll_gpu_ranks_per_node=$rpn" test_net_traffic --coll=alltoall --bytes=1024 \
        --one-getter-per-node --max-in-flight=8
done
# auto's own band for alltoall (CHECK_AUTO_MCA, the compiled band: hierarchical from 64 nodes
# for blocks up to 32 B, on nodes of 8 H200): 1 KiB blocks on 4 nodes of 2 run direct, as do 8 B
# blocks (too few nodes); the band set from 2 nodes up to 1 KiB takes them hierarchical
CHECK_DEFAULT_MCA=$CHECK_AUTO_MCA check_run "alltoall, 1024 bytes per block, 8 ranks on 4 nodes of 2, auto's band: direct" 8 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" test_net_traffic --coll=alltoall \
    --bytes=1024 --one-getter-per-node --count-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "alltoall direct outside hierarchical's band" \
    "MPI_Alltoall on MPI_COMM_WORLD: 1024 x 1 bytes, host memory: direct \(not hierarchical's band: 4 nodes >= coll_gpu_alltoall_hierarchical_min_nodes=64; coll_gpu_alltoall_hierarchical_min_bytes=0 <= 1024 bytes per block <= coll_gpu_alltoall_hierarchical_max_bytes=32\)" \
    "NOTE bound not enforced: alltoall: 2 ranks of node 0 got data from node 1, not one"
CHECK_DEFAULT_MCA=$CHECK_AUTO_MCA check_run "alltoall, 8 bytes per block, 8 ranks on 4 nodes of 2, auto's band: direct" 8 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" test_net_traffic --coll=alltoall \
    --bytes=8 --count-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "alltoall direct below the band's node count" \
    "MPI_Alltoall on MPI_COMM_WORLD: 8 x 1 bytes, host memory: direct \(not hierarchical's band: 4 nodes >= coll_gpu_alltoall_hierarchical_min_nodes=64; "
CHECK_DEFAULT_MCA=$CHECK_AUTO_MCA check_run "alltoall, 1024 bytes per block, 4 nodes of 2, the band set from 2 nodes up to 1 KiB: hierarchical" 8 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10 coll_gpu_alltoall_hierarchical_min_nodes=2 coll_gpu_alltoall_hierarchical_max_bytes=1024" \
    test_net_traffic --coll=alltoall --bytes=1024 --one-getter-per-node --max-in-flight=8
[ "$CHECK_RESULT" = PASS ] && check_expect_output "alltoall hierarchical on a band set by parameter" \
    "MPI_Alltoall on MPI_COMM_WORLD: 1024 x 1 bytes, host memory: hierarchical \(4 nodes, some with several ranks\)"
CHECK_DEFAULT_MCA=$CHECK_AUTO_MCA check_run "alltoall, 1024 bytes per block, 4 nodes of 2, the deprecated coll_gpu_alltoall_aggregate_max_bytes sets the band's largest block" 8 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10 coll_gpu_alltoall_hierarchical_min_nodes=2 coll_gpu_alltoall_aggregate_max_bytes=1024" \
    test_net_traffic --coll=alltoall --bytes=1024 --one-getter-per-node
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the deprecated name still sets it" \
    "MPI_Alltoall on MPI_COMM_WORLD: 1024 x 1 bytes, host memory: hierarchical \(4 nodes, some with several ranks\)"
# direct forced: every rank gets from every rank off its node (counts only: it exceeds both)
check_run "alltoall direct forced, 8 ranks on 4 nodes of 2 (counts only)" 8 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_alltoall_algorithm=direct" test_net_traffic \
    --coll=alltoall --bytes=1024 --one-getter-per-node --max-in-flight=2 --count-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "alltoall direct: more messages, every rank gets" \
    "NOTE bound not enforced: alltoall: rank 0 \(node 0 of 2 ranks\) exchanged 12 messages with other nodes > 2 ceil\(nnodes / L\) \+ the agreement's = 7" \
    "NOTE bound not enforced: alltoall: 2 ranks of node 0 got data from node 1, not one" \
    "NOTE bound not enforced: alltoall: rank 0 had 6 gets from other nodes in flight at once"
# the bound on gets in flight: direct at 2 (6 remote blocks), hierarchical at 1 on 3+3+1 (the
# node of one rank carries both other nodes)
check_run "alltoall direct, coll_gpu_alltoall_max_outstanding=2, 4 nodes of 2" 8 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_alltoall_algorithm=direct coll_gpu_alltoall_max_outstanding=2" \
    test_net_traffic --coll=alltoall --bytes=1024 --max-in-flight=2
check_run "alltoall hierarchical, coll_gpu_alltoall_max_outstanding=1, 3+3+1" 7 \
    "$BASE coll_gpu_ranks_per_node=3 coll_gpu_alltoall_max_outstanding=1" \
    test_net_traffic --coll=alltoall --bytes=1024 --one-getter-per-node --max-in-flight=1

# Small messages: every rank's inter-node rounds (the messages on its critical path) at most
# 2 ceil(log2 nnodes) + 1; hierarchical's are 3 (the segments' reduce-scatter and allgather, the
# agreement).  Where every node has one rank auto takes hierarchical below
# coll_gpu_allreduce_ring_min_bytes (the ring's 2 (nnodes - 1) steps, 32 rounds on 16 nodes,
# would fail it), and the ring from it on.
for topo in "6 2" "5 2" "10 2" "16 2" "8 1" "16 1"; do
    read -r np rpn <<<"$topo"
    nodes=$(((np + rpn - 1) / rpn))
    check_run "allreduce, 64 bytes, $np ranks on $nodes nodes of $rpn, hierarchical: rounds" $np \
        "$BASE coll_gpu_ranks_per_node=$rpn coll_gpu_allreduce_algorithm=hierarchical" \
        test_net_traffic --coll=allreduce --bytes=64 --rounds
    if [ "$rpn" = 1 ]; then
        check_run "allreduce, 64 bytes, $np ranks on $nodes nodes of 1, auto: rounds" \
            $np "$BASE coll_gpu_ranks_per_node=1" \
            test_net_traffic --coll=allreduce --bytes=64 --rounds
    fi
done
# recursive doubling across nodes (forced): log2 nnodes rounds of one partner (+ 2 with extras)
for np in 5 8; do
    check_run "allreduce, 64 bytes, $np ranks on $np nodes of 1, recursive_doubling: rounds" $np \
        "$BASE coll_gpu_ranks_per_node=1 coll_gpu_allreduce_algorithm=recursive_doubling" \
        test_net_traffic --coll=allreduce --bytes=64 --rounds
done
# hierarchical_doubling (forced): only node leaders talk between nodes, 2 (log2 p + 1) x the
# message at most each, log2 p rounds (+ 2 beyond p) and the agreement's; their messages equal
# to the cost model's, and the bytes (2+2+1 and 5 nodes of 2 with the agreement in 3 rounds)
DBL="coll_gpu_allreduce_algorithm=hierarchical_doubling"
for topo in "6 2" "10 2" "16 2" "16 1"; do
    read -r np rpn <<<"$topo"
    nodes=$(((np + rpn - 1) / rpn))
    check_run "allreduce, 64 bytes, $np ranks on $nodes nodes of $rpn, hierarchical_doubling" $np \
        "$BASE coll_gpu_ranks_per_node=$rpn $DBL" \
        test_net_traffic --coll=allreduce --bytes=64 --rounds --doubling
done
check_run "model: allreduce hierarchical_doubling, 5 ranks on 2+2+1" 5 \
    "$BASE coll_gpu_ranks_per_node=2 $DBL" test_net_traffic --coll=allreduce --bytes=1024 --doubling
check_model allreduce hierarchical_doubling 2,2,1 1024 0
check_model_messages allreduce hierarchical_doubling 2,2,1
check_run "model: allreduce hierarchical_doubling, 10 ranks on 5 nodes of 2, radix 2" 10 \
    "$BASE coll_gpu_ranks_per_node=2 $DBL coll_gpu_agreement_radix=2" \
    test_net_traffic --coll=allreduce --bytes=1024 --doubling
check_model allreduce hierarchical_doubling 2,2,2,2,2 1024 0
check_model_messages allreduce hierarchical_doubling 2,2,2,2,2 2
# allgather hierarchical_doubling (forced): only node leaders talk between nodes, each gets
# exactly the other nodes' blocks; at most 2 ceil(log2 nnodes) + 1 inter-node rounds on 3, 5, 8
# and 16 nodes; bytes and messages per rank equal to the cost model's (2+2+1; 6 nodes of 1, two
# pairs beyond the power of two, with the agreement in 3 rounds)
AGD="coll_gpu_allgather_algorithm=hierarchical_doubling"
for topo in "10 2" "8 1" "16 1"; do
    read -r np rpn <<<"$topo"
    nodes=$(((np + rpn - 1) / rpn))
    check_run "allgather, 64 bytes, $np ranks on $nodes nodes of $rpn, hierarchical_doubling" $np \
        "$BASE coll_gpu_ranks_per_node=$rpn $AGD" \
        test_net_traffic --coll=allgather --bytes=64 --rounds --doubling
done
# (chosen by a tuning rule: auto does not take it)
printf 'allgather * * 0-4K hierarchical_doubling\n' >"$CHECK_LOGDIR/allgather_rules.conf"
check_run "allgather, 64 bytes, 6 ranks on 3 nodes of 2, hierarchical_doubling by a tuning rule" 6 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_tuning_file=$CHECK_LOGDIR/allgather_rules.conf coll_gpu_verbose=10" \
    test_net_traffic --coll=allgather --bytes=64 --rounds --doubling
[ "$CHECK_RESULT" = PASS ] && check_expect_output "a tuning rule's allgather hierarchical_doubling" \
    "MPI_Allgather on MPI_COMM_WORLD: .*host memory: hierarchical_doubling \(rule at .*allgather_rules.conf:1\)"
# auto takes it from coll_gpu_allgather_doubling_min_nodes nodes on, up to _max_bytes gathered
check_run "allgather, 64 bytes, 8 nodes of 1, auto from 4 nodes up to 4 KiB gathered" 8 \
    "$BASE coll_gpu_ranks_per_node=1 coll_gpu_allgather_doubling_min_nodes=4 coll_gpu_allgather_doubling_max_bytes=4096 coll_gpu_verbose=10" \
    test_net_traffic --coll=allgather --bytes=64 --rounds --doubling
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto's allgather hierarchical_doubling" \
    "MPI_Allgather on MPI_COMM_WORLD: 64 x 1 bytes, host memory: hierarchical_doubling \(8 nodes >= coll_gpu_allgather_doubling_min_nodes=4; 512 bytes gathered <= coll_gpu_allgather_doubling_max_bytes=4096\)"
check_run "model: allgather hierarchical_doubling, 5 ranks on 2+2+1" 5 \
    "$BASE coll_gpu_ranks_per_node=2 $AGD" test_net_traffic --coll=allgather --bytes=1024 --doubling
check_model allgather hierarchical_doubling 2,2,1 1024 0
check_model_messages allgather hierarchical_doubling 2,2,1
check_run "model: allgather hierarchical_doubling, 6 ranks on 6 nodes of 1, radix 2" 6 \
    "$BASE coll_gpu_ranks_per_node=1 $AGD coll_gpu_agreement_radix=2" \
    test_net_traffic --coll=allgather --bytes=1024 --doubling
check_model allgather hierarchical_doubling 1,1,1,1,1,1 1024 0
check_model_messages allgather hierarchical_doubling 1,1,1,1,1,1 2
# reduce_scatter_block hierarchical_halving (forced): only node leaders talk between nodes,
# putting only signals; on 4 nodes of 2, 8 and 16 of 1 (powers of two) each leader gets exactly
# the other nodes' blocks, in at most 2 ceil(log2 nnodes) + 1 inter-node rounds; bytes and messages
# per rank equal to the cost model's (2+2+1; 6 nodes of 1, two pairs beyond the power of two,
# with the agreement in 3 rounds)
RSH="coll_gpu_reduce_scatter_block_algorithm=hierarchical_halving"
for topo in "8 2" "8 1" "16 1"; do
    read -r np rpn <<<"$topo"
    nodes=$(((np + rpn - 1) / rpn))
    check_run "reduce_scatter_block, 64 bytes, $np ranks on $nodes nodes of $rpn, hierarchical_halving" \
        $np "$BASE coll_gpu_ranks_per_node=$rpn $RSH" \
        test_net_traffic --coll=reduce_scatter_block --bytes=64 --rounds --doubling
done
check_run "model: reduce_scatter_block hierarchical_halving, 5 ranks on 2+2+1" 5 \
    "$BASE coll_gpu_ranks_per_node=2 $RSH coll_gpu_verbose=10" \
    test_net_traffic --coll=reduce_scatter_block --bytes=1024 --doubling
[ "$CHECK_RESULT" = PASS ] && check_expect_output "reduce_scatter_block hierarchical_halving forced" \
    "MPI_Reduce_scatter_block on MPI_COMM_WORLD: .*host memory: hierarchical_halving \(coll_gpu_reduce_scatter_block_algorithm=hierarchical_halving\)"
check_model reduce_scatter_block hierarchical_halving 2,2,1 1024 0
check_model_messages reduce_scatter_block hierarchical_halving 2,2,1
check_run "model: reduce_scatter_block hierarchical_halving, 6 ranks on 6 nodes of 1, radix 2" 6 \
    "$BASE coll_gpu_ranks_per_node=1 $RSH coll_gpu_agreement_radix=2" \
    test_net_traffic --coll=reduce_scatter_block --bytes=1024 --doubling
check_model reduce_scatter_block hierarchical_halving 1,1,1,1,1,1 1024 0
check_model_messages reduce_scatter_block hierarchical_halving 1,1,1,1,1,1 2
# bcast and reduce binomial (forced): only the node leaders (the root; elsewhere the rank at the
# root's index in its node) talk between nodes (a first rank that does not lead: the agreement's
# messages alone), putting only signals; bcast: every other node's leader gets the message once,
# node j serves it once per child of its tree position (the root's node ceil(log2 nnodes) times
# at most); reduce, the same tree backwards: every node but the root's serves its partial once,
# a leader gets one per child; in at most 2 ceil(log2 nnodes) + 1 inter-node rounds: 5 nodes of 2
# from rank 5, 8 and 16 (bcast) nodes of 1, 3+3+1 from rank 4; 1 MiB on 5 nodes of 2 (8 chunks
# through the tree, CONSUMED back between nodes; with rails each rank gets its share of its
# node's bytes, each node exactly its leader's; reduce's in many chunks of 64 KiB halves); bytes and messages per rank equal to the cost
# model's (2+2+1); pipelined and hierarchical fail the bounds.  gather and scatter binomial
# alike (the blocks of a node's subtree cross its link once: gather, node j serves its subtree's
# blocks to its parent, a leader gets its children's subtrees'; scatter, backwards), one step of
# 64 bytes a block and 256 KiB blocks in many steps; hierarchical fails their bounds
for spec in "bcast 10 2 5 64" "bcast 8 1 3 64" "bcast 16 1 9 64" "bcast 7 3 4 64" \
    "bcast 10 2 9 1048576" "reduce 10 2 5 64" "reduce 8 1 3 64" "reduce 7 3 4 64" \
    "reduce 10 2 9 1048576" "gather 10 2 5 64" "gather 8 1 3 64" "gather 7 3 4 64" \
    "gather 10 2 9 262144" "scatter 10 2 5 64" "scatter 8 1 3 64" "scatter 7 3 4 64" \
    "scatter 10 2 9 262144"; do
    read -r coll np rpn root bytes <<<"$spec"
    nodes=$(((np + rpn - 1) / rpn))
    rounds=--rounds
    [ "$bytes" = 64 ] || rounds=
    steps=
    # (gather and scatter: 32 KiB halves, a step of 3 KiB a block)
    case "$coll:$bytes" in
    gather:64 | scatter:64) ;;
    gather:* | scatter:*) steps="coll_gpu_native_chunk_size=16384 coll_gpu_allreduce_one_shot_max_bytes=16384" ;;
    esac
    # (bcast of several chunks on nodes of several ranks: the rails carry them)
    rails=
    case "$coll:$bytes" in
    bcast:1048576) rails=--rails ;; # 8 chunks
    reduce:1048576)
        # (64 KiB halves: chunks of a fifth, many of them)
        rails=--rails
        steps="coll_gpu_native_chunk_size=65536 coll_gpu_allreduce_one_shot_max_bytes=16384"
        ;;
    esac
    check_run "$coll, $bytes bytes, root $root, $np ranks on $nodes nodes of $rpn, binomial" \
        $np "$BASE coll_gpu_ranks_per_node=$rpn coll_gpu_${coll}_algorithm=binomial $steps" \
        test_net_traffic --coll=$coll --bytes=$bytes --root=$root --binomial $rounds $rails
    case "$coll:$bytes" in
    bcast:64 | reduce:64 | gather:* | scatter:*) ;;
    *) check_model $coll binomial 2,2,2,2,2 $bytes $root ;;
    esac
done
for coll_other in bcast:pipelined reduce:hierarchical gather:hierarchical scatter:hierarchical; do
    coll=${coll_other%%:*}
    check_run "model: $coll binomial, 5 ranks on 2+2+1, root 0" 5 \
        "$BASE coll_gpu_ranks_per_node=2 coll_gpu_${coll}_algorithm=binomial" \
        test_net_traffic --coll=$coll --bytes=1024 --binomial
    check_model $coll binomial 2,2,1 1024 0
    check_model_messages $coll binomial 2,2,1
    check_run "$coll ${coll_other#*:} against binomial's bounds, 5 nodes of 2 (counts only)" 10 \
        "$BASE coll_gpu_ranks_per_node=2 coll_gpu_${coll}_algorithm=${coll_other#*:}" \
        test_net_traffic --coll=$coll --bytes=64 --root=5 --binomial --count-only
    [ "$CHECK_RESULT" = PASS ] && check_expect_output "${coll_other#*:} fails binomial's bounds" \
        "NOTE bound not enforced: $coll \(binomial\): "
done
check_run "reduce binomial without rails against the rails' bound, 10 ranks on 5 nodes of 2 (counts only)" 10 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_reduce_algorithm=binomial coll_gpu_tree_rails=0 coll_gpu_native_chunk_size=65536 coll_gpu_allreduce_one_shot_max_bytes=16384" \
    test_net_traffic --coll=reduce --bytes=1048576 --root=9 --binomial --rails --count-only
[ "$CHECK_RESULT" = PASS ] && check_expect_output "one leader per node fails the rails' bound (reduce)" \
    "NOTE bound not enforced: reduce \(rails\): rank 9 \(node 4 of 2 ranks\) got 3145728 bytes"
# (chosen by a tuning rule, and by auto with its parameters lowered)
printf 'bcast 3-8 * 0-4K binomial\n' >"$CHECK_LOGDIR/bcast_rules.conf"
check_run "bcast, 64 bytes, 6 ranks on 3 nodes of 2, binomial by a tuning rule" 6 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_tuning_file=$CHECK_LOGDIR/bcast_rules.conf coll_gpu_verbose=10" \
    test_net_traffic --coll=bcast --bytes=64 --root=3 --rounds --binomial
[ "$CHECK_RESULT" = PASS ] && check_expect_output "a tuning rule's bcast binomial" \
    "MPI_Bcast on MPI_COMM_WORLD: .*host memory: binomial \(rule at .*bcast_rules.conf:1\)"
check_run "bcast, 64 bytes, 8 nodes of 1, auto from 4 nodes up to 1 KiB" 8 \
    "$BASE coll_gpu_ranks_per_node=1 coll_gpu_bcast_binomial_min_nodes=4 coll_gpu_bcast_binomial_min_bytes=0 coll_gpu_bcast_binomial_max_bytes=1024 coll_gpu_verbose=10" \
    test_net_traffic --coll=bcast --bytes=64 --root=6 --rounds --binomial
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto's bcast binomial" \
    "MPI_Bcast on MPI_COMM_WORLD: 64 x 1 bytes, host memory: binomial \(8 nodes >= coll_gpu_bcast_binomial_min_nodes=4; coll_gpu_bcast_binomial_min_bytes=0 <= 64 bytes <= coll_gpu_bcast_binomial_max_bytes=1024\)"
# auto with the compiled bands (the cost model's with rails, coll_gpu_model_defaults.h): a 4 MiB
# bcast on 3 nodes of 2 and a 1 MiB reduce on 2 nodes of 2 run binomial, within its bounds and
# the rails'; the chain and hierarchical are what the loops above force
check_run "bcast, 4194316 bytes from rank 5, 6 ranks on 3 nodes of 2, auto: binomial" 6 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" \
    test_net_traffic --coll=bcast --root=5 --binomial --rails
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto's compiled bcast band" \
    "MPI_Bcast on MPI_COMM_WORLD: 4194316 x 1 bytes, host memory: binomial \(3 nodes >= coll_gpu_bcast_binomial_min_nodes=[0-9]+; coll_gpu_bcast_binomial_min_bytes=[0-9]+ <= 4194316 bytes <= coll_gpu_bcast_binomial_max_bytes=[0-9]+\)"
check_run "reduce, 1048576 bytes to rank 3, 4 ranks on 2 nodes of 2, auto: binomial" 4 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10 coll_gpu_native_chunk_size=65536 coll_gpu_allreduce_one_shot_max_bytes=16384" \
    test_net_traffic --coll=reduce --bytes=1048576 --root=3 --binomial --rails
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto's compiled reduce band" \
    "MPI_Reduce on MPI_COMM_WORLD: [0-9]+ x [0-9]+ bytes, host memory: binomial \(2 nodes >= coll_gpu_reduce_binomial_min_nodes=[0-9]+; coll_gpu_reduce_binomial_min_bytes=[0-9]+ <= 1048576 bytes"
# without rails (coll_gpu_tree_rails=off: nodes whose ranks share a NIC) auto takes the model's
# bands without them (from 12 nodes for both): the same calls run pipelined and hierarchical,
# within their bounds, and say which band; a band set by parameter holds with or without rails
check_run "bcast, 4194316 bytes from rank 5, 6 ranks on 3 nodes of 2, auto without rails: pipelined" 6 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10 coll_gpu_tree_rails=off" \
    test_net_traffic --coll=bcast --root=5
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto's bcast band without rails" \
    "MPI_Bcast on MPI_COMM_WORLD: 4194316 x 1 bytes, host memory: pipelined \(not binomial's band: no rails, the cost model's band without them: 3 nodes >= [0-9]+; [0-9]+ <= 4194316 bytes <= [0-9]+ \(coll_gpu_bcast_binomial_\* not set\)\)"
check_run "reduce, 1048576 bytes to rank 3, 4 ranks on 2 nodes of 2, auto without rails: hierarchical" 4 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10 coll_gpu_tree_rails=off coll_gpu_native_chunk_size=65536 coll_gpu_allreduce_one_shot_max_bytes=16384" \
    test_net_traffic --coll=reduce --bytes=1048576 --root=3
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto's reduce band without rails" \
    "MPI_Reduce on MPI_COMM_WORLD: 262144 x 4 bytes, host memory: hierarchical"
check_run "bcast, 4194316 bytes from rank 5, 6 ranks on 3 nodes of 2, without rails, the band set: binomial" 6 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10 coll_gpu_tree_rails=off coll_gpu_bcast_binomial_min_nodes=3" \
    test_net_traffic --coll=bcast --root=5 --binomial
[ "$CHECK_RESULT" = PASS ] && check_expect_output "a band set by parameter holds without rails" \
    "MPI_Bcast on MPI_COMM_WORLD: 4194316 x 1 bytes, host memory: binomial \(3 nodes >= coll_gpu_bcast_binomial_min_nodes=3; "

# hierarchical_rabenseifner (forced), 4 MiB + 12: on power-of-two node counts every rank moves at
# most 2 (nnodes - 1) / nnodes x its shard (hierarchical's bound); beyond a power of two the paired
# owners move one shard more (counts only there), as the cost model says (2+2+1).  Pipelined: a
# message of K chunks (2 here: 4 MiB + 12 in the default 8 MiB halves; 5 of 1 MiB) waits through
# at most K x 2 ceil(log2 nnodes) rounds and the closing agreement's, no barrier between chunks
# (--chunk-rounds; with a barrier per chunk 16 nodes of 1 took 22 > 18)
RAB="coll_gpu_allreduce_algorithm=hierarchical_rabenseifner"
for topo in "8 2" "16 2" "16 1"; do
    read -r np rpn <<<"$topo"
    nodes=$(((np + rpn - 1) / rpn))
    check_run "allreduce, 4194316 bytes, $np ranks on $nodes nodes of $rpn, hierarchical_rabenseifner" \
        $np "$BASE coll_gpu_ranks_per_node=$rpn $RAB" test_net_traffic --coll=allreduce \
        --chunk-rounds=2
done
check_run "allreduce, 4194316 bytes, 16 ranks on 8 nodes of 2, hierarchical_rabenseifner, 5 chunks of 1 MiB" \
    16 "$BASE coll_gpu_ranks_per_node=2 $RAB coll_gpu_native_chunk_size=1048576" \
    test_net_traffic --coll=allreduce --chunk-rounds=5
check_run "model: allreduce hierarchical_rabenseifner, 5 ranks on 2+2+1 (counts only)" 5 \
    "$BASE coll_gpu_ranks_per_node=2 $RAB" test_net_traffic --coll=allreduce --bytes=1048576 \
    --count-only --chunk-rounds=1
check_model allreduce hierarchical_rabenseifner 2,2,1 1048576 0
check_run "model: allreduce hierarchical_rabenseifner, 16 ranks on 8 nodes of 2" 16 \
    "$BASE coll_gpu_ranks_per_node=2 $RAB" test_net_traffic --coll=allreduce --bytes=1048576
check_model allreduce hierarchical_rabenseifner 2,2,2,2,2,2,2,2 1048576 0
# auto takes it from coll_gpu_allreduce_doubling_min_nodes nodes on, up to _max_bytes
check_run "allreduce, 64 bytes, 8 nodes of 2, auto from 4 nodes up to 4 KiB: hierarchical_doubling" 16 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_allreduce_doubling_min_nodes=4 coll_gpu_allreduce_doubling_max_bytes=4096 coll_gpu_verbose=10" \
    test_net_traffic --coll=allreduce --bytes=64 --rounds --doubling
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto's hierarchical_doubling" \
    "MPI_Allreduce on MPI_COMM_WORLD: 16 x 4 bytes, host memory: hierarchical_doubling \(8 nodes >= coll_gpu_allreduce_doubling_min_nodes=4; 64 bytes <= coll_gpu_allreduce_doubling_max_bytes=4096\)"
check_run "allreduce, 64 bytes, 8 nodes of 2, auto, the same with 9 nodes as minimum: hierarchical" 16 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_allreduce_doubling_min_nodes=9 coll_gpu_allreduce_doubling_max_bytes=4096" \
    test_net_traffic --coll=allreduce --bytes=64 --rounds

check_run "allreduce, 64 bytes, 4 nodes of 1, coll_gpu_allreduce_ring_min_bytes=64: the ring" 4 \
    "$BASE coll_gpu_ranks_per_node=1 coll_gpu_allreduce_ring_min_bytes=64 coll_gpu_verbose=10" \
    test_net_traffic --coll=allreduce --bytes=64
[ "$CHECK_RESULT" = PASS ] && check_expect_output "auto's choice of the ring from coll_gpu_allreduce_ring_min_bytes" \
    "MPI_Allreduce on MPI_COMM_WORLD: 16 x 4 bytes, host memory: ring \(4 nodes, one rank each; 64 bytes >= coll_gpu_allreduce_ring_min_bytes=64\)"

check_run "allreduce, 3 nodes, the per-call log" 6 \
    "$BASE coll_gpu_ranks_per_node=2 coll_gpu_verbose=10" test_net_traffic --coll=allreduce \
    --bytes=4096
[ "$CHECK_RESULT" = PASS ] && check_expect_output "the per-call log of the traffic between nodes" \
    "MPI_Allreduce on MPI_COMM_WORLD: between nodes rank 5 sent [0-9]+ bytes and received [0-9]+ bytes in [0-9]+ messages, at most [0-9]+ gets in flight; [0-9]+ rounds on its critical path \([0-9]+ signals of other nodes waited for\), hierarchical"

check_finish
