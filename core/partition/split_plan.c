/* Planning a split run: which parts, how many rows each. The same plan on
 * every part, whether the parts are threads of this process or processes
 * of a transport, so that all agree on who owns which rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"

void hc__split_plan_free(split_plan_t *pl) {
  free(pl->lo);
  free(pl->hi);
  free(pl->share);
  pl->lo = pl->hi = NULL;
  pl->share = NULL;
}

/* Rows per part from the shares: cumulative rounding, then parts below
 * min_rows take rows from the largest. */
/* The fewest rows a part may own: the workload's, and never fewer than
 * its halo. */
static uint32_t min_rows_of(const split_plan_t *pl) {
  const uint32_t m = pl->split.min_rows ? pl->split.min_rows : 1;
  return m < pl->split.halo ? pl->split.halo : m;
}

static void assign_rows(split_plan_t *pl, int64_t rows, uint32_t min_rows) {
  uint32_t n = pl->nparts;
  double cum = 0;
  int64_t prev = 0;
  for (uint32_t i = 0; i < n; i++) {
    cum += pl->share[i];
    int64_t b = i + 1 == n ? rows : llround((double)rows * cum);
    pl->hi[i] = b - prev; /* the count, for now */
    prev = b;
  }
  for (uint32_t i = 0; i < n; i++)
    while (pl->hi[i] < (int64_t)min_rows) {
      uint32_t big = 0;
      for (uint32_t k = 1; k < n; k++)
        if (pl->hi[k] > pl->hi[big]) big = k;
      pl->hi[big]--;
      pl->hi[i]++;
    }
  int64_t lo = 0;
  for (uint32_t i = 0; i < n; i++) pl->lo[i] = lo, pl->hi[i] = lo += pl->hi[i];
}

/* A split that takes its inputs by slabs divides each input field's axis
 * 0: every one must have the split's rows. */
static hc_status_t check_slab_inputs(hc_job_t *job, const split_plan_t *pl) {
  if (!pl->split.slab_inputs) return HC_OK;
  hc_context_t *ctx = hc_job_context(job);
  const char *wl = hc_job_workload(job);
  for (uint32_t i = 0; i < hc_workload_port_count(ctx, wl, 0); i++) {
    const char *port = hc_workload_port(ctx, wl, 0, i)->name;
    const hc_field_t *f = hc_job_input(job, port);
    if (f && (hc_field_rank(f) < 1 || hc_field_shape(f)[0] != pl->split.rows))
      return hc_error(HC_ERR_PARAM,
                      "input field %s: %lld rows along axis 0, but the split divides %lld rows (its grid's); a "
                      "split run gives each part its rows of every input field",
                      port, hc_field_rank(f) ? (long long)hc_field_shape(f)[0] : 0LL, (long long)pl->split.rows);
  }
  return HC_OK;
}

hc_status_t hc__split_plan(hc_job_t *job, hc_devset_t *set, split_plan_t *pl) {
  memset(pl, 0, sizeof *pl);
  hc_context_t *ctx = set->ctx;
  const char *wl = hc_job_workload(job);
  for (uint32_t i = 0; i < set->n; i++) {
    const char *why = NULL;
    if (!hc_workload_can_run(ctx, wl, hc_device_index(set->dev[i]), &why))
      return hc_error(HC_ERR_PARAM, "workload '%s' cannot run on %s (in the device set): %s", wl,
                      hc_device_name(set->dev[i]), why ? why : "unknown reason");
  }
  pl->nparts = 1;
  pl->split.size = sizeof pl->split;
  const hc_workload_ops_t *ops = hc__workload_ops(ctx, wl);
  uint32_t parts = hc__devset_part_count(set);
  /* (one process of a transport may split over its own devices) */
  if (parts < 2 && !(set->tr && set->n > 1)) return HC_OK;
  if (!ops || !ops->split) {
    snprintf(pl->split.why, sizeof pl->split.why, "it declares no split");
    return HC_OK;
  }
  hc_status_t st = ops->split(job, &pl->split);
  if (st != HC_OK) return st;
  pl->split.why[sizeof pl->split.why - 1] = '\0';
  if (pl->split.kind == HC_SPLIT_NONE) {
    if (!pl->split.why[0]) snprintf(pl->split.why, sizeof pl->split.why, "it does not split this configuration");
    return HC_OK;
  }
  if (pl->split.kind != HC_SPLIT_SLABS && pl->split.kind != HC_SPLIT_REPLICATED)
    return hc_error(HC_ERR_PLUGIN, "workload '%s' declares an unknown split kind %u", wl, pl->split.kind);
  if (pl->split.kind != HC_SPLIT_SLABS) pl->split.slab_inputs = 0;
  if ((st = check_slab_inputs(job, pl)) != HC_OK) return st;
  const uint32_t min_rows = min_rows_of(pl);
  if (pl->split.rows < (int64_t)min_rows * parts)
    return hc_error(HC_ERR_PARAM, "more parts than rows: %u %s for %lld %s (each part needs at least %u)", parts,
                    set->tr ? "parts" : "devices", (long long)pl->split.rows,
                    pl->split.kind == HC_SPLIT_SLABS ? "rows along axis 0" : "items", min_rows);
  pl->lo = malloc(parts * sizeof *pl->lo);
  pl->hi = malloc(parts * sizeof *pl->hi);
  pl->share = malloc(parts * sizeof *pl->share);
  if (!pl->lo || !pl->hi || !pl->share) {
    hc__split_plan_free(pl);
    return hc_error(HC_ERR_NO_MEMORY, "split run: out of host memory");
  }
  double weight[HC_DEVSET_MAX];
  for (uint32_t i = 0; i < parts; i++) {
    weight[i] = set->weight ? set->weight[i] : 1.0;
    if (i < HC_DEVSET_MAX) pl->dev[i] = i;
  }
  snprintf(pl->shares, sizeof pl->shares, "%s shares", set->weight ? "given" : "equal");
  uint32_t use[HC_DEVSET_MAX], nuse = 0;
  if (set->auto_shares && !set->tr &&
      (pl->from_history = hc__history_plan(job, set, pl->split.rows, pl->split.rows, weight, use, &nuse, pl->shares,
                                           sizeof pl->shares))) {
    if (nuse == 1) { /* one device alone is predicted faster */
      hc__split_plan_free(pl);
      pl->nparts = 1;
      pl->dev[0] = use[0];
      snprintf(pl->split.why, sizeof pl->split.why, "%s", pl->shares);
      return HC_OK;
    }
    double used[HC_DEVSET_MAX];
    for (uint32_t i = 0; i < nuse; i++) used[i] = weight[use[i]], pl->dev[i] = use[i];
    memcpy(weight, used, nuse * sizeof *used);
    parts = nuse;
  }
  pl->nparts = parts;
  hc__split_plan_reshare(pl, weight);
  return HC_OK;
}

void hc__split_plan_reshare(split_plan_t *pl, const double *weight) {
  double total = 0;
  for (uint32_t i = 0; i < pl->nparts; i++) total += weight[i];
  for (uint32_t i = 0; i < pl->nparts; i++) pl->share[i] = weight[i] / total;
  assign_rows(pl, pl->split.rows, min_rows_of(pl));
}

hc_status_t hc__split_plan_rows(const split_plan_t *whole, int64_t lo, int64_t hi, const double *weight,
                                const uint32_t *use, uint32_t n, split_plan_t *pl) {
  memset(pl, 0, sizeof *pl);
  pl->split = whole->split;
  const uint32_t min_rows = min_rows_of(pl);
  const int64_t fit = (hi - lo) / (int64_t)min_rows;
  pl->nparts = fit < 1 ? 1 : fit < (int64_t)n ? (uint32_t)fit : n;
  pl->lo = malloc(pl->nparts * sizeof *pl->lo);
  pl->hi = malloc(pl->nparts * sizeof *pl->hi);
  pl->share = malloc(pl->nparts * sizeof *pl->share);
  if (!pl->lo || !pl->hi || !pl->share) {
    hc__split_plan_free(pl);
    return hc_error(HC_ERR_NO_MEMORY, "split run: out of host memory");
  }
  double total = 0;
  for (uint32_t i = 0; i < pl->nparts; i++) total += weight[i];
  for (uint32_t i = 0; i < pl->nparts; i++) {
    pl->share[i] = weight[i] / total;
    pl->dev[i] = use[i];
  }
  assign_rows(pl, hi - lo, pl->nparts > 1 ? min_rows : 1);
  for (uint32_t i = 0; i < pl->nparts; i++) pl->lo[i] += lo, pl->hi[i] += lo;
  return HC_OK;
}

void hc__part_init(hc_part_t *part, hc_context_t *ctx, const split_plan_t *pl, uint32_t i, hc_transport_t *tr,
                   hc_device_t *dev) {
  memset(part, 0, sizeof *part);
  part->ctx = ctx;
  part->index = i;
  part->count = pl->nparts;
  part->rows = pl->split.rows;
  part->lo = pl->lo[i];
  part->hi = pl->hi[i];
  part->halo = pl->split.kind == HC_SPLIT_SLABS ? pl->split.halo : 0;
  part->below = i > 0 ? part->halo : 0;
  part->above = i + 1 < pl->nparts ? part->halo : 0;
  part->min_rows = pl->split.min_rows;
  part->tr = tr;
  part->dev = dev;
  part->spans_seen = dev ? hc__device_timer_spans(dev) : 0;
  part->stats.size = sizeof part->stats;
}

void hc__devset_describe(hc_devset_t *set, const split_plan_t *pl, const hc_transport_t *tr) {
  if (pl->split.kind == HC_SPLIT_SLABS)
    snprintf(set->plan, sizeof set->plan, "%u parts along axis 0 of %lld rows (halo %u), %s, %s transport", pl->nparts,
             (long long)pl->split.rows, pl->split.halo, pl->shares, tr->ops->name);
  else
    snprintf(set->plan, sizeof set->plan, "%u parts of %lld items (inputs replicated), %s, %s transport", pl->nparts,
             (long long)pl->split.rows, pl->shares, tr->ops->name);
}
