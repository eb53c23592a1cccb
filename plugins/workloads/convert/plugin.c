/* convert — changes a field's element type: to=f32|f64|c64|c128.
 *
 * real -> real and complex -> complex convert each value (rounding to
 * nearest when narrowing); real -> complex sets the imaginary part to 0.
 * complex -> real would silently drop the imaginary part, so it is refused
 * unless part=real or part=imag says which part to keep (abs2 gives the
 * magnitude squared). Shape and grid are kept. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"

extern const char convert_kernels_src[];

/* Host kernels for every (input, output) pair of dtypes. */
#define CONVERT_HOST(IE, IT, IC, OE, OT, OC)                                                           \
  static void convert_##IE##_##OE(const hc_host_group_t *g, void *const *args) {                       \
    const IT *restrict in = args[1];                                                                   \
    OT *restrict out = args[2];                                                                        \
    const int part = *(const int *)args[3];                                                            \
    const size_t lo = g->lo[0], hi = g->hi[0];                                                         \
    if (IC && OC)                                                                                      \
      for (size_t i = lo; i < hi; i++) out[2 * i] = (OT)in[2 * i], out[2 * i + 1] = (OT)in[2 * i + 1]; \
    else if (IC)                                                                                       \
      for (size_t i = lo; i < hi; i++) out[i] = (OT)in[2 * i + (size_t)part];                          \
    else if (OC)                                                                                       \
      for (size_t i = lo; i < hi; i++) out[2 * i] = (OT)in[i], out[2 * i + 1] = 0;                     \
    else                                                                                               \
      for (size_t i = lo; i < hi; i++) out[i] = (OT)in[i];                                             \
  }
#define CONVERT_ROW(IE, IT, IC)            \
  CONVERT_HOST(IE, IT, IC, F32, float, 0)  \
  CONVERT_HOST(IE, IT, IC, F64, double, 0) \
  CONVERT_HOST(IE, IT, IC, C64, float, 1)  \
  CONVERT_HOST(IE, IT, IC, C128, double, 1)
CONVERT_ROW(F32, float, 0)
CONVERT_ROW(F64, double, 0)
CONVERT_ROW(C64, float, 1)
CONVERT_ROW(C128, double, 1)
#define TABLE_ROW(IE)                         \
  [HC_##IE] = {[HC_F32] = convert_##IE##_F32, \
               [HC_F64] = convert_##IE##_F64, \
               [HC_C64] = convert_##IE##_C64, \
               [HC_C128] = convert_##IE##_C128}
static const hc_host_kernel_fn host_table[HC_DTYPE_COUNT_][HC_DTYPE_COUNT_] = {TABLE_ROW(F32), TABLE_ROW(F64),
                                                                               TABLE_ROW(C64), TABLE_ROW(C128)};

static const hc_param_spec_t params[] = {
    {"to", HC_PARAM_ENUM, 0, NULL, 0, 0, "f32|f64|c64|c128", "the element type to convert to (required)"},
    {"part", HC_PARAM_ENUM, 0, "none", 0, 0, "none|real|imag",
     "complex -> real: which part to keep (refused with none: the imaginary part would be lost)"},
};
static const hc_port_spec_t inputs[] = {
    {"in", HC_DTYPES_ANY, 0, 4, HC_PORT_PRIMARY, "field to convert"},
};
static const hc_port_spec_t outputs[] = {
    {"out", HC_DTYPES_ANY, 0, 4, HC_PORT_PRIMARY, "the field in the new type, same shape and grid"},
};

static hc_dtype_t target(const hc_job_t *job) { return hc_dtype_from_name(hc_job_string(job, "to")); }

/* Checks the parameters against the input's dtype. */
static hc_status_t check_params(const hc_job_t *job, hc_dtype_t in) {
  if (!hc_job_given(job, "to")) return hc_error(HC_ERR_PARAM, "convert: give to=f32|f64|c64|c128");
  const char *part = hc_job_string(job, "part");
  if (hc_dtype_is_complex(in) && !hc_dtype_is_complex(target(job)) && !strcmp(part, "none"))
    return hc_error(HC_ERR_PARAM,
                    "convert: to=%s: input 'in' is %s (complex) and would lose its imaginary part; say part=real or "
                    "part=imag, or use abs2 for |z|^2",
                    hc_job_string(job, "to"), hc_dtype_name(in));
  if (strcmp(part, "none") && !(hc_dtype_is_complex(in) && !hc_dtype_is_complex(target(job))))
    return hc_error(HC_ERR_PARAM, "convert: part=%s applies only to complex -> real (here %s -> %s)", part,
                    hc_dtype_name(in), hc_job_string(job, "to"));
  return HC_OK;
}

static int convert_check(const hc_job_t *job, const hc_device_info_t *dev, char *why, size_t n) {
  return glue_needs_fp64(job, dev, target(job), why, n);
}

static hc_status_t convert_describe(const hc_job_t *job, const char *port, hc_dtype_t *dtype, uint32_t *rank) {
  (void)port;
  if (!hc_job_given(job, "to")) return check_params(job, HC_DTYPE_NONE);
  hc_dtype_t in = HC_DTYPE_NONE;
  hc_status_t st = hc_job_input_info(job, "in", &in, rank);
  if (st == HC_OK) st = check_params(job, in);
  if (st == HC_OK) *dtype = target(job);
  return st;
}

static hc_status_t convert_verify(hc_job_t *job, const hc_field_t *in, const hc_field_t *out, int part) {
  double *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  hc_status_t st = glue_read_doubles(in, &a, &na);
  if (st == HC_OK) st = glue_read_doubles(out, &b, &nb);
  if (st == HC_OK) {
    const int ic = hc_dtype_is_complex(hc_field_dtype(in)), oc = hc_dtype_is_complex(hc_field_dtype(out));
    const size_t n = hc_field_count(in);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
      double want_re = ic ? a[2 * i + (oc ? 0 : (size_t)part)] : a[i], want_im = ic && oc ? a[2 * i + 1] : 0;
      double got_re = oc ? b[2 * i] : b[i], got_im = oc ? b[2 * i + 1] : 0;
      double scale = fmax(fabs(want_re) + fabs(want_im), 1e-300);
      double err = (fabs(got_re - want_re) + fabs(got_im - want_im)) / scale;
      worst = glue_worse(worst, err);
    }
    /* Exact when widening; one rounding when narrowing to f32. */
    double tol = hc_dtype_is_double(hc_field_dtype(out)) && hc_dtype_is_double(hc_field_dtype(in)) ? 0 : 1.2e-7;
    hc_job_set_verified(job, worst <= tol, "max relative error %.3g against the input (tolerance %.1e)", worst, tol);
  }
  free(a);
  free(b);
  return st;
}

static hc_status_t convert_run(hc_job_t *job) {
  hc_field_t *in = NULL, *out = NULL;
  hc_status_t st = glue_input(job, "in", &in);
  const hc_dtype_t idt = hc_field_dtype(in), odt = target(job);
  if (st == HC_OK) st = check_params(job, idt);
  if (st != HC_OK) return st;
  const int part = !strcmp(hc_job_string(job, "part"), "imag");
  glue_map_t m;
  memset(&m, 0, sizeof m);
  m.kernel = "glue_convert";
  m.source = convert_kernels_src;
  snprintf(m.options, sizeof m.options, "-DIN_R=%s -DIN_CPLX=%d -DOUT_R=%s -DOUT_CPLX=%d", glue_real_ctype(idt),
           hc_dtype_is_complex(idt), glue_real_ctype(odt), hc_dtype_is_complex(odt));
  m.host = host_table[idt][odt];
  m.out_dtype = odt;
  m.items = (long)hc_field_count(in);
  m.nextra = 1;
  m.extra[0] = HC_ARG_VAL(part);
  m.bytes = (double)hc_field_bytes(in) + (double)hc_field_count(in) * (double)hc_dtype_size(odt);
  st = glue_map_run(job, in, &m, &out);
  if (st == HC_OK && hc_job_verify_requested(job)) st = convert_verify(job, in, out, part);
  if (st != HC_OK) {
    hc_field_destroy(out);
    return st;
  }
  return hc_job_set_output(job, "out", out);
}

static const hc_workload_ops_t convert_ops = {
    .size = sizeof(hc_workload_ops_t),
    .languages = GLUE_LANGUAGES,
    HC_WORKLOAD_PARAMS(params),
    HC_WORKLOAD_PORTS(inputs, outputs),
    .check = convert_check,
    .describe_output = convert_describe,
    .run = convert_run,
};

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        HC_ABI_MINOR,
                        HC_PLUGIN_WORKLOAD,
                        0,
                        "convert",
                        "1.0",
                        "glue: converts a field to f32, f64, c64 or c128",
                        &convert_ops};
