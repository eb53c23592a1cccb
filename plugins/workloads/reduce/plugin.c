/* reduce — one number from a field: op=sum|min|max|l2 (the L2 norm,
 * sqrt(sum |v|^2)), accumulated in double on the device in two passes
 * (multi-block partials, then one group). The result is a rank-0 f64 field
 * `value` that stays on the device for a following stage, and the metric
 * `value`. Complex fields: l2 only (sum, min and max of complex values are
 * refused: take abs2 or convert part=real first). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/tuning.h>

#include "glue.h"

extern const char reduce_kernels_src[];

enum { OP_SUM, OP_MIN, OP_MAX, OP_L2 };
static const char *const op_names[] = {"sum", "min", "max", "l2"};

/* Host partials: each group reduces its contiguous chunk with 8 independent
 * double lanes (vectorisable, and a shorter summation chain). */
/* The min (mn) or max of a and b, keeping a NaN: fmin/fmax and plain
 * comparisons drop it, and a NaN in the data must reach the result. */
static inline double extreme(int mn, double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) ? a : b;
  return mn ? (b < a ? b : a) : (b > a ? b : a);
}

#define REDUCE_HOST(NAME, T)                                                                                       \
  static void NAME(const hc_host_group_t *g, void *const *args) {                                                  \
    const T *restrict x = args[1];                                                                                 \
    double *partial = args[2];                                                                                     \
    const int op = *(const int *)args[3];                                                                          \
    const size_t lo = g->lo[0], hi = g->hi[0];                                                                     \
    double acc[8];                                                                                                 \
    size_t i = lo;                                                                                                 \
    if (op == OP_SUM || op == OP_L2) {                                                                             \
      const int sq = op == OP_L2;                                                                                  \
      for (int k = 0; k < 8; k++) acc[k] = 0;                                                                      \
      for (; i + 8 <= hi; i += 8)                                                                                  \
        for (int k = 0; k < 8; k++) {                                                                              \
          const double v = x[i + (size_t)k];                                                                       \
          acc[k] += sq ? v * v : v;                                                                                \
        }                                                                                                          \
      for (; i < hi; i++) acc[0] += sq ? (double)x[i] * x[i] : (double)x[i];                                       \
      partial[g->group_id[0]] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])); \
    } else {                                                                                                       \
      const int mn = op == OP_MIN;                                                                                 \
      for (int k = 0; k < 8; k++) acc[k] = x[lo];                                                                  \
      for (; i + 8 <= hi; i += 8)                                                                                  \
        for (int k = 0; k < 8; k++) {                                                                              \
          const double v = x[i + (size_t)k];                                                                       \
          acc[k] = extreme(mn, acc[k], v);                                                                         \
        }                                                                                                          \
      for (; i < hi; i++) acc[0] = extreme(mn, acc[0], x[i]);                                                      \
      double r = acc[0];                                                                                           \
      for (int k = 1; k < 8; k++) r = extreme(mn, r, acc[k]);                                                      \
      partial[g->group_id[0]] = r;                                                                                 \
    }                                                                                                              \
  }
REDUCE_HOST(reduce_partial_f32, float)
REDUCE_HOST(reduce_partial_f64, double)

static void reduce_final_host(const hc_host_group_t *g, void *const *args) {
  const long m = *(const long *)args[0];
  const double *partial = args[1];
  double *out = args[2];
  const int op = *(const int *)args[3];
  double r = op == OP_MIN || op == OP_MAX ? partial[0] : 0;
  for (long i = 0; i < m; i++) r = op == OP_MIN || op == OP_MAX ? extreme(op == OP_MIN, r, partial[i]) : r + partial[i];
  out[0] = op == OP_L2 ? sqrt(r) : r;
  (void)g;
}

static const hc_param_spec_t params[] = {
    {"op", HC_PARAM_ENUM, 0, "sum", 0, 0, "sum|min|max|l2", "sum, minimum, maximum, or L2 norm sqrt(sum |v|^2)"},
};
static const hc_port_spec_t inputs[] = {
    {"in", HC_DTYPES_ANY, 0, 4, HC_PORT_PRIMARY, "field to reduce (complex: op=l2 only)"},
};
static const hc_port_spec_t outputs[] = {
    {"value", HC_DTYPE_BIT(HC_F64), 0, 0, HC_PORT_PRIMARY, "the result, a rank-0 f64 field"},
};

static int op_of(const hc_job_t *job) {
  const char *s = hc_job_string(job, "op");
  for (int i = 0; i < 4; i++)
    if (!strcmp(s, op_names[i])) return i;
  return OP_SUM;
}

static hc_status_t check_input(const hc_job_t *job, hc_dtype_t dt) {
  if (hc_dtype_is_complex(dt) && op_of(job) != OP_L2)
    return hc_error(HC_ERR_PARAM,
                    "reduce: op=%s: input 'in' is %s (complex); only op=l2 takes a complex field (use abs2 or convert "
                    "part=real first)",
                    op_names[op_of(job)], hc_dtype_name(dt));
  return HC_OK;
}

/* Accumulators are double whatever the input: the device needs fp64. */
static int reduce_check(const hc_job_t *job, const hc_device_info_t *dev, char *why, size_t n) {
  return glue_needs_fp64(job, dev, HC_F64, why, n);
}

static hc_status_t reduce_describe(const hc_job_t *job, const char *port, hc_dtype_t *dtype, uint32_t *rank) {
  (void)port;
  hc_dtype_t in = HC_DTYPE_NONE;
  uint32_t r = 0;
  if (hc_job_input_info(job, "in", &in, &r) == HC_OK) {
    hc_status_t st = check_input(job, in);
    if (st != HC_OK) return st;
  }
  *dtype = HC_F64;
  *rank = 0;
  return HC_OK;
}

/* Host reference in long double, and the magnitude that bounds rounding. */
static hc_status_t reduce_verify(hc_job_t *job, const hc_field_t *in, int op, double got) {
  double *a = NULL;
  size_t n = 0;
  hc_status_t st = glue_read_doubles(in, &a, &n);
  if (st != HC_OK) return st;
  long double r = op == OP_MIN || op == OP_MAX ? a[0] : 0, mag = 0;
  for (size_t i = 0; i < n; i++) {
    if (op == OP_SUM)
      r += a[i], mag += fabsl((long double)a[i]);
    else if (op == OP_L2)
      r += (long double)a[i] * a[i];
    else
      r = extreme(op == OP_MIN, (double)r, a[i]);
  }
  free(a);
  if (op == OP_L2) r = sqrtl(r), mag = r;
  if (op == OP_MIN || op == OP_MAX) mag = fabsl(r);
  /* Double accumulation: error grows at most with n; min and max are exact. */
  double tol = op == OP_MIN || op == OP_MAX ? 0 : 1e-15 * (double)(n > 16 ? n : 16);
  double err = (double)fabsl((long double)got - r) / (mag > 0 ? (double)mag : 1.0);
  hc_job_set_verified(job, err <= tol, "%s = %.17g, host reference %.17Lg: error %.3g relative to %s (tolerance %.1e)",
                      op_names[op], got, r, err, op == OP_SUM ? "sum |v|" : "the result", tol);
  return HC_OK;
}

/* reduce's per-device tuning (hc/tuning.h). Re-measure by editing a row
 * and comparing the device time hcrun reports for a large reduce against
 * the device's read bandwidth (hc-ceilings).
 *   block        work-group size of device kernels (a power of two, halved
 *                to what the device allows)
 *   fill         device groups per compute unit, each striding over the
 *                data (at most 4096)
 *   host_chunks  contiguous chunks per thread of host kernels
 *   contig       each device item takes a contiguous chunk instead of a
 *                stride: a CPU device runs a group's items in turn */
typedef struct {
  const char *device;
  int block, fill, host_chunks, contig;
} reduce_tuning_t;

static const reduce_tuning_t reduce_tuning[] = {
    {"cpu", 256, 8, 4, 1},
    {"*", 256, 8, 4, 0},
};

static hc_status_t reduce_run(hc_job_t *job) {
  hc_field_t *in = NULL, *out = NULL, *partial = NULL;
  hc_kernel_t *kp = NULL, *kf = NULL;
  hc_device_t *dev = hc_job_device(job);
  const hc_device_info_t *info = hc_device_info(dev);
  hc_status_t st = glue_input(job, "in", &in);
  if (st == HC_OK) st = check_input(job, hc_field_dtype(in));
  if (st != HC_OK) return st;
  const int op = op_of(job);
  const hc_dtype_t dt = hc_field_dtype(in);
  const long n = (long)(hc_field_count(in) * (hc_dtype_is_complex(dt) ? 2 : 1));
  if (n == 0 && (op == OP_MIN || op == OP_MAX))
    return hc_error(HC_ERR_PARAM, "reduce: op=%s of an empty field (it has 0 elements)", op_names[op]);
  size_t row = 0;
  if ((st = HC_TUNING_PICK(info, reduce_tuning, &row)) != HC_OK) return st;
  const reduce_tuning_t *t = &reduce_tuning[row];
  /* A power-of-two group size the device allows. */
  long block = t->block;
  while (info->max_work_group_size && (size_t)block > info->max_work_group_size) block /= 2;
  char options[160];
  snprintf(options, sizeof options, "-DELEM_T=%s -DOP=%d -DBLOCK=%ld", glue_real_ctype(dt), op, block);
  hc_kernel_desc_t dp = {sizeof dp, "glue_reduce_partial", reduce_kernels_src, options,
                         hc_dtype_is_double(dt) ? reduce_partial_f64 : reduce_partial_f32};
  hc_kernel_desc_t df = {sizeof df, "glue_reduce_final", reduce_kernels_src, options, reduce_final_host};
  if ((st = hc_kernel_create(dev, &dp, &kp)) != HC_OK || (st = hc_kernel_create(dev, &df, &kf)) != HC_OK) goto out;
  const int host = hc_kernel_language(kp) == HC_LANG_HOST;
  const long cus = info->compute_units ? (long)info->compute_units : 1;
  size_t global, local;
  long groups, chunk = 0;
  if (host) {
    /* Contiguous chunks, a few per thread; the backend runs one group per chunk. */
    const long chunks = t->host_chunks * cus;
    long want = n < chunks ? (n ? n : 1) : chunks;
    local = (size_t)((n + want - 1) / want);
    if (!local) local = 1;
    groups = (long)(((size_t)n + local - 1) / local);
    global = (size_t)n;
  } else {
    /* Enough groups to fill the device, each striding over the data. */
    long need = (n + block - 1) / block, cap = t->fill * cus < 4096 ? t->fill * cus : 4096;
    groups = need < cap ? need : cap;
    local = (size_t)block;
    global = (size_t)(groups * block);
    if (t->contig && groups > 0) chunk = (n + (long)global - 1) / (long)global;
  }
  int64_t pshape[1] = {groups > 0 ? groups : 1};
  if ((st = hc_field_create(dev, HC_F64, 1, pshape, &partial)) != HC_OK) goto out;
  if ((st = hc_field_create(dev, HC_F64, 0, NULL, &out)) != HC_OK) goto out;
  {
    hc_arg_t ap[5] = {HC_ARG_VAL(n), HC_ARG_BUF(hc_field_buffer(in)), HC_ARG_BUF(hc_field_buffer(partial)),
                      HC_ARG_VAL(op), HC_ARG_VAL(chunk)};
    const long m = groups;
    hc_arg_t af[4] = {HC_ARG_VAL(m), HC_ARG_BUF(hc_field_buffer(partial)), HC_ARG_BUF(hc_field_buffer(out)),
                      HC_ARG_VAL(op)};
    size_t fglobal = host ? 1 : (size_t)block, flocal = fglobal;
    double dev_s = 0, t0 = hc_now();
    st = hc_device_timer_begin(dev);
    if (st == HC_OK && groups > 0) st = hc_kernel_launch(kp, 1, &global, &local, 5, ap);
    if (st == HC_OK) st = hc_kernel_launch(kf, 1, &fglobal, &flocal, 4, af);
    if (st == HC_OK) st = hc_device_timer_end(dev, &dev_s);
    if (st != HC_OK) goto out;
    glue_report(job, hc_now() - t0, dev_s, (double)hc_field_bytes(in));
  }
  double value = 0;
  if ((st = hc_field_read(out, &value)) != HC_OK) goto out;
  hc_job_add_metric(job, "value", value, "");
  hc_job_add_metric(job, "groups", (double)groups, "");
  if (hc_job_verify_requested(job) && (st = reduce_verify(job, in, op, value)) != HC_OK) goto out;
  st = hc_job_set_output(job, "value", out);
  out = NULL;
out:
  hc_kernel_destroy(kp);
  hc_kernel_destroy(kf);
  hc_field_destroy(partial);
  hc_field_destroy(out);
  return st;
}

static const hc_workload_ops_t reduce_ops = {
    .size = sizeof(hc_workload_ops_t),
    .languages = GLUE_LANGUAGES,
    HC_WORKLOAD_PARAMS(params),
    HC_WORKLOAD_PORTS(inputs, outputs),
    .check = reduce_check,
    .describe_output = reduce_describe,
    .run = reduce_run,
};

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        HC_ABI_MINOR,
                        HC_PLUGIN_WORKLOAD,
                        0,
                        "reduce",
                        "1.0",
                        "glue: sum, min, max or L2 norm of a field (double accumulation, on the device)",
                        &reduce_ops};
