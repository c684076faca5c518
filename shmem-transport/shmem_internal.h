/* placeholder: being written (issue 5) */
#ifndef SHMEM_INTERNAL_H
#define SHMEM_INTERNAL_H
#include "shmem.h"
#endif
