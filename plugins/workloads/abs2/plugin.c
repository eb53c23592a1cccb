/* abs2 — the squared magnitude of a field, element by element: a complex
 * field (c64, c128) gives its intensity |z|^2 as f32, f64; a real field
 * gives its square. Any rank; the grid is kept. A glue stage for pipelines
 * such as bpm -> abs2 -> simpson. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"

extern const char abs2_kernels_src[];

/* Host kernels: one per input dtype; contiguous loops that vectorise. */
#define ABS2_HOST(NAME, T, CPLX)                                                                       \
  static void NAME(const hc_host_group_t *g, void *const *args) {                                      \
    const T *restrict in = args[1];                                                                    \
    T *restrict out = args[2];                                                                         \
    const size_t lo = g->lo[0], hi = g->hi[0];                                                         \
    if (CPLX)                                                                                          \
      for (size_t i = lo; i < hi; i++) out[i] = in[2 * i] * in[2 * i] + in[2 * i + 1] * in[2 * i + 1]; \
    else                                                                                               \
      for (size_t i = lo; i < hi; i++) out[i] = in[i] * in[i];                                         \
  }
ABS2_HOST(abs2_f32, float, 0)
ABS2_HOST(abs2_f64, double, 0)
ABS2_HOST(abs2_c64, float, 1)
ABS2_HOST(abs2_c128, double, 1)

static const hc_port_spec_t inputs[] = {
    {"in", HC_DTYPES_ANY, 0, 4, HC_PORT_PRIMARY, "complex field (or real: then its square)"},
};
static const hc_port_spec_t outputs[] = {
    {"out", HC_DTYPES_REAL, 0, 4, HC_PORT_PRIMARY, "|in|^2, real, same shape and grid"},
};

static int abs2_check(const hc_job_t *job, const hc_device_info_t *dev, char *why, size_t n) {
  return glue_needs_fp64(job, dev, HC_DTYPE_NONE, why, n);
}

static hc_status_t abs2_describe(const hc_job_t *job, const char *port, hc_dtype_t *dtype, uint32_t *rank) {
  (void)port;
  hc_status_t st = hc_job_input_info(job, "in", dtype, rank);
  if (st == HC_OK) *dtype = hc_dtype_real_part(*dtype);
  return st;
}

static hc_status_t abs2_verify(hc_job_t *job, const hc_field_t *in, const hc_field_t *out) {
  double *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  hc_status_t st = glue_read_doubles(in, &a, &na);
  if (st == HC_OK) st = glue_read_doubles(out, &b, &nb);
  if (st == HC_OK) {
    const int cplx = hc_dtype_is_complex(hc_field_dtype(in));
    double worst = 0;
    for (size_t i = 0; i < nb; i++) {
      double want = cplx ? a[2 * i] * a[2 * i] + a[2 * i + 1] * a[2 * i + 1] : a[i] * a[i];
      double err = fabs(b[i] - want) / (fabs(want) > 1e-300 ? fabs(want) : 1);
      worst = glue_worse(worst, err);
    }
    double tol = 4 * glue_tolerance(hc_field_dtype(out));
    hc_job_set_verified(job, worst <= tol,
                        "max relative error %.3g against a host reference in double (tolerance %.0e)", worst, tol);
  }
  free(a);
  free(b);
  return st;
}

static hc_status_t abs2_run(hc_job_t *job) {
  hc_field_t *in = NULL, *out = NULL;
  hc_status_t st = glue_input(job, "in", &in);
  if (st != HC_OK) return st;
  const hc_dtype_t dt = hc_field_dtype(in);
  const int cplx = hc_dtype_is_complex(dt);
  const hc_dtype_t odt = hc_dtype_real_part(dt);
  static const hc_host_kernel_fn hosts[HC_DTYPE_COUNT_] = {
      [HC_F32] = abs2_f32, [HC_F64] = abs2_f64, [HC_C64] = abs2_c64, [HC_C128] = abs2_c128};
  glue_map_t m;
  memset(&m, 0, sizeof m);
  m.kernel = "glue_abs2";
  m.source = abs2_kernels_src;
  snprintf(m.options, sizeof m.options, "-DIN_T=%s%s -DOUT_T=%s -DCPLX=%d", glue_real_ctype(dt), cplx ? "2" : "",
           glue_real_ctype(odt), cplx);
  m.host = hosts[dt];
  m.out_dtype = odt;
  m.items = (long)hc_field_count(in);
  m.bytes = (double)hc_field_bytes(in) + (double)hc_field_count(in) * (double)hc_dtype_size(odt);
  st = glue_map_run(job, in, &m, &out);
  if (st == HC_OK && hc_job_verify_requested(job)) st = abs2_verify(job, in, out);
  if (st != HC_OK) {
    hc_field_destroy(out);
    return st;
  }
  return hc_job_set_output(job, "out", out);
}

static const hc_workload_ops_t abs2_ops = {
    .size = sizeof(hc_workload_ops_t),
    .languages = GLUE_LANGUAGES,
    .param_spec_size = sizeof(hc_param_spec_t),
    HC_WORKLOAD_PORTS(inputs, outputs),
    .check = abs2_check,
    .describe_output = abs2_describe,
    .run = abs2_run,
};

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        HC_ABI_MINOR,
                        HC_PLUGIN_WORKLOAD,
                        0,
                        "abs2",
                        "1.0",
                        "glue: |z|^2 of a complex field (intensity), or the square of a real one",
                        &abs2_ops};
