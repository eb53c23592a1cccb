/* The opencl backend: every device of every OpenCL platform the Khronos ICD
 * loader finds, as opencl:<i>. This file holds the plugin's life cycle and
 * its descriptor; memory.c, program.c and launch.c hold the rest. */
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

static hc_status_t ocl_init(hc_context_t *ctx, void **out) {
  ocl_state_t *s = calloc(1, sizeof *s);
  if (!s) return hc_error(HC_ERR_NO_MEMORY, "opencl: out of memory");
  s->ctx = ctx;
  /* No platform, no device, a broken driver: all still load, with 0
   * devices and a reason; only a lack of host memory fails. */
  hc_status_t st = ocl_enumerate(s);
  if (st != HC_OK) {
    free(s->slots);
    free(s);
    return st;
  }
  if (s->why[0]) hc_log(ctx, HC_LOG_DEBUG, "opencl: %s", s->why);
  *out = s;
  return HC_OK;
}

static void ocl_fini(void *state) {
  ocl_state_t *s = state;
  if (!s) return;
  free(s->slots);
  free(s);
}

static uint32_t ocl_device_count(void *state) { return ((ocl_state_t *)state)->nslots; }

static const char *ocl_status_message(void *state) {
  ocl_state_t *s = state;
  return s->why[0] ? s->why : NULL;
}

static hc_status_t ocl_device_info(void *state, uint32_t index, hc_device_info_t *info) {
  ocl_state_t *s = state;
  if (index >= s->nslots) return hc_error(HC_ERR_NOT_FOUND, "opencl: device %u does not exist", index);
  *info = s->slots[index].info;
  return HC_OK;
}

/* Asynchronous errors the driver reports outside any call (NVIDIA's
 * "CL_OUT_OF_RESOURCES error executing kernel"): into the debug log. */
static hc_status_t ocl_device_pci(void *state, uint32_t index, char *out, size_t n) {
  ocl_state_t *s = state;
  if (index >= s->nslots || !s->slots[index].pci_bus_id[0])
    return hc_error(HC_ERR_NOT_FOUND, "opencl: no PCI address for device %u", index);
  snprintf(out, n, "%s", s->slots[index].pci_bus_id);
  return HC_OK;
}

static void CL_CALLBACK notify(const char *errinfo, const void *priv, size_t cb, void *user) {
  (void)priv;
  (void)cb;
  ocl_dev_t *d = user;
  hc_log(d->state->ctx, HC_LOG_DEBUG, "opencl: %s: %s", d->slot->info.name, errinfo);
}

static void ocl_device_close(void *dev) {
  ocl_dev_t *d = dev;
  if (!d) return;
  if (d->queue) clFinish(d->queue);
  ocl_timer_reset(d);
  if (d->aux) ocl_host_teardown(d);
  pthread_mutex_destroy(&d->pinned_lock);
  if (d->aux) clReleaseCommandQueue(d->aux);
  if (d->queue) clReleaseCommandQueue(d->queue);
  if (d->ctx) clReleaseContext(d->ctx);
  free(d);
}

static hc_status_t ocl_device_open(void *state, uint32_t index, void **out) {
  ocl_state_t *s = state;
  if (index >= s->nslots) return hc_error(HC_ERR_NOT_FOUND, "opencl: device %u does not exist", index);
  ocl_dev_t *d = calloc(1, sizeof *d);
  if (!d) return hc_error(HC_ERR_NO_MEMORY, "opencl: out of memory");
  d->state = s;
  d->slot = &s->slots[index];
  pthread_mutex_init(&d->pinned_lock, NULL);
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->slot->platform, 0};
  cl_int err = CL_SUCCESS;
  const char *call = "clCreateContext";
  d->ctx = clCreateContext(props, 1, &d->slot->id, notify, d, &err);
  if (d->ctx && err == CL_SUCCESS) {
    call = "clCreateCommandQueue";
    /* In order (launches are asynchronous but ordered), with profiling
     * for the device timers. */
    d->queue = clCreateCommandQueue(d->ctx, d->slot->id, CL_QUEUE_PROFILING_ENABLE, &err);
    if (d->queue && err == CL_SUCCESS) d->aux = clCreateCommandQueue(d->ctx, d->slot->id, 0, &err);
  }
  if (!d->ctx || !d->queue || !d->aux || err != CL_SUCCESS) {
    if (err == CL_SUCCESS) err = CL_OUT_OF_RESOURCES;
    hc_status_t st = ocl_fail(err, HC_ERR_DEVICE, call, "%s", d->slot->info.name);
    ocl_device_close(d);
    return st;
  }
  *out = d;
  return HC_OK;
}

static const hc_backend_ops_t ocl_ops = {
    .size = sizeof(hc_backend_ops_t),
    .init = ocl_init,
    .fini = ocl_fini,
    .device_count = ocl_device_count,
    .status_message = ocl_status_message,
    .device_info = ocl_device_info,
    .device_open = ocl_device_open,
    .device_close = ocl_device_close,
    .mem_alloc = ocl_mem_alloc,
    .mem_free = ocl_mem_free,
    .mem_native = ocl_mem_native,
    .mem_wrap = ocl_mem_wrap,
    .mem_unwrap = ocl_mem_unwrap,
    .mem_write = ocl_mem_write,
    .mem_read = ocl_mem_read,
    .mem_copy = ocl_mem_copy,
    .mem_fill = ocl_mem_fill,
    .program_build = ocl_program_build,
    .program_release = ocl_program_release,
    .kernel_create = ocl_kernel_create,
    .kernel_release = ocl_kernel_release,
    .kernel_max_group_size = ocl_kernel_max_group_size,
    .launch = ocl_launch,
    .finish = ocl_finish,
    .timer_begin = ocl_timer_begin,
    .timer_end = ocl_timer_end,
    .trace_command_begin = ocl_trace_command_begin,
    .trace_command_end = ocl_trace_command_end,
    .trace_time = ocl_trace_time,
    .trace_discard = ocl_trace_discard,
    .host_alloc = ocl_host_alloc,
    .host_free = ocl_host_free,
    .device_pci_bus_id = ocl_device_pci,
};

HC_PLUGIN_DESCRIPTOR = {
    .abi_major = HC_ABI_MAJOR,
    .abi_minor = HC_ABI_MINOR,
    .kind = HC_PLUGIN_BACKEND,
    .name = "opencl",
    .version = HC_VERSION_STRING,
    .summary = "OpenCL devices of every installed platform (Khronos ICD loader): opencl-c kernels",
    .ops = &ocl_ops,
};
