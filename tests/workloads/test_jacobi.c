/* Tests of the jacobi workload (seed 001) on every device present: the
 * O(h²) convergence against the analytic solution, the Jacobi eigenmode
 * decay λⁿ, agreement of every variant and block shape, the stopping rule,
 * inputs and outputs, and the exit codes of bad inputs through hcrun. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

static const char *const device_specs[] = {"cpu", "opencl", "cuda"};
#define NDEV (sizeof device_specs / sizeof device_specs[0])

/* Runs jacobi on dev with "key=value" settings (NULL-terminated); returns
 * the job (caller destroys) or NULL. A failure fails the test, except, with
 * may_refuse, a block shape that the device's kernel cannot take (8x8x8 is
 * 512 work-items; NVIDIA's OpenCL allows 256 for these kernels): that
 * refusal, and only that one, is a skip with the workload's message. */
static hc_job_t *run_or_skip(hc_device_t *dev, const char *const *kv, uint32_t flags, int may_refuse) {
  hc_job_t *job = NULL;
  TH_ASSERT_OK(hc_job_create(th_context(), "jacobi", &job));
  for (; *kv; kv++) {
    hc_status_t st = hc_job_set_kv(job, *kv);
    if (st != HC_OK) fprintf(stderr, "%s: %s\n", *kv, hc_last_error());
    CU_ASSERT_EQUAL(st, HC_OK);
  }
  hc_status_t st = hc_job_run(job, dev, flags);
  if (st == HC_OK) return job;
  if (may_refuse && st == HC_ERR_PARAM && strstr(hc_last_error(), "allows at most")) {
    printf("\n    skipped on %s: %s", hc_device_name(dev), hc_last_error());
  } else {
    fprintf(stderr, "jacobi on %s: %s\n", hc_device_name(dev), hc_last_error());
    CU_FAIL("jacobi run failed");
  }
  hc_job_destroy(job);
  return NULL;
}

static hc_job_t *run(hc_device_t *dev, const char *const *kv, uint32_t flags) { return run_or_skip(dev, kv, flags, 0); }

static double metric(const hc_job_t *job, const char *name) {
  double v = NAN;
  CU_ASSERT_EQUAL(hc_job_metric_find(job, name, &v), HC_OK);
  return v;
}

/* A field's values as doubles (malloc'd). */
static double *values(const hc_field_t *f) {
  size_t n = hc_field_count(f);
  void *raw = malloc(hc_field_bytes(f));
  double *out = malloc(n * sizeof *out);
  if (!raw || !out || hc_field_read(f, raw) != HC_OK) {
    free(raw);
    free(out);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) out[i] = hc_field_dtype(f) == HC_F64 ? ((double *)raw)[i] : ((float *)raw)[i];
  free(raw);
  return out;
}

static double *output(const hc_job_t *job, const char *port) {
  hc_field_t *f = hc_job_output(job, port);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  double *v = values(f);
  CU_ASSERT_PTR_NOT_NULL_FATAL(v);
  return v;
}

/* Grid of a field as three axes (2-D: n[0] = 1). */
static void grid_of(const hc_field_t *f, int64_t n[3]) {
  uint32_t r = hc_field_rank(f);
  n[0] = n[1] = n[2] = 1;
  for (uint32_t d = 0; d < r; d++) n[3 - r + d] = hc_field_shape(f)[d];
}

/* Π sin(k_d π x_d) at a grid point. */
static double sine_mode(const int64_t n[3], int dim, const int k[3], int64_t i, int64_t j, int64_t l) {
  int64_t idx[3] = {i, j, l};
  double v = 1;
  for (int a = 3 - dim; a < 3; a++) v *= sin(k[a] * M_PI * (double)idx[a] / (double)(n[a] - 1));
  return v;
}

static int has_fp64(hc_device_t *dev) { return hc_device_info(dev)->fp64 != 0; }

/* ------------------------------------------------------------ convergence */

/* Max error against u = Π sin(π x_d) of a converged solve with n points per
 * axis; also checks the workload's own error_max against it. */
static double converged_error(hc_device_t *dev, int dim, int n, const char *dtype, int64_t iters) {
  char nv[32], dv[16], it[32];
  snprintf(nv, sizeof nv, "n=%d", n);
  snprintf(dv, sizeof dv, "dim=%d", dim);
  snprintf(it, sizeof it, "iters=%lld", (long long)iters);
  int f64 = !strcmp(dtype, "f64");
  const char *kv[] = {nv, dv, f64 ? "dtype=f64" : "dtype=f32", it, f64 ? "tol=1e-11" : "tol=0", "check=50", NULL};
  hc_job_t *job = run(dev, kv, 0);
  if (!job) return NAN;
  hc_field_t *u = hc_job_output(job, "u");
  double *v = output(job, "u");
  int64_t g[3];
  grid_of(u, g);
  static const int k1[3] = {1, 1, 1};
  double worst = 0;
  for (int64_t i = 0; i < g[0]; i++)
    for (int64_t j = 0; j < g[1]; j++)
      for (int64_t l = 0; l < g[2]; l++)
        worst = fmax(worst, fabs(v[(i * g[1] + j) * g[2] + l] - sine_mode(g, dim, k1, i, j, l)));
  CU_ASSERT(th_rel(metric(job, "error_max"), worst) < 1e-3);
  if (f64) CU_ASSERT(metric(job, "residual") <= 1e-11);
  free(v);
  hc_job_destroy(job);
  return worst;
}

static void test_convergence_order(void) {
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    for (int f64 = 0; f64 < 2; f64++) {
      if (f64 && !has_fp64(dev)) continue;
      const char *dt = f64 ? "f64" : "f32";
      /* 2-D n = 9, 17, 33 (h = 1/8 .. 1/32); 3-D n = 9, 17. f32 runs a
       * fixed number of sweeps that converges to well below the
       * discretisation error (f32 rounding caps the residual). */
      double e2[3], e3[2];
      static const int n2[3] = {9, 17, 33};
      static const int64_t it2[3] = {300, 1200, 4800}; /* λ₁ⁿ < 1e-10 */
      for (int i = 0; i < 3; i++) e2[i] = converged_error(dev, 2, n2[i], dt, f64 ? 100000 : it2[i]);
      e3[0] = converged_error(dev, 3, 9, dt, f64 ? 100000 : 300);
      e3[1] = converged_error(dev, 3, 17, dt, f64 ? 100000 : 1200);
      double lo = f64 ? 3.85 : 3.6, hi = f64 ? 4.15 : 4.4;
      for (int i = 0; i < 2; i++) {
        double r = e2[i] / e2[i + 1];
        if (!(r > lo && r < hi))
          fprintf(stderr, "%s 2-D %s: error ratio %.4f (n=%d -> %d)\n", device_specs[d], dt, r, n2[i], n2[i + 1]);
        CU_ASSERT(r > lo && r < hi);
      }
      double r3 = e3[0] / e3[1];
      if (!(r3 > lo && r3 < hi + 0.05)) fprintf(stderr, "%s 3-D %s: error ratio %.4f\n", device_specs[d], dt, r3);
      CU_ASSERT(r3 > lo && r3 < hi + 0.05);
    }
  }
}

/* -------------------------------------------------------------- eigenmode */

/* Starting from a discrete Jacobi eigenvector with f = 0, n sweeps scale it
 * by exactly λⁿ, λ = Σ w_d cos(k_d π h_d) / Σ w_d, w_d = 1/h_d². */
static void eigen_case(hc_device_t *dev, const char *grid, const char *mode, const char *dtype, int sweeps) {
  char nv[64], mv[64], it[32], dt[16];
  snprintf(nv, sizeof nv, "n=%s", grid);
  snprintf(mv, sizeof mv, "mode=%s", mode);
  snprintf(it, sizeof it, "iters=%d", sweeps);
  snprintf(dt, sizeof dt, "dtype=%s", dtype);
  const char *kv[] = {nv, mv, it, dt, "f=zero", "init=eigen", NULL};
  hc_job_t *job = run(dev, kv, HC_RUN_VERIFY);
  if (!job) return;
  hc_field_t *u = hc_job_output(job, "u");
  double *v = output(job, "u");
  int64_t g[3];
  grid_of(u, g);
  int dim = (int)hc_field_rank(u);
  int k[3] = {1, 1, 1};
  /* mode "a,b[,c]" or "a" */
  {
    int kk[3], c = sscanf(mode, "%d,%d,%d", &kk[0], &kk[1], &kk[2]);
    for (int d = 0; d < dim; d++) k[3 - dim + d] = c == 1 ? kk[0] : kk[d];
  }
  double num = 0, den = 0;
  for (int a = 3 - dim; a < 3; a++) {
    double h = 1.0 / (double)(g[a] - 1), w = 1 / (h * h);
    num += w * cos(k[a] * M_PI * h);
    den += w;
  }
  double lam = num / den, want = pow(lam, sweeps);
  double uu = 0, u0u0 = 0, worst = 0;
  for (int64_t i = 0; i < g[0]; i++)
    for (int64_t j = 0; j < g[1]; j++)
      for (int64_t l = 0; l < g[2]; l++) {
        double e = sine_mode(g, dim, k, i, j, l), x = v[(i * g[1] + j) * g[2] + l];
        uu += x * e;
        u0u0 += e * e;
        worst = fmax(worst, fabs(x - want * e));
      }
  double amp = uu / u0u0;
  int f64 = !strcmp(dtype, "f64");
  /* f64: rounding of n sweeps; f32: also the f32 weights perturb λ. */
  double tol = f64 ? 1e-13 * sweeps : 2e-7 * sweeps;
  if (fabs(amp - want) > tol || worst > tol)
    fprintf(stderr, "%s eigen %s k=%s %s: amplitude %.17g, lambda^n %.17g, pointwise %.3g\n", hc_device_name(dev), grid,
            mode, dtype, amp, want, worst);
  CU_ASSERT(fabs(amp - want) <= tol);
  CU_ASSERT(worst <= tol);
  CU_ASSERT(fabs(metric(job, "amplitude") - want) <= tol);
  CU_ASSERT(th_rel(metric(job, "lambda"), lam) < 1e-14);
  const char *msg;
  CU_ASSERT_EQUAL(hc_job_verified(job, &msg), 1);
  free(v);
  hc_job_destroy(job);
}

static void test_eigenmode(void) {
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    for (int f64 = 0; f64 < 2; f64++) {
      if (f64 && !has_fp64(dev)) continue;
      const char *dt = f64 ? "f64" : "f32";
      eigen_case(dev, "33", "1", dt, 40);
      eigen_case(dev, "29x41", "3,2", dt, 25); /* non-square, unequal h */
      eigen_case(dev, "13x17x21", "2,1,3", dt, 30);
      eigen_case(dev, "18x16x20", "1", dt, 16); /* even extents */
    }
  }
}

/* ---------------------------------------------------- variants and blocks */

/* Every variant and block shape gives the same field to rounding, on grids
 * the blocks do not divide, for stored and computed f. */
static void compare_runs(hc_device_t *dev, const char *grid, const char *dtype, const char *const *blocks,
                         const char *fmode) {
  char nv[64], dt[16], fm[32];
  snprintf(nv, sizeof nv, "n=%s", grid);
  snprintf(dt, sizeof dt, "dtype=%s", dtype);
  snprintf(fm, sizeof fm, "f_mode=%s", fmode);
  const char *kv0[] = {nv, dt, fm, "f=gauss", "iters=37", "variant=naive", NULL};
  hc_job_t *ref = run(dev, kv0, 0);
  if (!ref) return;
  double *r = output(ref, "u");
  size_t count = hc_field_count(hc_job_output(ref, "u"));
  double big = 0;
  for (size_t i = 0; i < count; i++) big = fmax(big, fabs(r[i]));
  CU_ASSERT(big > 0);
  double tol = (!strcmp(dtype, "f64") ? 1e-13 : 1e-5) * big;
  for (int variant = 0; variant < 2; variant++)
    for (const char *const *b = blocks; *b; b++) {
      /* "8x32" or "8x32 rows=3 depth=1": a block and up to two more
       * settings (the unused slots repeat iters=37) */
      char bv[64], extra[2][32] = {"iters=37", "iters=37"};
      snprintf(bv, sizeof bv, "block=%s", *b);
      char *sp = strchr(bv, ' ');
      for (int e = 0; sp && e < 2; e++) {
        *sp++ = '\0';
        char *next = strchr(sp, ' ');
        snprintf(extra[e], sizeof extra[e], "%.*s", next ? (int)(next - sp) : (int)strlen(sp), sp);
        sp = next;
      }
      const char *kv[] = {nv, dt,       fm,       "f=gauss", "iters=37", variant ? "variant=tiled" : "variant=naive",
                          bv, extra[0], extra[1], NULL};
      hc_job_t *job = run_or_skip(dev, kv, 0, 1);
      if (!job) continue;
      double *u = output(job, "u");
      double worst = 0;
      for (size_t i = 0; i < count; i++) worst = fmax(worst, fabs(u[i] - r[i]));
      if (worst > tol)
        fprintf(stderr, "%s %s %s %s block %s: differs by %.3g (tolerance %.3g)\n", hc_device_name(dev), grid, dtype,
                variant ? "tiled" : "naive", *b, worst, tol);
      CU_ASSERT(worst <= tol);
      free(u);
      hc_job_destroy(job);
    }
  free(r);
  hc_job_destroy(ref);
}

static void test_variants_agree(void) {
  /* The paper's shapes, shapes that divide nothing, marching tiles (a 2-D
   * block in 3-D); each tiled shape is one more kernel build. */
  static const char *const b2[] = {"8x8", "16x16", "5x7", NULL};
  static const char *const b2short[] = {"3x5", NULL};
  static const char *const b3[] = {"8x8x8", "3x5x7", "8x32", "5x6 depth=1", "4x8 depth=4", NULL};
  static const char *const b3short[] = {"4x16", NULL};
  /* A deep grid: the marching kernel cuts the slowest axis into chunks. */
  static const char *const b3deep[] = {"8x32", "4x8 depth=3", NULL};
  static const char *const b3f64[] = {"4x4x4", NULL};
  /* Marching items of 1 to 8 rows: tiles of block rows x rows rows that
   * divide neither 43 interior rows nor 27 columns, one-row blocks (every
   * halo point loaded by a third share) and all depths. */
  static const char *const rows_computed[] = {
      "2x16 rows=1",        "2x16 rows=2",        "4x8 rows=3", "1x32 rows=4 depth=1",
      "3x8 rows=3 depth=3", "2x8 rows=8 depth=4", NULL};
  static const char *const rows_stored[] = {"2x16 rows=3", "1x16 rows=2 depth=1", "4x8 rows=4", NULL};
  static const char *const rows_f64_computed[] = {"2x16 rows=3", "1x32 rows=4", NULL};
  static const char *const rows_f64_stored[] = {"2x8 rows=2 depth=1", "4x8 rows=1", NULL};
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    compare_runs(dev, "37x29", "f32", b2, "computed");
    compare_runs(dev, "19x23x21", "f32", b3, "stored");
    compare_runs(dev, "19x23x21", "f32", b3short, "computed");
    compare_runs(dev, "70x12x10", "f32", b3deep, "stored");
    compare_runs(dev, "37x45x29", "f32", rows_computed, "computed");
    compare_runs(dev, "37x45x29", "f32", rows_stored, "stored");
    if (has_fp64(dev)) {
      compare_runs(dev, "37x29", "f64", b2short, "stored");
      compare_runs(dev, "19x23x21", "f64", b3f64, "computed");
      compare_runs(dev, "37x45x29", "f64", rows_f64_computed, "computed");
      compare_runs(dev, "37x45x29", "f64", rows_f64_stored, "stored");
    }
  }
}

/* Every device gives the cpu's field to rounding. */
static void test_devices_agree(void) {
  hc_device_t *cpu = th_device("cpu");
  if (!cpu) return;
  const char *kv[] = {"n=21x26x23", "f=point", "iters=50", "dtype=f64", NULL};
  hc_job_t *ref = run(cpu, kv, 0);
  if (!ref) return;
  double *r = output(ref, "u");
  size_t count = hc_field_count(hc_job_output(ref, "u"));
  for (size_t d = 1; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev || !has_fp64(dev)) continue;
    hc_job_t *job = run(dev, kv, 0);
    if (!job) continue;
    double *u = output(job, "u"), worst = 0, big = 0;
    for (size_t i = 0; i < count; i++) worst = fmax(worst, fabs(u[i] - r[i])), big = fmax(big, fabs(r[i]));
    CU_ASSERT(worst <= 1e-13 * big);
    free(u);
    hc_job_destroy(job);
  }
  free(r);
  hc_job_destroy(ref);
}

/* At the paper's 128^2, stopped by the tolerance: every device takes the
 * same number of sweeps as the cpu and gives its field to rounding. */
static void test_paper_size_devices_agree(void) {
  hc_device_t *cpu = th_device("cpu");
  if (!cpu) return;
  const char *kv[] = {"n=128", "dtype=f64", "tol=1e-2", "check=100", "iters=100000", NULL};
  hc_job_t *ref = run(cpu, kv, 0);
  if (!ref) return;
  double *r = output(ref, "u");
  size_t count = hc_field_count(hc_job_output(ref, "u"));
  for (size_t d = 1; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev || !has_fp64(dev)) continue;
    hc_job_t *job = run(dev, kv, 0);
    if (!job) continue;
    CU_ASSERT_EQUAL(metric(job, "sweeps"), metric(ref, "sweeps"));
    double *u = output(job, "u"), worst = 0, big = 0;
    for (size_t i = 0; i < count; i++) worst = fmax(worst, fabs(u[i] - r[i])), big = fmax(big, fabs(r[i]));
    if (worst > 1e-12 * big) fprintf(stderr, "%s vs cpu at 128^2: %.3g > 1e-12 x %.3g\n", device_specs[d], worst, big);
    CU_ASSERT(worst <= 1e-12 * big);
    free(u);
    hc_job_destroy(job);
  }
  free(r);
  hc_job_destroy(ref);
}

/* The verification bound stays meaningful on large grids: the rounding
 * estimate grows with the condition number (8 eps 1650 = 1.6e-3 relative
 * at 128^2 in f32), but the bound is at most 1e-3 of max |u| and printed. */
static void test_verify_bound_capped(void) {
  hc_device_t *cpu = th_device("cpu");
  if (!cpu) return;
  const char *kv[] = {"n=128", "iters=5000", NULL};
  hc_job_t *job = run(cpu, kv, HC_RUN_VERIFY);
  if (!job) return;
  const char *msg = NULL;
  CU_ASSERT_EQUAL(hc_job_verified(job, &msg), 1);
  const char *b = msg ? strstr(msg, "(bound ") : NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  double *u = output(job, "u"), big = 0;
  for (size_t i = 0; i < hc_field_count(hc_job_output(job, "u")); i++) big = fmax(big, fabs(u[i]));
  double bound = strtod(b + 7, NULL);
  CU_ASSERT(bound > 0 && bound <= 1e-3 * big * 1.01 + 1e-6);
  free(u);
  hc_job_destroy(job);
}

/* ------------------------------------------ two sweeps per pass (host) */

/* The host kernel's two sweeps per pass give the single sweep's field bit
 * for bit, with plain and with streaming stores: 2-D and 3-D, f computed
 * and stored, f32 and f64, odd sweep counts, residual checks between the
 * pairs, blocks of one row or one plane, blocks that divide nothing, and
 * more groups than threads. */
static void test_two_sweeps_per_pass(void) {
  static const char *const cases[] = {"n=40x37x33 f=gauss iters=9 block=3x5x31",
                                      "n=40x37x33 f=gauss iters=7 block=1x1x31 dtype=f64 f_mode=stored",
                                      "n=30x41x17 f=gauss iters=12 check=5 tol=1e-13 block=4x7x15",
                                      "n=50x37 f=point iters=11 block=3x35",
                                      "n=50x37 f=sin iters=10 block=1x35 dtype=f64 f_mode=stored",
                                      "n=64x80 f=gauss iters=13 check=4 tol=1e-13 block=9x78",
                                      NULL};
  /* the reference, then the two-sweep kernel with each kind of store */
  static const char *const runs[3][2] = {
      {"sweeps_per_pass=1", "1 sweep per pass"},
      {"sweeps_per_pass=2 stores=plain", "2 sweeps per pass over memory, plain"},
      {"sweeps_per_pass=2 stores=streaming", "2 sweeps per pass over memory, streaming"}};
  hc_device_t *dev = th_device("cpu");
  if (!dev) return;
  for (const char *const *c = cases; *c; c++) {
    double *u[3] = {NULL, NULL, NULL};
    double sweeps[3] = {0, 0, 0};
    size_t count = 0;
    for (int m = 0; m < 3; m++) {
      char buf[256];
      const char *kv[16];
      int n = 0;
      snprintf(buf, sizeof buf, "%s %s", *c, runs[m][0]);
      for (char *t = strtok(buf, " "); t && n < 15; t = strtok(NULL, " ")) kv[n++] = t;
      kv[n] = NULL;
      hc_job_t *job = run(dev, kv, 0);
      if (!job) break;
      CU_ASSERT_PTR_NOT_NULL(strstr(hc_job_notes(job), runs[m][1]));
      CU_ASSERT_EQUAL(metric(job, "sweeps_per_pass"), m ? 2 : 1);
      u[m] = output(job, "u");
      count = hc_field_count(hc_job_output(job, "u"));
      sweeps[m] = metric(job, "sweeps");
      hc_job_destroy(job);
    }
    for (int m = 1; m < 3; m++) {
      if (!u[0] || !u[m]) continue;
      CU_ASSERT_EQUAL(sweeps[0], sweeps[m]);
      size_t differ = 0;
      for (size_t i = 0; i < count; i++) differ += u[0][i] != u[m][i];
      if (differ) fprintf(stderr, "%s %s: %zu of %zu points differ\n", *c, runs[m][0], differ, count);
      CU_ASSERT_EQUAL(differ, 0);
    }
    for (int m = 0; m < 3; m++) free(u[m]);
  }
}

/* ------------------------------------------------- stopping and outputs */

/* f + Δ_h u at the interior, computed here; returns ||r|| / ||f|| for f = sin. */
static double host_residual(const double *u, const int64_t g[3], int dim, double *rfield) {
  double h[3], w[3] = {0, 0, 0}, r2 = 0, f2 = 0;
  for (int a = 0; a < 3; a++)
    h[a] = a >= 3 - dim ? 1.0 / (double)(g[a] - 1) : 0, w[a] = a >= 3 - dim ? 1 / (h[a] * h[a]) : 0;
  static const int k1[3] = {1, 1, 1};
  const int64_t s1 = g[2], s0 = g[1] * g[2];
  int64_t i0 = dim == 3 ? 1 : 0, i1 = dim == 3 ? g[0] - 1 : 1;
  for (int64_t i = i0; i < i1; i++)
    for (int64_t j = 1; j < g[1] - 1; j++)
      for (int64_t l = 1; l < g[2] - 1; l++) {
        int64_t c = i * s0 + j * s1 + l;
        double f = dim * M_PI * M_PI * sine_mode(g, dim, k1, i, j, l);
        double lap = w[2] * (u[c - 1] + u[c + 1] - 2 * u[c]) + w[1] * (u[c - s1] + u[c + s1] - 2 * u[c]);
        if (dim == 3) lap += w[0] * (u[c - s0] + u[c + s0] - 2 * u[c]);
        if (rfield) rfield[c] = f + lap;
        r2 += (f + lap) * (f + lap);
        f2 += f * f;
      }
  return sqrt(r2 / f2);
}

static void test_tolerance_stops(void) {
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    const char *kv[] = {"n=25x31", "tol=1e-3", "check=10", "iters=100000", "residual=true", NULL};
    hc_job_t *job = run(dev, kv, 0);
    if (!job) continue;
    double sweeps = metric(job, "sweeps"), res = metric(job, "residual");
    CU_ASSERT(sweeps < 100000 && fmod(sweeps, 10) == 0 && sweeps > 0);
    CU_ASSERT(res <= 1e-3);
    hc_field_t *u = hc_job_output(job, "u");
    int64_t g[3];
    grid_of(u, g);
    double *v = output(job, "u"), *rf = output(job, "residual");
    double *mine = calloc(hc_field_count(u), sizeof *mine);
    double res_host = host_residual(v, g, 2, mine);
    CU_ASSERT(th_rel(res, res_host) < 1e-4);
    /* The check 10 sweeps earlier had not converged. */
    CU_ASSERT(res > 1e-3 * 0.5);
    double worst = 0, big = 0;
    for (size_t i = 0; i < hc_field_count(u); i++)
      worst = fmax(worst, fabs(rf[i] - mine[i])), big = fmax(big, fabs(mine[i]));
    CU_ASSERT(worst <= 1e-3 * big + 1e-6);
    /* The output field carries the grid. */
    CU_ASSERT_EQUAL(hc_field_rank(u), 2);
    CU_ASSERT_EQUAL(hc_field_shape(u)[0], 25);
    CU_ASSERT_EQUAL(hc_field_shape(u)[1], 31);
    CU_ASSERT_EQUAL(hc_field_dtype(u), HC_F32);
    CU_ASSERT(fabs(hc_field_spacing(u)[0] - 1.0 / 24) < 1e-15);
    CU_ASSERT(fabs(hc_field_spacing(u)[1] - 1.0 / 30) < 1e-15);
    CU_ASSERT(metric(job, "glups") > 0);
    CU_ASSERT_EQUAL(metric(job, "bytes_per_update"), 8);
    free(mine);
    free(v);
    free(rf);
    hc_job_destroy(job);
  }
}

/* Warm start: 30 sweeps, then 20 more from that through the u0 port, equal
 * 50 sweeps straight; f through the input port equals the built-in f. */
static void test_inputs(void) {
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    const char *kv50[] = {"n=17x19x15", "iters=50", "f_mode=stored", NULL};
    const char *kv30[] = {"n=17x19x15", "iters=30", "f_mode=stored", NULL};
    hc_job_t *a = run(dev, kv50, 0), *b = run(dev, kv30, 0);
    if (!a || !b) {
      hc_job_destroy(a);
      hc_job_destroy(b);
      continue;
    }
    hc_job_t *c = NULL;
    TH_ASSERT_OK(hc_job_create(th_context(), "jacobi", &c));
    TH_ASSERT_OK(hc_job_set(c, "iters", "20"));
    TH_ASSERT_OK(hc_job_set(c, "f_mode", "stored"));
    TH_ASSERT_OK(hc_job_set_input(c, "u0", hc_job_output(b, "u")));
    TH_ASSERT_OK(hc_job_run(c, dev, 0));
    double *ua = output(a, "u"), *uc = output(c, "u");
    size_t n = hc_field_count(hc_job_output(a, "u"));
    CU_ASSERT_EQUAL(hc_field_count(hc_job_output(c, "u")), n);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(ua[i] - uc[i]));
    CU_ASSERT(worst == 0);
    /* f as a field: the grid comes from its shape. */
    hc_job_t *e = NULL;
    hc_field_t *f = NULL;
    int64_t shape[3] = {17, 19, 15};
    TH_ASSERT_OK(hc_field_create(dev, HC_F64, 3, shape, &f));
    double *fv = malloc(17 * 19 * 15 * sizeof *fv);
    int64_t g[3] = {17, 19, 15};
    static const int k1[3] = {1, 1, 1};
    for (int64_t i = 0; i < 17; i++)
      for (int64_t j = 0; j < 19; j++)
        for (int64_t l = 0; l < 15; l++) fv[(i * 19 + j) * 15 + l] = 3 * M_PI * M_PI * sine_mode(g, 3, k1, i, j, l);
    TH_ASSERT_OK(hc_field_write(f, fv));
    TH_ASSERT_OK(hc_job_create(th_context(), "jacobi", &e));
    TH_ASSERT_OK(hc_job_set(e, "iters", "50"));
    TH_ASSERT_OK(hc_job_set_input(e, "f", f));
    TH_ASSERT_OK(hc_job_run(e, dev, 0)); /* f64 field into an f32 run: converted */
    double *ue = output(e, "u");
    worst = 0;
    double big = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(ua[i] - ue[i])), big = fmax(big, fabs(ua[i]));
    CU_ASSERT(worst <= 1e-5 * big);
    free(fv);
    free(ua);
    free(uc);
    free(ue);
    hc_field_destroy(f);
    hc_job_destroy(a);
    hc_job_destroy(b);
    hc_job_destroy(c);
    hc_job_destroy(e);
  }
}

/* --verify where no closed form exists: host reference sweeps. */
static void test_verify_reference(void) {
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    const char *kv[] = {"n=23x20", "f=gauss", "iters=60", "init=eigen", "mode=2", NULL};
    hc_job_t *job = run(dev, kv, HC_RUN_VERIFY);
    if (!job) continue;
    const char *msg;
    CU_ASSERT_EQUAL(hc_job_verified(job, &msg), 1);
    CU_ASSERT(strstr(msg, "host sweeps") != NULL);
    hc_job_destroy(job);
  }
}

/* ------------------------------------------------------------ bad inputs */

static void test_bad_inputs(void) {
  /* A .npy f of the wrong shape. */
  char bad[512], args[1024];
  snprintf(bad, sizeof bad, "%s/f_10x12.npy", th_tmpdir());
  static double zeros[120];
  int64_t shape[2] = {10, 12};
  TH_ASSERT_OK(hc_npy_write(bad, HC_F64, 2, shape, zeros));
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    const char *id = hc_device_name(dev);
    th_expect_usage_error("jacobi", id, "n=2", "n=2");
    th_expect_usage_error("jacobi", id, "n=16x2", "n");
    th_expect_usage_error("jacobi", id, "dim=3 n=8x8", "dim=3");
    th_expect_usage_error("jacobi", id, "tol=-1", "tol=-1");
    th_expect_usage_error("jacobi", id, "block=2048x2048", "block");
    th_expect_usage_error("jacobi", id, "n=9x9x9 block=2x2x2x2", "block");
    th_expect_usage_error("jacobi", id, "dim=3 rows=0", "rows=0");
    th_expect_usage_error("jacobi", id, "dim=3 rows=9", "rows=9");
    th_expect_usage_error("jacobi", id, "init=eigen mode=0", "mode=0");
    th_expect_usage_error("jacobi", id, "init=eigen mode=9 n=9", "mode=9");
    th_expect_usage_error("jacobi", id, "f=nosuch.npy", "f=nosuch.npy");
    th_expect_usage_error("jacobi", id, "f=cosine", "f=cosine");
    th_expect_usage_error("jacobi", id, "f=sin f_mode=computed init=nosuch", "init=nosuch");
    th_expect_usage_error("jacobi", id, "sweeps_per_pass=3", "sweeps_per_pass=3");
    th_expect_usage_error("jacobi", id, "variant=naive sweeps_per_pass=2", "sweeps_per_pass=2");
    th_expect_usage_error("jacobi", id, "stores=streaming sweeps_per_pass=1", "stores=streaming");
    th_expect_usage_error("jacobi", id, "stores=fast", "stores=fast");
    if (hc_device_info(dev)->languages & HC_LANG_BIT(HC_LANG_HOST)) {
      th_expect_usage_error("jacobi", id, "dim=3 n=20 block=4x8x16 sweeps_per_pass=2", "whole rows");
    } else {
      th_expect_usage_error("jacobi", id, "sweeps_per_pass=2", "host kernel");
      th_expect_usage_error("jacobi", id, "stores=streaming", "stores=streaming");
    }
    snprintf(args, sizeof args, "n=12x10 f=%s", bad);
    th_expect_usage_error("jacobi", id, args, "does not match the grid");
    snprintf(args, sizeof args, "f=%s f_mode=computed", bad);
    th_expect_usage_error("jacobi", id, args, "f_mode=computed");
    const hc_device_info_t *in = hc_device_info(dev);
    if (in->max_work_group_size && in->max_work_group_size < (1u << 20) &&
        !(in->languages & HC_LANG_BIT(HC_LANG_HOST))) {
      /* A block larger than the device allows. */
      unsigned side = 2;
      while (side * side <= in->max_work_group_size) side *= 2;
      char b[64];
      snprintf(b, sizeof b, "block=%ux%u", side > 1024 ? 1024 : side, side > 1024 ? side * side / 1024 : side);
      snprintf(args, sizeof args, "n=64 %s", b);
      th_expect_usage_error("jacobi", id, args, "allows at most");
      /* A marching tile (two planes of 8-row items, as many as a group
       * takes) over the local memory. */
      size_t bx = in->max_work_group_size > 1024 ? 1024 : in->max_work_group_size, by = in->max_work_group_size / bx;
      size_t es = has_fp64(dev) ? 8 : 4;
      if (in->local_mem_bytes && 2 * (bx + 2) * (8 * by + 2) * es > in->local_mem_bytes) {
        snprintf(args, sizeof args, "n=9x9x9 block=%zux%zu rows=8 dtype=%s", by, bx, es == 8 ? "f64" : "f32");
        th_expect_usage_error("jacobi", id, args, "bytes of local memory");
      }
    }
  }
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("jacobi", NULL, NULL);
  CU_ADD_TEST(s, test_eigenmode);
  CU_ADD_TEST(s, test_convergence_order);
  CU_ADD_TEST(s, test_variants_agree);
  CU_ADD_TEST(s, test_devices_agree);
  CU_ADD_TEST(s, test_paper_size_devices_agree);
  CU_ADD_TEST(s, test_verify_bound_capped);
  CU_ADD_TEST(s, test_two_sweeps_per_pass);
  CU_ADD_TEST(s, test_tolerance_stops);
  CU_ADD_TEST(s, test_inputs);
  CU_ADD_TEST(s, test_verify_reference);
  CU_ADD_TEST(s, test_bad_inputs);
}

TH_MAIN(register_tests)
