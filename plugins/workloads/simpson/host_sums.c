/* simpson: the plain sums under the cpu backend's kernels — sums of x[m]
 * over even and over odd m, in f64, for f32 or f64 samples.
 *
 * Spelled out with SIMD intrinsics because the compiler may not reorder
 * float additions and so never vectorises these sums itself. The build
 * targets plain x86-64 (SSE2), so AVX2 and AVX-512 versions are compiled
 * with target attributes and picked at run time: for f32 samples SSE2 needs
 * about 35 micro-ops per 64-byte line (loads, two-lane conversions, adds),
 * which fills the out-of-order window with few lines in flight and leaves
 * DRAM bandwidth unused; AVX-512 converts eight floats per instruction.
 * The run's isa= parameter caps the choice (simpson_isa), so tests can
 * compare the paths.
 *
 * Every version keeps lanes of running sums whose parity is the index's,
 * folds them into the totals every BLOCKLEN samples (bounding the rounding
 * growth on long rows), and ends with a scalar tail. */
#include <stdlib.h>
#include <string.h>

#include "simpson.h"

#define BLOCKLEN 2048

/* ---------------------------------------------------------------- SSE2 / portable */

#if defined(__SSE2__)
#include <emmintrin.h>
typedef __m128d v2d;
static inline v2d v2d_zero(void) { return _mm_setzero_pd(); }
static inline v2d v2d_add(v2d a, v2d b) { return _mm_add_pd(a, b); }
static inline double v2d_lane0(v2d a) { return _mm_cvtsd_f64(a); }
static inline double v2d_lane1(v2d a) { return _mm_cvtsd_f64(_mm_unpackhi_pd(a, a)); }
/* lanes += x[0..1] and x[2..3] (f32 converted exactly to f64) */
static inline void add4_f64(v2d *lo, v2d *hi, const double *p) {
  *lo = _mm_add_pd(*lo, _mm_loadu_pd(p));
  *hi = _mm_add_pd(*hi, _mm_loadu_pd(p + 2));
}
static inline void add4_f32(v2d *lo, v2d *hi, const float *p) {
  const __m128 v = _mm_loadu_ps(p);
  *lo = _mm_add_pd(*lo, _mm_cvtps_pd(v));
  *hi = _mm_add_pd(*hi, _mm_cvtps_pd(_mm_movehl_ps(v, v)));
}
#else
typedef struct {
  double l0, l1;
} v2d;
static inline v2d v2d_zero(void) { return (v2d){0, 0}; }
static inline v2d v2d_add(v2d a, v2d b) { return (v2d){a.l0 + b.l0, a.l1 + b.l1}; }
static inline double v2d_lane0(v2d a) { return a.l0; }
static inline double v2d_lane1(v2d a) { return a.l1; }
static inline void add4_f64(v2d *lo, v2d *hi, const double *p) {
  lo->l0 += p[0], lo->l1 += p[1], hi->l0 += p[2], hi->l1 += p[3];
}
static inline void add4_f32(v2d *lo, v2d *hi, const float *p) {
  lo->l0 += p[0], lo->l1 += p[1], hi->l0 += p[2], hi->l1 += p[3];
}
#endif

/* The scalar tail from m (even) to n. */
#define SIMPSON_TAIL(x, m, n, e, o)                                                   \
  for (; (m) + 1 < (n); (m) += 2) (e) += (double)(x)[m], (o) += (double)(x)[(m) + 1]; \
  if ((m) < (n)) (e) += (double)(x)[m]

#define SIMPSON_BASE_SUMS(T, SUFFIX)                                                                               \
  static void sums_base_##SUFFIX(const T *restrict x, size_t n, double *even, double *odd) {                       \
    double e = 0, o = 0;                                                                                           \
    size_t m = 0;                                                                                                  \
    while (m + 16 <= n) {                                                                                          \
      const size_t stop = n - m > BLOCKLEN ? m + BLOCKLEN : n;                                                     \
      v2d a0 = v2d_zero(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;                          \
      for (; m + 16 <= stop; m += 16) {                                                                            \
        add4_##SUFFIX(&a0, &a1, x + m);                                                                            \
        add4_##SUFFIX(&a2, &a3, x + m + 4);                                                                        \
        add4_##SUFFIX(&a4, &a5, x + m + 8);                                                                        \
        add4_##SUFFIX(&a6, &a7, x + m + 12);                                                                       \
      }                                                                                                            \
      const v2d t = v2d_add(v2d_add(v2d_add(a0, a1), v2d_add(a2, a3)), v2d_add(v2d_add(a4, a5), v2d_add(a6, a7))); \
      e += v2d_lane0(t);                                                                                           \
      o += v2d_lane1(t);                                                                                           \
    }                                                                                                              \
    SIMPSON_TAIL(x, m, n, e, o);                                                                                   \
    *even = e;                                                                                                     \
    *odd = o;                                                                                                      \
  }
SIMPSON_BASE_SUMS(float, f32)
SIMPSON_BASE_SUMS(double, f64)

/* ---------------------------------------------------------------- AVX2, AVX-512 */

#if defined(__x86_64__) && defined(__GNUC__)
#define SIMPSON_X86 1
#include <immintrin.h>

/* W doubles per vector, four vectors per step. */
#define SIMPSON_WIDE_SUMS(NAME, TARGET, T, VD, W, ZERO, ADD, LOAD, STORE)                                      \
  __attribute__((target(TARGET))) static void NAME(const T *restrict x, size_t n, double *even, double *odd) { \
    double e = 0, o = 0;                                                                                       \
    size_t m = 0;                                                                                              \
    while (m + 4 * W <= n) {                                                                                   \
      const size_t stop = n - m > BLOCKLEN ? m + BLOCKLEN : n;                                                 \
      VD a0 = ZERO(), a1 = a0, a2 = a0, a3 = a0;                                                               \
      for (; m + 4 * W <= stop; m += 4 * W) {                                                                  \
        a0 = ADD(a0, LOAD(x + m));                                                                             \
        a1 = ADD(a1, LOAD(x + m + W));                                                                         \
        a2 = ADD(a2, LOAD(x + m + 2 * W));                                                                     \
        a3 = ADD(a3, LOAD(x + m + 3 * W));                                                                     \
      }                                                                                                        \
      double l[W];                                                                                             \
      STORE(l, ADD(ADD(a0, a1), ADD(a2, a3)));                                                                 \
      for (int i = 0; i < W; i += 2) e += l[i], o += l[i + 1];                                                 \
    }                                                                                                          \
    SIMPSON_TAIL(x, m, n, e, o);                                                                               \
    *even = e;                                                                                                 \
    *odd = o;                                                                                                  \
  }

#define SIMPSON_AVX2_F32(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define SIMPSON_AVX512_F32(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
SIMPSON_WIDE_SUMS(sums_avx2_f32, "avx2", float, __m256d, 4, _mm256_setzero_pd, _mm256_add_pd, SIMPSON_AVX2_F32,
                  _mm256_storeu_pd)
SIMPSON_WIDE_SUMS(sums_avx2_f64, "avx2", double, __m256d, 4, _mm256_setzero_pd, _mm256_add_pd, _mm256_loadu_pd,
                  _mm256_storeu_pd)
SIMPSON_WIDE_SUMS(sums_avx512_f32, "avx512f", float, __m512d, 8, _mm512_setzero_pd, _mm512_add_pd, SIMPSON_AVX512_F32,
                  _mm512_storeu_pd)
SIMPSON_WIDE_SUMS(sums_avx512_f64, "avx512f", double, __m512d, 8, _mm512_setzero_pd, _mm512_add_pd, _mm512_loadu_pd,
                  _mm512_storeu_pd)
#endif

/* ---------------------------------------------------------------- dispatch */

/* The widest the CPU has, found once when the plugin is loaded (before
 * any thread runs a kernel). */
static int best = SIMPSON_ISA_SSE2;

__attribute__((constructor)) static void find_best_isa(void) {
#ifdef SIMPSON_X86
  __builtin_cpu_init();
  best = __builtin_cpu_supports("avx512f") ? SIMPSON_ISA_AVX512
         : __builtin_cpu_supports("avx2")  ? SIMPSON_ISA_AVX2
                                           : SIMPSON_ISA_SSE2;
#endif
}

int simpson_isa(const char *cap) {
  int want = !strcmp(cap, "sse2") ? SIMPSON_ISA_SSE2 : !strcmp(cap, "avx2") ? SIMPSON_ISA_AVX2 : SIMPSON_ISA_AVX512;
  return want < best ? want : best;
}

const char *simpson_isa_name(int isa) {
  return isa == SIMPSON_ISA_AVX512 ? "avx512" : isa == SIMPSON_ISA_AVX2 ? "avx2" : "sse2";
}

void simpson_parity_sums_f32(int isa, const float *x, size_t n, double *even, double *odd) {
#ifdef SIMPSON_X86
  if (isa == SIMPSON_ISA_AVX512)
    sums_avx512_f32(x, n, even, odd);
  else if (isa == SIMPSON_ISA_AVX2)
    sums_avx2_f32(x, n, even, odd);
  else
#endif
    sums_base_f32(x, n, even, odd);
}

void simpson_parity_sums_f64(int isa, const double *x, size_t n, double *even, double *odd) {
#ifdef SIMPSON_X86
  if (isa == SIMPSON_ISA_AVX512)
    sums_avx512_f64(x, n, even, odd);
  else if (isa == SIMPSON_ISA_AVX2)
    sums_avx2_f64(x, n, even, odd);
  else
#endif
    sums_base_f64(x, n, even, odd);
}
