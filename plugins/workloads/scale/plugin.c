/* scale — out = factor * in, for a real or complex field of any rank (a
 * complex field is scaled part by part). The grid is kept. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"

extern const char scale_kernels_src[];

#define SCALE_HOST(NAME, T)                                               \
  static void NAME(const hc_host_group_t *g, void *const *args) {         \
    const T *restrict in = args[1];                                       \
    T *restrict out = args[2];                                            \
    const T factor = *(const T *)args[3];                                 \
    for (size_t i = g->lo[0]; i < g->hi[0]; i++) out[i] = factor * in[i]; \
  }
SCALE_HOST(scale_f32, float)
SCALE_HOST(scale_f64, double)

static const hc_param_spec_t params[] = {
    {"factor", HC_PARAM_FLOAT, 0, "1", 1, 0, NULL, "the real factor every value is multiplied by"},
};
static const hc_port_spec_t inputs[] = {
    {"in", HC_DTYPES_ANY, 0, 4, HC_PORT_PRIMARY, "field to scale"},
};
static const hc_port_spec_t outputs[] = {
    {"out", HC_DTYPES_ANY, 0, 4, HC_PORT_PRIMARY, "factor * in: same dtype, shape and grid"},
};

static int scale_check(const hc_job_t *job, const hc_device_info_t *dev, char *why, size_t n) {
  return glue_needs_fp64(job, dev, HC_DTYPE_NONE, why, n);
}

static hc_status_t scale_describe(const hc_job_t *job, const char *port, hc_dtype_t *dtype, uint32_t *rank) {
  (void)port;
  return hc_job_input_info(job, "in", dtype, rank);
}

static hc_status_t scale_verify(hc_job_t *job, const hc_field_t *in, const hc_field_t *out, double factor) {
  double *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  hc_status_t st = glue_read_doubles(in, &a, &na);
  if (st == HC_OK) st = glue_read_doubles(out, &b, &nb);
  if (st == HC_OK) {
    const hc_dtype_t dt = hc_field_dtype(in);
    /* The device multiplies in the field's precision: so does the reference. */
    double worst = 0;
    for (size_t i = 0; i < nb; i++) {
      double want = hc_dtype_is_double(dt) ? factor * a[i] : (double)((float)factor * (float)a[i]);
      double err = fabs(b[i] - want) / (fabs(want) > 1e-300 ? fabs(want) : 1);
      worst = glue_worse(worst, err);
    }
    double tol = glue_tolerance(dt);
    hc_job_set_verified(job, worst <= tol, "max relative error %.3g against a host reference (tolerance %.0e)", worst,
                        tol);
  }
  free(a);
  free(b);
  return st;
}

static hc_status_t scale_run(hc_job_t *job) {
  hc_field_t *in = NULL, *out = NULL;
  hc_status_t st = glue_input(job, "in", &in);
  if (st != HC_OK) return st;
  const hc_dtype_t dt = hc_field_dtype(in);
  const double factor = hc_job_float(job, "factor");
  const float factor_f = (float)factor;
  glue_map_t m;
  memset(&m, 0, sizeof m);
  m.kernel = "glue_scale";
  m.source = scale_kernels_src;
  snprintf(m.options, sizeof m.options, "-DREAL_T=%s", glue_real_ctype(dt));
  m.host = hc_dtype_is_double(dt) ? scale_f64 : scale_f32;
  m.out_dtype = dt;
  m.items = (long)(hc_field_count(in) * (hc_dtype_is_complex(dt) ? 2 : 1));
  m.nextra = 1;
  m.extra[0] = hc_dtype_is_double(dt) ? HC_ARG_VAL(factor) : HC_ARG_VAL(factor_f);
  m.bytes = 2.0 * (double)hc_field_bytes(in);
  st = glue_map_run(job, in, &m, &out);
  if (st == HC_OK && hc_job_verify_requested(job)) st = scale_verify(job, in, out, factor);
  if (st != HC_OK) {
    hc_field_destroy(out);
    return st;
  }
  return hc_job_set_output(job, "out", out);
}

static const hc_workload_ops_t scale_ops = {
    .size = sizeof(hc_workload_ops_t),
    .languages = GLUE_LANGUAGES,
    HC_WORKLOAD_PARAMS(params),
    HC_WORKLOAD_PORTS(inputs, outputs),
    .check = scale_check,
    .describe_output = scale_describe,
    .run = scale_run,
};

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        HC_ABI_MINOR,
                        HC_PLUGIN_WORKLOAD,
                        0,
                        "scale",
                        "1.0",
                        "glue: multiplies a real or complex field by a real factor",
                        &scale_ops};
