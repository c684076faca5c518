/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared helpers of the coll/gpu MPI tests (libtestutil): the one header test programs include.
 *
 * - test_report.h     pass/fail accounting closed by one line "N passed, M failed" (parsed by
 *                     CI), the watchdog of a case that hangs, the end of the program;
 * - test_buffers.h    memory of every kind a test passes to MPI (host, pinned, managed, device)
 *                     through the project's accelerator layer, with write/read helpers that work
 *                     on device memory, and checked buffers (an image of what they must hold);
 * - test_options.h    the command line (common options and a program's own) and the set-up;
 * - test_mpit.h       MPI_T: the component's counters (pvars) and parameters (cvars) by name;
 * - test_counters.h   the component's counters and configuration, and the checks that a call
 *                     took the path (passthrough / staged / native) it must have taken;
 * - test_types.h      the datatypes (predefined, with holes, with a lower bound) and the ops;
 * - test_reference.h  deterministic inputs and an independent reference: every rank generates
 *                     every peer's input locally and reduces it itself, never with Open MPI's
 *                     reductions (Debian's 4.1.4 op/avx saturates int8/uint8 sums,
 *                     open-mpi/ompi#8045, so it is no oracle);
 * - test_comms.h      the standard communicators;
 * - test_cases.h      the collective table (one row per collective) and the case engine shared
 *                     by all tests: set up the buffers of one call of any intercepted
 *                     collective, post it (blocking or nonblocking), verify every byte the call
 *                     may and may not touch, and say which path the component must have taken.
 */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include "test_buffers.h"
#include "test_cases.h"
#include "test_comms.h"
#include "test_counters.h"
#include "test_mpit.h"
#include "test_options.h"
#include "test_reference.h"
#include "test_report.h"
#include "test_types.h"

#endif /* TEST_UTIL_H */
