/* hc — the transport between the parts of a split run (partition.h).
 *
 * The parts of a split run talk only through a transport: halo exchanges
 * with their neighbours and collectives over all parts. libhc has one
 * built in, whose parts are threads of one process (hc_job_run_split on a
 * device set of several devices). libhc-mpi (hc/mpi.h) provides one whose
 * parts are the ranks of an MPI communicator. A program hands a transport
 * to a device set with hc_devset_set_transport: the process then runs one
 * part of the split (the transport's `self`) and the other parts run in
 * the other processes, each calling hc_job_run_split on its own set.
 *
 * The contract every implementation keeps:
 * - every part makes the same collective calls (barrier, exchange,
 *   allreduce, allgather, gather) in the same order;
 * - every call moves host memory (the core stages device data), except
 *   the halo rows of memory the transport says it takes (takes_memory);
 * - when a part fails it calls abort; from then on every call of every
 *   part, including one already waiting, returns HC_ERR_DEVICE ("another
 *   part failed") instead of waiting, so that no part hangs; agree still
 *   works after an abort, and is how the parts learn what failed;
 * - reductions combine the parts' values in part order
 *   (hc_reduce_combine), so that every part gets the same bits and the
 *   result does not depend on the transport;
 * - *waited_s (never NULL) grows by the time spent waiting for others.
 *
 * `part` in each call is the calling part's index: transports whose parts
 * are threads of one process need it; one part per process ignores it. */
#ifndef HC_TRANSPORT_H
#define HC_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "hc/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hc_transport hc_transport_t;

/* What `self` returns when every part runs in this process. */
#define HC_TRANSPORT_ALL UINT32_MAX

typedef struct hc_transport_ops {
  uint32_t size;    /* sizeof(hc_transport_ops_t) of the implementation */
  const char *name; /* "in-process", "MPI" */
  uint32_t (*count)(hc_transport_t *t);
  uint32_t (*self)(hc_transport_t *t);
  hc_status_t (*barrier)(hc_transport_t *t, uint32_t part, double *waited_s);
  /* Sends to_lo (lo_bytes) to part-1 and to_hi (hi_bytes) to part+1, and
   * receives part-1's to_hi into from_lo and part+1's to_lo into from_hi
   * (sizes agree pairwise; a side without a neighbour passes 0 bytes). */
  hc_status_t (*exchange)(hc_transport_t *t, uint32_t part, const void *to_lo,
                          size_t lo_bytes, const void *to_hi, size_t hi_bytes,
                          void *from_lo, void *from_hi, double *waited_s);
  /* values[0..n) (n <= HC_PART_REDUCE_MAX) reduced over the parts. */
  hc_status_t (*allreduce)(hc_transport_t *t, uint32_t part, hc_reduce_op_t op,
                           double *values, uint32_t n, double *waited_s);
  /* Every part's bytes (sizes may differ), concatenated in part order into
   * all; *total (may be NULL) gets the sum; HC_ERR_INVALID_ARG naming the
   * sizes when it exceeds capacity. */
  hc_status_t (*allgather)(hc_transport_t *t, uint32_t part, const void *mine,
                           size_t bytes, void *all, size_t capacity,
                           size_t *total, double *waited_s);
  /* The same, but only part 0 receives (all and capacity matter there). */
  hc_status_t (*gather)(hc_transport_t *t, uint32_t part, const void *mine,
                        size_t bytes, void *all, size_t capacity, size_t *total,
                        double *waited_s);
  /* Every part gives the outcome of a step (*status, message of cap
   * bytes); every part gets back the one that decides it: the first part
   * in part order that failed by itself (not because another part
   * aborted), else the first failure, else the first HC_ERR_VERIFY, else
   * HC_OK; *from (may be NULL) gets the deciding part. */
  hc_status_t (*agree)(hc_transport_t *t, uint32_t part, hc_status_t *status,
                       char *message, size_t cap, uint32_t *from);
  void (*abort)(hc_transport_t *t, uint32_t part);
  void (*destroy)(hc_transport_t *t);
  /* Optional (NULL: outputs are always gathered). Writes one file
   * together: part 0 creates or truncates path and writes head
   * (head_bytes; the other parts pass 0) at offset 0, and every part its
   * bytes at its offset. Every part returns the same status. */
  hc_status_t (*write_file)(hc_transport_t *t, uint32_t part, const char *path,
                            const void *head, size_t head_bytes,
                            uint64_t offset, const void *data, size_t bytes);
  /* Optional (NULL: the core calls exchange at the end instead). The
   * exchange in two halves, so that a part computes while its halo is on
   * the way: exchange_begin starts what exchange does (same arguments)
   * and returns without waiting; exchange_end waits until it is complete.
   * Until then to_lo, to_hi, from_lo and from_hi stay the transport's.
   * A part has at most one exchange begun, and makes no other call of the
   * transport between the halves but abort. */
  hc_status_t (*exchange_begin)(hc_transport_t *t, uint32_t part,
                                const void *to_lo, size_t lo_bytes,
                                const void *to_hi, size_t hi_bytes,
                                void *from_lo, void *from_hi);
  hc_status_t (*exchange_end)(hc_transport_t *t, uint32_t part,
                              double *waited_s);
  /* Optional (NULL: only host memory the core staged). 1 when exchange
   * and exchange_begin may be given a part's halo rows in place, in its
   * field's memory of this kind (hc_native_kind_t: HC_NATIVE_HOST, memory
   * of a device that shares host memory; HC_NATIVE_CUDA, CUDA device
   * memory), else 0. The same answer for the transport's life; it never
   * communicates. */
  int (*takes_memory)(hc_transport_t *t, uint32_t kind);
} hc_transport_ops_t;

struct hc_transport {
  const hc_transport_ops_t *ops;
};

/* out[i] = values[0][i] op values[1][i] op ... in part order (values is
 * nparts rows of n doubles); L2 takes each part's norm and gives the
 * whole's. The one combining rule of every transport. */
void hc_reduce_combine(hc_reduce_op_t op, const double *values, uint32_t nparts,
                       uint32_t n, double *out);

/* After a split run over a transport: 1 when the output `port` was left
 * with its parts (too large to gather on part 0: HC_GATHER_MAX), so that
 * each process holds its own rows of it; 0 when part 0 holds it whole. */
int hc_devset_output_in_parts(const hc_devset_t *set, const char *port);
/* Saves the job's output `port` as one .npy file at path: written by
 * part 0 when gathered there, else by every part at its rows' offset
 * through the transport's write_file (MPI-IO). Every part calls it for the
 * same ports; every part returns the same status, and *written (may be
 * NULL) 0 when part 0 has no such output (nothing is written). The file
 * appears whole or not at all. */
hc_status_t hc_devset_save_output(hc_devset_t *set, hc_job_t *job,
                                  const char *port, const char *path,
                                  int *written);

/* Makes the set one part of a split run over t: this process runs part
 * t->ops->self(t) on the set's devices, the other parts run elsewhere
 * with sets of their own. A set of several devices splits the process's
 * rows again over them: each device's part is a part of the whole split
 * (numbered process by process), run as a thread, and only the calling
 * thread uses t. The set does not own t (NULL: back to parts in this
 * process); weights given afterwards are one per part of t (process). */
hc_status_t hc_devset_set_transport(hc_devset_t *set, hc_transport_t *t);

#ifdef __cplusplus
}
#endif
#endif
