/* nbody: parameters read into nb_config_t, with the checks the schema
 * cannot express. Every failure is HC_ERR_PARAM naming the parameter. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "nbody.h"

hc_status_t nb_config_read(const hc_job_t *job, nb_config_t *c) {
  memset(c, 0, sizeof *c);
  c->n = hc_job_given(job, "n") ? hc_job_int(job, "n") : 0;
  c->steps = hc_job_int(job, "steps");
  c->dt = hc_job_float(job, "dt");
  c->eps = hc_job_float(job, "eps");
  c->k = hc_job_float(job, "k");
  c->f64 = !strcmp(hc_job_string(job, "dtype"), "f64");
  c->diagnostics = hc_job_bool(job, "diagnostics");
  c->output_acc = hc_job_bool(job, "output_acc");
  c->serial = !strcmp(hc_job_string(job, "variant"), "serial-reference");
  c->wg = (int)hc_job_int(job, "wg");
  c->bpt = (int)hc_job_int(job, "bpt");
  c->unroll = (int)hc_job_int(job, "unroll");
  c->slices = (int)hc_job_int(job, "slices");
  c->fast_rsqrt = hc_job_bool(job, "fast_rsqrt");
  c->init = hc_job_string(job, "init");
  c->seed = (uint64_t)hc_job_int(job, "seed");
  c->v0 = hc_job_float(job, "v0");

  if (!(c->dt > 0)) return hc_error(HC_ERR_PARAM, "dt=%g: the time step must be positive", c->dt);
  /* The largest value must survive the working precision. */
  const double big = c->f64 ? DBL_MAX : FLT_MAX;
  if (c->dt > big || fabs(c->k) > big || c->eps > big)
    return hc_error(HC_ERR_PARAM, "dt, k or eps is beyond the range of %s", c->f64 ? "f64" : "f32");
  hc_vec_t b = hc_job_vec(job, "B");
  if (b.count != 3)
    return hc_error(HC_ERR_PARAM, "B: give the three components of the magnetic field, B=bx,by,bz (got %u number%s)",
                    b.count, b.count == 1 ? "" : "s");
  for (int d = 0; d < 3; d++) {
    if (fabs(b.v[d]) > big)
      return hc_error(HC_ERR_PARAM, "B: %g is beyond the range of %s", b.v[d], c->f64 ? "f64" : "f32");
    c->B[d] = b.v[d];
  }
  const char *integ = hc_job_string(job, "integrator");
  int bnonzero = c->B[0] != 0 || c->B[1] != 0 || c->B[2] != 0;
  c->boris = !strcmp(integ, "boris") || (!strcmp(integ, "auto") && bnonzero);
  if (c->wg % 32 != 0) return hc_error(HC_ERR_PARAM, "wg=%d: the work-group size must be a multiple of 32", c->wg);
  if (c->unroll > c->wg || c->wg % c->unroll != 0)
    return hc_error(HC_ERR_PARAM, "unroll=%d: must divide wg=%d", c->unroll, c->wg);
  if (!*c->init) return hc_error(HC_ERR_PARAM, "init=: give cube, plummer, two-stream or a .npy file");
  return HC_OK;
}
