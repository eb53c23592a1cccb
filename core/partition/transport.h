/* The partition layer's transport: how parts move halo rows and run
 * collectives. One small interface, so that parts in one process (threads,
 * transport_inproc.c) and parts in several processes (MPI ranks, one rank
 * per part) are two implementations of it, not two designs. Every call
 * moves host memory: device data is staged by the caller (partition.c).
 *
 * Every part calls every collective in the same order. When a part fails it
 * calls abort; every call of every part then returns HC_ERR_DEVICE ("another
 * part failed") instead of waiting, so no part hangs. */
#ifndef HC_PARTITION_TRANSPORT_H
#define HC_PARTITION_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "hc/partition.h"

typedef struct hc__transport hc__transport_t;

typedef struct hc__transport_ops {
  const char *name;
  uint32_t (*count)(hc__transport_t *t);
  hc_status_t (*barrier)(hc__transport_t *t, uint32_t rank, double *waited_s);
  /* Sends to_lo (lo_bytes) to rank-1 and to_hi (hi_bytes) to rank+1, and
   * receives rank-1's to_hi into from_lo and rank+1's to_lo into from_hi
   * (sizes agree pairwise; a side without a neighbour passes 0 bytes). */
  hc_status_t (*exchange)(hc__transport_t *t, uint32_t rank, const void *to_lo, size_t lo_bytes,
                          const void *to_hi, size_t hi_bytes, void *from_lo, void *from_hi,
                          double *waited_s);
  /* values[0..n) reduced over the ranks in rank order. */
  hc_status_t (*allreduce)(hc__transport_t *t, uint32_t rank, hc_reduce_op_t op, double *values,
                           uint32_t n, double *waited_s);
  hc_status_t (*allgather)(hc__transport_t *t, uint32_t rank, const void *mine, size_t bytes, void *all,
                           size_t capacity, size_t *total, double *waited_s);
  void (*abort)(hc__transport_t *t, uint32_t rank);
  void (*destroy)(hc__transport_t *t);
} hc__transport_ops_t;

struct hc__transport {
  const hc__transport_ops_t *ops;
};

/* Parts as threads of this process. */
hc_status_t hc__transport_inproc_create(uint32_t nparts, hc__transport_t **out);

#endif
