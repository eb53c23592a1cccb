/* hc — timelines: a context's work as a Chrome trace-event JSON file that
 * opens in ui.perfetto.dev and chrome://tracing (docs/trace.md).
 *
 * While tracing is on, every kernel launch, fill, copy and transfer of the
 * context is an event on its device's track, with bytes and device time;
 * jobs, pipeline stages, kernel builds, validation, output files and the
 * caller's own ranges are events on the track of the host thread that ran
 * them. Device commands are timed on the host clock with the device queue
 * synchronised after each one, so an event ends when the device finished
 * it (on a device that runs commands synchronously, the cpu backend, that
 * adds nothing). With tracing off each of those places costs one test of a
 * pointer. */
#ifndef HC_TRACE_H
#define HC_TRACE_H

#include "hc/hc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hc_trace_options {
  uint32_t size; /* sizeof(hc_trace_options_t) */
  uint32_t reserved_;
  /* Events kept at most (0: 1,000,000, about 150 MB of JSON). Events
   * beyond it are counted and dropped; the file and the log say so. */
  uint64_t max_events;
  /* The process track's name (copied; NULL: "hc (pid N)"). hcrun under
   * MPI names each rank's "hc rank R (pid N)". */
  const char *process_name;
} hc_trace_options_t;

/* Starts tracing ctx to path (created or truncated now, so that a path
 * that cannot be written fails here, HC_ERR_IO, before any work).
 * HC_ERR_INVALID_ARG when ctx is already tracing. opts may be NULL. */
hc_status_t hc_trace_start(hc_context_t *ctx, const char *path,
                           const hc_trace_options_t *opts);
/* Stops tracing and completes the file (events still buffered, the track
 * names). Waits for commands being recorded by other threads; call it
 * when the context's work has finished. HC_ERR_INVALID_ARG when ctx is not
 * tracing, HC_ERR_IO when the file cannot be completed. */
hc_status_t hc_trace_stop(hc_context_t *ctx);
/* 1 while ctx is tracing. */
int hc_trace_active(const hc_context_t *ctx);

/* A range of the caller's own on the calling thread's host track while
 * tracing, and a range for a profiler attached to the process (NVTX under
 * Nsight Systems, through the cuda backend) whether tracing or not: begin
 * and end nest per thread. name is copied. */
void hc_trace_range_begin(hc_context_t *ctx, const char *name);
void hc_trace_range_end(hc_context_t *ctx);

/* How busy a device was over the trace's window (start to stop, or to
 * now while it runs), from the same events the file gets. */
typedef struct hc_trace_usage {
  uint32_t size;     /* sizeof(hc_trace_usage_t), set by the caller */
  uint32_t device;   /* index in the context */
  uint64_t events;   /* device events recorded (dropped ones included) */
  double window_s;   /* the trace's wall time */
  double compute_s;  /* kernel launches */
  double transfer_s; /* writes, reads, copies, fills, peer transfers */
} hc_trace_usage_t;
/* Usage of device index `device` in the current or last trace of ctx.
 * HC_ERR_NOT_FOUND when nothing was traced on ctx. A device without
 * events reports zeros. */
hc_status_t hc_trace_usage(const hc_context_t *ctx, uint32_t device,
                           hc_trace_usage_t *out);

#ifdef __cplusplus
}
#endif
#endif
