/* bpm — finite-difference beam propagation by Crank-Nicolson (seed 003):
 * the plugin descriptor and run(). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bpm.h"

void bpm_result_free(bpm_result_t *r) {
  free(r->power);
  free(r->core_power);
  free(r->intensity);
  hc_field_destroy(r->field);
  hc_field_destroy(r->intensity_f);
  hc_field_destroy(r->power_f);
  memset(r, 0, sizeof *r);
}

static hc_status_t power_field(hc_device_t *dev, const bpm_config_t *c, bpm_result_t *r) {
  int64_t n = c->nsaved;
  hc_status_t st = hc_field_create(dev, c->f64 ? HC_F64 : HC_F32, 1, &n, &r->power_f);
  if (st != HC_OK) return st;
  void *h = malloc((size_t)n * 8);
  if (!h) return hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory");
  for (int64_t i = 0; i < n; i++) {
    if (c->f64)
      ((double *)h)[i] = r->power[i];
    else
      ((float *)h)[i] = (float)r->power[i];
  }
  st = hc_field_write(r->power_f, h);
  free(h);
  double dz = c->hz * (double)c->save_every, z0 = 0;
  hc_field_set_spacing(r->power_f, &dz);
  hc_field_set_origin(r->power_f, &z0);
  return st;
}

static void describe(hc_job_t *job, const bpm_config_t *c, const bpm_problem_t *p) {
  static const char *const bcs[] = {
#define BPM_BC_STR_(e, n) n,
      BPM_BC_LIST(BPM_BC_STR_)
#undef BPM_BC_STR_
  };
  if (c->dim == 2)
    hc_job_note(job, "grid: n=%lld, hy=%.6g um, hz=%.6g um, %lld steps to Lz=%g um, theta=%g, n0=%g, walls %s",
                (long long)c->ny, c->hy, c->hz, (long long)c->steps, c->Lz, c->theta, c->n0, bcs[c->bc]);
  else
    hc_job_note(
        job, "grid: %lldx%lld, hx=%.6g hy=%.6g um, hz=%.6g um, %lld ADI steps to Lz=%g um, theta=%g, n0=%g, walls %s",
        (long long)c->nx, (long long)c->ny, c->hx, c->hy, c->hz, (long long)c->steps, c->Lz, c->theta, c->n0,
        bcs[c->bc]);
  if (c->theta < 0.5) hc_job_note(job, "theta=%g < 0.5: the scheme is only conditionally stable", c->theta);
  (void)p;
}

/* Refuse a grid the device cannot hold before the host builds the medium and
 * the launch field (each as large as the grid): the two complex lines the
 * march needs at the least, then the 2^31-node limit of the kernels' indices. */
static hc_status_t check_size(hc_device_t *dev, const bpm_config_t *c) {
  const uint64_t nodes = (uint64_t)c->nx * (uint64_t)c->ny, cs = c->f64 ? 16 : 8;
  hc_status_t st = hc_device_check_memory(dev, nodes * cs * 2, "bpm's field and scratch");
  if (st == HC_OK && nodes > 2147483647u)
    st = hc_error(HC_ERR_PARAM, "parameter n=%lldx%lld: more than 2^31 nodes", (long long)c->nx, (long long)c->ny);
  return st;
}

hc_status_t bpm_run(hc_job_t *job) {
  bpm_config_t c;
  bpm_problem_t p;
  bpm_result_t r;
  memset(&p, 0, sizeof p);
  memset(&r, 0, sizeof r);
  hc_status_t st = bpm_config_from_job(job, &c);
  if (st != HC_OK) return st;
  if (c.launch == BPM_LAUNCH_PORT) { /* the launched beam's parameters do not apply to a field from a port */
    static const char *const beam[] = {"launch", "waist", "offset", "tilt"};
    for (size_t i = 0; i < sizeof beam / sizeof beam[0]; i++)
      if (!hc_job_given(job, beam[i])) hc_job_param_unused(job, beam[i]);
  }
  if ((st = check_size(hc_job_device(job), &c)) != HC_OK) return st;
  if ((st = bpm_problem_build(job, &c, &p)) != HC_OK) return st;
  describe(job, &c, &p);

  st = c.dim == 2 ? bpm_run2d(job, &c, &p, &r) : bpm_run3d(job, &c, &p, &r);
  if (st != HC_OK) goto out;
  hc_job_set_times(job, r.compute_s, r.device_s);
  hc_job_add_metric(job, "time_per_step_s", r.step_s, "s");
  hc_job_add_metric(job, "steps", (double)c.steps, "");
  if (c.dim == 3) {
    hc_job_add_metric(job, "adi_step_s", r.step_s, "s");
    if (r.bytes_per_step > 0) {
      double gbs = r.bytes_per_step / r.step_s / 1e9;
      hc_job_add_metric(job, "bandwidth_gbs", gbs, "GB/s");
      double peak = hc_device_info(hc_job_device(job))->peak_bandwidth_gbs;
      if (peak > 0) hc_job_add_metric(job, "bandwidth_fraction", gbs / peak, "");
    }
  }
  double drift = r.power[0] > 0 ? (r.power[c.nsaved - 1] - r.power[0]) / r.power[0] : 0;
  hc_job_add_metric(job, "power_drift", drift, "");
  hc_job_add_metric(job, "power_final", r.power[c.nsaved - 1], "um");
  hc_job_add_metric(job, "core_power_final", r.core_power[c.nsaved - 1], "um");
  if (c.solver == BPM_SOLVER_RICHARDSON) {
    hc_job_add_metric(job, "iterations_mean", r.iters_mean, "");
    hc_job_add_metric(job, "iterations_max", r.iters_max, "");
  }

  if ((st = power_field(hc_job_device(job), &c, &r)) != HC_OK) goto out;
  if (hc_job_verify_requested(job) && (st = bpm_verify(job, &c, &p, &r)) != HC_OK) goto out;
  if ((st = bpm_write_files(job, &c, &r)) != HC_OK) goto out;
  if ((st = hc_job_set_output(job, "field", r.field)) != HC_OK) goto out;
  r.field = NULL;
  if ((st = hc_job_set_output(job, "intensity", r.intensity_f)) != HC_OK) goto out;
  r.intensity_f = NULL;
  if ((st = hc_job_set_output(job, "power", r.power_f)) != HC_OK) goto out;
  r.power_f = NULL;
out:
  bpm_result_free(&r);
  bpm_problem_free(&p);
  return st;
}

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        HC_ABI_MINOR,
                        HC_PLUGIN_WORKLOAD,
                        0,
                        "bpm",
                        "1.0",
                        "beam propagation (Fresnel equation, Crank-Nicolson), 2-D line march and 3-D ADI (seed 003)",
                        &bpm_ops};
