/* Tests of the bpm workload (seed 003) on every device present: the guide
 * mode's phase (the scheme's and the analytic one), power conservation of
 * Crank-Nicolson, reflections from absorbing and transparent walls,
 * richardson against direct, every device against the cpu, 3-D ADI against
 * two 2-D runs for a separable field, the spreading of a Gaussian beam,
 * outputs and files, the input port, and the exit codes of bad inputs. */
#include <complex.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "hc_config.h"

static const char *const device_specs[] = {"cpu", "opencl", "cuda"};
#define NDEV (sizeof device_specs / sizeof device_specs[0])
#define FOR_EACH_DEVICE(dev)           \
  for (size_t d_ = 0; d_ < NDEV; d_++) \
    for (hc_device_t *dev = th_device(device_specs[d_]); dev; dev = NULL)

static int has_fp64(hc_device_t *dev) { return hc_device_info(dev)->fp64 != 0; }

/* Runs bpm on dev with "key=value" settings (NULL-terminated list, then
 * extra space-separated settings in `more`, may be NULL), writing its files
 * into `dir` unless that is NULL; returns the job (caller destroys) or NULL
 * after a failed assertion. */
static hc_job_t *run_in(hc_device_t *dev, const char *const *kv, const char *more, uint32_t flags, const char *dir) {
  hc_job_t *job = NULL;
  TH_ASSERT_OK(hc_job_create(th_context(), "bpm", &job));
  if (dir) TH_ASSERT_OK(hc_job_set_output_dir(job, dir));
  for (; kv && *kv; kv++) {
    hc_status_t st = hc_job_set_kv(job, *kv);
    if (st != HC_OK) fprintf(stderr, "%s: %s\n", *kv, hc_last_error());
    CU_ASSERT_EQUAL(st, HC_OK);
  }
  if (more) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", more);
    char *save = NULL;
    for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
      hc_status_t st = hc_job_set_kv(job, t);
      if (st != HC_OK) fprintf(stderr, "%s: %s\n", t, hc_last_error());
      CU_ASSERT_EQUAL(st, HC_OK);
    }
  }
  hc_status_t st = hc_job_run(job, dev, flags);
  if (st != HC_OK) {
    fprintf(stderr, "bpm on %s: %s\n", hc_device_name(dev), hc_last_error());
    hc_job_destroy(job);
    CU_FAIL("bpm run failed");
    return NULL;
  }
  return job;
}

static hc_job_t *run(hc_device_t *dev, const char *const *kv, const char *more, uint32_t flags) {
  return run_in(dev, kv, more, flags, NULL);
}

static double metric(const hc_job_t *job, const char *name) {
  double v = NAN;
  CU_ASSERT_EQUAL(hc_job_metric_find(job, name, &v), HC_OK);
  return v;
}

/* The complex field of an output as double complex (malloc'd). */
static double complex *cfield(const hc_job_t *job, const char *port, size_t *count) {
  hc_field_t *f = hc_job_output(job, port);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  size_t n = hc_field_count(f);
  void *raw = malloc(hc_field_bytes(f));
  double complex *out = malloc(n * sizeof *out);
  CU_ASSERT_FATAL(raw && out);
  TH_ASSERT_OK(hc_field_read(f, raw));
  for (size_t i = 0; i < n; i++)
    out[i] = hc_field_dtype(f) == HC_C128 ? CMPLX(((double *)raw)[2 * i], ((double *)raw)[2 * i + 1])
                                          : CMPLX(((float *)raw)[2 * i], ((float *)raw)[2 * i + 1]);
  free(raw);
  if (count) *count = n;
  return out;
}

/* A real output as doubles (malloc'd). */
static double *rfield(const hc_job_t *job, const char *port, size_t *count) {
  hc_field_t *f = hc_job_output(job, port);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  size_t n = hc_field_count(f);
  void *raw = malloc(hc_field_bytes(f));
  double *out = malloc(n * sizeof *out);
  CU_ASSERT_FATAL(raw && out);
  TH_ASSERT_OK(hc_field_read(f, raw));
  for (size_t i = 0; i < n; i++) out[i] = hc_field_dtype(f) == HC_F64 ? ((double *)raw)[i] : ((float *)raw)[i];
  free(raw);
  if (count) *count = n;
  return out;
}

static double rel_l2(const double complex *a, const double complex *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    num += pow(cabs(a[i] - b[i]), 2);
    den += pow(cabs(b[i]), 2);
  }
  return sqrt(num / (den > 0 ? den : 1));
}

/* ------------------------------------------------------------ the mode */

/* The guide mode sin(pi y/Ly) in a uniform medium between conductors is an
 * eigenvector of the scheme: after N steps it is g^N times itself, with
 * g = (1 + a mu/2)/(1 - a mu/2), a = i hz/(2 k0 hy^2), mu = -4 sin^2(pi hy/
 * (2 Ly)) (theta = 1/2). Computed here independently of the workload; the
 * analytic phase -(pi/Ly)^2 z/(2 k0) is met to O(h^2) (hz = hy/pi halves
 * with hy). */
static void test_mode_phase(void) {
  const int ns[3] = {50, 100, 200};
  FOR_EACH_DEVICE(dev) {
    const int f64 = has_fp64(dev);
    double perr[3];
    for (int q = 0; q < 3; q++) {
      char n[32];
      snprintf(n, sizeof n, "n=%d", ns[q]);
      const char *kv[] = {n, "Lz=20", f64 ? "dtype=c128" : "dtype=c64", NULL};
      hc_job_t *job = run(dev, kv, NULL, HC_RUN_VERIFY);
      if (!job) continue;
      CU_ASSERT_EQUAL(hc_job_verified(job, NULL), 1);
      const double Ly = 10, Lz = 20, k0 = 2 * M_PI, hy = Ly / (ns[q] + 1);
      const double steps = metric(job, "steps"), hz = Lz / steps;
      const double s = sin(M_PI * hy / (2 * Ly));
      const double complex a = I * hz / (2 * k0 * hy * hy), mu = -4 * s * s;
      const double complex gN = cpow((1 + a * mu / 2) / (1 - a * mu / 2), steps);
      size_t cnt;
      double complex *e = cfield(job, "field", &cnt);
      CU_ASSERT_EQUAL(cnt, (size_t)ns[q]);
      double complex *want = malloc(cnt * sizeof *want);
      for (size_t i = 0; i < cnt; i++) want[i] = gN * sin(M_PI * (double)(i + 1) * hy / Ly);
      double err = rel_l2(e, want, cnt);
      double tol = f64 ? 1e-10 : 2e-4;
      if (err > tol) fprintf(stderr, "%s n=%d: mode error %.3g > %.3g\n", hc_device_name(dev), ns[q], err, tol);
      CU_ASSERT(err <= tol);
      perr[q] = fabs(carg(gN * cexp(I * M_PI * M_PI / (Ly * Ly) * Lz / (2 * k0))));
      /* the phase error of the scheme itself is (pi hy/Ly)^2/12 of the phase */
      double phase = M_PI * M_PI / (Ly * Ly) * Lz / (2 * k0);
      CU_ASSERT(perr[q] <= 2 * phase * pow(M_PI * hy / Ly, 2) / 12 + 1e-12);
      free(e);
      free(want);
      hc_job_destroy(job);
    }
    /* O(h^2): halving h quarters the phase error */
    for (int q = 0; q < 2; q++) {
      double ratio = perr[q] / perr[q + 1];
      if (ratio < 3.5 || ratio > 4.5) fprintf(stderr, "phase error ratio %.3f (want about 4)\n", ratio);
      CU_ASSERT(ratio > 3.5 && ratio < 4.5);
    }
  }
}

/* Crank-Nicolson between conductors is unitary: 10^4 steps keep the power
 * to rounding. */
static void test_power_conservation(void) {
  FOR_EACH_DEVICE(dev) {
    for (int f64 = 0; f64 <= has_fp64(dev); f64++) {
      const char *kv[] = {"n=64",
                          "steps=10000",
                          "launch=gauss",
                          "tilt=10",
                          "offset=1",
                          "profile=slab",
                          f64 ? "dtype=c128" : "dtype=c64",
                          NULL};
      hc_job_t *job = run(dev, kv, NULL, 0);
      if (!job) continue;
      size_t np;
      double *p = rfield(job, "power", &np);
      double worst = 0;
      for (size_t i = 0; i < np; i++) worst = fmax(worst, fabs(p[i] / p[0] - 1));
      /* c64: the coefficients rounded once to float make |g| = 1 +- eps,
       * a drift of about steps x eps */
      double tol = f64 ? 1e-11 : 4 * 10000 * 1.2e-8;
      if (worst > tol) fprintf(stderr, "%s f64=%d: power drift %.3g > %.3g\n", hc_device_name(dev), f64, worst, tol);
      CU_ASSERT(worst <= tol);
      CU_ASSERT(fabs(metric(job, "power_drift")) <= tol);
      CU_ASSERT_EQUAL(metric(job, "steps"), 10000);
      free(p);
      hc_job_destroy(job);
    }
  }
}

/* ------------------------------------------------------------ the walls */

/* Reflected power of a Gaussian beam aimed at the wall at 30 degrees: the
 * run in a 20 um window against a reference in an 80 um window (same grid
 * nodes; the small window is its second quarter, far from its walls), after
 * the beam has left. The difference over the small window (outside the
 * absorbing layers) is what the walls sent back. */
static double reflected_power(hc_device_t *dev, const char *bc, double layer) {
  const int n = 400, K = 4;
  char nb[32], off[64];
  snprintf(nb, sizeof nb, "n=%d", K * n + K - 1);
  snprintf(off, sizeof off, "offset=%g", 4.0 + 1.5 * 20 - K * 20 / 2.0);
  const char *common = "dtype=c128 launch=gauss waist=3 tilt=30 Lz=50 hz=0.05";
  char small[256];
  snprintf(small, sizeof small, "%s n=%d Ly=20 offset=4 bc=%s", common, n, bc);
  const char *kvb[] = {nb, "Ly=80", off, "bc=conductor", NULL};
  hc_job_t *js = run(dev, NULL, small, 0), *jb = run(dev, kvb, common, 0);
  double refl = NAN;
  if (js && jb) {
    size_t cs, cb;
    double complex *es = cfield(js, "field", &cs), *eb = cfield(jb, "field", &cb);
    const double hy = 20.0 / (n + 1);
    double num = 0, p0 = 0;
    for (size_t i = 0; i < cb; i++) p0 += pow(cabs(eb[i]), 2) * hy;
    for (int i = 0; i < n; i++) {
      double y = (i + 1) * hy;
      if (y > layer && y < 20 - layer) num += pow(cabs(es[i] - eb[i + (n + 1)]), 2) * hy;
    }
    refl = num / p0;
    free(es);
    free(eb);
  }
  hc_job_destroy(js);
  hc_job_destroy(jb);
  return refl;
}

static void test_walls(void) {
  hc_device_t *dev = th_device("cpu");
  if (!dev) return;
  double tbc = reflected_power(dev, "transparent", 0);
  double abs = reflected_power(dev, "absorbing", 20.0 / 8);
  double pec = reflected_power(dev, "conductor", 0);
  printf("\n  reflected power at 30 degrees: transparent %.3g, absorbing %.3g, conductor %.3g\n", tbc, abs, pec);
  CU_ASSERT(tbc < 1e-4);
  CU_ASSERT(abs < 1e-3);
  CU_ASSERT(pec > 0.1); /* the measure sees a reflection when there is one */
}

/* ------------------------------------------------------------ solvers */

/* The paper's one-parameter iteration converges to the direct solution:
 * the fields agree to the iteration tolerance (times the steps). */
static void test_richardson_direct(void) {
  FOR_EACH_DEVICE(dev) {
    const int f64 = has_fp64(dev);
    const char *base = f64 ? "n=64 steps=200 Lz=10 launch=gauss tilt=5 bc=transparent dtype=c128"
                           : "n=64 steps=200 Lz=10 launch=gauss tilt=5 bc=transparent dtype=c64";
    const char *kr[] = {"solver=richardson", f64 ? "tol=1e-12" : "tol=1e-6", NULL};
    hc_job_t *jd = run(dev, NULL, base, 0), *jr = run(dev, kr, base, 0);
    if (jd && jr) {
      double complex *ed = cfield(jd, "field", NULL), *er = cfield(jr, "field", NULL);
      double diff = rel_l2(er, ed, 64);
      double tol = f64 ? 1e-8 : 2e-3;
      if (diff > tol) fprintf(stderr, "%s: richardson vs direct %.3g > %.3g\n", hc_device_name(dev), diff, tol);
      CU_ASSERT(diff <= tol);
      CU_ASSERT(metric(jr, "iterations_mean") >= 1);
      CU_ASSERT(metric(jr, "iterations_max") < 20000);
      free(ed);
      free(er);
    }
    hc_job_destroy(jd);
    hc_job_destroy(jr);
  }
}

/* The paper's band storage with wider bands: the 5-point stencil (p = q =
 * 2) through the one-parameter iteration. The mode stays an eigenvector
 * (odd reflection at the walls) and its phase error falls as h^4. */
static void test_order4(void) {
  FOR_EACH_DEVICE(dev) {
    if (!has_fp64(dev)) continue;
    double e4[2], e2 = 0;
    for (int q = 0; q < 2; q++) {
      const char *kv[] = {q ? "n=100" : "n=50", "Lz=20", "hz=0.005", "solver=richardson", "order=4",
                          "dtype=c128",         NULL};
      hc_job_t *job = run(dev, kv, NULL, HC_RUN_VERIFY);
      if (!job) return;
      CU_ASSERT_EQUAL(hc_job_verified(job, NULL), 1);
      e4[q] = metric(job, "analytic_phase_error");
      hc_job_destroy(job);
    }
    const char *k2[] = {"n=50", "Lz=20", "hz=0.005", "solver=richardson", "order=2", "dtype=c128", NULL};
    hc_job_t *job = run(dev, k2, NULL, HC_RUN_VERIFY);
    if (job) {
      e2 = metric(job, "analytic_phase_error");
      hc_job_destroy(job);
    }
    double ratio = e4[0] / e4[1];
    if (ratio < 12 || ratio > 20)
      fprintf(stderr, "%s: order 4 error ratio %.3g (want about 16)\n", hc_device_name(dev), ratio);
    CU_ASSERT(ratio > 12 && ratio < 20);
    CU_ASSERT(e4[0] < e2 / 100);
  }
}

/* Every device gives the cpu's field to rounding, in 2-D and 3-D, with
 * every kind of wall and medium. */
typedef struct {
  const char *args;
  double tol;
} agree_case_t;

/* Each case's field on every device against the cpu backend's. */
static void check_devices_agree(const agree_case_t *cases, size_t ncases) {
  hc_device_t *cpu = th_device("cpu");
  if (!cpu) return;
  for (size_t c = 0; c < ncases; c++) {
    hc_job_t *ref = run(cpu, NULL, cases[c].args, 0);
    if (!ref) continue;
    size_t n;
    double complex *er = cfield(ref, "field", &n);
    for (size_t d = 1; d < NDEV; d++) {
      hc_device_t *dev = th_device(device_specs[d]);
      if (!dev) continue;
      int f64 = strstr(cases[c].args, "c128") != NULL;
      if (f64 && !has_fp64(dev)) continue;
      hc_job_t *job = run(dev, NULL, cases[c].args, 0);
      if (!job) continue;
      double complex *e = cfield(job, "field", NULL);
      double diff = rel_l2(e, er, n), tol = cases[c].tol;
      if (diff > tol) fprintf(stderr, "%s vs cpu, %s: %.3g > %.3g\n", hc_device_name(dev), cases[c].args, diff, tol);
      CU_ASSERT(diff <= tol);
      free(e);
      hc_job_destroy(job);
    }
    free(er);
    hc_job_destroy(ref);
  }
}

/* The paper's one-parameter iteration at its size N = 3000 (hz = Ly/30,
 * 120 steps): every device runs the same iteration, so the cpu backend's
 * sweeps, convergence tests and field match the device kernels' (bound:
 * c64 rounding over the march), and the march conserves the power as the
 * device's does. The cpu backend used to test convergence after every
 * sweep, stop after one and blow up (power 4e17, the field NaN). */
static void test_richardson_paper_size_agrees(void) {
  const char *args = "n=3000 steps=120 Lz=40 solver=richardson dtype=c64";
  hc_device_t *cpu = th_device("cpu");
  if (!cpu) return;
  hc_job_t *ref = run(cpu, NULL, args, 0);
  if (!ref) return;
  size_t n;
  double complex *er = cfield(ref, "field", &n);
  const double p0 = 5.0; /* |sin(pi y/Ly)|^2 over Ly = 10 */
  double pr = metric(ref, "power_final");
  CU_ASSERT(isfinite(pr) && fabs(pr - p0) < 0.01 * p0);
  for (size_t d = 1; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    hc_job_t *job = run(dev, NULL, args, 0);
    if (!job) continue;
    double complex *e = cfield(job, "field", NULL);
    double diff = rel_l2(e, er, n), tol = 1e-4;
    if (diff > tol) fprintf(stderr, "%s vs cpu, %s: %.3g > %.3g\n", hc_device_name(dev), args, diff, tol);
    CU_ASSERT(diff <= tol);
    CU_ASSERT(fabs(metric(job, "power_final") - pr) <= 1e-4 * p0);
    CU_ASSERT_EQUAL(metric(job, "iterations_mean"), metric(ref, "iterations_mean"));
    free(e);
    hc_job_destroy(job);
  }
  free(er);
  hc_job_destroy(ref);
}

/* Verification holds the field and the power to fixed bounds (never
 * looser than 1e-3), not to a tolerance grown with the condition number:
 * the one-parameter iteration at N = 300, hz = Ly/30 stops every step at
 * its loose default tol and the power grows by 4 %, which used to pass. A
 * converged run passes and names its bounds. */
static void test_verification_bounds(void) {
  hc_device_t *cpu = th_device("cpu");
  if (!cpu) return;
  hc_job_t *bad = NULL;
  TH_ASSERT_OK(hc_job_create(th_context(), "bpm", &bad));
  static const char *const kb[] = {"n=300", "steps=120", "Lz=40", "solver=richardson", "dtype=c64", NULL};
  for (int i = 0; kb[i]; i++) TH_ASSERT_OK(hc_job_set_kv(bad, kb[i]));
  CU_ASSERT_EQUAL(hc_job_run(bad, cpu, HC_RUN_VERIFY), HC_ERR_VERIFY);
  hc_job_t *good = run(cpu, NULL, "n=300 steps=120 Lz=40 dtype=c64", HC_RUN_VERIFY);
  const char *msg = NULL;
  if (bad) {
    CU_ASSERT(fabs(metric(bad, "power_drift")) > 1e-2);
    CU_ASSERT_EQUAL(hc_job_verified(bad, &msg), 0);
    CU_ASSERT_PTR_NOT_NULL(msg ? strstr(msg, "(bound 0.001)") : NULL);
  }
  if (good) {
    CU_ASSERT_EQUAL(hc_job_verified(good, &msg), 1);
    CU_ASSERT_PTR_NOT_NULL(msg ? strstr(msg, "power conservation") : NULL);
    CU_ASSERT_PTR_NOT_NULL(msg ? strstr(msg, "(bound ") : NULL);
  }
  hc_job_destroy(bad);
  hc_job_destroy(good);
}

static void test_devices_agree(void) {
  /* tolerance: rounding of c128 / c64 over the march; richardson stops
   * at its tolerance after a different number of sweeps on each device */
  static const agree_case_t cases[] = {
      {"n=100 Lz=5 profile=slab launch=gauss tilt=8 offset=1 bc=transparent dtype=c128", 1e-11},
      {"n=100 Lz=5 profile=graded bc=absorbing launch=gauss tilt=-10 dtype=c64", 2e-5},
      {"n=100 Lz=2 solver=richardson launch=gauss tilt=3 dtype=c128", 1e-9},
      {"n=100 Lz=2 solver=richardson order=4 bc=absorbing launch=gauss tilt=3 dtype=c128", 1e-9},
      {"dim=3 n=48x40 Lz=2 profile=slab bc=transparent launch=gauss tilt=5,-5 dtype=c128", 1e-11},
      {"dim=3 n=48x40 Lz=2 bc=absorbing launch=gauss offset=1,1 dtype=c64", 2e-5},
      /* lines that do not fill the work-groups: x-lines in 8 chunks of 5
       * rows (the last holds 2) and columns past ny; y-lines of 8 threads
       * x 4 unknowns (the last holds 1) */
      {"dim=3 n=37x29 Lz=1 profile=slab bc=transparent launch=gauss tilt=5,-5 tile=4x8 group=8 dtype=c128", 1e-11},
      {"dim=3 n=37x29 Lz=1 bc=absorbing launch=gauss offset=1,1 tile=8x16 group=8 dtype=c64", 2e-5},
  };
  check_devices_agree(cases, sizeof cases / sizeof cases[0]);
}

/* The 3-D line kernels' sub-chains (kernels.hcl, BPM_XSUB / BPM_YSUB) in
 * counts that split the chunks unevenly or leave one empty (x-lines in
 * chunks of 5 rows, and of 8 on GPUs or 32 on CPU devices; y-lines of 4
 * and 2 values a thread) give the same field; the cpu backend's own kernels
 * take no build options. */
static void test_sub_chains(void) {
  static const agree_case_t cases[] = {
      {"dim=3 n=37x29 Lz=1 profile=slab bc=transparent launch=gauss tilt=5,-5 tile=4x8 group=8 dtype=c128", 1e-11},
      {"dim=3 n=64x64 Lz=1 launch=gauss offset=1,1 dtype=c64", 2e-5},
  };
  setenv("HC_KERNEL_OPTIONS", "-DBPM_XSUB=3 -DBPM_YSUB=3", 1);
  check_devices_agree(cases, sizeof cases / sizeof cases[0]);
  unsetenv("HC_KERNEL_OPTIONS");
}

/* The core power column of dir/power.csv into out[0..cap); the count. */
static size_t core_trace(const char *dir, double *out, size_t cap) {
  char path[600], line[256];
  snprintf(path, sizeof path, "%s/power.csv", dir);
  FILE *f = fopen(path, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  size_t n = 0;
  double z, w;
  CU_ASSERT_PTR_NOT_NULL(fgets(line, sizeof line, f)); /* the header */
  while (n < cap && fgets(line, sizeof line, f)) CU_ASSERT_EQUAL(sscanf(line, "%lf,%lf,%lf", &z, &w, &out[n++]), 3);
  fclose(f);
  return n;
}

/* On device languages the 3-D half-steps of a uniform medium hand each
 * other their right-hand sides and write the field only where a step is
 * saved (kernels.hcl, BPM_FWD). Several save blocks, the last one short;
 * x-line chunks that tile the rows exactly (64 rows) and that do not (37);
 * every device gives the cpu's field, and its power in the core at every
 * saved step (a tilted beam crosses the core; the window's power is
 * conserved, so it would not show a stale field), with the mode on and off
 * (forward_rhs=auto, off). */
static void test_forwarded_rhs(void) {
  static const char *const cases[] = {
      "dim=3 n=64x48 steps=10 Lz=0.5 save_every=3 launch=gauss offset=1,1 tilt=2,-3 dtype=c64",
      "dim=3 n=37x29 steps=7 Lz=0.35 save_every=2 launch=gauss offset=1,1 tile=8x16 group=8 dtype=c64",
  };
  hc_device_t *cpu = th_device("cpu");
  if (!cpu) return;
  char dir[512];
  snprintf(dir, sizeof dir, "%s/bpm_fwd", th_tmpdir());
  CU_ASSERT_EQUAL(mkdir(dir, 0700) == 0 || errno == EEXIST, 1);
  /* forward_rhs=off turns the mode off, auto (the default) leaves it on;
   * the run's note says which (device languages only) */
  static const char *const fwd[] = {" forward_rhs=off", " forward_rhs=auto", ""};
  for (size_t d = 1; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev || (hc_device_info(dev)->languages & HC_LANG_BIT(HC_LANG_HOST))) continue;
    for (int v = 0; v < 3; v++) {
      char args[128];
      snprintf(args, sizeof args, "dim=3 n=24x20 steps=2 Lz=0.02%s", fwd[v]);
      hc_job_t *job = run(dev, NULL, args, 0);
      if (!job) continue;
      const int on = strstr(hc_job_notes(job), "hands the next its right-hand side") != NULL;
      if (on != (v > 0)) fprintf(stderr, "%s,%s: forwarded %d\n", hc_device_name(dev), fwd[v], on);
      CU_ASSERT_EQUAL(on, v > 0);
      hc_job_destroy(job);
    }
  }
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    hc_job_t *ref = run_in(cpu, NULL, cases[c], 0, dir);
    if (!ref) continue;
    size_t n, np;
    double complex *er = cfield(ref, "field", &n);
    double pr[16], p[16];
    np = core_trace(dir, pr, 16);
    CU_ASSERT(np >= 4); /* the launch, the save blocks, the end */
    for (int off = 0; off < 2; off++) {
      for (size_t d = 1; d < NDEV; d++) {
        hc_device_t *dev = th_device(device_specs[d]);
        if (!dev) continue;
        char args[256];
        snprintf(args, sizeof args, "%s%s", cases[c], off ? " forward_rhs=off" : "");
        hc_job_t *job = run_in(dev, NULL, args, 0, dir);
        if (!job) continue;
        size_t n2, np2 = core_trace(dir, p, 16);
        double complex *e = cfield(job, "field", &n2);
        double diff = n2 == n ? rel_l2(e, er, n) : INFINITY, worst = np2 == np ? 0 : INFINITY;
        for (size_t i = 0; i < np && np2 == np; i++) worst = fmax(worst, fabs(p[i] / pr[i] - 1));
        if (diff > 2e-5 || worst > 1e-5)
          fprintf(stderr, "%s, %s, forward_rhs=%s: field %.3g, core power %.3g from the cpu's\n", hc_device_name(dev),
                  cases[c], off ? "off" : "auto", diff, worst);
        CU_ASSERT(diff <= 2e-5);
        CU_ASSERT(worst <= 1e-5);
        free(e);
        hc_job_destroy(job);
      }
    }
    free(er);
    hc_job_destroy(ref);
  }
}

/* 3-D ADI of a separable field in a uniform medium between conductors is
 * the product of the two 2-D runs (the x and y operators commute). */
static void test_adi_separable(void) {
  FOR_EACH_DEVICE(dev) {
    const int f64 = has_fp64(dev);
    const char *dt = f64 ? "dtype=c128" : "dtype=c64";
    const char *k3[] = {"dim=3", "n=48x40", "Lx=8", "Ly=10", "offset=0.5,-1", "tilt=3,-4", dt, NULL};
    const char *kx[] = {"n=48", "Ly=8", "offset=0.5", "tilt=3", dt, NULL};
    const char *ky[] = {"n=40", "Ly=10", "offset=-1", "tilt=-4", dt, NULL};
    const char *common = "steps=100 Lz=5 launch=gauss waist=1.5 bc=conductor";
    hc_job_t *j3 = run(dev, k3, common, 0), *jx = run(dev, kx, common, 0), *jy = run(dev, ky, common, 0);
    if (j3 && jx && jy) {
      size_t n3;
      double complex *e3 = cfield(j3, "field", &n3), *ex = cfield(jx, "field", NULL), *ey = cfield(jy, "field", NULL);
      CU_ASSERT_EQUAL(n3, 48 * 40);
      double complex *prod = malloc(n3 * sizeof *prod);
      for (int i = 0; i < 48; i++)
        for (int j = 0; j < 40; j++) prod[i * 40 + j] = ex[i] * ey[j];
      double diff = rel_l2(e3, prod, n3), tol = f64 ? 1e-12 : 1e-5;
      if (diff > tol) fprintf(stderr, "%s: 3-D vs 2-D x 2-D %.3g > %.3g\n", hc_device_name(dev), diff, tol);
      CU_ASSERT(diff <= tol);
      free(e3), free(ex), free(ey), free(prod);
    }
    hc_job_destroy(j3), hc_job_destroy(jx), hc_job_destroy(jy);
  }
}

/* A Gaussian beam in free space: the second-moment width of |E|^2 along
 * the saved rows follows w(z) = w0 sqrt(1 + (z/zR)^2), zR = pi w0^2/lambda
 * (w0 = 1 um, to z = 10 um = 3.2 zR). */
static void test_gauss_width(void) {
  FOR_EACH_DEVICE(dev) {
    const char *kv[] = {"n=256",
                        "Ly=20",
                        "Lz=10",
                        "hz=0.01",
                        "save_every=100",
                        "launch=gauss",
                        "waist=1",
                        has_fp64(dev) ? "dtype=c128" : "dtype=c64",
                        NULL};
    hc_job_t *job = run(dev, kv, NULL, 0);
    if (!job) continue;
    size_t cnt;
    double *inten = rfield(job, "intensity", &cnt);
    const int64_t *sh = hc_field_shape(hc_job_output(job, "intensity"));
    CU_ASSERT_EQUAL(sh[0], 11);
    CU_ASSERT_EQUAL(sh[1], 256);
    const double hy = 20.0 / 257, zR = M_PI;
    double worst = 0;
    for (int64_t r = 0; r < sh[0]; r++) {
      double s0 = 0, s1 = 0, s2 = 0;
      for (int64_t i = 0; i < sh[1]; i++) {
        double y = (double)(i + 1) * hy, v = inten[r * sh[1] + i];
        s0 += v, s1 += v * y, s2 += v * y * y;
      }
      double m = s1 / s0, w = 2 * sqrt(s2 / s0 - m * m), z = (double)r * 1.0;
      double want = sqrt(1 + (z / zR) * (z / zR));
      worst = fmax(worst, fabs(w / want - 1));
    }
    printf("\n  %s: Gaussian width vs w0 sqrt(1 + (z/zR)^2): worst relative error %.3g\n", hc_device_name(dev), worst);
    /* hy = 0.078 um: the discrete dispersion, (k hy)^2/12 over the beam's
     * spectrum |k| ~ 2/w0, shifts the width by a few 1e-3 */
    CU_ASSERT(worst <= 5e-3);
    free(inten);
    hc_job_destroy(job);
  }
}

/* ------------------------------------------------------------ outputs */

static long count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long n = 0;
  int ch;
  while ((ch = fgetc(f)) != EOF) n += ch == '\n';
  fclose(f);
  return n;
}

static void test_outputs_and_files(void) {
  hc_device_t *dev = th_device("cpu");
  if (!dev) return;
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/bpm_out", th_tmpdir());
  char cmd[700];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  CU_ASSERT_EQUAL(system(cmd), 0);
  for (int dim = 2; dim <= 3; dim++) {
    hc_job_t *job = NULL;
    TH_ASSERT_OK(hc_job_create(th_context(), "bpm", &job));
    TH_ASSERT_OK(hc_job_set_kv(job, dim == 2 ? "n=50" : "dim=3"));
    TH_ASSERT_OK(hc_job_set_kv(job, dim == 2 ? "Lz=10" : "n=24x20"));
    TH_ASSERT_OK(hc_job_set_kv(job, "steps=100"));
    TH_ASSERT_OK(hc_job_set_kv(job, "save_every=30"));
    TH_ASSERT_OK(hc_job_set_output_dir(job, dir));
    TH_ASSERT_OK(hc_job_run(job, dev, 0));
    const int64_t *fs = hc_field_shape(hc_job_output(job, "field"));
    const int64_t *is = hc_field_shape(hc_job_output(job, "intensity"));
    const int64_t *ps = hc_field_shape(hc_job_output(job, "power"));
    CU_ASSERT_EQUAL(hc_field_rank(hc_job_output(job, "field")), (uint32_t)(dim - 1));
    CU_ASSERT_EQUAL(ps[0], 5); /* z = 0, 30, 60, 90, 100 */
    if (dim == 2) {
      CU_ASSERT_EQUAL(fs[0], 50);
      CU_ASSERT_EQUAL(is[0], 5);
      CU_ASSERT_EQUAL(is[1], 50);
    } else {
      CU_ASSERT_EQUAL(fs[0], 24);
      CU_ASSERT_EQUAL(fs[1], 20);
      CU_ASSERT_EQUAL(is[0], 24);
      CU_ASSERT_EQUAL(is[1], 20);
    }
    CU_ASSERT(metric(job, "time_per_step_s") > 0);
    snprintf(path, sizeof path, "%s/power.csv", dir);
    CU_ASSERT_EQUAL(count_lines(path), 6);
    FILE *f = fopen(path, "r");
    char line[128] = "";
    if (f) {
      CU_ASSERT_PTR_NOT_NULL(fgets(line, sizeof line, f));
      fclose(f);
    }
    CU_ASSERT_STRING_EQUAL(line, "z_um,window_power,core_power\n");
    snprintf(path, sizeof path, "%s/intensity.png", dir);
    f = fopen(path, "rb");
#if HC_HAVE_PNG
    unsigned char sig[8] = {0};
    CU_ASSERT_PTR_NOT_NULL(f);
    if (f) {
      CU_ASSERT_EQUAL(fread(sig, 1, 8, f), 8);
      fclose(f);
    }
    CU_ASSERT(!memcmp(sig, "\x89PNG\r\n\x1a\n", 8));
    remove(path);
#else
    CU_ASSERT_PTR_NULL(f);
    if (f) fclose(f);
#endif
    hc_job_destroy(job);
  }
}

/* A launch field bound to the input port replaces launch=. */
static void test_input_port(void) {
  hc_device_t *dev = th_device("cpu");
  if (!dev) return;
  const int64_t n = 60;
  hc_field_t *in = NULL;
  TH_ASSERT_OK(hc_field_create(dev, HC_C128, 1, &n, &in));
  double complex v[60];
  for (int i = 0; i < n; i++) v[i] = sin(M_PI * (i + 1) / (double)(n + 1));
  TH_ASSERT_OK(hc_field_write(in, v));
  hc_job_t *a = NULL;
  TH_ASSERT_OK(hc_job_create(th_context(), "bpm", &a));
  TH_ASSERT_OK(hc_job_set_kv(a, "n=60"));
  TH_ASSERT_OK(hc_job_set_kv(a, "dtype=c128"));
  TH_ASSERT_OK(hc_job_set_kv(a, "launch=gauss"));
  TH_ASSERT_OK(hc_job_set_input(a, "field", in));
  TH_ASSERT_OK(hc_job_run(a, dev, 0));
  const char *kv[] = {"n=60", "dtype=c128", "launch=mode", NULL};
  hc_job_t *b = run(dev, kv, NULL, 0);
  if (b) {
    double complex *ea = cfield(a, "field", NULL), *eb = cfield(b, "field", NULL);
    CU_ASSERT(rel_l2(ea, eb, 60) < 1e-14);
    free(ea), free(eb);
  }
  /* a port field of the wrong shape is the user's error */
  hc_job_t *c = NULL;
  TH_ASSERT_OK(hc_job_create(th_context(), "bpm", &c));
  TH_ASSERT_OK(hc_job_set_kv(c, "n=61"));
  TH_ASSERT_OK(hc_job_set_input(c, "field", in));
  CU_ASSERT_EQUAL(hc_job_run(c, dev, 0), HC_ERR_PARAM);
  hc_job_destroy(a), hc_job_destroy(b), hc_job_destroy(c);
  hc_field_destroy(in);
}

/* The direct march's two forms (line in registers, line in device
 * memory) make the same arithmetic: the same field on every device that
 * runs source kernels, with Hadley's walls too. */
static void test_line_forms_agree(void) {
  FOR_EACH_DEVICE(dev) {
    if (hc_device_info(dev)->languages & HC_LANG_BIT(HC_LANG_HOST)) continue;
    const char *dt = has_fp64(dev) ? "dtype=c128" : "dtype=c64";
    const double tol = has_fp64(dev) ? 1e-12 : 1e-5;
    for (int wall = 0; wall < 2; wall++) {
      const char *more = wall ? "n=300 Lz=20 bc=transparent launch=gauss tilt=3" : "n=300 Lz=20";
      const char *kp[] = {dt, "line=private", NULL}, *kg[] = {dt, "line=global", NULL};
      hc_job_t *a = run(dev, kp, more, 0), *b = run(dev, kg, more, 0);
      if (a && b) {
        double complex *ea = cfield(a, "field", NULL), *eb = cfield(b, "field", NULL);
        const double diff = rel_l2(ea, eb, 300);
        if (!(diff <= tol)) fprintf(stderr, "%s (%s): private vs global line %.3g\n", hc_device_name(dev), more, diff);
        CU_ASSERT(diff <= tol);
        free(ea), free(eb);
      }
      hc_job_destroy(a), hc_job_destroy(b);
    }
  }
}

/* A Richardson iteration that diverges stops with an error naming the z
 * step, on every device: a launch field near the largest c64 value is
 * finite (so it is accepted), and its right-hand side overflows at the
 * first step, which makes the residual non-finite. */
static void test_richardson_divergence_is_an_error(void) {
  const int64_t n = 200;
  float complex v[200];
  for (int i = 0; i < n; i++) v[i] = 3e37f * sinf((float)M_PI * (float)(i + 1) / (float)(n + 1));
  FOR_EACH_DEVICE(dev) {
    hc_field_t *in = NULL;
    TH_ASSERT_OK(hc_field_create(dev, HC_C64, 1, &n, &in));
    TH_ASSERT_OK(hc_field_write(in, v));
    hc_job_t *job = NULL;
    TH_ASSERT_OK(hc_job_create(th_context(), "bpm", &job));
    TH_ASSERT_OK(hc_job_set_kv(job, "n=200"));
    TH_ASSERT_OK(hc_job_set_kv(job, "steps=20"));
    TH_ASSERT_OK(hc_job_set_kv(job, "solver=richardson"));
    TH_ASSERT_OK(hc_job_set_input(job, "field", in));
    hc_status_t st = hc_job_run(job, dev, 0);
    CU_ASSERT_EQUAL(st, HC_ERR_VERIFY);
    if (st != HC_ERR_VERIFY || !strstr(hc_last_error(), "diverged at z step 1 of 20"))
      fprintf(stderr, "%s: %s: %s\n", hc_device_name(dev), hc_status_str(st), hc_last_error());
    CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "diverged at z step 1 of 20"));
    CU_ASSERT_PTR_NULL(hc_job_output(job, "field")); /* no output from a failed run */
    hc_job_destroy(job);
    hc_field_destroy(in);
  }
}

/* ------------------------------------------------------------ bad inputs */

static void test_bad_inputs(void) {
  char bad[512], args[1024];
  snprintf(bad, sizeof bad, "%s/index_7.npy", th_tmpdir());
  static double ones[7] = {1, 1, 1, 1, 1, 1, 1};
  int64_t shape[1] = {7};
  TH_ASSERT_OK(hc_npy_write(bad, HC_F64, 1, shape, ones));
  hc_device_t *dev = th_device("cpu");
  if (!dev) return;
  const char *id = hc_device_name(dev);
  th_expect_usage_error("bpm", id, "n=2", "n=2");
  th_expect_usage_error("bpm", id, "hz=0", "hz=0");
  th_expect_usage_error("bpm", id, "hz=-0.1", "hz=-0.1");
  th_expect_usage_error("bpm", id, "theta=1.5", "theta=1.5");
  th_expect_usage_error("bpm", id, "theta=-0.1", "theta=-0.1");
  th_expect_usage_error("bpm", id, "hz=0.1 steps=10", "hz=");
  th_expect_usage_error("bpm", id, "dim=2 n=8x8", "n=8x8");
  th_expect_usage_error("bpm", id, "dim=3 solver=richardson", "solver=richardson");
  th_expect_usage_error("bpm", id, "order=4", "order=4");
  th_expect_usage_error("bpm", id, "order=4 solver=richardson bc=transparent", "order=4");
  th_expect_usage_error("bpm", id, "profile=prism", "profile=prism");
  th_expect_usage_error("bpm", id, "profile=nosuch.npy", "profile=nosuch.npy");
  th_expect_usage_error("bpm", id, "launch=nosuch.npy", "launch=nosuch.npy");
  th_expect_usage_error("bpm", id, "offset=1,2", "offset=1,2");
  th_expect_usage_error("bpm", id, "bc=open", "bc=open");
  th_expect_usage_error("bpm", id, "bc=absorbing absorb_width=6", "absorb_width");
  snprintf(args, sizeof args, "n=8 profile=%s", bad);
  th_expect_usage_error("bpm", id, args, "shape (7,)");
  snprintf(args, sizeof args, "n=8 launch=%s", bad);
  th_expect_usage_error("bpm", id, args, "launch=");
  snprintf(args, sizeof args, "dim=3 n=7x7 profile=%s", bad);
  th_expect_usage_error("bpm", id, args, "needs shape (7, 7)");
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("bpm", NULL, NULL);
  CU_ADD_TEST(s, test_mode_phase);
  CU_ADD_TEST(s, test_power_conservation);
  CU_ADD_TEST(s, test_walls);
  CU_ADD_TEST(s, test_richardson_direct);
  CU_ADD_TEST(s, test_order4);
  CU_ADD_TEST(s, test_devices_agree);
  CU_ADD_TEST(s, test_richardson_paper_size_agrees);
  CU_ADD_TEST(s, test_verification_bounds);
  CU_ADD_TEST(s, test_sub_chains);
  CU_ADD_TEST(s, test_forwarded_rhs);
  CU_ADD_TEST(s, test_adi_separable);
  CU_ADD_TEST(s, test_gauss_width);
  CU_ADD_TEST(s, test_outputs_and_files);
  CU_ADD_TEST(s, test_input_port);
  CU_ADD_TEST(s, test_line_forms_agree);
  CU_ADD_TEST(s, test_richardson_divergence_is_an_error);
  CU_ADD_TEST(s, test_bad_inputs);
}

TH_MAIN(register_tests)
