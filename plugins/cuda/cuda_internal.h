/* The cuda backend's shared structures (plugin-internal; all hidden). */
#ifndef HC_CUDA_INTERNAL_H
#define HC_CUDA_INTERNAL_H

#include <stdint.h>

#include <pthread.h>

#include <hc/plugin.h>

#include "copier.h"
#include "cu_driver.h"
#include "hc_nvrtc.h"

/* Buffers are handed to the core as the CUdeviceptr itself, so a launch
 * passes &arg->mem straight to cuLaunchKernel with no lookup. */
_Static_assert(sizeof(void *) == sizeof(CUdeviceptr), "CUdeviceptr must fit a pointer");
#define HC_CUDA_PTR(mem) ((CUdeviceptr)(uintptr_t)(mem))

typedef struct cuda_slot {
  CUdevice dev;
  int cc; /* 90 for sm_90 */
  hc_device_info_t info;
} cuda_slot_t;

/* One per init (per context): no process-wide state beyond libcuda's. */
typedef struct cuda_state {
  hc_context_t *ctx;
  hc_cu_api_t cu;
  int driver_version; /* cuDriverGetVersion: 13000 */
  hc_nvrtc_t nvrtc;
  int have_nvrtc;
  char nvrtc_why[512];
  char status[512]; /* why there is no device; "" when there are */
  uint32_t ndevices;
  cuda_slot_t *slots;
} cuda_state_t;

#define HC_CUDA_STAGE_SLOTS 2

typedef struct cuda_dev {
  cuda_state_t *s;
  const hc_cu_api_t *cu; /* &s->cu, one indirection less on hot paths */
  uint32_t index;
  int cc;
  CUdevice dev;
  CUcontext ctx;   /* the device's primary context (retained) */
  CUstream stream; /* non-blocking: never waits on the legacy stream */
  CUevent timer[2];
  /* Pinned bounce buffers for large pageable transfers (memory.c). */
  size_t stage_min; /* transfers this large are staged; 0: never */
  size_t stage_chunk;
  char *stage; /* HC_CUDA_STAGE_SLOTS * stage_chunk, lazily */
  CUevent stage_done[HC_CUDA_STAGE_SLOTS];
  unsigned stage_threads; /* host threads copying to and from stage */
  hc_cuda_copier_t *copier;
  /* The thread making the above ahead of the first staged transfer, and
   * what it got; joined before they are used (memory.c). */
  pthread_t stage_maker;
  int stage_maker_state; /* 0 none yet, 1 running, 2 joined */
  CUresult stage_made;
  int stage_maker_done; /* set (atomically) by the thread as it ends */
  int stage_checked;    /* stage_ready has seen the made resources */
  uint64_t peers;       /* bit i: access to cuda:i enabled or tried */
  /* Traced commands (trace.c): the reference event, its host time, and
   * the records not yet read. */
  CUevent trace_ref;
  double trace_ref_host;
  unsigned trace_outstanding;
  /* Records read and given back, their events kept for the next traced
   * commands (creating and destroying an event per command was most of
   * a traced command's cost); any thread, under trace_pool_lock. */
  struct cuda_trace_rec *trace_pool;
  pthread_mutex_t trace_pool_lock;
  /* The count of end events recorded, the newest of them, and the count
   * known complete: the stream runs in order, so one wait for the newest
   * completes every earlier one (trace_time); under trace_pool_lock. */
  uint64_t trace_recorded, trace_completed;
  CUevent trace_newest;
} cuda_dev_t;

/* Makes the device's context current on the calling thread (cheap when it
 * already is: the core may call from any thread). */
static inline hc_status_t cuda_use(cuda_dev_t *d) {
  CUcontext cur = NULL;
  if (d->cu->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == d->ctx) return HC_OK;
  CUresult r = d->cu->cuCtxSetCurrent(d->ctx);
  return r == CUDA_SUCCESS ? HC_OK : hc_cu_fail(d->cu, HC_ERR_DEVICE, r, "cuda:%u: cuCtxSetCurrent", d->index);
}

/* devinfo.c: the capability record of one device. */
hc_status_t cuda_describe(const hc_cu_api_t *cu, CUdevice dev, int driver_version, hc_device_info_t *info, int *cc);
/* "0000:1b:00.0": the device's PCI address. */
void cuda_pci_bus_id(const hc_cu_api_t *cu, CUdevice dev, char *out, size_t n);
/* FP32 and FP64 lanes per SM of a compute capability (0: unknown). */
void cuda_lanes_per_sm(int cc, int *fp32, int *fp64);

/* memory.c */
void cuda_memory_setup(cuda_dev_t *d); /* staging policy from the env */
void cuda_memory_teardown(cuda_dev_t *d);
hc_status_t cuda_mem_alloc(void *dev, size_t bytes, void **mem);
void cuda_mem_free(void *dev, void *mem);
hc_status_t cuda_host_alloc(void *dev, size_t bytes, void **ptr);
void cuda_host_free(void *dev, void *ptr);
hc_status_t cuda_host_register(void *dev, void *ptr, size_t bytes);
void cuda_host_unregister(void *dev, void *ptr);
hc_status_t cuda_mem_native(void *dev, void *mem, hc_native_mem_t *out);
hc_status_t cuda_mem_wrap(void *dev, const hc_native_mem_t *native, size_t bytes, void **mem);
hc_status_t cuda_mem_write(void *dev, void *mem, size_t off, const void *src, size_t n);
hc_status_t cuda_mem_read(void *dev, void *mem, size_t off, void *dst, size_t n);
hc_status_t cuda_mem_copy(void *dev, void *dst, size_t doff, void *src, size_t soff, size_t n);
hc_status_t cuda_mem_fill(void *dev, void *mem, size_t off, const void *pat, size_t psize, size_t n);
hc_status_t cuda_peer_copy(void *ddev, void *dst, size_t doff, void *sdev, void *src, size_t soff, size_t n);

/* program.c */
hc_status_t cuda_program_build(void *dev, hc_language_t lang, const char *source, const char *options, void **program);
void cuda_program_release(void *dev, void *program);
hc_status_t cuda_kernel_create(void *dev, void *program, const char *name, void **kernel);
void cuda_kernel_release(void *dev, void *kernel);
size_t cuda_kernel_max_group_size(void *dev, void *kernel);
hc_status_t cuda_launch(void *dev, void *kernel, const hc_launch_t *l);

/* trace.c: per-command device times for traces, NVTX ranges. */
void *cuda_trace_command_begin(void *dev);
void cuda_trace_command_end(void *dev, void *record);
hc_status_t cuda_trace_time(void *dev, void *record, double *start, double *end);
void cuda_trace_discard(void *dev, void *record);
void cuda_trace_teardown(cuda_dev_t *d);
void cuda_range_push(void *state, const char *name);
void cuda_range_pop(void *state);

#endif
