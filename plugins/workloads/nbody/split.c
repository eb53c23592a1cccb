/* nbody split over a device set (HC_SPLIT_REPLICATED): every part holds
 * all bodies, computes the field of and steps its own slice [lo, hi), and
 * the parts all-gather the new positions after each step. Each body's
 * field still sums over all bodies in the same order as on one device, so
 * parts that compute alike give the one-device result bit for bit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nbody.h"

hc_status_t nb_split(const hc_job_t *job, hc_split_t *split) {
  nb_config_t cfg;
  hc_status_t st = nb_config_read(job, &cfg);
  if (st != HC_OK) return st;
  if (cfg.serial) {
    snprintf(split->why, sizeof split->why, "variant=serial-reference is a one-thread baseline");
    return HC_OK;
  }
  int64_t n = 0;
  if ((st = nb_bodies_count(job, &cfg, &n)) != HC_OK) return st;
  split->kind = HC_SPLIT_REPLICATED;
  split->rows = n;
  split->halo = 0;
  split->min_rows = 1;
  if (HC_SPLIT_HAS_CALIBRATE(split) && cfg.steps > 0) { /* one step */
    snprintf(split->calibrate, sizeof split->calibrate, "steps=1");
    split->calibrate_work = 1.0 / (double)cfg.steps;
  }
  return HC_OK;
}

hc_status_t nb_split_share_positions(nb_sim_t *s, hc_part_t *part) {
  return hc_part_allgather_rows(part, s->pos, 4 * s->es);
}

hc_status_t nb_split_reduce_traces(nb_sim_t *s, hc_part_t *part) {
  const size_t rows = (size_t)s->cfg->steps + 1, vals = rows * NB_DIAG, ds = s->diag_f64 ? 8 : 4;
  const uint32_t parts = hc_part_count(part);
  /* In double, whatever each part's device accumulates in. */
  double *mine = malloc(vals * sizeof *mine), *all = malloc((size_t)parts * vals * sizeof *all);
  void *raw = malloc(vals * ds);
  hc_status_t st = HC_OK;
  if (!mine || !all || !raw) {
    st = hc_error(HC_ERR_NO_MEMORY, "nbody: out of host memory summing the traces");
    goto out;
  }
  if ((st = hc_buffer_read(s->trace, 0, raw, vals * ds)) != HC_OK) goto out;
  for (size_t i = 0; i < vals; i++) mine[i] = s->diag_f64 ? ((double *)raw)[i] : (double)((float *)raw)[i];
  size_t total = 0;
  st = hc_part_allgather(part, mine, vals * sizeof *mine, all, (size_t)parts * vals * sizeof *all, &total);
  if (st != HC_OK) goto out;
  for (size_t i = 0; i < vals; i++) {
    double v = 0;
    for (uint32_t p = 0; p < parts; p++) v += all[(size_t)p * vals + i];
    if (s->diag_f64)
      ((double *)raw)[i] = v;
    else
      ((float *)raw)[i] = (float)v;
  }
  st = hc_buffer_write(s->trace, 0, raw, vals * ds);
out:
  free(mine);
  free(all);
  free(raw);
  return st;
}
