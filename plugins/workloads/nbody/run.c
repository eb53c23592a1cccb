/* nbody: one run — initial state, optional check of the device's field
 * against the float64 reference, the timed step loop, outputs, metrics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nbody.h"

/* Rounds the host state to the working precision, so that the reference
 * and the device start from the same numbers. */
static void round_to_f32(nb_bodies_t *b) {
  for (int64_t i = 0; i < b->n * NB_COLS; i++) b->s[i] = (double)(float)b->s[i];
}

/* --verify: the device's field at the initial positions against the
 * float64 reference on up to 256 bodies spread over the range. The error
 * is max_i |E_i - E_ref,i| / max_i |E_ref,i| over them (a per-body ratio
 * would judge rounding against sums that nearly cancel). A split run's
 * part checks the samples in its slice; the maxima and the count are
 * reduced over the parts. */
#define NB_VERIFY_SAMPLE 256
static hc_status_t verify_field(hc_job_t *job, nb_sim_t *s, const nb_bodies_t *b) {
  const int64_t count = b->n < NB_VERIFY_SAMPLE ? b->n : NB_VERIFY_SAMPLE;
  const size_t fbytes = (size_t)s->nslices * (size_t)s->npad * 4 * s->es;
  int64_t *idx = malloc((size_t)count * sizeof *idx);
  double *ref = malloc((size_t)count * 3 * sizeof *ref);
  void *dev = malloc(fbytes);
  hc_status_t st = HC_OK;
  if (!idx || !ref || !dev) {
    st = hc_error(HC_ERR_NO_MEMORY, "nbody: out of host memory for the verification");
    goto out;
  }
  int64_t mine = 0;
  for (int64_t k = 0; k < count; k++) {
    const int64_t i = count > 1 ? k * (b->n - 1) / (count - 1) : 0;
    if (i >= s->lo && i < s->hi) idx[mine++] = i;
  }
  if ((st = nb_sim_field(s, 0)) != HC_OK || (st = hc_buffer_read(s->field, 0, dev, fbytes)) != HC_OK) goto out;
  nb_reference_field(b, s->cfg->f64 ? s->eps2.d : (double)s->eps2.f, s->guard, idx, mine, ref);
  double worst = 0, scale = 0;
  for (int64_t k = 0; k < mine; k++) {
    double d2 = 0, r2 = 0;
    for (int c = 0; c < 3; c++) {
      double e = 0;
      for (int sl = 0; sl < s->nslices; sl++) {
        size_t at = 4 * ((size_t)sl * (size_t)s->npad + (size_t)idx[k]) + (size_t)c;
        e += s->cfg->f64 ? ((double *)dev)[at] : (double)((float *)dev)[at];
      }
      d2 += (e - ref[3 * k + c]) * (e - ref[3 * k + c]);
      r2 += ref[3 * k + c] * ref[3 * k + c];
    }
    worst = fmax(worst, sqrt(d2));
    scale = fmax(scale, sqrt(r2));
  }
  hc_part_t *part = hc_job_part(job);
  double maxima[2] = {worst, scale};
  if (part && (st = hc_part_allreduce(part, HC_REDUCE_MAX, maxima, 2)) != HC_OK) goto out;
  worst = maxima[0];
  scale = maxima[1];
  const double err = scale > 0 ? worst / scale : worst, tol = s->cfg->f64 ? 1e-12 : 1e-5;
  hc_job_add_metric(job, "field_rel_error", err, "");
  hc_job_set_verified(job, err <= tol,
                      "field at the initial state vs float64 reference on %lld bodies: max |dE| / max |E| = %.3g "
                      "(tolerance %.0e)",
                      (long long)count, err, tol);
out:
  free(idx);
  free(ref);
  free(dev);
  return st;
}

/* The energy (steps+1) and momentum (steps+1, 3) traces as output fields. */
static hc_status_t output_traces(hc_job_t *job, nb_sim_t *s) {
  const int64_t rows = s->cfg->steps + 1;
  const size_t ds = s->diag_f64 ? 8 : 4;
  void *t = malloc((size_t)rows * NB_DIAG * ds);
  double *e = malloc((size_t)rows * 4 * sizeof *e);
  void *cast = malloc((size_t)rows * 4 * s->es);
  hc_field_t *fe = NULL, *fm = NULL;
  hc_status_t st = HC_OK;
  if (!t || !e || !cast) {
    st = hc_error(HC_ERR_NO_MEMORY, "nbody: out of host memory for the traces");
    goto out;
  }
  if ((st = hc_buffer_read(s->trace, 0, t, (size_t)rows * NB_DIAG * ds)) != HC_OK) goto out;
  for (int64_t r = 0; r < rows; r++) {
    double v[NB_DIAG];
    for (int c = 0; c < NB_DIAG; c++)
      v[c] = s->diag_f64 ? ((double *)t)[r * NB_DIAG + c] : (double)((float *)t)[r * NB_DIAG + c];
    e[4 * r] = v[NB_KE] + v[NB_PE];
    for (int c = 0; c < 3; c++) e[4 * r + 1 + c] = v[NB_PX + c];
  }
  /* Change of the totals from the start, for the report. */
  const double e0 = e[0], e1 = e[4 * (rows - 1)];
  double dp = 0;
  for (int c = 0; c < 3; c++) dp += (e[4 * (rows - 1) + 1 + c] - e[1 + c]) * (e[4 * (rows - 1) + 1 + c] - e[1 + c]);
  hc_job_add_metric(job, "energy_drift", e0 != 0 ? fabs(e1 - e0) / fabs(e0) : fabs(e1 - e0), "");
  hc_job_add_metric(job, "momentum_change", sqrt(dp), "");
  const hc_dtype_t dt = s->cfg->f64 ? HC_F64 : HC_F32;
  const int64_t she[1] = {rows}, shm[2] = {rows, 3};
  if ((st = hc_field_create(s->dev, dt, 1, she, &fe)) != HC_OK ||
      (st = hc_field_create(s->dev, dt, 2, shm, &fm)) != HC_OK)
    goto out;
  for (int pass = 0; pass < 2; pass++) {
    const int64_t cols = pass ? 3 : 1;
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++) {
        const double v = e[4 * r + (pass ? 1 + c : 0)];
        if (s->cfg->f64)
          ((double *)cast)[r * cols + c] = v;
        else
          ((float *)cast)[r * cols + c] = (float)v;
      }
    if ((st = hc_field_write(pass ? fm : fe, cast)) != HC_OK) goto out;
  }
  hc_field_set_name(fe, "energy");
  hc_field_set_name(fm, "momentum");
  st = hc_job_set_output(job, "energy", fe);
  fe = NULL;
  if (st == HC_OK) st = hc_job_set_output(job, "momentum", fm);
  fm = NULL;
out:
  hc_field_destroy(fe);
  hc_field_destroy(fm);
  free(t);
  free(e);
  free(cast);
  return st;
}

static void add_metrics(hc_job_t *job, const nb_sim_t *s, double seconds, double device_s) {
  const nb_config_t *c = s->cfg;
  const hc_device_info_t *in = hc_device_info(s->dev);
  const double t = seconds > 0 ? seconds : 1e-30;
  const double inter = (double)s->n * (double)s->n * (double)c->steps;
  const double gflops = 20.0 * inter / t / 1e9;
  hc_job_add_metric(job, "steps_per_s", (double)c->steps / t, "1/s");
  hc_job_add_metric(job, "interactions_per_s", inter / t, "1/s");
  hc_job_add_metric(job, "gflops", gflops, "GFLOP/s");
  const double peak = c->f64 ? in->peak_fp64_gflops : in->peak_fp32_gflops;
  if (peak > 0) hc_job_add_metric(job, "peak_fraction", gflops / peak, "");
  hc_job_add_metric(job, "ms_per_step", 1e3 * t / (double)c->steps, "ms");
  hc_job_note(job,
              "%lld bodies (%lld with padding), %d j-slice%s, %s, %s; flops counted at 20 per interaction "
              "(N^2 per step) as in the paper; device time %.4g s",
              (long long)s->n, (long long)s->npad, s->nslices, s->nslices > 1 ? "s" : "", c->boris ? "Boris" : "Euler",
              c->serial ? "serial-reference (plain double loop, one thread)"
              : s->host ? "host kernel"
                        : "tiled kernel",
              device_s);
}

static hc_status_t step_loop(hc_job_t *job, nb_sim_t *s, double *seconds, double *device_s) {
  const nb_config_t *c = s->cfg;
  hc_part_t *part = hc_job_part(job);
  hc_status_t st = hc_device_timer_begin(s->dev);
  if (st != HC_OK) return st;
  const double t0 = hc_now();
  for (int64_t k = 0; k < c->steps && st == HC_OK; k++) {
    st = nb_sim_field(s, 0);
    if (st == HC_OK) st = nb_sim_update(s, k, 1);
    if (st == HC_OK && part) st = nb_split_share_positions(s, part);
    hc_job_progress(job, (double)(k + 1) / (double)c->steps, "step %lld of %lld", (long long)(k + 1),
                    (long long)c->steps);
  }
  if (st == HC_OK) st = hc_device_finish(s->dev);
  *seconds = hc_now() - t0;
  hc_status_t st2 = hc_device_timer_end(s->dev, device_s);
  return st != HC_OK ? st : st2;
}

hc_status_t nb_run(hc_job_t *job) {
  nb_config_t cfg;
  nb_bodies_t bodies = {0, NULL};
  nb_sim_t sim;
  memset(&sim, 0, sizeof sim);
  hc_field_t *outs[3] = {NULL, NULL, NULL};
  hc_part_t *part = hc_job_part(job); /* NULL: the whole run */
  hc_status_t st = nb_config_read(job, &cfg);
  if (st != HC_OK) return st;
  /* The host copy of the bodies is as large as the device's state: refuse a
   * count the device cannot hold before building it (nb_sim_create checks
   * the exact total once the tiling is known). */
  if (cfg.n && (st = hc_device_check_memory(hc_job_device(job), (uint64_t)cfg.n * (2 * 4 + 2 * 3) * (cfg.f64 ? 8 : 4),
                                            "nbody's state and output fields")) != HC_OK)
    return st;
  if ((st = nb_bodies_init(job, &cfg, &bodies)) != HC_OK) return st;
  if (!cfg.f64) round_to_f32(&bodies);
  if ((st = nb_sim_create(hc_job_device(job), &cfg, &bodies, &sim)) != HC_OK) goto out;
  if (part) { /* this part's slice of the bodies */
    int64_t lo = 0, hi = 0;
    hc_part_range(part, &lo, &hi);
    nb_sim_set_slice(&sim, lo, hi);
  }
  if (hc_job_verify_requested(job) && (st = verify_field(job, &sim, &bodies)) != HC_OK) goto out;

  double seconds = 0, device_s = 0;
  if ((st = nb_sim_warm_up(&sim)) != HC_OK || (st = step_loop(job, &sim, &seconds, &device_s)) != HC_OK) goto out;
  hc_job_set_times(job, seconds, device_s);
  if (cfg.steps > 0)
    add_metrics(job, &sim, seconds, device_s);
  else
    hc_job_note(job, "steps=0: no time steps, only the initial state");

  /* Diagnostics of the final state; accelerations of the final state. */
  if (cfg.diagnostics || cfg.output_acc) {
    if ((st = nb_sim_field(&sim, 0)) != HC_OK) goto out;
    if (cfg.diagnostics && (st = nb_sim_update(&sim, cfg.steps, 0)) != HC_OK) goto out;
  }
  static const char *const names[3] = {"pos", "vel", "acc"};
  for (int i = 0; i < (cfg.output_acc ? 3 : 2); i++) {
    if ((st = nb_sim_output3(&sim, names[i], &outs[i])) != HC_OK) goto out;
    if (part && (st = hc_part_own_rows(part, &outs[i])) != HC_OK) goto out;
  }
  if ((st = hc_device_finish(sim.dev)) != HC_OK) goto out;
  if (cfg.diagnostics && part && (st = nb_split_reduce_traces(&sim, part)) != HC_OK) goto out;
  /* A split run's traces are whole on every part: part 0 hands them over
   * (the core takes a non-row output from part 0). */
  if (cfg.diagnostics && (!part || hc_part_index(part) == 0) && (st = output_traces(job, &sim)) != HC_OK) goto out;
  for (int i = 0; i < 3; i++) {
    if (!outs[i]) continue;
    st = hc_job_set_output(job, names[i], outs[i]);
    outs[i] = NULL;
    if (st != HC_OK) goto out;
  }
out:
  for (int i = 0; i < 3; i++) hc_field_destroy(outs[i]);
  nb_sim_destroy(&sim);
  nb_bodies_free(&bodies);
  return st;
}
