/* The OpenCL backend's internal declarations, shared by its source files.
 * Nothing here is exported: only the descriptor in opencl.c is visible. */
#ifndef HC_OCL_H
#define HC_OCL_H

/* OpenCL 1.2 API: what NVIDIA (3.0 with 1.2 core), AMD, Intel and PoCL all
 * implement; 2.x/3.0 queries are made by value where used. */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <pthread.h>

#include <hc/plugin.h>

/* One device found at init: its ids and the capability record. */
typedef struct ocl_devslot {
  cl_platform_id platform;
  cl_device_id id;
  hc_device_info_t info;
  char platform_version[128]; /* part of the kernel cache key */
  size_t max_items[3];        /* CL_DEVICE_MAX_WORK_ITEM_SIZES */
  char pci_bus_id[32];        /* "0000:1b:00.0", or "" where the driver cannot tell */
} ocl_devslot_t;

typedef struct ocl_state {
  hc_context_t *ctx; /* for hc_log */
  ocl_devslot_t *slots;
  uint32_t nslots;
  char why[512]; /* status_message when there is no device */
} ocl_state_t;

typedef struct ocl_pinned ocl_pinned_t;

/* An opened device: its own context, an in-order profiling queue for all
 * work, and a second queue used only to force allocations (memory.c) and
 * to map page-locked host memory (host_memory.c). */
typedef struct ocl_dev {
  ocl_state_t *state;
  ocl_devslot_t *slot;
  cl_context ctx;
  cl_command_queue queue;
  cl_command_queue aux;
  /* Device timer span: the event of the first command enqueued since
   * timer_begin (ocl_event_slot). */
  int timing;
  cl_event first;
  /* Traced commands (trace.c): where the next command's event goes, and
   * the device clock's offset from the host's (hc_now), once measured. */
  cl_event *trace_slot;
  int clock_mapped;
  double clock_offset;
  /* host_alloc's mapped buffers, freed by host_free or at close. */
  ocl_pinned_t *pinned;
  pthread_mutex_t pinned_lock;
} ocl_dev_t;

#define OCL_NARGS_UNKNOWN ((cl_uint)-1)
typedef struct ocl_kernel {
  cl_kernel k;
  cl_uint nargs;    /* CL_KERNEL_NUM_ARGS, or OCL_NARGS_UNKNOWN */
  size_t max_group; /* CL_KERNEL_WORK_GROUP_SIZE */
  size_t multiple;  /* CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE */
  size_t reqd[3];   /* reqd_work_group_size, all 0 when not declared */
  char name[64];
  /* Scalar arguments as last set (size 0: not a scalar, or unknown): an
   * unchanged one is not set again. Buffers are always set, since a freed
   * cl_mem's handle may come back for a new buffer. */
  uint8_t scalar_size[HC_MAX_KERNEL_ARGS];
  unsigned char scalar[HC_MAX_KERNEL_ARGS][16];
} ocl_kernel_t;

/* errors.c: "CL_OUT_OF_RESOURCES" (or "CL_UNKNOWN_ERROR(-1234)"). */
const char *ocl_err_name(cl_int err);
/* The hc status for a cl error: allocation failures are device memory,
 * host allocation failures host memory, anything else `fallback`. */
hc_status_t ocl_status(cl_int err, hc_status_t fallback);
/* hc_error(ocl_status(err, fallback), "opencl: CALL failed: CL_... (detail)"). */
hc_status_t ocl_fail(cl_int err, hc_status_t fallback, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* enumerate.c: fills s->slots (or s->why) from the installed platforms. */
hc_status_t ocl_enumerate(ocl_state_t *s);

/* Device timer span (launch.c): where an enqueue puts its event, then the
 * bookkeeping after a successful enqueue. Only a span's first command
 * gets one (its start opens the span; a marker at timer_end closes it):
 * on NVIDIA's OpenCL an event on a profiling queue more than doubled an
 * empty launch's host time (bench/'s launch overhead shows it). */
static inline cl_event *ocl_event_slot(ocl_dev_t *d, cl_event *tmp) {
  *tmp = NULL;
  return (d->timing && !d->first) || d->trace_slot ? tmp : NULL;
}
void ocl_event_track(ocl_dev_t *d, cl_event ev);

/* The ops, by file. */
hc_status_t ocl_mem_alloc(void *dev, size_t bytes, void **mem);
void ocl_mem_free(void *dev, void *mem);
hc_status_t ocl_mem_native(void *dev, void *mem, hc_native_mem_t *out);
hc_status_t ocl_mem_wrap(void *dev, const hc_native_mem_t *native, size_t bytes, void **mem);
void ocl_mem_unwrap(void *dev, void *mem);
hc_status_t ocl_mem_write(void *dev, void *mem, size_t off, const void *src, size_t n);
hc_status_t ocl_mem_read(void *dev, void *mem, size_t off, void *dst, size_t n);
hc_status_t ocl_mem_copy(void *dev, void *dst, size_t doff, void *src, size_t soff, size_t n);
hc_status_t ocl_mem_fill(void *dev, void *mem, size_t off, const void *pat, size_t psize, size_t n);

hc_status_t ocl_program_build(void *dev, hc_language_t lang, const char *source, const char *options, void **program);
void ocl_program_release(void *dev, void *program);
hc_status_t ocl_kernel_create(void *dev, void *program, const char *name, void **kernel);
void ocl_kernel_release(void *dev, void *kernel);
size_t ocl_kernel_max_group_size(void *dev, void *kernel);

hc_status_t ocl_launch(void *dev, void *kernel, const hc_launch_t *l);
hc_status_t ocl_finish(void *dev);
/* host_memory.c: page-locked host memory (host_alloc, host_free), and
 * what is left of it released at close. */
hc_status_t ocl_host_alloc(void *dev, size_t bytes, void **ptr);
void ocl_host_free(void *dev, void *ptr);
void ocl_host_teardown(ocl_dev_t *d);
hc_status_t ocl_timer_begin(void *dev);
hc_status_t ocl_timer_end(void *dev, double *seconds);
void ocl_timer_reset(ocl_dev_t *d);

/* trace.c: per-command device times for traces (hc_backend_ops_t's
 * trace_command_* members). */
void *ocl_trace_command_begin(void *dev);
void ocl_trace_command_end(void *dev, void *record);
hc_status_t ocl_trace_time(void *dev, void *record, double *start, double *end);
void ocl_trace_discard(void *dev, void *record);

#endif
