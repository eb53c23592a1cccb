/* Helpers shared by the grid expression tests: the device configurations
 * every test runs on, random fields, and host references in f64 on arrays
 * padded to 3-D (a rank-r array is 1 x ... x n0 x ... with the rank's axes
 * last, the same layout as the field). Header-only: each test program
 * includes it once. */
#ifndef HC_TEST_GRID_TESTLIB_H
#define HC_TEST_GRID_TESTLIB_H

#include <hc/grid.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

typedef struct {
  const char *spec;
  hc_grid_host_t host;
  const char *label;
} gt_cfg_t;

static const gt_cfg_t gt_cfgs[] = {
    {"cpu", HC_GRID_HOST_COMPILE, "cpu/compile"},
    {"cpu", HC_GRID_HOST_EVAL, "cpu/eval"},
    {"opencl", HC_GRID_HOST_AUTO, "opencl"},
    {"cuda", HC_GRID_HOST_AUTO, "cuda"},
};
#define GT_NCFG (sizeof gt_cfgs / sizeof gt_cfgs[0])

static inline hc_grid_stats_t gt_stats(const hc_grid_t *g) {
  hc_grid_stats_t s;
  memset(&s, 0, sizeof s);
  s.size = sizeof s;
  hc_grid_stats(g, &s);
  return s;
}

/* A grid on the configuration's device, or NULL (skipped). */
static inline hc_grid_t *gt_grid(const gt_cfg_t *c, hc_grid_fuse_t fuse) {
  hc_device_t *d = th_device(c->spec);
  if (!d) return NULL;
  hc_grid_options_t o = {sizeof o, fuse, c->host, 0};
  hc_grid_t *g = NULL;
  if (hc_grid_create(d, &o, &g) != HC_OK) {
    fprintf(stderr, "hc_grid_create on %s: %s\n", c->label, hc_last_error());
    return NULL;
  }
  return g;
}

static uint64_t gt_rng = 88172645463325252ULL;
static inline double gt_rand(void) {
  gt_rng ^= gt_rng << 13;
  gt_rng ^= gt_rng >> 7;
  gt_rng ^= gt_rng << 17;
  return (double)(gt_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* Internal 3-D extents of a rank-r shape. */
static inline void gt_ext(uint32_t rank, const int64_t *shape, int64_t n[3]) {
  for (int a = 0; a < 3; a++) n[a] = a < (int)(3 - rank) ? 1 : shape[a - (3 - (int)rank)];
}
static inline size_t gt_count(const int64_t n[3]) { return (size_t)(n[0] * n[1] * n[2]); }
static inline size_t gt_id(const int64_t n[3], int64_t i, int64_t j, int64_t k) {
  return (size_t)((i * n[1] + j) * n[2] + k);
}

/* A field filled with random values (or `fill` when not NAN); *host gets a
 * malloc'd f64 copy of what it holds. */
static inline hc_field_t *gt_field(hc_device_t *d, hc_dtype_t dt, uint32_t rank, const int64_t *shape, double fill,
                                   double **host) {
  hc_field_t *f = NULL;
  if (host) *host = NULL;
  if (hc_field_create(d, dt, rank, shape, &f) != HC_OK) return NULL;
  size_t n = hc_field_count(f);
  double *h = malloc(n * sizeof *h);
  void *raw = malloc(n * 8);
  for (size_t i = 0; i < n; i++) {
    double v = isnan(fill) ? gt_rand() : fill;
    if (dt == HC_F32) {
      ((float *)raw)[i] = (float)v;
      h[i] = (double)(float)v;
    } else {
      ((double *)raw)[i] = v;
      h[i] = v;
    }
  }
  hc_field_write(f, raw);
  free(raw);
  if (host)
    *host = h;
  else
    free(h);
  return f;
}

static inline double *gt_read(const hc_field_t *f) {
  size_t n = hc_field_count(f);
  double *h = malloc(n * sizeof *h);
  void *raw = malloc(n * 8);
  hc_field_read(f, raw);
  for (size_t i = 0; i < n; i++) h[i] = hc_field_dtype(f) == HC_F32 ? (double)((float *)raw)[i] : ((double *)raw)[i];
  free(raw);
  return h;
}

/* The box of a range on internal axes, [lo, hi). */
static inline void gt_box(uint32_t rank, const int64_t n[3], const hc_grid_range_t *r, int64_t lo[3], int64_t hi[3]) {
  for (int a = 0; a < 3; a++) {
    int u = a - (3 - (int)rank);
    lo[a] = (r && u >= 0) ? r->lo[u] : 0;
    hi[a] = n[a] - ((r && u >= 0) ? r->hi[u] : 0);
  }
}

static inline int gt_in_box(const int64_t lo[3], const int64_t hi[3], uint32_t parity, int64_t i, int64_t j,
                            int64_t k) {
  if (i < lo[0] || i >= hi[0] || j < lo[1] || j >= hi[1] || k < lo[2] || k >= hi[2]) return 0;
  if (parity == HC_GRID_EVEN) return ((i + j + k) & 1) == 0;
  if (parity == HC_GRID_ODD) return ((i + j + k) & 1) == 1;
  return 1;
}

/* Compares a field with a reference inside the box (relative to the
 * reference's scale) and bit-for-bit with `before` outside it. Returns the
 * number of failures and prints the first. */
static inline int gt_check(const char *what, const hc_field_t *f, const double *ref, const double *before,
                           const hc_grid_range_t *r, double tol) {
  uint32_t rank = hc_field_rank(f);
  int64_t n[3], lo[3], hi[3];
  gt_ext(rank, hc_field_shape(f), n);
  gt_box(rank, n, r, lo, hi);
  uint32_t parity = r ? r->parity : 0;
  double *got = gt_read(f);
  double scale = 1e-300;
  for (int64_t i = lo[0]; i < hi[0]; i++)
    for (int64_t j = lo[1]; j < hi[1]; j++)
      for (int64_t k = lo[2]; k < hi[2]; k++)
        if (gt_in_box(lo, hi, parity, i, j, k) && fabs(ref[gt_id(n, i, j, k)]) > scale)
          scale = fabs(ref[gt_id(n, i, j, k)]);
  if (scale < 1) scale = 1;
  int bad = 0;
  for (int64_t i = 0; i < n[0]; i++)
    for (int64_t j = 0; j < n[1]; j++)
      for (int64_t k = 0; k < n[2]; k++) {
        size_t id = gt_id(n, i, j, k);
        int in = gt_in_box(lo, hi, parity, i, j, k);
        int ok = in ? fabs(got[id] - ref[id]) <= tol * scale
                    : (before ? memcmp(&got[id], &before[id], sizeof(double)) == 0 : 1);
        if (!ok && bad++ == 0)
          fprintf(stderr, "%s: cell (%lld,%lld,%lld) %s: got %.17g, want %.17g (tol %.3g)\n", what, (long long)i,
                  (long long)j, (long long)k, in ? "inside" : "outside the box", got[id], in ? ref[id] : before[id],
                  tol * scale);
      }
  free(got);
  return bad;
}

/* With the shape variable `var` set to the malformed `value`, an
 * assignment fails with HC_ERR_PARAM and a message naming "var=value";
 * unsets var. */
static inline void gt_check_bad_shape(const char *var, const char *value) {
  setenv(var, value, 1);
  hc_grid_t *g = NULL;
  hc_device_t *d = th_device(gt_cfgs[0].spec);
  if (d) {
    /* read once, when the grid is created */
    CU_ASSERT_EQUAL(hc_grid_create(d, NULL, &g), HC_ERR_PARAM);
    CU_ASSERT_PTR_NULL(g);
    char want[64];
    snprintf(want, sizeof want, "%s=%s", var, value);
    CU_ASSERT(strstr(hc_last_error(), want) != NULL);
  }
  unsetenv(var);
}

static inline double gt_tol(hc_dtype_t dt) { return dt == HC_F64 ? 1e-12 : 2e-5; }

/* out = sum_k c[k] u(i + off[k]) inside the box (internal axes: offsets of a
 * rank-r stencil act on the last r axes). */
static inline void gt_ref_stencil(uint32_t rank, const int64_t n[3], const double *u, uint32_t np, const int32_t *off,
                                  const double *c, const int64_t lo[3], const int64_t hi[3], double *out) {
  int ax0 = 3 - (int)rank;
  for (int64_t i = lo[0]; i < hi[0]; i++)
    for (int64_t j = lo[1]; j < hi[1]; j++)
      for (int64_t k = lo[2]; k < hi[2]; k++) {
        double s = 0;
        for (uint32_t p = 0; p < np; p++) {
          int64_t q[3] = {i, j, k};
          for (uint32_t d = 0; d < rank; d++) q[ax0 + d] += off[p * rank + d];
          s += c[p] * u[gt_id(n, q[0], q[1], q[2])];
        }
        out[gt_id(n, i, j, k)] = s;
      }
}

/* Full-weighting restriction of a fine array (extents nf) onto the coarse
 * box [lo, hi) (coarse extents nc). */
static inline void gt_ref_restrict(uint32_t rank, const int64_t nf[3], const double *u, const int64_t nc[3],
                                   const int64_t lo[3], const int64_t hi[3], double *out) {
  int ax0 = 3 - (int)rank;
  for (int64_t i = lo[0]; i < hi[0]; i++)
    for (int64_t j = lo[1]; j < hi[1]; j++)
      for (int64_t k = lo[2]; k < hi[2]; k++) {
        double s = 0;
        int64_t c[3] = {i, j, k};
        for (int o0 = -1; o0 <= 1; o0++)
          for (int o1 = -1; o1 <= 1; o1++)
            for (int o2 = -1; o2 <= 1; o2++) {
              int o[3] = {o0, o1, o2};
              double w = 1;
              int64_t f[3];
              int skip = 0;
              for (int a = 0; a < 3; a++) {
                if (a < ax0) {
                  if (o[a]) skip = 1;
                  f[a] = c[a];
                } else {
                  f[a] = 2 * c[a] + o[a];
                  w *= o[a] ? 0.25 : 0.5;
                }
              }
              if (!skip) s += w * u[gt_id(nf, f[0], f[1], f[2])];
            }
        out[gt_id(nc, i, j, k)] = s;
      }
}

/* Linear prolongation of a coarse array onto every fine point. */
static inline void gt_ref_prolong(uint32_t rank, const int64_t nc[3], const double *u, const int64_t nf[3],
                                  double *out) {
  int ax0 = 3 - (int)rank;
  for (int64_t i = 0; i < nf[0]; i++)
    for (int64_t j = 0; j < nf[1]; j++)
      for (int64_t k = 0; k < nf[2]; k++) {
        int64_t f[3] = {i, j, k};
        double s = 0;
        for (int m = 0; m < 8; m++) {
          double w = 1;
          int64_t c[3];
          for (int a = 0; a < 3; a++) {
            int b = (m >> a) & 1;
            if (a < ax0) {
              c[a] = f[a];
              if (b) w = 0;
            } else if (f[a] & 1) {
              c[a] = (f[a] >> 1) + b;
              w *= 0.5;
            } else {
              c[a] = f[a] >> 1;
              if (b) w = 0;
            }
          }
          if (w != 0) s += w * u[gt_id(nc, c[0], c[1], c[2])];
        }
        out[gt_id(nf, i, j, k)] = s;
      }
}

#endif
