/* placeholder: being written (issue 4) */
#include "accel.h"

accel_status_t accel_reduce_cpu(void *dst, const void *const *srcs, int nsrcs, size_t count,
                                accel_dtype_t dtype, accel_op_t op) {
    (void)dst, (void)srcs, (void)nsrcs, (void)count, (void)dtype, (void)op;
    return ACCEL_ERR_UNSUPPORTED;
}
