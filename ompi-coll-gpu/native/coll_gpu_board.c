/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A communicator's call board (coll_gpu_board.h): its making, the words, the waits for them and
 * each call's outcome.  The node leaders' messages across nodes: coll_gpu_board_leaders.c.
 */
#include "coll_gpu_board.h"
#include "coll_gpu_board_leaders.h"
#include "coll_gpu_setup.h"

#include "ompi/communicator/communicator.h"
#include "ompi/op/op.h"
#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/show_help.h"

#include "cgt.h" /* cgt_shm_*, cgt_proc_alive, cgt_cpu_relax */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What each rank tells the others at creation. */
typedef struct {
    uint64_t hash; /* native_config_hash: the parameters that change the protocol */
    int leader;    /* its node's leader (the node's lowest rank: emulated nodes split it) */
    int pid;       /* with start: a dead peer's evidence */
    int ok;        /* a leader's: it made its segment */
    int tasks;     /* it can run a setup as a task (coll_gpu_setup_task_possible) */
    uint64_t start;
    char shm_name[CGT_SHM_NAME_LEN]; /* a leader's segment (cgt_shm_create) */
} coll_gpu_board_key_t;

/* This rank's node leader: the lowest rank of its (emulated) node (coll_gpu_ranks_per_node
 * splits a node's ranks, in communicator order, as the transport team does), its index there
 * and the node's number of ranks. */
static int coll_gpu_board_my_leader(struct ompi_communicator_t *comm, int *index_p,
                                    int *local_size_p) {
    int size = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    int rpn = mca_coll_gpu_component.ranks_per_node, index = 0, leader = me, sub;
    int *local = malloc((size_t)size * sizeof(int)), nlocal = 0;

    if (NULL == local) {
        *index_p = 0;
        *local_size_p = 1;
        return me;
    }
    for (int r = 0; r < size; ++r) {
        if ((r == me) ||
            OPAL_PROC_ON_LOCAL_NODE(ompi_comm_peer_lookup(comm, r)->super.proc_flags)) {
            if (r == me) {
                index = nlocal;
            }
            local[nlocal++] = r;
        }
    }
    sub = (rpn > 0) ? index / rpn : 0;
    leader = local[(rpn > 0) ? sub * rpn : 0];
    *index_p = (rpn > 0) ? index - sub * rpn : index;
    *local_size_p = (rpn > 0) ? ((nlocal - sub * rpn < rpn) ? nlocal - sub * rpn : rpn) : nlocal;
    free(local);
    return leader;
}

static void coll_gpu_board_free(coll_gpu_board_t *board) {
    if (NULL == board) {
        return;
    }
    if (NULL != board->slots) {
        cgt_shm_unmap((void *)board->slots, board->map_len);
    }
    free(board->leader_of_node);
    free(board->node_of_rank);
    free(board->pid_of_rank);
    free(board->start_of_rank);
    free(board->inbox);
    free(board->send_req);
    pthread_mutex_destroy(&board->lock);
    free(board);
}

void coll_gpu_board_create(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    int size = ompi_comm_size(comm), me = ompi_comm_rank(comm), ok = 1, index, node_size;
    coll_gpu_board_key_t mine = {.hash = c->native_config_hash}, *keys;
    coll_gpu_board_t *board = calloc(1, sizeof(*board));
    void *map = NULL;

    keys = malloc((size_t)size * sizeof(*keys));
    mine.leader = coll_gpu_board_my_leader(comm, &index, &node_size);
    if ((NULL == board) || (NULL == keys)) {
        ok = 0;
    } else {
        pthread_mutex_init(&board->lock, NULL);
        board->comm = comm;
        board->module = module;
        board->local_index = index;
        board->dead_rank = -1;
    }
    mine.pid = (int)getpid();
    mine.tasks = coll_gpu_setup_task_possible();
    mine.start = cgt_proc_start_time(getpid());
    if (ok && (mine.leader == me)) {
        /* the segment first, then the exchange: a peer that learns its name finds it */
        mine.ok = (CGT_OK == cgt_shm_create((size_t)node_size * sizeof(coll_gpu_board_slot_t),
                                            mine.shm_name, &map));
        if (!mine.ok) {
            COLL_GPU_VERBOSE(1, "%s: call board segment of %d ranks: %s", comm->c_name, node_size,
                             strerror(errno));
        }
    }
    if ((NULL == keys) ||
        (OMPI_SUCCESS != coll_gpu_setup_allgather(comm, &mine, keys, sizeof(mine)))) {
        ok = 0;
    }
    if (ok) {
        int nnodes = 0, local_size = 0;

        module->setup_tasks_everywhere = true;

        for (int r = 0; r < size; ++r) {
            if (keys[r].hash != mine.hash) {
                module->params_differ = true;
                if ((0 == me) && !module->params_told) {
                    module->params_told = true;
                    opal_output(0,
                                "coll:gpu: %s: the ranks were given different coll_gpu "
                                "parameters or tuning rules for the native algorithms: its device "
                                "collectives are staged (rank %d's differ from rank 0's; one host "
                                "collective each)",
                                comm->c_name, r);
                }
            }
            module->setup_tasks_everywhere = module->setup_tasks_everywhere && keys[r].tasks;
            nnodes += (keys[r].leader == r);
            local_size += (keys[r].leader == mine.leader);
        }
        ok = keys[mine.leader].ok;
        board->pid_of_rank = calloc((size_t)size + (size_t)local_size, sizeof(int));
        board->start_of_rank = calloc((size_t)size, sizeof(uint64_t));
        ok = ok && (NULL != board->pid_of_rank) && (NULL != board->start_of_rank);
        for (int r = 0, k = 0; ok && (r < size); ++r) {
            /* a process of this host (an emulated node's too) can be seen gone */
            if ((r != me) &&
                OPAL_PROC_ON_LOCAL_NODE(ompi_comm_peer_lookup(comm, r)->super.proc_flags)) {
                board->pid_of_rank[r] = keys[r].pid;
                board->start_of_rank[r] = keys[r].start;
            }
            if (keys[r].leader == mine.leader) {
                board->pid_of_rank[size + k++] = r;
            }
        }
        board->local_ranks = ok ? board->pid_of_rank + size : NULL;
        board->nnodes = nnodes;
        board->local_size = local_size;
        board->leader = (mine.leader == me);
        board->map_len = (size_t)local_size * sizeof(coll_gpu_board_slot_t);
        if (ok && (nnodes > 1)) {
            board->leader_of_node = malloc((size_t)nnodes * sizeof(int));
            board->node_of_rank = malloc((size_t)size * sizeof(int));
            ok = (NULL != board->leader_of_node) && (NULL != board->node_of_rank);
            for (int r = 0, j = 0; ok && (r < size); ++r) {
                if (keys[r].leader == r) {
                    board->leader_of_node[j] = r;
                    board->node_of_rank[r] = j++;
                }
            }
            for (int r = 0; ok && (r < size); ++r) {
                board->node_of_rank[r] = board->node_of_rank[keys[r].leader]; /* leaders first */
            }
            board->node = ok ? board->node_of_rank[me] : 0;
        }
        if (ok && !board->leader &&
            (CGT_OK != cgt_shm_attach(keys[mine.leader].shm_name, board->map_len, &map))) {
            COLL_GPU_VERBOSE(1, "%s: rank %d's call board segment: %s", comm->c_name, mine.leader,
                             strerror(errno));
            ok = 0;
        }
        board->slots = ok ? map : NULL;
    }
    if ((NULL != map) && (NULL == board || map != (void *)board->slots)) {
        cgt_shm_unmap(map, (size_t)node_size * sizeof(coll_gpu_board_slot_t));
    }
    if (ok && board->leader && (board->nnodes > 1)) {
        ok = coll_gpu_board_leader_init(board);
    }
    /* every rank's outcome, then the name goes (every peer that could map it has) */
    if (OMPI_SUCCESS != coll_gpu_setup_allreduce(comm, &ok, 1, MPI_INT, MPI_MIN)) {
        ok = 0;
    }
    if ((mine.leader == me) && mine.ok) {
        cgt_shm_unlink(mine.shm_name);
    }
    free(keys);
    if (!ok) {
        module->setup_tasks_everywhere = false; /* on every rank: the outcome is */
        COLL_GPU_VERBOSE(1, "%s: no call board: every device collective is staged", comm->c_name);
        if (NULL != board) {
            coll_gpu_board_leader_cancel(board);
        }
        coll_gpu_board_free(board);
        return;
    }
    module->board = board;
    if ((board->nnodes > 1 && board->leader) || mca_coll_gpu_component.thread_multiple) {
        coll_gpu_boards_add(board);
    }

    /* The pass-through path publishes here from now on; what it published before (in the
     * module) is this rank's word so far.  Not the current call's number: a device call that
     * waits for this setup publishes its own word once it is done. */
    {
        volatile uint64_t *host = &board->slots[board->local_index].host;

        *host = __atomic_load_n(&module->board_host_local, __ATOMIC_ACQUIRE);
        __atomic_store_n(&module->board_host, host, __ATOMIC_RELEASE);
        /* a store into the module that read the old place meanwhile (MPI_THREAD_MULTIPLE: the
         * progress callback takes it in too, coll_gpu_boards_progress) */
        if (__atomic_load_n(&module->board_host_local, __ATOMIC_ACQUIRE) > *host) {
            *host = module->board_host_local;
        }
    }
    COLL_GPU_VERBOSE(10, "%s: call board of %d ranks on this node, %d node(s)%s", comm->c_name,
                     board->local_size, (board->nnodes > 1) ? board->nnodes : 1,
                     board->leader ? ", this rank leads" : "");
}

void coll_gpu_board_destroy(mca_coll_gpu_module_t *module) {
    coll_gpu_board_t *board = module->board;

    module->board_host = &module->board_host_local;
    if (NULL == board) {
        return;
    }
    module->board = NULL;
    coll_gpu_board_quiesce(board);
    coll_gpu_board_free(board);
}

/* How often a wait reads a peer's /proc stat (cgt_proc_alive: an open, a read and a close,
 * some microseconds), beside the signal-0 probe of every 16th spin (a fraction of one). */
#define COLL_GPU_BOARD_STAT_INTERVAL 0.005

/* Whether communicator rank r is known dead: its process, on this host, is gone (the probe, at
 * once), a zombie or its pid reused by another process (the stat, every
 * COLL_GPU_BOARD_STAT_INTERVAL s of waiting).  Peers on other hosts are Open MPI's runtime's to
 * watch (without --enable-recovery it ends the job). */
static bool coll_gpu_board_dead(coll_gpu_board_t *board, int r, double now) {
    int pid = board->pid_of_rank[r];

    if (pid <= 0) {
        return false;
    }
    if ((0 != kill(pid, 0)) && (ESRCH == errno)) {
        return true;
    }
    if (now < board->next_stat) {
        return false;
    }
    board->next_stat = now + COLL_GPU_BOARD_STAT_INTERVAL;
    return !cgt_proc_alive(pid, board->start_of_rank[r]);
}

/* A wait's step: progress, and every so often the liveness of rank r. */
static bool coll_gpu_board_wait_alive(coll_gpu_board_t *board, int r, unsigned *spins) {
    double timeout = mca_coll_gpu_component.transport_timeout;
    struct timespec ts;
    double now;

    cgt_cpu_relax();
    (void)opal_progress();
    if (0 != (++*spins & 15)) {
        return true;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    if (coll_gpu_board_dead(board, r, now)) {
        board->dead_rank = r;
        return false;
    }
    if (timeout > 0) {
        /* the opt-in hang detector, as in the native algorithms' waits: a wait that long is
         * taken for a hang, and the job ends on every rank alike */
        if (16 == *spins) {
            board->wait_since = now;
        } else if (now - board->wait_since > timeout) {
            char what[96];

            snprintf(what, sizeof(what), "rank %d's word on the call board", r);
            opal_show_help("help-mpi-coll-gpu.txt", "transport timeout", true, COLL_GPU_HOSTNAME,
                           board->module->current_call, ompi_comm_rank(board->comm),
                           ompi_comm_size(board->comm), what);
            ompi_mpi_abort(board->comm, MPI_ERR_OTHER);
        }
    }
    return true;
}

bool coll_gpu_board_dead_peer(const mca_coll_gpu_module_t *module, int *rank_p, int *pid_p) {
    const coll_gpu_board_t *board = module->board;

    if ((NULL == board) || (board->dead_rank < 0)) {
        return false;
    }
    *rank_p = board->dead_rank;
    *pid_p = board->pid_of_rank[board->dead_rank];
    return true;
}

/* Two outcomes combined: the common status, else ABSENT where a rank passes the call to Open
 * MPI (or would, failing its native host-memory run), else MIXED (every rank stages). */
static unsigned coll_gpu_board_combine_status(unsigned a, unsigned b) {
    if (a == b) {
        return a;
    }
    if ((COLL_GPU_BOARD_DEAD == a) || (COLL_GPU_BOARD_DEAD == b)) {
        return COLL_GPU_BOARD_DEAD;
    }
    if ((COLL_GPU_BOARD_ABSENT == a) || (COLL_GPU_BOARD_ABSENT == b) ||
        (COLL_GPU_BOARD_HOST == a) || (COLL_GPU_BOARD_HOST == b) || (COLL_GPU_BOARD_SINGLE == a) ||
        (COLL_GPU_BOARD_SINGLE == b)) {
        /* (a rank staging one host collective beside ranks that would do otherwise: all meet
         * in that host collective, as they meet a rank that passed the call) */
        return COLL_GPU_BOARD_ABSENT;
    }
    return COLL_GPU_BOARD_MIXED;
}

/* The same of two words' statuses, whose FAILED flags add up. */
static unsigned coll_gpu_board_combine(unsigned a, unsigned b) {
    if (a == b) {
        return a; /* every call where the ranks agree, without a call */
    }
    return coll_gpu_board_combine_status(a & ~COLL_GPU_BOARD_FAILED, b & ~COLL_GPU_BOARD_FAILED) |
           ((a | b) & COLL_GPU_BOARD_FAILED);
}

/* Whether an outcome is known before every word is in: a rank passed the call, or died. */
static bool coll_gpu_board_settled(unsigned outcome) {
    outcome &= ~COLL_GPU_BOARD_FAILED;
    return (COLL_GPU_BOARD_ABSENT == outcome) || (COLL_GPU_BOARD_DEAD == outcome);
}

/* A word of a slot, read after the words read before it (the writers store in order: a rank's
 * arrival at a call before its host word of a later one, a leader's verdict before its arrival
 * at the next call). */
static inline uint64_t coll_gpu_board_load(const volatile uint64_t *word) {
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

/* coll_gpu_board_test_delay_us: between a word read and the reads that follow it. */
static void coll_gpu_board_test_delay(void) {
    int us = mca_coll_gpu_component.board_test_delay_us;

    if (OPAL_UNLIKELY(us > 0)) {
        struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};

        nanosleep(&ts, NULL);
    }
}

/* What peer p's words say of call k: 0 not yet, else the status it arrived with, ABSENT when
 * it took a host path or is past the call (no rank passes a call before every rank entered it,
 * unless some rank took it to Open MPI). */
static unsigned coll_gpu_board_peer(const coll_gpu_board_slot_t *slot, uint64_t k) {
    uint64_t arrive = coll_gpu_board_load(&slot->arrive[k & 1]);

    if (COLL_GPU_BOARD_CALL(arrive) == k) {
        return COLL_GPU_BOARD_STATUS(arrive);
    }
    if (COLL_GPU_BOARD_CALL(arrive) > k) {
        return COLL_GPU_BOARD_ABSENT; /* two calls on: it passed this one */
    }
    coll_gpu_board_test_delay();
    if (coll_gpu_board_load(&slot->host) < k) {
        return 0;
    }
    /* A host path at this call or later.  It may have arrived here since the read above, taken
     * this rank's word and passed a later call: its arrival, stored before, stands. */
    arrive = coll_gpu_board_load(&slot->arrive[k & 1]);
    return (COLL_GPU_BOARD_CALL(arrive) == k) ? COLL_GPU_BOARD_STATUS(arrive)
                                              : COLL_GPU_BOARD_ABSENT;
}

/* The same of node j's word in a leader's inbox (under its lock). */
static unsigned coll_gpu_board_remote(const coll_gpu_board_t *board, int j, uint64_t k) {
    uint64_t word = board->inbox[2 * j + (k & 1)];

    if (COLL_GPU_BOARD_CALL(word) == k) {
        return COLL_GPU_BOARD_STATUS(word);
    }
    /* a word of a later call: that leader went on without arriving here (it passed the call,
     * which it cannot do once it arrived, unless the outcome was ABSENT) */
    return ((COLL_GPU_BOARD_CALL(word) > k) ||
            (COLL_GPU_BOARD_CALL(board->inbox[2 * j + ((k + 1) & 1)]) > k))
               ? COLL_GPU_BOARD_ABSENT
               : 0;
}

/* Across nodes, a leader: its node's outcome to every other leader, then theirs combined. */
static unsigned coll_gpu_board_arrive_leaders(coll_gpu_board_t *board, uint64_t k,
                                              unsigned outcome) {
    pthread_mutex_lock(&board->lock);
    for (int j = 0; j < board->nnodes; ++j) {
        if (j != board->node) {
            (void)coll_gpu_board_send(board, j, COLL_GPU_BOARD_WORD(k, outcome), false);
        }
    }
    for (int j = 0; !coll_gpu_board_settled(outcome) && (j < board->nnodes); ++j) {
        unsigned theirs, spins = 0;
        bool alive = true;

        if (j == board->node) {
            continue;
        }
        while (alive && (0 == (theirs = coll_gpu_board_remote(board, j, k)))) {
            coll_gpu_board_receive(board);
            if (0 == coll_gpu_board_remote(board, j, k)) {
                pthread_mutex_unlock(&board->lock);
                alive = coll_gpu_board_wait_alive(board, board->leader_of_node[j], &spins);
                pthread_mutex_lock(&board->lock);
            }
        }
        outcome = coll_gpu_board_combine(outcome, alive ? theirs : COLL_GPU_BOARD_DEAD);
    }
    __atomic_store_n(&board->slots[board->local_index].verdict, COLL_GPU_BOARD_WORD(k, outcome),
                     __ATOMIC_RELEASE);
    pthread_mutex_unlock(&board->lock);
    return outcome;
}

/* A rank that is not its node's leader, across nodes: the leader's outcome for call k, which it
 * publishes (it arrived: the node's outcome was not ABSENT). */
static unsigned coll_gpu_board_leader_outcome(coll_gpu_board_t *board, uint64_t k) {
    const coll_gpu_board_slot_t *lead = &board->slots[0];
    unsigned spins = 0;

    for (;;) {
        uint64_t verdict = coll_gpu_board_load(&lead->verdict);

        if (COLL_GPU_BOARD_CALL(verdict) == k) {
            return COLL_GPU_BOARD_STATUS(verdict);
        }
        coll_gpu_board_test_delay();
        if ((COLL_GPU_BOARD_CALL(verdict) > k) || (coll_gpu_board_load(&lead->host) > k) ||
            (COLL_GPU_BOARD_CALL(coll_gpu_board_load(&lead->arrive[(k + 1) & 1])) > k) ||
            (COLL_GPU_BOARD_CALL(coll_gpu_board_load(&lead->arrive[k & 1])) > k)) {
            /* It went on.  It may have written this call's verdict since the read above, then
             * gone on (to the next word of a staged call): that verdict, stored before, stands;
             * else it went on without one, which it could only where the call is one host
             * collective everywhere.  (Taking the first read for the last lost a call here:
             * this rank staged alone, one call behind its peers, and the job hung.) */
            verdict = coll_gpu_board_load(&lead->verdict);
            return (COLL_GPU_BOARD_CALL(verdict) == k) ? COLL_GPU_BOARD_STATUS(verdict)
                                                       : COLL_GPU_BOARD_ABSENT;
        }
        if (!coll_gpu_board_wait_alive(board, board->local_ranks[0], &spins)) {
            return COLL_GPU_BOARD_DEAD;
        }
    }
}

coll_gpu_board_status_t coll_gpu_board_arrive(mca_coll_gpu_module_t *module,
                                              struct ompi_communicator_t *comm,
                                              coll_gpu_board_status_t status) {
    uint64_t k = module->call_seq;
    unsigned outcome = status;
    coll_gpu_board_t *board;

    if (module->board_done == k) {
        return (coll_gpu_board_status_t)module->board_outcome; /* this call's word is out */
    }
    if (OPAL_UNLIKELY(NULL != module->setup_task)) {
        /* a blocking call: it may wait for its peers' progress (their setups) */
        coll_gpu_setup_task_finish(module);
    }
    board = module->board;
    if ((ompi_comm_size(comm) >= 2) && ((NULL == board) || module->params_differ)) {
        /* no board, or parameters that differ: every rank takes the host collective */
        coll_gpu_board_settle(module);
        return COLL_GPU_BOARD_ABSENT;
    }
    module->board_done = k;
    if (ompi_comm_size(comm) < 2) {
        module->board_outcome = status;
        return status;
    }
    __atomic_store_n(&board->slots[board->local_index].arrive[k & 1],
                     COLL_GPU_BOARD_WORD(k, status), __ATOMIC_RELEASE);
    coll_gpu_count_add(&mca_coll_gpu_component.board_arrivals, 1);

    /* the node's words */
    for (int p = 0; !coll_gpu_board_settled(outcome) && (p < board->local_size); ++p) {
        unsigned theirs, spins = 0;
        bool alive = true;

        if (p == board->local_index) {
            continue;
        }
        while (alive && (0 == (theirs = coll_gpu_board_peer(&board->slots[p], k)))) {
            alive = coll_gpu_board_wait_alive(board, board->local_ranks[p], &spins);
        }
        outcome = coll_gpu_board_combine(outcome, alive ? theirs : COLL_GPU_BOARD_DEAD);
    }
    if (board->nnodes > 1) {
        if (board->leader) {
            outcome = coll_gpu_board_arrive_leaders(board, k, outcome);
        } else if (!coll_gpu_board_settled(outcome)) {
            outcome = coll_gpu_board_leader_outcome(board, k);
        }
    }
    module->board_outcome = (int)outcome;
    return (coll_gpu_board_status_t)outcome;
}

int coll_gpu_board_dead_error(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                              const char *mpi_call) {
    char detail[128] = "a rank of the communicator died before it reached the call";
    int dead, pid;

    if (coll_gpu_board_dead_peer(module, &dead, &pid)) {
        snprintf(detail, sizeof(detail), "rank %d (pid %d, on this node) has died", dead, pid);
    }
    opal_show_help("help-mpi-coll-gpu.txt", "native transport error", true, COLL_GPU_HOSTNAME,
                   mpi_call, ompi_comm_rank(comm), ompi_comm_size(comm),
                   cgt_status_string(CGT_ERR_PEER_FAILED), detail,
                   "The call returns MPI_ERR_OTHER; its receive buffer is undefined.");
    return MPI_ERR_OTHER;
}

/* One more arrival after a call every rank arrived at: its outcome, with the copies' word. */
static unsigned coll_gpu_board_stage_word(mca_coll_gpu_module_t *module,
                                          struct ompi_communicator_t *comm, unsigned status,
                                          int rc) {
    ++module->call_seq;
    return coll_gpu_board_arrive(module, comm,
                                 status | ((OMPI_SUCCESS != rc) ? COLL_GPU_BOARD_FAILED : 0));
}

/* A staged call's word: its own, or one more where its word is already out (its native
 * arrival) and every rank arrived; an outcome known before every word (a rank passed the call,
 * or died) stands. */
static unsigned coll_gpu_board_staged_word(mca_coll_gpu_module_t *module,
                                           struct ompi_communicator_t *comm, unsigned status,
                                           int rc) {
    if (module->board_done != module->call_seq) {
        return coll_gpu_board_arrive(module, comm,
                                     status | ((OMPI_SUCCESS != rc) ? COLL_GPU_BOARD_FAILED : 0));
    }
    if (coll_gpu_board_settled((unsigned)module->board_outcome)) {
        return (unsigned)module->board_outcome;
    }
    return coll_gpu_board_stage_word(module, comm, status, rc);
}

bool coll_gpu_board_all_stage(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm) {
    /* whether each rank pipelines is its datatype's business: where the call's word is out,
     * one more (a rank that stages one host collective says SINGLE: every rank meets it there) */
    unsigned outcome =
        coll_gpu_board_staged_word(module, comm, COLL_GPU_BOARD_STAGED, OMPI_SUCCESS) &
        ~COLL_GPU_BOARD_FAILED;

    return (COLL_GPU_BOARD_ABSENT != outcome) && (COLL_GPU_BOARD_HOST != outcome) &&
           (COLL_GPU_BOARD_DEAD != outcome);
}

/* The outcome of a staged call's word: where a rank failed, every rank fails the call, after one
 * more arrival (no rank leaves before every rank read the failed word: a rank past the call
 * would read as one that passed it). */
static bool coll_gpu_board_stage_outcome(mca_coll_gpu_module_t *module,
                                         struct ompi_communicator_t *comm, unsigned outcome,
                                         const char *mpi_call, int *rc_p) {
    unsigned status = outcome & ~COLL_GPU_BOARD_FAILED;

    if (COLL_GPU_BOARD_ABSENT == status) {
        return true; /* a rank passed the call to Open MPI: it cannot be told */
    }
    if (COLL_GPU_BOARD_DEAD == status) {
        *rc_p = coll_gpu_board_dead_error(module, comm, mpi_call);
        return false;
    }
    if (0 == (outcome & COLL_GPU_BOARD_FAILED)) {
        return true;
    }
    (void)coll_gpu_board_stage_word(module, comm, COLL_GPU_BOARD_STAGED, OMPI_SUCCESS);
    if (OMPI_SUCCESS == *rc_p) {
        coll_gpu_count_add(&mca_coll_gpu_component.peer_errors, 1);
        opal_show_help("help-mpi-coll-gpu.txt", "staged peer error", true, COLL_GPU_HOSTNAME,
                       mpi_call, ompi_comm_rank(comm), ompi_comm_size(comm));
        *rc_p = MPI_ERR_OTHER;
    }
    return false;
}

bool coll_gpu_board_stage_agree(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                const char *mpi_call, int *rc_p) {
    unsigned outcome = coll_gpu_board_staged_word(module, comm, COLL_GPU_BOARD_SINGLE, *rc_p);

    return coll_gpu_board_stage_outcome(module, comm, outcome, mpi_call, rc_p);
}

int coll_gpu_board_close(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                         const char *mpi_call, int rc) {
    unsigned outcome = coll_gpu_board_stage_word(module, comm, COLL_GPU_BOARD_STAGED, rc);

    (void)coll_gpu_board_stage_outcome(module, comm, outcome, mpi_call, &rc);
    return rc;
}
