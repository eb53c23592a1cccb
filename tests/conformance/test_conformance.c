/* Backend conformance: the behaviour every backend owes hc, tested through
 * the public API only, so any backend (cpu, opencl, cuda, a test backend)
 * runs the same program:  test_conformance --backend=NAME  (default cpu).
 * It opens the backend's first device; without one it says "skipped: no
 * NAME device (...)" and passes. Kernels come in the portable dialect and
 * as host functions (kernels.h), so source and host devices run the same
 * tests. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "kernels.h"

static const char *g_backend = "cpu";
static hc_device_t *g_dev;
static hc_device_info_t g_info;

/* Does the device compile portable source (as opposed to host only)? */
static int takes_source(void) {
  return (g_info.languages & (HC_LANG_BIT(HC_LANG_OPENCL_C) | HC_LANG_BIT(HC_LANG_CUDA_C))) != 0;
}

/* ------------------------------------------------------------ helpers */

static void fill_random(void *p, size_t n, uint32_t seed) {
  unsigned char *b = p;
  uint32_t x = seed * 2654435761u + 1u;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b[i] = (unsigned char)x;
  }
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "out of host memory (%zu bytes)\n", n);
    exit(3);
  }
  return p;
}

/* Asserts two byte ranges are equal, naming the first difference. */
#define ASSERT_SAME(got, want, n, what)                                                                              \
  do {                                                                                                               \
    const unsigned char *g_ = (const unsigned char *)(got), *w_ = (const unsigned char *)(want);                     \
    size_t i_ = 0, n_ = (n);                                                                                         \
    while (i_ < n_ && g_[i_] == w_[i_]) i_++;                                                                        \
    if (i_ < n_)                                                                                                     \
      fprintf(stderr, "%s:%d: %s: byte %zu of %zu is 0x%02x, expected 0x%02x\n", __FILE__, __LINE__, (what), i_, n_, \
              g_[i_], w_[i_]);                                                                                       \
    CU_ASSERT_EQUAL(i_, n_);                                                                                         \
  } while (0)

static hc_buffer_t *new_buffer(size_t n) {
  hc_buffer_t *b = NULL;
  hc_status_t st = hc_buffer_create(g_dev, n, &b);
  if (st != HC_OK) fprintf(stderr, "hc_buffer_create(%zu): %s: %s\n", n, hc_status_name(st), hc_last_error());
  CU_ASSERT_EQUAL_FATAL(st, HC_OK);
  CU_ASSERT_EQUAL(hc_buffer_size(b), n);
  CU_ASSERT_PTR_EQUAL(hc_buffer_device(b), g_dev);
  return b;
}

static hc_kernel_t *new_kernel_on(hc_device_t *dev, const char *name, hc_host_kernel_fn host) {
  hc_kernel_desc_t desc = {sizeof desc, name, conf_source, NULL, host};
  hc_kernel_t *k = NULL;
  hc_status_t st = hc_kernel_create(dev, &desc, &k);
  if (st != HC_OK) fprintf(stderr, "hc_kernel_create(%s): %s: %s\n", name, hc_status_name(st), hc_last_error());
  CU_ASSERT_EQUAL_FATAL(st, HC_OK);
  const hc_device_info_t *in = hc_device_info(dev);
  CU_ASSERT(in->languages & HC_LANG_BIT(hc_kernel_language(k)));
  CU_ASSERT(hc_kernel_max_group_size(k) >= 1);
  return k;
}
static hc_kernel_t *new_kernel(const char *name, hc_host_kernel_fn host) { return new_kernel_on(g_dev, name, host); }

/* ------------------------------------------------------------ device */

static void test_device_info(void) {
  const hc_device_info_t *in = hc_device_info(g_dev);
  CU_ASSERT_PTR_NOT_NULL_FATAL(in);
  CU_ASSERT(in->name[0] != '\0');
  CU_ASSERT(in->languages != 0);
  CU_ASSERT(in->type < HC_DEVICE_TYPE_COUNT_);
  CU_ASSERT(in->compute_units >= 1);
  CU_ASSERT(in->max_work_group_size >= 1);
  CU_ASSERT(in->global_mem_bytes > 0);
  if (in->max_alloc_bytes) CU_ASSERT(in->max_alloc_bytes <= in->global_mem_bytes);
  size_t blen = strlen(g_backend);
  const char *id = hc_device_name(g_dev);
  CU_ASSERT(strncmp(id, g_backend, blen) == 0 && id[blen] == ':');
  CU_ASSERT_EQUAL(hc_device_finish(g_dev), HC_OK);
}

/* ------------------------------------------------------------ memory */

static const size_t k_sizes[] = {1, 3, 4097, (1u << 20) + 7};
static const size_t k_offsets[] = {0, 1, 3, 4096 + 5};

static void test_roundtrip(void) {
  for (size_t si = 0; si < sizeof k_sizes / sizeof *k_sizes; si++)
    for (size_t oi = 0; oi < sizeof k_offsets / sizeof *k_offsets; oi++) {
      size_t n = k_sizes[si], off = k_offsets[oi], total = off + n + 11;
      unsigned char *model = xmalloc(total), *data = xmalloc(n), *back = xmalloc(total);
      fill_random(model, total, (uint32_t)(si * 7 + oi));
      fill_random(data, n, (uint32_t)(si * 7 + oi + 1000));
      hc_buffer_t *b = new_buffer(total);
      TH_ASSERT_OK(hc_buffer_write(b, 0, model, total));
      TH_ASSERT_OK(hc_buffer_write(b, off, data, n));
      memcpy(model + off, data, n);
      TH_ASSERT_OK(hc_buffer_read(b, 0, back, total));
      ASSERT_SAME(back, model, total, "whole buffer after a write at an offset");
      memset(back, 0, total);
      TH_ASSERT_OK(hc_buffer_read(b, off, back, n));
      ASSERT_SAME(back, data, n, "read at an offset");
      hc_buffer_destroy(b);
      free(model);
      free(data);
      free(back);
    }
}

static void test_fill(void) {
  static const size_t psizes[] = {1, 2, 4, 8, 16};
  for (size_t pi = 0; pi < 5; pi++) {
    size_t ps = psizes[pi];
    size_t counts[] = {1, 97, ((size_t)1 << 20) / ps + 3};
    for (size_t ci = 0; ci < 3; ci++) {
      size_t off = ps * 3, n = counts[ci] * ps, total = off + n + 2 * ps + 5;
      unsigned char pat[16], *model = xmalloc(total), *back = xmalloc(total);
      for (size_t i = 0; i < ps; i++) pat[i] = (unsigned char)(0x11 * (i + 1) + pi);
      fill_random(model, total, (uint32_t)(pi * 3 + ci));
      hc_buffer_t *b = new_buffer(total);
      TH_ASSERT_OK(hc_buffer_write(b, 0, model, total));
      TH_ASSERT_OK(hc_buffer_fill(b, off, pat, ps, n));
      for (size_t i = 0; i < n; i++) model[off + i] = pat[i % ps];
      TH_ASSERT_OK(hc_buffer_read(b, 0, back, total));
      char what[64];
      snprintf(what, sizeof what, "fill with a %zu-byte pattern", ps);
      ASSERT_SAME(back, model, total, what);
      hc_buffer_destroy(b);
      free(model);
      free(back);
    }
  }
}

static void test_copy(void) {
  static const size_t cases[][3] = {/* bytes, src offset, dst offset */
                                    {1, 0, 0},
                                    {3, 1, 5},
                                    {4097, 7, 13},
                                    {(1u << 20) + 7, 3, 4096 + 1}};
  for (size_t c = 0; c < 4; c++) {
    size_t n = cases[c][0], soff = cases[c][1], doff = cases[c][2];
    size_t stotal = soff + n + 9, dtotal = doff + n + 17;
    unsigned char *src = xmalloc(stotal), *model = xmalloc(dtotal), *back = xmalloc(dtotal);
    fill_random(src, stotal, (uint32_t)c + 50);
    fill_random(model, dtotal, (uint32_t)c + 60);
    hc_buffer_t *s = new_buffer(stotal), *d = new_buffer(dtotal);
    TH_ASSERT_OK(hc_buffer_write(s, 0, src, stotal));
    TH_ASSERT_OK(hc_buffer_write(d, 0, model, dtotal));
    TH_ASSERT_OK(hc_buffer_copy(d, doff, s, soff, n));
    memcpy(model + doff, src + soff, n);
    TH_ASSERT_OK(hc_buffer_read(d, 0, back, dtotal));
    ASSERT_SAME(back, model, dtotal, "device-to-device copy");
    /* The source is untouched. */
    unsigned char *sback = xmalloc(stotal);
    TH_ASSERT_OK(hc_buffer_read(s, 0, sback, stotal));
    ASSERT_SAME(sback, src, stotal, "copy source");
    /* Within one buffer, between ranges that do not overlap. */
    TH_ASSERT_OK(hc_buffer_copy(d, 0, d, doff, n < doff ? n : doff));
    memcpy(model, model + doff, n < doff ? n : doff);
    TH_ASSERT_OK(hc_buffer_read(d, 0, back, dtotal));
    ASSERT_SAME(back, model, dtotal, "copy within one buffer");
    hc_buffer_destroy(s);
    hc_buffer_destroy(d);
    free(src);
    free(sback);
    free(model);
    free(back);
  }
}

/* ------------------------------------------------------------ launches */

/* Launches conf_index over nx x ny x nz (dims axes) with the given group
 * (or the backend's choice) and checks every element and the guard after
 * the range. */
static void check_index_launch(hc_kernel_t *k, uint32_t dims, int32_t nx, int32_t ny, int32_t nz, const size_t *local) {
  size_t count = (size_t)nx * (size_t)ny * (size_t)nz, guard = 67;
  size_t max = hc_kernel_max_group_size(k);
  if (local && local[0] * (dims > 1 ? local[1] : 1) * (dims > 2 ? local[2] : 1) > max) return;
  hc_buffer_t *b = new_buffer((count + guard) * 4);
  uint32_t sentinel = CONF_SENTINEL;
  TH_ASSERT_OK(hc_buffer_fill(b, 0, &sentinel, 4, (count + guard) * 4));
  int32_t lx = local ? (int32_t)local[0] : 0, ly = local && dims > 1 ? (int32_t)local[1] : 1,
          lz = local && dims > 2 ? (int32_t)local[2] : 1;
  hc_arg_t args[] = {HC_ARG_BUF(b),  HC_ARG_VAL(nx), HC_ARG_VAL(ny), HC_ARG_VAL(nz),
                     HC_ARG_VAL(lx), HC_ARG_VAL(ly), HC_ARG_VAL(lz)};
  size_t global[3] = {(size_t)nx, (size_t)ny, (size_t)nz};
  TH_ASSERT_OK(hc_kernel_launch(k, dims, global, local, 7, args));
  uint32_t *out = xmalloc((count + guard) * 4);
  TH_ASSERT_OK(hc_buffer_read(b, 0, out, (count + guard) * 4));
  size_t bad = 0;
  for (int32_t z = 0; z < nz; z++)
    for (int32_t y = 0; y < ny; y++)
      for (int32_t x = 0; x < nx; x++) {
        uint32_t got = out[((size_t)z * (size_t)ny + (size_t)y) * (size_t)nx + (size_t)x];
        uint32_t want = conf_index_value((uint32_t)x, (uint32_t)y, (uint32_t)z);
        if (got != want && bad++ < 3)
          fprintf(stderr, "%uD %dx%dx%d local %s: item (%d,%d,%d) holds 0x%x, expected 0x%x%s\n", dims, nx, ny, nz,
                  local ? "given" : "chosen", x, y, z, got, want,
                  got == CONF_BAD        ? " (index built-ins disagree)"
                  : got == CONF_SENTINEL ? " (never written)"
                                         : "");
      }
  for (size_t i = count; i < count + guard; i++)
    if (out[i] != CONF_SENTINEL && bad++ < 6)
      fprintf(stderr, "%uD %dx%dx%d: element %zu past the range was written (0x%x)\n", dims, nx, ny, nz, i, out[i]);
  CU_ASSERT_EQUAL(bad, 0);
  free(out);
  hc_buffer_destroy(b);
}

static void test_launch_1d(void) {
  hc_kernel_t *k = new_kernel("conf_index", conf_host_index);
  static const int32_t ns[] = {1, 3, 1000, 65537};
  for (size_t i = 0; i < 4; i++) check_index_launch(k, 1, ns[i], 1, 1, NULL);
  size_t l64[3] = {64, 1, 1}, l128[3] = {128, 1, 1}, l1[3] = {1, 1, 1};
  check_index_launch(k, 1, 1000, 1, 1, l64);
  check_index_launch(k, 1, 100, 1, 1, l128); /* one group wider than the range */
  check_index_launch(k, 1, 7, 1, 1, l1);
  hc_kernel_destroy(k);
}

static void test_launch_2d(void) {
  hc_kernel_t *k = new_kernel("conf_index", conf_host_index);
  check_index_launch(k, 2, 37, 19, 1, NULL);
  check_index_launch(k, 2, 1, 50, 1, NULL);
  check_index_launch(k, 2, 300, 1, 1, NULL);
  check_index_launch(k, 2, 513, 129, 1, NULL);
  size_t l84[3] = {8, 4, 1}, l161[3] = {16, 1, 1};
  check_index_launch(k, 2, 37, 19, 1, l84);
  check_index_launch(k, 2, 33, 3, 1, l161);
  hc_kernel_destroy(k);
}

static void test_launch_3d(void) {
  hc_kernel_t *k = new_kernel("conf_index", conf_host_index);
  check_index_launch(k, 3, 13, 7, 5, NULL);
  check_index_launch(k, 3, 1, 1, 33, NULL);
  check_index_launch(k, 3, 65, 17, 9, NULL);
  size_t l422[3] = {4, 2, 2}, l118[3] = {1, 1, 8};
  check_index_launch(k, 3, 13, 7, 5, l422);
  check_index_launch(k, 3, 3, 5, 17, l118);
  hc_kernel_destroy(k);
}

/* Many small launches in order, between a fill and a copy: the queue keeps
 * them in order and a read sees all of them. */
static void test_launch_order(void) {
  hc_kernel_t *k = new_kernel("conf_increment", conf_host_increment);
  int32_t n = 4099;
  hc_buffer_t *b = new_buffer((size_t)n * 4), *c = new_buffer((size_t)n * 4);
  uint32_t zero = 0;
  TH_ASSERT_OK(hc_buffer_fill(b, 0, &zero, 4, (size_t)n * 4));
  hc_arg_t args[] = {HC_ARG_BUF(b), HC_ARG_VAL(n)};
  size_t global = (size_t)n;
  for (int i = 0; i < 300; i++) TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 2, args));
  TH_ASSERT_OK(hc_buffer_copy(c, 0, b, 0, (size_t)n * 4));
  for (int i = 0; i < 5; i++) TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 2, args));
  uint32_t *out = xmalloc((size_t)n * 4);
  TH_ASSERT_OK(hc_buffer_read(c, 0, out, (size_t)n * 4));
  int bad = 0;
  for (int32_t i = 0; i < n; i++) bad += out[i] != 300;
  TH_ASSERT_OK(hc_buffer_read(b, 0, out, (size_t)n * 4));
  for (int32_t i = 0; i < n; i++) bad += out[i] != 305;
  TH_ASSERT_OK(hc_device_finish(g_dev));
  CU_ASSERT_EQUAL(bad, 0);
  free(out);
  hc_buffer_destroy(b);
  hc_buffer_destroy(c);
  hc_kernel_destroy(k);
}

static void test_scalar_args(void) {
  hc_kernel_t *k = new_kernel("conf_scalars", conf_host_scalars);
  hc_buffer_t *b = new_buffer(5 * 8);
  int32_t a = -123456;
  uint32_t u = 4000000000u;
  int64_t c = -(INT64_C(1) << 40) - 5;
  uint64_t d = UINT64_C(0xF000000000000002);
  float f = 2.75f;
  hc_arg_t args[] = {HC_ARG_BUF(b), HC_ARG_VAL(a), HC_ARG_VAL(u), HC_ARG_VAL(c), HC_ARG_VAL(d), HC_ARG_VAL(f)};
  size_t global = 1;
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 6, args));
  int64_t out[5];
  TH_ASSERT_OK(hc_buffer_read(b, 0, out, sizeof out));
  CU_ASSERT_EQUAL(out[0], a);
  CU_ASSERT_EQUAL(out[1], (int64_t)u);
  CU_ASSERT_EQUAL(out[2], c);
  CU_ASSERT_EQUAL(out[3], (int64_t)(d >> 1));
  CU_ASSERT_EQUAL(out[4], 11);
  hc_buffer_destroy(b);
  hc_kernel_destroy(k);
}

static void test_axpy_f32(void) {
  hc_kernel_t *k = new_kernel("conf_axpy_f", conf_host_axpy_f);
  int32_t n = 10007;
  float *x = xmalloc((size_t)n * 4), *y = xmalloc((size_t)n * 4), *r = xmalloc((size_t)n * 4), a = 1.5f;
  for (int32_t i = 0; i < n; i++) x[i] = (float)i * 0.25f, y[i] = (float)(n - i);
  hc_buffer_t *bx = new_buffer((size_t)n * 4), *by = new_buffer((size_t)n * 4);
  TH_ASSERT_OK(hc_buffer_write(bx, 0, x, (size_t)n * 4));
  TH_ASSERT_OK(hc_buffer_write(by, 0, y, (size_t)n * 4));
  hc_arg_t args[] = {HC_ARG_BUF(by), HC_ARG_BUF(bx), HC_ARG_VAL(a), HC_ARG_VAL(n)};
  size_t global = (size_t)n;
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 4, args));
  TH_ASSERT_OK(hc_buffer_read(by, 0, r, (size_t)n * 4));
  int bad = 0;
  for (int32_t i = 0; i < n; i++) bad += th_rel(r[i], (double)a * x[i] + y[i]) > 1e-6;
  CU_ASSERT_EQUAL(bad, 0);
  free(x), free(y), free(r);
  hc_buffer_destroy(bx);
  hc_buffer_destroy(by);
  hc_kernel_destroy(k);
}

static void test_axpy_f64(void) {
  if (!g_info.fp64) {
    th_skip("float64 kernels: the device has no fp64");
    return;
  }
  hc_kernel_t *k = new_kernel("conf_axpy_d", conf_host_axpy_d);
  int32_t n = 10007;
  double *x = xmalloc((size_t)n * 8), *y = xmalloc((size_t)n * 8), *r = xmalloc((size_t)n * 8), a = 1.0 / 3.0;
  for (int32_t i = 0; i < n; i++) x[i] = (double)i * 0.1, y[i] = 1.0 / (i + 1);
  hc_buffer_t *bx = new_buffer((size_t)n * 8), *by = new_buffer((size_t)n * 8);
  TH_ASSERT_OK(hc_buffer_write(bx, 0, x, (size_t)n * 8));
  TH_ASSERT_OK(hc_buffer_write(by, 0, y, (size_t)n * 8));
  hc_arg_t args[] = {HC_ARG_BUF(by), HC_ARG_BUF(bx), HC_ARG_VAL(a), HC_ARG_VAL(n)};
  size_t global = (size_t)n;
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 4, args));
  TH_ASSERT_OK(hc_buffer_read(by, 0, r, (size_t)n * 8));
  int bad = 0;
  /* Double precision proper (a float computation would miss by ~1e-8). */
  for (int32_t i = 0; i < n; i++) bad += th_rel(r[i], a * x[i] + y[i]) > 1e-14;
  CU_ASSERT_EQUAL(bad, 0);
  free(x), free(y), free(r);
  hc_buffer_destroy(bx);
  hc_buffer_destroy(by);
  hc_kernel_destroy(k);
}

/* Work-group reduction through local memory and barriers (the host
 * equivalent sums each group's items). */
static void test_local_reduction(void) {
  hc_kernel_t *k = new_kernel("conf_group_sum", conf_host_group_sum);
  size_t max = hc_kernel_max_group_size(k), group = 1;
  while (group * 2 <= 256 && group * 2 <= max) group *= 2;
  int32_t n = 100003;
  size_t groups = ((size_t)n + group - 1) / group;
  uint32_t *in = xmalloc((size_t)n * 4), *partial = xmalloc(groups * 4);
  for (int32_t i = 0; i < n; i++) in[i] = (uint32_t)(i % 1000) + 1u;
  hc_buffer_t *bi = new_buffer((size_t)n * 4), *bp = new_buffer(groups * 4);
  TH_ASSERT_OK(hc_buffer_write(bi, 0, in, (size_t)n * 4));
  hc_arg_t args[] = {HC_ARG_BUF(bi), HC_ARG_BUF(bp), HC_ARG_VAL(n)};
  size_t global = (size_t)n, local[3] = {group, 1, 1};
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, local, 3, args));
  TH_ASSERT_OK(hc_buffer_read(bp, 0, partial, groups * 4));
  int bad = 0;
  uint64_t total = 0, want_total = 0;
  for (size_t g = 0; g < groups; g++) {
    uint32_t want = 0;
    for (size_t i = g * group; i < (g + 1) * group && i < (size_t)n; i++) want += in[i];
    if (partial[g] != want && bad++ < 3)
      fprintf(stderr, "group %zu of %zu (size %zu): sum %u, expected %u\n", g, groups, group, partial[g], want);
    total += partial[g];
    want_total += want;
  }
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(total, want_total);
  free(in), free(partial);
  hc_buffer_destroy(bi);
  hc_buffer_destroy(bp);
  hc_kernel_destroy(k);
}

/* ------------------------------------------------------------ timers */

static double timed_busy(hc_kernel_t *k, hc_buffer_t *b, int32_t n, int32_t iters, int launches, double *wall) {
  hc_arg_t args[] = {HC_ARG_BUF(b), HC_ARG_VAL(n), HC_ARG_VAL(iters)};
  size_t global = (size_t)n;
  double secs = -1, t0 = hc_now();
  CU_ASSERT_EQUAL(hc_device_timer_begin(g_dev), HC_OK);
  for (int i = 0; i < launches; i++) CU_ASSERT_EQUAL(hc_kernel_launch(k, 1, &global, NULL, 3, args), HC_OK);
  hc_status_t st = hc_device_timer_end(g_dev, &secs);
  if (st != HC_OK) fprintf(stderr, "timer_end: %s\n", hc_last_error());
  CU_ASSERT_EQUAL(st, HC_OK);
  CU_ASSERT_EQUAL(hc_device_finish(g_dev), HC_OK);
  *wall = hc_now() - t0;
  return secs;
}

static void test_timers(void) {
  hc_kernel_t *k = new_kernel("conf_busy", conf_host_busy);
  /* On a GPU 64 iterations an item ran in a few microseconds, below the
   * timers' own noise (H100: one launch's span 26 us, three launches' 21). */
  int32_t n = 1 << 20, iters = hc_device_info(g_dev)->type == HC_DEVICE_GPU ? 4096 : 64;
  hc_buffer_t *b = new_buffer((size_t)n * 4);
  double w1, w3;
  /* An untimed launch first: the first touch of the buffer (and, under
   * ThreadSanitizer, of its shadow memory) can cost more than two launches,
   * which made the one-launch span the longer one. */
  timed_busy(k, b, n, iters, 1, &w1);
  double t1 = timed_busy(k, b, n, iters, 1, &w1), t3 = timed_busy(k, b, n, iters, 3, &w3);
  /* Device time is positive, within the wall time around the span, and
   * grows with the work. */
  CU_ASSERT(t1 > 0);
  CU_ASSERT(t3 > 0);
  CU_ASSERT(t1 <= w1 * 1.05 + 1e-3);
  CU_ASSERT(t3 <= w3 * 1.05 + 1e-3);
  CU_ASSERT(t3 > t1);
  if (!(t1 > 0 && t3 > t1)) fprintf(stderr, "device times: 1 launch %.6f s, 3 launches %.6f s\n", t1, t3);
  float probe[4];
  TH_ASSERT_OK(hc_buffer_read(b, 4 * 1000, probe, sizeof probe));
  float v = 1000 * 1e-6f;
  for (int i = 0; i < iters; i++) v = v * 0.999f + 0.5f;
  CU_ASSERT(th_rel(probe[0], v) < 1e-4);
  /* A span of transfers only, and an empty span. */
  double secs = -1;
  TH_ASSERT_OK(hc_device_timer_begin(g_dev));
  TH_ASSERT_OK(hc_buffer_fill(b, 0, &v, 4, (size_t)n * 4));
  TH_ASSERT_OK(hc_buffer_read(b, 0, probe, sizeof probe));
  TH_ASSERT_OK(hc_device_timer_end(g_dev, &secs));
  CU_ASSERT(secs > 0);
  CU_ASSERT_EQUAL(probe[3], v);
  secs = -1;
  TH_ASSERT_OK(hc_device_timer_begin(g_dev));
  TH_ASSERT_OK(hc_device_timer_end(g_dev, &secs));
  CU_ASSERT_EQUAL(secs, 0);
  /* A span starts at its first command: 0.2 s of the host's time before it
   * is not counted (the span stays under the wall time less the sleep). */
  double w0 = hc_now();
  TH_ASSERT_OK(hc_device_timer_begin(g_dev));
  nanosleep(&(struct timespec){0, 200000000}, NULL);
  hc_arg_t args[] = {HC_ARG_BUF(b), HC_ARG_VAL(n), HC_ARG_VAL(iters)};
  size_t global = (size_t)n;
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 3, args));
  TH_ASSERT_OK(hc_device_timer_end(g_dev, &secs));
  double wall = hc_now() - w0;
  if (!(secs > 0 && secs < wall - 0.15))
    fprintf(stderr, "span %.6f s in %.6f s of wall time (0.2 s asleep)\n", secs, wall);
  CU_ASSERT(secs > 0 && secs < wall - 0.15);
  /* Every command between the span's first and its end counts, not only
   * launches: a span of a large write alone, and one of write + launch +
   * read + copy, take most of the host's time around them (both block). */
  size_t big = (size_t)64 << 20;
  hc_buffer_t *B = new_buffer(big), *C = new_buffer(big);
  void *host = xmalloc(big);
  fill_random(host, big, 7);
  for (int form = 0; form < 2; form++) {
    w0 = hc_now();
    TH_ASSERT_OK(hc_device_timer_begin(g_dev));
    TH_ASSERT_OK(hc_buffer_write(B, 0, host, big));
    if (form) {
      TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 3, args));
      TH_ASSERT_OK(hc_buffer_copy(C, 0, B, 0, big));
      TH_ASSERT_OK(hc_buffer_read(C, 0, host, big));
    }
    TH_ASSERT_OK(hc_device_timer_end(g_dev, &secs));
    wall = hc_now() - w0;
    if (!(secs >= 0.5 * wall && secs <= wall * 1.05 + 1e-3))
      fprintf(stderr, "span of %s: %.6f s of %.6f s of host time\n", form ? "write, launch, copy, read" : "a write",
              secs, wall);
    CU_ASSERT(secs >= 0.5 * wall && secs <= wall * 1.05 + 1e-3);
  }
  free(host);
  hc_buffer_destroy(B);
  hc_buffer_destroy(C);
  /* Ending a span that was never begun is an error that says so. */
  CU_ASSERT_EQUAL(hc_device_timer_end(g_dev, &secs), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "no span is open"));
  hc_buffer_destroy(b);
  hc_kernel_destroy(k);
}

/* A span belongs to the thread that began it: another thread's command on
 * the device before the owner's first one does not open it (it did: the
 * span then counted the owner's 0.2 s of host time before its first
 * command). Under ThreadSanitizer this is also the race check of the span
 * state against other threads' commands. */
typedef struct {
  hc_buffer_t *b;
  void *host;
  size_t n;
  hc_status_t st;
} other_t;

static void *other_thread_write(void *arg) {
  other_t *o = arg;
  o->st = hc_buffer_write(o->b, 0, o->host, o->n);
  return NULL;
}

static void test_timer_span_is_the_threads(void) {
  hc_kernel_t *k = new_kernel("conf_busy", conf_host_busy);
  int32_t n = 1 << 16, iters = 16;
  hc_buffer_t *b = new_buffer((size_t)n * 4);
  other_t o = {new_buffer((size_t)8 << 20), xmalloc((size_t)8 << 20), (size_t)8 << 20, HC_ERR_INTERNAL};
  memset(o.host, 1, o.n);
  hc_arg_t args[] = {HC_ARG_BUF(b), HC_ARG_VAL(n), HC_ARG_VAL(iters)};
  size_t global = (size_t)n;
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 3, args)); /* builds, first touch */
  double w0 = hc_now(), secs = -1;
  TH_ASSERT_OK(hc_device_timer_begin(g_dev));
  pthread_t t;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, other_thread_write, &o), 0);
  pthread_join(t, NULL);
  TH_ASSERT_OK(o.st);
  nanosleep(&(struct timespec){0, 200000000}, NULL);
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 3, args));
  TH_ASSERT_OK(hc_device_timer_end(g_dev, &secs));
  double wall = hc_now() - w0;
  if (!(secs > 0 && secs < wall - 0.15))
    fprintf(stderr, "span %.6f s in %.6f s of wall time (0.2 s asleep)\n", secs, wall);
  CU_ASSERT(secs > 0 && secs < wall - 0.15);
  free(o.host);
  hc_buffer_destroy(o.b);
  hc_buffer_destroy(b);
  hc_kernel_destroy(k);
}

/* ------------------------------------------------------------ errors */

#define ASSERT_STATUS(expr, want)                                                                            \
  do {                                                                                                       \
    hc_status_t st_ = (expr);                                                                                \
    if (st_ != (want))                                                                                       \
      fprintf(stderr, "%s:%d: %s -> %s (%s), expected %s\n", __FILE__, __LINE__, #expr, hc_status_name(st_), \
              hc_last_error(), hc_status_name(want));                                                        \
    CU_ASSERT_EQUAL(st_, (want));                                                                            \
  } while (0)

/* The device still allocates, transfers and launches after an error. */
static void assert_device_works(void) {
  hc_kernel_t *k = new_kernel("conf_index", conf_host_index);
  check_index_launch(k, 1, 1000, 1, 1, NULL);
  hc_kernel_destroy(k);
}

static void test_error_ranges(void) {
  unsigned char tmp[64] = {0};
  hc_buffer_t *b = new_buffer(32), *c = new_buffer(32);
  ASSERT_STATUS(hc_buffer_write(b, 31, tmp, 2), HC_ERR_INVALID_ARG);
  ASSERT_STATUS(hc_buffer_write(b, 0, tmp, 33), HC_ERR_INVALID_ARG);
  ASSERT_STATUS(hc_buffer_read(b, 33, tmp, 0), HC_ERR_INVALID_ARG);
  ASSERT_STATUS(hc_buffer_read(b, 16, tmp, SIZE_MAX), HC_ERR_INVALID_ARG);
  ASSERT_STATUS(hc_buffer_read(b, SIZE_MAX, tmp, 2), HC_ERR_INVALID_ARG);
  ASSERT_STATUS(hc_buffer_copy(c, 20, b, 0, 13), HC_ERR_INVALID_ARG);
  ASSERT_STATUS(hc_buffer_copy(c, 0, b, 20, 13), HC_ERR_INVALID_ARG);
  ASSERT_STATUS(hc_buffer_fill(b, 30, tmp, 4, 4), HC_ERR_INVALID_ARG);
  /* Nothing of the refused calls reached the buffer. */
  unsigned char pat = 0x3c, back[32], want[32];
  memset(want, 0x3c, sizeof want);
  TH_ASSERT_OK(hc_buffer_fill(b, 0, &pat, 1, 32));
  ASSERT_STATUS(hc_buffer_write(b, 31, tmp, 2), HC_ERR_INVALID_ARG);
  TH_ASSERT_OK(hc_buffer_read(b, 0, back, 32));
  ASSERT_SAME(back, want, 32, "buffer after refused writes");
  hc_buffer_destroy(b);
  hc_buffer_destroy(c);
}

static void test_error_fill_pattern(void) {
  unsigned char pat[32] = {1, 2, 3};
  hc_buffer_t *b = new_buffer(64);
  ASSERT_STATUS(hc_buffer_fill(b, 0, pat, 3, 63), HC_ERR_INVALID_ARG);
  ASSERT_STATUS(hc_buffer_fill(b, 0, pat, 0, 64), HC_ERR_INVALID_ARG);
  ASSERT_STATUS(hc_buffer_fill(b, 0, pat, 32, 64), HC_ERR_INVALID_ARG);
  ASSERT_STATUS(hc_buffer_fill(b, 2, pat, 4, 8), HC_ERR_INVALID_ARG);  /* offset not a multiple */
  ASSERT_STATUS(hc_buffer_fill(b, 0, pat, 8, 12), HC_ERR_INVALID_ARG); /* size not a multiple */
  ASSERT_STATUS(hc_buffer_fill(b, 0, NULL, 4, 8), HC_ERR_INVALID_ARG);
  hc_buffer_destroy(b);
}

static void test_error_dims(void) {
  hc_kernel_t *k = new_kernel("conf_index", conf_host_index);
  hc_buffer_t *b = new_buffer(64);
  int32_t one = 1, zero = 0;
  hc_arg_t args[] = {HC_ARG_BUF(b),    HC_ARG_VAL(one),  HC_ARG_VAL(one), HC_ARG_VAL(one),
                     HC_ARG_VAL(zero), HC_ARG_VAL(zero), HC_ARG_VAL(zero)};
  size_t global[4] = {1, 1, 1, 1};
  ASSERT_STATUS(hc_kernel_launch(k, 0, global, NULL, 7, args), HC_ERR_INVALID_ARG);
  ASSERT_STATUS(hc_kernel_launch(k, 4, global, NULL, 7, args), HC_ERR_INVALID_ARG);
  hc_buffer_destroy(b);
  hc_kernel_destroy(k);
  assert_device_works();
}

/* A group larger than the kernel allows is refused (any status but OK),
 * not run wrongly, and the device goes on working. */
static void test_error_group_too_large(void) {
  hc_kernel_t *k = new_kernel("conf_index", conf_host_index);
  size_t max = hc_kernel_max_group_size(k);
  if (max >= ((size_t)1 << 20)) { /* host backends: no real limit */
    hc_kernel_destroy(k);
    return;
  }
  hc_buffer_t *b = new_buffer(4 * 4096);
  int32_t n = 4096, one = 1, zero = 0;
  hc_arg_t args[] = {HC_ARG_BUF(b),    HC_ARG_VAL(n),    HC_ARG_VAL(one), HC_ARG_VAL(one),
                     HC_ARG_VAL(zero), HC_ARG_VAL(zero), HC_ARG_VAL(zero)};
  size_t global[3] = {4096, 1, 1}, local[3] = {max * 2, 1, 1};
  hc_status_t st = hc_kernel_launch(k, 1, global, local, 7, args);
  if (st == HC_OK) st = hc_device_finish(g_dev);
  CU_ASSERT_NOT_EQUAL(st, HC_OK);
  CU_ASSERT(hc_last_error()[0] != '\0');
  hc_buffer_destroy(b);
  hc_kernel_destroy(k);
  assert_device_works();
}

static void test_error_build(void) {
  if (!takes_source()) {
    th_skip("compile errors: the device takes host kernels only");
    return;
  }
  static const char bad_src[] = "HC_KERNEL void conf_broken(HC_GLOBAL float *o) {\n"
                                "  o[0] = conf_undefined_symbol_xyz * 2.0f;\n"
                                "}\n";
  hc_kernel_desc_t desc = {sizeof desc, "conf_broken", bad_src, NULL, NULL};
  hc_kernel_t *k = NULL;
  ASSERT_STATUS(hc_kernel_create(g_dev, &desc, &k), HC_ERR_BUILD);
  CU_ASSERT_PTR_NULL(k);
  /* The compiler's own message names the culprit. */
  const char *msg = hc_last_error();
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "conf_undefined_symbol_xyz"));
  if (!strstr(msg, "conf_undefined_symbol_xyz")) fprintf(stderr, "build error message: %s\n", msg);
  assert_device_works();
}

static void test_error_kernel_name(void) {
  if (!takes_source()) {
    th_skip("missing kernel names: the device takes host kernels only");
    return;
  }
  hc_kernel_desc_t desc = {sizeof desc, "conf_no_such_kernel", conf_source, NULL, NULL};
  hc_kernel_t *k = NULL;
  ASSERT_STATUS(hc_kernel_create(g_dev, &desc, &k), HC_ERR_NOT_FOUND);
  CU_ASSERT_PTR_NULL(k);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "conf_no_such_kernel"));
  assert_device_works();
}

static void test_error_huge_alloc(void) {
  hc_buffer_t *b = NULL;
  uint64_t mem = g_info.global_mem_bytes;
  size_t huge = mem && mem < SIZE_MAX / 4 ? (size_t)mem * 2 : SIZE_MAX / 2;
  ASSERT_STATUS(hc_buffer_create(g_dev, huge, &b), HC_ERR_DEVICE_MEMORY);
  CU_ASSERT_PTR_NULL(b);
  ASSERT_STATUS(hc_buffer_create(g_dev, SIZE_MAX / 2, &b), HC_ERR_DEVICE_MEMORY);
  CU_ASSERT_PTR_NULL(b);
  assert_device_works();
}

/* Fills the device with its largest buffers until it refuses (a driver
 * that overcommits may never refuse: then 2x its memory is the limit). A
 * refusal is HC_ERR_DEVICE_MEMORY, and afterwards the device works. Host
 * devices are skipped: their memory is the test's own. */
static void test_error_exhaust(void) {
  if (!takes_source() || !g_info.max_alloc_bytes || !g_info.global_mem_bytes) {
    th_skip("device memory exhaustion: not run on host devices");
    return;
  }
  enum { MAXB = 64 };
  hc_buffer_t *bufs[MAXB];
  size_t chunk = (size_t)g_info.max_alloc_bytes, n = 0;
  uint64_t limit = 2 * g_info.global_mem_bytes;
  hc_status_t st = HC_OK;
  while (n < MAXB && (uint64_t)(n + 1) * chunk <= limit) {
    st = hc_buffer_create(g_dev, chunk, &bufs[n]);
    if (st != HC_OK) break;
    n++;
  }
  if (st != HC_OK) {
    if (st != HC_ERR_DEVICE_MEMORY) fprintf(stderr, "exhaustion: %s: %s\n", hc_status_name(st), hc_last_error());
    CU_ASSERT_EQUAL(st, HC_ERR_DEVICE_MEMORY);
  }
  while (n) hc_buffer_destroy(bufs[--n]);
  assert_device_works();
}

/* ------------------------------------------------------------ other devices */

/* Index of a device other than ours, or -1. */
static int other_device(void) {
  hc_context_t *ctx = th_context();
  for (uint32_t i = 0; i < hc_device_count(ctx); i++)
    if (strcmp(hc_device_id(ctx, i), hc_device_name(g_dev)) != 0) return (int)i;
  return -1;
}

static void test_cross_device(void) {
  int other = other_device();
  if (other < 0) {
    th_skip("cross-device tests: only one device");
    return;
  }
  hc_device_t *od = NULL;
  TH_ASSERT_OK(hc_device_open(th_context(), (uint32_t)other, &od));
  size_t n = 70001;
  unsigned char *src = xmalloc(n), *model = xmalloc(n + 19), *back = xmalloc(n + 19);
  fill_random(src, n, 7);
  fill_random(model, n + 19, 8);
  hc_buffer_t *mine = new_buffer(n + 5), *theirs = NULL;
  TH_ASSERT_OK(hc_buffer_create(od, n + 19, &theirs));
  TH_ASSERT_OK(hc_buffer_write(mine, 5, src, n));
  TH_ASSERT_OK(hc_buffer_write(theirs, 0, model, n + 19));
  /* Across devices the core moves the bytes; offsets hold on both sides. */
  TH_ASSERT_OK(hc_buffer_copy(theirs, 11, mine, 5, n));
  memcpy(model + 11, src, n);
  TH_ASSERT_OK(hc_buffer_read(theirs, 0, back, n + 19));
  ASSERT_SAME(back, model, n + 19, "copy to another device");
  TH_ASSERT_OK(hc_buffer_copy(mine, 0, theirs, 11, n));
  TH_ASSERT_OK(hc_buffer_read(mine, 0, back, n));
  ASSERT_SAME(back, src, n, "copy back from another device");
  /* A kernel never takes another device's buffer. */
  hc_kernel_t *k = new_kernel("conf_index", conf_host_index);
  int32_t one = 1, zero = 0;
  hc_arg_t args[] = {HC_ARG_BUF(theirs), HC_ARG_VAL(one),  HC_ARG_VAL(one), HC_ARG_VAL(one),
                     HC_ARG_VAL(zero),   HC_ARG_VAL(zero), HC_ARG_VAL(zero)};
  size_t global = 1;
  ASSERT_STATUS(hc_kernel_launch(k, 1, &global, NULL, 7, args), HC_ERR_INVALID_ARG);
  hc_kernel_destroy(k);
  hc_buffer_destroy(mine);
  hc_buffer_destroy(theirs);
  hc_device_close(od);
  free(src), free(model), free(back);
}

/* A second context builds the same kernel again: it comes from the
 * backend's on-disk cache (when enabled) and must behave the same. */
static void test_second_context(void) {
  hc_context_t *ctx = NULL;
  TH_ASSERT_OK(hc_context_create(NULL, &ctx));
  uint32_t idx;
  hc_device_t *dev = NULL;
  TH_ASSERT_OK(hc_device_find(ctx, hc_device_name(g_dev), &idx));
  TH_ASSERT_OK(hc_device_open(ctx, idx, &dev));
  double t0 = hc_now();
  hc_kernel_t *k = new_kernel_on(dev, "conf_index", conf_host_index);
  double build = hc_now() - t0;
  int32_t nx = 333, one = 1, zero = 0;
  hc_buffer_t *b = NULL;
  TH_ASSERT_OK(hc_buffer_create(dev, (size_t)nx * 4, &b));
  hc_arg_t args[] = {HC_ARG_BUF(b),    HC_ARG_VAL(nx),   HC_ARG_VAL(one), HC_ARG_VAL(one),
                     HC_ARG_VAL(zero), HC_ARG_VAL(zero), HC_ARG_VAL(zero)};
  size_t global = (size_t)nx;
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 7, args));
  uint32_t out[333];
  TH_ASSERT_OK(hc_buffer_read(b, 0, out, sizeof out));
  int bad = 0;
  for (int32_t i = 0; i < nx; i++) bad += out[i] != conf_index_value((uint32_t)i, 0, 0);
  CU_ASSERT_EQUAL(bad, 0);
  if (getenv("HC_CONFORMANCE_VERBOSE")) printf("\nsecond context: kernel ready in %.3f s\n", build);
  hc_buffer_destroy(b);
  hc_kernel_destroy(k);
  hc_device_close(dev);
  hc_context_destroy(ctx);
}

/* ------------------------------------------------------------ main */

static void always_fail(void) { CU_FAIL("the device exists but could not be opened (see stderr)"); }

static void register_tests(void) {
  char name[96];
  snprintf(name, sizeof name, "conformance[%s]", g_backend);
  CU_pSuite s = CU_add_suite(name, NULL, NULL);
  if (!s) return;
  uint32_t idx;
  if (hc_device_find(th_context(), g_backend, &idx) != HC_OK) {
    char why[700];
    snprintf(why, sizeof why, "no %s device (%s)", g_backend, hc_last_error());
    th_skip(why);
    return;
  }
  g_dev = th_device(g_backend);
  if (!g_dev) {
    CU_ADD_TEST(s, always_fail);
    return;
  }
  g_info = *hc_device_info(g_dev);
  printf("conformance of %s: %s (%s)\n", hc_device_name(g_dev), g_info.name, g_info.platform);
  CU_ADD_TEST(s, test_device_info);
  CU_ADD_TEST(s, test_roundtrip);
  CU_ADD_TEST(s, test_fill);
  CU_ADD_TEST(s, test_copy);
  CU_ADD_TEST(s, test_launch_1d);
  CU_ADD_TEST(s, test_launch_2d);
  CU_ADD_TEST(s, test_launch_3d);
  CU_ADD_TEST(s, test_launch_order);
  CU_ADD_TEST(s, test_scalar_args);
  CU_ADD_TEST(s, test_axpy_f32);
  CU_ADD_TEST(s, test_axpy_f64);
  CU_ADD_TEST(s, test_local_reduction);
  CU_ADD_TEST(s, test_timers);
  CU_ADD_TEST(s, test_timer_span_is_the_threads);
  CU_ADD_TEST(s, test_error_ranges);
  CU_ADD_TEST(s, test_error_fill_pattern);
  CU_ADD_TEST(s, test_error_dims);
  CU_ADD_TEST(s, test_error_group_too_large);
  CU_ADD_TEST(s, test_error_build);
  CU_ADD_TEST(s, test_error_kernel_name);
  CU_ADD_TEST(s, test_error_huge_alloc);
  CU_ADD_TEST(s, test_error_exhaust);
  CU_ADD_TEST(s, test_cross_device);
  CU_ADD_TEST(s, test_second_context);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--backend=", 10) && argv[i][10]) {
      g_backend = argv[i] + 10;
    } else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
      g_backend = argv[++i];
    } else {
      fprintf(stderr, "usage: %s [--backend=NAME]   (default: cpu)\n", argv[0]);
      return 2;
    }
  }
  return th_main(argc, argv, register_tests);
}
