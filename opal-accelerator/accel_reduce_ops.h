/* placeholder: being written (issue 4) */
#ifndef ACCEL_REDUCE_OPS_H
#define ACCEL_REDUCE_OPS_H
#endif
