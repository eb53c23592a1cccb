/* A backend that fails on request, for tests/reliability/test_faults.c
 * (which compiles it into a plugin at run time, as an outside author
 * would: public headers and libhc only).
 *
 * Two devices: host-language kernels run group after group on the calling
 * thread, memory is malloc'd. faulty:0 offers no host pointer (workloads
 * go through writes and reads, as on a GPU); faulty:1 shares host memory
 * (as the cpu backend does), for code that needs it. hc_faulty_arm(op, k) makes the
 * k-th call of op from now fail — an allocation with HC_ERR_DEVICE_MEMORY,
 * a launch with HC_ERR_LAUNCH, anything else with HC_ERR_DEVICE — with a
 * message holding "injected". hc_faulty_live() counts the buffers, kernels
 * and open devices not given back; hc_faulty_calls(op) the calls of op
 * since the last arm. The test finds these through dlsym. A test that runs
 * it in another process (an MPI rank) arms it with the plugin's own
 * variable HC_FAULTY_ARM=op:k instead. HC_FAULTY_GPU=1 (read when a
 * context starts the backend) makes its devices say they are GPUs, the
 * devices --device=auto's rule prefers. */
#define _POSIX_C_SOURCE 200809L /* nanosleep, under -std=c11 too */
#include <hc/config.h>
#include <hc/plugin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPS(X) X(alloc) X(write) X(read) X(copy) X(fill) X(kernel) X(launch) X(finish)
enum {
#define ENUM_(o) OP_##o,
  OPS(ENUM_)
#undef ENUM_
      OP_COUNT
};
static const char *const op_names[] = {
#define NAME_(o) #o,
    OPS(NAME_)
#undef NAME_
};

static long calls[OP_COUNT], fail_at[OP_COUNT], live;
static long slow_ns;                            /* each launch sleeps this long (hc_faulty_slow) */
static long host_offset, host_fail, host_calls; /* hc_faulty_host */

/* A slow device, for the split planner's tests: every launch takes
 * `seconds` longer (0: as fast as it can). */
HC_PLUGIN_EXPORT void hc_faulty_slow(double seconds) { slow_ns = seconds > 0 ? (long)(seconds * 1e9) : 0; }

HC_PLUGIN_EXPORT void hc_faulty_arm(const char *op, long k) {
  for (int i = 0; i < OP_COUNT; i++) {
    calls[i] = 0;
    fail_at[i] = 0;
    if (op && !strcmp(op, op_names[i])) fail_at[i] = k;
  }
}
/* host_alloc from now: its memory `offset` bytes past a 64-byte boundary
 * (0: aligned as the contract says), or failing (fail != 0); returns the
 * calls of host_alloc since the last call of this. */
HC_PLUGIN_EXPORT long hc_faulty_host(long offset, int fail) {
  long calls_before = host_calls;
  host_offset = offset > 0 && offset < 64 ? offset : 0;
  host_fail = fail;
  host_calls = 0;
  return calls_before;
}
HC_PLUGIN_EXPORT long hc_faulty_live(void) { return live; }
HC_PLUGIN_EXPORT long hc_faulty_calls(const char *op) {
  for (int i = 0; i < OP_COUNT; i++)
    if (!strcmp(op, op_names[i])) return calls[i];
  return -1;
}

/* HC_OK, or the injected failure when this is the armed call. */
static hc_status_t call(int op) {
  calls[op]++;
  if (fail_at[op] && calls[op] == fail_at[op])
    return hc_error(op == OP_alloc    ? HC_ERR_DEVICE_MEMORY
                    : op == OP_launch ? HC_ERR_LAUNCH
                                      : HC_ERR_DEVICE,
                    "faulty: injected failure of %s call %ld", op_names[op], calls[op]);
  return HC_OK;
}

typedef struct {
  double t0;
  uint32_t index;
} faulty_dev_t;

static const hc_config_var_t arm_var = {"HC_FAULTY_ARM",
                                        HC_CONFIG_STRING,
                                        HC_CONFIG_INTERNAL,
                                        NULL,
                                        0,
                                        0,
                                        NULL,
                                        "op:k: the k-th call of op fails (tests in other processes)"};

static const hc_config_var_t gpu_var = {
    "HC_FAULTY_GPU", HC_CONFIG_BOOL, HC_CONFIG_INTERNAL, "0", 0, 0, NULL, "1: the devices say they are GPUs"};

/* The state: which type the devices report. */
static const hc_device_type_t as_cpu = HC_DEVICE_CPU, as_gpu = HC_DEVICE_GPU;

static hc_status_t f_init(hc_context_t *ctx, void **state) {
  (void)ctx;
  long long gpu = 0;
  *state = (void *)(hc_config_var_int(&gpu_var, &gpu) == HC_OK && gpu ? &as_gpu : &as_cpu);
  const char *arm = NULL;
  char op[16];
  long k = 0;
  if (hc_config_var_str(&arm_var, &arm) == HC_OK && arm && *arm) {
    if (sscanf(arm, "%15[a-z]:%ld", op, &k) != 2 || k < 1)
      return hc_error(HC_ERR_PARAM, "HC_FAULTY_ARM=%s: give op:k (alloc, launch, ... and a count from 1)", arm);
    hc_faulty_arm(op, k);
  }
  return HC_OK;
}
static void f_fini(void *state) { (void)state; }
static uint32_t f_count(void *state) {
  (void)state;
  return 2;
}

static hc_status_t f_info(void *state, uint32_t index, hc_device_info_t *in) {
  memset(in, 0, sizeof *in);
  in->size = sizeof *in;
  in->type = *(const hc_device_type_t *)state;
  strcpy(in->name, index ? "fault-injecting test device, host memory" : "fault-injecting test device");
  strcpy(in->vendor, "hc tests");
  strcpy(in->platform, "faulty");
  in->languages = HC_LANG_BIT(HC_LANG_HOST);
  in->compute_units = 1;
  in->fp64 = 1;
  in->max_work_group_size = 1u << 30;
  in->preferred_group_multiple = 1;
  in->global_mem_bytes = 1ull << 30;
  in->max_alloc_bytes = 256ull << 20;
  in->local_mem_bytes = 32768;
  return HC_OK;
}

static hc_status_t f_open(void *state, uint32_t index, void **dev) {
  (void)state;
  faulty_dev_t *d = calloc(1, sizeof *d);
  if (!d) return hc_error(HC_ERR_NO_MEMORY, "faulty: out of memory");
  d->index = index;
  live++;
  *dev = d;
  return HC_OK;
}
static void f_close(void *dev) {
  live--;
  free(dev);
}

static hc_status_t f_alloc(void *dev, size_t n, void **mem) {
  (void)dev;
  hc_status_t st = call(OP_alloc);
  if (st != HC_OK) return st;
  *mem = malloc(n);
  if (!*mem) return hc_error(HC_ERR_DEVICE_MEMORY, "faulty: cannot allocate %zu bytes", n);
  live++;
  return HC_OK;
}
static void f_free(void *dev, void *mem) {
  (void)dev;
  if (mem) live--;
  free(mem);
}
static hc_status_t f_write(void *dev, void *mem, size_t off, const void *src, size_t n) {
  (void)dev;
  hc_status_t st = call(OP_write);
  if (st == HC_OK) memcpy((char *)mem + off, src, n);
  return st;
}
static hc_status_t f_read(void *dev, void *mem, size_t off, void *dst, size_t n) {
  (void)dev;
  hc_status_t st = call(OP_read);
  if (st == HC_OK) memcpy(dst, (char *)mem + off, n);
  return st;
}
static hc_status_t f_copy(void *dev, void *dst, size_t doff, void *src, size_t soff, size_t n) {
  (void)dev;
  hc_status_t st = call(OP_copy);
  if (st == HC_OK) memmove((char *)dst + doff, (char *)src + soff, n);
  return st;
}
static hc_status_t f_fill(void *dev, void *mem, size_t off, const void *pat, size_t ps, size_t n) {
  (void)dev;
  hc_status_t st = call(OP_fill);
  for (size_t i = 0; st == HC_OK && i < n; i += ps) memcpy((char *)mem + off + i, pat, ps);
  return st;
}
/* The block starts 64 bytes before what host_alloc gave, whatever the
 * offset, so that host_free finds it. */
static hc_status_t f_host_alloc(void *dev, size_t bytes, void **ptr) {
  (void)dev;
  host_calls++;
  if (host_fail) return hc_error(HC_ERR_DEVICE, "faulty: injected failure of host_alloc");
  char *block = NULL;
  if (posix_memalign((void **)&block, 64, bytes + 64) != 0)
    return hc_error(HC_ERR_NO_MEMORY, "faulty: cannot allocate %zu bytes of host memory", bytes);
  live++;
  *ptr = block + 64 + host_offset;
  return HC_OK;
}
static void f_host_free(void *dev, void *ptr) {
  (void)dev;
  if (!ptr) return;
  live--;
  free((char *)ptr - 64 - ((uintptr_t)ptr % 64));
}
static void *f_host_ptr(void *dev, void *mem) { return ((faulty_dev_t *)dev)->index ? mem : NULL; }
static hc_status_t f_kernel(void *dev, hc_host_kernel_fn fn, void **k) {
  (void)dev;
  hc_status_t st = call(OP_kernel);
  if (st != HC_OK) return st;
  hc_host_kernel_fn *p = malloc(sizeof *p);
  if (!p) return hc_error(HC_ERR_NO_MEMORY, "faulty: out of memory");
  *p = fn;
  *k = p;
  live++;
  return HC_OK;
}
static void f_kernel_release(void *dev, void *k) {
  (void)dev;
  if (k) live--;
  free(k);
}

/* Groups: the launch's local size, or 64 items along the slowest axis. */
static hc_status_t f_launch(void *dev, void *kernel, const hc_launch_t *l) {
  (void)dev;
  hc_status_t st = call(OP_launch);
  if (st != HC_OK) return st;
  if (slow_ns) nanosleep(&(struct timespec){slow_ns / 1000000000, slow_ns % 1000000000}, NULL);
  hc_host_kernel_fn fn = *(hc_host_kernel_fn *)kernel;
  void *args[HC_MAX_KERNEL_ARGS];
  for (uint32_t i = 0; i < l->nargs; i++)
    args[i] = l->args[i].kind == HC_ARG_KIND_BUFFER ? l->args[i].mem : (void *)l->args[i].value;
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
  return HC_OK;
}

static hc_status_t f_finish(void *dev) {
  (void)dev;
  return call(OP_finish);
}
static hc_status_t f_tbegin(void *dev) {
  ((faulty_dev_t *)dev)->t0 = hc_now();
  return HC_OK;
}
static hc_status_t f_tend(void *dev, double *s) {
  *s = hc_now() - ((faulty_dev_t *)dev)->t0;
  return HC_OK;
}

static const hc_backend_ops_t faulty_ops = {
    .size = sizeof(hc_backend_ops_t),
    .init = f_init,
    .fini = f_fini,
    .device_count = f_count,
    .device_info = f_info,
    .device_open = f_open,
    .device_close = f_close,
    .mem_alloc = f_alloc,
    .mem_free = f_free,
    .mem_write = f_write,
    .mem_read = f_read,
    .mem_copy = f_copy,
    .mem_fill = f_fill,
    .mem_host_ptr = f_host_ptr,
    .kernel_create_host = f_kernel,
    .kernel_release = f_kernel_release,
    .launch = f_launch,
    .finish = f_finish,
    .timer_begin = f_tbegin,
    .timer_end = f_tend,
    .host_alloc = f_host_alloc,
    .host_free = f_host_free,
};

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        HC_ABI_MINOR,
                        HC_PLUGIN_BACKEND,
                        0,
                        "faulty",
                        "1.0",
                        "test backend: fails the k-th call of an operation on request",
                        &faulty_ops};
