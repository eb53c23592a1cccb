/* A test workload written as an outside author would: public headers only.
 * y = a*x + y on n elements, in f32 or f64, with a host kernel and one
 * portable kernel text that builds as opencl-c and cuda-c. */
#include <hc/plugin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char saxpy_src[] =
    "HC_KERNEL void saxpy_f32(const long n, const float a, HC_GLOBAL const float *x, HC_GLOBAL float *y) {\n"
    "  long i = hc_global_id(0);\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "#ifdef HC_HAS_FP64\n"
    "HC_KERNEL void saxpy_f64(const long n, const double a, HC_GLOBAL const double *x, HC_GLOBAL double *y) {\n"
    "  long i = hc_global_id(0);\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "#endif\n";

static void saxpy_f32_host(const hc_host_group_t *g, void *const *args) {
  const float a = *(const float *)args[1];
  const float *x = args[2];
  float *y = args[3];
  for (size_t i = g->lo[0]; i < g->hi[0]; i++) y[i] = a * x[i] + y[i];
}

static void saxpy_f64_host(const hc_host_group_t *g, void *const *args) {
  const double a = *(const double *)args[1];
  const double *x = args[2];
  double *y = args[3];
  for (size_t i = g->lo[0]; i < g->hi[0]; i++) y[i] = a * x[i] + y[i];
}

static const hc_param_spec_t params[] = {
    {"n", HC_PARAM_INT, 0, "100000", 1, 1e10, NULL, "number of elements"},
    {"a", HC_PARAM_FLOAT, 0, "2.0", 1, 0, NULL, "the scalar a"},
    {"dtype", HC_PARAM_ENUM, 0, "f32", 0, 0, "f32|f64", "element type"},
};

static const hc_port_spec_t outputs[] = {
    {"y", HC_DTYPES_REAL, 1, 1, HC_PORT_PRIMARY, "a*x + y with x[i] = i, y[i] = 1"},
};

static int saxpy_check(const hc_job_t *job, const hc_device_info_t *dev, char *why, size_t n) {
  if (!strcmp(hc_job_string(job, "dtype"), "f64") && !dev->fp64) {
    strncpy(why, "needs fp64", n);
    return 1;
  }
  return 0;
}

static hc_status_t saxpy_run(hc_job_t *job) {
  hc_device_t *dev = hc_job_device(job);
  const int64_t n = hc_job_int(job, "n");
  const double a = hc_job_float(job, "a");
  const int f64 = !strcmp(hc_job_string(job, "dtype"), "f64");
  const size_t es = f64 ? 8 : 4;
  hc_status_t st = hc_device_check_memory(dev, 2 * (uint64_t)n * es, "saxpy's two arrays");
  if (st != HC_OK) return st;
  void *hx = malloc((size_t)n * es), *hy = malloc((size_t)n * es);
  hc_field_t *x = NULL, *y = NULL;
  hc_kernel_t *k = NULL;
  if (!hx || !hy) {
    st = hc_error(HC_ERR_NO_MEMORY, "saxpy: out of host memory");
    goto out;
  }
  for (int64_t i = 0; i < n; i++) {
    if (f64)
      ((double *)hx)[i] = (double)i, ((double *)hy)[i] = 1.0;
    else
      ((float *)hx)[i] = (float)i, ((float *)hy)[i] = 1.0f;
  }
  int64_t shape[1] = {n};
  hc_dtype_t dt = f64 ? HC_F64 : HC_F32;
  if ((st = hc_field_create(dev, dt, 1, shape, &x)) != HC_OK) goto out;
  if ((st = hc_field_create(dev, dt, 1, shape, &y)) != HC_OK) goto out;
  if ((st = hc_field_write(x, hx)) != HC_OK || (st = hc_field_write(y, hy)) != HC_OK) goto out;
  hc_kernel_desc_t kd = {sizeof kd, f64 ? "saxpy_f64" : "saxpy_f32", saxpy_src, NULL,
                         f64 ? saxpy_f64_host : saxpy_f32_host};
  if ((st = hc_kernel_create(dev, &kd, &k)) != HC_OK) goto out;
  float af = (float)a;
  long nn = (long)n;
  hc_arg_t args[4] = {HC_ARG_VAL(nn), f64 ? HC_ARG_VAL(a) : HC_ARG_VAL(af), HC_ARG_BUF(hc_field_buffer(x)),
                      HC_ARG_BUF(hc_field_buffer(y))};
  size_t global[1] = {(size_t)n};
  double t0 = hc_now(), dev_s = 0;
  if ((st = hc_device_timer_begin(dev)) != HC_OK) goto out;
  if ((st = hc_kernel_launch(k, 1, global, NULL, 4, args)) != HC_OK) goto out;
  if ((st = hc_device_timer_end(dev, &dev_s)) != HC_OK) goto out;
  double t = hc_now() - t0;
  hc_job_set_times(job, t, dev_s);
  hc_job_add_metric(job, "bandwidth_gbs", 3.0 * (double)n * (double)es / (dev_s > 0 ? dev_s : t) / 1e9, "GB/s");
  if (hc_job_verify_requested(job)) {
    if ((st = hc_field_read(y, hy)) != HC_OK) goto out;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
      double want = a * (double)(f64 ? (double)i : (double)(float)i) + 1.0;
      double got = f64 ? ((double *)hy)[i] : ((float *)hy)[i];
      double rel = fabs(got - want) / (fabs(want) > 1 ? fabs(want) : 1);
      if (rel > worst) worst = rel;
    }
    double tol = f64 ? 1e-15 : 1e-6;
    hc_job_set_verified(job, worst <= tol, "max relative error %.3g (tolerance %.0e)", worst, tol);
  }
  st = hc_job_set_output(job, "y", y);
  y = NULL;
out:
  hc_kernel_destroy(k);
  hc_field_destroy(x);
  hc_field_destroy(y);
  free(hx);
  free(hy);
  return st;
}

/* -DHC_TEST_ABI10: built as a workload of ABI 1.0 is (minor 0, the
 * tables' 1.0 sizes), which every later core must load. */
#ifdef HC_TEST_ABI10
#define SAXPY_OPS_SIZE HC_WORKLOAD_OPS_SIZE_1_0
#define SAXPY_ABI_MINOR 0
#else
#define SAXPY_OPS_SIZE sizeof(hc_workload_ops_t)
#define SAXPY_ABI_MINOR HC_ABI_MINOR
#endif

static const hc_workload_ops_t saxpy_ops = {
    .size = SAXPY_OPS_SIZE,
    .languages = HC_LANG_BIT(HC_LANG_HOST) | HC_LANG_BIT(HC_LANG_OPENCL_C) | HC_LANG_BIT(HC_LANG_CUDA_C),
    HC_WORKLOAD_PARAMS(params),
    HC_WORKLOAD_OUTPUTS(outputs),
    .check = saxpy_check,
    .run = saxpy_run,
};

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        SAXPY_ABI_MINOR,
                        HC_PLUGIN_WORKLOAD,
                        0,
                        "saxpy",
                        "1.0",
                        "test workload: y = a*x + y (drop-in plugin test)",
                        &saxpy_ops};
