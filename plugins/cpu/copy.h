/* Copies and fills over a device's threads: one thread's memcpy moves a
 * fraction of what several move, and the cpu backend's copies are on the
 * critical path of split runs (halo rows between cpu devices, gathers of
 * outputs) and of hand-overs between stages. */
#ifndef HC_CPU_COPY_H
#define HC_CPU_COPY_H

#include <stddef.h>

#include "pool.h"

/* memmove(dst, src, n), split over pool's threads when n is large enough
 * and the ranges do not overlap. */
void hc_cpu_copy(hc_cpu_pool_t *pool, void *dst, const void *src, size_t n);
/* Fills n bytes at dst with the pattern of psize bytes (1, 2, 4, 8 or 16),
 * split over the threads likewise. */
void hc_cpu_fill(hc_cpu_pool_t *pool, void *dst, const void *pat, size_t psize, size_t n);

#endif
