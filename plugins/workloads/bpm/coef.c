/* bpm: coefficients of the theta scheme on one axis, the Thomas factors of
 * its lines, and Hadley's transparent-boundary factor. Everything here is
 * double precision on the host; the devices get the factors rounded once. */
#include <math.h>

#include "bpm.h"

bpm_axis_t bpm_axis(const bpm_config_t *c, double h, double share) {
  bpm_axis_t a;
  a.alpha = I * c->hz / (2 * c->k0 * c->n0 * h * h);
  a.lo = -c->theta * a.alpha;
  a.beta = (1 - c->theta) * a.alpha;
  a.vscale = h * h * share;
  return a;
}

/* The LHS diagonal at a node with potential v. */
static double complex lhs_diag(const bpm_axis_t *a, double theta, double complex v) {
  return 1 - theta * a->alpha * (-2 + a->vscale * v);
}

void bpm_factor_line(const bpm_axis_t *a, double theta, int64_t m, const double complex *v, ptrdiff_t vstride,
                     double complex *cp, double complex *inv) {
  double complex prev = 0;
  for (int64_t k = 0; k < m; k++) {
    double complex piv = lhs_diag(a, theta, v[k * vstride]) - a->lo * prev;
    inv[k] = 1 / piv;
    cp[k] = a->lo * inv[k];
    prev = cp[k];
  }
}

void bpm_solve_line(const bpm_axis_t *a, int64_t m, const double complex *cp, const double complex *inv,
                    const double complex *b, double complex *x) {
  double complex d = 0;
  for (int64_t k = 0; k < m; k++) x[k] = d = (b[k] - a->lo * d) * inv[k];
  for (int64_t k = m - 2; k >= 0; k--) x[k] -= cp[k] * x[k + 1];
}

/* Near a wall the field is taken as a plane wave, edge/inner = exp(i kappa
 * h), kappa pointing out of the window. Hadley (Opt. Lett. 16, 624, 1991)
 * keeps the wave outgoing by clipping Re(kappa) to >= 0, i.e. a negative
 * phase of the ratio to 0. A vanishing inner node gives a conductor. */
double complex bpm_tbc_eta(double complex edge, double complex inner) {
  double m2 = creal(inner) * creal(inner) + cimag(inner) * cimag(inner);
  if (!(m2 > 0)) return 0;
  double complex r = edge / inner;
  return cimag(r) < 0 ? cabs(r) : r;
}
