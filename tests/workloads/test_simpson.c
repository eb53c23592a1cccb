/* simpson: composite Simpson integration (seed 000) on every device here.
 *
 * Exactness (f = 1, cubics with odd counts), the four variants against each
 * other and against an independent nested rule written here, every parity
 * combination per axis, 1-D and 2-D fields, f32 and f64, SciPy's simpson()
 * (>= 1.11, through tests/workloads/simpson_scipy.py), and bad inputs through
 * hcrun (exit code 2, a message naming the problem, nothing written).
 *
 * SciPy: $HC_TEST_PYTHON, else <source>/.venv/bin/python, created by
 *   python3 -m venv .venv && .venv/bin/pip install 'scipy>=1.11' numpy
 * Without one the SciPy test fails, unless HC_SKIP_SCIPY=1. */
#include "harness.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const device_specs[] = {"cpu", "opencl", "cuda"};
#define NDEV (sizeof device_specs / sizeof device_specs[0])
static const char *const variants[] = {"fused", "precomputed", "onthefly", "devicereduce"};
#define NVAR (sizeof variants / sizeof variants[0])

/* ------------------------------------------------------------- helpers */

/* Runs simpson on dev with the NULL-terminated "k=v" list (and field f on
 * port f when not NULL). Checks the output (a 0-d f64 field equal to the
 * integral metric) and, with HC_RUN_VERIFY, that verification passed. */
static hc_status_t run_simpson(hc_device_t *dev, hc_field_t *f, uint32_t flags, double *integral,
                               const char *const *kv) {
  hc_job_t *job = NULL;
  hc_status_t st = hc_job_create(th_context(), "simpson", &job);
  if (st != HC_OK) return st;
  for (int i = 0; kv[i] && st == HC_OK; i++) st = hc_job_set_kv(job, kv[i]);
  if (st == HC_OK && f) st = hc_job_set_input(job, "f", f);
  if (st == HC_OK) st = hc_job_run(job, dev, flags);
  if (st == HC_OK) {
    hc_field_t *o = hc_job_output(job, "integral");
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_EQUAL(hc_field_rank(o), 0);
    CU_ASSERT_EQUAL(hc_field_dtype(o), HC_F64);
    double v = NAN, m = NAN;
    TH_ASSERT_OK(hc_field_read(o, &v));
    TH_ASSERT_OK(hc_job_metric_find(job, "integral", &m));
    CU_ASSERT_EQUAL(v, m);
    *integral = v;
    if (flags & HC_RUN_VERIFY) {
      const char *msg;
      CU_ASSERT_EQUAL(hc_job_verified(job, &msg), 1);
    }
  } else {
    fprintf(stderr, "simpson on %s:", hc_device_name(dev));
    for (int i = 0; kv[i]; i++) fprintf(stderr, " %s", kv[i]);
    fprintf(stderr, ": %s: %s\n", hc_status_name(st), hc_last_error());
  }
  hc_job_destroy(job);
  return st;
}
#define KV(...) ((const char *const[]){__VA_ARGS__, NULL})

static char *fmt(char *buf, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
static char *fmt(char *buf, size_t n, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, n, f, ap);
  va_end(ap);
  return buf;
}

/* Deterministic samples in [0.5, 1.5): positive, so relative errors of the
 * integral are meaningful. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* The 1-D weights in units of h, written out independently of the plugin:
 * n = 2 trapezoid; n odd Simpson 1,4,2,...,4,1 thirds; n even Simpson on the
 * first n-1 samples plus (5, 8, -1)/12 on the last three. */
static void weights_1d(int n, double *w) {
  if (n == 2) {
    w[0] = w[1] = 0.5;
    return;
  }
  const int m = (n & 1) ? n : n - 1;
  for (int k = 0; k < n; k++) w[k] = 0;
  for (int k = 0; k < m; k++) w[k] = (k == 0 || k == m - 1) ? 1.0 / 3 : (k & 1) ? 4.0 / 3 : 2.0 / 3;
  if (!(n & 1)) {
    w[n - 1] += 5.0 / 12;
    w[n - 2] += 8.0 / 12;
    w[n - 3] -= 1.0 / 12;
  }
}

/* Nested reference for samples of shape (rank <= 3) and spacing h. */
static double reference(uint32_t rank, const int64_t *shape, const double *h, const double *y) {
  int64_t s[3] = {1, 1, 1};
  double hh[3] = {1, 1, 1};
  for (uint32_t d = 0; d < rank; d++) s[3 - rank + d] = shape[d], hh[3 - rank + d] = h[d];
  double *w[3];
  for (int d = 0; d < 3; d++) {
    w[d] = malloc((size_t)s[d] * sizeof(double));
    if (s[d] == 1)
      w[d][0] = 1;
    else
      weights_1d((int)s[d], w[d]);
  }
  double total = 0;
  for (int64_t i = 0; i < s[0]; i++)
    for (int64_t j = 0; j < s[1]; j++) {
      double row = 0;
      for (int64_t k = 0; k < s[2]; k++) row += w[2][k] * y[(i * s[1] + j) * s[2] + k];
      total += w[0][i] * w[1][j] * row;
    }
  for (int d = 0; d < 3; d++) free(w[d]);
  return total * hh[0] * hh[1] * hh[2];
}

/* A field of random samples on dev (values in *host as doubles, exactly the
 * samples, also for f32). */
static hc_field_t *random_field(hc_device_t *dev, hc_dtype_t dt, uint32_t rank, const int64_t *shape, const double *h,
                                double **host) {
  size_t n = 1;
  for (uint32_t d = 0; d < rank; d++) n *= (size_t)shape[d];
  double *y = malloc(n * sizeof *y);
  float *yf = malloc(n * sizeof *yf);
  for (size_t e = 0; e < n; e++) {
    y[e] = 0.5 + rnd();
    yf[e] = (float)y[e];
    if (dt == HC_F32) y[e] = yf[e];
  }
  hc_field_t *f = NULL;
  TH_ASSERT_OK(hc_field_create(dev, dt, rank, shape, &f));
  TH_ASSERT_OK(hc_field_write(f, dt == HC_F32 ? (void *)yf : (void *)y));
  hc_field_set_spacing(f, h);
  free(yf);
  *host = y;
  return f;
}

/* ------------------------------------------------------------- tests */

/* f = 1 gives the box's volume, on every variant, dtype and rank. */
static void test_volume(void) {
  static const struct {
    const char *n, *box;
    double volume;
  } cases[] = {{"n=5x6x7", "box=-1:2", 27}, {"n=2x3x4", "box=0:1,0:2,0:3", 6}, {"n=9x2x2", "box=0:0.5", 0.125},
               {"n=17", "box=-2:3", 5},     {"n=4x5", "box=0:2,1:4", 6},       {"n=2", "box=0:1", 1}};
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    for (size_t v = 0; v < NVAR; v++)
      for (int f32 = 0; f32 < 2; f32++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
          char var[64];
          double got = NAN;
          hc_status_t st = run_simpson(dev, NULL, HC_RUN_VERIFY, &got,
                                       KV("func=one", cases[c].n, cases[c].box, f32 ? "dtype=f32" : "dtype=f64",
                                          fmt(var, sizeof var, "variant=%s", variants[v])));
          CU_ASSERT_EQUAL(st, HC_OK);
          CU_ASSERT(th_rel(got, cases[c].volume) <= 1e-14);
        }
  }
}

/* Cubics in each variable are exact with an odd sample count on every
 * axis; with even counts Cartwright's last interval is exact only for
 * quadratics, so the error is visible (and within the stated bound). */
static void test_cubic_exact(void) {
  static const struct {
    const char *n, *box;
  } odd[] = {
      {"n=5x7x9", "box=-1:2"}, {"n=3x3x3", "box=0:1,-1:1,0.5:2"}, {"n=11", "box=-1.5:0.7"}, {"n=7x5", "box=-1:1,0:3"}};
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    for (size_t v = 0; v < NVAR; v++)
      for (int f32 = 0; f32 < 2; f32++)
        for (size_t c = 0; c < sizeof odd / sizeof odd[0]; c++) {
          char var[64];
          double got = NAN;
          hc_job_t *job = NULL;
          TH_ASSERT_OK(hc_job_create(th_context(), "simpson", &job));
          TH_ASSERT_OK(hc_job_set_kv(job, "func=poly"));
          TH_ASSERT_OK(hc_job_set_kv(job, odd[c].n));
          TH_ASSERT_OK(hc_job_set_kv(job, odd[c].box));
          TH_ASSERT_OK(hc_job_set_kv(job, f32 ? "dtype=f32" : "dtype=f64"));
          TH_ASSERT_OK(hc_job_set_kv(job, fmt(var, sizeof var, "variant=%s", variants[v])));
          TH_ASSERT_OK(hc_job_run(job, dev, HC_RUN_VERIFY));
          double exact = NAN;
          TH_ASSERT_OK(hc_job_metric_find(job, "integral", &got));
          TH_ASSERT_OK(hc_job_metric_find(job, "exact", &exact));
          /* f64: rounding only; f32: the samples' own rounding (2^-24). */
          CU_ASSERT(th_rel(got, exact) <= (f32 ? 3e-6 : 1e-13));
          hc_job_destroy(job);
        }
    double even = NAN, odd_ = NAN;
    CU_ASSERT_EQUAL(run_simpson(dev, NULL, HC_RUN_VERIFY, &even, KV("func=poly", "n=6x8x10", "box=-1:2")), HC_OK);
    CU_ASSERT_EQUAL(run_simpson(dev, NULL, HC_RUN_VERIFY, &odd_, KV("func=poly", "n=7x9x11", "box=-1:2")), HC_OK);
    CU_ASSERT(th_rel(even, odd_) > 1e-6); /* even counts: not exact for cubics */
  }
}

/* Every combination of trapezoid (2), odd and even counts on the three
 * axes, with random samples on the f port, against the nested rule above;
 * the four variants on a few of them. */
static void check_against_reference(hc_device_t *dev, hc_dtype_t dt, uint32_t rank, const int64_t *shape,
                                    const char *const *vars, size_t nvars) {
  double h[3] = {0.1 + rnd(), 0.1 + rnd(), 0.1 + rnd()}, *y = NULL;
  hc_field_t *f = random_field(dev, dt, rank, shape, h, &y);
  const double want = reference(rank, shape, h, y);
  for (size_t v = 0; v < nvars; v++) {
    char var[64];
    double got = NAN;
    CU_ASSERT_EQUAL(run_simpson(dev, f, HC_RUN_VERIFY, &got, KV(fmt(var, sizeof var, "variant=%s", vars[v]))), HC_OK);
    /* f32 products (algorithms 1, 2) round each term once. */
    const int f32_products = dt == HC_F32 && (!strcmp(vars[v], "precomputed") || !strcmp(vars[v], "onthefly"));
    const double tol = f32_products ? 2e-7 : 1e-12;
    if (th_rel(got, want) > tol)
      fprintf(stderr, "%s %s %s rank %u shape %lldx%lldx%lld: %.17g vs %.17g\n", hc_device_name(dev), vars[v],
              hc_dtype_name(dt), rank, (long long)shape[0], rank > 1 ? (long long)shape[1] : 0LL,
              rank > 2 ? (long long)shape[2] : 0LL, got, want);
    CU_ASSERT(th_rel(got, want) <= tol);
  }
  hc_field_destroy(f);
  free(y);
}

static void test_axis_parities(void) {
  static const int64_t counts[] = {2, 5, 6}; /* trapezoid, odd, even */
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    for (int f32 = 0; f32 < 2; f32++)
      for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
          for (int c = 0; c < 3; c++) {
            int64_t shape[3] = {counts[a], counts[b] + 2 * b, counts[c] + 4 * c};
            check_against_reference(dev, f32 ? HC_F32 : HC_F64, 3, shape, variants, 1);
          }
  }
}

static void test_variants_agree(void) {
  static const int64_t shapes[][3] = {{8, 9, 10}, {2, 3, 2}, {13, 2, 6}, {4, 4, 4}, {3, 40, 33}};
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    for (int f32 = 0; f32 < 2; f32++)
      for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        check_against_reference(dev, f32 ? HC_F32 : HC_F64, 3, shapes[s], variants, NVAR);
  }
}

/* 1-D and 2-D fields, through the port and through func=. */
static void test_ranks(void) {
  static const struct {
    uint32_t rank;
    int64_t shape[2];
  } cases[] = {{1, {2, 0}}, {1, {3, 0}}, {1, {4, 0}},  {1, {1001, 0}}, {1, {1000, 0}},
               {2, {2, 7}}, {2, {6, 9}}, {2, {33, 2}}, {2, {50, 64}}};
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    for (int f32 = 0; f32 < 2; f32++)
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        check_against_reference(dev, f32 ? HC_F32 : HC_F64, cases[c].rank, cases[c].shape, variants, NVAR);
    /* func= in 1-D and 2-D: sin(pi x) on [0, 1] integrates to 2/pi per axis. */
    double got = NAN;
    CU_ASSERT_EQUAL(run_simpson(dev, NULL, HC_RUN_VERIFY, &got, KV("func=sinprod", "n=2001")), HC_OK);
    CU_ASSERT(th_rel(got, 2 / M_PI) < 1e-11);
    CU_ASSERT_EQUAL(run_simpson(dev, NULL, HC_RUN_VERIFY, &got, KV("func=sinprod", "n=401x400")), HC_OK);
    CU_ASSERT(th_rel(got, 4 / (M_PI * M_PI)) < 1e-8);
  }
}

/* The same fused run twice gives the same bits, and a field on another
 * device is moved to the running one. */
static void test_repeat_and_port_across_devices(void) {
  hc_device_t *cpu = th_device("cpu");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
  const int64_t shape[3] = {17, 18, 19};
  const double h[3] = {0.25, 0.5, 0.125};
  double *y = NULL;
  hc_field_t *f = random_field(cpu, HC_F64, 3, shape, h, &y);
  const double want = reference(3, shape, h, y);
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    double a = NAN, b = NAN;
    CU_ASSERT_EQUAL(run_simpson(dev, f, 0, &a, KV("variant=fused")), HC_OK);
    CU_ASSERT_EQUAL(run_simpson(dev, f, 0, &b, KV("variant=fused")), HC_OK);
    CU_ASSERT_EQUAL(memcmp(&a, &b, sizeof a), 0);
    CU_ASSERT(th_rel(a, want) <= 1e-12);
    /* hx= overrides the field's own spacing. */
    CU_ASSERT_EQUAL(run_simpson(dev, f, 0, &b, KV("hx=0.5")), HC_OK);
    CU_ASSERT(th_rel(b, 2 * want) <= 1e-12);
  }
  hc_field_destroy(f);
  free(y);
}

/* Metrics and times of a run, and the refusal of a field larger than the
 * device before anything is allocated. */
static void test_metrics_and_memory(void) {
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    hc_job_t *job = NULL;
    TH_ASSERT_OK(hc_job_create(th_context(), "simpson", &job));
    TH_ASSERT_OK(hc_job_set_kv(job, "n=20x21x22"));
    TH_ASSERT_OK(hc_job_set_kv(job, "func=gauss"));
    TH_ASSERT_OK(hc_job_run(job, dev, HC_RUN_VERIFY));
    double v;
    TH_ASSERT_OK(hc_job_metric_find(job, "bytes", &v));
    CU_ASSERT_EQUAL(v, 20.0 * 21 * 22 * 8);
    TH_ASSERT_OK(hc_job_metric_find(job, "samples", &v));
    CU_ASSERT_EQUAL(v, 20.0 * 21 * 22);
    TH_ASSERT_OK(hc_job_metric_find(job, "bandwidth_gbs", &v));
    CU_ASSERT(v > 0);
    TH_ASSERT_OK(hc_job_metric_find(job, "transfer_s", &v));
    CU_ASSERT(v >= 0);
    TH_ASSERT_OK(hc_job_metric_find(job, "groups", &v));
    CU_ASSERT(v >= 1);
    double exact, err;
    TH_ASSERT_OK(hc_job_metric_find(job, "exact", &exact));
    TH_ASSERT_OK(hc_job_metric_find(job, "exact_error", &err));
    CU_ASSERT(fabs(err) < 1e-4 * exact); /* h = 1/19: the rule's own error */
    hc_job_times_t t;
    hc_job_times(job, &t);
    CU_ASSERT(t.compute_s > 0);
    CU_ASSERT(t.device_s >= 0);
    hc_job_destroy(job);

    TH_ASSERT_OK(hc_job_create(th_context(), "simpson", &job));
    TH_ASSERT_OK(hc_job_set_kv(job, "n=8192x8192x8192"));
    double t0 = hc_now();
    CU_ASSERT_EQUAL(hc_job_run(job, dev, 0), HC_ERR_DEVICE_MEMORY);
    CU_ASSERT(hc_now() - t0 < 1.0);
    CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "simpson"));
    hc_job_destroy(job);
  }
}

/* ------------------------------------------------------------- SciPy */

static const char *scipy_python(void) {
  static char path[1024];
  const char *env = getenv("HC_TEST_PYTHON");
  if (env && *env && access(env, X_OK) == 0) return env;
  snprintf(path, sizeof path, "%s/.venv/bin/python", HC_SOURCE_DIR);
  return access(path, X_OK) == 0 ? path : NULL;
}

static void write_npy_f(const char *path, hc_dtype_t dt, uint32_t rank, const int64_t *shape, const double *y,
                        size_t n) {
  if (dt == HC_F64) {
    TH_ASSERT_OK(hc_npy_write(path, dt, rank, shape, y));
    return;
  }
  float *f = malloc(n * sizeof *f);
  for (size_t e = 0; e < n; e++) f[e] = (float)y[e];
  TH_ASSERT_OK(hc_npy_write(path, dt, rank, shape, f));
  free(f);
}

/* Random shapes with random odd/even counts per axis, random spacing,
 * ranks 1-3, f64 and f32, through input= (spacing from hx= hy= hz=, from
 * h=, or from the .grid side file): equal to SciPy's nested simpson() to
 * 1e-12 relative. */
static void test_scipy(void) {
  const char *py = scipy_python();
  if (!py) {
    if (getenv("HC_SKIP_SCIPY") && !strcmp(getenv("HC_SKIP_SCIPY"), "1")) {
      th_skip("SciPy comparison: HC_SKIP_SCIPY=1");
      return;
    }
    CU_FAIL("no Python with SciPy >= 1.11: run python3 -m venv .venv && .venv/bin/pip install 'scipy>=1.11' numpy "
            "in the source tree, or set HC_TEST_PYTHON (HC_SKIP_SCIPY=1 skips this test)");
    fprintf(stderr, "test_scipy: no %s/.venv/bin/python and no HC_TEST_PYTHON\n", HC_SOURCE_DIR);
    return;
  }
  enum { NCASES = 16 };
  struct {
    char path[512], kv[3][64];
    hc_dtype_t dt;
    double scipy;
  } cases[NCASES];
  char cmd[16384];
  size_t len = (size_t)snprintf(cmd, sizeof cmd, "'%s' '%s/tests/workloads/simpson_scipy.py'", py, HC_SOURCE_DIR);
  for (int c = 0; c < NCASES; c++) {
    uint32_t rank = 1 + (uint32_t)(rnd() * 3);
    int64_t shape[3];
    double h[3];
    size_t n = 1;
    for (uint32_t d = 0; d < rank; d++) {
      shape[d] = 2 + (int64_t)(rnd() * 12);
      h[d] = 0.01 + 2 * rnd();
      n *= (size_t)shape[d];
    }
    if (c == NCASES - 2) rank = 1, shape[0] = 100001, n = 100001; /* long odd axis */
    if (c == NCASES - 1) rank = 3, shape[0] = 41, shape[1] = 40, shape[2] = 39, n = 41 * 40 * 39;
    cases[c].dt = (c % 3 == 2) ? HC_F32 : HC_F64;
    double *y = malloc(n * sizeof *y);
    for (size_t e = 0; e < n; e++) y[e] = 0.5 + rnd();
    snprintf(cases[c].path, sizeof cases[c].path, "%s/scipy_%d.npy", th_tmpdir(), c);
    write_npy_f(cases[c].path, cases[c].dt, rank, shape, y, n);
    free(y);
    memset(cases[c].kv, 0, sizeof cases[c].kv);
    int mode = c % 4;
    if (mode == 0) { /* spacing in the .grid side file, no parameter */
      char side[600], text[256];
      snprintf(side, sizeof side, "%.511s.grid", cases[c].path);
      int l = snprintf(text, sizeof text, "spacing");
      for (uint32_t d = 0; d < rank; d++) l += snprintf(text + l, sizeof text - (size_t)l, " %.17g", h[d]);
      snprintf(text + l, sizeof text - (size_t)l, "\n");
      FILE *fp = fopen(side, "w");
      CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
      fputs(text, fp);
      fclose(fp);
    } else if (mode == 1) { /* one spacing for all axes */
      for (uint32_t d = 1; d < rank; d++) h[d] = h[0];
      snprintf(cases[c].kv[0], sizeof cases[c].kv[0], "h=%.17g", h[0]);
    } else {
      static const char *const names[3] = {"hx", "hy", "hz"};
      for (uint32_t d = 0; d < rank; d++) snprintf(cases[c].kv[d], sizeof cases[c].kv[d], "%s=%.17g", names[d], h[d]);
    }
    len += (size_t)snprintf(cmd + len, sizeof cmd - len, " '%s' ", cases[c].path);
    for (uint32_t d = 0; d < rank; d++)
      len += (size_t)snprintf(cmd + len, sizeof cmd - len, "%s%.17g", d ? "," : "", h[d]);
  }
  char out[8192], err[4096];
  int rc = th_run(cmd, out, sizeof out, err, sizeof err);
  if (rc != 0) fprintf(stderr, "simpson_scipy.py failed (%d): %s\n", rc, err);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  char *p = out;
  for (int c = 0; c < NCASES; c++) {
    char *end;
    cases[c].scipy = strtod(p, &end);
    CU_ASSERT_FATAL(end != p);
    p = end;
  }
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    for (int c = 0; c < NCASES; c++)
      for (size_t v = 0; v < NVAR; v++) {
        /* Every variant on the cpu; the default elsewhere (keeps it quick). */
        if (v && strcmp(device_specs[d], "cpu") != 0) continue;
        char in[600], var[64];
        const char *kv[8] = {fmt(in, sizeof in, "input=%s", cases[c].path),
                             fmt(var, sizeof var, "variant=%s", variants[v])};
        int k = 2;
        for (int i = 0; i < 3; i++)
          if (cases[c].kv[i][0]) kv[k++] = cases[c].kv[i];
        kv[k] = NULL;
        double got = NAN;
        CU_ASSERT_EQUAL(run_simpson(dev, NULL, HC_RUN_VERIFY, &got, kv), HC_OK);
        const double tol = (cases[c].dt == HC_F32 && (v == 1 || v == 2)) ? 2e-7 : 1e-12;
        if (!(th_rel(got, cases[c].scipy) <= tol))
          fprintf(stderr, "scipy case %d (%s, %s, %s): %.17g vs SciPy %.17g\n", c, cases[c].path, variants[v],
                  hc_device_name(dev), got, cases[c].scipy);
        CU_ASSERT(th_rel(got, cases[c].scipy) <= tol);
      }
  }
}

/* ------------------------------------------------------------- bad inputs */

static void write_raw(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_EQUAL(fwrite(data, 1, n, f), n);
  fclose(f);
}

/* A .npy v1.0 file with this header dict and `data` bytes of zeros. */
static void write_npy_header(const char *path, const char *dict, size_t data) {
  char buf[4096];
  size_t dl = strlen(dict), total = (10 + dl + 1 + 63) / 64 * 64, hl = total - 10;
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)(hl & 0xff);
  buf[9] = (char)(hl >> 8);
  memcpy(buf + 10, dict, dl);
  memset(buf + 10 + dl, ' ', hl - dl - 1);
  buf[total - 1] = '\n';
  memset(buf + total, 0, data);
  write_raw(path, buf, total + data);
}

static int dir_is_empty(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 1; /* never created: nothing written either */
  int empty = 1;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
  closedir(d);
  return empty;
}

static void test_bad_inputs(void) {
  const char *tmp = th_tmpdir();
  char good[512], good2d[512], cplx[512], ints[512], five[512], four[512], csv[512], thin[512];
  snprintf(good, sizeof good, "%s/good.npy", tmp);
  snprintf(good2d, sizeof good2d, "%s/good2d.npy", tmp);
  snprintf(cplx, sizeof cplx, "%s/complex.npy", tmp);
  snprintf(ints, sizeof ints, "%s/ints.npy", tmp);
  snprintf(five, sizeof five, "%s/five.npy", tmp);
  snprintf(four, sizeof four, "%s/four.npy", tmp);
  snprintf(csv, sizeof csv, "%s/data.csv", tmp);
  snprintf(thin, sizeof thin, "%s/thin.npy", tmp);
  double zeros[3 * 4 * 5 * 2] = {0};
  const int64_t s345[3] = {3, 4, 5}, s2d[2] = {4, 5}, s4d[4] = {2, 2, 2, 2}, s15[2] = {1, 5};
  TH_ASSERT_OK(hc_npy_write(good, HC_F64, 3, s345, zeros));
  TH_ASSERT_OK(hc_npy_write(good2d, HC_F64, 2, s2d, zeros));
  TH_ASSERT_OK(hc_npy_write(cplx, HC_C128, 3, s345, zeros));
  TH_ASSERT_OK(hc_npy_write(four, HC_F64, 4, s4d, zeros));
  TH_ASSERT_OK(hc_npy_write(thin, HC_F64, 2, s15, zeros));
  write_npy_header(ints, "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 4), }", 48);
  write_npy_header(five, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2, 2, 2, 2), }", 256);
  write_raw(csv, "x,y\n1,2\n3,4\n", 12);
  static const struct {
    const char *fmt;  /* arguments; %s is replaced by a path */
    int file;         /* which path */
    const char *want; /* in the message */
  } cases[] = {
      {"input=%s/missing.npy", -1, "missing.npy"},
      {"input=%s", 0, "not a .npy file"},
      {"input=%s", 1, "c128"},
      {"input=%s", 2, "integer"},
      {"input=%s", 3, "axes"},
      {"input=%s", 4, "4-D"},
      {"input=%s", 5, "at least 2 samples"},
      {"input=%s h=0", 6, "h=0"},
      {"input=%s hx=-1", 6, "hx=-1"},
      {"input=%s hz=0.5", 7, "hz="},
      {"input=%s n=3x4x6", 6, "n=3x4x6"},
      {"input=%s dtype=f32", 6, "dtype=f32"},
      {"input=%s func=one", 6, "func=one"},
      {"func=one n=1x5", -2, "n=1x5"},
      {"func=one n=2x3x4x5", -2, "n=2x3x4x5"},
      {"func=one box=2:1", -2, "box=2:1"},
      {"func=one h=0.5", -2, "h="},
      {"variant=bogus", -2, "variant=bogus"},
  };
  const char *paths[] = {csv, cplx, ints, five, four, thin, good, good2d};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char args[1200], outdir[600], cmd[4096], err[8192];
    if (cases[c].file == -1)
      snprintf(args, sizeof args, cases[c].fmt, tmp);
    else if (cases[c].file == -2)
      snprintf(args, sizeof args, "%s", cases[c].fmt);
    else
      snprintf(args, sizeof args, cases[c].fmt, paths[cases[c].file]);
    snprintf(outdir, sizeof outdir, "%s/out%zu", tmp, c);
    snprintf(cmd, sizeof cmd, "'%s/bin/hcrun' --device=cpu --workload=simpson %s --output='%s'", th_build_dir(), args,
             outdir);
    int rc = th_run(cmd, NULL, 0, err, sizeof err);
    if (rc != 2 || !strstr(err, cases[c].want))
      fprintf(stderr, "case %zu: %s -> exit %d, stderr: %s (wanted exit 2 and '%s')\n", c, args, rc, err,
              cases[c].want);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[c].want));
    CU_ASSERT(dir_is_empty(outdir));
  }
  /* And a good file does run and write its output. */
  char cmd[2048], outdir[600], out[4096];
  snprintf(outdir, sizeof outdir, "%s/out_good", tmp);
  snprintf(cmd, sizeof cmd, "'%s/bin/hcrun' --device=cpu --workload=simpson input=%s h=0.5 --output='%s'",
           th_build_dir(), good, outdir);
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, NULL, 0), 0);
  CU_ASSERT(!dir_is_empty(outdir));
}

/* The cpu backend's sums have SSE2, AVX2 and AVX-512 versions (chosen by
 * the CPU, capped by the isa= parameter): each gives the same integral. */
static double hcrun_integral_on(const char *device, const char *env, const char *args) {
  char cmd[2048], out[65536];
  snprintf(cmd, sizeof cmd, "%s '%s/bin/hcrun' --device=%s --workload=simpson --json %s", env, th_build_dir(), device,
           args);
  if (th_run(cmd, out, sizeof out, NULL, 0) != 0) return NAN;
  const char *p = strstr(out, "\"integral\"");
  p = p ? strstr(p, "\"value\"") : NULL;
  p = p ? strchr(p, ':') : NULL;
  return p ? strtod(p + 1, NULL) : NAN;
}

static double hcrun_integral(const char *env, const char *args) { return hcrun_integral_on("cpu", env, args); }

/* The fused source kernel reads f64 as double2 vectors or as pairs of them
 * (SIMPSON_PAIR, CUDA's default): both give the cpu's integral, with tails
 * that fill no vector and vectors that wrap into the next row. */
static void test_vector_widths(void) {
  static const char *const args[] = {"func=gauss n=9x7x4099 dtype=f64 box=-1:2", "func=sinprod n=5x3x7 dtype=f64",
                                     "func=poly n=100003 dtype=f64"};
  static const char *const sources[] = {"opencl", "cuda"};
  for (size_t a = 0; a < sizeof args / sizeof args[0]; a++) {
    const double ref = hcrun_integral("", args[a]);
    CU_ASSERT(isfinite(ref));
    for (size_t d = 0; d < 2; d++) {
      hc_device_t *dev = th_device(sources[d]);
      if (!dev || !hc_device_info(dev)->fp64) continue;
      for (int pair = 0; pair < 2; pair++) {
        const double v = hcrun_integral_on(
            sources[d], pair ? "HC_KERNEL_OPTIONS=-DSIMPSON_PAIR=1" : "HC_KERNEL_OPTIONS=-DSIMPSON_PAIR=0", args[a]);
        if (!(th_rel(v, ref) <= 1e-13))
          fprintf(stderr, "%s pair=%d %s: %.17g vs %.17g\n", sources[d], pair, args[a], v, ref);
        CU_ASSERT(th_rel(v, ref) <= 1e-13);
      }
    }
  }
}

static void test_host_isa_paths(void) {
  static const char *const args[] = {"func=sinprod n=37x41x1001 dtype=f32 box=-0.3:1.2",
                                     "func=gauss n=9x2x4099 dtype=f64 box=-1:2", "func=poly n=100003 dtype=f32",
                                     "func=gauss n=9x2x4099 dtype=f32 variant=precomputed"};
  for (size_t a = 0; a < sizeof args / sizeof args[0]; a++) {
    char with[256];
    snprintf(with, sizeof with, "isa=sse2 %s", args[a]);
    const double base = hcrun_integral("", with);
    CU_ASSERT(isfinite(base));
    for (int i = 0; i < 3; i++) {
      snprintf(with, sizeof with, "isa=%s %s", i == 0 ? "avx2" : i == 1 ? "avx512" : "auto", args[a]);
      const double v = hcrun_integral("", with);
      CU_ASSERT(th_rel(v, base) <= 1e-13);
    }
  }
  /* the run's notes name the instructions used; a cap is a parameter, so
   * an unknown one is a usage error naming it */
  char cmd[1024], out[65536];
  snprintf(cmd, sizeof cmd, "'%s/bin/hcrun' --device=cpu --workload=simpson isa=sse2 func=poly n=1001", th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, NULL, 0), 0);
  CU_ASSERT(strstr(out, "sse2 sums") != NULL);
  snprintf(cmd, sizeof cmd, "'%s/bin/hcrun' --device=cpu --workload=simpson isa=neon func=poly n=1001", th_build_dir());
  char err[4096];
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 2);
  CU_ASSERT(strstr(err, "isa=neon") != NULL);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("simpson", NULL, NULL);
  CU_ADD_TEST(s, test_volume);
  CU_ADD_TEST(s, test_cubic_exact);
  CU_ADD_TEST(s, test_axis_parities);
  CU_ADD_TEST(s, test_variants_agree);
  CU_ADD_TEST(s, test_ranks);
  CU_ADD_TEST(s, test_repeat_and_port_across_devices);
  CU_ADD_TEST(s, test_metrics_and_memory);
  CU_ADD_TEST(s, test_host_isa_paths);
  CU_ADD_TEST(s, test_vector_widths);
  CU_ADD_TEST(s, test_scipy);
  CU_ADD_TEST(s, test_bad_inputs);
}

TH_MAIN(register_tests)
