/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Traffic between nodes of the native collectives, against the bounds of a bandwidth-optimal
 * algorithm (issue 18), read from the coll_gpu_net_* pvars around one call on the world
 * communicator (emulated nodes: coll_gpu_ranks_per_node, host buffers under
 * coll_gpu_host_buffers; the counts do not depend on the memory kind):
 *
 *   allreduce (--coll=allreduce): every rank moves at most 2 (nnodes - 1) / nnodes x its shard
 *   between nodes (sent + received), plus a header of 16 bytes per inter-node message (8-byte
 *   signals, and the rounding of shards and segments to whole elements, at most one element of
 *   4 bytes per message).  Its shard: count / m elements, m the fewest ranks of any node, for the
 *   ranks whose local rank is below m (the shard owners); 0 for the others.
 *
 *   allgather (--coll=allgather, bytes per rank): every block crosses to each other node once:
 *   the bytes every rank got from node j, summed over the ranks, are at most (nnodes - 1) x
 *   node j's blocks; and a rank of a node of L ranks moves at most ceil((size - L) / L) blocks
 *   between nodes (the other nodes' blocks shared out over the node's ranks), plus 16 bytes per
 *   message.
 *
 *   reduce_scatter_block (--coll=reduce_scatter_block, bytes per block): each node sends one
 *   partial of each other node's block: the bytes every rank got from node j, summed over the
 *   ranks, are at most (size - node j's ranks) blocks; and every rank gets at most nnodes - 1
 *   blocks (one partial per other node), plus 16 bytes per message.
 *
 *   reduce (--coll=reduce, --root): each node sends the message at most once (its partial; the
 *   root's node nothing): the bytes every rank got from node j, summed over the ranks, are at
 *   most 1 x the message; the root receives at most nnodes - 1 messages, the others nothing,
 *   plus 16 bytes per message; on 3 nodes or more from 64 KiB (segmented) the root receives at
 *   most 2 (nnodes - 1) / nnodes x the message, every other rank (nnodes - 1) / nnodes x.
 *
 *   gather, scatter (--coll=gather|scatter, bytes per block, --root): every other node's
 *   blocks cross the root's link once: the root receives exactly their bytes (gather), the
 *   root's node serves exactly them (scatter); a rank off the root's node moves at most its
 *   node's blocks, the root at most the other nodes', plus 16 bytes per message.
 *   Hierarchical: each other node's run crosses once between the node's leader and its
 *   carrier on the root's node, and each rank gets exactly the runs it carries (gather) or
 *   leads (scatter): with --rails (coll_gpu_tree_rails) the other nodes are shared out among the
 *   root's node's ranks in ranges of positions from the root's (rooted_expected_received), each
 *   node's leader on its carrier's rail; without, the root carries every node.
 *   Node-aggregated (hierarchical): --root-messages=N bounds the root's messages between nodes
 *   (gets and signals: nnodes - 1 gets and, on a node's first rank, the step's barrier and the
 *   agreement between node leaders, in a call of one step), --one-getter-per-node has exactly
 *   one rank of each other node get from the
 *   root's.
 *
 *   alltoall (--coll=alltoall, bytes per block): every block crosses once: the bytes every
 *   rank got from node j, summed over the ranks, are exactly node j's ranks x the other nodes'
 *   ranks x the block (either algorithm).  --one-getter-per-node (node-aggregated: hierarchical):
 *   for every pair of nodes exactly one rank of each gets from the other, and no rank of a node of
 *   L ranks exchanges more than 2 ceil(nnodes / L) messages with other nodes in a call of one
 *   step (the node's pairs of nodes spread over its ranks, a get and a signal each), plus, on a
 *   node's first rank, the agreement's that ends every native call (one per distance m radix^i
 *   below nnodes, m < coll_gpu_agreement_radix: nnodes - 1 up to radix nodes; direct: a get per
 *   rank off the node, and on a node's first rank the step's barrier and the agreement, each as
 *   many); --max-in-flight=W: no rank had more
 *   than W gets from other nodes in flight at once (coll_gpu_net_gets_in_flight_max, read right
 *   after the counted call, and at least 1 where the rank got data from other nodes).
 *
 *   bcast (--coll=bcast): every rank moves at most 1 x the message between nodes (0 on the
 *   root's node), plus 16 bytes per message; and every node's network interface sends the
 *   message at most once (the root's included): the bytes every rank got from node j
 *   (coll_gpu_net_bytes_received_by_node: gets are counted by the getter, by the node that
 *   served them), summed over the ranks, are at most 1 x the message.
 *
 * The call must run natively (coll_gpu_calls_native grows by one) and give the right result
 * (integer sums against a reference computed here).  Rank 0 prints each rank's counts and bound
 * ("rank R node N owner: sent S received V messages M rounds D waits W bound B"), and a case that
 * exceeds its bound fails naming it.
 *
 * --binomial (bcast, reduce, gather or scatter run by binomial): instead of the bounds above, only
 * the node leaders (the root, elsewhere the rank at the root's index in its node) exchange messages
 * with other nodes and put nothing but signals; bcast: every other node's leader gets exactly the
 * message, every other rank nothing, node j serves exactly the message times its tree
 * position's children (ceil(log2 nnodes) at most, the root's node); reduce: every node but the
 * root's serves exactly the message (its partial, once), a leader gets one per child; gather:
 * a leader gets exactly its children's subtrees' blocks, node j serves exactly its subtree's
 * (positions [v, v + lowbit(v)) from the root's node, once, to its parent); scatter: a leader
 * gets exactly its subtree's blocks, node j serves exactly its children's subtrees'.
 *
 * --rails (gather and scatter hierarchical: above; bcast by a tree of nodes, binomial or
 * pipelined's chain, or reduce binomial, with coll_gpu_tree_rails; a call of 8 chunks or more): a
 * node's ranks take turns carrying the chunks: every rank gets at most its share of what its node
 * gets between nodes, the node's bytes / its ranks + an eighth (a chunk), and each node's ranks
 * together get exactly what a binomial leader would (bcast: the message, off the root's node;
 * reduce: a partial per child); with --binomial this replaces the leaders-only rule (every rank may
 * carry a chunk; all still put nothing but signals).
 *
 * Rank 0's closing line gives the bytes between nodes in all and those received (gets: the
 * data), which check_net_traffic.sh compares with perf/cost_model --traffic.
 *
 * --doubling (allreduce run by hierarchical_doubling): instead of the bound above, only a
 * node's first rank (its leader) exchanges messages with other nodes, moving at most
 * 2 (log2 p + 1) x the message (p the largest power of two <= nnodes: one each way per round,
 * and the pairing and hand-back of nodes beyond p), plus 16 bytes per message.  With
 * --coll=allgather (hierarchical_doubling): only the leaders exchange messages with other
 * nodes, each gets exactly the other nodes' blocks (size - L blocks, the least any allgather
 * can) and puts nothing but signals.  With --coll=reduce_scatter_block (hierarchical_halving):
 * only the leaders exchange messages with other nodes and put nothing but signals; each gets
 * exactly the other nodes' blocks on a power of two of equal nodes, at most twice the step
 * elsewhere (check_net_traffic.sh compares every rank's bytes with perf/cost_model's).
 *
 * --chunk-rounds=K (allreduce hierarchical_rabenseifner, a message of K chunks): every rank's
 * inter-node rounds are at most K x 2 ceil(log2 nnodes) + ceil(log_radix nnodes) (its chunks'
 * partner rounds back to back, no barrier between them, then the closing agreement), the busiest at
 * least K x 2 floor(log2 nnodes).
 *
 * --rounds (a message of one chunk): every rank's inter-node rounds (coll_gpu_net_rounds, the
 * messages on its critical path) are at most 2 ceil(log2 nnodes) + 1 (the agreement that ends
 * every native call takes ceil(log_radix nnodes) rounds between node leaders: with the default
 * radix 8, 1 up to 8 nodes and 2 on 16).
 *
 * Options: --coll=allreduce|bcast|allgather|reduce_scatter_block|reduce|gather|scatter|alltoall,
 * --bytes=N (bytes of the message or of a block, default 4 MiB + 12), --root=R (bcast, reduce,
 * gather, scatter), --rounds, --chunk-rounds=K, --doubling, --binomial, --rails, --count-only
 * (print the counts, enforce no bound),
 * --root-messages=N, --one-getter-per-node, --max-in-flight=W, --odd-net-devices=D (before
 * MPI_Init, the ranks of odd local rank, OMPI_COMM_WORLD_LOCAL_RANK, set UCX_NET_DEVICES=D: the
 * ranks of a node on different network devices, as where each GPU has its NIC, for
 * coll_gpu_tree_rails=auto), --odd-env=NAME=VALUE (the same ranks put NAME=VALUE in their
 * environment before MPI_Init: an OMPI_MCA_ name gives them a parameter the others have not),
 * --staged (the ranks were given different native parameters: every rank stages the call, with
 * the right result, and none runs it natively; nothing is counted).
 * Closing line (rank 0): "N passed, M failed".
 */
#define _XOPEN_SOURCE 700 /* setenv */

#include "coll_gpu_colls.h"
#include "test_mpit.h"
#include "test_options.h"
#include "test_report.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NET_HEADER_PER_MESSAGE 16

/* --count-only: the counts are printed, the bounds not enforced but said ("NOTE bound not
 * enforced: ..."; an algorithm known to exceed them, run to compare its counts with
 * perf/cost_model's, or to show that a bound tells the algorithms apart) */
static bool count_only = false;
#define bound_fail(...)                                                                            \
    do {                                                                                           \
        if (!count_only) {                                                                         \
            tu_fail(__VA_ARGS__);                                                                  \
        } else {                                                                                   \
            printf("NOTE bound not enforced: ");                                                   \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

enum { NET_SENT, NET_RECEIVED, NET_MESSAGES, NET_ROUNDS, NET_WAITS, NET_NUM };
static const char *const net_names[NET_NUM] = {
    "coll_gpu_net_bytes_sent", "coll_gpu_net_bytes_received", "coll_gpu_net_messages",
    "coll_gpu_net_rounds",     "coll_gpu_net_waits",
};

static tu_pvar_t net_pvars[NET_NUM], calls_native, by_node;

#define MAX_NODES 64

static void net_read(uint64_t values[NET_NUM]) {
    for (int i = 0; i < NET_NUM; ++i) {
        values[i] = tu_pvar_read_element(&net_pvars[i], 0);
    }
}

/* The nodes of the world communicator: rank / ranks_per_node, from --ranks-per-node (real
 * hosts, ranks placed by slot) or coll_gpu_ranks_per_node (emulated nodes on one host). */
typedef struct {
    int rpn, nnodes, node, local_rank, m;
} layout_t;

static void layout_get(layout_t *lay, int rank, int size, int ranks_per_node) {
    long long rpn = ranks_per_node;

    if ((rpn <= 0) && ((0 != tu_cvar_read_int("coll_gpu_ranks_per_node", &rpn)) || (rpn <= 0))) {
        rpn = size;
    }
    lay->rpn = (int)rpn;
    lay->nnodes = (size + lay->rpn - 1) / lay->rpn;
    lay->node = rank / lay->rpn;
    lay->local_rank = rank % lay->rpn;
    /* the last node may be smaller */
    lay->m = (size - (lay->nnodes - 1) * lay->rpn < lay->rpn) ? size - (lay->nnodes - 1) * lay->rpn
                                                              : lay->rpn;
}

/* Ranks of node j. */
/* coll_gpu_agreement_radix as the component reads it (8 where unset, at least 2). */
static long long agreement_radix(void) {
    long long radix = 8;

    if ((0 != tu_cvar_read_int("coll_gpu_agreement_radix", &radix)) || (radix < 2)) {
        radix = (radix < 2) ? 2 : 8;
    }
    return radix;
}

/* ceil(log_base n): rounds of a dissemination of base - 1 messages each over n members; and
 * floor(log2 n) (log2 of the largest power of two <= n). */
static int ceil_log(int n, long long base) {
    int k = 0;

    for (long long reach = 1; reach < n; reach *= base) {
        ++k;
    }
    return k;
}
static int floor_log2(int n) {
    int k = 0;

    while ((2LL << k) <= n) {
        ++k;
    }
    return k;
}

/* Messages between nodes a node leader (its first rank) sends in the agreement that ends every
 * native call: one per distance m radix^i below nnodes (m = 1 .. radix - 1), the others none
 * (coll_gpu_agreement_radix, read here; coll_gpu_native_agree.c). */

static uint64_t agreement_messages(const layout_t *lay, int rank) {
    long long radix = agreement_radix();
    uint64_t messages = 0;

    if ((0 != rank % lay->rpn) || (lay->nnodes < 2)) {
        return 0;
    }
    for (long long dist = 1; dist < lay->nnodes; dist *= radix) {
        for (long long m = 1; (m < radix) && (m * dist < lay->nnodes); ++m) {
            ++messages;
        }
    }
    return messages;
}

static int node_size(const layout_t *lay, int j, int size) {
    return (j < lay->nnodes - 1) ? lay->rpn : size - (lay->nnodes - 1) * lay->rpn;
}

/* Gather and scatter hierarchical: the bytes this rank gets from other nodes.  Node j's run
 * (its blocks) crosses between its leader and its carrier on the root's node: the carrier, with
 * rails the root's node's rank at the root's index + (v - 1) W / (nnodes - 1) (v: j's position
 * from the root's node, W = min(the root's node's size, nnodes - 1); modulo the node's size),
 * without rails the root; the leader, node j's rank at the carrier's index modulo its size.
 * Gather: a carrier gets its nodes' runs; scatter: a leader its node's. */
static uint64_t rooted_expected_received(const char *coll, const layout_t *lay, int size, int rank,
                                         int root, bool rails, uint64_t block) {
    int root_node = root / lay->rpn, nroot = node_size(lay, root_node, size);
    int others = lay->nnodes - 1, ways = (nroot < others) ? nroot : others;
    uint64_t got = 0;

    for (int j = 0; j < lay->nnodes; ++j) {
        int v = (j - root_node + lay->nnodes) % lay->nnodes;
        int index = (root % lay->rpn + ((rails && v > 0) ? (v - 1) * ways / others : 0)) % nroot;
        int carrier = root_node * lay->rpn + index;
        int leader = j * lay->rpn + index % node_size(lay, j, size);
        int mover = (0 == strcmp(coll, "gather")) ? carrier : leader;

        if ((j != root_node) && (mover == rank)) {
            got += (uint64_t)node_size(lay, j, size) * block;
        }
    }
    return got;
}

/* The ranks of the nodes of binomial tree position v's subtree (positions [v, v + lowbit(v)),
 * the whole tree for v = 0; position p is node (root_node + p) mod nnodes). */
static int subtree_ranks(const layout_t *lay, int size, int root_node, int v) {
    int end = (0 == v) ? lay->nnodes : v + (v & -v), ranks = 0;

    for (int p = v; (p < end) && (p < lay->nnodes); ++p) {
        ranks += node_size(lay, (root_node + p) % lay->nnodes, size);
    }
    return ranks;
}

/* The bytes of a binomial tree of node leaders (the rooted collectives' binomial rows, block the
 * message or a rank's block): what the leader of tree position v gets from other nodes, or
 * (served) what its node sends them.  bcast: the message once (the root's: nothing), served to
 * each child; reduce: a partial from each child, the node's own served once to its parent;
 * gather: its children's subtrees' blocks, its own subtree's served to its parent; scatter:
 * its subtree's blocks, its children's subtrees' served. */
static uint64_t binomial_bytes(const char *coll, const layout_t *lay, int size, int root_node,
                               int v, uint64_t block, bool served) {
    int limit = (0 == v) ? lay->nnodes : (v & -v), children = 0;
    uint64_t subtree = (uint64_t)subtree_ranks(lay, size, root_node, v);
    uint64_t own = (uint64_t)node_size(lay, (root_node + v) % lay->nnodes, size);

    for (int m = 1; (m < limit) && (v + m < lay->nnodes); m *= 2) {
        ++children;
    }
    if (0 == strcmp(coll, "bcast")) {
        return served ? (uint64_t)children * block : (0 == v) ? 0 : block;
    }
    if (0 == strcmp(coll, "reduce")) {
        return served ? ((0 == v) ? 0 : block) : (uint64_t)children * block;
    }
    if (0 == strcmp(coll, "gather")) {
        return served ? ((0 == v) ? 0 : subtree * block) : (subtree - own) * block;
    }
    return served ? (subtree - own) * block : (0 == v) ? 0 : subtree * block;
}

static int value_of(int rank, size_t i) { return (int)((rank * 131 + i * 7) % 1000); }

/* One call of coll with count ints; false when its result is wrong (reported). */
static bool run_call(const char *coll, int *sbuf, int *rbuf, size_t count, int root, int rank,
                     int size) {
    long bad = 0;

    if (0 == strcmp(coll, "allreduce")) {
        MPI_Allreduce(sbuf, rbuf, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (size_t i = 0; i < count; ++i) {
            int want = 0;
            for (int r = 0; r < size; ++r) {
                want += value_of(r, i);
            }
            if (rbuf[i] != want && bad++ < 3) {
                tu_fail("element %zu: %d, want %d", i, rbuf[i], want);
            }
        }
    } else if (0 == strcmp(coll, "reduce")) {
        MPI_Reduce(sbuf, rbuf, (int)count, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        for (size_t i = 0; (rank == root) && (i < count); ++i) {
            int want = 0;
            for (int r = 0; r < size; ++r) {
                want += value_of(r, i);
            }
            if (rbuf[i] != want && bad++ < 3) {
                tu_fail("element %zu: %d, want %d", i, rbuf[i], want);
            }
        }
    } else if (0 == strcmp(coll, "reduce_scatter_block")) {
        MPI_Reduce_scatter_block(sbuf, rbuf, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (size_t i = 0; i < count; ++i) {
            int want = 0;
            for (int r = 0; r < size; ++r) {
                want += value_of(r, (size_t)rank * count + i);
            }
            if (rbuf[i] != want && bad++ < 3) {
                tu_fail("element %zu: %d, want %d", i, rbuf[i], want);
            }
        }
    } else if (0 == strcmp(coll, "gather")) {
        MPI_Gather(sbuf, (int)count, MPI_INT, rbuf, (int)count, MPI_INT, root, MPI_COMM_WORLD);
        for (int r = 0; (rank == root) && (r < size); ++r) {
            for (size_t i = 0; i < count; ++i) {
                if (rbuf[(size_t)r * count + i] != value_of(r, i) && bad++ < 3) {
                    tu_fail("block %d element %zu: %d, want %d", r, i, rbuf[(size_t)r * count + i],
                            value_of(r, i));
                }
            }
        }
    } else if (0 == strcmp(coll, "scatter")) {
        MPI_Scatter(sbuf, (int)count, MPI_INT, rbuf, (int)count, MPI_INT, root, MPI_COMM_WORLD);
        for (size_t i = 0; i < count; ++i) {
            int want = value_of(root, (size_t)rank * count + i);
            if (rbuf[i] != want && bad++ < 3) {
                tu_fail("element %zu: %d, want %d", i, rbuf[i], want);
            }
        }
    } else if (0 == strcmp(coll, "alltoall")) {
        for (size_t i = 0; i < count * (size_t)size; ++i) {
            rbuf[i] = -1;
        }
        MPI_Alltoall(sbuf, (int)count, MPI_INT, rbuf, (int)count, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; ++r) {
            for (size_t i = 0; i < count; ++i) {
                int want = value_of(r, (size_t)rank * count + i);
                if (rbuf[(size_t)r * count + i] != want && bad++ < 3) {
                    tu_fail("block %d element %zu: %d, want %d", r, i, rbuf[(size_t)r * count + i],
                            want);
                }
            }
        }
    } else if (0 == strcmp(coll, "allgather")) {
        for (size_t i = 0; i < count * (size_t)size; ++i) {
            rbuf[i] = -1;
        }
        MPI_Allgather(sbuf, (int)count, MPI_INT, rbuf, (int)count, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; ++r) {
            for (size_t i = 0; i < count; ++i) {
                if (rbuf[(size_t)r * count + i] != value_of(r, i) && bad++ < 3) {
                    tu_fail("block %d element %zu: %d, want %d", r, i, rbuf[(size_t)r * count + i],
                            value_of(r, i));
                }
            }
        }
    } else {
        for (size_t i = 0; i < count; ++i) {
            rbuf[i] = (rank == root) ? value_of(root, i) : -1;
        }
        MPI_Bcast(rbuf, (int)count, MPI_INT, root, MPI_COMM_WORLD);
        for (size_t i = 0; i < count; ++i) {
            if (rbuf[i] != value_of(root, i) && bad++ < 3) {
                tu_fail("element %zu: %d, want %d", i, rbuf[i], value_of(root, i));
            }
        }
    }
    return 0 == bad;
}

/* The leaders' algorithms (allgather hierarchical_doubling, reduce_scatter_block
 * hierarchical_halving): a rank puts nothing but signals to other nodes, and only a node leader
 * (owner) exchanges messages with them. */
static void check_leaders_only(const char *what, int rank, bool owner, const uint64_t *delta) {
    if (delta[NET_SENT] > NET_HEADER_PER_MESSAGE * delta[NET_MESSAGES]) {
        bound_fail("%s: rank %d put %" PRIu64 " bytes to other nodes in %" PRIu64
                   " messages: more than signals",
                   what, rank, delta[NET_SENT], delta[NET_MESSAGES]);
    }
    if (!owner && (0 != delta[NET_MESSAGES])) {
        bound_fail("%s: rank %d, not a node leader, exchanged %" PRIu64
                   " messages with other nodes (only the leaders should)",
                   what, rank, delta[NET_MESSAGES]);
    }
}

/* Every node's bytes received from other nodes (its ranks' gets summed): collective, every rank
 * calls it. */
static void nodes_received(const layout_t *lay, const uint64_t *delta,
                           uint64_t node_got[MAX_NODES]) {
    memset(node_got, 0, MAX_NODES * sizeof(node_got[0]));
    if (lay->node < MAX_NODES) {
        node_got[lay->node] = delta[NET_RECEIVED];
    }
    MPI_Allreduce(MPI_IN_PLACE, node_got, MAX_NODES, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
}

/* --rails: this rank's share of what its node gets between nodes, and every node's whole
 * (binomial_bytes: bcast the message, reduce a partial per child; node_got: nodes_received). */
static void check_rails(const char *coll, const layout_t *lay, int size, int rank, int root,
                        uint64_t block, const uint64_t *delta, const uint64_t node_got[MAX_NODES]) {
    int root_node = root / lay->rpn;
    int v = (lay->node - root_node + lay->nnodes) % lay->nnodes;
    uint64_t node_total = binomial_bytes(coll, lay, size, root_node, v, block, false);
    uint64_t share = node_total / (uint64_t)node_size(lay, lay->node, size) + node_total / 8;

    if (delta[NET_RECEIVED] > share) {
        bound_fail("%s (rails): rank %d (node %d of %d ranks) got %" PRIu64
                   " bytes from other nodes, more than its share %" PRIu64 " (its node's %" PRIu64
                   " / its ranks + an eighth)",
                   coll, rank, lay->node, node_size(lay, lay->node, size), delta[NET_RECEIVED],
                   share, node_total);
    }
    for (int j = 0; (j < lay->nnodes) && (j < MAX_NODES) && (0 == rank); ++j) {
        uint64_t want = binomial_bytes(coll, lay, size, root_node,
                                       (j - root_node + lay->nnodes) % lay->nnodes, block, false);

        if (node_got[j] != want) {
            bound_fail("%s (rails): node %d's ranks got %" PRIu64
                       " bytes from other nodes together, not %" PRIu64,
                       coll, j, node_got[j], want);
        }
    }
}

int main(int argc, char **argv) {
    const char *coll = "allreduce";
    size_t bytes = 4 * 1024 * 1024 + 12, count;
    int rank, size, root = 0, nat = COLL_GPU_ALLREDUCE, ranks_per_node = 0;
    uint64_t before[NET_NUM], after[NET_NUM], delta[NET_NUM], bound, shard = 0, moved;
    uint64_t native_before, native_after, *all;
    uint64_t by_node_before[MAX_NODES] = {0}, by_node_after[MAX_NODES] = {0};
    uint64_t served[MAX_NODES] = {0}; /* bytes every rank got from node j */
    layout_t lay;
    int *sbuf, *rbuf;
    bool check_rounds = false;
    bool expect_staged = false; /* --staged */
    int pipelined_chunks = 0;   /* --chunk-rounds=K (0: not checked) */
    bool binomial = false;      /* bcast, reduce: --binomial */
    bool rails = false;         /* --rails: the trees, gather and scatter hierarchical */
    bool doubling = false;      /* allreduce, allgather, reduce_scatter_block: --doubling
                                 * (hierarchical_doubling, hierarchical_halving) */
    bool owner;
    uint64_t max_root_messages = 0; /* gather, scatter: --root-messages=N (0: not checked) */
    bool one_getter = false;        /* scatter, alltoall: --one-getter-per-node */
    uint64_t max_in_flight = 0;     /* alltoall: --max-in-flight=W (0: not checked) */
    uint64_t in_flight = 0;
    tu_pvar_t in_flight_pvar;

    for (int i = 1; i < argc; ++i) {
        const char *local_rank = getenv("OMPI_COMM_WORLD_LOCAL_RANK");

        if ((0 == strncmp(argv[i], "--odd-net-devices=", 18)) && (NULL != local_rank) &&
            (1 == atoi(local_rank) % 2)) {
            setenv("UCX_NET_DEVICES", argv[i] + 18, 1);
        }
    }
    tu_odd_env_apply(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    tu_world_rank = rank;
    tu_world_size = size;
    for (int i = 1; i < argc; ++i) {
        if (0 == strncmp(argv[i], "--coll=", 7)) {
            coll = argv[i] + 7;
        } else if (0 == strncmp(argv[i], "--bytes=", 8)) {
            bytes = strtoull(argv[i] + 8, NULL, 0);
        } else if (0 == strncmp(argv[i], "--root=", 7)) {
            root = atoi(argv[i] + 7) % size;
        } else if (0 == strcmp(argv[i], "--staged")) {
            expect_staged = true;
        } else if (0 == strcmp(argv[i], "--rounds")) {
            check_rounds = true;
        } else if (0 == strncmp(argv[i], "--chunk-rounds=", 15)) {
            pipelined_chunks = atoi(argv[i] + 15);
        } else if (0 == strcmp(argv[i], "--doubling")) {
            doubling = true;
        } else if (0 == strcmp(argv[i], "--binomial")) {
            binomial = true;
        } else if (0 == strcmp(argv[i], "--rails")) {
            rails = true;
        } else if (0 == strncmp(argv[i], "--ranks-per-node=", 17)) {
            ranks_per_node = atoi(argv[i] + 17);
        } else if (0 == strcmp(argv[i], "--count-only")) {
            count_only = true;
        } else if (0 == strncmp(argv[i], "--root-messages=", 16)) {
            max_root_messages = strtoull(argv[i] + 16, NULL, 0);
        } else if (0 == strcmp(argv[i], "--one-getter-per-node")) {
            one_getter = true;
        } else if (0 == strncmp(argv[i], "--max-in-flight=", 16)) {
            max_in_flight = strtoull(argv[i] + 16, NULL, 0);
        }
    }
    if (0 == strcmp(coll, "bcast")) {
        nat = COLL_GPU_BCAST;
    } else if (0 == strcmp(coll, "allgather")) {
        nat = COLL_GPU_ALLGATHER;
    } else if (0 == strcmp(coll, "reduce_scatter_block")) {
        nat = COLL_GPU_REDUCE_SCATTER_BLOCK;
    } else if (0 == strcmp(coll, "reduce")) {
        nat = COLL_GPU_REDUCE;
    } else if (0 == strcmp(coll, "gather")) {
        nat = COLL_GPU_GATHER;
    } else if (0 == strcmp(coll, "scatter")) {
        nat = COLL_GPU_SCATTER;
    } else if (0 == strcmp(coll, "alltoall")) {
        nat = COLL_GPU_ALLTOALL;
    } else if (0 != strcmp(coll, "allreduce")) {
        if (0 == rank) {
            fprintf(stderr, "unknown --coll=%s\n", coll);
        }
        tu_finish(TU_EXIT_FAIL);
    }
    for (int i = 0; i < NET_NUM; ++i) {
        tu_pvar_open_required(net_names[i], &net_pvars[i]);
    }
    tu_pvar_open_required("coll_gpu_calls_native", &calls_native);
    tu_pvar_open_required("coll_gpu_net_bytes_received_by_node", &by_node);
    tu_pvar_open_required("coll_gpu_net_gets_in_flight_max", &in_flight_pvar);
    layout_get(&lay, rank, size, ranks_per_node);
    count = bytes / sizeof(int);
    sbuf = malloc(count * (size_t)size * sizeof(int) + 1); /* reduce_scatter_block's blocks */
    rbuf = malloc(count * (size_t)size * sizeof(int) + 1);
    all = malloc((size_t)size * (NET_NUM + 1) * sizeof(*all));
    if ((NULL == sbuf) || (NULL == rbuf) || (NULL == all)) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < count * (size_t)size; ++i) {
        sbuf[i] = value_of(rank, i);
    }

    tu_case_begin("%s of %zu bytes on %d nodes of %d ranks (%d ranks)", coll, count * sizeof(int),
                  lay.nnodes, lay.rpn, size);
    /* the first call sets the transport and the scratch up; the second is counted */
    run_call(coll, sbuf, rbuf, count, root, rank, size);
    native_before = tu_pvar_read_element(&calls_native, nat);
    net_read(before);
    tu_pvar_read(&by_node, by_node_before, MAX_NODES);
    run_call(coll, sbuf, rbuf, count, root, rank, size);
    net_read(after);
    tu_pvar_read(&by_node, by_node_after, MAX_NODES);
    /* (the high-water mark of this call and the setup call before it: the same alltoall) */
    in_flight = tu_pvar_read_element(&in_flight_pvar, 0);
    for (int j = 0; j < MAX_NODES; ++j) {
        by_node_after[j] -= by_node_before[j];
    }
    native_after = tu_pvar_read_element(&calls_native, nat);
    /* (after the counters: on host buffers this allreduce is native too) */
    MPI_Allreduce(by_node_after, served, MAX_NODES, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (expect_staged) {
        /* the ranks disagree on the native algorithms' parameters: all of them staged the call
         * (its result checked by run_call), none ran it natively */
        if (native_after != native_before) {
            tu_fail("the call ran natively (coll_gpu_calls_native[%s] grew by %" PRIu64
                    ") though the ranks were given different parameters",
                    coll, native_after - native_before);
        }
        tu_case_end();
        free(sbuf);
        free(rbuf);
        tu_finish(tu_summary(MPI_COMM_WORLD));
    }
    if (native_after != native_before + 1) {
        tu_fail("the call did not run natively (coll_gpu_calls_native[%s] grew by %" PRIu64
                "): nothing to count",
                coll, native_after - native_before);
    }
    for (int i = 0; i < NET_NUM; ++i) {
        delta[i] = after[i] - before[i];
    }
    moved = delta[NET_SENT] + delta[NET_RECEIVED];
    if ((0 == strcmp(coll, "allreduce")) && doubling) {
        /* hierarchical_doubling: only the node leaders (local rank 0) talk between nodes, each
         * moving the message once each way per round (the extras' pairing and hand-back: once
         * each), in 3 messages a round (READY, the get, CONSUMED) */
        int log2p = floor_log2(lay.nnodes);

        owner = (0 == lay.local_rank);
        shard = owner ? count * sizeof(int) : 0;
        bound = 2 * shard * (uint64_t)(log2p + 1) + NET_HEADER_PER_MESSAGE * delta[NET_MESSAGES];
        if (moved > bound) {
            bound_fail(
                "allreduce (doubling) bound exceeded on rank %d (node %d, %s): it moved %" PRIu64
                " bytes between nodes in %" PRIu64 " messages > 2 x (log2 p + 1) x %" PRIu64
                " + %d x messages = %" PRIu64,
                rank, lay.node, owner ? "a leader" : "not a leader", moved, delta[NET_MESSAGES],
                shard, NET_HEADER_PER_MESSAGE, bound);
        }
        if (owner && (lay.nnodes > 1) && (delta[NET_RECEIVED] < shard)) {
            bound_fail("leader rank %d moved only %" PRIu64 " bytes between nodes in, less than "
                       "the message of %" PRIu64 " bytes (counters not counting?)",
                       rank, delta[NET_RECEIVED], shard);
        }
        if (!owner && (0 != delta[NET_MESSAGES])) {
            bound_fail("rank %d, not a node leader, exchanged %" PRIu64
                       " messages with other nodes (only the leaders should)",
                       rank, delta[NET_MESSAGES]);
        }
    } else if (0 == strcmp(coll, "allreduce")) {
        /* the shard this rank owns across the whole message (whole elements) */
        owner = lay.local_rank < lay.m;
        shard = owner ? (count + (size_t)lay.m - 1) / (size_t)lay.m * sizeof(int) : 0;
        bound = 2 * (uint64_t)(lay.nnodes - 1) * shard / (uint64_t)lay.nnodes +
                NET_HEADER_PER_MESSAGE * delta[NET_MESSAGES];
        if (moved > bound) {
            bound_fail(
                "allreduce bound exceeded on rank %d (node %d, %s): it moved %" PRIu64
                " bytes between nodes (sent %" PRIu64 ", received %" PRIu64 ", %" PRIu64
                " messages) > 2 (nnodes - 1) / nnodes x shard + %d x messages = 2 x %d / %d x "
                "%" PRIu64 " + %" PRIu64 " = %" PRIu64,
                rank, lay.node, owner ? "a shard owner" : "not an owner", moved, delta[NET_SENT],
                delta[NET_RECEIVED], delta[NET_MESSAGES], NET_HEADER_PER_MESSAGE, lay.nnodes - 1,
                lay.nnodes, shard, NET_HEADER_PER_MESSAGE * delta[NET_MESSAGES], bound);
        }
        /* and the counters count: an owner's result needs the other nodes' share of its shard
         * (any allreduce gets at least (nnodes - 1) / nnodes of it from outside its node) */
        if (delta[NET_RECEIVED] + delta[NET_SENT] <
            (uint64_t)(lay.nnodes - 1) * (shard / sizeof(int) / (uint64_t)lay.nnodes) *
                sizeof(int)) {
            bound_fail("rank %d (node %d) moved only %" PRIu64 " bytes between nodes: less than "
                       "(nnodes - 1) / nnodes x its shard of %" PRIu64
                       " bytes, which no allreduce can do (counters not counting?)",
                       rank, lay.node, delta[NET_RECEIVED] + delta[NET_SENT], shard);
        }
    } else if ((0 == strcmp(coll, "reduce")) && !binomial) {
        /* segmented on 3 nodes or more from 64 KiB: a leader gets (nnodes - 1) / nnodes of the
         * message, the root twice that */
        bool segmented = (lay.nnodes >= 3) && (count * sizeof(int) >= 65536);

        owner = (rank == root);
        shard = count * sizeof(int);
        bound =
            (segmented ? (owner ? 2 : 1) * (uint64_t)(lay.nnodes - 1) * shard / (uint64_t)lay.nnodes
                       : (owner ? (uint64_t)(lay.nnodes - 1) * shard : 0)) +
            NET_HEADER_PER_MESSAGE * delta[NET_MESSAGES];
        if (segmented && !owner) {
            moved = delta[NET_RECEIVED]; /* (what it serves the others counts at the getters) */
        }
        if (moved > bound) {
            bound_fail("reduce bound exceeded on rank %d (node %d%s): it moved %" PRIu64
                       " bytes between nodes (sent %" PRIu64 ", received %" PRIu64 ", %" PRIu64
                       " messages) > (the root: nnodes - 1 messages; segmented: 2 (nnodes - 1) / "
                       "nnodes, a leader (nnodes - 1) / nnodes) + %d x messages = %" PRIu64,
                       rank, lay.node, owner ? ", the root" : "", moved, delta[NET_SENT],
                       delta[NET_RECEIVED], delta[NET_MESSAGES], NET_HEADER_PER_MESSAGE, bound);
        }
        for (int j = 0; (j < lay.nnodes) && (j < MAX_NODES) && (0 == rank); ++j) {
            if (served[j] > shard) {
                bound_fail("reduce bound exceeded: node %d sent %" PRIu64 " bytes to other nodes "
                           "(what their ranks got from it) > 1 x message = %" PRIu64,
                           j, served[j], shard);
            }
        }
        /* and the counters count: the root gets the other nodes' share */
        if (owner && (delta[NET_RECEIVED] < (uint64_t)(lay.nnodes - 1) * shard /
                                                (uint64_t)(segmented ? lay.nnodes : 1))) {
            bound_fail("the root received only %" PRIu64 " bytes from other nodes, less than "
                       "%s of %" PRIu64 " bytes (counters not counting?)",
                       delta[NET_RECEIVED],
                       segmented ? "(nnodes - 1) / nnodes" : "nnodes - 1 messages", shard);
        }
    } else if ((0 == strcmp(coll, "reduce_scatter_block")) && doubling) {
        /* hierarchical_halving: only the node leaders talk between nodes, putting nothing but
         * signals; on a power of two of equal nodes each leader gets exactly the other nodes'
         * blocks (size - L: one partial of each, the least a node can), elsewhere at most the
         * whole step twice (a node paired beyond p: the extra's partial, then the rounds) */
        int nlocal = node_size(&lay, lay.node, size);
        bool pow2_even = (0 == (lay.nnodes & (lay.nnodes - 1))) && (0 == size % lay.rpn);

        owner = (0 == lay.local_rank);
        shard = count * sizeof(int);
        bound = !owner      ? 0
                : pow2_even ? (uint64_t)(size - nlocal) * shard
                            : 2 * (uint64_t)size * shard;
        if (pow2_even ? (delta[NET_RECEIVED] != bound) : (delta[NET_RECEIVED] > bound)) {
            bound_fail("reduce_scatter_block (halving): rank %d (node %d, %s) got %" PRIu64
                       " bytes from other nodes, not %s %" PRIu64,
                       rank, lay.node, owner ? "a leader" : "not a leader", delta[NET_RECEIVED],
                       pow2_even ? "exactly the other nodes' blocks," : "at most twice the step,",
                       bound);
        }
        /* and the counters count: a leader gets at least its own node's blocks (the last
         * round's half, or an extra's hand-back) */
        if (owner && (delta[NET_RECEIVED] < (uint64_t)nlocal * shard)) {
            bound_fail("reduce_scatter_block (halving): leader %d got only %" PRIu64
                       " bytes from other nodes, less than its node's %d blocks (counters not "
                       "counting?)",
                       rank, delta[NET_RECEIVED], nlocal);
        }
        check_leaders_only("reduce_scatter_block (halving)", rank, owner, delta);
        bound += NET_HEADER_PER_MESSAGE * delta[NET_MESSAGES];
    } else if (0 == strcmp(coll, "reduce_scatter_block")) {
        uint64_t node_got[MAX_NODES];

        owner = false;
        shard = count * sizeof(int);
        bound = (uint64_t)(lay.nnodes - 1) * shard + NET_HEADER_PER_MESSAGE * delta[NET_MESSAGES];
        if (moved > bound) {
            bound_fail("reduce_scatter_block bound exceeded on rank %d (node %d): it moved %" PRIu64
                       " bytes between nodes (sent %" PRIu64 ", received %" PRIu64 ", %" PRIu64
                       " messages) > (nnodes - 1) blocks + %d x messages = %" PRIu64,
                       rank, lay.node, moved, delta[NET_SENT], delta[NET_RECEIVED],
                       delta[NET_MESSAGES], NET_HEADER_PER_MESSAGE, bound);
        }
        for (int j = 0; (j < lay.nnodes) && (j < MAX_NODES) && (0 == rank); ++j) {
            uint64_t most = (uint64_t)(size - node_size(&lay, j, size)) * shard;

            if (served[j] > most) {
                bound_fail("reduce_scatter_block bound exceeded: node %d sent %" PRIu64
                           " bytes to other nodes (what their ranks got from it) > one partial of "
                           "each of the other nodes' %d blocks = %" PRIu64,
                           j, served[j], size - node_size(&lay, j, size), most);
            }
        }
        /* and the counters count: every rank's block needs the other nodes' inputs */
        nodes_received(&lay, delta, node_got);
        for (int j = 0; (j < lay.nnodes) && (j < MAX_NODES) && (0 == rank); ++j) {
            uint64_t least =
                (uint64_t)node_size(&lay, j, size) * (uint64_t)(lay.nnodes - 1) * shard;

            if (node_got[j] < least) {
                bound_fail("node %d received only %" PRIu64 " bytes from other nodes, less than "
                           "one block per rank and other node, %" PRIu64
                           " (counters not counting?)",
                           j, node_got[j], least);
            }
        }
    } else if ((0 == strcmp(coll, "allgather")) && doubling) {
        /* hierarchical_doubling: only the node leaders talk between nodes; each gets every
         * other node's blocks exactly once and sends nothing but signals */
        int nlocal = node_size(&lay, lay.node, size);

        owner = (0 == lay.local_rank);
        shard = count * sizeof(int);
        bound = owner ? (uint64_t)(size - nlocal) * shard : 0;
        if (delta[NET_RECEIVED] != bound) {
            bound_fail("allgather (doubling): rank %d (node %d, %s) got %" PRIu64
                       " bytes from other nodes, not exactly the other nodes' %d blocks = %" PRIu64,
                       rank, lay.node, owner ? "a leader" : "not a leader", delta[NET_RECEIVED],
                       owner ? size - nlocal : 0, bound);
        }
        check_leaders_only("allgather (doubling)", rank, owner, delta);
        bound += NET_HEADER_PER_MESSAGE * delta[NET_MESSAGES];
    } else if (0 == strcmp(coll, "allgather")) {
        int nlocal = node_size(&lay, lay.node, size);
        uint64_t node_got[MAX_NODES];

        owner = false;
        shard = count * sizeof(int);
        bound = (uint64_t)((size - nlocal + nlocal - 1) / nlocal) * shard +
                NET_HEADER_PER_MESSAGE * delta[NET_MESSAGES];
        if (moved > bound) {
            bound_fail(
                "allgather bound exceeded on rank %d (node %d of %d ranks): it moved %" PRIu64
                " bytes between nodes (sent %" PRIu64 ", received %" PRIu64 ", %" PRIu64
                " messages) > ceil((size - L) / L) blocks + %d x messages = %" PRIu64,
                rank, lay.node, nlocal, moved, delta[NET_SENT], delta[NET_RECEIVED],
                delta[NET_MESSAGES], NET_HEADER_PER_MESSAGE, bound);
        }
        for (int j = 0; (j < lay.nnodes) && (j < MAX_NODES) && (0 == rank); ++j) {
            uint64_t most = (uint64_t)(lay.nnodes - 1) * (uint64_t)node_size(&lay, j, size) * shard;

            if (served[j] > most) {
                bound_fail(
                    "allgather bound exceeded: node %d sent %" PRIu64 " bytes to other nodes "
                    "(what their ranks got from it) > (nnodes - 1) x its %d blocks = %" PRIu64
                    ": a block crossed to a node more than once",
                    j, served[j], node_size(&lay, j, size), most);
            }
        }
        /* and the counters count: every node gets the other nodes' blocks from outside */
        nodes_received(&lay, delta, node_got);
        for (int j = 0; (j < lay.nnodes) && (j < MAX_NODES) && (0 == rank); ++j) {
            uint64_t least = (uint64_t)(size - node_size(&lay, j, size)) * shard;

            if (node_got[j] < least) {
                bound_fail("node %d received only %" PRIu64
                           " bytes from other nodes, less than the "
                           "%" PRIu64 " bytes of their blocks (counters not counting?)",
                           j, node_got[j], least);
            }
        }
    } else if (!binomial && ((0 == strcmp(coll, "gather")) || (0 == strcmp(coll, "scatter")))) {
        int root_node = root / lay.rpn, nroot = node_size(&lay, root_node, size);
        uint64_t remote = (uint64_t)(size - nroot);

        uint64_t expected;

        owner = (rank == root);
        shard = count * sizeof(int);
        expected = rooted_expected_received(coll, &lay, size, rank, root, rails, shard);
        bound = (owner                     ? remote * shard
                 : (lay.node != root_node) ? (uint64_t)node_size(&lay, lay.node, size) * shard
                 : rails                   ? expected
                                           : 0) +
                NET_HEADER_PER_MESSAGE * delta[NET_MESSAGES];
        if (moved > bound) {
            bound_fail("%s bound exceeded on rank %d (node %d%s): it moved %" PRIu64
                       " bytes between nodes (sent %" PRIu64 ", received %" PRIu64 ", %" PRIu64
                       " messages) > (the root: the other nodes' blocks; off its node: the node's "
                       "blocks) + %d x messages = %" PRIu64,
                       coll, rank, lay.node, owner ? ", the root" : "", moved, delta[NET_SENT],
                       delta[NET_RECEIVED], delta[NET_MESSAGES], NET_HEADER_PER_MESSAGE, bound);
        }
        /* the root gets from (or serves) each other node in one message per step when
         * hierarchical: at most nnodes - 1 data messages a step, and the step's signals */
        if (owner && (max_root_messages > 0) && (delta[NET_MESSAGES] > max_root_messages)) {
            bound_fail("%s: the root exchanged %" PRIu64 " messages with other nodes > %" PRIu64,
                       coll, delta[NET_MESSAGES], max_root_messages);
        }
        /* every other node's blocks cross the root's link once, and the counters count: what
         * the other nodes got from the root's node (gets are counted by the getter: scatter),
         * what the root got (gather) */
        if ((0 == strcmp(coll, "scatter")) && (0 == rank) && (root_node < MAX_NODES) &&
            (served[root_node] != remote * shard)) {
            bound_fail("scatter: the root's node served %" PRIu64 " bytes to other nodes, not the "
                       "%" PRIu64 " bytes of their blocks",
                       served[root_node], remote * shard);
        }
        /* each run crosses between its node's leader and its carrier, exactly (gets are
         * counted by the getter: gather the carriers, the root without rails; scatter the
         * leaders) */
        if (delta[NET_RECEIVED] != expected) {
            bound_fail("%s%s: rank %d (node %d%s) got %" PRIu64 " bytes from other nodes, not the "
                       "%" PRIu64 " of the runs it %s",
                       coll, rails ? " (rails)" : "", rank, lay.node, owner ? ", the root" : "",
                       delta[NET_RECEIVED], expected,
                       (0 == strcmp(coll, "gather")) ? "carries" : "leads");
        }
        /* node-aggregated scatter: one rank of each other node gets from the root's node */
        if (one_getter && (0 == strcmp(coll, "scatter"))) {
            uint64_t getters[MAX_NODES] = {0};

            if (lay.node < MAX_NODES) {
                getters[lay.node] = (delta[NET_RECEIVED] > 0) ? 1 : 0;
            }
            MPI_Allreduce(MPI_IN_PLACE, getters, MAX_NODES, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
            for (int j = 0; (j < lay.nnodes) && (j < MAX_NODES) && (0 == rank); ++j) {
                if ((j != root_node) && (1 != getters[j])) {
                    bound_fail("scatter: %" PRIu64 " ranks of node %d got data from other nodes, "
                               "not one",
                               getters[j], j);
                }
            }
        }
    } else if (0 == strcmp(coll, "alltoall")) {
        owner = false;
        shard = count * sizeof(int);
        bound = 0; /* (none per rank: a carrier moves its node's blocks for the nodes it
                    * carries; the bounds are the node's and the messages') */
        /* every block crosses once, and the counters count */
        for (int j = 0; (j < lay.nnodes) && (j < MAX_NODES) && (0 == rank); ++j) {
            uint64_t blocks =
                (uint64_t)node_size(&lay, j, size) * (uint64_t)(size - node_size(&lay, j, size));

            if (served[j] != blocks * shard) {
                bound_fail("alltoall: node %d sent %" PRIu64 " bytes to other nodes (what their "
                           "ranks got from it), not its %" PRIu64 " blocks for them, %" PRIu64,
                           j, served[j], blocks, blocks * shard);
            }
        }
        if ((max_in_flight > 0) && (in_flight > max_in_flight)) {
            bound_fail("alltoall: rank %d had %" PRIu64 " gets from other nodes in flight at once "
                       "(coll_gpu_net_gets_in_flight_max) > %" PRIu64,
                       rank, in_flight, max_in_flight);
        }
        if ((max_in_flight > 0) && (delta[NET_RECEIVED] > 0) && (0 == in_flight)) {
            tu_fail("alltoall: rank %d got data from other nodes with no get in flight "
                    "(coll_gpu_net_gets_in_flight_max not counting?)",
                    rank);
        }
        /* node-aggregated: for each pair of nodes one rank of each gets from the other */
        if (one_getter) {
            int nlocal = node_size(&lay, lay.node, size);
            uint64_t most =
                2 * (uint64_t)((lay.nnodes + nlocal - 1) / nlocal) + agreement_messages(&lay, rank);
            uint64_t *got = calloc((size_t)size * MAX_NODES, sizeof(uint64_t));

            if (NULL == got) {
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            if (delta[NET_MESSAGES] > most) {
                bound_fail("alltoall: rank %d (node %d of %d ranks) exchanged %" PRIu64
                           " messages with other nodes > 2 ceil(nnodes / L) + the agreement's "
                           "= %" PRIu64,
                           rank, lay.node, nlocal, delta[NET_MESSAGES], most);
            }
            MPI_Gather(by_node_after, MAX_NODES, MPI_UINT64_T, got, MAX_NODES, MPI_UINT64_T, 0,
                       MPI_COMM_WORLD);
            for (int j = 0; (j < lay.nnodes) && (j < MAX_NODES) && (0 == rank); ++j) {
                for (int i = 0; (i < lay.nnodes) && (i < MAX_NODES); ++i) {
                    int getters = 0;

                    for (int r = 0; (r < size) && (i != j); ++r) {
                        getters += ((r / lay.rpn == j) && (got[(size_t)r * MAX_NODES + i] > 0));
                    }
                    if ((i != j) && (1 != getters)) {
                        bound_fail("alltoall: %d ranks of node %d got data from node %d, not one",
                                   getters, j, i);
                    }
                }
            }
            free(got);
        }
    } else if (binomial) {
        /* the rooted collectives' binomial trees: only the leaders (the root; elsewhere the rank
         * at the root's index in its node) exchange messages with other nodes, and put nothing
         * but signals (a node's first rank, where it does not lead, the agreement's alone); what
         * each leader gets and each node serves is exact (binomial_bytes) */
        int root_node = root / lay.rpn, index = root % lay.rpn;
        int v = (lay.node - root_node + lay.nnodes) % lay.nnodes;

        owner = (rank == root) || ((lay.node != root_node) &&
                                   (lay.local_rank == index % node_size(&lay, lay.node, size)));
        shard = count * sizeof(int);
        bound = owner ? binomial_bytes(coll, &lay, size, root_node, v, shard, false) : 0;
        char what[64];

        snprintf(what, sizeof(what), "%s (binomial)", coll);
        check_leaders_only(what, rank, true, delta);
        if (rails) {
            uint64_t node_got[MAX_NODES];

            nodes_received(&lay, delta, node_got);
            check_rails(coll, &lay, size, rank, root, shard, delta, node_got);
        } else if (!owner && (delta[NET_MESSAGES] > agreement_messages(&lay, rank))) {
            bound_fail("%s (binomial): rank %d, not a leader, exchanged %" PRIu64
                       " messages with other nodes, more than the agreement's %" PRIu64,
                       coll, rank, delta[NET_MESSAGES], agreement_messages(&lay, rank));
        }
        if (!rails && (delta[NET_RECEIVED] != bound)) {
            bound_fail("%s (binomial): rank %d (node %d, position %d%s) got %" PRIu64
                       " bytes from other nodes, not %" PRIu64,
                       coll, rank, lay.node, v, owner ? ", its leader" : "", delta[NET_RECEIVED],
                       bound);
        }
        for (int j = 0; (j < lay.nnodes) && (j < MAX_NODES) && (0 == rank); ++j) {
            int pos = (j - root_node + lay.nnodes) % lay.nnodes;
            uint64_t want = binomial_bytes(coll, &lay, size, root_node, pos, shard, true);

            if (served[j] != want) {
                bound_fail("%s (binomial): node %d (position %d) served %" PRIu64
                           " bytes to other nodes, not %" PRIu64,
                           coll, j, pos, served[j], want);
            }
        }
        bound += NET_HEADER_PER_MESSAGE * delta[NET_MESSAGES];
    } else {
        owner = (rank == root);
        shard = count * sizeof(int);
        bound = ((lay.node != root / lay.rpn) ? shard : 0) +
                NET_HEADER_PER_MESSAGE * delta[NET_MESSAGES];
        if (moved > bound) {
            bound_fail(
                "bcast bound exceeded on rank %d (node %d%s): it moved %" PRIu64
                " bytes between nodes (sent %" PRIu64 ", received %" PRIu64 ", %" PRIu64
                " messages) > 1 x message (ranks off the root's node) + %d x messages = %" PRIu64,
                rank, lay.node, owner ? ", the root" : "", moved, delta[NET_SENT],
                delta[NET_RECEIVED], delta[NET_MESSAGES], NET_HEADER_PER_MESSAGE, bound);
        }
        for (int j = 0; (j < lay.nnodes) && (j < MAX_NODES) && (0 == rank); ++j) {
            if (served[j] > shard) {
                bound_fail("bcast bound exceeded: node %d%s sent %" PRIu64
                           " bytes to other nodes (what their ranks got from it) > 1 x message = "
                           "%" PRIu64,
                           j, (j == root / lay.rpn) ? " (the root's)" : "", served[j], shard);
            }
        }
        /* and the counters count: every node but the root's gets the message from outside */
        {
            uint64_t node_got[MAX_NODES];

            nodes_received(&lay, delta, node_got);
            if (rails) {
                check_rails(coll, &lay, size, rank, root, shard, delta, node_got);
            }
            for (int j = 0; (j < lay.nnodes) && (j < MAX_NODES) && (0 == rank); ++j) {
                if ((j != root / lay.rpn) && (node_got[j] < shard)) {
                    bound_fail("node %d received only %" PRIu64
                               " bytes from other nodes, less than "
                               "the message of %" PRIu64 " bytes it must get (counters not "
                               "counting?)",
                               j, node_got[j], shard);
                }
            }
        }
    }

    if (check_rounds) {
        int log2n = ceil_log(lay.nnodes, 2);

        if (delta[NET_ROUNDS] > (uint64_t)(2 * log2n + 1)) {
            tu_fail("%s: rank %d waited through %" PRIu64
                    " inter-node rounds (coll_gpu_net_rounds) > 2 ceil(log2 nnodes) + 1 = %d "
                    "(%d nodes)",
                    coll, rank, delta[NET_ROUNDS], 2 * log2n + 1, lay.nnodes);
        }
        /* (a rank may wait on no other node: one that neither owns a shard nor leads its node,
         * since the agreement goes through the leaders) */
        {
            uint64_t most = delta[NET_ROUNDS];

            MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
            if ((0 == rank) && (0 == most)) {
                tu_fail("%s: no rank waited through an inter-node round: counters not counting?",
                        coll);
            }
        }
    }

    if (pipelined_chunks > 0) {
        /* K chunks of partner rounds, no barrier between them: each chunk at most
         * 2 ceil(log2 nnodes) rounds (halving and doubling, or with a pairing and a hand-back
         * beyond a power of two), then the closing agreement: ceil(log_radix nnodes) rounds
         * between the node leaders */
        int log2n = ceil_log(lay.nnodes, 2), log2p = floor_log2(lay.nnodes);
        uint64_t most, most_rounds;

        most_rounds = (uint64_t)pipelined_chunks * (uint64_t)(2 * log2n) +
                      (uint64_t)ceil_log(lay.nnodes, agreement_radix());
        if (delta[NET_ROUNDS] > most_rounds) {
            tu_fail("%s: rank %d waited through %" PRIu64
                    " inter-node rounds (coll_gpu_net_rounds) > %d chunks x 2 ceil(log2 nnodes) "
                    "+ ceil(log_radix nnodes) = %" PRIu64 " (%d nodes): a barrier between chunks?",
                    coll, rank, delta[NET_ROUNDS], pipelined_chunks, most_rounds, lay.nnodes);
        }
        /* and the rounds are counted: some owner waited through each chunk's halving and
         * doubling */
        most = delta[NET_ROUNDS];
        MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        if ((0 == rank) && (most < (uint64_t)pipelined_chunks * (uint64_t)(2 * log2p))) {
            tu_fail(
                "%s: the busiest rank waited through %" PRIu64 " inter-node rounds, fewer "
                "than %d chunks x 2 floor(log2 nnodes): counters not counting, or fewer chunks?",
                coll, most, pipelined_chunks);
        }
    }

    /* every rank's counts, printed by rank 0 */
    {
        uint64_t mine[NET_NUM + 1];
        uint64_t total = 0, received = 0;

        memcpy(mine, delta, sizeof(delta));
        mine[NET_NUM] = bound;
        MPI_Gather(mine, NET_NUM + 1, MPI_UINT64_T, all, NET_NUM + 1, MPI_UINT64_T, 0,
                   MPI_COMM_WORLD);
        if (0 == rank) {
            for (int r = 0; r < size; ++r) {
                const uint64_t *v = all + (size_t)r * (NET_NUM + 1);

                total += v[NET_SENT] + v[NET_RECEIVED];
                received += v[NET_RECEIVED];
                printf("%s: rank %d node %d%s: sent %" PRIu64 " received %" PRIu64
                       " messages %" PRIu64 " rounds %" PRIu64 " waits %" PRIu64 " bound %" PRIu64
                       "\n",
                       coll, r, r / lay.rpn,
                       (0 == strcmp(coll, "allreduce")) ? ((r % lay.rpn < lay.m) ? " owner" : "")
                       : (0 == strcmp(coll, "bcast") || 0 == strcmp(coll, "reduce") ||
                          0 == strcmp(coll, "gather") || 0 == strcmp(coll, "scatter"))
                           ? ((r == root) ? " root" : "")
                           : "",
                       v[NET_SENT], v[NET_RECEIVED], v[NET_MESSAGES], v[NET_ROUNDS], v[NET_WAITS],
                       v[NET_NUM]);
            }
            printf("%s: %zu bytes, %d nodes, %d ranks per node: %" PRIu64
                   " bytes between nodes in all, %" PRIu64 " received; sent by node:",
                   coll, count * sizeof(int), lay.nnodes, lay.rpn, total, received);
            for (int j = 0; (j < lay.nnodes) && (j < MAX_NODES); ++j) {
                printf(" %" PRIu64, served[j]);
            }
            printf("\n");
            fflush(stdout);
        }
    }
    tu_case_end();
    free(all);
    free(sbuf);
    free(rbuf);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}
