/* Timelines: per-command device times for traces (events recorded on the
 * device's stream around each traced command, read against a reference
 * event whose host time is known) and NVTX v3 ranges for Nsight Systems.
 *
 * An event record costs the host about a microsecond, so a command queued
 * while the one before it is still running records only its end: on the
 * in-order stream it starts when the one before it ends, whose end event
 * is read first. A command queued on an idle stream records its start
 * too. */
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
  CUevent ev[2];               /* recorded before (unless after) and after the command */
  uint64_t seq;                /* the device's count of records begun */
  int after;                   /* starts when record seq - 1's command ends: ev[0] unused */
  struct cuda_trace_rec *next; /* in the device's pool */
} cuda_trace_rec_t;

/* A record with its two events: from the pool, else new; NULL on failure. */
static cuda_trace_rec_t *rec_get(cuda_dev_t *d) {
  pthread_mutex_lock(&d->trace_pool_lock);
  cuda_trace_rec_t *r = d->trace_pool;
  if (r) d->trace_pool = r->next;
  pthread_mutex_unlock(&d->trace_pool_lock);
  if (r) return r;
  if (!(r = calloc(1, sizeof *r))) return NULL;
  const hc_cu_api_t *cu = d->cu;
  if (cu->cuEventCreate(&r->ev[0], CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
      cu->cuEventCreate(&r->ev[1], CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
    if (r->ev[0]) cu->cuEventDestroy(r->ev[0]);
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
  if (!r) return NULL;
  pthread_mutex_lock(&d->trace_pool_lock);
  r->seq = ++d->trace_seq;
  r->after = d->trace_last && d->trace_last->seq == r->seq - 1 &&
             d->cu->cuEventQuery(d->trace_last->ev[1]) == CUDA_ERROR_NOT_READY;
  d->trace_last = NULL;
  pthread_mutex_unlock(&d->trace_pool_lock);
  if (!r->after && d->cu->cuEventRecord(r->ev[0], d->stream) != CUDA_SUCCESS) {
    rec_put(d, r);
    return NULL;
  }
  __atomic_add_fetch(&d->trace_outstanding, 1, __ATOMIC_RELAXED); /* (read by another thread) */
  return r;
}

void cuda_trace_command_end(void *dev, void *record) {
  cuda_dev_t *d = dev;
  cuda_trace_rec_t *r = record;
  /* a failure shows in trace_time (the event was never recorded) */
  if (!r || cuda_use(d) != HC_OK || d->cu->cuEventRecord(r->ev[1], d->stream) != CUDA_SUCCESS) return;
  pthread_mutex_lock(&d->trace_pool_lock);
  if (d->trace_seq == r->seq) d->trace_last = r; /* nothing was begun since */
  pthread_mutex_unlock(&d->trace_pool_lock);
}

static void release(cuda_dev_t *d, cuda_trace_rec_t *r) {
  if (!r) return;
  pthread_mutex_lock(&d->trace_pool_lock);
  if (d->trace_last == r) d->trace_last = NULL;
  pthread_mutex_unlock(&d->trace_pool_lock);
  rec_put(d, r); /* an event is recorded again only after it was read */
  __atomic_sub_fetch(&d->trace_outstanding, 1, __ATOMIC_RELAXED);
}

hc_status_t cuda_trace_time(void *dev, void *record, double *start, double *end) {
  cuda_dev_t *d = dev;
  cuda_trace_rec_t *r = record;
  const hc_cu_api_t *cu = d->cu;
  float ms0 = 0, ms1 = 0;
  CUresult e = cuda_use(d) == HC_OK ? cu->cuEventSynchronize(r->ev[1]) : CUDA_ERROR_INVALID_CONTEXT;
  if (e == CUDA_SUCCESS && !r->after) e = cu->cuEventElapsedTime(&ms0, d->trace_ref, r->ev[0]);
  if (e == CUDA_SUCCESS) e = cu->cuEventElapsedTime(&ms1, d->trace_ref, r->ev[1]);
  const double t1 = d->trace_ref_host + ms1 * 1e-3;
  pthread_mutex_lock(&d->trace_pool_lock);
  /* The start of a command queued behind another: that one's end, read
   * just before (the core reads a device's records in order). */
  const int known = !r->after || d->trace_read_seq == r->seq - 1;
  const double t0 = r->after ? d->trace_read_end : d->trace_ref_host + ms0 * 1e-3;
  if (e == CUDA_SUCCESS) d->trace_read_seq = r->seq, d->trace_read_end = t1;
  pthread_mutex_unlock(&d->trace_pool_lock);
  release(d, r);
  /* No message: the core falls back to the host's view of the command
   * and the caller's last error stays as it was. */
  if (e != CUDA_SUCCESS || !known) return HC_ERR_DEVICE;
  *start = t0;
  *end = t1;
  return HC_OK;
}

void cuda_trace_discard(void *dev, void *record) { release(dev, record); }

void cuda_trace_teardown(cuda_dev_t *d) {
  if (d->trace_ref) d->cu->cuEventDestroy(d->trace_ref);
  d->trace_ref = NULL;
  for (cuda_trace_rec_t *r = d->trace_pool, *next; r; r = next) {
    next = r->next;
    d->cu->cuEventDestroy(r->ev[0]);
    d->cu->cuEventDestroy(r->ev[1]);
    free(r);
  }
  d->trace_pool = NULL;
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
