/* hc-ceilings: the ceilings of one device, measured through hc in the same
 * run as the benchmarks that are compared with them. On host devices every
 * kernel runs on all of the backend's workers (HC_CPU_THREADS, else the
 * online cores) with the widest vectors the CPU has (isa in the output).
 *   read_gbs    a reduction that reads a buffer once (vector loads, eight
 *               accumulators; on host devices the faster of one stream and
 *               four interleaved streams per thread); by default 4x the
 *               last-level cache at least,
 *               --bytes=N for another working set (in cache when small)
 *   copy_gbs    device-to-device copy (bytes read + written) / time: the
 *               faster of the backend's buffer copy (a GPU's copy engine) and
 *               a copy kernel over all compute units (the cpu backend's
 *               buffer copy is one memcpy on one core, no roofline); on host
 *               devices also a copy kernel with non-temporal stores
 *   fp32_gflops, fp64_gflops   independent FMA chains, 2 flops per lane and
 *               FMA (so fp32_gflops / 2 is the rate of FMA-pipe lane slots)
 *   launch_us   empty-kernel launch overhead over 65536 items (many
 *               launches, then finish); launch_1item_us for a 1-item range
 *   link        devices with their own memory (not host devices), 64 MiB
 *               (--quick 16 MiB) moved whole, best of the repetitions:
 *     h2d_gbs, d2h_gbs    hc_buffer_write / hc_buffer_read from and into
 *                         hc_host_alloc's memory (page-locked where the
 *                         backend offers it): the link's ceiling
 *     h2d_pageable_gbs, d2h_pageable_gbs   the same from and into
 *                         ordinary (malloc'd, touched) memory
 *     handover_to_cpu_gbs, handover_from_cpu_gbs   hc_buffer_copy between
 *                         this device and a cpu device's buffer created
 *                         just before (what a pipeline's hand-over
 *                         between the two does; the buffer may be one
 *                         kept from the repetition before, page-locked:
 *                         HC_HOST_CACHE, HC_HOST_PIN_AFTER); -1 without a
 *                         cpu device
 * Usage: hc-ceilings [--device=SPEC] [--json] [--quick] [--bytes=N]
 *                    [--only=read,copy,fp32,fp64,launch,link]
 * A ceiling not measured (--only, no fp64) prints as -1. */
#include <hc/hc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    "  float a0 = (float)i, a1 = a0 + 1.0f, a2 = a0 + 2.0f, a3 = a0 + 3.0f, a4 = a0 + 4.0f, a5 = a0 + 5.0f, a6 = a0 + "
    "6.0f, a7 = a0 + 7.0f;\n"
    "  for (int k = 0; k < 1024; k++) {\n"
    "    a0 = fma(a0, m, c); a1 = fma(a1, m, c); a2 = fma(a2, m, c); a3 = fma(a3, m, c);\n"
    "    a4 = fma(a4, m, c); a5 = fma(a5, m, c); a6 = fma(a6, m, c); a7 = fma(a7, m, c);\n"
    "  }\n"
    "  if (i < n) out[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));\n"
    "}\n"
    "#ifdef HC_HAS_FP64\n"
    "HC_KERNEL void fma_f64(const long n, const double m, const double c, HC_GLOBAL double *out) {\n"
    "  long i = hc_global_id(0);\n"
    "  double a0 = (double)i, a1 = a0 + 1.0, a2 = a0 + 2.0, a3 = a0 + 3.0, a4 = a0 + 4.0, a5 = a0 + 5.0, a6 = a0 + "
    "6.0, a7 = a0 + 7.0;\n"
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

/* The host kernels below use the widest vectors the CPU has: AVX-512, else
 * AVX2 with FMA, else SSE2 (x86-64's baseline), chosen once at start from
 * __builtin_cpu_supports and built with target attributes (the default
 * build targets baseline x86-64, whose code would measure a quarter of an
 * AVX-512 CPU's FMA rate and fewer loads in flight than the workloads'
 * own clones). Elsewhere a portable loop the compiler vectorises. */
#if defined(__x86_64__) && defined(__GNUC__)
#define HOST_X86 1
#include <immintrin.h>
enum { ISA_BASE, ISA_SSE2, ISA_AVX2, ISA_AVX512 };
static const char *const isa_names[] = {"portable", "sse2", "avx2+fma", "avx512f"};
static int host_isa(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return ISA_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return ISA_AVX2;
  return ISA_SSE2;
}
#else
#define HOST_X86 0
enum { ISA_BASE };
static const char *const isa_names[] = {"portable"};
static int host_isa(void) { return ISA_BASE; }
#endif
static int isa; /* host_isa(), set in main before any kernel runs */

/* Read: eight independent vector sums, so that the adds' latency never
 * limits the loads in flight; each group sums its contiguous slab. */
#define READ_ACC 8
#if HOST_X86
__attribute__((target("avx512f"))) static float read_avx512(const float *x, size_t n) {
  __m512 a[READ_ACC];
  for (int k = 0; k < READ_ACC; k++) a[k] = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 16 * READ_ACC <= n; i += 16 * READ_ACC)
    for (int k = 0; k < READ_ACC; k++) a[k] = _mm512_add_ps(a[k], _mm512_loadu_ps(x + i + 16 * k));
  for (int k = 1; k < READ_ACC; k++) a[0] = _mm512_add_ps(a[0], a[k]);
  float s = _mm512_reduce_add_ps(a[0]);
  for (; i < n; i++) s += x[i];
  return s;
}
__attribute__((target("avx2"))) static float read_avx2(const float *x, size_t n) {
  __m256 a[READ_ACC];
  for (int k = 0; k < READ_ACC; k++) a[k] = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 * READ_ACC <= n; i += 8 * READ_ACC)
    for (int k = 0; k < READ_ACC; k++) a[k] = _mm256_add_ps(a[k], _mm256_loadu_ps(x + i + 8 * k));
  float t[8], s = 0;
  for (int k = 1; k < READ_ACC; k++) a[0] = _mm256_add_ps(a[0], a[k]);
  _mm256_storeu_ps(t, a[0]);
  for (int l = 0; l < 8; l++) s += t[l];
  for (; i < n; i++) s += x[i];
  return s;
}
static float read_sse2(const float *x, size_t n) {
  __m128 a[READ_ACC];
  for (int k = 0; k < READ_ACC; k++) a[k] = _mm_setzero_ps();
  size_t i = 0;
  for (; i + 4 * READ_ACC <= n; i += 4 * READ_ACC)
    for (int k = 0; k < READ_ACC; k++) a[k] = _mm_add_ps(a[k], _mm_loadu_ps(x + i + 4 * k));
  float t[4], s = 0;
  for (int k = 1; k < READ_ACC; k++) a[0] = _mm_add_ps(a[0], a[k]);
  _mm_storeu_ps(t, a[0]);
  for (int l = 0; l < 4; l++) s += t[l];
  for (; i < n; i++) s += x[i];
  return s;
}
#endif
static float read_portable(const float *x, size_t n) {
  float acc[16 * READ_ACC] = {0}, s = 0;
  size_t i = 0;
  for (; i + 16 * READ_ACC <= n; i += 16 * READ_ACC)
    for (int k = 0; k < 16 * READ_ACC; k++) acc[k] += x[i + k];
  for (; i < n; i++) s += x[i];
  for (int k = 0; k < 16 * READ_ACC; k++) s += acc[k];
  return s;
}

static float read_vec(const float *x, size_t n) {
  switch (isa) {
#if HOST_X86
  case ISA_AVX512: return read_avx512(x, n);
  case ISA_AVX2: return read_avx2(x, n);
  case ISA_SSE2: return read_sse2(x, n);
#endif
  default: return read_portable(x, n);
  }
}

static void read_sum_host(const hc_host_group_t *g, void *const *a) {
  const float *x = (const float *)a[1] + g->lo[0] * 4;
  ((float *)a[2])[g->group_id[0]] = read_vec(x, (g->hi[0] - g->lo[0]) * 4);
}

/* The same read as READ_STREAMS interleaved streams per thread (4 KiB from
 * each quarter of the slab in turn): kernels that read several planes or
 * arrays at once keep more prefetch streams busy than one sequential
 * stream does, and the ceiling is the faster of the two. */
#define READ_STREAMS 4
#define READ_CHUNK 1024 /* floats */
static void read_streams_host(const hc_host_group_t *g, void *const *a) {
  const float *x = (const float *)a[1] + g->lo[0] * 4;
  const size_t n = (g->hi[0] - g->lo[0]) * 4, q = n / READ_STREAMS / READ_CHUNK * READ_CHUNK;
  float s = 0;
  for (size_t off = 0; off < q; off += READ_CHUNK)
    for (int k = 0; k < READ_STREAMS; k++) s += read_vec(x + k * q + off, READ_CHUNK);
  s += read_vec(x + READ_STREAMS * q, n - READ_STREAMS * q);
  ((float *)a[2])[g->group_id[0]] = s;
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

/* Host FMA: each item runs FMA_ACC independent vector chains of ITERS
 * fused multiply-adds (without FMA, SSE2: a multiply and an add, also 2
 * flops a lane). 12 chains cover the 4-5 cycle latency of two FMA pipes;
 * AVX-512 has registers for 16. */
#define FMA_ACC 12
#define FMA_ACC_512 16
#define ITERS 2048
#if HOST_X86
#define HOST_FMA_X86(NAME, TGT, V, NACC, SET1, FMA)                                    \
  __attribute__((target(TGT))) static double NAME(double m0, double c0, size_t item) { \
    const V m = SET1(m0), c = SET1(c0);                                                \
    V x[NACC];                                                                         \
    for (int k = 0; k < NACC; k++) x[k] = SET1((double)(item + (size_t)k));            \
    for (int it = 0; it < ITERS; it++)                                                 \
      for (int k = 0; k < NACC; k++) x[k] = FMA(x[k], m, c);                           \
    for (int k = 1; k < NACC; k++) x[0] = x[0] + x[k];                                 \
    double s = 0;                                                                      \
    for (size_t l = 0; l < sizeof(V) / sizeof(x[0][0]); l++) s += (double)x[0][l];     \
    return s;                                                                          \
  }
#define SSE_FMA_PS(a, b, c) _mm_add_ps(_mm_mul_ps(a, b), c)
#define SSE_FMA_PD(a, b, c) _mm_add_pd(_mm_mul_pd(a, b), c)
HOST_FMA_X86(fma32_avx512, "avx512f,fma", __m512, FMA_ACC_512, _mm512_set1_ps, _mm512_fmadd_ps)
HOST_FMA_X86(fma64_avx512, "avx512f,fma", __m512d, FMA_ACC_512, _mm512_set1_pd, _mm512_fmadd_pd)
HOST_FMA_X86(fma32_avx2, "avx2,fma", __m256, FMA_ACC, _mm256_set1_ps, _mm256_fmadd_ps)
HOST_FMA_X86(fma64_avx2, "avx2,fma", __m256d, FMA_ACC, _mm256_set1_pd, _mm256_fmadd_pd)
HOST_FMA_X86(fma32_sse2, "sse2", __m128, FMA_ACC, _mm_set1_ps, SSE_FMA_PS)
HOST_FMA_X86(fma64_sse2, "sse2", __m128d, FMA_ACC, _mm_set1_pd, SSE_FMA_PD)
#endif
#define PORTABLE_LANES 8
#define HOST_FMA_PORTABLE(NAME, T)                                                   \
  static double NAME(double m0, double c0, size_t item) {                            \
    const T m = (T)m0, c = (T)c0;                                                    \
    T x[FMA_ACC * PORTABLE_LANES];                                                   \
    for (int k = 0; k < FMA_ACC * PORTABLE_LANES; k++) x[k] = (T)(item + (size_t)k); \
    for (int it = 0; it < ITERS; it++)                                               \
      for (int k = 0; k < FMA_ACC * PORTABLE_LANES; k++) x[k] = x[k] * m + c;        \
    double s = 0;                                                                    \
    for (int k = 0; k < FMA_ACC * PORTABLE_LANES; k++) s += (double)x[k];            \
    return s;                                                                        \
  }
HOST_FMA_PORTABLE(fma32_portable, float)
HOST_FMA_PORTABLE(fma64_portable, double)

/* Lanes of one item: vector chains x lanes per vector, per precision. */
static double host_lanes(int f64) {
  switch (isa) {
#if HOST_X86
  case ISA_AVX512: return FMA_ACC_512 * (f64 ? 8 : 16);
  case ISA_AVX2: return FMA_ACC * (f64 ? 4 : 8);
  case ISA_SSE2: return FMA_ACC * (f64 ? 2 : 4);
#endif
  default: return FMA_ACC * PORTABLE_LANES;
  }
}

static double (*host_fma_fn(int f64))(double, double, size_t) {
  switch (isa) {
#if HOST_X86
  case ISA_AVX512: return f64 ? fma64_avx512 : fma32_avx512;
  case ISA_AVX2: return f64 ? fma64_avx2 : fma32_avx2;
  case ISA_SSE2: return f64 ? fma64_sse2 : fma32_sse2;
#endif
  default: return f64 ? fma64_portable : fma32_portable;
  }
}

#define HOST_FMA(NAME, T, F64)                                                           \
  static void NAME(const hc_host_group_t *g, void *const *a) {                           \
    double (*fn)(double, double, size_t) = host_fma_fn(F64);                             \
    const double m = *(const T *)a[1], c = *(const T *)a[2];                             \
    T *out = a[3];                                                                       \
    for (size_t item = g->lo[0]; item < g->hi[0]; item++) out[item] = (T)fn(m, c, item); \
  }
HOST_FMA(fma_f32_host, float, 0)
HOST_FMA(fma_f64_host, double, 1)
#define HOST_FLOPS_PER_ITEM(f64) (host_lanes(f64) * ITERS * 2)

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
  hc_kernel_t *k = kernel(c, "read_sum", read_sum_host), *ks = NULL;
  double best = -1;
  size_t n4 = bytes / 16;
  int host = k && hc_kernel_language(k) == HC_LANG_HOST;
  /* host devices: the interleaved-streams read too */
  if (host && !(ks = kernel(c, "read_sum", read_streams_host))) goto out;
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
  for (int r = 0; r < (c->quick ? 3 : 8); r++)
    for (int way = 0; way < (ks ? 2 : 1); way++) {
      double dt = 0;
      hc_device_finish(c->dev);
      hc_device_timer_begin(c->dev);
      if (hc_kernel_launch(way ? ks : k, 1, &global, &local, 3, a) != HC_OK) goto out;
      hc_device_timer_end(c->dev, &dt);
      double gbs = (double)(n4 * 16) / dt / 1e9;
      if (gbs > best) best = gbs;
    }
out:
  hc_kernel_destroy(k);
  hc_kernel_destroy(ks);
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
      if ((way ? hc_kernel_launch(way == 1 ? k : ks, 1, &global, &local, 3, args)
               : hc_buffer_copy(b, 0, a, 0, bytes)) != HC_OK)
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
  size_t items =
      host ? 2048 * (size_t)in->compute_units : (size_t)(in->compute_units ? in->compute_units : 16) * 2048 * 8;
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
    double g = (double)items * (host ? HOST_FLOPS_PER_ITEM(f64) : GPU_FLOPS_PER_ITEM) / dt / 1e9;
    if (g > best) best = g;
  }
out:
  hc_kernel_destroy(k);
  hc_buffer_destroy(o);
  return best;
}

/* The link between the host and a device with its own memory. */
typedef struct {
  double h2d, d2h, h2d_pageable, d2h_pageable, to_cpu, from_cpu;
} link_t;

/* Best rate of `reps` moves of `bytes` between dev's buffer b and host
 * memory h, one way (to_device) or the other. */
static double host_gbs(hc_buffer_t *b, void *h, size_t bytes, int to_device, int reps) {
  double best = -1;
  for (int r = 0; r < reps; r++) {
    const double t0 = hc_now();
    if ((to_device ? hc_buffer_write(b, 0, h, bytes) : hc_buffer_read(b, 0, h, bytes)) != HC_OK) return -1;
    const double gbs = (double)bytes / (hc_now() - t0) / 1e9;
    if (gbs > best) best = gbs;
  }
  return best;
}

/* Best rate of hand-overs between b and a buffer of the cpu device created
 * for each one: a new field's pages are untouched (to_cpu: unless hc
 * kept the buffer before), a stage's output's have been written (from
 * the cpu). */
static double handover_gbs(hc_device_t *cpu, hc_buffer_t *b, size_t bytes, int to_cpu, int reps) {
  double best = -1;
  for (int r = 0; r < reps; r++) {
    hc_buffer_t *h = NULL;
    if (hc_buffer_create(cpu, bytes, &h) != HC_OK) return -1;
    if (!to_cpu) {
      unsigned char one = 1;
      if (hc_buffer_fill(h, 0, &one, 1, bytes) != HC_OK || hc_device_finish(cpu) != HC_OK) {
        hc_buffer_destroy(h);
        return -1;
      }
    }
    const double t0 = hc_now();
    hc_status_t st = to_cpu ? hc_buffer_copy(h, 0, b, 0, bytes) : hc_buffer_copy(b, 0, h, 0, bytes);
    if (st == HC_OK) st = hc_device_finish(hc_buffer_device(b));
    const double dt = hc_now() - t0;
    hc_buffer_destroy(h);
    if (st != HC_OK) return -1;
    if ((double)bytes / dt / 1e9 > best) best = (double)bytes / dt / 1e9;
  }
  return best;
}

static link_t link_gbs(ctx_t *c, size_t bytes) {
  link_t l = {-1, -1, -1, -1, -1, -1};
  const int reps = c->quick ? 3 : 8;
  hc_buffer_t *b = NULL;
  void *pinned = NULL, *plain = malloc(bytes);
  hc_context_t *ctx = hc_device_context(c->dev);
  hc_device_t *cpu = NULL;
  uint32_t ci;
  if (!plain || hc_buffer_create(c->dev, bytes, &b) != HC_OK || hc_host_alloc(c->dev, bytes, &pinned) != HC_OK)
    goto out;
  memset(plain, 1, bytes);
  memset(pinned, 1, bytes);
  l.h2d = host_gbs(b, pinned, bytes, 1, reps);
  l.d2h = host_gbs(b, pinned, bytes, 0, reps);
  l.h2d_pageable = host_gbs(b, plain, bytes, 1, reps);
  l.d2h_pageable = host_gbs(b, plain, bytes, 0, reps);
  if (hc_device_find(ctx, "cpu", &ci) == HC_OK && hc_device_open(ctx, ci, &cpu) == HC_OK) {
    l.to_cpu = handover_gbs(cpu, b, bytes, 1, reps);
    l.from_cpu = handover_gbs(cpu, b, bytes, 0, reps);
    hc_device_close(cpu);
  }
out:
  if (pinned) hc_host_free(c->dev, pinned);
  free(plain);
  hc_buffer_destroy(b);
  return l;
}

/* The last-level cache's size in bytes, 0 when unknown: the default read
 * and copy sizes must stay well beyond it (an EPYC VM reports 320 MiB). */
static size_t llc_bytes(void) {
  size_t best = 0;
  for (int i = 0; i < 8; i++) {
    char path[96], buf[32];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    FILE *f = fopen(path, "r");
    if (!f) break;
    char *end = NULL;
    unsigned long long v = fgets(buf, sizeof buf, f) ? strtoull(buf, &end, 10) : 0;
    fclose(f);
    if (end && (*end == 'K' || *end == 'k'))
      v <<= 10;
    else if (end && *end == 'M')
      v <<= 20;
    if (v > best) best = (size_t)v;
  }
  return best;
}

/* Which ceilings to measure (--only=read,copy,fp32,fp64,launch). */
enum { M_READ = 1, M_COPY = 2, M_FP32 = 4, M_FP64 = 8, M_LAUNCH = 16, M_LINK = 32, M_ALL = 63 };
static int parse_only(const char *list) {
  static const char *const names[] = {"read", "copy", "fp32", "fp64", "launch", "link"};
  int m = 0;
  while (*list) {
    size_t len = strcspn(list, ",");
    int k = 0;
    while (k < 6 && (strlen(names[k]) != len || strncmp(list, names[k], len))) k++;
    if (k == 6) return -1;
    m |= 1 << k;
    list += len + (list[len] == ',');
  }
  return m ? m : -1;
}

static int usage(FILE *to) {
  fprintf(to, "usage: hc-ceilings [--device=SPEC] [--json] [--quick] [--bytes=N] "
              "[--only=read,copy,fp32,fp64,launch,link]\n");
  return to == stdout ? 0 : 2;
}

int main(int argc, char **argv) {
  const char *spec = "auto";
  int json = 0, quick = 0, only = M_ALL;
  size_t bytes = 0;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--device=", 9))
      spec = argv[i] + 9;
    else if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--quick"))
      quick = 1;
    else if (!strcmp(argv[i], "--help"))
      return usage(stdout);
    else if (!strncmp(argv[i], "--only=", 7)) {
      if ((only = parse_only(argv[i] + 7)) < 0) {
        fprintf(stderr, "hc-ceilings: %s: expected a comma-separated list of read, copy, fp32, fp64, launch, link\n",
                argv[i]);
        return usage(stderr);
      }
    } else if (!strncmp(argv[i], "--bytes=", 8)) {
      char *end = NULL;
      unsigned long long v = strtoull(argv[i] + 8, &end, 10);
      if (argv[i][8] < '0' || argv[i][8] > '9' || *end || v < 4096 || v > ((unsigned long long)1 << 40)) {
        fprintf(stderr, "hc-ceilings: %s: expected a byte count from 4096 to 2^40\n", argv[i]);
        return usage(stderr);
      }
      bytes = (size_t)v / 4096 * 4096;
    } else
      return usage(stderr);
  }
  isa = host_isa();
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
  const int gpu = in->type == HC_DEVICE_GPU;
  const size_t llc = gpu ? 0 : llc_bytes();
  /* read and copy: beyond the caches by default (4x the LLC at least) */
  size_t big = gpu ? (size_t)1 << 30 : (size_t)512 << 20;
  if (quick) big /= 4;
  if (big < 4 * llc) big = 4 * llc;
  if (bytes) big = bytes;
  if (in->max_alloc_bytes && big > in->max_alloc_bytes / 2) big = in->max_alloc_bytes / 2;
  double lu = -1, lu1 = -1, rd = -1, cp = -1, f32 = -1, f64 = -1;
  if (only & M_LAUNCH) lu = launch_us(&c, 1 << 16), lu1 = launch_us(&c, 1);
  if (only & M_READ) rd = read_gbs(&c, big);
  if (only & M_COPY) cp = copy_gbs(&c, big);
  if (only & M_FP32) f32 = fma_gflops(&c, 0);
  if (only & M_FP64) f64 = fma_gflops(&c, 1);
  link_t lk = {-1, -1, -1, -1, -1, -1};
  const int own_memory = !(in->languages & HC_LANG_BIT(HC_LANG_HOST));
  if ((only & M_LINK) && own_memory) lk = link_gbs(&c, quick ? (size_t)16 << 20 : (size_t)64 << 20);
  /* isa: the host kernels' vector code (host-language devices only) */
  const int host = (in->languages & HC_LANG_BIT(HC_LANG_HOST)) != 0;
  if (json) {
    printf("{\"device\": \"%s\", \"name\": \"%s\", \"bytes\": %zu, \"llc_bytes\": %zu, \"threads\": %u, "
           "\"isa\": \"%s\", \"read_gbs\": %.4f, \"copy_gbs\": %.4f, \"fp32_gflops\": %.2f, \"fp64_gflops\": %.2f, "
           "\"launch_us\": %.4f, \"launch_1item_us\": %.4f, \"h2d_gbs\": %.3f, \"d2h_gbs\": %.3f, "
           "\"h2d_pageable_gbs\": %.3f, \"d2h_pageable_gbs\": %.3f, \"handover_to_cpu_gbs\": %.3f, "
           "\"handover_from_cpu_gbs\": %.3f}\n",
           hc_device_name(dev), in->name, big, llc, in->compute_units, host ? isa_names[isa] : "-", rd, cp, f32, f64,
           lu, lu1, lk.h2d, lk.d2h, lk.h2d_pageable, lk.d2h_pageable, lk.to_cpu, lk.from_cpu);
  } else {
    printf("%s (%s), %u compute units%s%s\n  read      %10.2f GB/s (%zu bytes)\n  copy      %10.2f GB/s (read + "
           "write)\n  fp32      %10.1f GFLOP/s\n  fp64      %10.1f GFLOP/s\n  launch    %10.3f us (empty kernel, "
           "65536 items; 1 item: %.3f us)\n",
           hc_device_name(dev), in->name, in->compute_units, host ? ", host kernels: " : "", host ? isa_names[isa] : "",
           rd, big, cp, f32, f64, lu, lu1);
    if (lk.h2d > 0)
      printf("  link      %10.2f GB/s to, %.2f GB/s from the device (page-locked host memory; pageable: %.2f, %.2f)\n"
             "  hand-over %10.2f GB/s to, %.2f GB/s from a cpu device's new buffer\n",
             lk.h2d, lk.d2h, lk.h2d_pageable, lk.d2h_pageable, lk.to_cpu, lk.from_cpu);
  }
  hc_device_close(dev);
  hc_context_destroy(ctx);
  return 0;
}
