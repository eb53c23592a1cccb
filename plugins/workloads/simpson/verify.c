/* simpson: --verify. Two checks, both stated with their tolerance:
 *  1. against the float64 host reference (nested 1-D rules, SciPy's way):
 *     |I - I_ref| <= tol * sum |w f|, tol 1e-12 when the device works in
 *     f64 (1e-7 for f32 products, 1e-6 for compensated f32 sums);
 *  2. for a built-in function, against the exact integral:
 *     |I - I_exact| <= the rule's error bound (from derivative bounds; 0 for
 *     f = 1, and for poly with odd sample counts) + rounding (the f32
 *     rounding of the samples, 2^-24 sum |w f|, plus tol * sum |w f|). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "simpson.h"

hc_status_t simpson_verify(hc_job_t *job, const simpson_config_t *cfg, const simpson_config_t *whole, hc_field_t *field,
                           const void *host_data, const simpson_result_t *res) {
  void *tmp = NULL;
  const void *data = host_data ? host_data : hc_buffer_host_ptr(hc_field_buffer(field));
  if (!data) {
    tmp = malloc(hc_field_bytes(field));
    if (!tmp) return hc_error(HC_ERR_NO_MEMORY, "simpson --verify: out of host memory for the samples");
    hc_status_t st = hc_field_read(field, tmp);
    if (st != HC_OK) {
      free(tmp);
      return st;
    }
    data = tmp;
  }
  simpson_reference_t ref;
  hc_status_t st = simpson_reference(cfg, data, &ref);
  free(tmp);
  /* A split run: the parts' slabs meet at even rows, so the rule and its
   * reference are sums over the slabs. */
  double sums[2] = {ref.value, ref.scale};
  if (st == HC_OK && hc_job_part(job) && (st = hc_part_allreduce(hc_job_part(job), HC_REDUCE_SUM, sums, 2)) == HC_OK)
    ref.value = sums[0], ref.scale = sums[1];
  if (st != HC_OK) return st;
  cfg = whole;
  const double err = fabs(res->integral - ref.value), allowed = res->tolerance * ref.scale;
  int pass = err <= allowed;
  hc_job_add_metric(job, "reference", ref.value, "");
  char analytic[256] = "";
  if (cfg->source == SIMPSON_SRC_FUNC) {
    const double exact = simpson_func_exact(cfg);
    const double rounding = (cfg->dtype == HC_F32 ? ldexp(1.0, -24) : 0.0) * ref.scale + allowed;
    const double bound = simpson_func_error_bound(cfg) + rounding;
    const double aerr = fabs(res->integral - exact);
    pass = pass && aerr <= bound;
    snprintf(analytic, sizeof analytic, "; exact %.17g: |I - exact| = %.3g %s %.3g (rule error bound + rounding)",
             exact, aerr, aerr <= bound ? "<=" : ">", bound);
  }
  hc_job_set_verified(job, pass, "f64 nested-rule reference %.17g: |I - ref| = %.3g %s %.0e * sum|w f| = %.3g%s",
                      ref.value, err, err <= allowed ? "<=" : ">", res->tolerance, allowed, analytic);
  return HC_OK;
}
