/* The pipeline examples of issue 9, as tests with numbers that mean
 * something:
 *
 * (1) jacobi -> simpson: the integral over the unit cube of the solution of
 *     -Lap u = 3 pi^2 sin(pi x) sin(pi y) sin(pi z). The exact integral is
 *     (2/pi)^3. The converged discrete solution is the exact one times
 *     (q / sin q)^2 with q = pi h / 2 (the 7-point Laplacian's eigenvalue),
 *     and Simpson's rule integrates sin(pi x) per axis; so the pipeline's
 *     result is predicted to rounding, and its error against (2/pi)^3 is
 *     pi^2 h^2 / 12 + O(h^4): a factor 4 per halving of h.
 * (2) bpm -> abs2 -> simpson: the power in the window, int |E|^2 dy. With
 *     the paper's mode launch in a uniform guide between conductors,
 *     Crank-Nicolson conserves it: Ly/2 at every z, less the two edge cells
 *     Simpson's rule over the interior nodes leaves out. A tilted Gaussian
 *     into absorbing walls loses power along z; the pipeline's value must
 *     match bpm's own power trace, at z = Lz (its field) and in the middle
 *     of the run (a row of its intensity map, through slice).
 * (3) the same pipelines on one device and split across two (cpu:0 and
 *     opencl:0, and cuda:0 where there is one): the field handed across is
 *     moved bit for bit, the stages that ran on the same device give the
 *     same bits, and the results agree to the rounding of the reductions
 *     (jacobi itself on the other device: to its tolerance).
 *
 * A workload that is not built yet prints "skipped: workload X not built". */
#include <hc/pipeline.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int have(const char *w) {
  if (hc_workload_port_count(th_context(), w, 1)) return 1;
  char msg[128];
  snprintf(msg, sizeof msg, "workload %s not built", w);
  th_skip(msg);
  return 0;
}

static hc_pipeline_t *run(const char *spec) {
  hc_pipeline_t *p = NULL;
  hc_status_t st = hc_pipeline_parse(th_context(), spec, &p);
  if (st == HC_OK) st = hc_pipeline_run(p, 0);
  if (st != HC_OK) fprintf(stderr, "\n%s: %s\n", spec, hc_last_error());
  CU_ASSERT_EQUAL(st, HC_OK);
  if (st != HC_OK) {
    hc_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

static double metric(const hc_pipeline_t *p, uint32_t stage, const char *name) {
  double v = NAN;
  if (hc_job_metric_find(hc_pipeline_stage_job(p, stage), name, &v) != HC_OK)
    fprintf(stderr, "\nno metric %s in stage %u: %s\n", name, stage + 1, hc_last_error());
  return v;
}

static double scalar_output(const hc_pipeline_t *p, uint32_t stage, const char *port) {
  double v = NAN;
  hc_field_t *f = hc_job_output(hc_pipeline_stage_job(p, stage), port);
  CU_ASSERT_PTR_NOT_NULL(f);
  if (f) TH_ASSERT_OK(hc_field_read(f, &v));
  return v;
}

/* Composite Simpson of sin(pi x) on [0, 1] with n (odd) nodes. */
static double simpson_sin(int n) {
  double h = 1.0 / (n - 1), s = 0;
  for (int i = 0; i < n; i++) s += (i == 0 || i == n - 1 ? 1 : i % 2 ? 4 : 2) * sin(M_PI * i * h);
  return s * h / 3;
}

/* (1) */
static void test_jacobi_simpson(void) {
  if (!have("jacobi") || !have("simpson")) return;
  const double exact = pow(2 / M_PI, 3);
  const int sizes[2] = {9, 17};
  double err[2];
  for (int k = 0; k < 2; k++) {
    char spec[256];
    snprintf(spec, sizeof spec, "jacobi dim=3 n=%d f=sin dtype=f64 tol=1e-10 iters=200000 check=25 @cpu | simpson",
             sizes[k]);
    hc_pipeline_t *p = run(spec);
    if (!p) return;
    double I = scalar_output(p, 1, "integral");
    CU_ASSERT_DOUBLE_EQUAL(metric(p, 1, "integral"), I, 0);
    double h = 1.0 / (sizes[k] - 1), q = M_PI * h / 2;
    double predicted = pow(simpson_sin(sizes[k]), 3) * (q / sin(q)) * (q / sin(q));
    double off = fabs(I / predicted - 1);
    err[k] = I / exact - 1;
    double h2 = M_PI * M_PI * h * h / 12;
    printf("\n  n=%d: integral %.15f, (2/pi)^3 = %.15f, error %.4e (pi^2 h^2/12 = %.4e), off the discrete "
           "prediction by %.2e\n",
           sizes[k], I, exact, err[k], h2, off);
    CU_ASSERT_TRUE(off < 1e-8);
    CU_ASSERT_TRUE(fabs(err[k] / h2 - 1) < 0.05); /* O(h^2), with its constant */
    hc_pipeline_report_t r;
    hc_pipeline_report(p, &r);
    CU_ASSERT_EQUAL(r.handovers_on_device, 1);
    CU_ASSERT_EQUAL(r.between.to_host_count + r.between.to_device_count + r.between.cross_device_count, 0);
    hc_pipeline_destroy(p);
  }
  double ratio = err[0] / err[1];
  printf("  error ratio for h -> h/2: %.3f (O(h^2): 4)\n", ratio);
  CU_ASSERT_TRUE(ratio > 3.8 && ratio < 4.3);
}

/* (2) */
static void test_bpm_abs2_simpson(void) {
  if (!have("bpm") || !have("simpson")) return;
  /* Mode launch, uniform guide, conductors: power Ly/2 at every z. */
  const int n = 255;
  const double Ly = 10, h = Ly / (n + 1);
  char spec[512];
  snprintf(spec, sizeof spec, "bpm dim=2 n=%d Ly=%g Lz=20 dtype=c128 launch=mode @cpu | abs2 | simpson", n, Ly);
  hc_pipeline_t *p = run(spec);
  if (!p) return;
  double P = scalar_output(p, 2, "integral");
  /* int_h^{nh} sin^2(pi y / Ly) dy = Ly/2 - 2 (h/2 - Ly sin(2 pi h / Ly) / (4 pi)) */
  double want = Ly / 2 - 2 * (h / 2 - Ly * sin(2 * M_PI * h / Ly) / (4 * M_PI));
  double bpm_power = metric(p, 0, "power_final");
  printf("\n  mode launch: pipeline power %.12f, Ly/2 less the edge cells %.12f, bpm's power trace %.12f\n", P, want,
         bpm_power);
  CU_ASSERT_TRUE(fabs(P / want - 1) < 1e-7);
  CU_ASSERT_TRUE(fabs(P / bpm_power - 1) < 2e-6);
  CU_ASSERT_TRUE(fabs(bpm_power / (Ly / 2) - 1) < 1e-10);
  hc_pipeline_report_t r;
  hc_pipeline_report(p, &r);
  CU_ASSERT_EQUAL(r.handovers_on_device, 2);
  CU_ASSERT_EQUAL(r.between.to_host_count + r.between.to_device_count + r.between.cross_device_count, 0);
  hc_pipeline_destroy(p);

  /* Tilted Gaussian into absorbing walls: power lost along z. The power
   * at z = Lz from the field, and at mid-run from the intensity map. */
  p = run("bpm dim=2 n=255 Ly=10 Lz=20 dtype=c128 launch=gauss waist=1 tilt=10 bc=absorbing save_every=201 @cpu\n"
          "abs2\n"
          "simpson\n"
          "slice bpm.intensity>in axis=0 index=4\n"
          "simpson\n");
  if (!p) return;
  double end = scalar_output(p, 2, "integral"), mid = scalar_output(p, 4, "integral");
  hc_field_t *trace = hc_job_output(hc_pipeline_stage_job(p, 0), "power");
  CU_ASSERT_PTR_NOT_NULL_FATAL(trace);
  size_t rows = hc_field_count(trace);
  double *pw = malloc(rows * sizeof *pw);
  TH_ASSERT_OK(hc_field_read(trace, pw));
  double z_mid = hc_field_origin(trace)[0] + 4 * hc_field_spacing(trace)[0];
  printf("  gauss, absorbing: power at z=%.3g: pipeline %.9f, bpm %.9f; at z=20: pipeline %.9f, bpm %.9f "
         "(launched %.9f)\n",
         z_mid, mid, pw[4], end, pw[rows - 1], pw[0]);
  CU_ASSERT_TRUE(fabs(mid / pw[4] - 1) < 1e-4);
  CU_ASSERT_TRUE(fabs(end / pw[rows - 1] - 1) < 1e-4);
  CU_ASSERT_TRUE(pw[rows - 1] < 0.95 * pw[0]); /* the walls did absorb */
  CU_ASSERT_DOUBLE_EQUAL(metric(p, 3, "index"), 4, 0);
  free(pw);
  hc_pipeline_destroy(p);
}

/* Bitwise equality of two stages' output fields. */
static int same_bits(const hc_pipeline_t *a, const hc_pipeline_t *b, uint32_t stage, const char *port) {
  hc_field_t *fa = hc_job_output(hc_pipeline_stage_job(a, stage), port);
  hc_field_t *fb = hc_job_output(hc_pipeline_stage_job(b, stage), port);
  if (!fa || !fb || hc_field_bytes(fa) != hc_field_bytes(fb)) return 0;
  size_t n = hc_field_bytes(fa);
  char *x = malloc(n), *y = malloc(n);
  int same = hc_field_read(fa, x) == HC_OK && hc_field_read(fb, y) == HC_OK && !memcmp(x, y, n);
  free(x);
  free(y);
  return same;
}

/* (3), with `other` as the second device. */
static void one_device_vs_two(const char *other) {
  char one[320], two[320];
  if (have("jacobi") && have("simpson")) {
    const char *base = "jacobi dim=3 n=17 f=sin dtype=f64 tol=1e-10 iters=200000 check=25";
    /* simpson moved to the other device; then jacobi there, simpson back on the cpu. */
    snprintf(one, sizeof one, "%s @cpu | simpson", base);
    snprintf(two, sizeof two, "%s @cpu | simpson @%s", base, other);
    hc_pipeline_t *a = run(one), *b = run(two);
    if (a && b) {
      CU_ASSERT_TRUE(same_bits(a, b, 0, "u"));
      double Ia = scalar_output(a, 1, "integral"), Ib = scalar_output(b, 1, "integral");
      printf("\n  jacobi -> simpson: all on cpu:0 %.17g, simpson on %s %.17g\n", Ia, other, Ib);
      CU_ASSERT_TRUE(fabs(Ia / Ib - 1) < 1e-14);
      hc_pipeline_report_t r;
      hc_pipeline_report(b, &r);
      CU_ASSERT_EQUAL(r.transfer_count, 1);
      CU_ASSERT_EQUAL(r.transfer_bytes, 17 * 17 * 17 * sizeof(double));
      CU_ASSERT_EQUAL(r.between.cross_device_count, 1);
    }
    hc_pipeline_destroy(b);
    snprintf(two, sizeof two, "%s @%s | simpson @cpu", base, other);
    b = run(two);
    if (a && b) {
      /* jacobi on another device: the same iterates up to rounding, so the
       * same integral to the solver's tolerance. */
      double Ia = scalar_output(a, 1, "integral"), Ib = scalar_output(b, 1, "integral");
      printf("  jacobi on %s -> simpson on cpu:0 %.17g\n", other, Ib);
      CU_ASSERT_TRUE(fabs(Ia / Ib - 1) < 1e-9);
    }
    hc_pipeline_destroy(a);
    hc_pipeline_destroy(b);
  }
  if (have("bpm") && have("simpson")) {
    const char *base = "bpm dim=2 n=255 Ly=10 Lz=20 dtype=c128 launch=gauss waist=1 tilt=10 bc=absorbing @cpu";
    snprintf(one, sizeof one, "%s | abs2 | simpson", base);
    snprintf(two, sizeof two, "%s | abs2 @%s | simpson @cpu", base, other);
    hc_pipeline_t *a = run(one), *b = run(two);
    if (a && b) {
      CU_ASSERT_TRUE(same_bits(a, b, 0, "field"));
      double Ia = scalar_output(a, 2, "integral"), Ib = scalar_output(b, 2, "integral");
      printf("  bpm -> abs2 -> simpson: all on cpu:0 %.17g, abs2 on %s %.17g\n", Ia, other, Ib);
      /* |z|^2 may be fused into one fma on one device and not the other. */
      CU_ASSERT_TRUE(fabs(Ia / Ib - 1) < 1e-14);
      hc_pipeline_report_t r;
      hc_pipeline_report(b, &r);
      CU_ASSERT_EQUAL(r.transfer_count, 2);
      CU_ASSERT_EQUAL(r.transfer_bytes, 255 * 16 + 255 * 8);
    }
    hc_pipeline_destroy(a);
    hc_pipeline_destroy(b);
  }
  /* Exactly rounded glue stages: identical bits across devices. */
  snprintf(two, sizeof two, "saxpy n=4097 dtype=f32 @cpu | convert to=c64 @%s | scale factor=0.375 | reduce op=l2 @cpu",
           other);
  hc_pipeline_t *a = run("saxpy n=4097 dtype=f32 @cpu | convert to=c64 | scale factor=0.375 | reduce op=l2");
  hc_pipeline_t *b = run(two);
  if (a && b) {
    CU_ASSERT_TRUE(same_bits(a, b, 2, "out"));
    CU_ASSERT_TRUE(same_bits(a, b, 3, "value"));
  }
  hc_pipeline_destroy(a);
  hc_pipeline_destroy(b);
}

static void test_one_device_vs_two(void) {
  static const char *const others[] = {"opencl:0", "cuda:0"};
  for (int i = 0; i < 2; i++)
    if (th_device(others[i])) one_device_vs_two(others[i]);
}

static void register_tests(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/test-plugins", th_build_dir());
  setenv("HC_PLUGIN_PATH", dir, 1);
  CU_pSuite s = CU_add_suite("pipeline_examples", NULL, NULL);
  CU_ADD_TEST(s, test_jacobi_simpson);
  CU_ADD_TEST(s, test_bpm_abs2_simpson);
  CU_ADD_TEST(s, test_one_device_vs_two);
}

TH_MAIN(register_tests)
