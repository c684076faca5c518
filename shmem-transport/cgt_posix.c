/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * posix backend: host memory of the local peers.
 *
 * Symmetric host memory is one POSIX shared-memory segment per rank, named
 * with 128 random bits (getrandom), created O_EXCL with mode 0600, reserved
 * with fallocate (a full /dev/shm fails here rather than with SIGBUS later).
 * The names go round the OOB allgather, the local peers map them, a second OOB
 * step confirms, and every creator unlinks its segment: from then on it lives
 * only as long as its mappings, and nothing stays in /dev/shm even when a
 * process is killed.  A process killed in the short window between creating
 * its segment and unlinking it (team or scratch setup) leaves one behind: the
 * first segment a process creates sweeps /dev/shm for segments whose creator
 * is proven gone, and unlinks them.  The name says who created it: its pid, its
 * start time and its pid namespace ("/cgshm-PID-START-PIDNS-" and 32 random hex
 * digits).  Only a segment of this pid namespace whose pid is gone, or now
 * belongs to a process started at another time, is swept: a /dev/shm shared by
 * containers holds segments of live processes whose pids mean nothing here.
 *
 * Other registered host memory (a user's buffer) cannot be put into a segment
 * after the fact: local peers reach it by cross-memory attach
 * (process_vm_writev/readv), which fails cleanly with ESRCH when the owner is
 * gone and EFAULT when the range is no longer mapped -- never a wild write.
 *
 * Also here: whether a local peer still lives (/proc/PID/stat: gone, zombie,
 * or a reused pid with another start time).
 */
#define _GNU_SOURCE /* process_vm_readv */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cgt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* "/cgshm-PID-START-PIDNS-" and 32 hex digits */
#define CGT_POSIX_PREFIX "/cgshm-"
#define CGT_CMA_BOUNCE_SIZE ((size_t)1 << 20)

typedef struct {
    int32_t status;
    char name[CGT_SHM_NAME_LEN];
} cgt_posix_info_t;

static size_t cgt_posix_map_len(size_t len) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    return (len + page - 1) & ~(page - 1);
}

/* This process's pid namespace (the inode of /proc/self/ns/pid; 0: unknown). */
static unsigned long long cgt_posix_pid_ns(void) {
    struct stat st;

    return (stat("/proc/self/ns/pid", &st) == 0) ? (unsigned long long)st.st_ino : 0;
}

/* Whether the creator named by a segment name (after the prefix: "PID-START-PIDNS-...") is
 * proven gone: this pid namespace, and its pid gone or reused by a later process. */
static bool cgt_posix_creator_gone(const char *name, unsigned long long my_ns) {
    unsigned long long pid, start, ns;
    char *end;

    pid = strtoull(name, &end, 10);
    if ((end == name) || (*end != '-')) {
        return false;
    }
    start = strtoull(end + 1, &end, 10);
    if (*end != '-') {
        return false;
    }
    ns = strtoull(end + 1, &end, 10);
    if ((*end != '-') || (my_ns == 0) || (ns != my_ns) || (pid == 0) || (pid > INT32_MAX)) {
        return false; /* another namespace, or a name that proves nothing */
    }
    return !cgt_proc_alive((pid_t)pid, start);
}

/* Unlinks the segments of processes that died before unlinking their own (see above).  Live
 * processes' segments, segments of other pid namespaces and names not ours are left alone. */
static void cgt_posix_sweep_stale(void) {
    char path[sizeof(((struct dirent *)0)->d_name) + 1];
    struct dirent *de;
    DIR *dir = opendir("/dev/shm");
    const char *prefix = CGT_POSIX_PREFIX + 1; /* without the '/' */
    size_t prefix_len = strlen(prefix);
    unsigned long long my_ns = cgt_posix_pid_ns();

    while ((dir != NULL) && ((de = readdir(dir)) != NULL)) {
        if ((strncmp(de->d_name, prefix, prefix_len) != 0) ||
            !cgt_posix_creator_gone(de->d_name + prefix_len, my_ns)) {
            continue;
        }
        snprintf(path, sizeof(path), "/%s", de->d_name);
        shm_unlink(path);
    }
    if (dir != NULL) {
        closedir(dir);
    }
}

static pthread_once_t cgt_posix_sweep_once = PTHREAD_ONCE_INIT;

/* A shared segment of len bytes under a name nobody else can have (see above), mapped; errno
 * says why not.  Team-less: the component's call board makes one per node too. */
cgt_status_t cgt_shm_create(size_t len, char *name, void **ptr_p) {
    size_t map_len = cgt_posix_map_len(len);
    unsigned char rnd[16];
    int fd, ret, err;
    void *ptr;

    pthread_once(&cgt_posix_sweep_once, cgt_posix_sweep_stale);
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        return CGT_ERR_TRANSPORT;
    }
    ret = snprintf(name, CGT_SHM_NAME_LEN, CGT_POSIX_PREFIX "%d-%" PRIu64 "-%llu-", (int)getpid(),
                   cgt_proc_start_time(getpid()), cgt_posix_pid_ns());
    for (size_t i = 0; i < sizeof(rnd); ++i) {
        ret += snprintf(name + ret, CGT_SHM_NAME_LEN - (size_t)ret, "%02x", rnd[i]);
    }
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        return CGT_ERR_TRANSPORT;
    }
    if (ftruncate(fd, (off_t)map_len) != 0) {
        goto err_unlink;
    }
    ret = posix_fallocate(fd, 0, (off_t)map_len);
    if (ret != 0 && ret != EOPNOTSUPP && ret != EINVAL) {
        errno = ret; /* a full /dev/shm: here rather than SIGBUS later */
        goto err_unlink;
    }
    ptr = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ptr == MAP_FAILED) {
        goto err_unlink;
    }
    close(fd);
    *ptr_p = ptr;
    return CGT_OK;

err_unlink:
    err = errno;
    shm_unlink(name);
    close(fd);
    errno = err;
    return CGT_ERR_NO_MEMORY;
}

/* Maps another process's segment of at least len bytes (its size from the file, not from the
 * peer's word); errno says why not, EINVAL for a name not ours or a segment too small. */
cgt_status_t cgt_shm_attach(const char *name, size_t len, void **ptr_p) {
    size_t map_len = cgt_posix_map_len(len);
    cgt_status_t status = CGT_OK;
    struct stat st;
    void *ptr;
    int fd, err;

    if (memchr(name, '\0', CGT_SHM_NAME_LEN) == NULL ||
        strncmp(name, CGT_POSIX_PREFIX, strlen(CGT_POSIX_PREFIX)) != 0) {
        errno = EINVAL;
        return CGT_ERR_INVALID;
    }
    fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        return CGT_ERR_TRANSPORT;
    }
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < map_len) {
        status = CGT_ERR_INVALID;
        errno = EINVAL;
    } else if ((ptr = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
               MAP_FAILED) {
        status = CGT_ERR_NO_MEMORY;
    } else {
        *ptr_p = ptr;
    }
    err = errno;
    close(fd);
    errno = err;
    return status;
}

void cgt_shm_unlink(const char *name) { shm_unlink(name); }

void cgt_shm_unmap(void *ptr, size_t len) { munmap(ptr, cgt_posix_map_len(len)); }

static cgt_status_t cgt_posix_segment_create(cgt_team_t *team, size_t len, char *name,
                                             void **ptr_p) {
    cgt_status_t status = cgt_shm_create(len, name, ptr_p);

    if (status != CGT_OK) {
        return cgt_error_set(team, status, "shared segment %s of %zu bytes: %s", name, len,
                             strerror(errno));
    }
    return CGT_OK;
}

static cgt_status_t cgt_posix_segment_attach(cgt_team_t *team, int peer, const char *name,
                                             size_t len, void **ptr_p) {
    cgt_status_t status = cgt_shm_attach(name, len, ptr_p);

    if (status == CGT_ERR_INVALID) {
        return cgt_error_set(team, status,
                             "rank %d sent a bad segment name, or its segment is "
                             "smaller than %zu bytes",
                             peer, len);
    }
    if (status != CGT_OK) {
        return cgt_error_set(team, status, "mapping rank %d's segment %s: %s", peer, name,
                             strerror(errno));
    }
    return CGT_OK;
}

cgt_status_t cgt_posix_mem_create(cgt_team_t *team, cgt_mem_t *mem) {
    cgt_posix_info_t *mine, *all;
    cgt_status_t status;
    bool created;
    int peer;

    mine = calloc((size_t)team->size + 1, sizeof(*mine));
    if (mine == NULL) {
        status = cgt_error_set(team, CGT_ERR_NO_MEMORY, "cgt_alloc: out of host memory");
        /* the others are in the name exchange and then the confirmation */
        cgt_team_agree(team, status, "shared segment creation");
        return status;
    }
    all = mine + 1;
    status = cgt_posix_segment_create(team, mem->len, mine->name, &mem->local);
    created = status == CGT_OK;
    mem->local_is_segment = created;
    mine->status = status;

    /* step 1: names */
    if (cgt_team_oob_allgather(team, mine, all, sizeof(*mine)) != CGT_OK) {
        status = CGT_ERR_BOOTSTRAP;
        goto out_unlink;
    }
    for (int r = 0; r < team->size && status == CGT_OK; ++r) {
        if (all[r].status != CGT_OK) {
            status = cgt_error_set(team, (cgt_status_t)all[r].status,
                                   "cgt_alloc: rank %d could not create its segment", r);
        }
    }
    if (status != CGT_OK) {
        goto out_unlink; /* every rank saw the same statuses */
    }
    for (int i = 0; i < team->nlocal && status == CGT_OK; ++i) {
        peer = team->local_ranks[i];
        if (peer == team->rank) {
            continue;
        }
        status =
            cgt_posix_segment_attach(team, peer, all[peer].name, mem->len, &mem->peers[peer].ptr);
        if (status == CGT_OK) {
            mem->peers[peer].kind = CGT_RMEM_POSIX;
            mem->peers[peer].size = mem->len;
        }
    }
    /* step 2: every peer has mapped (or failed): the names can go */
    status = cgt_team_agree(team, status, "mapping the local peers' segments");
out_unlink:
    if (created) {
        shm_unlink(mine->name);
    }
    free(mine);
    return status;
}

void cgt_posix_mem_destroy(cgt_team_t *team, cgt_mem_t *mem) {
    for (int r = 0; r < team->size; ++r) {
        if (r != team->rank && mem->peers[r].kind == CGT_RMEM_POSIX && mem->peers[r].ptr != NULL) {
            cgt_shm_unmap(mem->peers[r].ptr, mem->len);
        }
    }
    if (mem->local_is_segment) {
        cgt_shm_unmap(mem->local, mem->len);
        mem->local = NULL;
    }
}

/* ---- cross-memory attach -------------------------------------------------------------------- */

static cgt_status_t cgt_cma_error(cgt_team_t *team, int err, pid_t pid, const char *op) {
    switch (err) {
    case ESRCH:
        return cgt_error_set(team, CGT_ERR_PEER_FAILED, "%s: process %d is gone", op, (int)pid);
    case EFAULT:
        return cgt_error_set(team, CGT_ERR_INVALID,
                             "%s: the range is not mapped in process %d (freed?)", op, (int)pid);
    case EPERM:
    case ENOSYS:
        return cgt_error_set(team, CGT_ERR_UNSUPPORTED,
                             "%s: cross-memory attach to process %d is not permitted (%s: "
                             "kernel.yama.ptrace_scope, a seccomp filter or another user); "
                             "use host memory from cgt_alloc for node-local transfers",
                             op, (int)pid, strerror(err));
    default:
        return cgt_error_set(team, CGT_ERR_TRANSPORT, "%s: process %d: %s", op, (int)pid,
                             strerror(err));
    }
}

cgt_status_t cgt_cma_probe(cgt_team_t *team, pid_t pid, uint64_t addr) {
    struct iovec local, remote;
    char byte;

    local.iov_base = &byte;
    local.iov_len = 1;
    remote.iov_base = (void *)(uintptr_t)addr;
    remote.iov_len = 1;
    if (process_vm_readv(pid, &local, 1, &remote, 1, 0) == 1) {
        return CGT_OK;
    }
    return cgt_cma_error(team, errno, pid, "cgt_peer_map (cross-memory attach)");
}

/* Move len bytes between buf (host memory here) and the peer; a short transfer goes on. */
static cgt_status_t cgt_cma_xfer_host(cgt_team_t *team, cgt_rmem_t *rmem, size_t offset, void *buf,
                                      size_t len, bool write) {
    struct iovec local, remote;
    size_t done = 0;
    ssize_t ret;

    while (done < len) {
        local.iov_base = (char *)buf + done;
        local.iov_len = len - done;
        remote.iov_base = (char *)rmem->ptr + offset + done;
        remote.iov_len = len - done;
        ret = write ? process_vm_writev(rmem->pid, &local, 1, &remote, 1, 0)
                    : process_vm_readv(rmem->pid, &local, 1, &remote, 1, 0);
        if (ret < 0) {
            if (errno == EINTR) {
                continue;
            }
            return cgt_cma_error(team, errno, rmem->pid, write ? "cgt_put" : "cgt_get");
        }
        if (ret == 0) {
            return cgt_cma_error(team, EFAULT, rmem->pid, write ? "cgt_put" : "cgt_get");
        }
        done += (size_t)ret;
    }
    return CGT_OK;
}

/* Device memory here: through a host bounce buffer, a chunk at a time. */
static cgt_status_t cgt_cma_xfer(cgt_team_t *team, cgt_rmem_t *rmem, size_t offset, void *buf,
                                 size_t len, bool write) {
    cgt_status_t status;
    size_t chunk;

    if (!cgt_ptr_is_device(team, buf)) {
        return cgt_cma_xfer_host(team, rmem, offset, buf, len, write);
    }
    if (team->bounce == NULL) {
        team->bounce = malloc(CGT_CMA_BOUNCE_SIZE);
        if (team->bounce == NULL) {
            return cgt_error_set(team, CGT_ERR_NO_MEMORY, "CMA bounce buffer: out of memory");
        }
        team->bounce_size = CGT_CMA_BOUNCE_SIZE;
    }
    for (size_t done = 0; done < len; done += chunk) {
        chunk = len - done < team->bounce_size ? len - done : team->bounce_size;
        if (write) {
            status = cgt_copy(team, team->bounce, (char *)buf + done, chunk, true);
            if (status == CGT_OK) {
                status = cgt_cma_xfer_host(team, rmem, offset + done, team->bounce, chunk, true);
            }
        } else {
            status = cgt_cma_xfer_host(team, rmem, offset + done, team->bounce, chunk, false);
            if (status == CGT_OK) {
                status = cgt_copy(team, (char *)buf + done, team->bounce, chunk, true);
            }
        }
        if (status != CGT_OK) {
            return status;
        }
    }
    return CGT_OK;
}

cgt_status_t cgt_cma_put(cgt_team_t *team, cgt_rmem_t *dst, size_t offset, const void *src,
                         size_t len) {
    return cgt_cma_xfer(team, dst, offset, (void *)src, len, true);
}

cgt_status_t cgt_cma_get(cgt_team_t *team, void *dst, cgt_rmem_t *src, size_t offset, size_t len) {
    return cgt_cma_xfer(team, src, offset, dst, len, false);
}

/* ---- liveness ------------------------------------------------------------------------------- */

/* /proc/PID/stat: state (field 3) and start time (field 22, clock ticks since boot). */
static bool cgt_proc_stat(pid_t pid, char *state_p, uint64_t *start_p) {
    char path[64], buf[1024], *p;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return false;
    }
    buf[n] = '\0';
    /* the command name (field 2) may hold spaces and parentheses: fields follow the last ')' */
    p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ') {
        return false;
    }
    p += 2;
    *state_p = *p;
    for (int field = 3; field < 22; ++field) {
        p = strchr(p, ' ');
        if (p == NULL) {
            return false;
        }
        ++p;
    }
    *start_p = strtoull(p, NULL, 10);
    return true;
}

uint64_t cgt_proc_start_time(pid_t pid) {
    uint64_t start;
    char state;

    return cgt_proc_stat(pid, &state, &start) ? start : 0;
}

bool cgt_proc_alive(pid_t pid, uint64_t start_time) {
    uint64_t start;
    char state;

    if (!cgt_proc_stat(pid, &state, &start)) {
        return false;
    }
    /* a zombie is dead for us: its parent has not reaped it yet */
    return state != 'Z' && state != 'X' && start == start_time;
}
