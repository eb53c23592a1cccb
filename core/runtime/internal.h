/* hc core — internal structures shared by the core's modules. Nothing here
 * is part of the ABI. */
#ifndef HC_CORE_INTERNAL_H
#define HC_CORE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#include "hc/hc.h"
#include "hc/plugin.h"
#include "layer.h"

/* A loaded plugin file. */
typedef struct hc__plugin {
  char *path;
  void *handle; /* lt_dlhandle */
  const hc_plugin_descriptor_t *desc;
} hc__plugin_t;

typedef struct hc__backend {
  hc__plugin_t plugin;
  hc_backend_ops_t ops; /* copy, zero-extended to the core's size */
  void *state;
  uint32_t ndevices;
  /* Backends start when first needed (context.c, hc__backend_start): 0 not
   * yet, 1 started, -1 its init failed (failed_why says how). Written
   * under hc__plugins_lock; read after it (atomic). */
  int started;
  char *failed_why;
} hc__backend_t;

/* The most devices one backend shows. */
#define HC__BACKEND_MAX_DEVICES 64u

typedef struct hc__workload {
  hc__plugin_t plugin;
  hc_workload_ops_t ops; /* copy, zero-extended */
} hc__workload_t;

typedef struct hc__rejected {
  char *path;
  char *reason;
} hc__rejected_t;

/* A cached program on an open device, shared by the kernels built from it. */
typedef struct hc__program {
  char key[33];
  hc_language_t lang;
  void *handle;
  int refs;
  struct hc__program *next;
} hc__program_t;

struct hc_device {
  hc_context_t *ctx;
  hc__backend_t *backend;
  uint32_t index;       /* in the context */
  uint32_t local_index; /* in the backend */
  int refs;
  void *handle;          /* backend's */
  hc_device_info_t info; /* compute_units: the threads it runs on (hc__device_set_workers) */
  uint32_t all_units;    /* the backend's compute_units, once changed */
  char id[48];
  pthread_mutex_t lock;     /* program cache */
  pthread_mutex_t run_lock; /* recursive: hc_device_lock, held by job runs */
  hc__program_t *programs;
  /* Device timer span: 0 none; 1 begun, no command yet; 2 the backend's
   * span is open (hc__timer_mark). The span belongs to the thread that
   * began it: another thread's command does not open it. cmd_lock is held
   * across each command (and the timer calls), so the backend's span state
   * (OpenCL's first event) is never touched by two threads at once. */
  int timer;
  uint32_t timer_spans; /* hc_device_timer_begin calls (atomic): a split part's figures count from the last */
  double timer_t0;      /* hc_now() at hc_device_timer_begin, for traces */
  pthread_t timer_owner;
  pthread_mutex_t cmd_lock;
  /* The launches seen (build_time.c): an open-addressing set of their
   * identities, under cmd_lock; NULL until the first source kernel runs. */
  uint64_t *launched;
  uint32_t nlaunched;
  /* Freed host buffers kept for a new buffer of their size (host_pin.c),
   * under lock; read at open: HC_HOST_PIN_AFTER, HC_HOST_CACHE. */
  hc_buffer_t *kept; /* oldest first, linked by kept_next */
  size_t kept_bytes, keep_limit;
  unsigned pin_after;
};
#define HC__LAUNCHED_SLOTS 1024u

typedef struct hc__device_slot {
  hc__backend_t *backend;
  uint32_t local_index;
  char id[48];
  hc_device_info_t info;
  char pci_bus_id[32]; /* the backend's device_pci_bus_id, or "" */
  hc_device_t *open;   /* NULL until opened */
} hc__device_slot_t;

struct hc_context {
  hc_log_fn log;
  void *log_user;
  hc_log_level_t log_level;
  hc_progress_fn progress;
  void *progress_user;

  char **search_dirs;
  const char **search_sources; /* where each entry came from (static text) */
  char **search_refused;       /* why an entry is not searched, or NULL */
  uint32_t nsearch_dirs;

  hc__backend_t *backends;
  uint32_t nbackends;
  hc__workload_t *workloads;
  uint32_t nworkloads;
  hc__rejected_t *rejected;
  uint32_t nrejected;
  /* Devices, numbered in the order their backends started: room for every
   * backend's HC__BACKEND_MAX_DEVICES, so slots never move; ndevices is
   * published (atomic, release) after a backend's slots are filled, and
   * read with hc__ndevices. */
  hc__device_slot_t *devices;
  uint32_t ndevices;
  int all_started; /* atomic: every backend has started (or failed) */

  pthread_mutex_t lock; /* devices, transfer stats */
  hc_transfer_stats_t transfers;
  uint64_t live_buffers; /* atomic: buffers created, not yet destroyed */
  /* Tracing (trace.c): the running trace or NULL (atomic), its holders,
   * and the usage the last stopped one left. */
  struct hc__trace *trace;
  uint64_t trace_users;
  struct hc__trace_result *trace_result;
};

/* Backends start when first needed: by name (a device spec naming it, its
 * status), or all of them in load order for whatever enumerates devices.
 * The context is logically const for the caller: starting is a cache. */
void hc__backend_start(const hc_context_t *ctx, hc__backend_t *be);
/* The process-wide lock of plugin loading and backend starts (loader.c). */
void hc__plugins_lock(void);
void hc__plugins_unlock(void);
void hc__backends_start_all(const hc_context_t *ctx);
static inline uint32_t hc__ndevices(const hc_context_t *ctx) {
  return __atomic_load_n(&ctx->ndevices, __ATOMIC_ACQUIRE);
}

struct hc_buffer {
  hc_device_t *dev;
  void *mem;
  size_t size;
  int wrapped; /* caller-owned memory (hc_buffer_wrap): never mem_free'd */
  /* Host memory handed over to devices of their own memory (host_pin.c). */
  unsigned handovers;
  hc_device_t *pinned_by; /* the device that page-locked it (retained), or NULL */
  int pin_refused;        /* the backend refused to page-lock it: not asked again */
  hc_buffer_t *kept_next; /* destroyed and kept: the next kept buffer of its device */
};

struct hc_kernel {
  hc_device_t *dev;
  char name[64]; /* the desc's, for traces */
  hc_language_t lang;
  void *handle;
  hc__program_t *program; /* NULL for host kernels */
};

/* Kernel build time (build_time.c): what the job the calling thread runs
 * spent building kernels. */
typedef struct hc__build_clock {
  double total_s;        /* program builds and first launches */
  double first_launch_s; /* of which at first launches */
  double in_span_s;      /* of which inside the thread's device timer span:
                            not part of the job's compute time */
} hc__build_clock_t;
/* Makes clock the calling thread's (NULL: none); returns the previous. */
hc__build_clock_t *hc__build_clock_swap(hc__build_clock_t *clock);
/* Charges a program build of `seconds` on d to the calling thread's job. */
void hc__build_charge(hc_device_t *d, double seconds);
/* With d's cmd_lock held (hc__cmd_begin): queues the launch; the first
 * launch of each (kernel, range, group) is waited for, and its time
 * beyond the kernel's device time is charged as build time. */
hc_status_t hc__launch_measured(hc_kernel_t *k, const hc_launch_t *l);
/* The language source kernels are built in on a device accepting
 * `languages` (HC_LANG_BIT set): CUDA C where accepted, else OpenCL C;
 * HC_LANG_COUNT_ when neither (kernel.c). */
hc_language_t hc__source_language(uint32_t languages);

struct hc_field {
  hc_device_t *dev;
  hc_buffer_t *buf;
  /* A split run's gathered output whose rows are still with its parts
   * (hc__field_of_pieces): buf is allocated, and takes the pieces' rows
   * on first use (field.c settle), unless a split run's parts take theirs
   * from the pieces first. */
  struct hc__field_pieces *pieces;
  hc_dtype_t dtype;
  uint32_t rank;
  int64_t shape[HC_MAX_DIMS];
  double spacing[HC_MAX_DIMS];
  double origin[HC_MAX_DIMS];
  char name[64];
};

/* A device timer span, begun at t0 on the host clock and measured as
 * seconds by the device: a span on the host track (trace.c). */
void hc__trace_timer(hc_device_t *d, double t0, double seconds);
/* The one test of a device command when tracing is off (trace.c). */
#define HC__TRACING(ctx) (__atomic_load_n(&(ctx)->trace, __ATOMIC_RELAXED) != NULL)

/* --- internal functions --- */
/* Buffers and kernels hold a reference on their device, so a device closed
 * by its opener stays alive until the last of them is destroyed. */
void hc__device_retain(hc_device_t *d);
/* A field over an existing buffer, which it then owns. */
hc_status_t hc__field_over(hc_buffer_t *buf, hc_dtype_t dtype, uint32_t rank, const int64_t *shape, hc_field_t **out);
void hc__vformat_error(hc_status_t status, const char *fmt, va_list ap);
hc__workload_t *hc__find_workload(const hc_context_t *ctx, const char *name);
/* Called before every command queued on d (launches, transfers, fills):
 * the first one of an open span begins the backend's span, so that a span
 * is the device's work from its first command to its last, on every
 * backend, without the host's time before that command. */
hc_status_t hc__timer_mark(hc_device_t *d);
/* A command on d: takes d's command lock and opens the calling thread's
 * span if it has one waiting (hc__cmd_end releases the lock). On failure
 * the lock is not held. */
hc_status_t hc__cmd_begin(hc_device_t *d);
void hc__cmd_end(hc_device_t *d);

void hc__count_transfer(hc_context_t *ctx, int kind, size_t bytes, double seconds);

/* Host buffers that keep being handed over (host_pin.c). hc__handover
 * counts a hand-over between host-addressable `host` and `other`, whose
 * memory is its own, with both devices' command locks held; at the
 * HC_HOST_PIN_AFTER-th it asks other's backend to page-lock host's memory.
 * hc__kept_take gives back a destroyed buffer of d of `bytes` that was
 * kept (NULL: none); hc__kept_put keeps a destroyed buffer (1) or does
 * nothing (0); hc__buffer_free frees one's memory, page-locked or not,
 * and the buffer; hc__kept_flush frees every kept buffer of d (before d
 * closes). */
void hc__handover(hc_buffer_t *host, hc_device_t *other);
hc_buffer_t *hc__kept_take(hc_device_t *d, size_t bytes);
int hc__kept_put(hc_buffer_t *b);
void hc__buffer_free(hc_buffer_t *b);
void hc__kept_flush(hc_device_t *d);
void hc__host_pin_config(hc_device_t *d);
enum { HC__TO_DEVICE, HC__TO_HOST, HC__CROSS_DEVICE };

/* Loader: fills ctx->backends/workloads/rejected from ctx->search_dirs. */
void hc__load_plugins(hc_context_t *ctx);
/* Validates a descriptor found in a plugin file (descriptor.h) and adds the
 * plugin, or records why not. handle (an lt_dlhandle, may be NULL) is
 * closed when the plugin is refused. */
void hc__register_plugin(hc_context_t *ctx, const char *path, void *handle, const hc_plugin_descriptor_t *d);
void hc__unload_plugins(hc_context_t *ctx);
/* Records a file or directory on the search path that was not used. */
void hc__reject(hc_context_t *ctx, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The cache directory ($HC_CACHE_DIR, $XDG_CACHE_HOME/hc, ~/.cache/hc);
 * 0 when none can be named. mkdir -p: 0 on success. */
int hc__cache_dir(char *out, size_t n);
/* Trusted paths (trust.c): owned by this user or root, not writable by
 * group or others. Each fills why with a message naming the path. */
struct stat;
int hc__stat_trusted(const struct stat *st, const char *path, char *why, size_t n);
/* 1 when path is such a directory; follow=0 refuses a symbolic link. */
int hc__dir_trusted(const char *path, int follow, char *why, size_t n);
/* Creates path and missing parents 0700; 0 when it ends up trusted. */
int hc__mkdir_private(const char *path, char *why, size_t n);
/* Opens a regular file without following a final symbolic link: the fd,
 * -1 when it cannot be opened (errno set: ENOENT is a miss), -2 refused. */
int hc__open_trusted(const char *path, char *why, size_t n);

/* Probes a plugin file in a separate process (hc-plugin-scanner) unless a
 * remembered verdict for it still holds (probe.c). Returns 1 when it may be
 * loaded in-process, 0 with *reason filled when it crashed, hung or exited
 * while probed, 2 when the probe could not be run (hc_last_error says why):
 * the loader then starts no backend from the file. */
int hc__probe_plugin(hc_context_t *ctx, const char *path, char *reason, size_t n);

/* The dialect prelude for a language (static text). */
const char *hc__dialect_prelude(hc_language_t lang);

/* String helpers. */
char *hc__strdup(const char *s);
char *hc__strndup(const char *s, size_t n);
/* Appends to a growable string; returns 0 on allocation failure. */
int hc__append(char **buf, size_t *len, size_t *cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
