/* bpm: the 2-D scheme as band matrices stored by diagonals (the paper's
 * storage, for the one-parameter iteration), with the 3-point (order 2)
 * or 5-point (order 4) second difference; and Richardson's parameter. */
#include <math.h>
#include <stdlib.h>

#include "bpm.h"

/* Second-difference stencils times h^2, centre at [half]: X(order, half,
 * coefficients) — one table for the matrices, the spectrum bound and the
 * mode's eigenvalue. */
static const double stencil2[] = {1, -2, 1};
static const double stencil4[] = {-1.0 / 12, 16.0 / 12, -30.0 / 12, 16.0 / 12, -1.0 / 12};

const double *bpm_stencil(int order, int *half) {
  *half = order == 4 ? 2 : 1;
  return order == 4 ? stencil4 : stencil2;
}

double bpm_stencil_symbol(int order, double theta) {
  int half;
  const double *c = bpm_stencil(order, &half);
  double mu = c[half];
  for (int k = 1; k <= half; k++) mu += 2 * c[half + k] * cos(k * theta);
  return mu;
}

/* Paper storage: Adiag (n), then the q upper bands, then the p lower ones;
 * band m of a part starts at (m-1) n - m (m-1)/2. */
static size_t band_index(int64_t n, int p, int q, int64_t i, int64_t j) {
  size_t nq = (size_t)q * (size_t)n - (size_t)q * (size_t)(q + 1) / 2;
  if (i == j) return (size_t)i;
  if (j > i) {
    int64_t m = j - i;
    return (size_t)n + (size_t)((m - 1) * n - m * (m - 1) / 2 + i);
  }
  int64_t h = i - j;
  (void)p;
  return (size_t)n + nq + (size_t)((h - 1) * n - h * (h - 1) / 2 + j);
}

size_t bpm_band_size(int64_t n, int p, int q) {
  return (size_t)n + (size_t)q * (size_t)n - (size_t)q * (size_t)(q + 1) / 2 + (size_t)p * (size_t)n -
         (size_t)p * (size_t)(p + 1) / 2;
}

/* Entry (i, j) of S + h^2 V (the stencil with the walls' odd reflection:
 * the wall nodes -1 and n are 0, and E_{-1-k} = -E_{k-1}, E_{n+k} =
 * -E_{n-k}), accumulated into a dense-band callback. */
static void stencil_rows(const bpm_config_t *c, const bpm_axis_t *a, const bpm_problem_t *p,
                         void (*put)(void *u, int64_t i, int64_t j, double complex v), void *u) {
  int half;
  const double *st = bpm_stencil(c->order, &half);
  const int64_t n = c->ny;
  for (int64_t i = 0; i < n; i++) {
    put(u, i, i, a->vscale * p->v[i]);
    for (int k = -half; k <= half; k++) {
      int64_t j = i + k;
      double w = st[half + k];
      if (j == -1 || j == n) continue; /* the wall itself: 0 */
      if (j < -1)
        j = -2 - j, w = -w;
      else if (j > n)
        j = 2 * n - j, w = -w;
      put(u, i, j, w);
    }
  }
}

typedef struct {
  double complex *m, *r;
  int64_t n;
  int half;
  double theta;
  double complex alpha;
} band_put_t;

static void put_paper(void *u, int64_t i, int64_t j, double complex v) {
  band_put_t *b = u;
  size_t k = band_index(b->n, b->half, b->half, i, j);
  b->m[k] += -b->theta * b->alpha * v;
  b->r[k] += (1 - b->theta) * b->alpha * v;
}

hc_status_t bpm_build_bands(const bpm_config_t *c, const bpm_axis_t *a, const bpm_problem_t *p, double complex **m,
                            double complex **r, int *pq) {
  int half;
  bpm_stencil(c->order, &half);
  size_t size = bpm_band_size(c->ny, half, half);
  *m = calloc(size, sizeof **m);
  *r = calloc(size, sizeof **r);
  if (!*m || !*r) {
    free(*m), free(*r);
    *m = *r = NULL;
    return hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory for the band matrices");
  }
  for (int64_t i = 0; i < c->ny; i++) (*m)[i] = (*r)[i] = 1;
  band_put_t u = {*m, *r, c->ny, half, c->theta, a->alpha};
  stencil_rows(c, a, p, put_paper, &u);
  *pq = half;
  return HC_OK;
}

/* Richardson's parameter tau = 2/(lmin + lmax) from the spectrum of the
 * LHS: with alpha imaginary, LHS = 1 - theta alpha (S + h^2 V), the
 * stencil's spectrum lies in [symbol(pi), 0] shifted by h^2 Re v, so the
 * eigenvalues lie on a segment parallel to the imaginary axis, moved right
 * by the absorption. *rho: the contraction |1 - tau lambda| at the ends. */
double complex bpm_richardson_tau(const bpm_config_t *c, const bpm_axis_t *a, const bpm_problem_t *p, double *rho) {
  double vlo = INFINITY, vhi = -INFINITY, damp = INFINITY;
  for (int64_t i = 0; i < c->ny; i++) {
    vlo = fmin(vlo, a->vscale * creal(p->v[i])), vhi = fmax(vhi, a->vscale * creal(p->v[i]));
    damp = fmin(damp, a->vscale * cimag(p->v[i]));
  }
  double mlo = bpm_stencil_symbol(c->order, M_PI) + vlo, mhi = vhi;
  double complex l1 = 1 - c->theta * a->alpha * (mhi + I * damp), l2 = 1 - c->theta * a->alpha * (mlo + I * damp);
  double complex tau = 2 / (l1 + l2);
  *rho = fmax(cabs(1 - tau * l1), cabs(1 - tau * l2));
  return tau;
}

/* Dense-band (rows i, offsets -half..half) for the host reference. */
typedef struct {
  double complex *m, *r;
  int half;
  double theta;
  double complex alpha;
} dense_put_t;

static void put_dense(void *u, int64_t i, int64_t j, double complex v) {
  dense_put_t *b = u;
  size_t w = (size_t)(2 * b->half + 1), k = (size_t)i * w + (size_t)(j - i + b->half);
  b->m[k] += -b->theta * b->alpha * v;
  b->r[k] += (1 - b->theta) * b->alpha * v;
}

hc_status_t bpm_dense_bands(const bpm_config_t *c, const bpm_axis_t *a, const bpm_problem_t *p, double complex **m,
                            double complex **r, int *half) {
  bpm_stencil(c->order, half);
  size_t w = (size_t)(2 * *half + 1), size = (size_t)c->ny * w;
  *m = calloc(size, sizeof **m);
  *r = calloc(size, sizeof **r);
  if (!*m || !*r) {
    free(*m), free(*r);
    *m = *r = NULL;
    return hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory for the band matrices");
  }
  for (int64_t i = 0; i < c->ny; i++) (*m)[(size_t)i * w + (size_t)*half] = (*r)[(size_t)i * w + (size_t)*half] = 1;
  dense_put_t u = {*m, *r, *half, c->theta, a->alpha};
  stencil_rows(c, a, p, put_dense, &u);
  return HC_OK;
}
