/* Non-finite values in fields: finding the first one, and refusing an input
 * a workload cannot use (the policy is written in include/hc/status.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* First non-finite real in data (count reals of dtype's component type), or
 * -1. Complex values count as two reals, so the caller halves the index. */
static int64_t first_bad(hc_dtype_t dtype, const void *data, size_t reals) {
  if (dtype == HC_F32 || dtype == HC_C64) {
    const float *v = data;
    for (size_t i = 0; i < reals; i++)
      if (!isfinite(v[i])) return (int64_t)i;
  } else {
    const double *v = data;
    for (size_t i = 0; i < reals; i++)
      if (!isfinite(v[i])) return (int64_t)i;
  }
  return -1;
}

HC_API hc_status_t hc_field_find_nonfinite(const hc_field_t *f, int64_t *index, double *value) {
  if (!f || !index) return hc_error(HC_ERR_INVALID_ARG, "hc_field_find_nonfinite: NULL argument");
  *index = -1;
  size_t bytes = hc_field_bytes(f);
  void *host = malloc(bytes ? bytes : 1);
  if (!host) return hc_error(HC_ERR_NO_MEMORY, "out of host memory to check a field of %zu bytes", bytes);
  hc_status_t st = hc_field_read(f, host);
  if (st == HC_OK) {
    hc_dtype_t dt = hc_field_dtype(f);
    int cplx = dt == HC_C64 || dt == HC_C128;
    int64_t r = first_bad(dt, host, hc_field_count(f) * (cplx ? 2 : 1));
    if (r >= 0) {
      if (value) *value = dt == HC_F32 || dt == HC_C64 ? ((const float *)host)[r] : ((const double *)host)[r];
      *index = cplx ? r / 2 : r;
    }
  }
  free(host);
  return st;
}

HC_API hc_status_t hc_job_check_finite(hc_job_t *job, const char *port, const hc_field_t *f) {
  if (!f) return HC_OK;
  int64_t at;
  double v = 0;
  hc_status_t st = hc_field_find_nonfinite(f, &at, &v);
  if (st != HC_OK || at < 0) return st;
  /* The index in array order, as NumPy writes it: [i, j, k]. */
  char idx[128];
  size_t len = 0;
  uint32_t rank = hc_field_rank(f);
  const int64_t *shape = hc_field_shape(f);
  int64_t c[HC_MAX_DIMS], rest = at;
  for (uint32_t d = rank; d-- > 0;) {
    c[d] = shape[d] ? rest % shape[d] : 0;
    rest = shape[d] ? rest / shape[d] : 0;
  }
  len += (size_t)snprintf(idx, sizeof idx, "[");
  for (uint32_t d = 0; d < rank && len < sizeof idx; d++)
    len += (size_t)snprintf(idx + len, sizeof idx - len, "%s%lld", d ? ", " : "", (long long)c[d]);
  if (len < sizeof idx) snprintf(idx + len, sizeof idx - len, "]");
  return hc_error(HC_ERR_PARAM,
                  "%s: input '%s' has the non-finite value %g at index %s (flat %lld); %s needs finite "
                  "values",
                  job ? hc_job_workload(job) : "field", port ? port : "?", v, idx, (long long)at,
                  job ? hc_job_workload(job) : "the workload");
}
