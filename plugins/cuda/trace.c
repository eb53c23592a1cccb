/* Timelines: per-command device times for traces (an event recorded on
 * the device's stream after each traced command, read against a reference
 * event whose host time is known) and NVTX v3 ranges for Nsight Systems.
 *
 * An event record is most of what a traced command costs the host, so a
 * command records only its end. On the in-order stream it starts when the
 * command before it ended or when it was queued, whichever is later: the
 * core places it so (trace_time gives no start). Telling the two cases
 * apart as the command is queued would take a query of the stream, and
 * recording the start where it was idle a second event. */
#include <stdlib.h>

#include "cuda_internal.h"

#ifdef HC_CUDA_NVTX
/* Header-only NVTX v3: each call is a no-op until a profiler's injection
 * library is attached (nsys sets it up); nothing is loaded otherwise. */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>

/* NVTX fills its function table on first use with plain stores that the
 * other threads' calls read: initialised once, before any range, the
 * table is published to every thread (ThreadSanitizer sees the race
 * otherwise). */
static pthread_once_t nvtx_once = PTHREAD_ONCE_INIT;
static void nvtx_init(void) { nvtxInitialize(NULL); }
#endif

typedef struct cuda_trace_rec {
  CUevent end;                 /* recorded after the command */
  uint64_t seq;                /* its place among the device's records (1, 2, ...); 0: not recorded */
  struct cuda_trace_rec *next; /* in the device's pool */
} cuda_trace_rec_t;

/* A record with its event: from the pool, else new; NULL on failure. */
static cuda_trace_rec_t *rec_get(cuda_dev_t *d) {
  pthread_mutex_lock(&d->trace_pool_lock);
  cuda_trace_rec_t *r = d->trace_pool;
  if (r) d->trace_pool = r->next, r->seq = 0;
  pthread_mutex_unlock(&d->trace_pool_lock);
  if (r) return r;
  if (!(r = calloc(1, sizeof *r))) return NULL;
  if (d->cu->cuEventCreate(&r->end, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
    free(r);
    return NULL;
  }
  return r;
}

static void rec_put(cuda_dev_t *d, cuda_trace_rec_t *r) {
  pthread_mutex_lock(&d->trace_pool_lock);
  r->next = d->trace_pool;
  d->trace_pool = r;
  pthread_mutex_unlock(&d->trace_pool_lock);
}

/* The reference event: recorded on the idle stream and waited for, it
 * completed between the host's times around the wait, whose middle is
 * its host time; tried again (up to 4 times) while that window is wider
 * than 20 us. Its elapsed times to later events are floats in ms, so it is
 * renewed (cuda_trace_command_begin) once it is a second old and no
 * record depends on it. */
static int map_clock(cuda_dev_t *d) {
  const hc_cu_api_t *cu = d->cu;
  if (!d->trace_ref && cu->cuEventCreate(&d->trace_ref, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
    d->trace_ref = NULL;
    return 0;
  }
  for (int i = 0; i < 4; i++) {
    if (cu->cuStreamSynchronize(d->stream) != CUDA_SUCCESS) return 0;
    const double h0 = hc_now();
    if (cu->cuEventRecord(d->trace_ref, d->stream) != CUDA_SUCCESS ||
        cu->cuEventSynchronize(d->trace_ref) != CUDA_SUCCESS)
      return 0;
    const double h1 = hc_now();
    d->trace_ref_host = 0.5 * (h0 + h1);
    if (h1 - h0 < 20e-6) break;
  }
  return 1;
}

void *cuda_trace_command_begin(void *dev) {
  cuda_dev_t *d = dev;
  if (cuda_use(d) != HC_OK) return NULL;
  if ((!d->trace_ref ||
       (__atomic_load_n(&d->trace_outstanding, __ATOMIC_RELAXED) == 0 && hc_now() - d->trace_ref_host > 1.0)) &&
      !map_clock(d))
    return NULL; /* the core times the command on the host */
  cuda_trace_rec_t *r = rec_get(d);
  if (r) __atomic_add_fetch(&d->trace_outstanding, 1, __ATOMIC_RELAXED); /* (read by another thread) */
  return r;
}

void cuda_trace_command_end(void *dev, void *record) {
  cuda_dev_t *d = dev;
  cuda_trace_rec_t *r = record;
  /* a failure shows in trace_time (the event was never recorded) */
  if (!r || cuda_use(d) != HC_OK || d->cu->cuEventRecord(r->end, d->stream) != CUDA_SUCCESS) return;
  pthread_mutex_lock(&d->trace_pool_lock);
  r->seq = ++d->trace_recorded;
  d->trace_newest = r->end;
  pthread_mutex_unlock(&d->trace_pool_lock);
}

static void release(cuda_dev_t *d, cuda_trace_rec_t *r) {
  if (!r) return;
  rec_put(d, r); /* an event is recorded again only after it was read */
  __atomic_sub_fetch(&d->trace_outstanding, 1, __ATOMIC_RELAXED);
}

hc_status_t cuda_trace_time(void *dev, void *record, double *start, double *end) {
  cuda_dev_t *d = dev;
  cuda_trace_rec_t *r = record;
  const hc_cu_api_t *cu = d->cu;
  float ms = 0;
  CUresult e = !r->seq ? CUDA_ERROR_NOT_READY : cuda_use(d) != HC_OK ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
  pthread_mutex_lock(&d->trace_pool_lock);
  const int done = r->seq <= d->trace_completed;
  const CUevent newest = d->trace_newest;
  const uint64_t newest_seq = d->trace_recorded;
  pthread_mutex_unlock(&d->trace_pool_lock);
  if (e == CUDA_SUCCESS && !done) {
    /* (an event given back and recorded again since is only later) */
    e = cu->cuEventSynchronize(newest);
    pthread_mutex_lock(&d->trace_pool_lock);
    if (e == CUDA_SUCCESS && newest_seq > d->trace_completed) d->trace_completed = newest_seq;
    pthread_mutex_unlock(&d->trace_pool_lock);
  }
  if (e == CUDA_SUCCESS) e = cu->cuEventElapsedTime(&ms, d->trace_ref, r->end);
  release(d, r);
  /* No message: the core falls back to the host's view of the command
   * and the caller's last error stays as it was. */
  if (e != CUDA_SUCCESS) return HC_ERR_DEVICE;
  *start = 0; /* not recorded: the core places it (above) */
  *end = d->trace_ref_host + ms * 1e-3;
  return HC_OK;
}

void cuda_trace_discard(void *dev, void *record) { release(dev, record); }

void cuda_trace_teardown(cuda_dev_t *d) {
  if (d->trace_ref) d->cu->cuEventDestroy(d->trace_ref);
  d->trace_ref = NULL;
  for (cuda_trace_rec_t *r = d->trace_pool, *next; r; r = next) {
    next = r->next;
    d->cu->cuEventDestroy(r->end);
    free(r);
  }
  d->trace_pool = NULL;
  d->trace_newest = NULL;
}

/* Ranges only where there is a CUDA device for Nsight Systems to show
 * them beside. */
void cuda_range_push(void *state, const char *name) {
#ifdef HC_CUDA_NVTX
  if (!((cuda_state_t *)state)->ndevices) return;
  pthread_once(&nvtx_once, nvtx_init);
  nvtxRangePushA(name);
#else
  (void)state;
  (void)name;
#endif
}

void cuda_range_pop(void *state) {
#ifdef HC_CUDA_NVTX
  if (!((cuda_state_t *)state)->ndevices) return;
  pthread_once(&nvtx_once, nvtx_init);
  nvtxRangePop();
#else
  (void)state;
#endif
}
