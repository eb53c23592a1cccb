/* hc — the plugin-author API.
 *
 * A plugin is a shared object that exports one symbol, HC_PLUGIN_SYMBOL, a
 * const hc_plugin_descriptor_t. It is compiled against the public headers
 * only and linked with libhc (pkg-config hc), whose embedding API it uses.
 *
 * ABI rules: the core accepts abi_major == HC_ABI_MAJOR and abi_minor <=
 * HC_ABI_MINOR. Every ops table and spec array carries its own size; the
 * core reads only the members that size covers, so tables grow by appending
 * and an old plugin keeps working with a newer core. The one rule for every
 * table: its size must be at least ABI 1.0's (HC_*_SIZE_1_0 below), and
 * members past the size a plugin was built with count as NULL (absent).
 * tests/unit/test_abi.c pins every size and offset; tests/plugins/abi10_*.c
 * are plugins with ABI 1.0's sizes that must keep loading. */
#ifndef HC_PLUGIN_H
#define HC_PLUGIN_H

#include "hc/hc.h"
#include "hc/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HC_PLUGIN_SYMBOL "hc_plugin_descriptor"
#if defined(__GNUC__)
#define HC_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define HC_PLUGIN_EXPORT
#endif
/* Declares the descriptor with the right name and visibility:
 *   HC_PLUGIN_DESCRIPTOR = { HC_ABI_MAJOR, HC_ABI_MINOR, ... }; */
#define HC_PLUGIN_DESCRIPTOR \
  HC_PLUGIN_EXPORT const hc_plugin_descriptor_t hc_plugin_descriptor

typedef struct hc_plugin_descriptor {
  uint32_t abi_major;
  uint32_t abi_minor;
  uint32_t kind; /* hc_plugin_kind_t */
  uint32_t reserved_;
  const char *name; /* [a-z0-9_-]+, unique per kind */
  const char *version;
  const char *summary; /* one line */
  const void *ops;     /* hc_backend_ops_t* or hc_workload_ops_t* */
} hc_plugin_descriptor_t;

/* Sets the thread's last-error message and returns status (for plugins and
 * the core alike): return hc_error(HC_ERR_PARAM, "n=%d: must be >= 3", n); */
hc_status_t hc_error(hc_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prefixes the current last-error message ("while building simpson: ..."). */
hc_status_t hc_error_prefix(hc_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ================================================================ backends */

/* One kernel argument as the backend sees it. */
typedef struct hc_launch_arg {
  uint32_t kind;     /* hc_arg_kind_t */
  uint32_t size;     /* scalar bytes */
  const void *value; /* scalar: pointer to the value */
  void *mem;         /* buffer: the backend's memory handle */
} hc_launch_arg_t;

typedef struct hc_launch {
  uint32_t size;    /* sizeof(hc_launch_t) */
  uint32_t dims;    /* 1..3 */
  size_t global[3]; /* items per axis, axis 0 fastest */
  size_t local[3];  /* group size per axis; all 0: the backend chooses */
  uint32_t nargs;
  const hc_launch_arg_t *args;
} hc_launch_t;

/* A backend's operations. void *state is what init returned; void *dev is
 * what device_open returned. Required unless marked optional.
 *
 * Threads. The core calls:
 *   - init, device_count, device_info, status_message while the context is
 *     created, and fini while it is destroyed: one thread, nothing else of
 *     the backend running;
 *   - device_open under the context's lock (one at a time per context), and
 *     device_close when the device's last reference closes; several
 *     contexts may each hold a state of the backend at once, so a
 *     backend's process-wide resources need their own lock;
 *   - every op taking a dev from whichever thread uses the device, never two
 *     at once on the same dev (the core serialises jobs per device; callers
 *     of the raw API bracket shared use with hc_device_lock), and at the
 *     same time on different devs: a backend's ops on two devices must not
 *     share unlocked state. peer_copy holds both devices.
 *   - the log callback through hc_log from any of these.
 * Ownership on failure. An op that returns an error has created nothing the
 * core must release: *state, *dev, *mem, *program or *kernel is left unset
 * and anything partly made is freed by the op. Arguments the core passes
 * stay the core's (the op never frees mem, program or kernel handles it
 * was given, nor keeps pointers to `source`, `options`, `launch` or host
 * data past its return unless it copied them). On an error the op sets the
 * detail with hc_error (which returns the status), e.g. the build log. The
 * release ops (fini, device_close, mem_free, program_release,
 * kernel_release, mem_unwrap) cannot fail and are called once per handle
 * a successful create gave. */
typedef struct hc_backend_ops {
  uint32_t size; /* sizeof(hc_backend_ops_t) as the plugin was compiled */

  /* Must succeed on a machine without devices (report 0 and say why);
   * an error here rejects the plugin with the message. */
  hc_status_t (*init)(hc_context_t *ctx, void **state);
  void (*fini)(void *state);
  uint32_t (*device_count)(void *state);
  /* Why there are no devices ("no CUDA driver found"); optional. The text
   * is the backend's, valid until fini. */
  const char *(*status_message)(void *state);
  /* Fills *info (info->size set by the core); index < device_count. */
  hc_status_t (*device_info)(void *state, uint32_t index,
                             hc_device_info_t *info);
  /* Opens a device once per context (the core counts further opens). */
  hc_status_t (*device_open)(void *state, uint32_t index, void **dev);
  /* After the core released the device's programs (buffers or kernels a
   * caller leaked are never used again). */
  void (*device_close)(void *dev);

  /* Memory: *mem is the backend's handle; bytes > 0. write and read are
   * synchronous for the host's data (it may be reused on return); copy and
   * fill may be queued (ordered with launches, complete by finish). */
  hc_status_t (*mem_alloc)(void *dev, size_t bytes, void **mem);
  void (*mem_free)(void *dev, void *mem);
  hc_status_t (*mem_write)(void *dev, void *mem, size_t offset, const void *src,
                           size_t bytes);
  hc_status_t (*mem_read)(void *dev, void *mem, size_t offset, void *dst,
                          size_t bytes);
  hc_status_t (*mem_copy)(void *dev, void *dst, size_t dst_offset, void *src,
                          size_t src_offset, size_t bytes);
  hc_status_t (*mem_fill)(void *dev, void *mem, size_t offset,
                          const void *pattern, size_t pattern_size,
                          size_t bytes);
  /* The host address of mem when the device shares host memory (cpu),
   * else NULL; optional. */
  void *(*mem_host_ptr)(void *dev, void *mem);

  /* Source kernels (languages other than host): the core passes the full
   * text, prelude included. Backends cache binaries on disk (hc_cache_*). */
  hc_status_t (*program_build)(void *dev, hc_language_t lang,
                               const char *source, const char *options,
                               void **program);      /* optional */
  void (*program_release)(void *dev, void *program); /* optional */
  hc_status_t (*kernel_create)(void *dev, void *program, const char *name,
                               void **kernel); /* optional */
  hc_status_t (*kernel_create_host)(void *dev, hc_host_kernel_fn fn,
                                    void **kernel); /* optional */
  void (*kernel_release)(void *dev, void *kernel);
  size_t (*kernel_max_group_size)(void *dev, void *kernel); /* optional */
  /* Queues (or runs) the kernel; the arguments' values are copied before
   * it returns. */
  hc_status_t (*launch)(void *dev, void *kernel, const hc_launch_t *launch);

  /* Waits for everything queued on dev; reports a queued command's error. */
  hc_status_t (*finish)(void *dev);
  /* called by the core just before the span's first command, and
   * timer_end only for a span that got one (core/runtime/device.c) */
  hc_status_t (*timer_begin)(void *dev);
  hc_status_t (*timer_end)(void *dev, double *seconds);

  /* Copy between two devices of this backend; optional (the core falls
   * back to staging through the host). */
  hc_status_t (*peer_copy)(void *dst_dev, void *dst, size_t dst_offset,
                           void *src_dev, void *src, size_t src_offset,
                           size_t bytes);
  /* ABI 1.1. Native memory (optional): mem_native describes mem in the
   * device API's terms (hc_buffer_native); mem_wrap makes a mem handle
   * over memory the caller allocated (hc_buffer_wrap), which the core
   * never passes to mem_free: it calls mem_unwrap (optional) instead. */
  hc_status_t (*mem_native)(void *dev, void *mem, hc_native_mem_t *out);
  hc_status_t (*mem_wrap)(void *dev, const hc_native_mem_t *native,
                          size_t bytes, void **mem);
  void (*mem_unwrap)(void *dev, void *mem);
  /* ABI 1.2. Timelines (hc/trace.h), all optional. Without the three
   * trace_command members the core waits for each traced command and
   * times it on the host. trace_command_begin is called just before a
   * command is queued and returns a record of it (NULL: none), which
   * trace_command_end completes just after; trace_time waits for the
   * command, gives the device's own start and end mapped onto the hc_now()
   * clock in seconds, and releases the record; trace_discard releases one
   * without waiting (the command failed to queue). A start of 0: the
   * device timed only the end, and the core starts the command when the
   * call that queued it returned or when the device's command before it
   * ended, whichever is later (an in-order queue). */
  void *(*trace_command_begin)(void *dev);
  void (*trace_command_end)(void *dev, void *record);
  hc_status_t (*trace_time)(void *dev, void *record, double *start,
                            double *end);
  void (*trace_discard)(void *dev, void *record);
  /* A named range around the core's jobs and stages, for a profiler
   * attached to the process (the cuda backend: NVTX); called whether
   * tracing is on or not, so it must cost next to nothing when no
   * profiler is attached. The state is init's. */
  void (*range_push)(void *state, const char *name);
  void (*range_pop)(void *state);
  /* ABI 1.3. Page-locked host memory that dev's transfers move at full
   * speed (the partition layer stages halo rows in it: hc_host_alloc);
   * optional, the core falls back to ordinary memory. host_free releases
   * what host_alloc gave. Any thread. */
  hc_status_t (*host_alloc)(void *dev, size_t bytes, void **ptr);
  void (*host_free)(void *dev, void *ptr);
  /* ABI 1.4. The PCI address of device `index` (optional): "0000:1b:00.0"
   * (domain:bus:device.function, lower case) into out (n bytes), or
   * HC_ERR_NOT_FOUND where the backend cannot tell (the host's cores).
   * Two backends that show one GPU give the same address, so that the set
   * "all" takes it once (hc_device_pci_bus_id). */
  hc_status_t (*device_pci_bus_id)(void *state, uint32_t index, char *out,
                                   size_t n);
  /* ABI 1.5. The most of dev's own threads that its commands use from now
   * on (0: all it has); optional. The partition layer calls it while dev
   * is idle, to leave a core to each thread that drives an accelerator's
   * part of a split run (HC_SPLIT_DRIVER_CORES), and restores it after. */
  hc_status_t (*device_set_workers)(void *dev, uint32_t workers);
  /* ABI 1.6. The calling thread drives dev's commands for a while (a
   * part's thread in a split run): keep it where dev wants its launching
   * thread (bind 1: the cpu backend's pinned devices leave it a core of
   * their own), and give it back what it had (bind 0, from the same
   * thread). Optional; HC_ERR_UNSUPPORTED (no message) where there is
   * nothing to do. */
  hc_status_t (*device_bind_thread)(void *dev, int bind);
  /* ABI 1.7. Page-locks host memory that the core allocated elsewhere (a
   * cpu buffer that keeps being handed over to dev), so that dev's
   * transfers to and from it run at host_alloc memory's speed;
   * host_unregister undoes it before the memory is freed. Optional (both
   * or neither); any thread, while no transfer of dev uses the memory. */
  hc_status_t (*host_register)(void *dev, void *ptr, size_t bytes);
  void (*host_unregister)(void *dev, void *ptr);
} hc_backend_ops_t;

/* ABI 1.0's sizes of the ops tables and spec entries: the smallest sizes
 * the core accepts (one rule for every table; descriptor.c). Each is the
 * end of the last member ABI 1.0 defined. */
#define HC_BACKEND_OPS_SIZE_1_0 offsetof(hc_backend_ops_t, mem_native)

/* ================================================================ cache */

/* The on-disk kernel cache shared by the backends: $HC_CACHE_DIR, else
 * $XDG_CACHE_HOME/hc, else ~/.cache/hc; HC_CACHE=0 disables it. Entries are
 * keyed by a hash of the key parts, carry a checksum and their length, are
 * written atomically (temporary file + rename) and are never trusted when
 * they do not verify (a corrupt entry is removed and reported as a miss). */
int hc_cache_enabled(void);
/* Hash of several NUL-terminated strings and blobs, as 32 hex chars. */
void hc_cache_key(char out[33], uint32_t nparts, const void *const *parts,
                  const size_t *sizes);
/* Loads an entry: HC_OK with *data (malloc'd, caller frees),
 * HC_ERR_NOT_FOUND (absent, disabled, or corrupt), or HC_ERR_IO when the
 * cache is refused (a folder or entry another user owns or may write, a
 * symbolic link below the cache root; the message names the path): the
 * caller logs it as a warning and goes on without the cache. A store
 * returns the same HC_ERR_IO for a refused cache. */
hc_status_t hc_cache_load(const char *kind, const char *key, void **data,
                          size_t *size);
hc_status_t hc_cache_store(const char *kind, const char *key, const void *data,
                           size_t size);
/* Writes a file atomically: temporary file in the same directory, fsync,
 * rename. Nothing is left behind on failure. */
hc_status_t hc_write_file_atomic(const char *path, const void *data,
                                 size_t size);

/* ========================================================= helper programs */

/* Runs a helper program that may crash or hang (a probe, a check) as a
 * child: argv[0] is its path; envp its environment (NULL: this process's);
 * in a process group of its own, with stdin, stdout and stderr on
 * /dev/null except descriptor report_fd (1 to 9), a pipe whose bytes
 * arrive in *report (NUL-terminated, malloc'd, caller frees; NULL when
 * nothing came). After limit_s seconds the whole group is killed and
 * *timed_out is 1. *status is waitpid's. HC_OK once the child ended (or
 * was killed), an error when it could not be started or waited for. */
hc_status_t hc_run_helper(char *const argv[], char *const envp[], int report_fd,
                          double limit_s, char **report, int *status,
                          int *timed_out);

/* ================================================================ workloads */

typedef struct hc_param_spec {
  const char *name;
  uint32_t type; /* hc_param_type_t */
  uint32_t reserved_;
  const char *def;     /* default as text; NULL: no default (optional) */
  double min, max;     /* allowed range (INT, FLOAT, SHAPE extents, VEC
                          items); min > max: unbounded */
  const char *choices; /* ENUM: "a|b|c" */
  const char *help;
} hc_param_spec_t;

#define HC_PORT_OPTIONAL 1u
#define HC_PORT_PRIMARY 2u /* the port '|' binds in a pipeline */

typedef struct hc_port_spec {
  const char *name;
  uint32_t dtypes;  /* HC_DTYPE_BIT set */
  int32_t rank_min; /* 0..4 */
  int32_t rank_max;
  uint32_t flags; /* HC_PORT_* */
  const char *help;
} hc_port_spec_t;

typedef struct hc_workload_ops {
  uint32_t size;            /* sizeof(hc_workload_ops_t) */
  uint32_t languages;       /* HC_LANG_BIT set of the kernels it offers */
  uint32_t param_spec_size; /* sizeof(hc_param_spec_t) */
  uint32_t nparams;
  const hc_param_spec_t *params;
  uint32_t port_spec_size; /* sizeof(hc_port_spec_t) */
  uint32_t ninputs;
  const hc_port_spec_t *inputs;
  uint32_t noutputs;
  const hc_port_spec_t *outputs;
  /* Optional: can this configured job run on the device? 0 yes, else
   * fills why (e.g. "needs fp64"). */
  int (*check)(const hc_job_t *job, const hc_device_info_t *device, char *why,
               size_t why_size);
  /* Optional: dtype and rank an output will have with these parameters
   * (pipeline validation before anything runs). */
  hc_status_t (*describe_output)(const hc_job_t *job, const char *port,
                                 hc_dtype_t *dtype, uint32_t *rank);
  /* Runs the job on hc_job_device(job). */
  hc_status_t (*run)(hc_job_t *job);
  /* ABI 1.2. How the configured job splits over a device set (optional;
   * absent or kind HC_SPLIT_NONE: it runs whole on the set's first device).
   * The core sets split->size and zeroes the rest first. A split job's
   * run() sees its part through hc_job_part (include/hc/partition.h). */
  hc_status_t (*split)(const hc_job_t *job, hc_split_t *split);
} hc_workload_ops_t;

#define HC_WORKLOAD_OPS_SIZE_1_0 \
  (offsetof(hc_workload_ops_t, run) + sizeof(void (*)(void)))
#define HC_PARAM_SPEC_SIZE_1_0 \
  (offsetof(hc_param_spec_t, help) + sizeof(const char *))
#define HC_PORT_SPEC_SIZE_1_0 \
  (offsetof(hc_port_spec_t, help) + sizeof(const char *))

/* The schema fields of a hc_workload_ops_t initializer from static arrays
 * (counts from the arrays themselves, so they cannot disagree):
 *   static const hc_workload_ops_t ops = {
 *       .size = sizeof(hc_workload_ops_t), .languages = ...,
 *       HC_WORKLOAD_PARAMS(params), HC_WORKLOAD_PORTS(inputs, outputs),
 *       .run = my_run};
 * HC_WORKLOAD_OUTPUTS(outputs) for a workload without inputs. */
#define HC_ARRAY_COUNT_(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))
#define HC_WORKLOAD_PARAMS(P)                                                \
  .param_spec_size = sizeof(hc_param_spec_t), .nparams = HC_ARRAY_COUNT_(P), \
  .params = (P)
#define HC_WORKLOAD_OUTPUTS(O)                                              \
  .port_spec_size = sizeof(hc_port_spec_t), .noutputs = HC_ARRAY_COUNT_(O), \
  .outputs = (O)
#define HC_WORKLOAD_PORTS(I, O) \
  HC_WORKLOAD_OUTPUTS(O), .ninputs = HC_ARRAY_COUNT_(I), .inputs = (I)

/* ---- what a workload's run() calls ---- */
hc_device_t *hc_job_device(const hc_job_t *job);
hc_context_t *hc_job_context(const hc_job_t *job);
/* Parameter values (validated; defaults applied). Asking for a name that
 * is not in the schema, or as another type, is a bug of the workload: the
 * getter returns 0 / "" / empty and sets the thread's last error
 * (HC_ERR_PARAM), and the job records it, so that hc_job_run fails with a
 * message naming the parameter even when run() returns HC_OK. INT reads as
 * FLOAT and ENUM as STRING. */
int64_t hc_job_int(const hc_job_t *job, const char *name);
double hc_job_float(const hc_job_t *job, const char *name);
int hc_job_bool(const hc_job_t *job, const char *name);
const char *hc_job_string(const hc_job_t *job, const char *name);
hc_shape_t hc_job_shape(const hc_job_t *job, const char *name);
hc_vec_t hc_job_vec(const hc_job_t *job, const char *name);
/* 1 when the user gave the parameter (not the default). */
int hc_job_given(const hc_job_t *job, const char *name);
/* Says that a parameter does not apply to this run (the shape of a built-in
 * function when the samples come from a bound field), so that reports leave
 * it out rather than show a default that was not used. Cleared when the
 * next run starts; an unknown name is ignored. */
void hc_job_param_unused(hc_job_t *job, const char *name);
/* Bound input field or NULL. */
hc_field_t *hc_job_input(const hc_job_t *job, const char *port);
/* Dtype and rank of an input: the bound field's, or, while a pipeline is
 * being validated (it calls describe_output and check then, before any
 * field exists), those the stage bound to it will give. HC_ERR_NOT_FOUND
 * when neither is known. (core/pipeline/pipeline_validate.c) */
hc_status_t hc_job_input_info(const hc_job_t *job, const char *port,
                              hc_dtype_t *dtype, uint32_t *rank);
/* For an input the workload cannot use unless finite (status.h, "Non-finite
 * values"): HC_OK when f is NULL or finite, else HC_ERR_PARAM naming the
 * port, the first bad element's index and value. Reads f back to the host:
 * call it where a cheap check (a norm that came out non-finite) failed, or
 * on host data anyway. */
hc_status_t hc_job_check_finite(hc_job_t *job, const char *port,
                                const hc_field_t *f);
/* Hands an output to the job (the job owns it from now on). */
hc_status_t hc_job_set_output(hc_job_t *job, const char *port, hc_field_t *f);
hc_status_t hc_job_add_metric(hc_job_t *job, const char *name, double value,
                              const char *unit);
void hc_job_set_times(hc_job_t *job, double compute_s, double device_s);
int hc_job_verify_requested(const hc_job_t *job);
void hc_job_set_verified(hc_job_t *job, int passed, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void hc_job_note(hc_job_t *job, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Reports progress (throttled by the core; shown only on a terminal). */
void hc_job_progress(hc_job_t *job, double fraction, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Output directory for extra files, or NULL. */
const char *hc_job_output_dir(const hc_job_t *job);
/* The path of an extra file `name` (a plain name: "power.csv"):
 * DIR/<prefix>name, with the job's output prefix, and records it among the
 * files the run wrote (hc_job_file), so reports list it. HC_ERR_NOT_FOUND
 * when the job has no output directory (write nothing then). Every extra
 * file goes through here, never hc_job_output_dir by hand, so that pipeline
 * stages never overwrite each other's files. */
hc_status_t hc_job_output_file(hc_job_t *job, const char *name, char *path,
                               size_t size);

/* Refuses early when buffers of `bytes` in total would not fit the device:
 * HC_ERR_DEVICE_MEMORY naming what needed it, required and available. */
hc_status_t hc_device_check_memory(hc_device_t *dev, uint64_t bytes,
                                   const char *what);

#ifdef __cplusplus
}
#endif
#endif
