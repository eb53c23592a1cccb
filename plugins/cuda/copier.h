/* A parallel memcpy for the pinned staging path (memory.c).
 *
 * A transfer from pageable memory is bounded by the host copy into (or out
 * of) the pinned bounce buffer: one thread copies far slower than the DMA
 * engines move data. Splitting each chunk's memcpy over a
 * few threads lifts that bound. Workers sleep on a condition variable
 * between chunks; the caller copies one share itself. */
#ifndef HC_CUDA_COPIER_H
#define HC_CUDA_COPIER_H

#include <stddef.h>

typedef struct hc_cuda_copier hc_cuda_copier_t;

/* threads in all, the caller included (1: plain memcpy, no workers).
 * NULL when the threads cannot be started. */
hc_cuda_copier_t *hc_cuda_copier_create(unsigned threads);
/* Stops and joins the workers. NULL is allowed. */
void hc_cuda_copier_destroy(hc_cuda_copier_t *c);
/* memcpy(dst, src, n), split over the threads when n is large enough to
 * pay for waking them. One caller at a time. */
void hc_cuda_copier_memcpy(hc_cuda_copier_t *c, void *dst, const void *src, size_t n);

#endif
