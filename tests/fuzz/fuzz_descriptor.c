/* Fuzz target: plugin descriptors. Builds one to three fake plugins from the
 * input — descriptor, backend or workload ops table, parameter and port
 * tables — with strings pointing into the (NUL-terminated) input and every
 * pointer either valid or NULL, and hands them to the core exactly where
 * the loader hands a descriptor it found in a plugin file.
 *
 * How: the target is linked with -Wl,--wrap=hc__load_plugins, so
 * hc_context_create calls __wrap_hc__load_plugins below, which registers
 * the fake descriptors through hc__register_plugin (the loader's own path
 * after dlsym). The backend's ops are stubs whose answers (device count,
 * device info, statuses of allocations, builds and launches) come from the
 * input too; the workload's run stub reads its parameters and hands
 * outputs back through the plugin API.
 *
 * Then the embedding API is driven over what was accepted: registry and
 * schema queries, jobs with key=value parameters from the input, device
 * lookup and opening, buffers, kernels, a launch and a job run.
 *
 * Properties: never a crash, an out-of-bounds access or a leak (every
 * buffer, kernel and program the stubs hand out is released: they are
 * malloc'd so LeakSanitizer sees any that is not; programs only when the
 * fake has program_release, else it keeps them); the pure checks
 * (descriptor.h) agree with what the loader does: a descriptor is
 * registered exactly when they find no problem (and its name is not
 * taken, and a backend's init succeeds), otherwise it is listed as
 * rejected with their reason. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "descriptor.h"
#include "fuzz_input.h"
#include "internal.h"

#define MAX_FAKES 3

typedef struct {
  hc_plugin_descriptor_t desc;
  hc_backend_ops_t bops;
  hc_workload_ops_t wops;
  void *params, *inputs, *outputs; /* calloc'd tables */
  char why[512];                   /* the pure checks' verdict */
  const char *problem;             /* NULL: they accept it */
} fake_t;

static fake_t fakes[MAX_FAKES];
static uint32_t nfakes;
static fz_t in; /* read by the stubs while the core calls them */

static const hc_status_t statuses[] = {
#define FZ_STATUS_(name, value, exit_code, text) HC_##name,
    HC_STATUS_LIST(FZ_STATUS_)
#undef FZ_STATUS_
};

/* Mostly HC_OK (and always when the input is used up), else any status. */
static hc_status_t fz_status(void) {
  uint8_t b = fz_u8(&in);
  if (b < 192) return HC_OK;
  hc_status_t st = statuses[b % (sizeof statuses / sizeof statuses[0])];
  return st == HC_OK ? st : hc_error(st, "fake plugin: %s", hc_status_str(st));
}

/* Selector 0 (what exhausted input gives): the default; 1-5: a string of
 * the input; 6-7: NULL. */
static const char *fz_pick_str(const char *def) {
  uint8_t s = fz_u8(&in) & 7;
  return s == 0 ? def : s <= 5 ? fz_str(&in) : NULL;
}

static double fz_double(void) {
  static const double special[] = {0, 1, -1, 1e300, -1e300, 4096, 1e-300, 65536};
  uint8_t s = fz_u8(&in);
  if (s < 248) return special[s % 8];
  uint64_t bits = fz_u64(&in);
  double d;
  memcpy(&d, &bits, sizeof d); /* NaN and infinities included */
  return d;
}

/* ------------------------------------------------------------ backend stubs */

static int token; /* the address handed out as state and device handle */

static hc_status_t b_init(hc_context_t *c, void **s) {
  *s = &token;
  return fz_status();
}
static void b_fini(void *s) {}
static uint32_t b_count(void *s) {
  uint8_t b = fz_u8(&in);
  return b < 250 ? b % 4 : fz_u32(&in); /* the core caps it at 64 */
}
static const char *b_status(void *s) { return fz_pick_str("fake: no reason"); }

static void set_text(char *dst, size_t n, const char *s) { snprintf(dst, n, "%s", s ? s : ""); }

static hc_status_t b_info(void *s, uint32_t i, hc_device_info_t *o) {
  hc_status_t st = fz_status();
  if (st != HC_OK) return st;
  uint8_t mode = fz_u8(&in) % 3;
  if (mode == 2 && in.size - in.pos >= sizeof *o) {
    /* Whatever bytes: unterminated names, odd types, NaN peaks. */
    memcpy(o, in.buf + in.pos, sizeof *o);
    in.pos += sizeof *o;
    return HC_OK;
  }
  memset((char *)o + sizeof o->size, 0, sizeof *o - sizeof o->size);
  o->type = HC_DEVICE_CPU;
  set_text(o->name, sizeof o->name, "fake device");
  o->languages = HC_LANG_BIT(HC_LANG_HOST) | HC_LANG_BIT(HC_LANG_OPENCL_C);
  o->compute_units = 2;
  o->max_work_group_size = 256;
  o->global_mem_bytes = 1ull << 30;
  o->max_alloc_bytes = 1ull << 28;
  if (mode == 1) {
    o->type = (hc_device_type_t)fz_u32(&in);
    set_text(o->name, sizeof o->name, fz_str(&in));
    set_text(o->vendor, sizeof o->vendor, fz_str(&in));
    set_text(o->driver, sizeof o->driver, fz_str(&in));
    o->languages = fz_u32(&in);
    o->compute_units = fz_u32(&in);
    o->fp64 = fz_u8(&in);
    o->max_work_group_size = fz_u32(&in);
    o->preferred_group_multiple = fz_u32(&in);
    o->global_mem_bytes = fz_u64(&in);
    o->max_alloc_bytes = fz_u64(&in);
    o->local_mem_bytes = fz_u64(&in);
    o->peak_fp32_gflops = fz_double();
    o->peak_bandwidth_gbs = fz_double();
  }
  return HC_OK;
}

static hc_status_t b_open(void *s, uint32_t i, void **d) {
  *d = &token;
  return fz_status();
}
static void b_close(void *d) {}

/* Handles the core must give back: malloc'd, so a leak is seen. */
static hc_status_t handle(void **out) {
  hc_status_t st = fz_status();
  if (st != HC_OK) return st;
  *out = malloc(1);
  return *out ? HC_OK : HC_ERR_NO_MEMORY;
}
static hc_status_t b_alloc(void *d, size_t bytes, void **mem) { return handle(mem); }
static void b_free(void *d, void *mem) { free(mem); }
static hc_status_t b_write(void *d, void *m, size_t off, const void *src, size_t n) { return fz_status(); }
static hc_status_t b_read(void *d, void *m, size_t off, void *dst, size_t n) {
  hc_status_t st = fz_status();
  if (st == HC_OK && n) memset(dst, 0, n);
  return st;
}
static hc_status_t b_copy(void *d, void *dst, size_t doff, void *src, size_t soff, size_t n) { return fz_status(); }
static hc_status_t b_fill(void *d, void *m, size_t off, const void *p, size_t ps, size_t n) { return fz_status(); }
static void *b_host_ptr(void *d, void *m) { return NULL; }
static hc_status_t b_build(void *d, hc_language_t lang, const char *src, const char *opt, void **prog) {
  return handle(prog);
}
/* program_build of a backend without program_release (optional in the
 * ABI): such a backend keeps its programs itself, so it hands out one the
 * core never gives back rather than a malloc'd one nobody could free. */
static hc_status_t b_build_kept(void *d, hc_language_t lang, const char *src, const char *opt, void **prog) {
  *prog = &token;
  return fz_status();
}
static void b_prog_release(void *d, void *p) { free(p); }
static hc_status_t b_kernel(void *d, void *prog, const char *name, void **k) { return handle(k); }
static hc_status_t b_kernel_host(void *d, hc_host_kernel_fn fn, void **k) { return handle(k); }
static void b_kernel_release(void *d, void *k) { free(k); }
static size_t b_max_group(void *d, void *k) { return fz_u32(&in); }
static hc_status_t b_launch(void *d, void *k, const hc_launch_t *l) { return fz_status(); }
static hc_status_t b_finish(void *d) { return fz_status(); }
static hc_status_t b_timer_begin(void *d) { return fz_status(); }
static hc_status_t b_timer_end(void *d, double *s) {
  *s = 0;
  return fz_status();
}
static hc_status_t b_peer(void *dd, void *dst, size_t doff, void *sd, void *src, size_t soff, size_t n) {
  return fz_status();
}

static hc_status_t b_native(void *d, void *m, hc_native_mem_t *out) { return fz_status(); }
static hc_status_t b_wrap(void *d, const hc_native_mem_t *native, size_t bytes, void **m) { return handle(m); }
static void b_unwrap(void *d, void *m) { free(m); }
static void *b_trace_begin(void *d) { return NULL; }
static void b_trace_end(void *d, void *record) {}
static hc_status_t b_trace_time(void *d, void *record, double *start, double *end) {
  *start = *end = 0;
  return fz_status();
}
static void b_trace_discard(void *d, void *record) {}
static void b_range_push(void *state, const char *name) {}
static void b_range_pop(void *state) {}
static hc_status_t b_host_alloc(void *d, size_t n, void **p) {
  *p = NULL;
  return fz_status();
}
static void b_host_free(void *d, void *p) {}
static hc_status_t b_set_workers(void *d, uint32_t workers) { return fz_status(); }
static hc_status_t b_bind(void *d, int bind) { return fz_status(); }
static hc_status_t b_host_register(void *d, void *p, size_t n) { return fz_status(); }
static void b_host_unregister(void *d, void *p) {}
/* Any bytes, the whole buffer: the core must end the string itself. */
static hc_status_t b_pci(void *state, uint32_t index, char *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = (char)fz_u8(&in);
  return fz_status();
}

/* The ops in declaration order, so a mask bit can drop each one. */
static void fill_backend_ops(hc_backend_ops_t *o) {
  void (*all[])(void) = {(void (*)(void))b_init,
                         (void (*)(void))b_fini,
                         (void (*)(void))b_count,
                         (void (*)(void))b_status,
                         (void (*)(void))b_info,
                         (void (*)(void))b_open,
                         (void (*)(void))b_close,
                         (void (*)(void))b_alloc,
                         (void (*)(void))b_free,
                         (void (*)(void))b_write,
                         (void (*)(void))b_read,
                         (void (*)(void))b_copy,
                         (void (*)(void))b_fill,
                         (void (*)(void))b_host_ptr,
                         (void (*)(void))b_build,
                         (void (*)(void))b_prog_release,
                         (void (*)(void))b_kernel,
                         (void (*)(void))b_kernel_host,
                         (void (*)(void))b_kernel_release,
                         (void (*)(void))b_max_group,
                         (void (*)(void))b_launch,
                         (void (*)(void))b_finish,
                         (void (*)(void))b_timer_begin,
                         (void (*)(void))b_timer_end,
                         (void (*)(void))b_peer,
                         (void (*)(void))b_native,
                         (void (*)(void))b_wrap,
                         (void (*)(void))b_unwrap,
                         (void (*)(void))b_trace_begin,
                         (void (*)(void))b_trace_end,
                         (void (*)(void))b_trace_time,
                         (void (*)(void))b_trace_discard,
                         (void (*)(void))b_range_push,
                         (void (*)(void))b_range_pop,
                         (void (*)(void))b_host_alloc,
                         (void (*)(void))b_host_free,
                         (void (*)(void))b_pci,
                         (void (*)(void))b_set_workers,
                         (void (*)(void))b_bind,
                         (void (*)(void))b_host_register,
                         (void (*)(void))b_host_unregister};
  enum { NOPS = sizeof all / sizeof all[0] };
  _Static_assert(sizeof(hc_backend_ops_t) == offsetof(hc_backend_ops_t, init) + NOPS * sizeof(void (*)(void)),
                 "fill_backend_ops lists every backend op");
  uint8_t sel = fz_u8(&in);
  uint64_t drop = sel < 160   ? 0
                  : sel < 224 ? (uint64_t)1 << (fz_u8(&in) % NOPS)
                              : (uint64_t)fz_u32(&in) << 32 | fz_u32(&in);
  memset(o, 0, sizeof *o);
  void (**slot)(void) = (void (**)(void))((char *)o + offsetof(hc_backend_ops_t, init));
  for (int i = 0; i < NOPS; i++) slot[i] = (drop >> i) & 1 ? NULL : all[i];
  uint8_t z = fz_u8(&in);
  o->size = z < 200   ? (uint32_t)sizeof *o
            : z < 228 ? (uint32_t)offsetof(hc_backend_ops_t, peer_copy)
                      : fz_u32(&in) % (uint32_t)(sizeof *o + 64);
  /* program_release as the core sees it: dropped, or past o->size */
  if (o->program_build &&
      (!o->program_release || o->size < offsetof(hc_backend_ops_t, program_release) + sizeof o->program_release))
    o->program_build = b_build_kept;
}

/* ----------------------------------------------------------- workload stubs */

static int w_check(const hc_job_t *job, const hc_device_info_t *dev, char *why, size_t n) {
  uint8_t b = fz_u8(&in);
  if (b < 224) return 0;
  snprintf(why, n, "%s", fz_str(&in));
  return 1;
}

static hc_status_t w_describe(const hc_job_t *job, const char *port, hc_dtype_t *dt, uint32_t *rank) {
  *dt = (hc_dtype_t)(fz_u8(&in) % 6);
  *rank = fz_u8(&in) % 6;
  return fz_status();
}

/* Reads every parameter as every type and produces the outputs (a field
 * of input-chosen dtype and shape per output port, or a wrong port name). */
static hc_status_t w_run(hc_job_t *job) {
  hc_device_t *dev = hc_job_device(job);
  FZ_CHECK(dev != NULL, "run without a device");
  const hc_context_t *ctx = hc_job_context(job);
  const char *name = hc_job_workload(job);
  uint32_t np = hc_workload_param_count(ctx, name);
  for (uint32_t i = 0; i < np; i++) {
    const hc_param_spec_t *p = hc_workload_param(ctx, name, i);
    (void)hc_job_int(job, p->name);
    (void)hc_job_float(job, p->name);
    (void)hc_job_bool(job, p->name);
    (void)strlen(hc_job_string(job, p->name));
    hc_shape_t s = hc_job_shape(job, p->name);
    FZ_CHECK(s.rank <= HC_MAX_DIMS, "shape rank %u", s.rank);
    hc_vec_t v = hc_job_vec(job, p->name);
    FZ_CHECK(v.count <= HC_MAX_DIMS, "vector count %u", v.count);
    (void)hc_job_given(job, p->name);
  }
  uint32_t no = hc_workload_port_count(ctx, name, 1);
  for (uint32_t i = 0; i < no && i < 4; i++) {
    const hc_port_spec_t *p = hc_workload_port(ctx, name, 1, i);
    int64_t shape[HC_MAX_DIMS];
    for (int d = 0; d < HC_MAX_DIMS; d++) shape[d] = fz_u8(&in) % 5;
    hc_dtype_t dt = (hc_dtype_t)(fz_u8(&in) % 6);
    uint32_t rank = fz_u8(&in) % 6;
    hc_field_t *f = NULL;
    if (hc_field_create(dev, dt, rank, shape, &f) != HC_OK) continue;
    const char *port = fz_u8(&in) < 240 ? p->name : fz_str(&in);
    hc_job_set_output(job, port, f); /* takes f, also on failure */
  }
  hc_job_add_metric(job, fz_str(&in), fz_double(), fz_str(&in));
  hc_job_note(job, "%s", fz_str(&in));
  if (hc_job_verify_requested(job)) hc_job_set_verified(job, fz_u8(&in) & 1, "%s", fz_str(&in));
  return fz_status();
}

/* A table of n entries of `stride` bytes (calloc'd; entries filled by
 * fill when the stride can hold one). */
static void *table(uint32_t n, uint32_t stride, size_t entry, void (*fill)(void *)) {
  char *t = calloc((size_t)n * stride + entry, 1);
  if (!t) abort();
  for (uint32_t i = 0; i < n && stride >= entry; i++) fill(t + (size_t)i * stride);
  return t;
}

static void fill_param(void *e) {
  static const struct { double min, max; } ranges[] = {{1, 0}, {0, 100}, {1, 1e6}, {-1, 1}};
  hc_param_spec_t *p = e;
  p->name = fz_pick_str("n");
  p->type = fz_u8(&in) % (HC_PARAM_TYPE_COUNT_ + 1);
  p->def = fz_pick_str(NULL);
  uint8_t r = fz_u8(&in);
  if (r < 240) {
    p->min = ranges[r % 4].min;
    p->max = ranges[r % 4].max;
  } else {
    p->min = fz_double();
    p->max = fz_double();
  }
  p->choices = fz_pick_str("a|b|c");
  p->help = fz_pick_str("help");
}

static void fill_port(void *e) {
  hc_port_spec_t *p = e;
  p->name = fz_pick_str("f");
  uint8_t d = fz_u8(&in);
  p->dtypes = d < 200 ? HC_DTYPES_REAL | HC_DTYPES_COMPLEX : fz_u32(&in);
  p->rank_min = (int8_t)fz_u8(&in) % 6;
  p->rank_max = 4 - (int8_t)fz_u8(&in) % 6;
  p->flags = fz_u8(&in);
  p->help = fz_pick_str("port help");
}

static uint32_t count(uint32_t small) {
  uint8_t b = fz_u8(&in);
  return b < 240 ? b % small : 250 + b % 20; /* now and then over the limits */
}

static uint32_t stride(size_t entry) {
  uint8_t b = fz_u8(&in);
  return b < 200 ? (uint32_t)entry : b < 228 ? (uint32_t)entry + 8 * (b % 4) : (uint32_t)(entry - 8);
}

static void make_workload(fake_t *k) {
  hc_workload_ops_t *o = &k->wops;
  memset(o, 0, sizeof *o);
  uint8_t z = fz_u8(&in);
  o->size = z < 224 ? (uint32_t)sizeof *o : fz_u32(&in) % (uint32_t)(sizeof *o + 64);
  uint8_t l = fz_u8(&in);
  o->languages = l < 128 ? HC_LANG_BIT(HC_LANG_HOST) | HC_LANG_BIT(HC_LANG_OPENCL_C) : fz_u32(&in);
  o->nparams = count(6);
  o->param_spec_size = stride(sizeof(hc_param_spec_t));
  k->params = table(o->nparams, o->param_spec_size, sizeof(hc_param_spec_t), fill_param);
  o->params = (fz_u8(&in) & 15) == 15 ? NULL : k->params;
  o->port_spec_size = stride(sizeof(hc_port_spec_t));
  o->ninputs = count(3);
  k->inputs = table(o->ninputs, o->port_spec_size, sizeof(hc_port_spec_t), fill_port);
  o->inputs = (fz_u8(&in) & 15) == 15 ? NULL : k->inputs;
  o->noutputs = count(3);
  k->outputs = table(o->noutputs, o->port_spec_size, sizeof(hc_port_spec_t), fill_port);
  o->outputs = (fz_u8(&in) & 15) == 15 ? NULL : k->outputs;
  uint8_t m = fz_u8(&in);
  o->check = m & 1 ? w_check : NULL;
  o->describe_output = m & 2 ? w_describe : NULL;
  o->run = (m & 0xf0) == 0xf0 ? NULL : w_run;
}

static void make_fake(fake_t *k, uint32_t index) {
  static const char *const names[MAX_FAKES] = {"fake0", "fake1", "fake2"};
  memset(k, 0, sizeof *k);
  hc_plugin_descriptor_t *d = &k->desc;
  uint8_t a = fz_u8(&in);
  d->abi_major = a < 240 ? HC_ABI_MAJOR : fz_u32(&in);
  a = fz_u8(&in);
  d->abi_minor = a < 200 ? HC_ABI_MINOR : a < 220 ? 0 : fz_u32(&in);
  a = fz_u8(&in);
  d->kind = a < 120 ? HC_PLUGIN_WORKLOAD : a < 240 ? HC_PLUGIN_BACKEND : fz_u32(&in);
  d->name = fz_pick_str(names[index]);
  d->version = fz_pick_str("1.0");
  d->summary = fz_pick_str("a fake plugin");
  if (d->kind == HC_PLUGIN_BACKEND) {
    fill_backend_ops(&k->bops);
    d->ops = &k->bops;
  } else {
    make_workload(k);
    d->ops = &k->wops;
  }
  if ((fz_u8(&in) & 31) == 31) d->ops = NULL;
  /* The pure verdict, computed before the loader sees it. */
  k->problem = hc__descriptor_problem(d, k->why, sizeof k->why);
  if (!k->problem) k->problem = hc__descriptor_ops_problem(d, k->why, sizeof k->why);
}

static void free_fake(fake_t *k) {
  free(k->params);
  free(k->inputs);
  free(k->outputs);
}

/* hc_context_create's call to the loader lands here (--wrap). */
void __real_hc__load_plugins(hc_context_t *ctx);
void __wrap_hc__load_plugins(hc_context_t *ctx) {
  for (uint32_t i = 0; i < nfakes; i++) {
    char path[32];
    snprintf(path, sizeof path, "fake%u.so", i);
    hc__register_plugin(ctx, path, NULL, &fakes[i].desc);
  }
}

static int registered(const hc_context_t *ctx, const fake_t *k) {
  for (uint32_t i = 0; i < ctx->nbackends; i++)
    if (ctx->backends[i].plugin.desc == &k->desc) return 1;
  for (uint32_t i = 0; i < ctx->nworkloads; i++)
    if (ctx->workloads[i].plugin.desc == &k->desc) return 1;
  return 0;
}

/* Never called: the fake backend's launch runs nothing. */
static void host_kernel(const hc_host_group_t *g, void *const *args) { abort(); }

static void exercise_devices(hc_context_t *ctx) {
  uint32_t n = hc_device_count(ctx);
  FZ_CHECK(n <= 64 * MAX_FAKES, "%u devices", n);
  for (uint32_t i = 0; i < n; i++) {
    hc_device_info_t info;
    FZ_CHECK(hc_device_query(ctx, i, &info) == HC_OK, "query %u", i);
    (void)strlen(hc_device_id(ctx, i));
  }
  for (uint32_t i = 0; i < hc_backend_count(ctx); i++) {
    const char *s = hc_backend_status(ctx, i);
    if (s) (void)strlen(s);
  }
  uint32_t idx = 0;
  hc_device_find(ctx, "auto", &idx);
  hc_device_find(ctx, fz_str(&in), &idx);
  hc_device_find_auto(ctx, NULL, &idx);
  if (!n) return;
  hc_device_t *dev = NULL;
  if (hc_device_open(ctx, fz_u8(&in) % n, &dev) != HC_OK) return;
  (void)strlen(hc_device_name(dev));
  hc_buffer_t *b = NULL;
  size_t bytes = fz_u8(&in) < 200 ? fz_u8(&in) : (size_t)fz_u64(&in);
  if (hc_buffer_create(dev, bytes, &b) == HC_OK) {
    unsigned char tmp[16] = {0};
    hc_buffer_write(b, 0, tmp, hc_buffer_size(b) < 16 ? hc_buffer_size(b) : 16);
    hc_buffer_read(b, fz_u8(&in), tmp, fz_u8(&in) % 17);
    uint32_t pat = 0;
    hc_buffer_fill(b, 0, &pat, 1u << (fz_u8(&in) % 5), hc_buffer_size(b));
  }
  hc_kernel_desc_t kd;
  memset(&kd, 0, sizeof kd);
  kd.size = sizeof kd;
  kd.name = fz_pick_str("k");
  kd.source = fz_pick_str("HC_KERNEL void k() {}");
  kd.options = fz_pick_str(NULL);
  kd.host_fn = fz_u8(&in) & 1 ? NULL : host_kernel;
  hc_kernel_t *k = NULL;
  if (hc_kernel_create(dev, &kd, &k) == HC_OK) {
    (void)hc_kernel_max_group_size(k);
    size_t global[3], local[3] = {1, 1, 1};
    global[0] = fz_u8(&in);
    global[1] = fz_u8(&in);
    global[2] = 1;
    local[0] = fz_u8(&in);
    uint32_t dims = 1 + fz_u8(&in) % 3;
    int with_local = fz_u8(&in) & 1;
    int32_t x = 1;
    hc_arg_t args[2] = {HC_ARG_BUF(b), HC_ARG_VAL(x)};
    hc_kernel_launch(k, dims, global, with_local ? local : NULL, b ? 2 : 1, b ? args : args + 1);
    hc_kernel_destroy(k);
  }
  hc_device_finish(dev);
  double s = 0;
  if (hc_device_timer_begin(dev) == HC_OK) hc_device_timer_end(dev, &s);
  hc_buffer_destroy(b);
  /* Every workload on this device. */
  for (uint32_t w = 0; w < hc_workload_count(ctx); w++) {
    hc_plugin_summary_t sum;
    if (hc_workload_get(ctx, w, &sum) != HC_OK) continue;
    hc_job_t *job = NULL;
    if (hc_job_create(ctx, sum.name, &job) != HC_OK) continue;
    hc_job_run(job, dev, fz_u8(&in) & 1 ? HC_RUN_VERIFY : 0);
    for (uint32_t p = 0; p < hc_workload_port_count(ctx, sum.name, 1); p++) {
      hc_field_t *f = hc_job_output(job, hc_workload_port(ctx, sum.name, 1, p)->name);
      if (f) FZ_CHECK(hc_field_device(f) == dev, "output on another device");
    }
    hc_job_destroy(job);
  }
  hc_device_close(dev);
}

static void exercise_workloads(hc_context_t *ctx) {
  for (uint32_t w = 0; w < hc_workload_count(ctx); w++) {
    hc_plugin_summary_t sum;
    FZ_CHECK(hc_workload_get(ctx, w, &sum) == HC_OK, "workload %u", w);
    (void)strlen(sum.name);
    (void)strlen(sum.version);
    (void)strlen(sum.summary);
    uint32_t np = hc_workload_param_count(ctx, sum.name);
    for (uint32_t i = 0; i < np; i++) FZ_CHECK(hc_workload_param(ctx, sum.name, i) != NULL, "param %u", i);
    for (int out = 0; out < 2; out++)
      for (uint32_t i = 0; i < hc_workload_port_count(ctx, sum.name, out); i++)
        FZ_CHECK(hc_workload_port(ctx, sum.name, out, i) != NULL, "port %u", i);
    hc_job_t *job = NULL;
    if (hc_job_create(ctx, sum.name, &job) != HC_OK) continue;
    for (int i = 0; i < 4; i++) hc_job_set_kv(job, fz_str(&in));
    hc_job_set(job, fz_str(&in), fz_str(&in));
    for (uint32_t i = 0; i < hc_job_param_count(job); i++) {
      const char *name = NULL, *value = NULL;
      FZ_CHECK(hc_job_param_get(job, i, &name, &value) == HC_OK && name && value, "param %u", i);
      (void)strlen(value);
    }
    hc_job_set_input(job, fz_str(&in), NULL);
    (void)hc_job_input(job, fz_str(&in));
    hc_job_destroy(job);
    const char *why = NULL;
    if (hc_device_count(ctx)) hc_workload_can_run(ctx, sum.name, 0, &why);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_init(&in, data, size);
  nfakes = 1 + fz_u8(&in) % MAX_FAKES;
  for (uint32_t i = 0; i < nfakes; i++) make_fake(&fakes[i], i);
  hc_context_options_t opts;
  memset(&opts, 0, sizeof opts);
  opts.size = sizeof opts;
  opts.no_env_path = 1;
  opts.no_default_dirs = 1;
  hc_context_t *ctx = NULL;
  FZ_CHECK(hc_context_create(&opts, &ctx) == HC_OK, "context: %s", hc_last_error());
  for (uint32_t i = 0; i < nfakes; i++) {
    fake_t *k = &fakes[i];
    int reg = registered(ctx, k);
    char want[32];
    snprintf(want, sizeof want, "fake%u.so", i);
    const char *reason = NULL;
    for (uint32_t r = 0; r < hc_rejected_count(ctx); r++) {
      const char *path, *why;
      hc_rejected_get(ctx, r, &path, &why);
      if (!strcmp(path, want)) reason = why;
    }
    FZ_CHECK(reg != (reason != NULL), "fake %u both or neither registered and rejected", i);
    /* Refused for the pure checks' reason, unless its name was taken
     * first (the loader checks that before the ops); accepted by them and
     * still refused only for a taken name or a failed backend init. */
    if (k->problem)
      FZ_CHECK(reason && (!strcmp(reason, k->problem) || !strncmp(reason, "duplicate ", 10)),
               "fake %u: the checks say '%s', the loader '%s'", i, k->problem, reason ? reason : "(registered)");
    else if (reason)
      FZ_CHECK(!strncmp(reason, "duplicate ", 10) || !strncmp(reason, "init failed: ", 13),
               "fake %u passed the checks but was refused: %s", i, reason);
  }
  exercise_workloads(ctx);
  exercise_devices(ctx);
  hc_context_destroy(ctx);
  for (uint32_t i = 0; i < nfakes; i++) free_fake(&fakes[i]);
  fz_free(&in);
  return 0;
}
