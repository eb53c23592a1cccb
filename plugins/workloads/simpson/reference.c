/* simpson: the float64 host reference for --verify — nested 1-D rules, the
 * last axis first, each written the way SciPy's simpson() computes it
 * (triples y0 + 4 y1 + y2 times h/3; Cartwright's alpha, beta, eta for an
 * odd interval count; the trapezoid for 2 samples). It does not use
 * simpson_w12, so it checks the kernels' weights instead of repeating them.
 * Sums are pairwise, so the reference's own rounding stays far below the
 * 1e-12 tolerance even for 10^9 samples on one axis. */
#include <math.h>
#include <stdlib.h>

#include "simpson.h"

/* A strided view of samples: f32 or f64, optionally their absolute values. */
typedef struct {
  const void *p;
  hc_dtype_t dt;
  size_t stride;
  int absv;
} view_t;

static inline double at(const view_t *v, size_t i) {
  double x = v->dt == HC_F32 ? (double)((const float *)v->p)[i * v->stride] : ((const double *)v->p)[i * v->stride];
  return v->absv ? fabs(x) : x;
}

/* Sum over pairs m in [a, b) of y[2m] + 4 y[2m+1] + y[2m+2], pairwise. */
static double triples(const view_t *v, size_t a, size_t b) {
  if (b - a > 64) {
    size_t mid = a + (b - a) / 2;
    return triples(v, a, mid) + triples(v, mid, b);
  }
  double s = 0;
  for (size_t m = a; m < b; m++) s += at(v, 2 * m) + 4.0 * at(v, 2 * m + 1) + at(v, 2 * m + 2);
  return s;
}

/* One axis of n >= 2 samples with spacing h. With absv the view holds |y|
 * and Cartwright's negative weight counts positive: sum |w y|. */
static double rule1d(const view_t *v, size_t n, double h) {
  if (n == 2) return 0.5 * h * (at(v, 0) + at(v, 1));
  if (n & 1) return h / 3.0 * triples(v, 0, (n - 1) / 2);
  /* Simpson on the first n-1 samples, Cartwright on the last interval
   * (SciPy's expressions with h0 = h1 = h). */
  double result = h / 3.0 * triples(v, 0, (n - 2) / 2);
  double alpha = (2 * h * h + 3 * h * h) / (6 * (h + h));
  double beta = (h * h + 3.0 * h * h) / (6 * h);
  double eta = (h * h * h) / (6 * h * (h + h));
  return result + alpha * at(v, n - 1) + beta * at(v, n - 2) + (v->absv ? eta : -eta) * at(v, n - 3);
}

/* Integrates the padded nx*ny*nz samples: rows first, then the y and x
 * axes over the row results (axes of extent 1 pass through). */
static hc_status_t nested(const simpson_config_t *cfg, const void *data, int absv, double *out) {
  const size_t nx = (size_t)cfg->nx, ny = (size_t)cfg->ny, nz = (size_t)cfg->nz;
  const uint32_t r = cfg->rank;
  const double hz = cfg->h[r - 1], hy = r >= 2 ? cfg->h[r - 2] : 1, hx = r >= 3 ? cfg->h[0] : 1;
  const size_t es = hc_dtype_size(cfg->dtype);
  double *rows = malloc(nx * ny * sizeof *rows), *planes = malloc(nx * sizeof *planes);
  if (!rows || !planes) {
    free(rows);
    free(planes);
    return hc_error(HC_ERR_NO_MEMORY, "simpson reference: out of host memory");
  }
  for (size_t row = 0; row < nx * ny; row++) {
    view_t v = {(const char *)data + row * nz * es, cfg->dtype, 1, absv};
    rows[row] = rule1d(&v, nz, hz);
  }
  for (size_t i = 0; i < nx; i++) {
    view_t v = {rows + i * ny, HC_F64, 1, absv};
    planes[i] = ny >= 2 ? rule1d(&v, ny, hy) : rows[i];
  }
  view_t v = {planes, HC_F64, 1, absv};
  *out = nx >= 2 ? rule1d(&v, nx, hx) : planes[0];
  free(rows);
  free(planes);
  return HC_OK;
}

hc_status_t simpson_reference(const simpson_config_t *cfg, const void *data, simpson_reference_t *out) {
  hc_status_t st = nested(cfg, data, 0, &out->value);
  if (st == HC_OK) st = nested(cfg, data, 1, &out->scale);
  return st;
}
