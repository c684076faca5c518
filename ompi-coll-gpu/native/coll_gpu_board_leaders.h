/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The call board's inside, for its two files: the board and its words, and the node leaders'
 * messages across nodes (coll_gpu_board_leaders.c).  coll_gpu_board.c (the board's making, the
 * words, the waits and each call's outcome) calls the leaders' file, never the other way; the
 * rest of the component includes coll_gpu_board.h.
 */
#ifndef COLL_GPU_BOARD_LEADERS_H
#define COLL_GPU_BOARD_LEADERS_H

#include "coll_gpu.h"

#include "ompi/request/request.h"

#include <pthread.h>
#include <stdint.h>

BEGIN_C_DECLS

/* A word: the call's number above its status (coll_gpu_board_status_t, 4 bits, and the flag
 * COLL_GPU_BOARD_FAILED). */
#define COLL_GPU_BOARD_SHIFT 5
#define COLL_GPU_BOARD_WORD(call, status) (((call) << COLL_GPU_BOARD_SHIFT) | (uint64_t)(status))
#define COLL_GPU_BOARD_CALL(word) ((word) >> COLL_GPU_BOARD_SHIFT)
#define COLL_GPU_BOARD_STATUS(word) ((unsigned)((word) & ((1u << COLL_GPU_BOARD_SHIFT) - 1)))

/* One rank's words, a cache line of its own (each has one writer: the rank; verdict its
 * node's leader's). */
typedef struct {
    volatile uint64_t host; /* the last call it took a host path in */
    /* its arrivals, COLL_GPU_BOARD_WORD(call, status), by the call's parity: a peer may arrive
     * at the next call (a pipeline's close, below) before this rank read its word for this
     * one, never two calls on before that */
    volatile uint64_t arrive[2];
    volatile uint64_t verdict; /* a leader's: its last outcome across nodes, as a word */
    uint64_t pad[4];
} coll_gpu_board_slot_t;

struct coll_gpu_board {
    struct ompi_communicator_t *comm;
    coll_gpu_board_slot_t *slots; /* the node's ranks, in communicator order */
    size_t map_len;
    int local_index, local_size;
    /* across nodes (nnodes > 1) */
    int nnodes, node;
    int *leader_of_node; /* nnodes: each node's leader (communicator rank) */
    int *node_of_rank;   /* size: each rank's node */
    /* size: each rank's pid where it shares this host, else 0, and when that process started
     * (a dead peer's evidence; a pid reused since is not the peer) */
    int *pid_of_rank;
    uint64_t *start_of_rank;
    int *local_ranks;  /* local_size: the node's ranks (communicator ranks) */
    int dead_rank;     /* a rank found dead while waiting for its word (-1: none) */
    double wait_since; /* the current wait's start (coll_gpu_transport_timeout) */
    double next_stat;  /* when a wait next reads a peer's /proc stat (coll_gpu_board_dead) */
    bool leader;
    /* a leader's: the words received from each node's leader (the latest of each parity, as
     * the slots' arrivals: 2 per node), and the last call whose word it sent to each; its
     * receive, reposted after each message */
    uint64_t *inbox, *sent;
    uint64_t recv_buf[1];
    ompi_request_t *recv_req;
    /* one send in flight per node at most, its buffer kept until it completes */
    uint64_t *send_buf;
    ompi_request_t **send_req;
    pthread_mutex_t lock; /* the leader's messages: its calls against the progress callback */
    bool closed;          /* quiesced: no message any more */
    mca_coll_gpu_module_t *module;
    struct coll_gpu_board *next; /* the process's boards (coll_gpu_boards_progress) */
};

/* The leaders' side (coll_gpu_board_leaders.c).  A leader across nodes: what it keeps and its
 * posted receive (false when it could not), that receive cancelled (a board that is not made). */
bool coll_gpu_board_leader_init(coll_gpu_board_t *board);
void coll_gpu_board_leader_cancel(coll_gpu_board_t *board);
/* Under the leader's lock: its word to node j's leader (false: from_progress, and the previous
 * send still in flight); what its receive got, into its inbox. */
bool coll_gpu_board_send(coll_gpu_board_t *board, int j, uint64_t word, bool from_progress);
void coll_gpu_board_receive(coll_gpu_board_t *board);
/* A made board into the progress callback's list (leaders across nodes; every board under
 * MPI_THREAD_MULTIPLE); out of it, a leader answering what it was asked first. */
void coll_gpu_boards_add(coll_gpu_board_t *board);
void coll_gpu_board_quiesce(coll_gpu_board_t *board);

END_C_DECLS

#endif /* COLL_GPU_BOARD_LEADERS_H */
