/* Non-finite values (include/hc/status.h, "Non-finite values"): inputs a
 * solver cannot use are refused naming the port and the element; elsewhere
 * NaN and infinities propagate to the result; a verification never passes on
 * one; hcrun prints them and --json keeps them as "NaN"/"Infinity". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *const devices[] = {"cpu", "opencl"};

/* A 2-D f64 field of ones with one bad value at [bi, bj]. */
static hc_field_t *field_with(hc_device_t *dev, int64_t n0, int64_t n1, int64_t bi, int64_t bj, double bad) {
  int64_t shape[2] = {n0, n1};
  hc_field_t *f = NULL;
  if (hc_field_create(dev, HC_F64, 2, shape, &f) != HC_OK) return NULL;
  double *h = malloc((size_t)(n0 * n1) * sizeof *h);
  for (int64_t i = 0; i < n0 * n1; i++) h[i] = 1;
  if (bi >= 0) h[bi * n1 + bj] = bad;
  hc_field_write(f, h);
  free(h);
  return f;
}

static hc_status_t run_with(hc_device_t *dev, const char *workload, const char *port, hc_field_t *in,
                            const char *const *kv, uint32_t flags, hc_job_t **out) {
  hc_job_t *job = NULL;
  TH_ASSERT_OK(hc_job_create(th_context(), workload, &job));
  for (; kv && *kv; kv++) TH_ASSERT_OK(hc_job_set_kv(job, *kv));
  if (in) TH_ASSERT_OK(hc_job_set_input(job, port, in));
  hc_status_t st = hc_job_run(job, dev, flags);
  if (out)
    *out = job;
  else
    hc_job_destroy(job);
  return st;
}

static void test_find_nonfinite(void) {
  hc_device_t *dev = th_device("cpu");
  if (!dev) return;
  int64_t shape[1] = {4};
  hc_field_t *f = NULL;
  TH_ASSERT_OK(hc_field_create(dev, HC_C64, 1, shape, &f));
  float v[8] = {1, 2, 3, 4, 5, INFINITY, 7, 8};
  TH_ASSERT_OK(hc_field_write(f, v));
  int64_t at = 7;
  double bad = 0;
  TH_ASSERT_OK(hc_field_find_nonfinite(f, &at, &bad));
  CU_ASSERT_EQUAL(at, 2); /* the imaginary part of element 2 */
  CU_ASSERT(isinf(bad));
  v[5] = 6;
  TH_ASSERT_OK(hc_field_write(f, v));
  TH_ASSERT_OK(hc_field_find_nonfinite(f, &at, NULL));
  CU_ASSERT_EQUAL(at, -1);
  hc_field_destroy(f);
}

/* jacobi and multigrid refuse a NaN or an infinity in f, naming it; before,
 * jacobi stopped with "residual 0" and passed its verification. */
static void test_solvers_refuse(void) {
  for (size_t d = 0; d < sizeof devices / sizeof *devices; d++) {
    hc_device_t *dev = th_device(devices[d]);
    if (!dev) continue;
    static const char *const jkv[] = {"tol=1e-6", "dtype=f64", NULL};
    static const char *const mkv[] = {"tol=0", "cycles=3", "dtype=f64", NULL};
    const double bads[2] = {NAN, -INFINITY};
    for (int b = 0; b < 2; b++) {
      hc_field_t *f = field_with(dev, 33, 33, 5, 7, bads[b]);
      hc_status_t st = run_with(dev, "jacobi", "f", f, jkv, HC_RUN_VERIFY, NULL);
      CU_ASSERT_EQUAL(st, HC_ERR_PARAM);
      CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "input 'f'"));
      CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "[5, 7]"));
      st = run_with(dev, "multigrid", "f", f, mkv, HC_RUN_VERIFY, NULL);
      CU_ASSERT_EQUAL(st, HC_ERR_PARAM);
      CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "[5, 7]"));
      hc_field_destroy(f);
      /* the start too */
      hc_field_t *u0 = field_with(dev, 33, 33, 0, 3, bads[b]);
      static const char *const ukv[] = {"tol=1e-6", "dtype=f64", "n=33", NULL};
      st = run_with(dev, "jacobi", "u0", u0, ukv, HC_RUN_VERIFY, NULL);
      CU_ASSERT_EQUAL(st, HC_ERR_PARAM);
      CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "input 'u0'"));
      hc_field_destroy(u0);
    }
  }
}

/* reduce keeps a NaN in min and max (fmin/fmax dropped it), and sum. */
static void test_reduce_propagates(void) {
  static const char *const ops[] = {"op=min", "op=max", "op=sum", "op=l2"};
  for (size_t d = 0; d < sizeof devices / sizeof *devices; d++) {
    hc_device_t *dev = th_device(devices[d]);
    if (!dev) continue;
    for (int at = 0; at < 3; at++) {
      hc_field_t *f = field_with(dev, 40, 50, at == 0 ? 0 : at == 1 ? 17 : 39, at == 2 ? 49 : 3, NAN);
      for (int o = 0; o < 4; o++) {
        const char *kv[] = {ops[o], NULL};
        hc_job_t *job = NULL;
        hc_status_t st = run_with(dev, "reduce", "in", f, kv, 0, &job);
        CU_ASSERT_EQUAL(st, HC_OK);
        double v = 0;
        CU_ASSERT_EQUAL(hc_job_metric_find(job, "value", &v), HC_OK);
        if (!isnan(v)) fprintf(stderr, "\nreduce %s on %s, NaN at %d: %g\n", ops[o], devices[d], at, v);
        CU_ASSERT(isnan(v));
        hc_job_destroy(job);
        /* a verification never passes on it */
        CU_ASSERT_EQUAL(run_with(dev, "reduce", "in", f, kv, HC_RUN_VERIFY, NULL), HC_ERR_VERIFY);
      }
      hc_field_destroy(f);
    }
  }
}

/* simpson integrates a NaN to NaN, and --verify fails on it. */
static void test_simpson(void) {
  for (size_t d = 0; d < sizeof devices / sizeof *devices; d++) {
    hc_device_t *dev = th_device(devices[d]);
    if (!dev) continue;
    hc_field_t *f = field_with(dev, 9, 9, 4, 4, INFINITY);
    hc_job_t *job = NULL;
    CU_ASSERT_EQUAL(run_with(dev, "simpson", "f", f, NULL, 0, &job), HC_OK);
    double v = 0;
    CU_ASSERT_EQUAL(hc_job_metric_find(job, "integral", &v), HC_OK);
    CU_ASSERT(isinf(v) && v > 0);
    hc_job_destroy(job);
    CU_ASSERT_EQUAL(run_with(dev, "simpson", "f", f, NULL, HC_RUN_VERIFY, NULL), HC_ERR_VERIFY);
    hc_field_destroy(f);
    /* a box whose length overflows: every sample and weight would be Inf */
    static const char *const kv[] = {"func=gauss", "n=9", "box=-1e308:1e308", NULL};
    CU_ASSERT_EQUAL(run_with(dev, "simpson", NULL, NULL, kv, HC_RUN_VERIFY, NULL), HC_ERR_PARAM);
    CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "box="));
  }
}

/* hcrun: the text report says nan, --json says "NaN" (jansson refuses
 * non-finite reals: the value was dropped and printed as 0), --verify exits
 * 1, a refused input exits 2. */
static void test_hcrun(void) {
  char dir[1024], npy[1200], cmd[4096], out[16384], err[4096];
  snprintf(dir, sizeof dir, "%s", th_tmpdir());
  snprintf(npy, sizeof npy, "%s/nan.npy", dir);
  int64_t shape[2] = {9, 9};
  double h[81];
  for (int i = 0; i < 81; i++) h[i] = 0.5;
  h[40] = NAN;
  TH_ASSERT_OK(hc_npy_write(npy, HC_F64, 2, shape, h));
  const char *hcrun = th_build_dir();
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --backend=cpu --workload=simpson input=%s", hcrun, npy);
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "integral               nan"));
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --backend=cpu --workload=simpson input=%s --json", hcrun, npy);
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"value\": \"NaN\""));
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --backend=cpu --workload=simpson input=%s --verify --json", hcrun, npy);
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"passed\": false"));
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --backend=cpu --workload=jacobi f=%s --verify", hcrun, npy);
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "[4, 4]"));
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("nonfinite", NULL, NULL);
  CU_ADD_TEST(s, test_find_nonfinite);
  CU_ADD_TEST(s, test_solvers_refuse);
  CU_ADD_TEST(s, test_reduce_propagates);
  CU_ADD_TEST(s, test_simpson);
  CU_ADD_TEST(s, test_hcrun);
}

TH_MAIN(register_tests)
