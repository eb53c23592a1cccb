/* Launches (argument setting, work-group choice, rounding the range up to
 * whole groups), completion, and the device timer span. */
#include <stdio.h>
#include <string.h>

#include "ocl.h"

/* The backend's choice when the launch gives no group: a few hundred items
 * (1-D 256, 2-D 16x16 or 32x8 on warp-32 devices, 3-D 8x8x4), shrunk along
 * axes the range does not fill, regrown along those it does, and within
 * the kernel's and the device's limits. */
static void choose_local(const ocl_dev_t *d, const ocl_kernel_t *k, uint32_t dims, const size_t *global,
                         size_t *local) {
  static const size_t target[3][3] = {{256, 1, 1}, {16, 16, 1}, {8, 8, 4}};
  memcpy(local, target[dims - 1], 3 * sizeof *local);
  if (dims == 2 && k->multiple >= 32) local[0] = 32, local[1] = 8;
  size_t want = local[0] * local[1] * local[2];
  for (uint32_t a = 0; a < dims; a++)
    while (local[a] > 1 && local[a] / 2 >= global[a]) local[a] /= 2;
  /* Give what short axes left over to the others, fastest first (a 2-D
   * range of one row still gets wide groups). */
  for (uint32_t a = 0; a < dims; a++)
    while (local[a] < global[a] && local[0] * local[1] * local[2] * 2 <= want && local[a] * 2 <= d->slot->max_items[a])
      local[a] *= 2;
  for (uint32_t a = 0; a < dims; a++)
    while (local[a] > 1 && local[a] > d->slot->max_items[a]) local[a] /= 2;
  size_t cap = k->max_group ? k->max_group : 1;
  while (local[0] * local[1] * local[2] > cap) {
    uint32_t big = dims - 1; /* halve the slowest of the widest axes */
    for (uint32_t a = 0; a < dims; a++)
      if (local[a] >= local[big]) big = a;
    local[big] /= 2;
  }
}

static hc_status_t group_size(const ocl_dev_t *d, const ocl_kernel_t *k, const hc_launch_t *l, size_t *local) {
  int given = l->local[0] && l->local[1] && l->local[2];
  int reqd = k->reqd[0] != 0;
  if (given) {
    memcpy(local, l->local, 3 * sizeof *local);
    if (reqd && (local[0] != k->reqd[0] || local[1] != k->reqd[1] || local[2] != k->reqd[2]))
      return hc_error(HC_ERR_INVALID_ARG,
                      "opencl: kernel '%s' declares reqd_work_group_size(%zu,%zu,%zu); the launch asked for "
                      "%zux%zux%zu",
                      k->name, k->reqd[0], k->reqd[1], k->reqd[2], local[0], local[1], local[2]);
    size_t items = local[0] * local[1] * local[2];
    if (items > k->max_group)
      return hc_error(HC_ERR_INVALID_ARG,
                      "opencl: work-group %zux%zux%zu (%zu items) exceeds kernel '%s''s limit of %zu on this device",
                      local[0], local[1], local[2], items, k->name, k->max_group);
  } else if (reqd) {
    memcpy(local, k->reqd, 3 * sizeof *local);
  } else {
    choose_local(d, k, l->dims, l->global, local);
  }
  return HC_OK;
}

hc_status_t ocl_launch(void *dev, void *kernel, const hc_launch_t *l) {
  ocl_dev_t *d = dev;
  ocl_kernel_t *k = kernel;
  if (l->nargs > HC_MAX_KERNEL_ARGS)
    return hc_error(HC_ERR_INVALID_ARG, "opencl: %u arguments (at most %d)", (unsigned)l->nargs, HC_MAX_KERNEL_ARGS);
  if (k->nargs != OCL_NARGS_UNKNOWN && l->nargs != k->nargs)
    return hc_error(HC_ERR_INVALID_ARG, "opencl: kernel '%s' takes %u argument(s); the launch gave %u", k->name,
                    (unsigned)k->nargs, (unsigned)l->nargs);
  for (uint32_t i = 0; i < l->nargs; i++) {
    const hc_launch_arg_t *a = &l->args[i];
    int buf = a->kind == HC_ARG_KIND_BUFFER;
    if (!buf && k->scalar_size[i] == a->size && !memcmp(k->scalar[i], a->value, a->size)) continue;
    k->scalar_size[i] = 0;
    cl_int err = buf ? clSetKernelArg(k->k, i, sizeof(cl_mem), &a->mem) : clSetKernelArg(k->k, i, a->size, a->value);
    if (err != CL_SUCCESS)
      return ocl_fail(err, HC_ERR_INVALID_ARG, "clSetKernelArg", "kernel '%s' argument %u: %s of %u bytes", k->name, i,
                      buf ? "buffer" : "scalar", buf ? (unsigned)sizeof(cl_mem) : a->size);
    if (!buf && a->size <= sizeof k->scalar[i]) {
      memcpy(k->scalar[i], a->value, a->size);
      k->scalar_size[i] = (uint8_t)a->size;
    }
  }
  size_t local[3], global[3];
  hc_status_t st = group_size(d, k, l, local);
  if (st != HC_OK) return st;
  /* OpenCL 1.2 wants whole groups: round up, kernels guard their bounds. */
  for (uint32_t i = 0; i < 3; i++) {
    global[i] = (l->global[i] + local[i] - 1) / local[i] * local[i];
    if (global[i] < l->global[i])
      return hc_error(HC_ERR_INVALID_ARG, "opencl: launch range %zu on axis %u is too large", l->global[i], i);
  }
  cl_event ev;
  cl_int err = clEnqueueNDRangeKernel(d->queue, k->k, l->dims, NULL, global, local, 0, NULL, ocl_event_slot(d, &ev));
  if (err != CL_SUCCESS)
    return ocl_fail(err, HC_ERR_LAUNCH, "clEnqueueNDRangeKernel", "kernel '%s', global %zux%zux%zu, local %zux%zux%zu",
                    k->name, global[0], global[1], global[2], local[0], local[1], local[2]);
  ocl_event_track(d, ev);
  return HC_OK;
}

hc_status_t ocl_finish(void *dev) {
  ocl_dev_t *d = dev;
  cl_int err = clFinish(d->queue);
  if (err != CL_SUCCESS) return ocl_fail(err, HC_ERR_DEVICE, "clFinish", "%s", d->slot->info.name);
  return HC_OK;
}

/* Keeps the span's first event, and a traced command's (trace.c). */
void ocl_event_track(ocl_dev_t *d, cl_event ev) {
  if (!ev) return;
  if (d->trace_slot) {
    clRetainEvent(ev);
    *d->trace_slot = ev;
    d->trace_slot = NULL;
  }
  if (d->timing && !d->first)
    d->first = ev;
  else
    clReleaseEvent(ev);
}

void ocl_timer_reset(ocl_dev_t *d) {
  if (d->first) clReleaseEvent(d->first);
  d->first = NULL;
  d->timing = 0;
}

hc_status_t ocl_timer_begin(void *dev) {
  ocl_dev_t *d = dev;
  ocl_timer_reset(d); /* a new span replaces one left open */
  d->timing = 1;
  return HC_OK;
}

hc_status_t ocl_timer_end(void *dev, double *seconds) {
  ocl_dev_t *d = dev;
  *seconds = 0;
  if (!d->timing) return hc_error(HC_ERR_INVALID_ARG, "opencl: timer_end without timer_begin");
  if (!d->first) { /* nothing was enqueued: an empty span */
    ocl_timer_reset(d);
    return HC_OK;
  }
  /* the in-order queue's marker completes with the span's last command */
  cl_event last = NULL;
  cl_ulong start = 0, end = 0;
  const char *call = "clEnqueueMarkerWithWaitList";
  cl_int err = clEnqueueMarkerWithWaitList(d->queue, 0, NULL, &last);
  if (err == CL_SUCCESS) call = "clWaitForEvents", err = clWaitForEvents(1, &last);
  if (err == CL_SUCCESS) {
    call = "clGetEventProfilingInfo";
    err = clGetEventProfilingInfo(d->first, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
    if (err == CL_SUCCESS) err = clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
  }
  if (last) clReleaseEvent(last);
  ocl_timer_reset(d);
  if (err != CL_SUCCESS) return ocl_fail(err, HC_ERR_DEVICE, call, "closing the device timer span");
  *seconds = end > start ? (double)(end - start) * 1e-9 : 0.0;
  return HC_OK;
}
