/* A process of a transport's split that drives several devices (a GPU and
 * its share of the host's cores): its rows split again over its devices,
 * and each device's part is a part of the whole split, numbered after the
 * parts of the processes before it. Its parts run as threads over a
 * bridge (transport_bridge.c) that this thread serves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"

hc_status_t hc__rank_plan_devices(hc_job_t *job, hc_devset_t *set, const split_plan_t *pl, const hc_part_t *part,
                                  split_plan_t *local, uint32_t *first, uint32_t *total, char *left_out,
                                  size_t n_left) {
  hc_transport_t *tr = set->tr;
  const uint32_t me = part->index, n = tr->ops->count(tr);
  /* The devices' shares of this process's rows: with auto shares, the
   * history's plan where every device has a figure (which leaves out a
   * device whose rate does not pay for its exchanges); else their
   * declared fp32 peaks where each declares one, else equal. */
  double weight[HC_DEVSET_MAX], used[HC_DEVSET_MAX];
  uint32_t use[HC_DEVSET_MAX], nuse = set->n;
  char why[200] = "";
  int peaked = 1;
  for (uint32_t i = 0; i < set->n; i++) {
    use[i] = i;
    weight[i] = hc_device_info(set->dev[i])->peak_fp32_gflops;
    peaked &= weight[i] > 0;
  }
  /* A device without a figure first times a short run alone (as an
   * in-process split's does), so that this run already follows rates. */
  char ran[512] = "";
  hc_status_t st =
      set->auto_shares && set->n > 1 ? hc__history_calibrate(job, set, &pl->split, ran, sizeof ran) : HC_OK;
  if (st != HC_OK) {
    memset(local, 0, sizeof *local);
    tr->ops->abort(tr, me);
    return st;
  }
  const int planned =
      set->auto_shares && set->n > 1 &&
      hc__history_plan(job, set, pl->split.rows, part->hi - part->lo, weight, use, &nuse, why, sizeof why);
  for (uint32_t i = 0; i < nuse; i++) used[i] = planned || peaked ? weight[use[i]] : 1.0;
  snprintf(left_out, n_left, "%s%s%s%s", ran[0] ? "calibrating runs before the split: " : "", ran,
           ran[0] && planned && nuse < set->n ? "; " : "", planned && nuse < set->n ? why : "");
  st = hc__split_plan_rows(pl, part->lo, part->hi, used, use, nuse, local);
  uint32_t *counts = st == HC_OK ? calloc(n, sizeof *counts) : NULL;
  if (st == HC_OK && !counts) st = hc_error(HC_ERR_NO_MEMORY, "split run: out of host memory");
  if (st != HC_OK) {
    tr->ops->abort(tr, me);
    return st;
  }
  size_t got = 0;
  double waited = 0;
  st = tr->ops->allgather(tr, me, &local->nparts, sizeof local->nparts, counts, n * sizeof *counts, &got, &waited);
  if (st == HC_OK && got != n * sizeof *counts)
    st = hc_error(HC_ERR_INTERNAL, "split run: the processes' part counts hold %zu bytes, not %zu", got,
                  n * sizeof *counts);
  *first = *total = 0;
  for (uint32_t r = 0; st == HC_OK && r < n; r++) {
    if (r < me) *first += counts[r];
    *total += counts[r];
  }
  free(counts);
  return st;
}

hc_status_t hc__rank_run_devices(hc_job_t *job, hc_devset_t *set, const split_plan_t *local, uint32_t first,
                                 uint32_t total, uint32_t flags, double share, hc_part_stats_t **stats) {
  hc_transport_t *tr = set->tr, *bridge = NULL;
  const uint32_t me = tr->ops->self(tr);
  *stats = NULL;
  hc_status_t st = hc__transport_bridge_create(tr, first, local->nparts, total, &bridge);
  if (st != HC_OK) return st;
  st = hc__split_threads(job, set, local, bridge, 1, first, flags);
  bridge->ops->destroy(bridge);
  if (st != HC_OK && st != HC_ERR_VERIFY) return st;
  /* The parts' stats as the whole split's: shares of the whole, and the
   * process beside each device. */
  hc_part_stats_t *s = malloc(local->nparts * sizeof *s);
  if (!s) return hc_error(HC_ERR_NO_MEMORY, "split run: out of host memory");
  for (uint32_t i = 0; i < local->nparts; i++) {
    s[i] = set->stats[i];
    s[i].weight *= share;
    snprintf(s[i].device, sizeof s[i].device, "rank %u %s", me, hc_device_name(set->dev[local->dev[i]]));
  }
  *stats = s;
  return st;
}
