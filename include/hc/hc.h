/* hc — the embedding API.
 *
 * A program creates a context (which finds the plugins), opens a device,
 * and runs workloads on it, alone or chained in pipelines (pipeline.h), or
 * launches its own kernels on buffers and fields.
 *
 * Conventions: every fallible call returns hc_status_t; on failure the
 * detail is in hc_last_error() (kept per thread). Handles are opaque; a
 * function that gives a handle says who owns it.
 *
 * Threads: contexts are independent, one per thread or shared. A shared
 * context may be used by several threads at once for registry queries,
 * hc_device_open/close and hc_job_run: jobs on different devices run in
 * parallel, jobs on the same device are serialised by the core (the run
 * holds the device's lock). A job, and buffers, fields and kernels used
 * outside jobs, belong to one thread at a time; to share a device's raw
 * operations between threads, bracket them with hc_device_lock/unlock. The
 * log and progress callbacks may be called from any thread.
 *
 * Axis order: field shapes are in C (NumPy) order, shape[0] the slowest
 * axis. Kernel launch ranges follow OpenCL: global[0] is the fastest. */
#ifndef HC_HC_H
#define HC_HC_H

#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "hc/status.h"
#include "hc/types.h"
#include "hc/version.h"
#include "hc/config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hc_context hc_context_t;
typedef struct hc_device hc_device_t;
typedef struct hc_buffer hc_buffer_t;
typedef struct hc_kernel hc_kernel_t;
typedef struct hc_field hc_field_t;
typedef struct hc_job hc_job_t;

/* ---------------------------------------------------------------- logging */

typedef enum hc_log_level {
  HC_LOG_ERROR = 0,
  HC_LOG_WARN = 1,
  HC_LOG_INFO = 2,
  HC_LOG_DEBUG = 3
} hc_log_level_t;

typedef void (*hc_log_fn)(void *user, hc_log_level_t level, const char *msg);
/* Progress of a long run: fraction in [0,1] and a one-line status. */
typedef void (*hc_progress_fn)(void *user, const char *workload,
                               double fraction, const char *line);

/* ---------------------------------------------------------------- context */

typedef struct hc_context_options {
  uint32_t size;                  /* sizeof(hc_context_options_t) */
  const char *const *plugin_dirs; /* searched first, in order; may be NULL */
  uint32_t plugin_dir_count;
  uint32_t no_env_path;     /* 1: ignore HC_PLUGIN_PATH */
  uint32_t no_default_dirs; /* 1: skip install dir and build tree */
  hc_log_fn log;            /* NULL: no logging (unless HC_LOG set:
                               then to stderr) */
  void *log_user;
  hc_log_level_t log_level;
  hc_progress_fn progress; /* NULL: no progress reports */
  void *progress_user;
} hc_context_options_t;

/* Creates a context and loads every plugin on the search path
 * (plugin_dirs, HC_PLUGIN_PATH, the install directory, the build tree;
 * README "Plugins"). Every HC_* environment variable is checked first
 * (docs/env.md): a value it does not accept fails this call with
 * HC_ERR_PARAM naming it. opts may be NULL. Broken plugins never fail this
 * call: they are recorded (hc_rejected_*). The caller owns *out
 * (hc_context_destroy). */
hc_status_t hc_context_create(const hc_context_options_t *opts,
                              hc_context_t **out);
/* Closes every device, unloads every plugin. NULL is allowed. */
void hc_context_destroy(hc_context_t *ctx);

/* Emits a message through the context's log callback (if any). */
void hc_log(hc_context_t *ctx, hc_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---------------------------------------------------------------- registry */

typedef enum hc_plugin_kind {
  HC_PLUGIN_BACKEND = 1,
  HC_PLUGIN_WORKLOAD = 2
} hc_plugin_kind_t;

typedef struct hc_plugin_summary {
  const char *name; /* owned by the context */
  const char *version;
  const char *summary;
  const char *path; /* file it came from */
} hc_plugin_summary_t;

uint32_t hc_backend_count(const hc_context_t *ctx);
hc_status_t hc_backend_get(const hc_context_t *ctx, uint32_t index,
                           hc_plugin_summary_t *out);
/* Why the backend reports no device ("no CUDA driver found", or "init
 * failed: ..." for a backend that could not start), or NULL. Starts the
 * backend (see hc_device_count). */
const char *hc_backend_status(const hc_context_t *ctx, uint32_t index);
uint32_t hc_workload_count(const hc_context_t *ctx);
hc_status_t hc_workload_get(const hc_context_t *ctx, uint32_t index,
                            hc_plugin_summary_t *out);

/* The plugin search path, in order: each directory (resolved), where the
 * entry came from ("caller (--plugin-dir)", "HC_PLUGIN_PATH", "beside
 * libhc", "beside the program", "install directory") and, when it is not
 * searched, why (a relative HC_PLUGIN_PATH entry, a directory another user
 * owns or may write); NULL when it is. Strings owned by ctx. */
uint32_t hc_search_dir_count(const hc_context_t *ctx);
hc_status_t hc_search_dir_get(const hc_context_t *ctx, uint32_t index,
                              const char **dir, const char **source,
                              const char **refused);

/* Files on the search path that were not loaded, and why. */
uint32_t hc_rejected_count(const hc_context_t *ctx);
hc_status_t hc_rejected_get(const hc_context_t *ctx, uint32_t index,
                            const char **path, const char **reason);

/* Forgets every remembered plugin-probe verdict (in this process and the
 * registry file in the kernel cache), so that contexts created afterwards
 * probe every plugin again (hcrun --rescan). Verdicts are otherwise bound
 * to the plugin file and the libraries it loaded, and a bad one expires
 * after a day. */
hc_status_t hc_plugin_rescan(void);

/* ---------------------------------------------------------------- devices */

/* Backends start (their init, then their devices are numbered) when they
 * are first needed: hc_device_find of "B" or "B:i" starts backend B alone,
 * so a run on one backend never starts, or fails with, another; whatever
 * enumerates devices (hc_device_count, "auto", an index not yet numbered,
 * tracing) starts them all, in load order. Devices are numbered in the
 * order their backends started, each backend's in its own order. A backend
 * reads its settings (HC_CPU_THREADS, HC_CUDA_DRIVER, ...) when it starts.
 * A backend that cannot start shows no device, with the reason in
 * hc_backend_status. */
uint32_t hc_device_count(const hc_context_t *ctx);
/* "cpu:0", "opencl:1"; owned by the context. NULL if index is out of range. */
const char *hc_device_id(const hc_context_t *ctx, uint32_t index);
hc_status_t hc_device_query(const hc_context_t *ctx, uint32_t index,
                            hc_device_info_t *info);
/* The device's PCI address, "0000:1b:00.0" (domain:bus:device.function),
 * where its backend can tell, else ""; two backends that show one GPU
 * (CUDA and OpenCL) give the same. Owned by the context; NULL if index is
 * out of range. */
const char *hc_device_pci_bus_id(const hc_context_t *ctx, uint32_t index);
/* Resolves "B" (first device of backend B), "B:i", or "auto" (the best
 * device: a GPU over an accelerator over a CPU; then more compute). */
hc_status_t hc_device_find(const hc_context_t *ctx, const char *spec,
                           uint32_t *index);
/* The best device that can run the workload (NULL: any): the rule of
 * "auto", restricted to devices hc_workload_can_run accepts. */
hc_status_t hc_device_find_auto(hc_context_t *ctx, const char *workload,
                                uint32_t *index);
/* Opens the device (or returns the already open one: a context holds one
 * handle per device, reference counted). Close with hc_device_close. */
hc_status_t hc_device_open(hc_context_t *ctx, uint32_t index,
                           hc_device_t **out);
void hc_device_close(hc_device_t *dev);
const hc_device_info_t *hc_device_info(const hc_device_t *dev);
const char *hc_device_name(const hc_device_t *dev); /* its id, "cuda:0" */
hc_context_t *hc_device_context(const hc_device_t *dev);
/* Its index in the context (hc_device_open(ctx, index) opens it again, as
 * one more reference). */
uint32_t hc_device_index(const hc_device_t *dev);
/* The device's recursive lock (see Threads above). */
void hc_device_lock(hc_device_t *dev);
void hc_device_unlock(hc_device_t *dev);
/* Waits until every command queued on the device has finished. */
hc_status_t hc_device_finish(hc_device_t *dev);
/* Host memory for fast transfers with dev (hc_buffer_read/write): page-
 * locked where the backend offers it (CUDA), else ordinary memory; 64-byte
 * aligned. Release it with hc_host_free and the same device. */
hc_status_t hc_host_alloc(hc_device_t *dev, size_t bytes, void **out);
void hc_host_free(hc_device_t *dev, void *p);
/* Device time: the span of device work between begin and end (kernels and
 * copies), measured by the device's own timers from the start of the first
 * command queued after begin (the host's time before it is not counted) to
 * the end of the last; 0 when none was queued. One span at a time; ending
 * a span that was not begun is HC_ERR_INVALID_ARG. */
hc_status_t hc_device_timer_begin(hc_device_t *dev);
hc_status_t hc_device_timer_end(hc_device_t *dev, double *seconds);

/* ---------------------------------------------------------------- buffers */

/* Allocates device memory. A request larger than the device allows fails
 * with HC_ERR_DEVICE_MEMORY and a message with required and available bytes.
 * Caller owns *out. */
hc_status_t hc_buffer_create(hc_device_t *dev, size_t bytes, hc_buffer_t **out);
void hc_buffer_destroy(hc_buffer_t *buf);
size_t hc_buffer_size(const hc_buffer_t *buf);
hc_device_t *hc_buffer_device(const hc_buffer_t *buf);
hc_status_t hc_buffer_write(hc_buffer_t *buf, size_t offset, const void *src,
                            size_t bytes);
hc_status_t hc_buffer_read(const hc_buffer_t *buf, size_t offset, void *dst,
                           size_t bytes);
/* Copies between buffers; across devices the core stages through the host
 * (or a peer copy where the backend has one) and counts the transfer. */
hc_status_t hc_buffer_copy(hc_buffer_t *dst, size_t dst_offset,
                           const hc_buffer_t *src, size_t src_offset,
                           size_t bytes);
/* Fills bytes with a repeated pattern (pattern_size 1, 2, 4, 8 or 16). */
hc_status_t hc_buffer_fill(hc_buffer_t *buf, size_t offset, const void *pattern,
                           size_t pattern_size, size_t bytes);
/* The memory's host address when the device shares host memory (cpu
 * backend), else NULL. */
void *hc_buffer_host_ptr(const hc_buffer_t *buf);

/* Memory as the device API itself names it, for handing buffers to other
 * libraries without a copy (DLPack, __cuda_array_interface__, CuPy) and for
 * running hc on memory they allocated. */
typedef enum hc_native_kind {
  HC_NATIVE_NONE = 0,
  HC_NATIVE_HOST = 1,  /* ptr: a host address */
  HC_NATIVE_CUDA = 2,  /* ptr: a CUdeviceptr; ordinal: the CUDA device */
  HC_NATIVE_OPENCL = 3 /* ptr: a cl_mem */
} hc_native_kind_t;
typedef struct hc_native_mem {
  uint32_t size; /* sizeof(hc_native_mem_t) */
  uint32_t kind; /* hc_native_kind_t */
  void *ptr;
  int32_t ordinal; /* device number in the native API (CUDA), else -1 */
  uint32_t reserved_;
} hc_native_mem_t;

/* Describes the buffer's memory as its device API names it. HC_ERR_UNSUPPORTED
 * when the backend does not say (the buffer stays usable through hc). */
hc_status_t hc_buffer_native(const hc_buffer_t *buf, hc_native_mem_t *out);
/* A buffer over memory the caller allocated with the device's own API (or,
 * for a device that shares host memory, a host address): hc reads and
 * writes it in place and never frees it; the caller keeps it alive and
 * unchanged in size until hc_buffer_destroy. HC_ERR_UNSUPPORTED when the
 * device cannot take that kind of memory (callers then copy). Caller owns
 * *out. */
hc_status_t hc_buffer_wrap(hc_device_t *dev, const hc_native_mem_t *mem,
                           size_t bytes, hc_buffer_t **out);

/* Transfers counted by the context (host<->device and device<->device
 * across devices), for reports and tests. */
typedef struct hc_transfer_stats {
  uint64_t to_device_count, to_device_bytes;
  uint64_t to_host_count, to_host_bytes;
  uint64_t cross_device_count, cross_device_bytes;
  double seconds;
} hc_transfer_stats_t;
void hc_transfer_stats_get(const hc_context_t *ctx, hc_transfer_stats_t *out);
/* Buffers of the context (fields' included) created and not yet destroyed:
 * for leak checks of code that embeds hc. */
uint64_t hc_context_live_buffers(const hc_context_t *ctx);
void hc_transfer_stats_reset(hc_context_t *ctx);

/* ---------------------------------------------------------------- kernels */

/* One work-group of a host-language kernel: the kernel function is called
 * once per group and loops over the items lo[d] <= i < hi[d]. Groups are
 * numbered deterministically, so a reduction can write partial[group]. */
typedef struct hc_host_group {
  uint32_t dims;
  uint32_t worker; /* 0 .. num_workers-1: the thread running it */
  uint32_t num_workers;
  uint32_t reserved_;
  size_t group_id[3];
  size_t num_groups[3];
  size_t lo[3], hi[3]; /* clamped to global */
  size_t global[3];
} hc_host_group_t;

/* args[i]: for a buffer argument its host address, for a scalar a pointer
 * to its value. */
typedef void (*hc_host_kernel_fn)(const hc_host_group_t *group,
                                  void *const *args);

/* What a workload offers for one kernel. The core picks what the device
 * accepts: host_fn on a device that takes "host", else the portable source
 * compiled as opencl-c or cuda-c (the core prepends the dialect prelude,
 * see docs/dialect.md). */
typedef struct hc_kernel_desc {
  uint32_t size;             /* sizeof(hc_kernel_desc_t) */
  const char *name;          /* kernel function name in source */
  const char *source;        /* portable-dialect source, or NULL */
  const char *options;       /* build options, e.g. "-DBLOCK=16", or NULL */
  hc_host_kernel_fn host_fn; /* or NULL */
} hc_kernel_desc_t;

/* Builds (or finds in the device's program cache and the on-disk cache) and
 * returns a kernel. HC_ERR_UNSUPPORTED when the desc offers no language the
 * device accepts; HC_ERR_BUILD with the build log in hc_last_error(). */
hc_status_t hc_kernel_create(hc_device_t *dev, const hc_kernel_desc_t *desc,
                             hc_kernel_t **out);
void hc_kernel_destroy(hc_kernel_t *k);
hc_language_t hc_kernel_language(const hc_kernel_t *k);
/* Largest work-group this kernel can be launched with on its device. */
size_t hc_kernel_max_group_size(const hc_kernel_t *k);

typedef enum hc_arg_kind {
  HC_ARG_KIND_BUFFER = 1,
  HC_ARG_KIND_SCALAR = 2
} hc_arg_kind_t;
typedef struct hc_arg {
  uint32_t kind;     /* hc_arg_kind_t */
  uint32_t size;     /* scalar bytes */
  const void *value; /* hc_buffer_t* for a buffer, pointer to the value */
} hc_arg_t;
/* Scalars are int32, uint32, int64, uint64, float or double (never size_t:
 * OpenCL kernels cannot take it). */
#define HC_ARG_BUF(b) ((hc_arg_t){HC_ARG_KIND_BUFFER, 0, (const void *)(b)})
#define HC_ARG_VAL(v) \
  ((hc_arg_t){HC_ARG_KIND_SCALAR, (uint32_t)sizeof(v), &(v)})
#define HC_MAX_KERNEL_ARGS 32

/* Launches over a dims-dimensional range (dims 1..3). local may be NULL
 * (the backend chooses). global need not be a multiple of local: the
 * backend rounds the range up, so kernels guard with their own bounds. */
hc_status_t hc_kernel_launch(hc_kernel_t *k, uint32_t dims,
                             const size_t *global, const size_t *local,
                             uint32_t nargs, const hc_arg_t *args);

/* ---------------------------------------------------------------- fields */

/* A typed n-D array on a device, with grid spacing and origin per axis
 * (default 1 and 0) and a name. rank 0 is a scalar (one element). */
hc_status_t hc_field_create(hc_device_t *dev, hc_dtype_t dtype, uint32_t rank,
                            const int64_t *shape, hc_field_t **out);
void hc_field_destroy(hc_field_t *f);
hc_dtype_t hc_field_dtype(const hc_field_t *f);
uint32_t hc_field_rank(const hc_field_t *f);
const int64_t *hc_field_shape(const hc_field_t *f);
size_t hc_field_count(const hc_field_t *f); /* elements */
size_t hc_field_bytes(const hc_field_t *f);
/* Owned by the field. NULL when f is NULL or when the field holds a split
 * run's parts' rows and gathering them failed (hc_last_error says why;
 * a later call tries again). */
hc_buffer_t *hc_field_buffer(const hc_field_t *f);
hc_device_t *hc_field_device(const hc_field_t *f);
const double *hc_field_spacing(const hc_field_t *f); /* rank values */
const double *hc_field_origin(const hc_field_t *f);
void hc_field_set_spacing(hc_field_t *f, const double *h);
void hc_field_set_origin(hc_field_t *f, const double *o);
const char *hc_field_name(const hc_field_t *f);
void hc_field_set_name(hc_field_t *f, const char *name);
hc_status_t hc_field_read(const hc_field_t *f, void *host);
hc_status_t hc_field_write(hc_field_t *f, const void *host);
/* The first non-finite element (NaN, +-Inf; complex: either part) of f as a
 * flat index in C order, or -1 when every element is finite; *value (may be
 * NULL) gets the bad value. Reads the field back to the host. */
hc_status_t hc_field_find_nonfinite(const hc_field_t *f, int64_t *index,
                                    double *value);
/* A copy of f on dev (same device: a device-side copy, no host transfer).
 * Caller owns *out. */
hc_status_t hc_field_copy_to(const hc_field_t *f, hc_device_t *dev,
                             hc_field_t **out);

/* A field over caller-owned memory (hc_buffer_wrap's rules), C order. */
hc_status_t hc_field_wrap(hc_device_t *dev, hc_dtype_t dtype, uint32_t rank,
                          const int64_t *shape, const hc_native_mem_t *mem,
                          hc_field_t **out);

/* .npy files (format 1.0/2.0/3.0, little-endian, C order; f4 f8 c8 c16).
 * Spacing and origin travel in a side file "<path>.grid" when present.
 * Anything else is HC_ERR_FORMAT with a message that names the problem. A
 * header key given twice counts once, with its last value (as NumPy reads
 * it). */
hc_status_t hc_field_load_npy(hc_device_t *dev, const char *path,
                              hc_field_t **out);
/* Written atomically (temporary file, then rename): no half-written file. */
hc_status_t hc_field_save_npy(const hc_field_t *f, const char *path);

/* Opens a file the user named for reading, never blocking: O_NONBLOCK (a
 * FIFO does not wait for a writer), then fstat; anything but a regular file
 * (a FIFO, a directory, a device, a socket) is HC_ERR_IO with a message that
 * names the path and what it is. Every reader of a user-named file in hc
 * goes through here. The caller closes *fd / fcloses *out. */
hc_status_t hc_open_regular(const char *path, int *fd);
hc_status_t hc_fopen_regular(const char *path, FILE **out);

/* Host-only .npy access. *data is malloc'd; caller frees. */
hc_status_t hc_npy_read(const char *path, hc_dtype_t *dtype, uint32_t *rank,
                        int64_t *shape, void **data);
/* Rows [lo, hi) along axis 0 of a .npy file, for a reader that needs a
 * slab of it (a part of a split run): *shape is the whole array's; *data
 * (malloc'd, caller frees) holds the rows. lo == hi reads the header only
 * (data may be NULL then). HC_ERR_INVALID_ARG when the rows are not within
 * the array (a 0-D array has one row). */
hc_status_t hc_npy_read_rows(const char *path, int64_t lo, int64_t hi,
                             hc_dtype_t *dtype, uint32_t *rank, int64_t *shape,
                             void **data);
hc_status_t hc_npy_write(const char *path, hc_dtype_t dtype, uint32_t rank,
                         const int64_t *shape, const void *data);
/* The .npy header (*len bytes, padded to 64) of an array of that dtype and
 * shape, for writers that place the data themselves (several processes
 * writing one file); the data follows it in C order. */
hc_status_t hc_npy_header(hc_dtype_t dtype, uint32_t rank, const int64_t *shape,
                          void *out, size_t cap, size_t *len);
/* Parses a .npy image held in memory (for fuzzing and embedded data). */
hc_status_t hc_npy_parse(const void *bytes, size_t size, hc_dtype_t *dtype,
                         uint32_t *rank, int64_t *shape, size_t *data_offset);

/* ---------------------------------------------------------------- jobs */

/* A job is one configured run of a workload: parameters, inputs, then run
 * on a device; afterwards its outputs, metrics and timings. Caller owns
 * *out (hc_job_destroy). */
hc_status_t hc_job_create(hc_context_t *ctx, const char *workload,
                          hc_job_t **out);
void hc_job_destroy(hc_job_t *job);
const char *hc_job_workload(const hc_job_t *job);
/* Sets a parameter from text, validated against the workload's schema:
 * HC_ERR_PARAM with a message naming parameter, value and allowed range
 * (an unknown name lists the valid names). */
hc_status_t hc_job_set(hc_job_t *job, const char *name, const char *value);
/* Sets "key=value". */
hc_status_t hc_job_set_kv(hc_job_t *job, const char *key_eq_value);
/* Binds an input port to a field (borrowed: it must outlive the run); NULL
 * unbinds. HC_ERR_NOT_FOUND for an unknown port, HC_ERR_INVALID_ARG naming
 * port, dtype and rank for a field whose dtype or rank the port does not
 * take (nothing is bound then). */
hc_status_t hc_job_set_input(hc_job_t *job, const char *port, hc_field_t *f);
/* Where the workload may write extra files (images, CSV); NULL: none. */
hc_status_t hc_job_set_output_dir(hc_job_t *job, const char *dir);
/* A prefix of those files' names (a pipeline gives each stage
 * "<stage>-<workload>-", as its .npy outputs get); NULL: none. */
hc_status_t hc_job_set_output_prefix(hc_job_t *job, const char *prefix);
/* The extra files the last run wrote (full paths), in the order written;
 * owned by the job, valid until its next run. */
uint32_t hc_job_file_count(const hc_job_t *job);
const char *hc_job_file(const hc_job_t *job, uint32_t i);

#define HC_RUN_VERIFY 1u
/* Runs the job on dev. Returns HC_ERR_VERIFY when verification was asked
 * for and failed (outputs and metrics are still there). A job can run
 * again; the previous outputs are dropped. */
hc_status_t hc_job_run(hc_job_t *job, hc_device_t *dev, uint32_t flags);

/* Outputs (after a run). Owned by the job, unless taken. */
hc_field_t *hc_job_output(const hc_job_t *job, const char *port);
/* Moves an output to the caller, who then owns it. */
hc_status_t hc_job_take_output(hc_job_t *job, const char *port,
                               hc_field_t **out);

typedef struct hc_job_times {
  double wall_s;    /* the whole hc_job_run call */
  double compute_s; /* the workload's timed region (the papers' "total") */
  double device_s;  /* device time of that region (the papers' "GPU") */
} hc_job_times_t;
void hc_job_times(const hc_job_t *job, hc_job_times_t *out);
/* Time the last run spent building kernels: programs built (or loaded
 * from the disk cache), and on a CPU device running source kernels the
 * first launch of each kernel per range and group beyond the kernel's own
 * device time, where the driver finishes its build (PoCL compiles a
 * work-group function per group size). Build time inside the workload's
 * timed region is not part of compute_s. Either pointer may be NULL. */
void hc_job_build_time(const hc_job_t *job, double *build_s,
                       double *first_launch_s);

uint32_t hc_job_metric_count(const hc_job_t *job);
/* name and unit are owned by the job. */
hc_status_t hc_job_metric(const hc_job_t *job, uint32_t index,
                          const char **name, double *value, const char **unit);
/* Looks up a metric by name; HC_ERR_NOT_FOUND if absent. */
hc_status_t hc_job_metric_find(const hc_job_t *job, const char *name,
                               double *value);
/* -1 not verified, 0 failed, 1 passed; message owned by the job. */
int hc_job_verified(const hc_job_t *job, const char **message);
/* Free-form notes the workload left (one per line), or "". */
const char *hc_job_notes(const hc_job_t *job);

/* Effective parameters (defaults included), as text, for reports. */
uint32_t hc_job_param_count(const hc_job_t *job);
hc_status_t hc_job_param_get(const hc_job_t *job, uint32_t index,
                             const char **name, const char **value);
/* 0 when the workload said its last run did not use parameter `index`
 * (hc_job_param_unused: a port-fed stage's own source parameters), else 1;
 * reports show only parameters that apply. */
int hc_job_param_applies(const hc_job_t *job, uint32_t index);

/* Schema queries for help output and pipeline validation. */
typedef struct hc_param_spec hc_param_spec_t;
typedef struct hc_port_spec hc_port_spec_t;
uint32_t hc_workload_param_count(const hc_context_t *ctx, const char *workload);
const hc_param_spec_t *hc_workload_param(const hc_context_t *ctx,
                                         const char *workload, uint32_t i);
uint32_t hc_workload_port_count(const hc_context_t *ctx, const char *workload,
                                int output);
const hc_port_spec_t *hc_workload_port(const hc_context_t *ctx,
                                       const char *workload, int output,
                                       uint32_t i);
/* Can workload run on device index? 1 yes, 0 no with *why (owned by the
 * calling thread, valid until its next call of this function) — "no kernel
 * in a language the device accepts". */
int hc_workload_can_run(hc_context_t *ctx, const char *workload,
                        uint32_t device_index, const char **why);

/* ---------------------------------------------------------------- timing */

/* Monotonic clock in seconds. */
double hc_now(void);

/* ------------------------------------------------------------------ host */

/* The cores the calling thread may run on (its CPU affinity, which a
 * launcher, a batch system's cpuset or taskset may have narrowed), at
 * least 1: the cpu backend's default thread count. */
uint32_t hc_host_cores(void);

/* ------------------------------------------------------------ temporaries */

/* Files and directories that exist only while an operation runs (the grid
 * library's compile directory, say). Registered while they exist, so that
 * an interrupted process can remove them: a signal handler calls
 * hc_remove_temporaries(), which is async-signal-safe (unlink and rmdir
 * only), then exits. Register a directory before the files in it; removal
 * goes in reverse order. At most 64 are registered at once.
 *
 * hc_temp_register copies path and returns a slot (>= 0), or -1 when every
 * slot is taken or the path is too long (the temporary then simply is not
 * cleaned on a signal). hc_temp_unregister(-1) does nothing. */
int hc_temp_register(const char *path);
void hc_temp_unregister(int slot);
void hc_remove_temporaries(void);

#ifdef __cplusplus
}
#endif
#endif
