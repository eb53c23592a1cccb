/* Per-command device times for traces: the traced command's event, its
 * profiling START and END, and the device clock mapped onto the host's. */
#include <stdlib.h>

#include "ocl.h"

typedef struct {
  cl_event ev; /* filled by ocl_event_track when the command is queued */
} ocl_trace_rec_t;

/* The device clock's offset from hc_now(): a marker on the idle queue
 * ends between the host's time before it was queued and after the wait
 * for it, which bounds the offset from both sides; the bounds of several
 * markers intersect to the tightest, and the offset is their middle. */
static void map_clock(ocl_dev_t *d) {
  if (clFinish(d->queue) != CL_SUCCESS) return;
  double lo = -1e300, hi = 1e300;
  for (int i = 0; i < 8; i++) {
    cl_event m = NULL;
    cl_ulong t = 0;
    const double h0 = hc_now();
    if (clEnqueueMarkerWithWaitList(d->queue, 0, NULL, &m) != CL_SUCCESS) return;
    cl_int err = clWaitForEvents(1, &m);
    const double h1 = hc_now();
    if (err == CL_SUCCESS) err = clGetEventProfilingInfo(m, CL_PROFILING_COMMAND_END, sizeof t, &t, NULL);
    clReleaseEvent(m);
    if (err != CL_SUCCESS || !t) return;
    const double dev = (double)t * 1e-9;
    if (h0 - dev > lo) lo = h0 - dev;
    if (h1 - dev < hi) hi = h1 - dev;
  }
  /* crossed bounds: the clocks ran apart during the markers; the last
   * marker's bound is then the better guess */
  d->clock_offset = lo <= hi ? 0.5 * (lo + hi) : lo;
  d->clock_mapped = 1;
}

void *ocl_trace_command_begin(void *dev) {
  ocl_dev_t *d = dev;
  if (!d->clock_mapped) map_clock(d);
  if (!d->clock_mapped) return NULL; /* the core times it on the host */
  ocl_trace_rec_t *r = calloc(1, sizeof *r);
  if (r) d->trace_slot = &r->ev;
  return r;
}

void ocl_trace_command_end(void *dev, void *record) {
  (void)record;
  ((ocl_dev_t *)dev)->trace_slot = NULL; /* a command that queued nothing */
}

hc_status_t ocl_trace_time(void *dev, void *record, double *start, double *end) {
  ocl_dev_t *d = dev;
  ocl_trace_rec_t *r = record;
  cl_ulong s = 0, e = 0;
  cl_int err = CL_INVALID_EVENT;
  if (r && r->ev) {
    err = clWaitForEvents(1, &r->ev);
    if (err == CL_SUCCESS) {
      err = clGetEventProfilingInfo(r->ev, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL);
      if (err == CL_SUCCESS) err = clGetEventProfilingInfo(r->ev, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL);
    }
    clReleaseEvent(r->ev);
  }
  free(r);
  /* No message: the core falls back to the host's view of the command
   * and the caller's last error stays as it was. */
  if (err != CL_SUCCESS) return ocl_status(err, HC_ERR_DEVICE);
  *start = (double)s * 1e-9 + d->clock_offset;
  *end = (double)e * 1e-9 + d->clock_offset;
  return HC_OK;
}

void ocl_trace_discard(void *dev, void *record) {
  ocl_trace_rec_t *r = record;
  ((ocl_dev_t *)dev)->trace_slot = NULL;
  if (r && r->ev) clReleaseEvent(r->ev);
  free(r);
}
