/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a kernel written once needs from where it runs (docs/kernels.md, "One source per
 * kernel"): nvcc compiles it for the GPU, the host compiler for the emulated backend, which
 * runs a launch's blocks one after another, each as a single thread.  So a kernel body uses
 * only these: its thread within its block (a loop `for (i = AK_THREAD; i < n; i += AK_THREADS)`
 * covers every i either way), a block barrier, per-block shared values, system-scope acquire
 * loads, release stores and fences on 32-bit flags, and a wait for a flag.  A block must never
 * wait for a later block of its own launch (the emulation runs them in order).
 */
#ifndef ACCEL_KERNEL_PORT_H
#define ACCEL_KERNEL_PORT_H

#include <stdint.h>

#ifdef __CUDACC__

#define AK_FN static __device__ __forceinline__
#define AK_SHARED __shared__
#define AK_THREAD ((int)threadIdx.x)
#define AK_THREADS ((int)blockDim.x)
#define ak_sync() __syncthreads()

/* Flags are written by other GPUs through their IPC mappings: system scope.  volatile with a
 * memory clobber: a wait re-reads every turn, and no access moves across it. */
AK_FN uint32_t ak_load_acquire(const uint32_t *p) {
    uint32_t v;

    asm volatile("ld.acquire.sys.global.u32 %0, [%1];"
                 : "=r"(v)
                 : "l"(__cvta_generic_to_global(p))
                 : "memory");
    return v;
}

AK_FN void ak_store_release(uint32_t *p, uint32_t v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(v)
                 : "memory");
}

AK_FN void ak_fence(void) { __threadfence_system(); }

AK_FN void ak_backoff(unsigned *polls) { (void)polls; }

#else /* the host compiler: the emulated backend */

#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#define AK_FN static inline
#define AK_SHARED
#define AK_THREAD 0
#define AK_THREADS 1
#define ak_sync() ((void)0)

AK_FN uint32_t ak_load_acquire(const uint32_t *p) {
    return atomic_load_explicit((_Atomic uint32_t *)(uintptr_t)p, memory_order_acquire);
}

AK_FN void ak_store_release(uint32_t *p, uint32_t v) {
    atomic_store_explicit((_Atomic uint32_t *)p, v, memory_order_release);
}

AK_FN void ak_fence(void) { atomic_thread_fence(memory_order_seq_cst); }

/* The peer is another process on a shared core: yield first, then sleep a little longer each
 * time (up to 50 us). */
AK_FN void ak_backoff(unsigned *polls) {
    if (++*polls >= 64) {
        struct timespec ts = {0, (*polls < 114) ? (long)(*polls - 63) * 1000 : 50000};

        nanosleep(&ts, NULL);
    } else {
        sched_yield();
    }
}

#endif

/* Until *flag has reached s, compared as sequence numbers (they wrap). */
AK_FN void ak_wait(const uint32_t *flag, uint32_t s) {
    unsigned polls = 0;

    while ((int32_t)(ak_load_acquire(flag) - s) < 0) {
        ak_backoff(&polls);
    }
}

#endif /* ACCEL_KERNEL_PORT_H */
