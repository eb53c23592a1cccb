/* simpson: the built-in test functions on a box — samples, exact
 * integrals, and bounds of the rule's error for --verify.
 *
 * Axis d of the field is the variable x_d; a 1-D or 2-D field has only its
 * own variables (poly sets the missing ones to 1, the products drop them).
 *   one      f = 1                                  (the box volume)
 *   poly     f = a fixed sum of monomials of degree <= 3 in each variable
 *            (the rule is exact for it with odd sample counts)
 *   gauss    f = exp(-(x0^2 + x1^2 + x2^2))
 *   sinprod  f = sin(pi x0) sin(pi x1) sin(pi x2) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "simpson.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* poly's monomials: coefficient and the power of x0, x1, x2 (each <= 3). */
static const struct {
  double c;
  int p[3];
} poly_terms[] = {
    {1.0, {0, 0, 0}},  {1.0, {1, 0, 0}}, {-2.0, {0, 1, 0}}, {3.0, {0, 0, 1}}, {1.0, {1, 1, 1}},
    {-1.0, {3, 0, 0}}, {2.0, {0, 3, 2}}, {1.0, {2, 1, 3}},  {0.5, {3, 3, 3}},
};
#define NPOLY (sizeof poly_terms / sizeof poly_terms[0])

/* Coordinate i of user axis d: the ends exactly at the box's ends. */
static double coord(const simpson_config_t *cfg, uint32_t d, int64_t i) {
  if (d == 0) return cfg->lo[0] + (cfg->hi[0] - cfg->lo[0]) * (double)(i + cfg->row0) / (double)(cfg->grows - 1);
  return cfg->lo[d] + (cfg->hi[d] - cfg->lo[d]) * (double)i / (double)(cfg->shape[d] - 1);
}

/* The 1-D factor of a separable function. */
static double factor(simpson_func_t f, double x) {
  switch (f) {
  case SIMPSON_FUNC_GAUSS: return exp(-x * x);
  case SIMPSON_FUNC_SINPROD: return sin(M_PI * x);
  default: return 1.0;
  }
}

/* Per padded slot s (0..2) a table of values per index: for a separable
 * function the factor, for poly the powers x^0..x^3 (4 rows). Padding
 * slots hold 1. */
typedef struct {
  int64_t len[3];
  double *t[3]; /* len[s] * rows */
} tables_t;

static void tables_free(tables_t *tb) {
  for (int s = 0; s < 3; s++) free(tb->t[s]);
}

static int tables_make(const simpson_config_t *cfg, tables_t *tb) {
  memset(tb, 0, sizeof *tb);
  const int poly = cfg->func == SIMPSON_FUNC_POLY, rows = poly ? 4 : 1;
  const uint32_t pad = 3 - cfg->rank;
  for (uint32_t s = 0; s < 3; s++) {
    const int real = s >= pad;
    const uint32_t d = s - pad;
    tb->len[s] = real ? cfg->shape[d] : 1;
    tb->t[s] = malloc((size_t)tb->len[s] * rows * sizeof(double));
    if (!tb->t[s]) return 0;
    for (int64_t i = 0; i < tb->len[s]; i++) {
      const double x = real ? coord(cfg, d, i) : 1.0;
      if (poly)
        for (int p = 0; p < 4; p++) tb->t[s][p * tb->len[s] + i] = pow(x, p);
      else
        tb->t[s][i] = real ? factor(cfg->func, x) : 1.0;
    }
  }
  return 1;
}

/* Power of slot s's variable in poly's monomial m (padding slots: 0). */
static int slot_power(const simpson_config_t *cfg, size_t m, int s) {
  const int pad = 3 - (int)cfg->rank;
  return s < pad ? 0 : poly_terms[m].p[s - pad];
}

#define SIMPSON_FILL_ROWS(T)                                                                  \
  static void fill_##T(const simpson_config_t *cfg, const tables_t *tb, T *out) {             \
    const int64_t nx = tb->len[0], ny = tb->len[1], nz = tb->len[2];                          \
    const int poly = cfg->func == SIMPSON_FUNC_POLY;                                          \
    int pw[NPOLY][3];                                                                         \
    for (size_t m = 0; m < NPOLY; m++)                                                        \
      for (int s = 0; s < 3; s++) pw[m][s] = slot_power(cfg, m, s);                           \
    for (int64_t i = 0; i < nx; i++)                                                          \
      for (int64_t j = 0; j < ny; j++) {                                                      \
        T *restrict row = out + (i * ny + j) * nz;                                            \
        if (!poly) {                                                                          \
          const double a = tb->t[0][i] * tb->t[1][j];                                         \
          const double *restrict g = tb->t[2];                                                \
          for (int64_t k = 0; k < nz; k++) row[k] = (T)(a * g[k]);                            \
          continue;                                                                           \
        }                                                                                     \
        double a[NPOLY];                                                                      \
        for (size_t m = 0; m < NPOLY; m++)                                                    \
          a[m] = poly_terms[m].c * tb->t[0][pw[m][0] * nx + i] * tb->t[1][pw[m][1] * ny + j]; \
        for (int64_t k = 0; k < nz; k++) {                                                    \
          double v = 0;                                                                       \
          for (size_t m = 0; m < NPOLY; m++) v += a[m] * tb->t[2][pw[m][2] * nz + k];         \
          row[k] = (T)v;                                                                      \
        }                                                                                     \
      }                                                                                       \
  }
SIMPSON_FILL_ROWS(float)
SIMPSON_FILL_ROWS(double)

hc_status_t simpson_func_fill(const simpson_config_t *cfg, void *data) {
  if (cfg->func == SIMPSON_FUNC_ONE) {
    if (cfg->dtype == HC_F32)
      for (int64_t e = 0; e < cfg->n; e++) ((float *)data)[e] = 1.0f;
    else
      for (int64_t e = 0; e < cfg->n; e++) ((double *)data)[e] = 1.0;
    return HC_OK;
  }
  tables_t tb;
  hc_status_t st = HC_OK;
  if (!tables_make(cfg, &tb))
    st = hc_error(HC_ERR_NO_MEMORY, "func=%s: out of host memory", simpson_func_name(cfg->func));
  else if (cfg->dtype == HC_F32)
    fill_float(cfg, &tb, data);
  else
    fill_double(cfg, &tb, data);
  tables_free(&tb);
  return st;
}

/* Exact integral of x^p over [a, b]. */
static double mono_integral(double a, double b, int p) { return (pow(b, p + 1) - pow(a, p + 1)) / (p + 1); }

double simpson_func_exact(const simpson_config_t *cfg) {
  double v = 1.0;
  switch (cfg->func) {
  case SIMPSON_FUNC_POLY:
    v = 0;
    for (size_t m = 0; m < NPOLY; m++) {
      double t = poly_terms[m].c;
      for (uint32_t d = 0; d < cfg->rank; d++) t *= mono_integral(cfg->lo[d], cfg->hi[d], poly_terms[m].p[d]);
      v += t;
    }
    return v;
  case SIMPSON_FUNC_GAUSS:
    for (uint32_t d = 0; d < cfg->rank; d++) v *= 0.5 * sqrt(M_PI) * (erf(cfg->hi[d]) - erf(cfg->lo[d]));
    return v;
  case SIMPSON_FUNC_SINPROD:
    for (uint32_t d = 0; d < cfg->rank; d++) v *= (cos(M_PI * cfg->lo[d]) - cos(M_PI * cfg->hi[d])) / M_PI;
    return v;
  default:
    for (uint32_t d = 0; d < cfg->rank; d++) v *= cfg->hi[d] - cfg->lo[d];
    return v;
  }
}

/* Bound of |d^k f / dx_d^k| over the box. */
static double deriv_bound(const simpson_config_t *cfg, uint32_t axis, int k) {
  /* exp(-x^2): max |g|, |g'|, |g''|, |g'''|, |g''''| (at x = 0, 1/sqrt 2, 0, ~0.52, 0). */
  static const double gauss_m[5] = {1.0, 0.8578, 2.0, 4.2, 12.0};
  switch (cfg->func) {
  case SIMPSON_FUNC_GAUSS: return gauss_m[k];
  case SIMPSON_FUNC_SINPROD: return pow(M_PI, k);
  case SIMPSON_FUNC_POLY: {
    double b = 0;
    for (size_t m = 0; m < NPOLY; m++) {
      int p = poly_terms[m].p[axis];
      if (p < k) continue;
      double t = fabs(poly_terms[m].c);
      for (int q = 0; q < k; q++) t *= p - q;
      for (uint32_t d = 0; d < cfg->rank; d++) {
        double r = fmax(fabs(cfg->lo[d]), fabs(cfg->hi[d]));
        t *= pow(r, d == axis ? p - k : poly_terms[m].p[d]);
      }
      b += t;
    }
    return b;
  }
  default: return 0;
  }
}

/* Error of the 1-D rule on axis d for a function with these derivative
 * bounds (Peano kernels): trapezoid L^3 f''/12; Simpson L h^4 f''''/180;
 * Cartwright's last interval h^4 f'''/24. */
static double axis_error(const simpson_config_t *cfg, uint32_t d) {
  const int64_t n = cfg->shape[d];
  const double h = cfg->h[d], len = h * (double)(n - 1);
  if (n == 2) return len * len * len * deriv_bound(cfg, d, 2) / 12.0;
  double simpson_len = (n & 1) ? len : len - h;
  double e = simpson_len * pow(h, 4) * deriv_bound(cfg, d, 4) / 180.0;
  if (!(n & 1)) e += pow(h, 4) * deriv_bound(cfg, d, 3) / 24.0;
  return e;
}

double simpson_func_error_bound(const simpson_config_t *cfg) {
  double total = 0;
  for (uint32_t d = 0; d < cfg->rank; d++) {
    double e = axis_error(cfg, d);
    /* The other axes' rules (weights summing to L, or L + h/6 in absolute
     * value with Cartwright's negative weight) carry the error along. */
    for (uint32_t o = 0; o < cfg->rank; o++)
      if (o != d) {
        double len = cfg->h[o] * (double)(cfg->shape[o] - 1);
        e *= len + ((cfg->shape[o] % 2 == 0 && cfg->shape[o] > 2) ? cfg->h[o] / 6.0 : 0.0);
      }
    total += e;
  }
  return 1.5 * total; /* margin for the bounds' rounding */
}
