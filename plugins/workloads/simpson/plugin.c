/* simpson — 3-D composite Simpson integration of sampled data (seed 000):
 * the workload's schema, its run, and the plugin descriptor.
 *
 *   I ~ (hx hy hz / 27) sum a_i a_j a_k f_ijk, a = 1, 4, 2, 4, ..., 4, 1
 * per axis for an even number of intervals; an odd number gets SciPy's
 * rule (Simpson on the first n-2 intervals, Cartwright's correction on the
 * last), 2 samples the trapezoid. See kernels.hcl for the weights and
 * docs/workloads/simpson.md for the variants and the figures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/workload_util.h>

#include "simpson.h"

/* "|a|b|c" from the X-lists; the schema takes it from the second char. */
#define SIMPSON_VARIANT_CHOICE_(e, n, h) "|" n
#define SIMPSON_FUNC_CHOICE_(e, n) "|" n
static const char variant_choices[] = SIMPSON_VARIANT_LIST(SIMPSON_VARIANT_CHOICE_);
static const char func_choices[] = SIMPSON_FUNC_LIST(SIMPSON_FUNC_CHOICE_);

static const hc_param_spec_t params[] = {
    {"variant", HC_PARAM_ENUM, 0, "fused", 0, 0, variant_choices + 1,
     "fused (default): one pass, weights from indices, multi-group f64 reduction; precomputed, onthefly, "
     "devicereduce: the paper's algorithms 1, 2, 3"},
    {"input", HC_PARAM_STRING, 0, "", 1, 0, NULL,
     "a .npy file of samples (f32 or f64, 1 to 3 axes, at least 2 samples per axis); spacing from h= or "
     "hx= hy= hz=, else from its .grid side file, else 1"},
    {"func", HC_PARAM_ENUM, 0, "gauss", 0, 0, func_choices + 1,
     "built-in test function on box= with n= samples, when there is no input: one (the volume), poly (a cubic in "
     "each variable), gauss exp(-|x|^2), sinprod prod sin(pi x_d)"},
    {"n", HC_PARAM_SHAPE, 0, "129x129x129", 1, 0, NULL,
     "samples per axis for func= (NXxNYxNZ, NXxNY or N); with an input, its shape (checked)"},
    {"box", HC_PARAM_STRING, 0, "0:1", 1, 0, NULL,
     "func='s box: a:b for every axis, or a:b,c:d[,e:f] one interval per axis"},
    {"h", HC_PARAM_FLOAT, 0, NULL, 1, 0, NULL, "grid spacing of an input, every axis"},
    {"hx", HC_PARAM_FLOAT, 0, NULL, 1, 0, NULL, "grid spacing of an input along axis 0 (over h=)"},
    {"hy", HC_PARAM_FLOAT, 0, NULL, 1, 0, NULL, "grid spacing of an input along axis 1 (over h=)"},
    {"hz", HC_PARAM_FLOAT, 0, NULL, 1, 0, NULL, "grid spacing of an input along axis 2 (over h=)"},
    {"dtype", HC_PARAM_ENUM, 0, "f64", 0, 0, "f32|f64", "sample type for func= (an input's own type is checked)"},
    {"groups", HC_PARAM_INT, 0, "0", 0, 1e8, NULL,
     "work-groups of the fused source kernel (0: 20 per compute unit, 80 for f64 read as pairs on CUDA); one partial "
     "sum each"},
    {"isa", HC_PARAM_ENUM, 0, "auto", 0, 0, "auto|avx512|avx2|sse2",
     "widest SIMD instructions of the host kernels' sums (cpu backend; auto: the widest the CPU has, a wider cap "
     "than the CPU has means the CPU's widest); the run's notes name the one used"},
};

static const hc_port_spec_t inputs[] = {
    {"f", HC_DTYPES_REAL, 1, 3, HC_PORT_OPTIONAL | HC_PORT_PRIMARY,
     "samples to integrate (replaces input= and func=); spacing from the field unless h= hx= hy= hz= are given"},
};

static const hc_port_spec_t outputs[] = {
    {"integral", HC_DTYPE_BIT(HC_F64), 0, 0, HC_PORT_PRIMARY, "the integral (a 0-d f64 field)"},
};

static int simpson_check(const hc_job_t *job, const hc_device_info_t *dev, char *why, size_t n) {
  hc_field_t *f = hc_job_input(job, "f");
  if (!f) return hc_check_fp64(job, "dtype", dev, why, n);
  if (!hc_dtype_is_double(hc_field_dtype(f)) || dev->fp64) return 0;
  snprintf(why, n, "needs fp64 (input f is f64)");
  return 1;
}

static hc_status_t simpson_describe_output(const hc_job_t *job, const char *port, hc_dtype_t *dtype, uint32_t *rank) {
  (void)job;
  if (strcmp(port, "integral") != 0) return hc_error(HC_ERR_NOT_FOUND, "simpson has no output '%s'", port);
  *dtype = HC_F64;
  *rank = 0;
  return HC_OK;
}

/* Device bytes the run needs besides a bound input field. */
static uint64_t device_bytes(const simpson_config_t *cfg) {
  const uint64_t data = (uint64_t)cfg->n * hc_dtype_size(cfg->dtype);
  uint64_t extra = cfg->variant == SIMPSON_PRECOMPUTED ? 2 * data : cfg->variant == SIMPSON_ONTHEFLY ? data : 0;
  return (cfg->source == SIMPSON_SRC_PORT ? 0 : data) + extra + (1u << 20) /* partials */;
}

/* The samples on the device: the bound field, the file, or the function
 * (written in place where the device shares host memory). *host gets a
 * host copy when one exists anyway and keep_host is set. */
static hc_status_t prepare_field(hc_job_t *job, const simpson_config_t *cfg, int keep_host, hc_field_t **own,
                                 hc_field_t **field, void **host, double *transfer_s) {
  hc_device_t *dev = hc_job_device(job);
  *own = NULL;
  *host = NULL;
  *transfer_s = 0;
  if (cfg->source == SIMPSON_SRC_PORT) {
    *field = hc_job_input(job, "f");
    return HC_OK;
  }
  hc_status_t st;
  if (cfg->source == SIMPSON_SRC_FILE) {
    st = simpson_load_file(dev, cfg, own, transfer_s, keep_host ? host : NULL);
  } else {
    int64_t shape[3];
    memcpy(shape, cfg->shape, sizeof shape);
    if ((st = hc_field_create(dev, cfg->dtype, cfg->rank, shape, own)) != HC_OK) return st;
    hc_field_set_spacing(*own, cfg->h);
    double origin[3] = {cfg->lo[0], cfg->lo[1], cfg->lo[2]};
    hc_field_set_origin(*own, origin);
    hc_field_set_name(*own, simpson_func_name(cfg->func));
    void *p = hc_buffer_host_ptr(hc_field_buffer(*own));
    if (p) {
      st = simpson_func_fill(cfg, p);
    } else if (!(*host = malloc(hc_field_bytes(*own)))) {
      st = hc_error(HC_ERR_NO_MEMORY, "simpson: out of host memory for func=%s", simpson_func_name(cfg->func));
    } else if ((st = simpson_func_fill(cfg, *host)) == HC_OK) {
      double t0 = hc_now();
      st = hc_field_write(*own, *host);
      *transfer_s = hc_now() - t0;
      if (!keep_host) {
        free(*host);
        *host = NULL;
      }
    }
  }
  if (st != HC_OK) {
    hc_field_destroy(*own);
    *own = NULL;
    free(*host);
    *host = NULL;
  }
  *field = *own;
  return st;
}

static void add_metrics(hc_job_t *job, const simpson_config_t *cfg, const simpson_result_t *res, double transfer_s) {
  const hc_device_info_t *info = hc_device_info(hc_job_device(job));
  const double bytes = (double)cfg->n * (double)hc_dtype_size(cfg->dtype);
  const double t = res->device_s > 0 ? res->device_s : res->compute_s;
  hc_job_add_metric(job, "integral", res->integral, "");
  hc_job_add_metric(job, "samples", (double)cfg->n, "");
  hc_job_add_metric(job, "bytes", bytes, "B");
  hc_job_add_metric(job, "traffic_bytes", res->traffic_bytes, "B");
  if (t > 0) {
    hc_job_add_metric(job, "bandwidth_gbs", bytes / t / 1e9, "GB/s");
    if (info->peak_bandwidth_gbs > 0)
      hc_job_add_metric(job, "bandwidth_fraction", bytes / t / 1e9 / info->peak_bandwidth_gbs, "");
  }
  hc_job_add_metric(job, "transfer_s", transfer_s, "s");
  hc_job_add_metric(job, "total_s", transfer_s + res->compute_s, "s");
  if (res->groups) hc_job_add_metric(job, "groups", (double)res->groups, "");
  if (cfg->source == SIMPSON_SRC_FUNC) {
    const double exact = simpson_func_exact(cfg);
    hc_job_add_metric(job, "exact", exact, "");
    hc_job_add_metric(job, "exact_error", res->integral - exact, "");
  }
}

/* Built-in functions split in slabs of whole panel pairs along axis 0
 * (rows: the pairs), so that every slab is a Simpson rule of its own and
 * the integral is their sum. */
static hc_status_t simpson_split(const hc_job_t *job, hc_split_t *split) {
  if (hc_job_input(job, "f") || (hc_job_given(job, "input") && *hc_job_string(job, "input"))) {
    snprintf(split->why, sizeof split->why, "a split run integrates a built-in function (func=), not a field");
    return HC_OK;
  }
  simpson_config_t cfg;
  /* Resolving a built-in function's configuration only reads the job. */
  hc_status_t st = simpson_config_resolve((hc_job_t *)job, &cfg);
  if (st != HC_OK) return st;
  split->rows = (cfg.shape[0] - 1) / 2;
  if (split->rows < 1) {
    snprintf(split->why, sizeof split->why, "axis 0 has fewer than 3 samples");
    return HC_OK;
  }
  split->kind = HC_SPLIT_SLABS;
  split->min_rows = 1;
  return HC_OK;
}

/* The part's samples of axis 0: its panel pairs, and the last sample on
 * the last part when the count is even. */
static void narrow(simpson_config_t *cfg, const hc_part_t *part) {
  int64_t lo, hi;
  hc_part_range(part, &lo, &hi);
  int64_t last = hi == hc_part_global_rows(part) ? cfg->shape[0] - 1 : 2 * hi;
  cfg->row0 = 2 * lo;
  cfg->shape[0] = last - cfg->row0 + 1;
  const uint32_t r = cfg->rank;
  cfg->nz = (int)cfg->shape[r - 1];
  cfg->ny = r >= 2 ? (int)cfg->shape[r - 2] : 1;
  cfg->nx = r >= 3 ? (int)cfg->shape[0] : 1;
  cfg->n = (int64_t)cfg->nx * cfg->ny * cfg->nz;
}

static hc_status_t simpson_run(hc_job_t *job) {
  simpson_config_t cfg;
  hc_status_t st = simpson_config_resolve(job, &cfg);
  if (st != HC_OK) return st;
  const simpson_config_t whole = cfg;
  hc_part_t *part = hc_job_part(job);
  if (part) narrow(&cfg, part);
  hc_device_t *dev = hc_job_device(job);
  if (cfg.dtype == HC_F64 && !hc_device_info(dev)->fp64)
    return hc_error(HC_ERR_UNSUPPORTED, "simpson: f64 samples need fp64, which %s lacks", hc_device_name(dev));
  if ((st = hc_device_check_memory(dev, device_bytes(&cfg), "simpson's samples and buffers")) != HC_OK) return st;
  const int verify = hc_job_verify_requested(job);
  hc_field_t *own = NULL, *field = NULL, *result = NULL;
  void *host = NULL;
  double transfer_s = 0;
  simpson_result_t res;
  if ((st = prepare_field(job, &cfg, verify, &own, &field, &host, &transfer_s)) != HC_OK) goto out;
  if ((st = simpson_run_variant(job, &cfg, field, &res)) != HC_OK) goto out;
  hc_job_set_times(job, res.compute_s, res.device_s);
  if (part) {
    /* The whole integral, traffic and the slowest part's times. */
    double sums[2] = {res.integral, res.traffic_bytes}, slowest[3] = {res.compute_s, res.device_s, transfer_s};
    if ((st = hc_part_allreduce(part, HC_REDUCE_SUM, sums, 2)) != HC_OK ||
        (st = hc_part_allreduce(part, HC_REDUCE_MAX, slowest, 3)) != HC_OK)
      goto out;
    res.integral = sums[0], res.traffic_bytes = sums[1];
    res.compute_s = slowest[0], res.device_s = slowest[1], transfer_s = slowest[2];
  }
  add_metrics(job, &whole, &res, transfer_s);
  if (cfg.variant == SIMPSON_DEVICEREDUCE)
    hc_job_note(job, "variant=devicereduce reduces in one work-group, as the paper's algorithm 3: slow by design");
  if (verify && (st = simpson_verify(job, &cfg, &whole, field, host, &res)) != HC_OK) goto out;
  if ((st = hc_field_create(dev, HC_F64, 0, NULL, &result)) != HC_OK) goto out;
  if ((st = hc_field_write(result, &res.integral)) != HC_OK) goto out;
  hc_field_set_name(result, "integral");
  st = hc_job_set_output(job, "integral", result);
  result = NULL;
out:
  hc_field_destroy(result);
  hc_field_destroy(own);
  free(host);
  return st;
}

static const hc_workload_ops_t simpson_ops = {
    .size = sizeof(hc_workload_ops_t),
    .languages = HC_LANG_BIT(HC_LANG_HOST) | HC_LANG_BIT(HC_LANG_OPENCL_C) | HC_LANG_BIT(HC_LANG_CUDA_C),
    HC_WORKLOAD_PARAMS(params),
    HC_WORKLOAD_PORTS(inputs, outputs),
    .check = simpson_check,
    .describe_output = simpson_describe_output,
    .run = simpson_run,
    .split = simpson_split,
};

HC_PLUGIN_DESCRIPTOR = {
    HC_ABI_MAJOR,
    HC_ABI_MINOR,
    HC_PLUGIN_WORKLOAD,
    0,
    "simpson",
    "1.0",
    "composite Simpson integration of a sampled 1-3-D field (seed 000): 4 variants, SciPy's odd rule",
    &simpson_ops};
