/* jacobi — host reference sweeps in double, for --verify where no closed
 * form exists (a field f or start, gauss, point). Plain loops: it checks
 * the kernels, it does not race them. */
#include <stdlib.h>
#include <string.h>

#include "jacobi.h"

hc_status_t jacobi_reference(const jacobi_problem_t *p, const double *f, const double *u0, int64_t sweeps, double *u) {
  double *v = malloc(p->cells * sizeof *v);
  if (!v) return hc_error(HC_ERR_NO_MEMORY, "jacobi: out of host memory for the reference");
  memcpy(u, u0, p->cells * sizeof *u);
  memcpy(v, u0, p->cells * sizeof *v);
  const long s1 = (long)p->n[2], s0 = p->dim == 3 ? (long)(p->n[1] * p->n[2]) : 0;
  const long i0 = p->dim == 3 ? 1 : 0, i1 = p->dim == 3 ? (long)p->n[0] - 1 : 1;
  double *a = u, *b = v;
  for (int64_t s = 0; s < sweeps; s++) {
    for (long i = i0; i < i1; i++)
      for (long j = 1; j < (long)p->n[1] - 1; j++)
        for (long k = 1; k < (long)p->n[2] - 1; k++) {
          long c = i * s0 + j * s1 + k;
          double t = p->c[2] * (a[c - 1] + a[c + 1]) + p->c[1] * (a[c - s1] + a[c + s1]) + p->cf * f[c];
          if (s0) t += p->c[0] * (a[c - s0] + a[c + s0]);
          b[c] = t;
        }
    double *x = a;
    a = b;
    b = x;
  }
  if (a != u) memcpy(u, a, p->cells * sizeof *u);
  free(v);
  return HC_OK;
}
