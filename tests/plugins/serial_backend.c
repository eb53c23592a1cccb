/* A test backend written as an outside author would: public headers only.
 * One device ("serial:0") that runs host-language kernels on the calling
 * thread, group after group. Memory is plain malloc'd host memory. It
 * proves that backends are drop-in, and every workload must run on it.
 *
 * With HC_TEST_SERIAL_TRACE_LATENCY_MS set when the device opens, traced
 * commands have a device clock that times only their end, like a GPU's
 * in-order queue whose commands each finish that long after they were
 * queued (the trace tests check where the core places them).
 *
 * HC_TEST_SERIAL_MEMORY (read when the device opens) makes its memory
 * stand in for a GPU's, for the tests of MPI and CUDA memory
 * (hc-mpi-cuda-check): "cuda" describes it as CUDA memory
 * (hc_buffer_native) and not as host memory, like a GPU's that an MPI
 * taking CUDA memory reads; "cuda-sealed" also keeps it unreadable to the
 * host outside this backend's own calls, like a GPU's to an MPI that does
 * not (reading it crashes). Such memory can also have the core's host
 * buffers page-locked for it (host_register): the ranges are only
 * recorded, checked (no range twice, none unlocked that is not locked)
 * and logged at debug level, for the tests of hand-overs. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS under -std=c11 */
#endif
#include <hc/plugin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The device type it declares; the ranking test builds it as OTHER. */
#ifndef SERIAL_DEVICE_TYPE
#define SERIAL_DEVICE_TYPE HC_DEVICE_CPU
#endif

typedef struct {
  hc_context_t *ctx;
  double t0;
  double trace_latency; /* seconds; 0: no device clock for traces */
  int cuda, sealed;     /* HC_TEST_SERIAL_MEMORY */
} serial_dev_t;

static hc_status_t s_init(hc_context_t *ctx, void **state) {
  *state = ctx;
  return HC_OK;
}
static void s_fini(void *state) { (void)state; }
static uint32_t s_count(void *state) {
  (void)state;
  return 1;
}

static hc_status_t s_info(void *state, uint32_t index, hc_device_info_t *in) {
  (void)state;
  (void)index;
  memset(in, 0, sizeof *in);
  in->size = sizeof *in;
  in->type = SERIAL_DEVICE_TYPE;
  strcpy(in->name, "serial test device");
  strcpy(in->vendor, "hc tests");
  strcpy(in->platform, "serial");
  in->languages = HC_LANG_BIT(HC_LANG_HOST);
  in->compute_units = 1;
  in->fp64 = 1;
  in->max_work_group_size = 1u << 30;
  in->preferred_group_multiple = 1;
  in->global_mem_bytes = 4ull << 30;
  in->max_alloc_bytes = 4ull << 30;
  in->local_mem_bytes = 32768;
  return HC_OK;
}

static hc_status_t s_open(void *state, uint32_t index, void **dev) {
  (void)index;
  serial_dev_t *d = calloc(1, sizeof *d);
  if (!d) return hc_error(HC_ERR_NO_MEMORY, "serial: out of memory");
  d->ctx = state;
  const char *latency = getenv("HC_TEST_SERIAL_TRACE_LATENCY_MS");
  if (latency) d->trace_latency = atof(latency) * 1e-3;
  const char *memory = getenv("HC_TEST_SERIAL_MEMORY");
  d->sealed = memory && !strcmp(memory, "cuda-sealed");
  d->cuda = d->sealed || (memory && !strcmp(memory, "cuda"));
  *dev = d;
  return HC_OK;
}
static void s_close(void *dev) { free(dev); }

/* Sealed memory: whole pages after a page that holds their length. */
static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }
static size_t *sealed_head(void *mem) { return (size_t *)((char *)mem - page_size()); }
static void seal(const serial_dev_t *d, void *mem, int open) {
  if (d->sealed) mprotect(mem, *sealed_head(mem), open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

static hc_status_t s_alloc(void *dev, size_t n, void **mem) {
  const serial_dev_t *d = dev;
  if (d->sealed) {
    const size_t page = page_size(), len = (n + page - 1) / page * page;
    char *base = mmap(NULL, page + len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return hc_error(HC_ERR_DEVICE_MEMORY, "serial: cannot map %zu bytes", n);
    *(size_t *)base = len;
    *mem = base + page;
    seal(d, *mem, 0);
    return HC_OK;
  }
  *mem = malloc(n);
  return *mem ? HC_OK : hc_error(HC_ERR_DEVICE_MEMORY, "serial: cannot allocate %zu bytes", n);
}
static void s_free(void *dev, void *mem) {
  if (((serial_dev_t *)dev)->sealed)
    munmap(sealed_head(mem), page_size() + *sealed_head(mem));
  else
    free(mem);
}
static hc_status_t s_write(void *dev, void *mem, size_t off, const void *src, size_t n) {
  seal(dev, mem, 1);
  memcpy((char *)mem + off, src, n);
  seal(dev, mem, 0);
  return HC_OK;
}
static hc_status_t s_read(void *dev, void *mem, size_t off, void *dst, size_t n) {
  seal(dev, mem, 1);
  memcpy(dst, (char *)mem + off, n);
  seal(dev, mem, 0);
  return HC_OK;
}
static hc_status_t s_copy(void *dev, void *dst, size_t doff, void *src, size_t soff, size_t n) {
  seal(dev, dst, 1);
  seal(dev, src, 1);
  memmove((char *)dst + doff, (char *)src + soff, n);
  seal(dev, src, 0);
  seal(dev, dst, 0);
  return HC_OK;
}
static hc_status_t s_fill(void *dev, void *mem, size_t off, const void *pat, size_t ps, size_t n) {
  seal(dev, mem, 1);
  for (size_t i = 0; i < n; i += ps) memcpy((char *)mem + off + i, pat, ps);
  seal(dev, mem, 0);
  return HC_OK;
}
static void *s_host_ptr(void *dev, void *mem) { return ((serial_dev_t *)dev)->cuda ? NULL : mem; }
#ifndef HC_TEST_ABI10
static hc_status_t s_native(void *dev, void *mem, hc_native_mem_t *out) {
  out->kind = ((serial_dev_t *)dev)->cuda ? HC_NATIVE_CUDA : HC_NATIVE_HOST;
  out->ptr = mem;
  out->ordinal = ((serial_dev_t *)dev)->cuda ? 0 : -1;
  return HC_OK;
}
#endif

#ifndef HC_TEST_ABI10
/* The host ranges page-locked for the device (host_register). */
#define SERIAL_MAX_LOCKED 64
static struct {
  const char *p;
  size_t n;
} locked[SERIAL_MAX_LOCKED];
static unsigned nlocked;
static pthread_mutex_t locked_mutex = PTHREAD_MUTEX_INITIALIZER;

static hc_status_t s_register(void *dev, void *ptr, size_t n) {
  const char *p = ptr;
  hc_status_t st = HC_OK;
  pthread_mutex_lock(&locked_mutex);
  for (unsigned i = 0; i < nlocked && st == HC_OK; i++)
    if (p < locked[i].p + locked[i].n && locked[i].p < p + n)
      st = hc_error(HC_ERR_INVALID_ARG, "serial: %zu bytes at %p overlap a page-locked range", n, ptr);
  if (st == HC_OK && nlocked == SERIAL_MAX_LOCKED) st = hc_error(HC_ERR_NO_MEMORY, "serial: too many locked ranges");
  if (st == HC_OK) {
    locked[nlocked].p = p;
    locked[nlocked++].n = n;
    hc_log(((serial_dev_t *)dev)->ctx, HC_LOG_DEBUG, "serial:0: page-locked %zu bytes at %p", n, ptr);
  }
  pthread_mutex_unlock(&locked_mutex);
  return st;
}

static void s_unregister(void *dev, void *ptr) {
  pthread_mutex_lock(&locked_mutex);
  unsigned i = 0;
  while (i < nlocked && locked[i].p != ptr) i++;
  if (i < nlocked) {
    locked[i] = locked[--nlocked];
    hc_log(((serial_dev_t *)dev)->ctx, HC_LOG_DEBUG, "serial:0: unlocked %p", ptr);
  } else {
    hc_log(((serial_dev_t *)dev)->ctx, HC_LOG_ERROR, "serial:0: unlocking %p, which is not page-locked", ptr);
  }
  pthread_mutex_unlock(&locked_mutex);
}
#endif

static hc_status_t s_kernel(void *dev, hc_host_kernel_fn fn, void **k) {
  (void)dev;
  hc_host_kernel_fn *p = malloc(sizeof *p);
  if (!p) return hc_error(HC_ERR_NO_MEMORY, "serial: out of memory");
  *p = fn;
  *k = p;
  return HC_OK;
}
static void s_kernel_release(void *dev, void *k) {
  (void)dev;
  free(k);
}

/* Groups: the launch's local size, or 64 items along the slowest axis. */
static hc_status_t s_launch(void *dev, void *kernel, const hc_launch_t *l) {
  hc_host_kernel_fn fn = *(hc_host_kernel_fn *)kernel;
  void *args[HC_MAX_KERNEL_ARGS];
  for (uint32_t i = 0; i < l->nargs; i++) {
    args[i] = l->args[i].kind == HC_ARG_KIND_BUFFER ? l->args[i].mem : (void *)l->args[i].value;
    if (l->args[i].kind == HC_ARG_KIND_BUFFER) seal(dev, args[i], 1);
  }
  size_t local[3];
  for (int d = 0; d < 3; d++) local[d] = l->local[0] ? l->local[d] : l->global[d];
  if (!l->local[0]) local[l->dims - 1] = 64;
  hc_host_group_t g;
  memset(&g, 0, sizeof g);
  g.dims = l->dims;
  g.num_workers = 1;
  for (int d = 0; d < 3; d++) {
    g.global[d] = l->global[d];
    g.num_groups[d] = (l->global[d] + local[d] - 1) / local[d];
  }
  for (size_t k = 0; k < g.num_groups[2]; k++)
    for (size_t j = 0; j < g.num_groups[1]; j++)
      for (size_t i = 0; i < g.num_groups[0]; i++) {
        size_t id[3] = {i, j, k};
        for (int d = 0; d < 3; d++) {
          g.group_id[d] = id[d];
          g.lo[d] = id[d] * local[d];
          g.hi[d] = g.lo[d] + local[d] < l->global[d] ? g.lo[d] + local[d] : l->global[d];
        }
        fn(&g, args);
      }
  for (uint32_t i = 0; i < l->nargs; i++)
    if (l->args[i].kind == HC_ARG_KIND_BUFFER) seal(dev, args[i], 0);
  return HC_OK;
}

static hc_status_t s_finish(void *dev) {
  (void)dev;
  return HC_OK;
}
static hc_status_t s_tbegin(void *dev) {
  ((serial_dev_t *)dev)->t0 = hc_now();
  return HC_OK;
}
static hc_status_t s_tend(void *dev, double *s) {
  *s = hc_now() - ((serial_dev_t *)dev)->t0;
  return HC_OK;
}

#ifndef HC_TEST_ABI10
/* The trace record: the command's end on the device clock. */
static void *s_trace_begin(void *dev) {
  return ((serial_dev_t *)dev)->trace_latency > 0 ? calloc(1, sizeof(double)) : NULL;
}
static void s_trace_end(void *dev, void *record) {
  *(double *)record = hc_now() + ((serial_dev_t *)dev)->trace_latency;
}
static hc_status_t s_trace_time(void *dev, void *record, double *start, double *end) {
  (void)dev;
  *start = 0; /* only the end is timed */
  *end = *(double *)record;
  free(record);
  return HC_OK;
}
static void s_trace_discard(void *dev, void *record) {
  (void)dev;
  free(record);
}
#endif

/* -DHC_TEST_ABI10: built as a backend of ABI 1.0 is (minor 0, the table's
 * 1.0 size: no native-memory ops), which every later core must load. */
#ifdef HC_TEST_ABI10
#define SERIAL_OPS_SIZE HC_BACKEND_OPS_SIZE_1_0
#define SERIAL_ABI_MINOR 0
#else
#define SERIAL_OPS_SIZE sizeof(hc_backend_ops_t)
#define SERIAL_ABI_MINOR HC_ABI_MINOR
#endif

static const hc_backend_ops_t serial_ops = {
    .size = SERIAL_OPS_SIZE,
    .init = s_init,
    .fini = s_fini,
    .device_count = s_count,
    .device_info = s_info,
    .device_open = s_open,
    .device_close = s_close,
    .mem_alloc = s_alloc,
    .mem_free = s_free,
    .mem_write = s_write,
    .mem_read = s_read,
    .mem_copy = s_copy,
    .mem_fill = s_fill,
    .mem_host_ptr = s_host_ptr,
    .kernel_create_host = s_kernel,
    .kernel_release = s_kernel_release,
    .launch = s_launch,
    .finish = s_finish,
    .timer_begin = s_tbegin,
    .timer_end = s_tend,
#ifndef HC_TEST_ABI10
    .mem_native = s_native,
    .trace_command_begin = s_trace_begin,
    .trace_command_end = s_trace_end,
    .trace_time = s_trace_time,
    .trace_discard = s_trace_discard,
    .host_register = s_register,
    .host_unregister = s_unregister,
#endif
};

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        SERIAL_ABI_MINOR,
                        HC_PLUGIN_BACKEND,
                        0,
                        "serial",
                        "1.0",
                        "test backend: host kernels run one group after another on the calling thread",
                        &serial_ops};
