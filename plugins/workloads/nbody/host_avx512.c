/* nbody: the field sum of host_kernels_tmpl.h with AVX-512 intrinsics, for
 * x86-64 CPUs that have it (chosen at run time). The hardware estimate
 * vrsqrt14 (rel. error < 2^-14) plus one Newton step (f32) or two (f64)
 * replaces the bit-trick guess and its three or four steps, at the same
 * accuracy, in fewer issue slots per pair (bench/workloads/nbody.py counts
 * them for each form). */
#include "host_avx512.h"

#if NB_HAVE_AVX512
#include <immintrin.h>
#include <stdatomic.h>

#define NB_TARGET __attribute__((target("avx512f"), always_inline)) static inline

NB_TARGET void field_f32(float xi, float yi, float zi, const float *xs, const float *ys, const float *zs,
                         const float *qs, int64_t len, float eps2, int guard, int pot, double *out) {
  const __m512 x = _mm512_set1_ps(xi), y = _mm512_set1_ps(yi), z = _mm512_set1_ps(zi), e2 = _mm512_set1_ps(eps2);
  const __m512 half = _mm512_set1_ps(0.5f), three_half = _mm512_set1_ps(1.5f);
  __m512 ax = _mm512_setzero_ps(), ay = ax, az = ax, ap = ax;
  for (int64_t j = 0; j < len; j += 16) {
    const __m512 dx = _mm512_sub_ps(x, _mm512_load_ps(xs + j)), dy = _mm512_sub_ps(y, _mm512_load_ps(ys + j)),
                 dz = _mm512_sub_ps(z, _mm512_load_ps(zs + j));
    const __m512 d2 = _mm512_fmadd_ps(dx, dx, _mm512_fmadd_ps(dy, dy, _mm512_fmadd_ps(dz, dz, e2)));
    __m512 inv = _mm512_rsqrt14_ps(d2);
    inv = _mm512_mul_ps(inv, _mm512_fnmadd_ps(_mm512_mul_ps(half, d2), _mm512_mul_ps(inv, inv), three_half));
    if (guard) inv = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(d2, e2, _CMP_GT_OQ), inv);
    const __m512 qinv = _mm512_mul_ps(_mm512_load_ps(qs + j), inv);
    const __m512 s = _mm512_mul_ps(qinv, _mm512_mul_ps(inv, inv));
    ax = _mm512_fmadd_ps(s, dx, ax);
    ay = _mm512_fmadd_ps(s, dy, ay);
    az = _mm512_fmadd_ps(s, dz, az);
    if (pot) ap = _mm512_add_ps(ap, qinv);
  }
  /* The 16 lanes summed in double. */
  const __m512 acc[4] = {ax, ay, az, ap};
  for (int c = 0; c < 4; c++) {
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(acc[c]));
    const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[c]), 1)));
    out[c] += _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
  }
}

NB_TARGET void field_f64(double xi, double yi, double zi, const double *xs, const double *ys, const double *zs,
                         const double *qs, int64_t len, double eps2, int guard, int pot, double *out) {
  const __m512d x = _mm512_set1_pd(xi), y = _mm512_set1_pd(yi), z = _mm512_set1_pd(zi), e2 = _mm512_set1_pd(eps2);
  const __m512d half = _mm512_set1_pd(0.5), three_half = _mm512_set1_pd(1.5);
  __m512d ax = _mm512_setzero_pd(), ay = ax, az = ax, ap = ax;
  for (int64_t j = 0; j < len; j += 8) {
    const __m512d dx = _mm512_sub_pd(x, _mm512_load_pd(xs + j)), dy = _mm512_sub_pd(y, _mm512_load_pd(ys + j)),
                  dz = _mm512_sub_pd(z, _mm512_load_pd(zs + j));
    const __m512d d2 = _mm512_fmadd_pd(dx, dx, _mm512_fmadd_pd(dy, dy, _mm512_fmadd_pd(dz, dz, e2)));
    const __m512d h = _mm512_mul_pd(half, d2);
    __m512d inv = _mm512_rsqrt14_pd(d2);
    inv = _mm512_mul_pd(inv, _mm512_fnmadd_pd(h, _mm512_mul_pd(inv, inv), three_half));
    inv = _mm512_mul_pd(inv, _mm512_fnmadd_pd(h, _mm512_mul_pd(inv, inv), three_half));
    if (guard) inv = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(d2, e2, _CMP_GT_OQ), inv);
    const __m512d qinv = _mm512_mul_pd(_mm512_load_pd(qs + j), inv);
    const __m512d s = _mm512_mul_pd(qinv, _mm512_mul_pd(inv, inv));
    ax = _mm512_fmadd_pd(s, dx, ax);
    ay = _mm512_fmadd_pd(s, dy, ay);
    az = _mm512_fmadd_pd(s, dz, az);
    if (pot) ap = _mm512_add_pd(ap, qinv);
  }
  out[0] += _mm512_reduce_add_pd(ax);
  out[1] += _mm512_reduce_add_pd(ay);
  out[2] += _mm512_reduce_add_pd(az);
  out[3] += _mm512_reduce_add_pd(ap);
}

/* Specialised on guard and pot, so neither costs anything per pair. */
#define NB_SPECIALISE(T, fn)                                                                                      \
  __attribute__((target("avx512f"))) void nb_avx512_##fn(T xi, T yi, T zi, const T *xs, const T *ys, const T *zs, \
                                                         const T *qs, int64_t len, T eps2, int guard, int pot,    \
                                                         double *out) {                                           \
    if (guard && pot)                                                                                             \
      fn(xi, yi, zi, xs, ys, zs, qs, len, eps2, 1, 1, out);                                                       \
    else if (guard)                                                                                               \
      fn(xi, yi, zi, xs, ys, zs, qs, len, eps2, 1, 0, out);                                                       \
    else if (pot)                                                                                                 \
      fn(xi, yi, zi, xs, ys, zs, qs, len, eps2, 0, 1, out);                                                       \
    else                                                                                                          \
      fn(xi, yi, zi, xs, ys, zs, qs, len, eps2, 0, 0, out);                                                       \
  }
NB_SPECIALISE(float, field_f32)
NB_SPECIALISE(double, field_f64)

int nb_avx512_usable(void) {
  static atomic_int usable = -1; /* worker threads may ask at once: same answer */
  int u = atomic_load_explicit(&usable, memory_order_relaxed);
  if (u < 0) {
    __builtin_cpu_init();
    u = __builtin_cpu_supports("avx512f") ? 1 : 0;
    atomic_store_explicit(&usable, u, memory_order_relaxed);
  }
  return u;
}
#endif
