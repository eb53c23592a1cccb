/* simpson: host-language kernels (the cpu backend runs them on its thread
 * pool, one call per work-group over the items g->lo[0] <= e < g->hi[0] of
 * the flattened field) and the host-side sums of algorithms 1 and 2.
 *
 * The fused sum walks its range row segment by row segment: inside a row
 * the weights are 8 (even k) and 16 (odd k) except at the ends, so a
 * segment costs the plain sums of its even and odd samples (host_sums.c)
 * and at most four corrections; the row's weight W(i) W(j)
 * multiplies the segment once. Weights come from the same simpson_w12 as
 * the source kernels (kernels.hcl, included below). */
#include <stddef.h>

#include "simpson.h"

#define HC_INLINE static inline
#define SIMPSON_RULE_ONLY
#include "kernels.hcl"

#define SIMPSON_HOST_KERNELS(T, SUFFIX)                                                                            \
  /* sum of W(k) row[k] over k0 <= k < k1, in twelfths. */                                                         \
  static double segment_##SUFFIX(int isa, const T *restrict row, int64_t k0, int64_t k1, int nz) {                 \
    double e, o;                                                                                                   \
    simpson_parity_sums_##SUFFIX(isa, row + k0, (size_t)(k1 - k0), &e, &o);                                        \
    if (k0 & 1) {                                                                                                  \
      double t = e;                                                                                                \
      e = o;                                                                                                       \
      o = t;                                                                                                       \
    }                                                                                                              \
    double s = 8.0 * e + 16.0 * o;                                                                                 \
    /* The ends, whose weights differ from 8/16 (ascending; duplicates and                                         \
     * negatives of short rows skipped). */                                                                        \
    const int64_t ends[4] = {0, (int64_t)nz - 3, (int64_t)nz - 2, (int64_t)nz - 1};                                \
    int64_t prev = -1;                                                                                             \
    for (int q = 0; q < 4; q++) {                                                                                  \
      const int64_t kb = ends[q];                                                                                  \
      if (kb <= prev) continue;                                                                                    \
      prev = kb;                                                                                                   \
      if (kb < k0 || kb >= k1) continue;                                                                           \
      const int d = simpson_w12((int)kb, nz) - ((kb & 1) ? 16 : 8);                                                \
      if (d) s += d * (double)row[kb];                                                                             \
    }                                                                                                              \
    return s;                                                                                                      \
  }                                                                                                                \
                                                                                                                   \
  /* sum of W(i) W(j) W(k) f over the flat range [lo, hi), in twelfths^3. */                                       \
  static double range_sum_##SUFFIX(int isa, const T *f, size_t lo, size_t hi, int nx, int ny, int nz) {            \
    size_t r = lo / (size_t)nz;                                                                                    \
    int64_t k0 = (int64_t)(lo % (size_t)nz);                                                                       \
    int j = (int)(r % (size_t)ny), i = (int)(r / (size_t)ny);                                                      \
    double acc = 0;                                                                                                \
    for (size_t e = lo; e < hi;) {                                                                                 \
      const int64_t rest = (int64_t)(hi - e);                                                                      \
      const int64_t k1 = k0 + rest < nz ? k0 + rest : nz;                                                          \
      const double wr = (double)(simpson_w12(i, nx) * simpson_w12(j, ny));                                         \
      acc += wr * segment_##SUFFIX(isa, f + (e - (size_t)k0), k0, k1, nz);                                         \
      e += (size_t)(k1 - k0);                                                                                      \
      k0 = 0;                                                                                                      \
      if (++j == ny) j = 0, i++;                                                                                   \
    }                                                                                                              \
    return acc;                                                                                                    \
  }                                                                                                                \
                                                                                                                   \
  /* args: f, partial, nx, ny, nz, n (as simpson_fused), then isa. */                                              \
  void simpson_fused_host_##SUFFIX(const hc_host_group_t *g, void *const *args) {                                  \
    const T *f = args[0];                                                                                          \
    double *partial = args[1];                                                                                     \
    const int nx = *(const int *)args[2], ny = *(const int *)args[3], nz = *(const int *)args[4];                  \
    const int isa = *(const int *)args[6];                                                                         \
    partial[g->group_id[0]] = range_sum_##SUFFIX(isa, f, g->lo[0], g->hi[0], nx, ny, nz);                          \
  }                                                                                                                \
                                                                                                                   \
  /* args: f, out, a, n (as simpson_products_precomputed). */                                                      \
  void simpson_precomputed_host_##SUFFIX(const hc_host_group_t *g, void *const *args) {                            \
    const T *restrict f = args[0];                                                                                 \
    T *restrict out = args[1];                                                                                     \
    const T *restrict a = args[2];                                                                                 \
    for (size_t e = g->lo[0]; e < g->hi[0]; e++) out[e] = f[e] * a[e];                                             \
  }                                                                                                                \
                                                                                                                   \
  /* args: f, out, nx, ny, nz, n (as simpson_products_onthefly). */                                                \
  void simpson_onthefly_host_##SUFFIX(const hc_host_group_t *g, void *const *args) {                               \
    const T *f = args[0];                                                                                          \
    T *out = args[1];                                                                                              \
    const int nx = *(const int *)args[2], ny = *(const int *)args[3], nz = *(const int *)args[4];                  \
    const size_t lo = g->lo[0], hi = g->hi[0];                                                                     \
    size_t r = lo / (size_t)nz;                                                                                    \
    int64_t k0 = (int64_t)(lo % (size_t)nz);                                                                       \
    int j = (int)(r % (size_t)ny), i = (int)(r / (size_t)ny);                                                      \
    for (size_t e = lo; e < hi;) {                                                                                 \
      const int64_t rest = (int64_t)(hi - e);                                                                      \
      const int64_t k1 = k0 + rest < nz ? k0 + rest : nz;                                                          \
      const int wr = simpson_w12(i, nx) * simpson_w12(j, ny);                                                      \
      const T *restrict row = f + (e - (size_t)k0);                                                                \
      T *restrict orow = out + (e - (size_t)k0);                                                                   \
      for (int64_t k = k0; k < k1; k++) orow[k] = (T)(wr * ((k & 1) ? 16 : 8)) * row[k];                           \
      const int64_t ends[4] = {0, (int64_t)nz - 3, (int64_t)nz - 2, (int64_t)nz - 1};                              \
      for (int q = 0; q < 4; q++)                                                                                  \
        if (ends[q] >= k0 && ends[q] < k1) orow[ends[q]] = (T)(wr * simpson_w12((int)ends[q], nz)) * row[ends[q]]; \
      e += (size_t)(k1 - k0);                                                                                      \
      k0 = 0;                                                                                                      \
      if (++j == ny) j = 0, i++;                                                                                   \
    }                                                                                                              \
  }

SIMPSON_HOST_KERNELS(float, f32)
SIMPSON_HOST_KERNELS(double, f64)

double simpson_host_sum(int isa, hc_dtype_t dtype, const void *x, size_t n) {
  double e, o;
  if (dtype == HC_F32)
    simpson_parity_sums_f32(isa, x, n, &e, &o);
  else
    simpson_parity_sums_f64(isa, x, n, &e, &o);
  return e + o;
}

void simpson_weight_array(const simpson_config_t *cfg, void *a) {
  const int nx = cfg->nx, ny = cfg->ny, nz = cfg->nz;
  size_t e = 0;
  for (int i = 0; i < nx; i++)
    for (int j = 0; j < ny; j++) {
      const int wr = simpson_w12(i, nx) * simpson_w12(j, ny);
      if (cfg->dtype == HC_F32)
        for (int k = 0; k < nz; k++) ((float *)a)[e++] = (float)(wr * simpson_w12(k, nz));
      else
        for (int k = 0; k < nz; k++) ((double *)a)[e++] = (double)(wr * simpson_w12(k, nz));
    }
}
