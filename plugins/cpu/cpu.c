/* The cpu backend: the host, as one device (the default) or as several
 * over disjoint shares of its threads (HC_CPU_DEVICES=N: cpu:0..cpu:N-1,
 * so that a split run can be tested without a second device). Memory is
 * 64-byte aligned host memory; kernels are host-language C functions run on
 * a persistent thread pool (pool.c), one pool per opened device. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hc/plugin.h>

#include "copy.h"
#include "cpuinfo.h"
#include "pool.h"

#define CPU_MAX_DEVICES 64
#define CPU_MAX_THREADS 1024 /* HC_CPU_THREADS' largest */

/* Buffers from this size up are laid out for transparent huge pages
 * (HC_CPU_HUGE_PAGES): below it rounding to whole huge pages would waste
 * more than it saves. */
#define CPU_HUGE_MIN (4u << 20)
#define CPU_HUGE_PAGE (2u << 20)

typedef struct {
  hc_device_info_t info[CPU_MAX_DEVICES];
  unsigned threads[CPU_MAX_DEVICES]; /* each device's share of the threads */
  unsigned ndevices;
  int huge_pages; /* HC_CPU_HUGE_PAGES */
} cpu_state_t;

typedef struct {
  cpu_state_t *state;
  hc_cpu_pool_t *pool;
  double timer_start;
  int caller_core; /* the core its workers leave to the launching thread; < 0: not pinned */
} cpu_dev_t;

static hc_status_t cpu_init(hc_context_t *ctx, void **out) {
  cpu_state_t *s = calloc(1, sizeof *s);
  if (!s) return hc_error(HC_ERR_NO_MEMORY, "cpu: out of memory");
  long long threads = hc_host_cores(), ndev = 1, huge = 1;
  hc_status_t st = hc_config_int("HC_CPU_THREADS", &threads);
  if (st == HC_OK) st = hc_config_int("HC_CPU_DEVICES", &ndev);
  if (st == HC_OK) st = hc_config_int("HC_CPU_HUGE_PAGES", &huge);
  if (st != HC_OK) {
    free(s);
    return st;
  }
  /* N devices share the threads: the first (threads mod N) get one more,
   * and each gets at least one. */
  s->ndevices = (unsigned)ndev;
  s->huge_pages = huge != 0;
  for (unsigned d = 0; d < s->ndevices; d++) {
    long long share = threads / ndev + ((long long)d < threads % ndev ? 1 : 0);
    s->threads[d] = share > 0 ? (unsigned)share : 1;
    hc_cpu_describe(&s->info[d], s->threads[d]);
    hc_log(ctx, HC_LOG_DEBUG, "cpu:%u: %u threads on %s", d, s->threads[d], s->info[d].name);
  }
  *out = s;
  return HC_OK;
}

static void cpu_fini(void *state) { free(state); }
static uint32_t cpu_device_count(void *state) { return ((cpu_state_t *)state)->ndevices; }

static hc_status_t cpu_device_info(void *state, uint32_t index, hc_device_info_t *info) {
  cpu_state_t *s = state;
  if (index >= s->ndevices) return hc_error(HC_ERR_NOT_FOUND, "cpu: device %u does not exist", index);
  *info = s->info[index];
  return HC_OK;
}

/* With several devices (and HC_CPU_PIN), the cores device `index`'s
 * threads stay on: its share, in order, of the cores this process may run
 * on, the first (*caller) for the launching thread, which is pinned only
 * while it drives the device's part of a split run (cpu_bind_thread: it
 * is the caller's), the others (cores) for the workers. 0 when they are
 * not pinned: one device, HC_CPU_PIN=0, or fewer cores than threads. */
static int worker_cores(const cpu_state_t *s, uint32_t index, int *cores, int *caller) {
  long long pin = 1;
  cpu_set_t allowed;
  if (s->ndevices < 2 || hc_config_int("HC_CPU_PIN", &pin) != HC_OK || !pin ||
      sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return 0;
  unsigned first = 0, n = 0;
  for (uint32_t k = 0; k < index; k++) first += s->threads[k];
  if (first + s->threads[index] > (unsigned)CPU_COUNT(&allowed) || s->threads[index] > CPU_MAX_THREADS) return 0;
  for (unsigned c = 0, seen = 0; c < CPU_SETSIZE && seen < first + s->threads[index]; c++) {
    if (!CPU_ISSET(c, &allowed)) continue;
    if (seen == first)
      *caller = (int)c;
    else if (seen > first)
      cores[n++] = (int)c;
    seen++;
  }
  return 1;
}

static hc_status_t cpu_device_open(void *state, uint32_t index, void **out) {
  cpu_state_t *s = state;
  if (index >= s->ndevices) return hc_error(HC_ERR_NOT_FOUND, "cpu: device %u does not exist", index);
  cpu_dev_t *d = calloc(1, sizeof *d);
  if (!d) return hc_error(HC_ERR_NO_MEMORY, "cpu: out of memory");
  d->state = s;
  int cores[CPU_MAX_THREADS], *pinned = NULL;
  d->caller_core = -1;
  if (worker_cores(s, index, cores, &d->caller_core)) pinned = cores;
  d->pool = hc_cpu_pool_create(s->threads[index], pinned);
  if (!d->pool) {
    free(d);
    return hc_error(HC_ERR_DEVICE, "cpu: cannot start %u worker threads", s->threads[index]);
  }
  *out = d;
  return HC_OK;
}

static void cpu_device_close(void *dev) {
  cpu_dev_t *d = dev;
  hc_cpu_pool_destroy(d->pool);
  free(d);
}

/* A large buffer starts and ends on huge-page boundaries and asks the
 * kernel for transparent huge pages: its first write (a hand-over from a
 * GPU, a field's first fill) then faults a page per 2 MiB instead of per
 * 4 KiB, which bounds how fast a new buffer can be filled, and a large
 * grid's sweeps miss the TLB less. The kernel may still give small pages
 * (THP off, no free huge page): the buffer is the same either way. */
static hc_status_t cpu_mem_alloc(void *dev, size_t bytes, void **mem) {
  const cpu_dev_t *d = dev;
  const int huge = d->state->huge_pages && bytes >= CPU_HUGE_MIN;
  const size_t align = huge ? CPU_HUGE_PAGE : 64, rounded = (bytes + align - 1) / align * align;
  if (rounded < bytes) return hc_error(HC_ERR_DEVICE_MEMORY, "cpu: %zu bytes is too large", bytes);
  void *p = aligned_alloc(align, rounded);
  if (!p) return hc_error(HC_ERR_DEVICE_MEMORY, "cpu: cannot allocate %zu bytes of host memory", bytes);
#ifdef MADV_HUGEPAGE
  if (huge) (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice: refused, the pages are small */
#endif
  *mem = p;
  return HC_OK;
}

static void cpu_mem_free(void *dev, void *mem) {
  (void)dev;
  free(mem);
}

/* Copies and fills run on the device's own threads (copy.c). */
static hc_status_t cpu_mem_write(void *dev, void *mem, size_t off, const void *src, size_t n) {
  hc_cpu_copy(((cpu_dev_t *)dev)->pool, (char *)mem + off, src, n);
  return HC_OK;
}

static hc_status_t cpu_mem_read(void *dev, void *mem, size_t off, void *dst, size_t n) {
  hc_cpu_copy(((cpu_dev_t *)dev)->pool, dst, (char *)mem + off, n);
  return HC_OK;
}

static hc_status_t cpu_mem_copy(void *dev, void *dst, size_t doff, void *src, size_t soff, size_t n) {
  hc_cpu_copy(((cpu_dev_t *)dev)->pool, (char *)dst + doff, (char *)src + soff, n);
  return HC_OK;
}

/* Two cpu devices share the host's memory: a halo or an output moves
 * between them in one copy instead of two through a staging area, on the
 * receiving device's threads. */
static hc_status_t cpu_peer_copy(void *ddev, void *dst, size_t doff, void *sdev, void *src, size_t soff, size_t n) {
  (void)sdev;
  hc_cpu_copy(((cpu_dev_t *)ddev)->pool, (char *)dst + doff, (char *)src + soff, n);
  return HC_OK;
}

static hc_status_t cpu_mem_fill(void *dev, void *mem, size_t off, const void *pat, size_t psize, size_t n) {
  hc_cpu_fill(((cpu_dev_t *)dev)->pool, (char *)mem + off, pat, psize, n);
  return HC_OK;
}

static void *cpu_mem_host_ptr(void *dev, void *mem) {
  (void)dev;
  return mem;
}

static hc_status_t cpu_mem_native(void *dev, void *mem, hc_native_mem_t *out) {
  (void)dev;
  out->kind = HC_NATIVE_HOST;
  out->ptr = mem;
  return HC_OK;
}

/* The cpu device's memory is host memory: a host address is used as is,
 * when it has the alignment of cpu_mem_alloc's buffers (host kernels may
 * rely on it). */
static hc_status_t cpu_mem_wrap(void *dev, const hc_native_mem_t *native, size_t bytes, void **mem) {
  (void)dev;
  (void)bytes;
  if (native->kind != HC_NATIVE_HOST) return hc_error(HC_ERR_UNSUPPORTED, "cpu: only host memory can be used in place");
  if ((uintptr_t)native->ptr % 64)
    return hc_error(HC_ERR_UNSUPPORTED, "cpu: host memory used in place must be 64-byte aligned");
  *mem = native->ptr;
  return HC_OK;
}

typedef struct {
  hc_host_kernel_fn fn;
} cpu_kernel_t;

static hc_status_t cpu_kernel_create_host(void *dev, hc_host_kernel_fn fn, void **out) {
  (void)dev;
  cpu_kernel_t *k = malloc(sizeof *k);
  if (!k) return hc_error(HC_ERR_NO_MEMORY, "cpu: out of memory");
  k->fn = fn;
  *out = k;
  return HC_OK;
}

static void cpu_kernel_release(void *dev, void *k) {
  (void)dev;
  free(k);
}

static size_t cpu_kernel_max_group_size(void *dev, void *k) {
  (void)dev;
  (void)k;
  return (size_t)1 << 30;
}

/* Default grouping: whole rows along the fast axes, the slowest axis cut
 * into about 4 chunks per thread (and the next one too when it is short),
 * so each group is a contiguous, cache-friendly slab. */
static void choose_groups(unsigned dims, const size_t *global, unsigned threads, size_t *local) {
  size_t target = 4 * (size_t)threads;
  for (unsigned d = 0; d < 3; d++) local[d] = global[d] ? global[d] : 1;
  unsigned last = dims - 1;
  size_t n = global[last];
  size_t parts = n < target ? n : target;
  local[last] = (n + parts - 1) / parts;
  if (n < target && dims >= 2) {
    size_t more = (target + n - 1) / n;
    size_t m = global[last - 1];
    size_t p2 = m < more ? m : more;
    local[last - 1] = (m + p2 - 1) / p2;
  }
}

static hc_status_t cpu_launch(void *dev, void *kernel, const hc_launch_t *l) {
  cpu_dev_t *d = dev;
  cpu_kernel_t *k = kernel;
  void *args[HC_MAX_KERNEL_ARGS];
  for (uint32_t i = 0; i < l->nargs; i++)
    args[i] = l->args[i].kind == HC_ARG_KIND_BUFFER ? l->args[i].mem : (void *)l->args[i].value;
  size_t local[3];
  if (l->local[0] && l->local[1] && l->local[2])
    memcpy(local, l->local, sizeof local);
  else
    choose_groups(l->dims, l->global, hc_cpu_pool_size(d->pool), local);
  hc_cpu_pool_run(d->pool, k->fn, args, l->dims, l->global, local);
  return HC_OK;
}

/* Launches complete before they return: there is nothing to wait for. */
static hc_status_t cpu_finish(void *dev) {
  (void)dev;
  return HC_OK;
}

static hc_status_t cpu_timer_begin(void *dev) {
  ((cpu_dev_t *)dev)->timer_start = hc_now();
  return HC_OK;
}

/* The host's "device time" is the wall time of the span: its launches are
 * synchronous. */
static hc_status_t cpu_timer_end(void *dev, double *seconds) {
  *seconds = hc_now() - ((cpu_dev_t *)dev)->timer_start;
  return HC_OK;
}

static hc_status_t cpu_set_workers(void *dev, uint32_t workers) {
  hc_cpu_pool_set_active(((cpu_dev_t *)dev)->pool, workers);
  return HC_OK;
}

/* The thread that drives a pinned device's part of a split run does a
 * worker's share of every launch: on the core the workers leave it, not
 * wherever the scheduler puts it among the other devices' workers. */
static __thread cpu_set_t bound_from; /* the thread's cores before it was bound */
static __thread int bound;

static hc_status_t cpu_bind_thread(void *dev, int bind) {
  const cpu_dev_t *d = dev;
  if (d->caller_core < 0) return HC_ERR_UNSUPPORTED; /* nothing pinned: nothing to do */
  if (!bind) {
    if (bound && pthread_setaffinity_np(pthread_self(), sizeof bound_from, &bound_from) != 0)
      return hc_error(HC_ERR_DEVICE, "cpu: cannot give the thread back its cores");
    bound = 0;
    return HC_OK;
  }
  if (!bound && pthread_getaffinity_np(pthread_self(), sizeof bound_from, &bound_from) != 0)
    return hc_error(HC_ERR_DEVICE, "cpu: cannot read the thread's cores");
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(d->caller_core, &one);
  if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0)
    return hc_error(HC_ERR_DEVICE, "cpu: cannot keep the thread on core %d", d->caller_core);
  bound = 1;
  return HC_OK;
}

static const hc_backend_ops_t cpu_ops = {
    .size = sizeof(hc_backend_ops_t),
    .init = cpu_init,
    .fini = cpu_fini,
    .device_count = cpu_device_count,
    .device_info = cpu_device_info,
    .device_open = cpu_device_open,
    .device_close = cpu_device_close,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_write = cpu_mem_write,
    .mem_read = cpu_mem_read,
    .mem_copy = cpu_mem_copy,
    .mem_fill = cpu_mem_fill,
    .mem_host_ptr = cpu_mem_host_ptr,
    .peer_copy = cpu_peer_copy,
    .mem_native = cpu_mem_native,
    .mem_wrap = cpu_mem_wrap,
    .kernel_create_host = cpu_kernel_create_host,
    .kernel_release = cpu_kernel_release,
    .kernel_max_group_size = cpu_kernel_max_group_size,
    .launch = cpu_launch,
    .finish = cpu_finish,
    .timer_begin = cpu_timer_begin,
    .timer_end = cpu_timer_end,
    .device_set_workers = cpu_set_workers,
    .device_bind_thread = cpu_bind_thread,
};

HC_PLUGIN_DESCRIPTOR = {
    .abi_major = HC_ABI_MAJOR,
    .abi_minor = HC_ABI_MINOR,
    .kind = HC_PLUGIN_BACKEND,
    .name = "cpu",
    .version = HC_VERSION_STRING,
    .summary = "the host's cores: host-language kernels on a persistent POSIX-threads pool",
    .ops = &cpu_ops,
};
