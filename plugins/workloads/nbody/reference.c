/* nbody: the float64 host reference of the field sums (for --verify). */
#include <math.h>

#include "nbody.h"

/* Neumaier's compensated sum: the reference must be far more accurate
 * than the f64 kernels it judges (1e-12). */
typedef struct {
  double s, c;
} nb_ksum_t;

static inline void ksum_add(nb_ksum_t *k, double x) {
  double t = k->s + x;
  k->c += fabs(k->s) >= fabs(x) ? (k->s - t) + x : (x - t) + k->s;
  k->s = t;
}

void nb_reference_field(const nb_bodies_t *b, double eps2, int guard, const int64_t *idx, int64_t count, double *out) {
  for (int64_t k = 0; k < count; k++) {
    const double *pi = b->s + idx[k] * NB_COLS;
    nb_ksum_t e[3] = {{0, 0}, {0, 0}, {0, 0}};
    for (int64_t j = 0; j < b->n; j++) {
      const double *pj = b->s + j * NB_COLS;
      const double r[3] = {pi[NB_X] - pj[NB_X], pi[NB_Y] - pj[NB_Y], pi[NB_Z] - pj[NB_Z]};
      const double d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + eps2;
      if (j == idx[k] || (guard && !(d2 > eps2))) continue;
      const double s = pj[NB_Q] / (d2 * sqrt(d2));
      for (int c = 0; c < 3; c++) ksum_add(&e[c], s * r[c]);
    }
    for (int c = 0; c < 3; c++) out[3 * k + c] = e[c].s + e[c].c;
  }
}
