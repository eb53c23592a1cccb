/* hc-ceilings: the ceilings of one device, measured through hc in the same
 * run as the benchmarks that are compared with them:
 *   read_gbs    a reduction that reads a large buffer once
 *   copy_gbs    device-to-device copy (bytes read + written) / time: the
 *               faster of the backend's buffer copy (a GPU's copy engine) and
 *               a copy kernel over all compute units (the cpu backend's
 *               buffer copy is one memcpy on one core: 13-20 GB/s on a
 *               16-core host that streams 70-80 GB/s, no roofline); on host
 *               devices also a copy kernel with non-temporal stores
 *   fp32_gflops, fp64_gflops   many independent FMA chains per item
 *   launch_us   empty-kernel launch overhead over 65536 items (many
 *               launches, then finish); launch_1item_us for a 1-item range
 * Usage: hc-ceilings [--device=SPEC] [--json] [--quick] */
#include <hc/hc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHAINS 128 /* independent FMA chains per work-item (host: per group) */
#define ITERS 256

static const char src[] =
    "HC_KERNEL void empty(const long n) { }\n"
    "HC_KERNEL void read_sum(const long n, HC_GLOBAL const float4 *x, HC_GLOBAL float *partial) {\n"
    "  HC_LOCAL float red[256];\n"
    "  long i = hc_global_id(0), stride = hc_global_size(0);\n"
    "  float acc = 0.0f;\n"
    "  for (; i < n; i += stride) { float4 v = x[i]; acc += (v.x + v.y) + (v.z + v.w); }\n"
    "  long l = hc_local_id(0);\n"
    "  red[l] = acc;\n"
    "  HC_BARRIER();\n"
    "  for (long s = hc_local_size(0) / 2; s > 0; s /= 2) { if (l < s) red[l] += red[l + s]; HC_BARRIER(); }\n"
    "  if (l == 0) partial[hc_group_id(0)] = red[0];\n"
    "}\n"
    "HC_KERNEL void copy4(const long n, HC_GLOBAL const float4 *x, HC_GLOBAL float4 *y) {\n"
    "  for (long i = hc_global_id(0); i < n; i += hc_global_size(0)) y[i] = x[i];\n"
    "}\n"
    "HC_KERNEL void fma_f32(const long n, const float m, const float c, HC_GLOBAL float *out) {\n"
    "  long i = hc_global_id(0);\n"
    "  float a0 = (float)i, a1 = a0 + 1.0f, a2 = a0 + 2.0f, a3 = a0 + 3.0f, a4 = a0 + 4.0f, a5 = a0 + 5.0f, a6 = a0 + 6.0f, a7 = a0 + 7.0f;\n"
    "  for (int k = 0; k < 1024; k++) {\n"
    "    a0 = fma(a0, m, c); a1 = fma(a1, m, c); a2 = fma(a2, m, c); a3 = fma(a3, m, c);\n"
    "    a4 = fma(a4, m, c); a5 = fma(a5, m, c); a6 = fma(a6, m, c); a7 = fma(a7, m, c);\n"
    "  }\n"
    "  if (i < n) out[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));\n"
    "}\n"
    "#ifdef HC_HAS_FP64\n"
    "HC_KERNEL void fma_f64(const long n, const double m, const double c, HC_GLOBAL double *out) {\n"
    "  long i = hc_global_id(0);\n"
    "  double a0 = (double)i, a1 = a0 + 1.0, a2 = a0 + 2.0, a3 = a0 + 3.0, a4 = a0 + 4.0, a5 = a0 + 5.0, a6 = a0 + 6.0, a7 = a0 + 7.0;\n"
    "  for (int k = 0; k < 1024; k++) {\n"
    "    a0 = fma(a0, m, c); a1 = fma(a1, m, c); a2 = fma(a2, m, c); a3 = fma(a3, m, c);\n"
    "    a4 = fma(a4, m, c); a5 = fma(a5, m, c); a6 = fma(a6, m, c); a7 = fma(a7, m, c);\n"
    "  }\n"
    "  if (i < n) out[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));\n"
    "}\n"
    "#endif\n";
/* GPU FMA kernel: 8 chains x 1024 iterations x 2 flops per item. */
#define GPU_FLOPS_PER_ITEM (8.0 * 1024 * 2)

static void empty_host(const hc_host_group_t *g, void *const *a) {
  (void)g;
  (void)a;
}

/* Built for AVX-512, AVX2 and the baseline, chosen at load: a read loop of
 * SSE2 loads kept fewer lines in flight than simpson's AVX-512 sums, and
 * the "ceiling" read below the workload it bounds. (Not under TSan, whose
 * runtime is not up when ifunc resolvers run: see jacobi's host_kernels.c.) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void read_sum_host(const hc_host_group_t *g, void *const *a) {
  const float *x = a[1];
  float *partial = a[2];
  float acc[16] = {0};
  size_t lo = g->lo[0] * 4, hi = g->hi[0] * 4;
  size_t i = lo;
  for (; i + 16 <= hi; i += 16)
    for (int k = 0; k < 16; k++) acc[k] += x[i + k];
  float s = 0;
  for (; i < hi; i++) s += x[i];
  for (int k = 0; k < 16; k++) s += acc[k];
  partial[g->group_id[0]] = s;
}

static void copy4_host(const hc_host_group_t *g, void *const *a) {
  const size_t lo = g->lo[0] * 16, hi = g->hi[0] * 16;
  memcpy((char *)a[2] + lo, (const char *)a[1] + lo, hi - lo);
}

/* The copy with non-temporal stores: memcpy takes them only above a
 * threshold that glibc derives from the L3's size, and with ordinary
 * stores every written line is read first (3 bytes moved for the 2
 * counted). An EPYC VM whose sysconf reports a 320 MiB L3 copied 16 MiB
 * chunks that way, and the "ceiling" read 2/3 of the memory's bandwidth. */
#if defined(__SSE2__)
#include <emmintrin.h>
static void copy4_stream_host(const hc_host_group_t *g, void *const *a) {
  const __m128i *x = a[1];
  __m128i *y = a[2];
  for (size_t i = g->lo[0]; i < g->hi[0]; i++) _mm_stream_si128(y + i, _mm_load_si128(x + i));
  _mm_sfence();
}
#define COPY_STREAM_HOST copy4_stream_host
#else
#define COPY_STREAM_HOST copy4_host
#endif

/* Host FMA: each item of the group is CHAINS independent lanes. */
#define HOST_FMA(NAME, T, FMA)                                                     \
  static void NAME(const hc_host_group_t *g, void *const *a) {                     \
    const T m = *(const T *)a[1], c = *(const T *)a[2];                            \
    T *out = a[3];                                                                 \
    for (size_t item = g->lo[0]; item < g->hi[0]; item++) {                        \
      T x[CHAINS];                                                                 \
      for (int k = 0; k < CHAINS; k++) x[k] = (T)(item + (size_t)k);              \
      for (int it = 0; it < ITERS; it++)                                           \
        for (int k = 0; k < CHAINS; k++) x[k] = x[k] * m + c;                      \
      T s = 0;                                                                     \
      for (int k = 0; k < CHAINS; k++) s += x[k];                                  \
      out[item] = s;                                                               \
    }                                                                              \
  }
HOST_FMA(fma_f32_host, float, fmaf)
HOST_FMA(fma_f64_host, double, fma)
#define HOST_FLOPS_PER_ITEM ((double)CHAINS * ITERS * 2)

static int fail(const char *what) {
  fprintf(stderr, "hc-ceilings: %s: %s\n", what, hc_last_error());
  return 4;
}

typedef struct {
  hc_device_t *dev;
  int quick;
} ctx_t;

static hc_kernel_t *kernel(ctx_t *c, const char *name, hc_host_kernel_fn fn) {
  hc_kernel_desc_t d = {sizeof d, name, src, "-DHC_CEILINGS", fn};
  hc_kernel_t *k = NULL;
  if (hc_kernel_create(c->dev, &d, &k) != HC_OK) return NULL;
  return k;
}

/* Per-launch overhead of an empty kernel over `items` items: 1 item runs
 * inline on the host backends, a wide range wakes every worker (what real
 * kernels pay). */
static double launch_us(ctx_t *c, size_t items) {
  hc_kernel_t *k = kernel(c, "empty", empty_host);
  if (!k) return -1;
  long n = (long)items;
  hc_arg_t a = HC_ARG_VAL(n);
  size_t g = items;
  int reps = c->quick ? 2000 : 20000;
  double best = 1e9;
  for (int r = 0; r < 3; r++) {
    hc_device_finish(c->dev);
    double t0 = hc_now();
    for (int i = 0; i < reps; i++) hc_kernel_launch(k, 1, &g, NULL, 1, &a);
    hc_device_finish(c->dev);
    double t = (hc_now() - t0) / reps * 1e6;
    if (t < best) best = t;
  }
  hc_kernel_destroy(k);
  return best;
}

static double read_gbs(ctx_t *c, size_t bytes) {
  const hc_device_info_t *in = hc_device_info(c->dev);
  hc_buffer_t *x = NULL, *p = NULL;
  hc_kernel_t *k = kernel(c, "read_sum", read_sum_host);
  double best = -1;
  size_t n4 = bytes / 16;
  int host = hc_kernel_language(k) == HC_LANG_HOST;
  size_t local = 256, groups = host ? 64 * in->compute_units : 8 * (in->compute_units ? in->compute_units : 16);
  size_t global = host ? n4 : groups * local;
  if (host) local = (n4 + groups - 1) / groups;
  size_t ngroups = (global + local - 1) / local;
  if (!k || hc_buffer_create(c->dev, n4 * 16, &x) != HC_OK || hc_buffer_create(c->dev, ngroups * 4, &p) != HC_OK)
    goto out;
  float one = 1.0f;
  if (hc_buffer_fill(x, 0, &one, 4, n4 * 16) != HC_OK) goto out;
  long n = (long)n4;
  hc_arg_t a[3] = {HC_ARG_VAL(n), HC_ARG_BUF(x), HC_ARG_BUF(p)};
  for (int r = 0; r < (c->quick ? 3 : 8); r++) {
    double dt = 0;
    hc_device_finish(c->dev);
    hc_device_timer_begin(c->dev);
    if (hc_kernel_launch(k, 1, &global, &local, 3, a) != HC_OK) goto out;
    hc_device_timer_end(c->dev, &dt);
    double gbs = (double)(n4 * 16) / dt / 1e9;
    if (gbs > best) best = gbs;
  }
out:
  hc_kernel_destroy(k);
  hc_buffer_destroy(x);
  hc_buffer_destroy(p);
  return best;
}

static double copy_gbs(ctx_t *c, size_t bytes) {
  const hc_device_info_t *in = hc_device_info(c->dev);
  hc_buffer_t *a = NULL, *b = NULL;
  hc_kernel_t *k = kernel(c, "copy4", copy4_host), *ks = NULL;
  double best = -1;
  bytes = bytes / 16 * 16;
  if (!k || hc_buffer_create(c->dev, bytes, &a) != HC_OK || hc_buffer_create(c->dev, bytes, &b) != HC_OK) goto out;
  /* host devices: the streaming-store copy too (buffers are 64-byte aligned) */
  if (hc_kernel_language(k) == HC_LANG_HOST && !(ks = kernel(c, "copy4", COPY_STREAM_HOST))) goto out;
  unsigned char z = 1;
  hc_buffer_fill(a, 0, &z, 1, bytes);
  hc_buffer_fill(b, 0, &z, 1, bytes);
  /* host: contiguous chunks, 16 per worker; GPUs: a grid-stride loop */
  long n4 = (long)(bytes / 16);
  int host = hc_kernel_language(k) == HC_LANG_HOST;
  size_t cu = in->compute_units ? in->compute_units : 16, local = 256;
  size_t global = host ? (size_t)n4 : 32 * cu * local;
  if (host) local = ((size_t)n4 + 16 * cu - 1) / (16 * cu);
  hc_arg_t args[3] = {HC_ARG_VAL(n4), HC_ARG_BUF(a), HC_ARG_BUF(b)};
  for (int r = 0; r < (c->quick ? 3 : 8); r++)
    for (int way = 0; way < (ks ? 3 : 2); way++) {
      double dt = 0;
      hc_device_finish(c->dev);
      hc_device_timer_begin(c->dev);
      if ((way ? hc_kernel_launch(way == 1 ? k : ks, 1, &global, &local, 3, args) : hc_buffer_copy(b, 0, a, 0, bytes)) !=
          HC_OK)
        goto out;
      hc_device_timer_end(c->dev, &dt);
      double gbs = 2.0 * (double)bytes / dt / 1e9;
      if (gbs > best) best = gbs;
    }
out:
  hc_kernel_destroy(k);
  hc_kernel_destroy(ks);
  hc_buffer_destroy(a);
  hc_buffer_destroy(b);
  return best;
}

static double fma_gflops(ctx_t *c, int f64) {
  const hc_device_info_t *in = hc_device_info(c->dev);
  if (f64 && !in->fp64) return -1;
  hc_kernel_t *k = kernel(c, f64 ? "fma_f64" : "fma_f32", f64 ? fma_f64_host : fma_f32_host);
  hc_buffer_t *o = NULL;
  double best = -1;
  if (!k) return -1;
  int host = hc_kernel_language(k) == HC_LANG_HOST;
  size_t items = host ? 512 * (size_t)in->compute_units : (size_t)(in->compute_units ? in->compute_units : 16) * 2048 * 8;
  if (c->quick && host) items /= 4;
  if (hc_buffer_create(c->dev, items * 8, &o) != HC_OK) goto out;
  long n = (long)items;
  float m32 = 0.999f, c32 = 0.001f;
  double m64 = 0.999, c64 = 0.001;
  hc_arg_t a[4] = {HC_ARG_VAL(n), f64 ? HC_ARG_VAL(m64) : HC_ARG_VAL(m32), f64 ? HC_ARG_VAL(c64) : HC_ARG_VAL(c32),
                   HC_ARG_BUF(o)};
  size_t local = host ? 8 : 256;
  for (int r = 0; r < (c->quick ? 2 : 5); r++) {
    double dt = 0;
    hc_device_finish(c->dev);
    hc_device_timer_begin(c->dev);
    if (hc_kernel_launch(k, 1, &items, &local, 4, a) != HC_OK) goto out;
    hc_device_timer_end(c->dev, &dt);
    double g = (double)items * (host ? HOST_FLOPS_PER_ITEM : GPU_FLOPS_PER_ITEM) / dt / 1e9;
    if (g > best) best = g;
  }
out:
  hc_kernel_destroy(k);
  hc_buffer_destroy(o);
  return best;
}

int main(int argc, char **argv) {
  const char *spec = "auto";
  int json = 0, quick = 0;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--device=", 9)) spec = argv[i] + 9;
    else if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else {
      fprintf(stderr, "usage: hc-ceilings [--device=SPEC] [--json] [--quick]\n");
      return 2;
    }
  }
  hc_context_t *ctx = NULL;
  if (hc_context_create(NULL, &ctx) != HC_OK) return fail("context");
  uint32_t idx;
  hc_device_t *dev = NULL;
  if (hc_device_find(ctx, spec, &idx) != HC_OK || hc_device_open(ctx, idx, &dev) != HC_OK) {
    int rc = fail(spec);
    hc_context_destroy(ctx);
    return rc == 4 ? 3 : rc;
  }
  ctx_t c = {dev, quick};
  const hc_device_info_t *in = hc_device_info(dev);
  size_t big = in->type == HC_DEVICE_GPU ? (size_t)1 << 30 : (size_t)512 << 20;
  if (quick) big /= 4;
  if (in->max_alloc_bytes && big > in->max_alloc_bytes / 2) big = in->max_alloc_bytes / 2;
  double lu = launch_us(&c, 1 << 16), lu1 = launch_us(&c, 1), rd = read_gbs(&c, big), cp = copy_gbs(&c, big);
  double f32 = fma_gflops(&c, 0), f64 = fma_gflops(&c, 1);
  if (json) {
    printf("{\"device\": \"%s\", \"name\": \"%s\", \"bytes\": %zu, \"read_gbs\": %.4f, \"copy_gbs\": %.4f, "
           "\"fp32_gflops\": %.2f, \"fp64_gflops\": %.2f, \"launch_us\": %.4f, \"launch_1item_us\": %.4f}\n",
           hc_device_name(dev), in->name, big, rd, cp, f32, f64, lu, lu1);
  } else {
    printf("%s (%s)\n  read      %10.2f GB/s\n  copy      %10.2f GB/s (read + write)\n  fp32      %10.1f GFLOP/s\n"
           "  fp64      %10.1f GFLOP/s\n  launch    %10.3f us (empty kernel, 65536 items; 1 item: %.3f us)\n",
           hc_device_name(dev), in->name, rd, cp, f32, f64, lu, lu1);
  }
  hc_device_close(dev);
  hc_context_destroy(ctx);
  return 0;
}
