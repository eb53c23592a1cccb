/* Whether this MPI takes CUDA device memory (HC_MPI_CUDA_AWARE=1),
 * checked by a transfer in a child process (cuda_check.c). */
#ifndef HC_MPI_CUDA_CHECK_H
#define HC_MPI_CUDA_CHECK_H

#include <stddef.h>

/* The verdicts, ordered so that the ranks' least is the job's. */
enum { CUDA_CHECK_FAILED = 0, CUDA_CHECK_PASSED = 1, CUDA_CHECK_NOTHING = 2 };

/* Runs the check on this node; why gets its line (n bytes). */
int hc__mpi_cuda_check(char *why, size_t n);

#endif
