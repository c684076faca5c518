/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The call board across nodes: the node leaders' messages (coll_gpu_board_leaders.h).  Each
 * leader keeps a receive posted for its peers' words, sends its node's, and answers from Open
 * MPI's progress the calls its node passed to Open MPI; it quiesces at MPI_Comm_free.
 */
#include "coll_gpu_board_leaders.h"
#include "coll_gpu_setup.h"

#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* The leaders' messages: a tag of coll/gpu's own beside its setup's (coll_gpu_setup.c). */
#define COLL_GPU_BOARD_TAG (MCA_COLL_BASE_TAG_HCOLL_END + 2)

/* The live boards whose progress matters: leaders across nodes (they answer), and under
 * MPI_THREAD_MULTIPLE every board (an install racing a pass-through store: coll_gpu_board_create).
 */
static coll_gpu_board_t *coll_gpu_boards;
static bool coll_gpu_boards_registered;
static pthread_mutex_t coll_gpu_boards_lock = PTHREAD_MUTEX_INITIALIZER;
static int coll_gpu_board_keyval = MPI_KEYVAL_INVALID;

/* Allocates what a leader across nodes keeps; false when it could not. */
bool coll_gpu_board_leader_init(coll_gpu_board_t *board) {
    size_t n = (size_t)board->nnodes;

    board->inbox = calloc(4 * n, sizeof(uint64_t)); /* inbox (2 each), sent, send_buf */
    board->send_req = calloc(n, sizeof(ompi_request_t *));
    if ((NULL == board->inbox) || (NULL == board->send_req)) {
        return false;
    }
    board->sent = board->inbox + 2 * n;
    board->send_buf = board->inbox + 3 * n;
    return OMPI_SUCCESS ==
           MCA_PML_CALL(irecv(board->recv_buf, sizeof(board->recv_buf), MPI_BYTE, MPI_ANY_SOURCE,
                              COLL_GPU_BOARD_TAG, board->comm, &board->recv_req));
}

/* Cancels a leader's posted receive (its reference on the communicator goes with it). */
void coll_gpu_board_leader_cancel(coll_gpu_board_t *board) {
    if (NULL != board->recv_req) {
        (void)ompi_request_cancel(board->recv_req);
        (void)ompi_request_wait(&board->recv_req, MPI_STATUS_IGNORE);
    }
}

/* A leader's send of word to node j's leader: after its previous one completed (progress
 * meanwhile unless from_progress, which tries again later).  False when it must wait. */
bool coll_gpu_board_send(coll_gpu_board_t *board, int j, uint64_t word, bool from_progress) {
    while ((NULL != board->send_req[j]) && !REQUEST_COMPLETE(board->send_req[j])) {
        if (from_progress) {
            return false;
        }
        pthread_mutex_unlock(&board->lock);
        (void)opal_progress();
        pthread_mutex_lock(&board->lock);
    }
    if (NULL != board->send_req[j]) {
        (void)ompi_request_free(&board->send_req[j]);
        board->send_req[j] = NULL;
    }
    board->send_buf[j] = word;
    board->sent[j] = COLL_GPU_BOARD_CALL(word);
    if (OMPI_SUCCESS !=
        MCA_PML_CALL(isend(&board->send_buf[j], sizeof(uint64_t), MPI_BYTE,
                           board->leader_of_node[j], COLL_GPU_BOARD_TAG, MCA_PML_BASE_SEND_STANDARD,
                           board->comm, &board->send_req[j]))) {
        board->send_req[j] = NULL;
        /* the peer waits for ever: as a broken link would leave it */
        opal_output(0, "coll:gpu: %s: could not send the call board's word to rank %d",
                    board->comm->c_name, board->leader_of_node[j]);
    }
    return true;
}

/* A leader takes in what its receive got (under its lock). */
void coll_gpu_board_receive(coll_gpu_board_t *board) {
    while ((NULL != board->recv_req) && REQUEST_COMPLETE(board->recv_req)) {
        int source = board->recv_req->req_status.MPI_SOURCE;
        uint64_t word = board->recv_buf[0];

        (void)ompi_request_free(&board->recv_req);
        board->recv_req = NULL;
        if ((source >= 0) && (source < ompi_comm_size(board->comm))) {
            uint64_t *slot =
                &board->inbox[2 * board->node_of_rank[source] + (COLL_GPU_BOARD_CALL(word) & 1)];
            if (word > *slot) {
                *slot = word;
            }
        }
        if (OMPI_SUCCESS !=
            MCA_PML_CALL(irecv(board->recv_buf, sizeof(board->recv_buf), MPI_BYTE, MPI_ANY_SOURCE,
                               COLL_GPU_BOARD_TAG, board->comm, &board->recv_req))) {
            board->recv_req = NULL;
        }
    }
}

/* The last call this rank passed without arriving at it is at least ... : its host word, or a
 * later arrival. */
static uint64_t coll_gpu_board_passed(const coll_gpu_board_t *board) {
    const coll_gpu_board_slot_t *mine = &board->slots[board->local_index];
    uint64_t host = mine->host, arrived = COLL_GPU_BOARD_CALL(mine->arrive[0]);

    if (COLL_GPU_BOARD_CALL(mine->arrive[1]) > arrived) {
        arrived = COLL_GPU_BOARD_CALL(mine->arrive[1]);
    }

    /* an arrival at call a: every call below a and above the last word sent was passed */
    return (host > arrived) ? host : (arrived > 0 ? arrived - 1 : 0);
}

/* A leader answers the leaders that asked about a call it passed without arriving there: its
 * node did not run the call uniformly (under its lock). */
static void coll_gpu_board_answer(coll_gpu_board_t *board, bool from_progress) {
    uint64_t passed = coll_gpu_board_passed(board);

    for (int j = 0; j < board->nnodes; ++j) {
        uint64_t asked = COLL_GPU_BOARD_CALL(board->inbox[2 * j]);

        if (COLL_GPU_BOARD_CALL(board->inbox[2 * j + 1]) > asked) {
            asked = COLL_GPU_BOARD_CALL(board->inbox[2 * j + 1]);
        }

        if ((j != board->node) && (asked > board->sent[j]) && (asked <= passed)) {
            (void)coll_gpu_board_send(board, j, COLL_GPU_BOARD_WORD(asked, COLL_GPU_BOARD_ABSENT),
                                      from_progress);
        }
    }
}

/* From opal_progress: leaders take in and answer; under MPI_THREAD_MULTIPLE every board also
 * takes in a pass-through word stored in the module while its setup installed the board. */
static int coll_gpu_boards_progress(void) {
    if (NULL == __atomic_load_n(&coll_gpu_boards, __ATOMIC_RELAXED) ||
        (0 != pthread_mutex_trylock(&coll_gpu_boards_lock))) {
        return 0;
    }
    for (coll_gpu_board_t *board = coll_gpu_boards; NULL != board; board = board->next) {
        uint64_t late = __atomic_load_n(&board->module->board_host_local, __ATOMIC_RELAXED);
        volatile uint64_t *host = &board->slots[board->local_index].host;

        if (late > *host) {
            *host = late;
        }
        if (board->leader && (board->nnodes > 1) && (0 == pthread_mutex_trylock(&board->lock))) {
            coll_gpu_board_receive(board);
            coll_gpu_board_answer(board, true);
            pthread_mutex_unlock(&board->lock);
        }
    }
    pthread_mutex_unlock(&coll_gpu_boards_lock);
    return 0;
}

void coll_gpu_boards_add(coll_gpu_board_t *board) {
    pthread_mutex_lock(&coll_gpu_boards_lock);
    board->next = coll_gpu_boards;
    __atomic_store_n(&coll_gpu_boards, board, __ATOMIC_RELEASE);
    if (!coll_gpu_boards_registered) {
        opal_progress_register(coll_gpu_boards_progress);
        coll_gpu_boards_registered = true;
    }
    pthread_mutex_unlock(&coll_gpu_boards_lock);
}

static void coll_gpu_boards_remove(coll_gpu_board_t *board) {
    pthread_mutex_lock(&coll_gpu_boards_lock);
    for (coll_gpu_board_t **link = &coll_gpu_boards; NULL != *link; link = &(*link)->next) {
        if (*link == board) {
            __atomic_store_n(link, board->next, __ATOMIC_RELEASE);
            break;
        }
    }
    if ((NULL == coll_gpu_boards) && coll_gpu_boards_registered) {
        opal_progress_unregister(coll_gpu_boards_progress);
        coll_gpu_boards_registered = false;
    }
    pthread_mutex_unlock(&coll_gpu_boards_lock);
}

/* A leader across nodes stops, at its communicator's MPI_Comm_free (the attribute below) or at
 * its destruction, whichever comes first: it answers the questions already received and
 * cancels its receive.  Its requests hold references on the communicator, which Open MPI
 * destroys only once they are gone.  Not from opal_progress. */
void coll_gpu_board_quiesce(coll_gpu_board_t *board) {
    if (board->closed) {
        return;
    }
    board->closed = true;
    coll_gpu_boards_remove(board); /* no progress callback touches it any more */
    if (!board->leader || (board->nnodes < 2)) {
        return;
    }
    pthread_mutex_lock(&board->lock);
    /* only the questions already here: a word sent unasked to a leader that has freed the
     * communicator would meet the next communicator of the same context id */
    coll_gpu_board_receive(board);
    coll_gpu_board_answer(board, false);
    for (int j = 0; j < board->nnodes; ++j) {
        if (NULL != board->send_req[j]) {
            (void)ompi_request_wait(&board->send_req[j], MPI_STATUS_IGNORE);
        }
    }
    coll_gpu_board_leader_cancel(board);
    pthread_mutex_unlock(&board->lock);
}

/* MPI_Comm_free deletes the communicator's attributes first: a leader across nodes quiesces
 * there, once the communicator's setup (which makes the board) is done. */
static int coll_gpu_board_comm_freed(MPI_Comm comm, int keyval, void *value, void *extra) {
    mca_coll_gpu_module_t *module = value;

    (void)comm;
    (void)keyval;
    (void)extra;
    coll_gpu_setup_task_finish(module);
    if (NULL != module->board) {
        coll_gpu_board_quiesce(module->board);
    }
    return MPI_SUCCESS;
}

void coll_gpu_board_watch(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm) {
    int initialized = 0;

    /* (not inside MPI_Init: MPI_COMM_WORLD's board goes with its module, at MPI_Finalize) */
    if ((MPI_SUCCESS != PMPI_Initialized(&initialized)) || !initialized) {
        return;
    }
    pthread_mutex_lock(&coll_gpu_boards_lock);
    if (MPI_KEYVAL_INVALID == coll_gpu_board_keyval) {
        (void)PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, coll_gpu_board_comm_freed,
                                      &coll_gpu_board_keyval, NULL);
    }
    pthread_mutex_unlock(&coll_gpu_boards_lock);
    if (MPI_KEYVAL_INVALID != coll_gpu_board_keyval) {
        (void)PMPI_Comm_set_attr(comm, coll_gpu_board_keyval, module);
    }
}
