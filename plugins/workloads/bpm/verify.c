/* bpm --verify: the run against
 *  - the discrete-exact solution when the guide mode is launched into a
 *    uniform medium between conductors (the mode is an eigenvector of the
 *    scheme: E(Lz) = g^steps E(0) with the scheme's amplification g), or
 *  - the same scheme marched on the host in double precision, with plain
 *    Thomas solves whose wall rows carry Hadley's factor (an independent
 *    path: the devices use a precomputed factorisation and a rank-2
 *    correction), or
 *  - for 3-D runs too large for that, power conservation where the scheme
 *    conserves it (Crank-Nicolson, conductors, lossless medium).
 * Tolerances grow with the number of steps: the coefficients are rounded
 * to the run's precision once, so the error grows about linearly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpm.h"

/* Thomas for tridiag(lo, diag, lo) x = b; cp: scratch of m. */
static void thomas(int64_t m, double complex lo, const double complex *diag, const double complex *b, double complex *x,
                   double complex *cp) {
  double complex piv = diag[0], d;
  cp[0] = lo / piv;
  x[0] = d = b[0] / piv;
  for (int64_t k = 1; k < m; k++) {
    piv = diag[k] - lo * cp[k - 1];
    cp[k] = lo / piv;
    x[k] = d = (b[k] - lo * d) / piv;
  }
  for (int64_t k = m - 2; k >= 0; k--) x[k] -= cp[k] * x[k + 1];
}

/* One theta half-step on a line: implicit along the line (axis a, factor
 * share of the potential), explicit part given as rhs. Line values are
 * strided in e (stride s, m of them); eta from the line's own wall pairs. */
static void line_solve(const bpm_config_t *c, const bpm_axis_t *a, int64_t m, const double complex *v, ptrdiff_t vs,
                       const double complex *rhs, double complex *x, double complex etaL, double complex etaR,
                       double complex *diag, double complex *cp) {
  for (int64_t k = 0; k < m; k++) diag[k] = 1 - c->theta * a->alpha * (-2 + a->vscale * v[k * vs]);
  diag[0] += a->lo * etaL;
  diag[m - 1] += a->lo * etaR;
  thomas(m, a->lo, diag, rhs, x, cp);
}

/* Solves a dense-band system (rows of 2 half + 1 entries, offsets -half..
 * half) by elimination without pivoting (the matrices are I + i K with K
 * real symmetric, plus absorption: a positive definite real part), in
 * place on a copy in w. */
static void band_solve(int64_t n, int half, const double complex *a, double complex *w, double complex *b) {
  const size_t bw = (size_t)(2 * half + 1);
  memcpy(w, a, (size_t)n * bw * sizeof *w);
#define W(i, j) w[(size_t)(i)*bw + (size_t)((j) - (i) + half)]
  for (int64_t i = 0; i < n; i++)
    for (int64_t r = i + 1; r <= i + half && r < n; r++) {
      double complex f = W(r, i) / W(i, i);
      for (int64_t j = i; j <= i + half && j < n; j++) W(r, j) -= f * W(i, j);
      b[r] -= f * b[i];
    }
  for (int64_t i = n - 1; i >= 0; i--) {
    for (int64_t j = i + 1; j <= i + half && j < n; j++) b[i] -= W(i, j) * b[j];
    b[i] /= W(i, i);
  }
#undef W
}

hc_status_t bpm_host_march2d(const bpm_config_t *c, const bpm_problem_t *p, double complex *out) {
  const int64_t n = c->ny;
  const bpm_axis_t a = bpm_axis(c, c->hy, 1.0);
  double complex *b = malloc((size_t)n * sizeof *b), *diag = malloc((size_t)n * sizeof *diag),
                 *cp = malloc((size_t)n * sizeof *cp), *m = NULL, *r = NULL, *w = NULL;
  int half = 1;
  hc_status_t st = HC_OK;
  if (!b || !diag || !cp) {
    st = hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory for the reference");
    goto out;
  }
  memcpy(out, p->e0, (size_t)n * sizeof *out);
  if (c->order == 4) { /* pentadiagonal: banded elimination */
    if ((st = bpm_dense_bands(c, &a, p, &m, &r, &half)) != HC_OK) goto out;
    if (!(w = malloc((size_t)n * (size_t)(2 * half + 1) * sizeof *w))) {
      st = hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory for the reference");
      goto out;
    }
    const size_t bw = (size_t)(2 * half + 1);
    for (int64_t s = 0; s < c->steps; s++) {
      for (int64_t i = 0; i < n; i++) {
        b[i] = 0;
        for (int k = -half; k <= half; k++)
          if (i + k >= 0 && i + k < n) b[i] += r[(size_t)i * bw + (size_t)(k + half)] * out[i + k];
      }
      band_solve(n, half, m, w, b);
      memcpy(out, b, (size_t)n * sizeof *out);
    }
    goto out;
  }
  const int tbc = c->bc == BPM_BC_TRANSPARENT;
  for (int64_t s = 0; s < c->steps; s++) {
    double complex etaL = tbc ? bpm_tbc_eta(out[0], out[1]) : 0, etaR = tbc ? bpm_tbc_eta(out[n - 1], out[n - 2]) : 0;
    for (int64_t i = 0; i < n; i++) {
      double complex em = i > 0 ? out[i - 1] : etaL * out[0], ep = i + 1 < n ? out[i + 1] : etaR * out[n - 1];
      b[i] = (1 + a.beta * (-2 + a.vscale * p->v[i])) * out[i] + a.beta * (em + ep);
    }
    line_solve(c, &a, n, p->v, 1, b, out, etaL, etaR, diag, cp);
  }
out:
  free(b), free(diag), free(cp), free(m), free(r), free(w);
  return st;
}

/* Peaceman-Rachford on the host: x-lines implicit with y explicit, then
 * y-lines implicit with x explicit; each half-step takes its walls'
 * factors from its own input. */
static hc_status_t host_adi3d(const bpm_config_t *c, const bpm_problem_t *p, double complex *e) {
  const int64_t nx = c->nx, ny = c->ny, mx = nx > ny ? nx : ny;
  const bpm_axis_t ax = bpm_axis(c, c->hx, 0.5), ay = bpm_axis(c, c->hy, 0.5);
  const int tbc = c->bc == BPM_BC_TRANSPARENT;
  double complex *es = malloc((size_t)(nx * ny) * sizeof *es), *b = malloc((size_t)mx * sizeof *b),
                 *x = malloc((size_t)mx * sizeof *x), *diag = malloc((size_t)mx * sizeof *diag),
                 *cp = malloc((size_t)mx * sizeof *cp);
  if (!es || !b || !x || !diag || !cp) {
    free(es), free(b), free(x), free(diag), free(cp);
    return hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory for the reference");
  }
#define E(i, j) e[(i)*ny + (j)]
#define ES(i, j) es[(i)*ny + (j)]
  for (int64_t s = 0; s < c->steps; s++) {
    for (int64_t j = 0; j < ny; j++) { /* x-lines */
      double complex etaL = tbc ? bpm_tbc_eta(E(0, j), E(1, j)) : 0,
                     etaR = tbc ? bpm_tbc_eta(E(nx - 1, j), E(nx - 2, j)) : 0;
      for (int64_t i = 0; i < nx; i++) {
        double complex gl = tbc ? bpm_tbc_eta(E(i, 0), E(i, 1)) * E(i, 0) : 0;
        double complex gr = tbc ? bpm_tbc_eta(E(i, ny - 1), E(i, ny - 2)) * E(i, ny - 1) : 0;
        double complex em = j > 0 ? E(i, j - 1) : gl, ep = j + 1 < ny ? E(i, j + 1) : gr;
        b[i] = (1 + ay.beta * (-2 + ay.vscale * p->v[i * ny + j])) * E(i, j) + ay.beta * (em + ep);
      }
      line_solve(c, &ax, nx, p->v + j, ny, b, x, etaL, etaR, diag, cp);
      for (int64_t i = 0; i < nx; i++) ES(i, j) = x[i];
    }
    for (int64_t i = 0; i < nx; i++) { /* y-lines */
      double complex etaL = tbc ? bpm_tbc_eta(ES(i, 0), ES(i, 1)) : 0,
                     etaR = tbc ? bpm_tbc_eta(ES(i, ny - 1), ES(i, ny - 2)) : 0;
      for (int64_t j = 0; j < ny; j++) {
        double complex gl = tbc ? bpm_tbc_eta(ES(0, j), ES(1, j)) * ES(0, j) : 0;
        double complex gr = tbc ? bpm_tbc_eta(ES(nx - 1, j), ES(nx - 2, j)) * ES(nx - 1, j) : 0;
        double complex em = i > 0 ? ES(i - 1, j) : gl, ep = i + 1 < nx ? ES(i + 1, j) : gr;
        b[j] = (1 + ax.beta * (-2 + ax.vscale * p->v[i * ny + j])) * ES(i, j) + ax.beta * (em + ep);
      }
      line_solve(c, &ay, ny, p->v + i * ny, 1, b, e + i * ny, etaL, etaR, diag, cp);
    }
  }
#undef E
#undef ES
  free(es), free(b), free(x), free(diag), free(cp);
  return HC_OK;
}

/* The scheme's amplification of sin(pi x/L) on an axis (share of v): the
 * mode is an eigenvector of the stencil with the walls' odd reflection,
 * eigenvalue its symbol at pi h/L. */
static double complex mode_gain(const bpm_config_t *c, double h, double L, double share, double complex v) {
  bpm_axis_t a = bpm_axis(c, h, share);
  double complex mu = bpm_stencil_symbol(c->order, M_PI * h / L) + a.vscale * v;
  return (1 + a.beta * mu) / (1 + a.lo * mu);
}

/* Relative L2 difference of the run's field from ref. */
static double rel_diff(const void *got, int f64, const double complex *ref, size_t count) {
  double num = 0, den = 0;
  for (size_t i = 0; i < count; i++) {
    double complex g = f64 ? CMPLX(((const double *)got)[2 * i], ((const double *)got)[2 * i + 1])
                           : CMPLX(((const float *)got)[2 * i], ((const float *)got)[2 * i + 1]);
    double complex d = g - ref[i];
    num += creal(d) * creal(d) + cimag(d) * cimag(d);
    den += creal(ref[i]) * creal(ref[i]) + cimag(ref[i]) * cimag(ref[i]);
  }
  return sqrt(num / (den > 0 ? den : 1));
}

hc_status_t bpm_verify(hc_job_t *job, const bpm_config_t *c, const bpm_problem_t *p, const bpm_result_t *r) {
  const size_t count = (size_t)(c->nx * c->ny);
  const double eps = c->f64 ? 2.2e-16 : 1.2e-7;
  const double steps = (double)c->steps;
  void *got = malloc(count * (c->f64 ? 16 : 8));
  double complex *ref = malloc(count * sizeof *ref);
  hc_status_t st = HC_OK;
  if (!got || !ref) {
    st = hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory for verification");
    goto out;
  }
  if ((st = hc_field_read(r->field, got)) != HC_OK) goto out;
  /* rounding per step grows with the conditioning of the step's matrix,
   * about 1 + 2 theta |alpha| (alpha = hz/(2 k0 n0 h^2)) */
  double h = c->dim == 3 ? fmin(c->hx, c->hy) : c->hy;
  double kond = 1 + c->theta * c->hz / (2 * c->k0 * c->n0 * h * h) * fabs(bpm_stencil_symbol(c->order, M_PI)) / 2;
  double tol = 10 * eps * (steps + 10) * kond;
  if (c->solver == BPM_SOLVER_RICHARDSON) { /* each solve is good to tol times the condition number */
    double a = c->theta * c->hz / (2 * c->k0 * c->n0 * c->hy * c->hy) * fabs(bpm_stencil_symbol(c->order, M_PI));
    double rtol = c->tol > 0 ? c->tol : fmax(c->f64 ? 1e-12 : 1e-6, 30 * eps * sqrt(1 + a * a));
    tol += steps * rtol * sqrt(1 + a * a);
  }
  /* The rounding estimate grows with the condition number and the step
   * count; past 1e-3 it no longer tells a right field from a wrong one. */
  tol = fmin(tol, 1e-3);
  int ok = 1;
  char msg[768];
  if (c->launch == BPM_LAUNCH_MODE && c->profile == BPM_PROFILE_UNIFORM && c->bc == BPM_BC_CONDUCTOR && p->v_uniform) {
    double complex g = c->dim == 2
                           ? mode_gain(c, c->hy, c->Ly, 1.0, p->v[0])
                           : mode_gain(c, c->hx, c->Lx, 0.5, p->v[0]) * mode_gain(c, c->hy, c->Ly, 0.5, p->v[0]);
    double complex gn = cpow(g, steps);
    for (size_t i = 0; i < count; i++) ref[i] = gn * p->e0[i];
    double err = rel_diff(got, c->f64, ref, count);
    /* and the analytic phase, to O(h^2): exp(-i k_t^2 z/(2 k0 n0)) */
    double kt2 = pow(M_PI / c->Ly, 2) + (c->dim == 3 ? pow(M_PI / c->Lx, 2) : 0);
    double complex an = cexp(I * (-kt2 + p->v[0]) * c->Lz / (2 * c->k0 * c->n0));
    double perr = fabs(carg(gn / an));
    hc_job_add_metric(job, "mode_error", err, "");
    hc_job_add_metric(job, "analytic_phase_error", perr, "rad");
    ok = err <= tol;
    snprintf(msg, sizeof msg,
             "guide mode vs the scheme's exact amplification g^%lld: relative L2 error %.3g (bound %.3g); "
             "phase vs the analytic exp(-i (pi/L)^2 z/(2 k0 n0)) off by %.3g rad (O(h^%d))",
             (long long)c->steps, err, tol, perr, c->order);
    goto power;
  }
  if (c->dim == 2 || (double)count * steps <= 2e9) {
    memcpy(ref, p->e0, count * sizeof *ref);
    st = c->dim == 2 ? bpm_host_march2d(c, p, ref) : host_adi3d(c, p, ref);
    if (st != HC_OK) goto out;
    double err = rel_diff(got, c->f64, ref, count);
    hc_job_add_metric(job, "reference_error", err, "");
    ok = err <= tol;
    snprintf(msg, sizeof msg,
             "vs the same scheme in double precision on the host (%s, walls in the matrix): relative L2 error %.3g "
             "(bound %.3g)",
             c->order == 4 ? "banded elimination" : "plain Thomas", err, tol);
    goto power;
  }
  snprintf(msg, sizeof msg, "too large for a host reference");
power:;
  /* Whatever the reference: the field and the power trace are finite, and
   * the power, which Crank-Nicolson conserves between conductors in a
   * lossless medium and which a passive medium (no gain: Im v >= 0) can
   * only lose, is held to a fixed relative bound: 1e-3, or the rounding
   * estimate where that is tighter. */
  int finite = 1;
  for (size_t i = 0; i < 2 * count && finite; i++)
    finite = c->f64 ? isfinite(((double *)got)[i]) : isfinite(((float *)got)[i]);
  for (int64_t i = 0; i < c->nsaved && finite; i++) finite = isfinite(r->power[i]);
  int lossless = c->bc == BPM_BC_CONDUCTOR, passive = 1;
  for (size_t i = 0; i < count; i++) {
    if (cimag(p->v[i]) != 0) lossless = 0;
    if (cimag(p->v[i]) < 0) passive = 0;
  }
  const double p0 = r->power[0], p1 = r->power[c->nsaved - 1];
  const double drift = p0 > 0 ? (p1 - p0) / p0 : 0;
  double pbound = fmin(1e-3, 20 * eps * sqrt(steps + 10) * 10);
  if (c->solver == BPM_SOLVER_RICHARDSON) pbound = 1e-3; /* each step's solve stops at its tol */
  size_t len = strlen(msg);
  if (!finite) {
    ok = 0;
    snprintf(msg + len, sizeof msg - len, "; the field or the power is not finite");
  } else if (lossless && c->theta == 0.5) {
    ok = ok && fabs(drift) <= pbound;
    snprintf(msg + len, sizeof msg - len,
             "; power conservation (Crank-Nicolson, conductors, lossless): relative "
             "drift %.3g (bound %.3g)",
             drift, pbound);
  } else if (passive) {
    ok = ok && drift <= 1e-3;
    snprintf(msg + len, sizeof msg - len,
             "; power in a passive medium: relative change %.3g (may not grow by more "
             "than the bound 0.001)",
             drift);
  } else {
    snprintf(msg + len, sizeof msg - len, "; a medium with gain: the power is not bounded");
  }
  hc_job_set_verified(job, ok, "%s", msg);
  goto out;
out:
  free(got);
  free(ref);
  return st;
}
