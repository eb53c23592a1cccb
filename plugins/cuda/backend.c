/* The cuda backend: NVIDIA GPUs through the driver API (resolved at run
 * time, cu_driver.h) with kernels compiled by NVRTC (hc_nvrtc.h). Each open
 * device uses the GPU's primary context (shared with any CUDA runtime code
 * in the process) and one non-blocking stream on which every command is
 * queued in order. This file: discovery, devices, queue and timers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* Fills the state's devices; a failure here only means "no device". */
static void discover(cuda_state_t *s) {
  char why[512], desc[256];
  int rc = hc_cu_load(&s->cu, why, sizeof why);
  const char *lib = s->cu.path;
  if (rc == -1) {
    snprintf(s->status, sizeof s->status, "no CUDA driver found (%.400s not loadable)", lib);
    hc_log(s->ctx, HC_LOG_DEBUG, "cuda: %s", why);
    return;
  }
  if (rc == -2) {
    snprintf(s->status, sizeof s->status, "CUDA driver too old: %.480s", why);
    return;
  }
  s->cu.cuDriverGetVersion(&s->driver_version);
  CUresult r = s->cu.cuInit(0);
  if (r != CUDA_SUCCESS) {
    hc_cu_describe(&s->cu, r, desc, sizeof desc);
    snprintf(s->status, sizeof s->status, "driver found, no device (cuInit: %s)", desc);
    return;
  }
  int n = 0;
  r = s->cu.cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS || n <= 0) {
    if (r != CUDA_SUCCESS)
      hc_cu_describe(&s->cu, r, desc, sizeof desc);
    else
      snprintf(desc, sizeof desc, "0 devices");
    snprintf(s->status, sizeof s->status, "driver found, no device (cuDeviceGetCount: %s)", desc);
    return;
  }
  s->slots = calloc((size_t)n, sizeof *s->slots);
  if (!s->slots) {
    snprintf(s->status, sizeof s->status, "out of memory while listing %d CUDA devices", n);
    return;
  }
  for (int i = 0; i < n; i++) {
    cuda_slot_t *slot = &s->slots[s->ndevices];
    r = s->cu.cuDeviceGet(&slot->dev, i);
    if (r != CUDA_SUCCESS) {
      hc_cu_describe(&s->cu, r, desc, sizeof desc);
      hc_log(s->ctx, HC_LOG_WARN, "cuda: device %d skipped: cuDeviceGet: %s", i, desc);
      continue;
    }
    if (cuda_describe(&s->cu, slot->dev, s->driver_version, &slot->info, &slot->cc) != HC_OK) {
      hc_log(s->ctx, HC_LOG_WARN, "cuda: device %d skipped: %s", i, hc_last_error());
      continue;
    }
    s->ndevices++;
  }
  if (!s->ndevices) {
    snprintf(s->status, sizeof s->status, "driver found, no usable device (see HC_LOG=warn)");
    return;
  }
  /* NVRTC only where there is a device to compile for: it is a large
   * library and every hc context on a GPU-less machine would pay for it. */
  s->have_nvrtc = hc_nvrtc_load(&s->nvrtc, s->driver_version / 1000, s->nvrtc_why, sizeof s->nvrtc_why) == 0;
  if (!s->have_nvrtc) {
    for (uint32_t i = 0; i < s->ndevices; i++) s->slots[i].info.languages = 0;
    hc_log(s->ctx, HC_LOG_WARN, "cuda: %s: cuda-c kernels cannot be built", s->nvrtc_why);
  } else {
    hc_log(s->ctx, HC_LOG_DEBUG, "cuda: driver %d, NVRTC %d.%d from %s, %u device(s)", s->driver_version,
           s->nvrtc.major, s->nvrtc.minor, s->nvrtc.path, s->ndevices);
  }
}

/* Never fails for want of a GPU: the backend then lists 0 devices and says
 * why (status_message), and hcrun carries on with the other backends. */
static hc_status_t cuda_init(hc_context_t *ctx, void **out) {
  cuda_state_t *s = calloc(1, sizeof *s);
  if (!s) return hc_error(HC_ERR_NO_MEMORY, "cuda: out of memory");
  s->ctx = ctx;
  discover(s);
  *out = s;
  return HC_OK;
}

static void cuda_fini(void *state) {
  cuda_state_t *s = state;
  free(s->slots);
  free(s);
}

static uint32_t cuda_device_count(void *state) { return ((cuda_state_t *)state)->ndevices; }

static const char *cuda_status_message(void *state) {
  cuda_state_t *s = state;
  if (s->status[0]) return s->status;
  if (s->ndevices && !s->have_nvrtc) return s->nvrtc_why;
  return NULL;
}

static hc_status_t cuda_device_info(void *state, uint32_t index, hc_device_info_t *info) {
  cuda_state_t *s = state;
  if (index >= s->ndevices) return hc_error(HC_ERR_NOT_FOUND, "cuda: device %u does not exist", index);
  /* Copy no more than the core's record holds (it may be older). */
  size_t n = info->size && info->size < sizeof *info ? info->size : sizeof *info;
  memcpy(info, &s->slots[index].info, n);
  info->size = (uint32_t)n;
  return HC_OK;
}

static hc_status_t cuda_device_pci(void *state, uint32_t index, char *out, size_t n) {
  cuda_state_t *s = state;
  if (index >= s->ndevices) return hc_error(HC_ERR_NOT_FOUND, "cuda: device %u does not exist", index);
  cuda_pci_bus_id(&s->cu, s->slots[index].dev, out, n);
  return HC_OK;
}

static void cuda_device_close(void *dev);

static hc_status_t cuda_device_open(void *state, uint32_t index, void **out) {
  cuda_state_t *s = state;
  if (index >= s->ndevices) return hc_error(HC_ERR_NOT_FOUND, "cuda: device %u does not exist", index);
  cuda_dev_t *d = calloc(1, sizeof *d);
  if (!d) return hc_error(HC_ERR_NO_MEMORY, "cuda: out of memory");
  d->s = s;
  d->cu = &s->cu;
  d->index = index;
  d->cc = s->slots[index].cc;
  d->dev = s->slots[index].dev;
  pthread_mutex_init(&d->trace_pool_lock, NULL);
  const hc_cu_api_t *cu = d->cu;
  CUresult r = cu->cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
  if (r != CUDA_SUCCESS) {
    pthread_mutex_destroy(&d->trace_pool_lock);
    free(d);
    /* Other processes hold the memory a context needs: say so, with the
     * device's size, as an allocation that does not fit would. */
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      return hc_cu_fail(cu, HC_ERR_DEVICE_MEMORY, r,
                        "cuda:%u: no memory left for a context on the device (%llu bytes, in use by other processes): "
                        "cuDevicePrimaryCtxRetain",
                        index, (unsigned long long)s->slots[index].info.global_mem_bytes);
    return hc_cu_fail(cu, HC_ERR_DEVICE, r, "cuda:%u: cuDevicePrimaryCtxRetain", index);
  }
  const char *what = "cuCtxSetCurrent";
  r = cu->cuCtxSetCurrent(d->ctx);
  if (r == CUDA_SUCCESS) {
    what = "cuStreamCreate";
    r = cu->cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING);
  }
  for (int i = 0; i < 2 && r == CUDA_SUCCESS; i++) {
    what = "cuEventCreate";
    r = cu->cuEventCreate(&d->timer[i], CU_EVENT_DEFAULT);
  }
  if (r != CUDA_SUCCESS) {
    hc_cu_fail(cu, HC_ERR_DEVICE, r, "cuda:%u: %s", index, what);
    cuda_device_close(d);
    return HC_ERR_DEVICE;
  }
  cuda_memory_setup(d);
  *out = d;
  return HC_OK;
}

/* Also tears down a half-opened device. */
static void cuda_device_close(void *dev) {
  cuda_dev_t *d = dev;
  const hc_cu_api_t *cu = d->cu;
  if (cuda_use(d) == HC_OK) {
    if (d->stream) cu->cuStreamSynchronize(d->stream);
    cuda_memory_teardown(d);
    cuda_trace_teardown(d);
    for (int i = 0; i < 2; i++)
      if (d->timer[i]) cu->cuEventDestroy(d->timer[i]);
    if (d->stream) cu->cuStreamDestroy(d->stream);
    /* Releasing does not pop the context: leave no stale handle current. */
    cu->cuCtxSetCurrent(NULL);
  }
  cu->cuDevicePrimaryCtxRelease(d->dev);
  pthread_mutex_destroy(&d->trace_pool_lock);
  free(d);
}

static hc_status_t cuda_finish(void *dev) {
  cuda_dev_t *d = dev;
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  CUresult r = d->cu->cuStreamSynchronize(d->stream);
  if (r != CUDA_SUCCESS)
    return hc_cu_fail(d->cu, HC_ERR_DEVICE, r, "cuda:%u: a queued command failed (cuStreamSynchronize)", d->index);
  return HC_OK;
}

/* Device time: events recorded on the stream around the span's work. */
static hc_status_t cuda_timer_begin(void *dev) {
  cuda_dev_t *d = dev;
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  CUresult r = d->cu->cuEventRecord(d->timer[0], d->stream);
  return r == CUDA_SUCCESS ? HC_OK : hc_cu_fail(d->cu, HC_ERR_DEVICE, r, "cuda:%u: cuEventRecord", d->index);
}

static hc_status_t cuda_timer_end(void *dev, double *seconds) {
  cuda_dev_t *d = dev;
  hc_status_t st = cuda_use(d);
  if (st != HC_OK) return st;
  const hc_cu_api_t *cu = d->cu;
  float ms = 0;
  const char *what = "cuEventRecord";
  CUresult r = cu->cuEventRecord(d->timer[1], d->stream);
  if (r == CUDA_SUCCESS) {
    what = "cuEventSynchronize";
    r = cu->cuEventSynchronize(d->timer[1]);
  }
  if (r == CUDA_SUCCESS) {
    what = "cuEventElapsedTime (was hc_device_timer_begin called?)";
    r = cu->cuEventElapsedTime(&ms, d->timer[0], d->timer[1]);
  }
  if (r != CUDA_SUCCESS) return hc_cu_fail(cu, HC_ERR_DEVICE, r, "cuda:%u: %s", d->index, what);
  *seconds = ms / 1e3;
  return HC_OK;
}

static const hc_backend_ops_t cuda_ops = {
    .size = sizeof(hc_backend_ops_t),
    .init = cuda_init,
    .fini = cuda_fini,
    .device_count = cuda_device_count,
    .status_message = cuda_status_message,
    .device_info = cuda_device_info,
    .device_open = cuda_device_open,
    .device_close = cuda_device_close,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .mem_write = cuda_mem_write,
    .mem_read = cuda_mem_read,
    .mem_copy = cuda_mem_copy,
    .mem_fill = cuda_mem_fill,
    .program_build = cuda_program_build,
    .program_release = cuda_program_release,
    .kernel_create = cuda_kernel_create,
    .kernel_release = cuda_kernel_release,
    .kernel_max_group_size = cuda_kernel_max_group_size,
    .launch = cuda_launch,
    .finish = cuda_finish,
    .timer_begin = cuda_timer_begin,
    .timer_end = cuda_timer_end,
    .peer_copy = cuda_peer_copy,
    .mem_native = cuda_mem_native,
    .mem_wrap = cuda_mem_wrap,
    .trace_command_begin = cuda_trace_command_begin,
    .trace_command_end = cuda_trace_command_end,
    .trace_time = cuda_trace_time,
    .trace_discard = cuda_trace_discard,
    .range_push = cuda_range_push,
    .range_pop = cuda_range_pop,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .host_register = cuda_host_register,
    .host_unregister = cuda_host_unregister,
    .device_pci_bus_id = cuda_device_pci,
};

HC_PLUGIN_DESCRIPTOR = {
    .abi_major = HC_ABI_MAJOR,
    .abi_minor = HC_ABI_MINOR,
    .kind = HC_PLUGIN_BACKEND,
    .name = "cuda",
    .version = HC_VERSION_STRING,
    .summary = "NVIDIA GPUs: CUDA driver API (loaded at run time), cuda-c kernels compiled by NVRTC",
    .ops = &cuda_ops,
};
