/* jacobi — the built-in right-hand sides and the closed forms the checks
 * use. Every built-in f is a product A g0(x0) g1(x1) g2(x2), so a kernel
 * can compute it from three short tables instead of reading a field. */
#include <math.h>
#include <string.h>

#include "jacobi.h"

static const struct {
  const char *name;
  int analytic;
} rhs_table[] = {
#define JACOBI_RHS_ROW_(e, n, a) {n, a},
    JACOBI_RHS_LIST(JACOBI_RHS_ROW_)
#undef JACOBI_RHS_ROW_
};
#define NRHS ((int)(sizeof rhs_table / sizeof rhs_table[0]))

const char *jacobi_rhs_name(jacobi_rhs_t rhs) { return (int)rhs < NRHS ? rhs_table[rhs].name : "field"; }
int jacobi_rhs_analytic(jacobi_rhs_t rhs) { return (int)rhs < NRHS && rhs_table[rhs].analytic; }

int jacobi_rhs_from_name(const char *name, jacobi_rhs_t *out) {
  for (int i = 0; i < NRHS; i++)
    if (!strcmp(name, rhs_table[i].name)) {
      *out = (jacobi_rhs_t)i;
      return 1;
    }
  return 0;
}

/* sin(k π i h) with the ends exactly 0 (sin(k π) is 1e-16, not 0). */
static double sine(int k, int64_t i, int64_t n) {
  if (i == 0 || i == n - 1) return 0;
  return sin(k * M_PI * (double)i / (double)(n - 1));
}

/* The global index of point i of axis a (a split run holds a slab). */
static int64_t global_index(const jacobi_problem_t *p, int a, int64_t i) { return i + (a == p->ax ? p->off : 0); }

void jacobi_sine_tables(const jacobi_problem_t *p, const int *mode, double *tab) {
  size_t o = 0;
  for (int a = 0; a < 3; a++) {
    int used = a >= 3 - p->dim;
    for (int64_t i = 0; i < p->n[a]; i++)
      tab[o++] = used ? sine(mode ? mode[a] : 1, global_index(p, a, i), p->gn[a]) : 1.0;
  }
}

void jacobi_rhs_tables(const jacobi_problem_t *p, double *tab, double *amplitude) {
  double amp = 1;
  size_t o = 0;
  switch (p->rhs) {
  case RHS_SIN: /* -Δ Π sin(π x_d) = d π² Π sin(π x_d) */
    jacobi_sine_tables(p, NULL, tab);
    amp = p->dim * M_PI * M_PI;
    break;
  case RHS_GAUSS: /* a unit-mass Gaussian at the centre */
    for (int a = 0; a < 3; a++)
      for (int64_t i = 0; i < p->n[a]; i++) {
        double x = (double)global_index(p, a, i) * p->h[a] - 0.5;
        tab[o++] = a >= 3 - p->dim ? exp(-x * x / (2 * JACOBI_GAUSS_SIGMA * JACOBI_GAUSS_SIGMA)) : 1.0;
      }
    amp = pow(2 * M_PI * JACOBI_GAUSS_SIGMA * JACOBI_GAUSS_SIGMA, -0.5 * p->dim);
    break;
  case RHS_POINT: /* a discrete unit source at the centre point (1/h per axis) */
    for (int a = 0; a < 3; a++)
      for (int64_t i = 0; i < p->n[a]; i++)
        tab[o++] = a < 3 - p->dim ? 1.0 : global_index(p, a, i) == (p->gn[a] - 1) / 2 ? 1.0 / p->h[a] : 0.0;
    break;
  default: /* zero (and a field, which never uses the tables) */
    for (int a = 0; a < 3; a++)
      for (int64_t i = 0; i < p->n[a]; i++) tab[o++] = 1.0;
    amp = 0;
    break;
  }
  for (int64_t i = 0; i < p->n[0]; i++) tab[i] *= amp; /* A rides on the first factor */
  if (amplitude) *amplitude = amp;
}

double jacobi_lambda(const jacobi_problem_t *p, const int *mode) {
  double num = 0, den = 0;
  for (int a = 3 - p->dim; a < 3; a++) {
    num += p->w[a] * cos((mode ? mode[a] : 1) * M_PI * p->h[a]);
    den += p->w[a];
  }
  return num / den;
}

double jacobi_sin_discrete_scale(const jacobi_problem_t *p) {
  /* Δ_h Π sin(π x_d) = -Σ 4 w_d sin²(π h_d / 2) Π sin(π x_d) */
  double s = 0;
  for (int a = 3 - p->dim; a < 3; a++) {
    double t = sin(M_PI * p->h[a] / 2);
    s += 4 * p->w[a] * t * t;
  }
  return p->dim * M_PI * M_PI / s;
}
