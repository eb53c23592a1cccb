/* nbody: charged particles in a magnetic field, all pairs (seed 002), on
 * every device here, in f32 and f64.
 *
 * Accelerations against a float64 reference written here (random states, N
 * not a multiple of the tile, N = 1, eps = 0, tuned tile shapes and j
 * slices); momentum conservation with B = 0; the diagnostics' energy and
 * momentum against the reference; a single charge gyrating in B (radius,
 * period, sense; Boris keeps |v|, Euler grows it by sqrt(1+(w dt)^2) a
 * step); initial states from .npy files and input ports; the serial
 * reference variant against the tiled kernel; --verify and the metrics; bad
 * inputs through hcrun (exit code 2, a message, nothing written). */
#include "harness.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const device_specs[] = {"cpu", "opencl", "cuda"};
#define NDEV (sizeof device_specs / sizeof device_specs[0])
#define KV(...) ((const char *const[]){__VA_ARGS__, NULL})

enum { X, Y, Z, VX, VY, VZ, Q, M, COLS };

/* ------------------------------------------------------------- helpers */

static char *fmt(char *buf, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));
static char *fmt(char *buf, size_t n, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, n, f, ap);
  va_end(ap);
  return buf;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(void) { /* [0, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* A random state: unit cube, velocities up to vmax, charges of both signs
 * (1/n scale), masses (0.5..2)/n, rounded to the working precision. */
static double *random_state(int64_t n, double vmax, int f64) {
  double *s = malloc((size_t)n * COLS * sizeof *s);
  for (int64_t i = 0; i < n; i++) {
    double *b = s + i * COLS;
    for (int d = 0; d < 3; d++) b[X + d] = rnd() - 0.5;
    for (int d = 0; d < 3; d++) b[VX + d] = vmax * (2 * rnd() - 1);
    b[Q] = (rnd() < 0.5 ? -1 : 1) * (0.5 + rnd()) / (double)n;
    b[M] = (0.5 + 1.5 * rnd()) / (double)n;
  }
  if (!f64)
    for (int64_t i = 0; i < n * COLS; i++) s[i] = (float)s[i];
  return s;
}

/* An (n, cols) field on dev holding host doubles (converted to dtype). */
static hc_field_t *make_field(hc_device_t *dev, const double *v, int64_t n, int64_t cols, int f64) {
  const int64_t shape[2] = {n, cols};
  hc_field_t *f = NULL;
  TH_ASSERT_OK(hc_field_create(dev, f64 ? HC_F64 : HC_F32, 2, shape, &f));
  void *buf = malloc((size_t)(n * cols) * (f64 ? 8 : 4));
  for (int64_t i = 0; i < n * cols; i++) {
    if (f64)
      ((double *)buf)[i] = v[i];
    else
      ((float *)buf)[i] = (float)v[i];
  }
  TH_ASSERT_OK(hc_field_write(f, buf));
  free(buf);
  return f;
}

/* Runs nbody with the "k=v" list and the state (n,8) input (or none);
 * NULL (with the error printed) when the run fails. */
static hc_job_t *run_nbody(hc_device_t *dev, hc_field_t *state, uint32_t flags, const char *const *kv) {
  hc_job_t *job = NULL;
  hc_status_t st = hc_job_create(th_context(), "nbody", &job);
  for (int i = 0; kv[i] && st == HC_OK; i++) st = hc_job_set_kv(job, kv[i]);
  if (st == HC_OK && state) st = hc_job_set_input(job, "state", state);
  if (st == HC_OK) st = hc_job_run(job, dev, flags);
  if (st != HC_OK) {
    fprintf(stderr, "nbody on %s:", hc_device_name(dev));
    for (int i = 0; kv[i]; i++) fprintf(stderr, " %s", kv[i]);
    fprintf(stderr, ": %s: %s\n", hc_status_name(st), hc_last_error());
    hc_job_destroy(job);
    return NULL;
  }
  return job;
}

/* An output as doubles (malloc'd), with its element count. */
static double *read_output(hc_job_t *job, const char *port, size_t *count) {
  hc_field_t *f = hc_job_output(job, port);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  size_t n = hc_field_count(f);
  void *raw = malloc(hc_field_bytes(f));
  double *v = malloc(n * sizeof *v);
  TH_ASSERT_OK(hc_field_read(f, raw));
  for (size_t i = 0; i < n; i++) v[i] = hc_field_dtype(f) == HC_F64 ? ((double *)raw)[i] : (double)((float *)raw)[i];
  free(raw);
  if (count) *count = n;
  return v;
}

/* Neumaier-compensated float64 reference: a_i = (q_i/m_i) [k sum_j q_j r_ij
 * / (|r_ij|^2+eps^2)^{3/2} + v_i x B], j != i (and, for eps = 0, j not at
 * r = 0). */
static void reference_acc(const double *s, int64_t n, double eps, double k, const double *B, double *acc) {
  for (int64_t i = 0; i < n; i++) {
    const double *bi = s + i * COLS;
    double sum[3] = {0, 0, 0}, comp[3] = {0, 0, 0};
    for (int64_t j = 0; j < n; j++) {
      const double *bj = s + j * COLS;
      double r[3] = {bi[X] - bj[X], bi[Y] - bj[Y], bi[Z] - bj[Z]};
      double d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
      if (j == i || (eps == 0 && d2 == 0)) continue;
      d2 += eps * eps;
      double f = bj[Q] / (d2 * sqrt(d2));
      for (int c = 0; c < 3; c++) {
        double x = f * r[c], t = sum[c] + x;
        comp[c] += fabs(sum[c]) >= fabs(x) ? (sum[c] - t) + x : (x - t) + sum[c];
        sum[c] = t;
      }
    }
    const double qm = bi[Q] / bi[M], *v = bi + VX;
    const double vxb[3] = {v[1] * B[2] - v[2] * B[1], v[2] * B[0] - v[0] * B[2], v[0] * B[1] - v[1] * B[0]};
    for (int c = 0; c < 3; c++) acc[3 * i + c] = qm * (k * (sum[c] + comp[c]) + vxb[c]);
  }
}

/* Total energy sum m v^2/2 + (k/2) sum_{i != j} q_i q_j / sqrt(r^2+eps^2). */
static double reference_energy(const double *s, int64_t n, double eps, double k) {
  long double e = 0;
  for (int64_t i = 0; i < n; i++) {
    const double *bi = s + i * COLS;
    e += 0.5L * bi[M] * (bi[VX] * bi[VX] + bi[VY] * bi[VY] + bi[VZ] * bi[VZ]);
    for (int64_t j = 0; j < n; j++) {
      const double *bj = s + j * COLS;
      double r[3] = {bi[X] - bj[X], bi[Y] - bj[Y], bi[Z] - bj[Z]};
      double d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
      if (j != i && d2 + eps * eps > 0) e += 0.5L * k * bi[Q] * bj[Q] / sqrt(d2 + eps * eps);
    }
  }
  return (double)e;
}

/* max_i |a_i - b_i| / max_i |b_i| over n 3-vectors. */
static double max_rel(const double *a, const double *b, int64_t n) {
  double d = 0, s = 0;
  for (int64_t i = 0; i < n; i++) {
    double dd = 0, ss = 0;
    for (int c = 0; c < 3; c++) {
      dd += (a[3 * i + c] - b[3 * i + c]) * (a[3 * i + c] - b[3 * i + c]);
      ss += b[3 * i + c] * b[3 * i + c];
    }
    d = fmax(d, sqrt(dd));
    s = fmax(s, sqrt(ss));
  }
  return s > 0 ? d / s : d;
}

static int has_fp64(hc_device_t *dev) { return hc_device_info(dev)->fp64 != 0; }

/* ------------------------------------------------------------- accelerations */

typedef struct {
  int64_t n;
  double eps, k, B[3];
  const char *extra[3]; /* more k=v, or NULL */
} acc_case_t;

static void check_acc_case(hc_device_t *dev, int f64, const acc_case_t *c) {
  double *s = random_state(c->n, 1.0, f64);
  hc_field_t *state = make_field(dev, s, c->n, COLS, f64);
  char e[64], k[64], b[128];
  const char *kv[10] = {f64 ? "dtype=f64" : "dtype=f32",
                        "steps=0",
                        "output_acc=true",
                        fmt(e, sizeof e, "eps=%.17g", c->eps),
                        fmt(k, sizeof k, "k=%.17g", c->k),
                        fmt(b, sizeof b, "B=%.17g,%.17g,%.17g", c->B[0], c->B[1], c->B[2])};
  for (int i = 0; i < 3 && c->extra[i]; i++) kv[6 + i] = c->extra[i];
  hc_job_t *job = run_nbody(dev, state, 0, kv);
  CU_ASSERT_PTR_NOT_NULL(job);
  if (job) {
    size_t cnt = 0;
    double *acc = read_output(job, "acc", &cnt), *ref = malloc((size_t)c->n * 3 * sizeof *ref);
    CU_ASSERT_EQUAL(cnt, (size_t)c->n * 3);
    reference_acc(s, c->n, c->eps, c->k, c->B, ref);
    double err = max_rel(acc, ref, c->n), tol = f64 ? 1e-12 : 1e-5;
    if (!(err <= tol))
      fprintf(stderr, "acc on %s %s n=%lld eps=%g: error %.3g > %.0e\n", hc_device_name(dev), f64 ? "f64" : "f32",
              (long long)c->n, c->eps, err, tol);
    CU_ASSERT(err <= tol);
    /* steps=0: the outputs are the initial state. */
    double *pos = read_output(job, "pos", NULL);
    double worst = 0;
    for (int64_t i = 0; i < c->n; i++)
      for (int d = 0; d < 3; d++) worst = fmax(worst, fabs(pos[3 * i + d] - s[i * COLS + X + d]));
    CU_ASSERT_EQUAL(worst, 0);
    free(pos);
    free(acc);
    free(ref);
    hc_job_destroy(job);
  }
  hc_field_destroy(state);
  free(s);
}

static void test_accelerations(void) {
  static const acc_case_t cases[] = {
      {300, 0.01, 1.7, {0.3, -0.2, 1.5}, {NULL}},                            /* N not a multiple of the tile */
      {37, 0.0, 1.0, {0, 0, 0}, {NULL}},                                     /* eps = 0: j == i skipped */
      {1, 0.01, 1.0, {0.5, 1.0, -2.0}, {NULL}},                              /* N = 1: only v x B */
      {700, 0.02, 1.0, {0, 0, 1}, {"wg=64", "bpt=3", "slices=3"}},           /* tuned shape, j slices */
      {129, 0.05, 2.0, {0, 0, 0}, {"diagnostics=true", "fast_rsqrt=false"}}, /* potential on, precise rsqrt */
  };
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    for (int f64 = 0; f64 < 2; f64++) {
      if (f64 && !has_fp64(dev)) continue;
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) check_acc_case(dev, f64, &cases[c]);
    }
  }
}

/* ------------------------------------------------------------- conservation */

/* B = 0: total momentum stays at its start to rounding (both integrators);
 * the diagnostics' first record equals the reference energy and momentum. */
static void test_momentum_and_energy(void) {
  const int64_t n = 128, steps = 50;
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    for (int f64 = 0; f64 < 2; f64++) {
      if (f64 && !has_fp64(dev)) continue;
      for (int boris = 0; boris < 2; boris++) {
        double *s = random_state(n, 0.5, f64);
        hc_field_t *state = make_field(dev, s, n, COLS, f64);
        hc_job_t *job = run_nbody(dev, state, 0,
                                  KV(f64 ? "dtype=f64" : "dtype=f32", "steps=50", "dt=1e-3", "eps=0.05", "B=0,0,0",
                                     boris ? "integrator=boris" : "integrator=euler", "diagnostics=true"));
        CU_ASSERT_PTR_NOT_NULL(job);
        if (job) {
          size_t ce = 0, cm = 0;
          double *en = read_output(job, "energy", &ce), *mom = read_output(job, "momentum", &cm);
          CU_ASSERT_EQUAL(ce, (size_t)steps + 1);
          CU_ASSERT_EQUAL(cm, 3 * ((size_t)steps + 1));
          double p0[3] = {0, 0, 0}, scale = 0;
          for (int64_t i = 0; i < n; i++) {
            const double *b = s + i * COLS;
            for (int c = 0; c < 3; c++) p0[c] += b[M] * b[VX + c];
            scale += b[M] * sqrt(b[VX] * b[VX] + b[VY] * b[VY] + b[VZ] * b[VZ]);
          }
          double drift = 0;
          for (int64_t t = 0; t <= steps; t++)
            for (int c = 0; c < 3; c++) drift = fmax(drift, fabs(mom[3 * t + c] - mom[c]));
          const double tol = f64 ? 1e-13 : 1e-6;
          if (!(drift / scale <= tol))
            fprintf(stderr, "momentum on %s %s %s: drift %.3g of sum m|v| > %.0e\n", hc_device_name(dev),
                    f64 ? "f64" : "f32", boris ? "boris" : "euler", drift / scale, tol);
          CU_ASSERT(drift / scale <= tol);
          if (!boris) { /* Euler's record 0 is the initial state itself */
            double e_ref = reference_energy(s, n, 0.05, 1.0), pd = 0;
            for (int c = 0; c < 3; c++) pd = fmax(pd, fabs(mom[c] - p0[c]));
            const double etol = f64 ? 1e-11 : 1e-5;
            if (!(fabs(en[0] - e_ref) <= etol * fabs(e_ref)))
              fprintf(stderr, "energy on %s %s: %.17g vs reference %.17g\n", hc_device_name(dev), f64 ? "f64" : "f32",
                      en[0], e_ref);
            CU_ASSERT(fabs(en[0] - e_ref) <= etol * fabs(e_ref));
            CU_ASSERT(pd <= (f64 ? 1e-14 : 1e-6) * scale);
          } else { /* Boris with a small dt: the energy barely moves */
            CU_ASSERT(fabs(en[steps] - en[0]) <= 1e-3 * fabs(en[0]));
          }
          free(en);
          free(mom);
          hc_job_destroy(job);
        }
        hc_field_destroy(state);
        free(s);
      }
    }
  }
}

/* ------------------------------------------------------------- gyration */

/* One charge in B = (0, 0, B0): radius r = m v_perp / (|q| B0), period
 * T = 2 pi m / (|q| B0), sense of rotation set by the sign of q. */
static void gyrate(hc_device_t *dev, int f64, double q, const char *integ, int64_t steps, double dt, double *pos,
                   double *vel) {
  const double s[COLS] = {0.25, -0.5, 0.125, 0.8, 0.0, 0.3, q, 0.5};
  hc_field_t *state = make_field(dev, s, 1, COLS, f64);
  char st[64], t[64], in[64];
  hc_job_t *job =
      run_nbody(dev, state, 0,
                KV(f64 ? "dtype=f64" : "dtype=f32", "B=0,0,2", fmt(st, sizeof st, "steps=%lld", (long long)steps),
                   fmt(t, sizeof t, "dt=%.17g", dt), fmt(in, sizeof in, "integrator=%s", integ)));
  CU_ASSERT_PTR_NOT_NULL_FATAL(job);
  double *p = read_output(job, "pos", NULL), *v = read_output(job, "vel", NULL);
  memcpy(pos, p, 3 * sizeof *pos);
  memcpy(vel, v, 3 * sizeof *vel);
  free(p);
  free(v);
  hc_job_destroy(job);
  hc_field_destroy(state);
}

static void test_gyration(void) {
  const double B0 = 2, m = 0.5, vperp = 0.8, vpar = 0.3, x0[3] = {0.25, -0.5, 0.125};
  const int64_t per = 200; /* steps per period: w dt = 0.031 */
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    for (int f64 = 0; f64 < 2; f64++) {
      if (f64 && !has_fp64(dev)) continue;
      const double tol = f64 ? 1e-11 : 5e-5; /* rounding over the steps */
      for (int sign = -1; sign <= 1; sign += 2) {
        const double q = 1.5 * sign, w = fabs(q) * B0 / m, T = 2 * M_PI / w, dt = T / (double)per;
        const double r = m * vperp / (fabs(q) * B0);
        /* Boris turns v by theta = 2 atan(w dt / 2) a step, so x_k lies on
         * a circle of radius R = r sqrt(1 + (w dt/2)^2), 2R sin(k theta/2)
         * from x_0: R and the period differ from r and T by O((w dt)^2). */
        const double theta = 2 * atan(0.5 * w * dt), R = r * sqrt(1 + 0.25 * (w * dt) * (w * dt));
        double p[3], v[3];
        /* Half a period: across the circle, on the side the sign of q fixes. */
        gyrate(dev, f64, q, "boris", per / 2, dt, p, v);
        double chord = hypot(p[0] - x0[0], p[1] - x0[1]), want = 2 * R * sin(0.5 * theta * (double)(per / 2));
        if (!(fabs(chord - want) <= tol * want))
          fprintf(stderr, "gyration on %s %s: chord %.17g want %.17g\n", hc_device_name(dev), f64 ? "f64" : "f32",
                  chord, want);
        CU_ASSERT(fabs(chord - want) <= tol * want);
        CU_ASSERT(fabs(0.5 * chord - r) <= 0.5 * (w * dt) * (w * dt) * r); /* radius m v_perp / (|q| B) */
        CU_ASSERT(sign > 0 ? p[1] < x0[1] - 1.9 * r : p[1] > x0[1] + 1.9 * r);
        CU_ASSERT(fabs(p[2] - (x0[2] + vpar * (double)(per / 2) * dt)) <= (f64 ? 1e-12 : 1e-5));
        /* Boris keeps |v| to rounding. */
        double speed = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]), s0 = hypot(vperp, vpar);
        CU_ASSERT(fabs(speed - s0) <= (f64 ? 1e-14 : 1e-6) * s0);
        /* One period 2 pi m / (|q| B): back at the start, up to the
         * O((w dt)^2) phase lag the formula gives. */
        gyrate(dev, f64, q, "boris", per, dt, p, v);
        double back = hypot(p[0] - x0[0], p[1] - x0[1]), lag = 2 * R * fabs(sin(0.5 * theta * (double)per));
        CU_ASSERT(fabs(back - lag) <= tol * 2 * r);
        CU_ASSERT(back <= (w * dt) * (w * dt) * r);
        /* Euler: |v_perp| grows by sqrt(1 + (w dt)^2) a step, v_par stays. */
        const int64_t k = 20;
        gyrate(dev, f64, q, "euler", k, dt, p, v);
        double grow = pow(1 + (w * dt) * (w * dt), 0.5 * (double)k), got = hypot(v[0], v[1]) / vperp;
        if (!(fabs(got - grow) <= (f64 ? 1e-13 : 1e-6) * grow))
          fprintf(stderr, "euler growth on %s %s: %.17g want %.17g\n", hc_device_name(dev), f64 ? "f64" : "f32", got,
                  grow);
        CU_ASSERT(fabs(got - grow) <= (f64 ? 1e-13 : 1e-6) * grow);
        CU_ASSERT(grow > 1.009); /* the growth is far above the tolerance */
        CU_ASSERT(fabs(v[2] - vpar) <= (f64 ? 1e-15 : 1e-7));
      }
    }
  }
}

/* ------------------------------------------------------------- initial states */

static void test_initial_states(void) {
  hc_device_t *dev = th_device("cpu");
  CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
  const int64_t n = 70;
  double *s = random_state(n, 1.0, 1);
  char path[512], arg[600];
  fmt(path, sizeof path, "%s/state70.npy", th_tmpdir());
  const int64_t shape[2] = {n, COLS};
  TH_ASSERT_OK(hc_npy_write(path, HC_F64, 2, shape, s));
  /* init=file: the outputs at steps=0 are the file's positions, velocities. */
  hc_job_t *job = run_nbody(dev, NULL, 0, KV("dtype=f64", "steps=0", fmt(arg, sizeof arg, "init=%s", path)));
  CU_ASSERT_PTR_NOT_NULL_FATAL(job);
  double *pos = read_output(job, "pos", NULL), *vel = read_output(job, "vel", NULL);
  int same = 1;
  for (int64_t i = 0; i < n; i++)
    for (int c = 0; c < 3; c++) same &= pos[3 * i + c] == s[i * COLS + X + c] && vel[3 * i + c] == s[i * COLS + VX + c];
  CU_ASSERT(same);
  free(pos);
  free(vel);
  hc_job_destroy(job);
  /* pos and vel inputs replace the state's. */
  double *p3 = malloc((size_t)n * 3 * sizeof *p3);
  for (int64_t i = 0; i < 3 * n; i++) p3[i] = 0.25 * (double)i;
  hc_field_t *fp = make_field(dev, p3, n, 3, 1), *fs = make_field(dev, s, n, COLS, 1);
  hc_job_t *j2 = NULL;
  TH_ASSERT_OK(hc_job_create(th_context(), "nbody", &j2));
  TH_ASSERT_OK(hc_job_set_kv(j2, "dtype=f64"));
  TH_ASSERT_OK(hc_job_set_kv(j2, "steps=0"));
  TH_ASSERT_OK(hc_job_set_input(j2, "state", fs));
  TH_ASSERT_OK(hc_job_set_input(j2, "pos", fp));
  TH_ASSERT_OK(hc_job_run(j2, dev, 0));
  pos = read_output(j2, "pos", NULL);
  vel = read_output(j2, "vel", NULL);
  same = 1;
  for (int64_t i = 0; i < n; i++)
    for (int c = 0; c < 3; c++) same &= pos[3 * i + c] == p3[3 * i + c] && vel[3 * i + c] == s[i * COLS + VX + c];
  CU_ASSERT(same);
  free(pos);
  free(vel);
  hc_job_destroy(j2);
  /* pos alone: the built-in state supplies charges and masses, n from pos. */
  hc_job_t *j3 = NULL;
  TH_ASSERT_OK(hc_job_create(th_context(), "nbody", &j3));
  TH_ASSERT_OK(hc_job_set_kv(j3, "steps=1"));
  TH_ASSERT_OK(hc_job_set_input(j3, "pos", fp));
  TH_ASSERT_OK(hc_job_run(j3, dev, 0));
  CU_ASSERT_EQUAL(hc_field_shape(hc_job_output(j3, "pos"))[0], n);
  /* ... and a disagreeing n= is refused. */
  TH_ASSERT_OK(hc_job_set_kv(j3, "n=71"));
  CU_ASSERT_EQUAL(hc_job_run(j3, dev, 0), HC_ERR_PARAM);
  CU_ASSERT(strstr(hc_last_error(), "n=71") != NULL);
  hc_job_destroy(j3);
  /* Every built-in state runs, with momentum removed. */
  static const char *const inits[] = {"init=cube", "init=plummer", "init=two-stream"};
  for (int i = 0; i < 3; i++) {
    hc_job_t *j = run_nbody(dev, NULL, 0, KV(inits[i], "n=100", "steps=0", "dtype=f64"));
    CU_ASSERT_PTR_NOT_NULL(j);
    hc_job_destroy(j);
  }
  hc_field_destroy(fp);
  hc_field_destroy(fs);
  free(p3);
  free(s);
}

/* ------------------------------------------------------------- variants, verify, metrics */

/* The serial reference loop and the tiled host kernel agree after steps. */
static void test_serial_reference(void) {
  hc_device_t *dev = th_device("cpu");
  CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
  const int64_t n = 150;
  double *s = random_state(n, 0.5, 1);
  hc_field_t *state = make_field(dev, s, n, COLS, 1);
  double *out[2] = {NULL, NULL};
  for (int v = 0; v < 2; v++) {
    hc_job_t *job = run_nbody(
        dev, state, 0,
        KV("dtype=f64", "steps=5", "B=0,1,1", "diagnostics=true", v ? "variant=serial-reference" : "variant=tiled"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(job);
    out[v] = read_output(job, "pos", NULL);
    hc_job_destroy(job);
  }
  CU_ASSERT(max_rel(out[0], out[1], n) <= 1e-13);
  free(out[0]);
  free(out[1]);
  hc_field_destroy(state);
  free(s);
}

static void test_verify_and_metrics(void) {
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    for (int f64 = 0; f64 < 2; f64++) {
      if (f64 && !has_fp64(dev)) continue;
      hc_job_t *job = run_nbody(dev, NULL, HC_RUN_VERIFY,
                                KV(f64 ? "dtype=f64" : "dtype=f32", "n=500", "steps=3", "init=plummer", "B=0,0,1"));
      CU_ASSERT_PTR_NOT_NULL(job);
      if (!job) continue;
      const char *msg = NULL;
      CU_ASSERT_EQUAL(hc_job_verified(job, &msg), 1);
      double fps = 0, ips = 0, gf = 0;
      TH_ASSERT_OK(hc_job_metric_find(job, "steps_per_s", &fps));
      TH_ASSERT_OK(hc_job_metric_find(job, "interactions_per_s", &ips));
      TH_ASSERT_OK(hc_job_metric_find(job, "gflops", &gf));
      CU_ASSERT(fps > 0 && ips > 0 && gf > 0);
      CU_ASSERT(fabs(ips - fps * 500.0 * 500.0) <= 1e-9 * ips);
      CU_ASSERT(fabs(gf - 20 * ips / 1e9) <= 1e-9 * gf);
      hc_job_times_t t;
      hc_job_times(job, &t);
      CU_ASSERT(t.compute_s > 0);
      hc_job_destroy(job);
    }
  }
}

/* ------------------------------------------------------------- bad inputs */

/* hcrun with n=64 steps=2 and args exits 2, says `needle`, writes nothing. */
static void expect_usage_error(const char *device, const char *args, const char *needle) {
  char all[1024];
  snprintf(all, sizeof all, "n=64 steps=2 %s", args);
  th_expect_usage_error("nbody", device, all, needle);
}

static void test_bad_inputs(void) {
  char bad[512], four[512], args[1024];
  static double zeros[10 * 7], four_bodies[4 * COLS];
  const int64_t s7[2] = {10, 7}, s8[2] = {4, COLS};
  fmt(bad, sizeof bad, "%s/state_10x7.npy", th_tmpdir());
  TH_ASSERT_OK(hc_npy_write(bad, HC_F64, 2, s7, zeros));
  for (int i = 0; i < 4; i++) four_bodies[i * COLS + M] = 1; /* a valid state of 4 bodies, one with m < 0 below */
  fmt(four, sizeof four, "%s/state_4.npy", th_tmpdir());
  TH_ASSERT_OK(hc_npy_write(four, HC_F64, 2, s8, four_bodies));
  for (size_t d = 0; d < NDEV; d++) {
    hc_device_t *dev = th_device(device_specs[d]);
    if (!dev) continue;
    const char *id = hc_device_name(dev);
    expect_usage_error(id, "n=0", "n=0");
    expect_usage_error(id, "dt=0", "dt=0");
    expect_usage_error(id, "dt=-0.5", "dt=-0.5");
    expect_usage_error(id, "B=1,2", "B");
    expect_usage_error(id, "B=1,x,3", "B=1,x,3");
    expect_usage_error(id, "B=1,2,3,4", "B");
    expect_usage_error(id, "init=nosuch.npy", "init=nosuch.npy");
    expect_usage_error(id, "wg=100", "wg=100");
    expect_usage_error(id, "integrator=leapfrog", "integrator");
    expect_usage_error(id, fmt(args, sizeof args, "init=%s", bad), "(n,8)");
    expect_usage_error(id, fmt(args, sizeof args, "init=%s", four), "n=64"); /* n= disagrees with the file */
  }
  four_bodies[2 * COLS + M] = -1;
  TH_ASSERT_OK(hc_npy_write(four, HC_F64, 2, s8, four_bodies));
  expect_usage_error("cpu", fmt(args, sizeof args, "init=%s n=4", four), "mass");
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("nbody", NULL, NULL);
  CU_ADD_TEST(s, test_accelerations);
  CU_ADD_TEST(s, test_momentum_and_energy);
  CU_ADD_TEST(s, test_gyration);
  CU_ADD_TEST(s, test_initial_states);
  CU_ADD_TEST(s, test_serial_reference);
  CU_ADD_TEST(s, test_verify_and_metrics);
  CU_ADD_TEST(s, test_bad_inputs);
}

TH_MAIN(register_tests)
