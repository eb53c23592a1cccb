/* The glue workloads (abs2, scale, slice, convert, reduce) on every device
 * there is, against host references: values, dtypes, shapes, the grid
 * (spacing and origin) kept or reduced, their own --verify, and their
 * parameter errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *const devices[] = {"cpu", "opencl", "cuda"};
static const hc_dtype_t all_dtypes[] = {HC_F32, HC_F64, HC_C64, HC_C128};

/* Deterministic values in [-2, 2) with a few exact small integers. */
static double value_at(size_t i) {
  unsigned long long x = (i + 1) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return (double)(x % 4000000) / 1e6 - 2.0;
}

/* A field on dev with the given shape, values value_at(i) per scalar,
 * spacing 0.5, 0.25, ... and origin 1, 2, ... */
static hc_field_t *make_field(hc_device_t *dev, hc_dtype_t dt, uint32_t rank, const int64_t *shape) {
  hc_field_t *f = NULL;
  if (hc_field_create(dev, dt, rank, shape, &f) != HC_OK) return NULL;
  size_t n = hc_field_count(f) * (hc_dtype_is_complex(dt) ? 2 : 1);
  int dbl = dt == HC_F64 || dt == HC_C128;
  void *h = malloc((n ? n : 1) * (dbl ? 8 : 4));
  for (size_t i = 0; i < n; i++) {
    if (dbl)
      ((double *)h)[i] = value_at(i);
    else
      ((float *)h)[i] = (float)value_at(i);
  }
  hc_field_write(f, h);
  free(h);
  double sp[4] = {0.5, 0.25, 0.125, 2}, org[4] = {1, 2, 3, 4};
  hc_field_set_spacing(f, sp);
  hc_field_set_origin(f, org);
  return f;
}

/* A field's scalars as doubles (complex interleaved). */
static double *read_doubles(const hc_field_t *f, size_t *count) {
  hc_dtype_t dt = hc_field_dtype(f);
  size_t n = hc_field_count(f) * (hc_dtype_is_complex(dt) ? 2 : 1);
  int dbl = dt == HC_F64 || dt == HC_C128;
  void *raw = malloc(hc_field_bytes(f) + 1);
  double *d = malloc((n + 1) * sizeof *d);
  hc_field_read(f, raw);
  for (size_t i = 0; i < n; i++) d[i] = dbl ? ((double *)raw)[i] : ((float *)raw)[i];
  free(raw);
  *count = n;
  return d;
}

/* Runs workload on dev with `in` and parameters; NULL unless it returns want. */
static hc_job_t *run_glue(hc_device_t *dev, const char *workload, hc_field_t *in, const char *params,
                          hc_status_t want) {
  hc_job_t *job = NULL;
  if (hc_job_create(th_context(), workload, &job) != HC_OK) return NULL;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", params ? params : "");
  for (char *save = NULL, *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save))
    if (hc_job_set_kv(job, kv) != HC_OK) fprintf(stderr, "\n%s %s: %s\n", workload, kv, hc_last_error());
  hc_job_set_input(job, "in", in);
  hc_status_t st = hc_job_run(job, dev, HC_RUN_VERIFY);
  if (st != want) {
    fprintf(stderr, "\n%s %s on %s: %s: %s\n", workload, params ? params : "", hc_device_name(dev), hc_status_name(st),
            hc_last_error());
    CU_ASSERT_EQUAL(st, want);
    hc_job_destroy(job);
    return NULL;
  }
  if (want == HC_OK) {
    const char *msg;
    int v = hc_job_verified(job, &msg);
    if (v != 1) fprintf(stderr, "\n%s %s on %s: verification: %s\n", workload, params, hc_device_name(dev), msg);
    CU_ASSERT_EQUAL(v, 1);
  }
  return job;
}

static void assert_grid_kept(const hc_field_t *in, const hc_field_t *out) {
  CU_ASSERT_EQUAL_FATAL(hc_field_rank(out), hc_field_rank(in));
  for (uint32_t d = 0; d < hc_field_rank(in); d++) {
    CU_ASSERT_EQUAL(hc_field_shape(out)[d], hc_field_shape(in)[d]);
    CU_ASSERT_EQUAL(hc_field_spacing(out)[d], hc_field_spacing(in)[d]);
    CU_ASSERT_EQUAL(hc_field_origin(out)[d], hc_field_origin(in)[d]);
  }
}

static void test_abs2(void) {
  const int64_t shape[2] = {13, 37};
  for (int d = 0; d < 3; d++) {
    hc_device_t *dev = th_device(devices[d]);
    if (!dev) continue;
    for (int t = 0; t < 4; t++) {
      hc_dtype_t dt = all_dtypes[t];
      hc_field_t *in = make_field(dev, dt, 2, shape);
      hc_job_t *job = run_glue(dev, "abs2", in, NULL, HC_OK);
      hc_field_t *out = job ? hc_job_output(job, "out") : NULL;
      CU_ASSERT_PTR_NOT_NULL(out);
      if (out) {
        CU_ASSERT_EQUAL(hc_field_dtype(out), hc_dtype_real_part(dt));
        assert_grid_kept(in, out);
        size_t na, nb;
        double *a = read_doubles(in, &na), *b = read_doubles(out, &nb);
        double worst = 0;
        for (size_t i = 0; i < nb; i++) {
          double want = hc_dtype_is_complex(dt) ? a[2 * i] * a[2 * i] + a[2 * i + 1] * a[2 * i + 1] : a[i] * a[i];
          worst = fmax(worst, fabs(b[i] - want) / fmax(fabs(want), 1e-30));
        }
        CU_ASSERT_TRUE(worst <= (dt == HC_F32 || dt == HC_C64 ? 3e-7 : 3e-16));
        free(a);
        free(b);
      }
      hc_job_destroy(job);
      hc_field_destroy(in);
    }
  }
}

/* A stage whose result overflows to Inf (scale factor=1e300, abs2 of
 * 1e200) fails its verification: Inf against an Inf reference is not a
 * match, and the message names the bound. */
static void test_overflow_fails_verification(void) {
  const int64_t shape[1] = {8};
  static const struct {
    const char *workload, *params;
  } cases[] = {{"scale", "factor=1e300"}, {"abs2", ""}, {"scale", "factor=1e300 "}};
  for (int d = 0; d < 3; d++) {
    hc_device_t *dev = th_device(devices[d]);
    if (!dev) continue;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      /* the third case: f32, where 1e300 itself is out of range */
      hc_dtype_t dt = c == 2 ? HC_F32 : HC_F64;
      if (dt == HC_F64 && !hc_device_info(dev)->fp64) continue;
      hc_field_t *in = NULL;
      TH_ASSERT_OK(hc_field_create(dev, dt, 1, shape, &in));
      double v64[8];
      float v32[8];
      for (int i = 0; i < 8; i++) v64[i] = (i + 1) * (c == 1 ? 1e200 : 1e10), v32[i] = (float)(i + 1);
      TH_ASSERT_OK(hc_field_write(in, dt == HC_F64 ? (const void *)v64 : (const void *)v32));
      hc_job_t *job = NULL;
      TH_ASSERT_OK(hc_job_create(th_context(), cases[c].workload, &job));
      char buf[64];
      snprintf(buf, sizeof buf, "%s", cases[c].params);
      for (char *save = NULL, *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save))
        TH_ASSERT_OK(hc_job_set_kv(job, kv));
      TH_ASSERT_OK(hc_job_set_input(job, "in", in));
      hc_status_t st = hc_job_run(job, dev, HC_RUN_VERIFY);
      const char *msg = NULL;
      int v = hc_job_verified(job, &msg);
      if (v == 1)
        fprintf(stderr, "\n%s %s on %s passed: %s\n", cases[c].workload, cases[c].params, hc_device_name(dev), msg);
      CU_ASSERT(st == HC_OK || st == HC_ERR_VERIFY);
      CU_ASSERT_EQUAL(v, 0);
      CU_ASSERT_PTR_NOT_NULL(msg ? strstr(msg, "tolerance") : NULL);
      hc_job_destroy(job);
      hc_field_destroy(in);
    }
  }
}

static void test_scale(void) {
  const int64_t shape[3] = {4, 5, 6};
  for (int d = 0; d < 3; d++) {
    hc_device_t *dev = th_device(devices[d]);
    if (!dev) continue;
    for (int t = 0; t < 4; t++) {
      hc_dtype_t dt = all_dtypes[t];
      hc_field_t *in = make_field(dev, dt, 3, shape);
      hc_job_t *job = run_glue(dev, "scale", in, "factor=-2.5", HC_OK);
      hc_field_t *out = job ? hc_job_output(job, "out") : NULL;
      CU_ASSERT_PTR_NOT_NULL(out);
      if (out) {
        CU_ASSERT_EQUAL(hc_field_dtype(out), dt);
        assert_grid_kept(in, out);
        size_t na, nb;
        double *a = read_doubles(in, &na), *b = read_doubles(out, &nb);
        CU_ASSERT_EQUAL(na, nb);
        size_t bad = 0; /* one correctly rounded product: exact agreement */
        for (size_t i = 0; i < nb; i++)
          bad += b[i] != (dt == HC_F32 || dt == HC_C64 ? (double)(-2.5f * (float)a[i]) : -2.5 * a[i]);
        CU_ASSERT_EQUAL(bad, 0);
        free(a);
        free(b);
      }
      hc_job_destroy(job);
      hc_field_destroy(in);
    }
  }
}

/* in[i0][i1][i2] of a rank-3 field of doubles. */
static void check_slice(hc_device_t *dev, hc_field_t *in, int axis, const char *index, int64_t want_index) {
  char params[64];
  snprintf(params, sizeof params, "axis=%d%s%s", axis, index ? " index=" : "", index ? index : "");
  hc_job_t *job = run_glue(dev, "slice", in, params, HC_OK);
  hc_field_t *out = job ? hc_job_output(job, "out") : NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  const int64_t *s = hc_field_shape(in);
  uint32_t rank = hc_field_rank(in);
  CU_ASSERT_EQUAL(hc_field_rank(out), rank - 1);
  CU_ASSERT_EQUAL(hc_field_dtype(out), hc_field_dtype(in));
  for (uint32_t d = 0, k = 0; d < rank; d++) {
    if ((int)d == axis) continue;
    CU_ASSERT_EQUAL(hc_field_shape(out)[k], s[d]);
    CU_ASSERT_EQUAL(hc_field_spacing(out)[k], hc_field_spacing(in)[d]);
    CU_ASSERT_EQUAL(hc_field_origin(out)[k], hc_field_origin(in)[d]);
    k++;
  }
  double coord = 0, idx = 0;
  TH_ASSERT_OK(hc_job_metric_find(job, "coordinate", &coord));
  TH_ASSERT_OK(hc_job_metric_find(job, "index", &idx));
  CU_ASSERT_EQUAL(idx, (double)want_index);
  CU_ASSERT_DOUBLE_EQUAL(coord, hc_field_origin(in)[axis] + (double)want_index * hc_field_spacing(in)[axis], 1e-12);
  size_t na, nb;
  double *a = read_doubles(in, &na), *b = read_doubles(out, &nb);
  int parts = hc_dtype_is_complex(hc_field_dtype(in)) ? 2 : 1;
  size_t outer = 1, inner = (size_t)parts;
  for (uint32_t d = 0; d < rank; d++) {
    if ((int)d < axis) outer *= (size_t)s[d];
    if ((int)d > axis) inner *= (size_t)s[d];
  }
  size_t bad = 0;
  for (size_t o = 0; o < outer; o++)
    for (size_t w = 0; w < inner; w++)
      bad += b[o * inner + w] != a[(o * (size_t)s[axis] + (size_t)want_index) * inner + w];
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(nb, outer * inner);
  free(a);
  free(b);
  hc_job_destroy(job);
}

static void test_slice(void) {
  const int64_t s3[3] = {5, 6, 7}, s2[2] = {9, 4}, s1[1] = {11};
  for (int d = 0; d < 3; d++) {
    hc_device_t *dev = th_device(devices[d]);
    if (!dev) continue;
    hc_field_t *f = make_field(dev, HC_F64, 3, s3);
    check_slice(dev, f, 0, "3", 3);
    check_slice(dev, f, 1, NULL, 3); /* default: the middle */
    check_slice(dev, f, 2, "-1", 6);
    check_slice(dev, f, 2, "0", 0);
    hc_job_t *bad = run_glue(dev, "slice", f, "axis=3", HC_ERR_PARAM);
    CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "slice: axis=3: input 'in' has rank 3 (axes 0..2)"));
    hc_job_destroy(bad);
    bad = run_glue(dev, "slice", f, "axis=0 index=5", HC_ERR_PARAM);
    CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "slice: index=5: axis 0 of input 'in' has 5 points (valid -5..4)"));
    hc_job_destroy(bad);
    hc_field_destroy(f);
    f = make_field(dev, HC_C64, 2, s2); /* 8-byte elements */
    check_slice(dev, f, 1, "2", 2);
    check_slice(dev, f, 0, "-9", 0);
    hc_field_destroy(f);
    f = make_field(dev, HC_C128, 1, s1); /* a line to a scalar, 16-byte elements */
    check_slice(dev, f, 0, "7", 7);
    hc_field_destroy(f);
    f = make_field(dev, HC_F32, 2, s2);
    check_slice(dev, f, 0, "8", 8);
    hc_field_destroy(f);
  }
}

/* Not inlined on purpose: GCC 12.2 at -O3 miscompiled the loop below with
 * the cast written in place (the last element was left unrounded). */
__attribute__((noinline)) static double to_float(double v) { return (float)v; }

/* What C's conversion gives, as the reference for every pair. */
static void convert_ref(hc_dtype_t from, hc_dtype_t to, int part, const double *a, size_t n, double *out) {
  int ic = hc_dtype_is_complex(from), oc = hc_dtype_is_complex(to), narrow = to == HC_F32 || to == HC_C64;
  for (size_t i = 0; i < n; i++) {
    double re = ic ? a[2 * i + (oc ? 0 : (size_t)part)] : a[i], im = ic && oc ? a[2 * i + 1] : 0;
    if (narrow) re = to_float(re), im = to_float(im);
    if (oc)
      out[2 * i] = re, out[2 * i + 1] = im;
    else
      out[i] = re;
  }
}

static void test_convert(void) {
  const int64_t shape[2] = {7, 9};
  for (int d = 0; d < 3; d++) {
    hc_device_t *dev = th_device(devices[d]);
    if (!dev) continue;
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 4; b++) {
        hc_dtype_t from = all_dtypes[a], to = all_dtypes[b];
        int lossy = hc_dtype_is_complex(from) && !hc_dtype_is_complex(to);
        int part = lossy && b == 1; /* c -> f64 keeps the imaginary part, c -> f32 the real one */
        char params[64];
        snprintf(params, sizeof params, "to=%s%s", hc_dtype_name(to),
                 lossy ? (part ? " part=imag" : " part=real") : "");
        hc_field_t *in = make_field(dev, from, 2, shape);
        hc_job_t *job = run_glue(dev, "convert", in, params, HC_OK);
        hc_field_t *out = job ? hc_job_output(job, "out") : NULL;
        CU_ASSERT_PTR_NOT_NULL(out);
        if (out) {
          CU_ASSERT_EQUAL(hc_field_dtype(out), to);
          assert_grid_kept(in, out);
          size_t na, nb;
          double *x = read_doubles(in, &na), *y = read_doubles(out, &nb);
          double *want = malloc(nb * sizeof *want);
          convert_ref(from, to, part, x, hc_field_count(in), want);
          size_t bad = 0;
          for (size_t i = 0; i < nb; i++) bad += y[i] != want[i];
          if (bad)
            fprintf(stderr, "\nconvert %s -> %s on %s: %zu values differ\n", hc_dtype_name(from), hc_dtype_name(to),
                    hc_device_name(dev), bad);
          CU_ASSERT_EQUAL(bad, 0);
          free(x);
          free(y);
          free(want);
        }
        hc_job_destroy(job);
        if (lossy && d == 0) { /* refused without part= */
          snprintf(params, sizeof params, "to=%s", hc_dtype_name(to));
          job = run_glue(dev, "convert", in, params, HC_ERR_PARAM);
          char msg[256];
          snprintf(msg, sizeof msg, "convert: to=%s: input 'in' is %s (complex) and would lose its imaginary part",
                   hc_dtype_name(to), hc_dtype_name(from));
          CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), msg));
          hc_job_destroy(job);
        }
        hc_field_destroy(in);
      }
  }
}

/* Reference in double with Neumaier's compensated sum (long double would
 * do, but valgrind computes it in double precision). */
static double reference(const double *a, size_t n, const char *op, double *mag) {
  int mn = !strcmp(op, "min"), mx = !strcmp(op, "max"), sq = !strcmp(op, "l2");
  double r = a[0], s = 0, c = 0, m = 0;
  for (size_t i = 0; i < n; i++) {
    if (mn || mx) {
      r = mn ? (a[i] < r ? a[i] : r) : (a[i] > r ? a[i] : r);
      continue;
    }
    double v = sq ? a[i] * a[i] : a[i], e = sq ? fma(a[i], a[i], -v) : 0, t = s + v;
    c += (fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s) + e;
    s = t;
    m += fabs(a[i]);
  }
  if (mn || mx) return *mag = fabs(r), r;
  r = s + c;
  if (sq) r = sqrt(r);
  *mag = sq ? r : m;
  return r;
}

static void test_reduce(void) {
  static const char *const ops[] = {"sum", "min", "max", "l2"};
  const int64_t sizes[][2] = {{100003, 1}, {7, 1}, {1, 1}, {301, 257}};
  for (int d = 0; d < 3; d++) {
    hc_device_t *dev = th_device(devices[d]);
    if (!dev) continue;
    for (int s = 0; s < 4; s++)
      for (int t = 0; t < 4; t++) {
        hc_dtype_t dt = all_dtypes[t];
        hc_field_t *in = make_field(dev, dt, sizes[s][1] > 1 ? 2 : 1, sizes[s]);
        size_t n;
        double *a = read_doubles(in, &n);
        for (int o = 0; o < 4; o++) {
          int complex_refused = hc_dtype_is_complex(dt) && o != 3;
          char params[32];
          snprintf(params, sizeof params, "op=%s", ops[o]);
          hc_job_t *job = run_glue(dev, "reduce", in, params, complex_refused ? HC_ERR_PARAM : HC_OK);
          if (complex_refused) {
            CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "only op=l2 takes a complex field"));
            hc_job_destroy(job);
            continue;
          }
          hc_field_t *out = job ? hc_job_output(job, "value") : NULL;
          CU_ASSERT_PTR_NOT_NULL(out);
          if (!out) continue;
          CU_ASSERT_EQUAL(hc_field_dtype(out), HC_F64);
          CU_ASSERT_EQUAL(hc_field_rank(out), 0);
          double got = 0, metric = -1;
          TH_ASSERT_OK(hc_field_read(out, &got));
          TH_ASSERT_OK(hc_job_metric_find(job, "value", &metric));
          CU_ASSERT_EQUAL(got, metric);
          double mag;
          double want = reference(a, n, ops[o], &mag);
          double err = fabs(got - want) / (mag > 0 ? mag : 1);
          double tol = o == 1 || o == 2 ? 0 : 1e-14;
          if (err > tol)
            fprintf(stderr, "\nreduce %s of %zu %s on %s: %.17g, want %.17g (error %.3g)\n", ops[o], n,
                    hc_dtype_name(dt), hc_device_name(dev), got, want, err);
          CU_ASSERT_TRUE(err <= tol);
          hc_job_destroy(job);
        }
        free(a);
        hc_field_destroy(in);
      }
  }
}

/* Without an input, every glue stage says which port is missing: exit 2. */
static void test_hcrun_unbound_input(void) {
  static const char *const glue[] = {"abs2", "scale", "slice", "convert to=f32", "reduce"};
  for (int i = 0; i < 5; i++) {
    char name[32], cmd[4400], out[4096], err[4096];
    snprintf(name, sizeof name, "%s", glue[i]);
    char *sp = strchr(name, ' ');
    if (sp) *sp = '\0';
    snprintf(cmd, sizeof cmd, "%s/bin/hcrun --device=cpu --workload=%s", th_build_dir(), glue[i]);
    CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 2);
    char want[128];
    snprintf(want, sizeof want, "%s: input 'in' is not bound", name);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
  }
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("glue", NULL, NULL);
  CU_ADD_TEST(s, test_abs2);
  CU_ADD_TEST(s, test_scale);
  CU_ADD_TEST(s, test_overflow_fails_verification);
  CU_ADD_TEST(s, test_slice);
  CU_ADD_TEST(s, test_convert);
  CU_ADD_TEST(s, test_reduce);
  CU_ADD_TEST(s, test_hcrun_unbound_input);
}

TH_MAIN(register_tests)
