/* hc core — the one internal header that the layers built on the runtime
 * inside libhc (core/pipeline, core/partition) may include. Everything else they use is the
 * public API (include/hc); tests/unit/test_layers.py checks the symbols each
 * layer's objects import against this list. Nothing here is part of the ABI. */
#ifndef HC_CORE_LAYER_H
#define HC_CORE_LAYER_H

#include "hc/hc.h"
#include "hc/plugin.h"
#include "hc/partition.h"

/* Marks a function of the public API for export from libhc. */
#define HC_API __attribute__((visibility("default")))

/* The backend's device_set_workers between the device's commands, and
 * the device's info then reports that many compute units (0: all again);
 * HC_ERR_UNSUPPORTED, with no message, when its backend has none. The
 * caller holds the device (hc_device_lock) from one change to the next. */
hc_status_t hc__device_set_workers(hc_device_t *d, uint32_t workers);
/* The backend's device_bind_thread (bind 1: the calling thread drives d
 * for a while; 0: it is done); HC_ERR_UNSUPPORTED when there is nothing
 * to do. */
hc_status_t hc__device_bind_thread(hc_device_t *d, int bind);

/* The ops table of a registered workload (zero-extended to the core's
 * size), NULL when the context has none of that name. */
const hc_workload_ops_t *hc__workload_ops(const hc_context_t *ctx, const char *name);

/* ---- tracing (runtime/trace.c, docs/trace.md): the event API for the
 * layers inside libhc (pipeline stages now; the partition layer's halo
 * exchanges and collectives, which trace each command they queue with
 * HC__TRACE_HALO / HC__TRACE_COLLECTIVE on its device):
 *
 *   hc__trace_cmd_t tc;
 *   const int traced = hc__trace_cmd_begin(ctx, dev, &tc);   // 0: off
 *   st = ... queue one command on dev ...;
 *   if (traced) hc__trace_cmd_end(&tc, st, HC__TRACE_HALO, "halo up", bytes, "cpu:1");
 *
 * Host spans (stages, planning) on the calling thread's track:
 *
 *   hc__trace_t *tr = hc__trace_enter(ctx);                  // NULL: off
 *   const double t0 = tr ? hc_now() : 0;
 *   ...
 *   if (tr) { hc__trace_host(tr, HC__TRACE_PLAN, "plan", t0, NULL, NULL); hc__trace_leave(tr); }
 *
 * Every kind: its name in the file's "cat", and what it counts as in the
 * per-device usage (compute, transfer) or host (host-track spans). */
#define HC__TRACE_KINDS(X)                 \
  X(KERNEL, "kernel", COMPUTE)             \
  X(FILL, "fill", TRANSFER)                \
  X(COPY, "copy", TRANSFER)                \
  X(TO_DEVICE, "host_to_device", TRANSFER) \
  X(TO_HOST, "device_to_host", TRANSFER)   \
  X(PEER, "device_to_device", TRANSFER)    \
  X(HALO, "halo", TRANSFER)                \
  X(COLLECTIVE, "collective", TRANSFER)    \
  X(JOB, "job", HOST)                      \
  X(STAGE, "stage", HOST)                  \
  X(BUILD, "build", HOST)                  \
  X(VALIDATE, "validate", HOST)            \
  X(PLAN, "plan", HOST)                    \
  X(OUTPUT, "output", HOST)                \
  X(RANGE, "range", HOST)                  \
  X(TIMER, "device_timer", HOST)
typedef enum hc__trace_kind {
#define HC__TRACE_ENUM_(id, name, cls) HC__TRACE_##id,
  HC__TRACE_KINDS(HC__TRACE_ENUM_)
#undef HC__TRACE_ENUM_
      HC__TRACE_KIND_COUNT_
} hc__trace_kind_t;

typedef struct hc__trace hc__trace_t;
/* The context's trace, held until hc__trace_leave (hc_trace_stop waits for
 * holders), or NULL when it is not tracing. */
hc__trace_t *hc__trace_enter(hc_context_t *ctx);
void hc__trace_leave(hc__trace_t *tr);

/* One traced device command, from just before it is queued to just after.
 * Flow arrows: a command that writes a buffer sets flow_dev and flow_mem
 * (the buffer's device and memory) before hc__trace_cmd_end; a launch sets
 * launch. The first launch after the write that takes that memory as an
 * argument, the one that waits for it, gets an arrow from the write. */
typedef struct hc__trace_cmd {
  hc__trace_t *tr;
  hc_device_t *dev;
  double t0;
  void *record; /* the backend's (trace_command_begin), or NULL */
  hc_device_t *flow_dev;
  void *flow_mem;
  const hc_launch_t *launch;
} hc__trace_cmd_t;
/* Returns 0 when ctx is not tracing; else holds the trace in *c until
 * hc__trace_cmd_end, which records the command on dev's track named
 * "<scope>/<what>" with bytes (0: none) and the peer device's name (NULL:
 * none) when st is HC_OK. The device's own times come from the backend
 * when it keeps them (resolved later: hc__trace_device_sync); otherwise
 * the core waits for the device's queue so the event ends when the device
 * finished the command. */
int hc__trace_cmd_begin(hc_context_t *ctx, hc_device_t *dev, hc__trace_cmd_t *c);
void hc__trace_cmd_end(hc__trace_cmd_t *c, hc_status_t st, hc__trace_kind_t kind, const char *what, uint64_t bytes,
                       const char *peer);
/* A buffer's memory goes: arrows from its writes end nowhere now. */
void hc__trace_forget(hc_device_t *dev, void *mem);
/* Turns the device's commands recorded so far into events (waiting for
 * them): at points where the device's queue has drained or must. Returns
 * the device time of the last of them in seconds, or -1 when there was
 * none (not tracing, or nothing recorded). */
double hc__trace_device_sync(hc_device_t *dev);
/* A host span from t0 to now on the calling thread's track; key/value: one
 * string argument (NULL: none). */
void hc__trace_host(hc__trace_t *tr, hc__trace_kind_t kind, const char *name, double t0, const char *key,
                    const char *value);
/* A named range for a profiler attached to the process (NVTX under Nsight
 * Systems, through the backends' range_push/range_pop): around jobs and
 * stages whether tracing is on or not. Pushes and pops pair per thread. */
void hc__profiler_push(hc_context_t *ctx, const char *name);
void hc__profiler_pop(hc_context_t *ctx);
/* Sets the calling thread's scope, the prefix of its device events' names
 * (a pipeline stage, else the job's workload), and returns the one it
 * replaces, for the caller to restore. label is copied. */
void hc__trace_scope_swap(const char *label, char *previous, size_t n);

/* The partition layer's hooks into a job: the part a job runs as (NULL:
 * whole), dropping its results before a split run, and the split run's
 * wall time (hc_job_set_times sets the others). */
void hc__job_set_part(hc_job_t *job, hc_part_t *part);
/* Writes (or removes, when trivial) "<path>.grid", f's spacing and origin,
 * as hc_field_save_npy does beside the data it writes. */
hc_status_t hc__field_save_sidecar(const hc_field_t *f, const char *path);

/* A field of `shape` on dev whose rows along axis 0 are, for now, n
 * pieces: pieces[i] (taken over; fields of any devices, the same dtype and
 * other axes) holds rows [lo[i], lo[i] + its rows), the pieces in order
 * and covering every row. Its buffer is allocated here and filled from
 * the pieces when something first uses the field (its buffer, a read, a
 * copy); until then hc__field_piece gives them. On failure the pieces
 * are destroyed. */
hc_status_t hc__field_of_pieces(hc_device_t *dev, hc_dtype_t dtype, uint32_t rank, const int64_t *shape,
                                hc_field_t **pieces, const int64_t *lo, uint32_t n, hc_field_t **out);
/* The field's pieces not yet gathered (0: none), and piece i with its
 * first row. */
uint32_t hc__field_piece_count(const hc_field_t *f);
const hc_field_t *hc__field_piece(const hc_field_t *f, uint32_t i, int64_t *lo);
void hc__job_clear(hc_job_t *job);
void hc__job_set_wall(hc_job_t *job, double wall_s);
/* A split run's build time (hc_job_build_time): its slowest part's. */
void hc__job_set_build(hc_job_t *job, double build_s, double first_launch_s);
/* 1 when hc_buffer_copy between memory of a and of b is one device-to-
 * device copy (their backend's peer copy), not staged through the host. */
int hc__devices_peer(const hc_device_t *a, const hc_device_t *b);
/* How many timer spans d has begun (hc_device_timer_begin), any thread. */
uint32_t hc__device_timer_spans(const hc_device_t *d);

#endif
