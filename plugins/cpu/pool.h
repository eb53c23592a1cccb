/* A persistent thread pool that runs host kernels group by group. Workers
 * are created once per device; a launch wakes them (spinning briefly
 * between back-to-back launches so they need no syscall), they claim groups
 * from an atomic counter, and the launching thread works too. */
#ifndef HC_CPU_POOL_H
#define HC_CPU_POOL_H

#include <hc/hc.h>

typedef struct hc_cpu_pool hc_cpu_pool_t;

/* nthreads >= 1 (the caller counts as one); cores (NULL: none) the core
 * each of the nthreads - 1 workers is pinned to. NULL on failure. */
hc_cpu_pool_t *hc_cpu_pool_create(unsigned nthreads, const int *cores);
void hc_cpu_pool_destroy(hc_cpu_pool_t *pool);
/* The threads launches use (the caller included). */
unsigned hc_cpu_pool_size(const hc_cpu_pool_t *pool);
/* Launches from now on use the caller and the first threads - 1 workers
 * (0 or more than it has: all); the others sleep, leaving their cores to
 * other threads of the process. Between launches only. */
void hc_cpu_pool_set_active(hc_cpu_pool_t *pool, unsigned threads);

/* Runs fn over the groups of a range and returns when all are done.
 * local[d] are group extents (>= 1). Not reentrant: one launch at a time
 * per pool (the device serialises). */
void hc_cpu_pool_run(hc_cpu_pool_t *pool, hc_host_kernel_fn fn, void *const *args, unsigned dims,
                     const size_t global[3], const size_t local[3]);

#endif
