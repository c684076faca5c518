/* SPDX-License-Identifier: BSD-3-Clause */
/* For one commit: every header coll_gpu_native.h was split into, while its includers move to
 * the ones they use. */
#ifndef COLL_GPU_NATIVE_H
#define COLL_GPU_NATIVE_H

#include "coll_gpu.h"

#include "coll_gpu_agreement.h"
#include "coll_gpu_alg.h"
#include "coll_gpu_algorithms.h"
#include "coll_gpu_native_agree.h"
#include "coll_gpu_native_async.h"
#include "coll_gpu_native_call.h"
#include "coll_gpu_native_ctx.h"
#include "coll_gpu_native_eligible.h"
#include "coll_gpu_native_mem.h"
#include "coll_gpu_native_steps.h"
#include "coll_gpu_tree.h"

#endif /* COLL_GPU_NATIVE_H */
