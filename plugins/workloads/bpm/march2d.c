/* bpm: the 2-D run. The line lives on the device for the whole march: each
 * launch makes the steps between two saved rows inside one work-group and
 * writes that row of the intensity map; the host only sees the results. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bpm.h"
#include "host.h"

/* Work-group size of the line solvers on a device: a power of two with
 * about 8 unknowns per thread, within the device's group and local memory
 * limits (bpm_march2d keeps 10 T complex values in local memory). */
static size_t pick_group(const bpm_config_t *c, const hc_device_info_t *info, size_t per_thread_bytes) {
  size_t t = 32;
  if (c->group > 0) /* a power of two: the group sums halve it */
    for (t = 1; t * 2 <= (size_t)c->group;) t <<= 1;
  else
    while (t < 256 && (int64_t)t * 8 < c->ny) t <<= 1;
  size_t maxg = info->max_work_group_size ? info->max_work_group_size : 256;
  while (t > 1 && t > maxg) t >>= 1;
  while (t > 1 && info->local_mem_bytes && t * per_thread_bytes + 256 > info->local_mem_bytes) t >>= 1;
  return t;
}

/* The direct march keeps a thread's chunk in registers up to this many
 * unknowns, else in device memory (kernels.hcl, BPM_GLOBAL_LINE): the
 * private form's build grows with the chunk (a fully unrolled loop over
 * it; NVRTC takes seconds past about a hundred), and on a CPU device the
 * whole line sits on one thread's stack. */
#define BPM_PRIVATE_CHUNK_MAX 32

typedef struct {
  hc_buffer_t *coef, *zc, *band, *rband, *scratch, *stats, *line;
  hc_kernel_t *k;
} run2d_t;

static void run2d_free(run2d_t *s) {
  hc_buffer_destroy(s->coef);
  hc_buffer_destroy(s->zc);
  hc_buffer_destroy(s->band);
  hc_buffer_destroy(s->rband);
  hc_buffer_destroy(s->scratch);
  hc_buffer_destroy(s->stats);
  hc_buffer_destroy(s->line);
  hc_kernel_destroy(s->k);
}

/* The scheme's arrays on the host: coef = [r | inv | cp], and for Hadley's
 * walls zc = [z0 | z1], the plain solves of the unit vectors at the walls. */
static hc_status_t build_coefficients(const bpm_config_t *c, const bpm_axis_t *a, const bpm_problem_t *p,
                                      double complex **coef, double complex **zc) {
  const int64_t n = c->ny;
  *coef = malloc(3 * (size_t)n * sizeof **coef);
  *zc = calloc(2 * (size_t)n, sizeof **zc);
  if (!*coef || !*zc) return hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory");
  double complex *r = *coef, *inv = r + n, *cp = r + 2 * n;
  for (int64_t i = 0; i < n; i++) r[i] = 1 + a->beta * (-2 + a->vscale * p->v[i]);
  bpm_factor_line(a, c->theta, n, p->v, 1, cp, inv);
  if (c->bc == BPM_BC_TRANSPARENT) {
    (*zc)[0] = 1;
    (*zc)[2 * n - 1] = 1;
    bpm_solve_line(a, n, cp, inv, *zc, *zc);
    bpm_solve_line(a, n, cp, inv, *zc + n, *zc + n);
  }
  return HC_OK;
}

/* The direct march's private form keeps the whole line in its work-group's
 * private memory (2 x BPM_CHUNK unknowns an item, 2 n in all). A CPU device that runs
 * source kernels (PoCL) runs a work-group's items on one thread, whose
 * stack holds them all: a line beyond that stack would crash the process
 * in the kernel, so it is refused here, naming the sizes. The cpu
 * backend's host function and GPUs (registers, then per-thread local
 * memory) have no such whole-line limit within n's range. */
static hc_status_t check_private_memory(const hc_device_info_t *info, int64_t n, size_t cs) {
  if (info->type != HC_DEVICE_CPU || (info->languages & HC_LANG_BIT(HC_LANG_HOST))) return HC_OK;
  struct rlimit rl;
  uint64_t stack = 8u << 20; /* the threads' default where the limit is unset */
  if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) stack = (uint64_t)rl.rlim_cur;
  const uint64_t need = 2 * (uint64_t)n * cs, margin = 1u << 20; /* the kernel's other frames */
  if (need + margin <= stack) return HC_OK;
  return hc_error(HC_ERR_DEVICE_MEMORY,
                  "bpm: n=%lld keeps %.1f MiB of the line (2 x %lld unknowns of %zu bytes) in one work-group's "
                  "private memory, which %s holds on one thread's stack of %.1f MiB (ulimit -s): raise that "
                  "limit, or run on the cpu backend or a GPU",
                  (long long)n, (double)need / (1 << 20), (long long)n, cs, info->name, (double)stack / (1 << 20));
}

hc_status_t bpm_run2d(hc_job_t *job, const bpm_config_t *c, const bpm_problem_t *p, bpm_result_t *res) {
  hc_device_t *dev = hc_job_device(job);
  const hc_device_info_t *info = hc_device_info(dev);
  const int f64 = c->f64, rich = c->solver == BPM_SOLVER_RICHARDSON;
  const size_t cs = f64 ? 16 : 8, rs = f64 ? 8 : 4;
  const int64_t n = c->ny;
  run2d_t s;
  memset(&s, 0, sizeof s);
  double complex *coef = NULL, *zc = NULL, *band = NULL, *rband = NULL;
  int pq = 1;
  hc_status_t st;

  uint64_t bytes = (uint64_t)n * cs * (1 + 3 + 2) + (uint64_t)c->nsaved * n * rs;
  if (rich)
    bytes += (uint64_t)n * cs * (2 * 5 + 3) + 32 * (uint64_t)c->nsaved;
  else
    bytes += (uint64_t)n * cs; /* the global form's scratch line */
  if ((st = hc_device_check_memory(dev, bytes, "bpm's line, coefficients and intensity map")) != HC_OK) return st;

  const bpm_axis_t a = bpm_axis(c, c->hy, 1.0);
  if ((st = build_coefficients(c, &a, p, &coef, &zc)) != HC_OK) goto out;
  int64_t shape2[2] = {c->nsaved, n};
  if ((st = hc_field_create(dev, f64 ? HC_C128 : HC_C64, 1, &n, &res->field)) != HC_OK) goto out;
  if ((st = hc_field_create(dev, f64 ? HC_F64 : HC_F32, 2, shape2, &res->intensity_f)) != HC_OK) goto out;
  if ((st = bpm_upload_to(hc_field_buffer(res->field), f64, p->e0, (size_t)n)) != HC_OK) goto out;
  if ((st = bpm_upload(dev, f64, coef, 3 * (size_t)n, &s.coef)) != HC_OK) goto out;
  if ((st = bpm_upload(dev, f64, zc, 2 * (size_t)n, &s.zc)) != HC_OK) goto out;

  double complex tau = 0;
  double tol_run = c->tol;
  if (rich) {
    double rho;
    tau = bpm_richardson_tau(c, &a, p, &rho);
    if (c->tol <= 0) {
      /* the residual cannot fall below rounding times the condition
       * number |lambda_max/lambda_min| = sqrt(1 + (theta |alpha| |S|)^2) */
      double kond = sqrt(1 + pow(c->theta * cabs(a.alpha) * fabs(bpm_stencil_symbol(c->order, M_PI)), 2));
      tol_run = fmax(f64 ? 1e-12 : 1e-6, 30 * (f64 ? 2.2e-16 : 1.2e-7) * kond);
      hc_job_note(job, "richardson: tol=%.3g (rounding times the condition number %.3g)", tol_run, kond);
    }
    hc_job_note(job, "richardson: tau = %.6g%+.6gi, contraction per iteration about %.6f (%s)", creal(tau), cimag(tau),
                rho, rho < 1 ? "converges" : "may diverge");
    if ((st = bpm_build_bands(c, &a, p, &band, &rband, &pq)) != HC_OK) goto out;
    size_t bsize = bpm_band_size(n, pq, pq);
    if ((st = bpm_upload(dev, f64, band, bsize, &s.band)) != HC_OK) goto out;
    if ((st = bpm_upload(dev, f64, rband, bsize, &s.rband)) != HC_OK) goto out;
    if ((st = hc_buffer_create(dev, 3 * (size_t)n * cs, &s.scratch)) != HC_OK) goto out;
    if ((st = hc_buffer_create(dev, 32 * (size_t)c->nsaved, &s.stats)) != HC_OK) goto out;
    int64_t zero = 0;
    if ((st = hc_buffer_fill(s.stats, 0, &zero, 8, 32 * (size_t)c->nsaved)) != HC_OK) goto out;
  }

  /* The kernel: one work-group of T threads per line on a GPU, one call of
   * the host function on the cpu backend. */
  size_t T = pick_group(c, info, rich ? rs : 10 * cs);
  int global_line = 0;
  for (;;) {
    /* registers for at least 8 unknowns a thread, in steps of 4: fewer
     * program variants (each n below 256 shares one) */
    size_t chunk = ((size_t)n + T - 1) / T;
    chunk = chunk <= 8 ? 8 : (chunk + 3) / 4 * 4;
    global_line = !rich && (c->line == BPM_LINE_GLOBAL || (c->line == BPM_LINE_AUTO && chunk > BPM_PRIVATE_CHUNK_MAX));
    if (!rich && !global_line && (st = check_private_memory(info, n, cs)) != HC_OK) goto out;
    char opts[96];
    if (global_line)
      snprintf(opts, sizeof opts, "-DBPM_T=%zu -DBPM_GLOBAL_LINE=1", T);
    else
      snprintf(opts, sizeof opts, "-DBPM_T=%zu -DBPM_CHUNK=%zu", T, chunk);
    const bpm_host_kernels_t *hk = &bpm_host[f64];
    if ((st = bpm_kernel(dev, f64, rich ? "bpm_rich2d" : "bpm_march2d", rich ? hk->rich2d : hk->march2d, opts, &s.k)) !=
        HC_OK)
      goto out;
    if (hc_kernel_language(s.k) == HC_LANG_HOST || hc_kernel_max_group_size(s.k) >= T || T == 1) break;
    hc_kernel_destroy(s.k);
    s.k = NULL;
    T >>= 1;
  }
  const int host = hc_kernel_language(s.k) == HC_LANG_HOST;
  if (host)
    T = 1;
  else
    hc_job_note(job, "line solver: one work-group of %zu threads, %lld unknowns each%s", T,
                (long long)((n + (int64_t)T - 1) / (int64_t)T),
                rich          ? ""
                : global_line ? ", in device memory"
                              : ", in registers");
  if (global_line && !host && (st = hc_buffer_create(dev, (size_t)n * cs, &s.line)) != HC_OK) goto out;

  const int ni = (int)n, tbc = c->bc == BPM_BC_TRANSPARENT;
  const double lo_d[2] = {creal(a.lo), cimag(a.lo)}, be_d[2] = {creal(a.beta), cimag(a.beta)};
  const double tau_d[2] = {creal(tau), cimag(tau)}, tol_d = tol_run;
  const float lo_f[2] = {(float)lo_d[0], (float)lo_d[1]}, be_f[2] = {(float)be_d[0], (float)be_d[1]};
  const float tau_f[2] = {(float)tau_d[0], (float)tau_d[1]}, tol_f = (float)tol_d;
  const int iters = (int)(c->iters > 2147483647 ? 2147483647 : c->iters);

  int nsteps = 0;
  long row = 0;
#define RARG(name) (f64 ? HC_ARG_VAL(name##_d) : HC_ARG_VAL(name##_f))
#define RARG2(name, i) (f64 ? HC_ARG_VAL(name##_d[i]) : HC_ARG_VAL(name##_f[i]))
  hc_arg_t args[20];
  uint32_t nargs;
  if (!rich) {
    /* the last: the global form's scratch line (the private form's is unused) */
    hc_arg_t a13[13] = {HC_ARG_VAL(ni),
                        HC_ARG_VAL(nsteps),
                        HC_ARG_VAL(tbc),
                        RARG2(lo, 0),
                        RARG2(lo, 1),
                        RARG2(be, 0),
                        RARG2(be, 1),
                        HC_ARG_BUF(s.coef),
                        HC_ARG_BUF(s.zc),
                        HC_ARG_BUF(hc_field_buffer(res->field)),
                        HC_ARG_BUF(hc_field_buffer(res->intensity_f)),
                        HC_ARG_VAL(row),
                        HC_ARG_BUF(s.line ? s.line : hc_field_buffer(res->field))};
    memcpy(args, a13, sizeof a13);
    nargs = 13;
  } else {
    hc_arg_t a20[20] = {HC_ARG_VAL(ni),
                        HC_ARG_VAL(nsteps),
                        HC_ARG_VAL(tbc),
                        RARG2(lo, 0),
                        RARG2(lo, 1),
                        RARG2(be, 0),
                        RARG2(be, 1),
                        HC_ARG_BUF(s.rband),
                        HC_ARG_BUF(s.band),
                        HC_ARG_VAL(pq),
                        HC_ARG_VAL(pq),
                        RARG2(tau, 0),
                        RARG2(tau, 1),
                        HC_ARG_VAL(iters),
                        RARG(tol),
                        HC_ARG_BUF(hc_field_buffer(res->field)),
                        HC_ARG_BUF(s.scratch),
                        HC_ARG_BUF(s.stats),
                        HC_ARG_BUF(hc_field_buffer(res->intensity_f)),
                        HC_ARG_VAL(row)};
    memcpy(args, a20, sizeof a20);
    nargs = 20;
  }
#undef RARG
#undef RARG2

  double t0 = hc_now(), dev_s = 0;
  if ((st = hc_device_timer_begin(dev)) != HC_OK) goto out;
  int64_t done = 0;
  for (row = 0; row < c->nsaved; row++) {
    int64_t todo = row == 0 ? 0 : (c->steps - done < c->save_every ? c->steps - done : c->save_every);
    /* The kernels count steps in an int: more than INT_MAX steps between two
     * saved rows go in several launches (each writes the row; the last one
     * stands), never a truncated count. */
    do {
      nsteps = todo > INT_MAX ? INT_MAX : (int)todo;
      if ((st = bpm_launch(s.k, T, 0, T, 0, nargs, args)) != HC_OK) break;
      todo -= nsteps;
      done += nsteps;
    } while (todo > 0);
    if (st != HC_OK) break;
    if (host || row % 16 == 15)
      hc_job_progress(job, (double)done / (double)c->steps, "z = %.4g um", (double)done * c->hz);
  }
  hc_status_t st2 = hc_device_timer_end(dev, &dev_s);
  if (st == HC_OK) st = st2;
  if (st == HC_OK) st = hc_device_finish(dev);
  if (st != HC_OK) goto out;
  res->compute_s = hc_now() - t0;
  res->device_s = dev_s;
  res->step_s = (dev_s > 0 ? dev_s : res->compute_s) / (double)c->steps;

  if (rich) {
    int64_t *stats = malloc(32 * (size_t)c->nsaved);
    if (!stats) {
      st = hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory");
      goto out;
    }
    if ((st = hc_buffer_read(s.stats, 0, stats, 32 * (size_t)c->nsaved)) == HC_OK) {
      double sum = 0, mx = 0;
      int64_t diverged = 0; /* the first z step (1-based) whose iteration diverged */
      for (int64_t i = 0; i < c->nsaved; i++) {
        sum += (double)stats[4 * i];
        mx = fmax(mx, (double)stats[4 * i + 1]);
        res->nonconverged += stats[4 * i + 2];
        /* row i >= 1 ran steps (i-1) save_every + 1 ... */
        if (!diverged && stats[4 * i + 3]) diverged = (i - 1) * c->save_every + stats[4 * i + 3];
      }
      res->iters_mean = sum / (double)c->steps;
      res->iters_max = mx;
      if (diverged)
        st = hc_error(HC_ERR_VERIFY,
                      "bpm: solver=richardson diverged at z step %lld of %lld (z = %.6g um): the residual became "
                      "non-finite or grew past 1e6 times |b| (tau = %.6g%+.6gi); use solver=direct or a smaller hz",
                      (long long)diverged, (long long)c->steps, (double)diverged * c->hz, creal(tau), cimag(tau));
      else if (res->nonconverged)
        hc_job_note(job, "richardson: %lld of %lld steps did not reach tol=%g in iters=%lld",
                    (long long)res->nonconverged, (long long)c->steps, tol_run, (long long)c->iters);
    }
    free(stats);
    if (st != HC_OK) goto out;
  }

  /* The power trace from the intensity map, summed in double. */
  size_t count = (size_t)(c->nsaved * n);
  res->intensity = malloc(count * rs);
  res->power = calloc((size_t)c->nsaved, sizeof *res->power);
  res->core_power = calloc((size_t)c->nsaved, sizeof *res->core_power);
  if (!res->intensity || !res->power || !res->core_power) {
    st = hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory");
    goto out;
  }
  if ((st = hc_field_read(res->intensity_f, res->intensity)) != HC_OK) goto out;
  for (int64_t r = 0; r < c->nsaved; r++) {
    double w = 0, core = 0;
    for (int64_t i = 0; i < n; i++) {
      double v = f64 ? ((double *)res->intensity)[r * n + i] : ((float *)res->intensity)[r * n + i];
      w += v;
      if (p->core[i]) core += v;
    }
    res->power[r] = w * c->hy, res->core_power[r] = core * c->hy;
  }
  double h1 = c->hy, o1 = c->hy, h2[2] = {c->hz * (double)c->save_every, c->hy}, o2[2] = {0, c->hy};
  hc_field_set_spacing(res->field, &h1);
  hc_field_set_origin(res->field, &o1);
  hc_field_set_spacing(res->intensity_f, h2);
  hc_field_set_origin(res->intensity_f, o2);
out:
  free(coef);
  free(zc);
  free(band);
  free(rband);
  run2d_free(&s);
  return st;
}
