/* A split run: plan the parts (rows by weight), run one copy of the job per
 * part on its own thread, gather the outputs on the set's first device. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"

typedef struct {
  int64_t lo[HC_DEVSET_MAX], hi[HC_DEVSET_MAX];
  double share[HC_DEVSET_MAX];
  uint32_t nparts; /* 1: runs whole */
  hc_split_t split;
} plan_t;

/* Rows per part from the shares: cumulative rounding, then parts below
 * min_rows take rows from the largest. */
static void assign_rows(plan_t *pl, int64_t rows, uint32_t min_rows) {
  uint32_t n = pl->nparts;
  int64_t count[HC_DEVSET_MAX];
  double cum = 0;
  int64_t prev = 0;
  for (uint32_t i = 0; i < n; i++) {
    cum += pl->share[i];
    int64_t b = i + 1 == n ? rows : llround((double)rows * cum);
    count[i] = b - prev;
    prev = b;
  }
  for (uint32_t i = 0; i < n; i++)
    while (count[i] < (int64_t)min_rows) {
      uint32_t big = 0;
      for (uint32_t k = 1; k < n; k++)
        if (count[k] > count[big]) big = k;
      count[big]--;
      count[i]++;
    }
  int64_t lo = 0;
  for (uint32_t i = 0; i < n; i++) pl->lo[i] = lo, pl->hi[i] = lo += count[i];
}

static hc_status_t plan_split(hc_job_t *job, hc_devset_t *set, plan_t *pl) {
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
  if (set->n < 2) return HC_OK;
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
  uint32_t min_rows = pl->split.min_rows ? pl->split.min_rows : 1;
  if (min_rows < pl->split.halo) min_rows = pl->split.halo;
  if (pl->split.rows < (int64_t)min_rows * set->n)
    return hc_error(HC_ERR_PARAM, "more parts than rows: %u devices for %lld %s (each part needs at least %u)", set->n,
                    (long long)pl->split.rows, pl->split.kind == HC_SPLIT_SLABS ? "rows along axis 0" : "items",
                    min_rows);
  pl->nparts = set->n;
  double total = 0;
  for (uint32_t i = 0; i < set->n; i++) total += set->weighted ? set->weight[i] : 1.0;
  for (uint32_t i = 0; i < set->n; i++) pl->share[i] = (set->weighted ? set->weight[i] : 1.0) / total;
  assign_rows(pl, pl->split.rows, min_rows);
  return HC_OK;
}

HC_API hc_status_t hc_job_check_split(hc_job_t *job, hc_devset_t *set) {
  if (!job || !set || !set->n) return hc_error(HC_ERR_INVALID_ARG, "hc_job_check_split: NULL or empty argument");
  plan_t pl;
  return plan_split(job, set, &pl);
}

typedef struct run_s run_t;

typedef struct {
  run_t *run;
  hc_part_t part;
  hc_job_t *job;
  hc_device_t *dev;
  hc_status_t status;
  char message[1024];
  int failed_order; /* 0: did not fail; 1: the first to fail, ... */
  pthread_t thread;
  int started;
} part_run_t;

struct run_s {
  uint32_t flags;
  atomic_int failures;
  part_run_t parts[HC_DEVSET_MAX];
};

static void *part_main(void *arg) {
  part_run_t *pr = arg;
  hc__job_set_part(pr->job, &pr->part);
  pr->status = hc_job_run(pr->job, pr->dev, pr->run->flags);
  if (pr->status != HC_OK && pr->status != HC_ERR_VERIFY) {
    pr->failed_order = atomic_fetch_add(&pr->run->failures, 1) + 1;
    snprintf(pr->message, sizeof pr->message, "%s", hc_last_error());
    pr->part.tr->ops->abort(pr->part.tr, pr->part.index);
  } else if (pr->status == HC_ERR_VERIFY) {
    snprintf(pr->message, sizeof pr->message, "%s", hc_last_error());
  }
  hc__job_set_part(pr->job, NULL);
  return NULL;
}

/* A copy of the job for one part: the parameters the user gave, the same
 * inputs (moved to the part's device by hc_job_run). */
static hc_status_t clone_job(hc_job_t *job, hc_job_t **out) {
  hc_status_t st;
  const char *wl = hc_job_workload(job);
  if ((st = hc_job_create(hc_job_context(job), wl, out)) != HC_OK) return st;
  for (uint32_t i = 0; i < hc_job_param_count(job) && st == HC_OK; i++) {
    const char *name, *value;
    if ((st = hc_job_param_get(job, i, &name, &value)) == HC_OK && hc_job_given(job, name))
      st = hc_job_set(*out, name, value);
  }
  uint32_t nin = hc_workload_port_count(hc_job_context(job), wl, 0);
  for (uint32_t i = 0; i < nin && st == HC_OK; i++) {
    const hc_port_spec_t *p = hc_workload_port(hc_job_context(job), wl, 0, i);
    hc_field_t *f = hc_job_input(job, p->name);
    if (f) st = hc_job_set_input(*out, p->name, f);
  }
  if (st != HC_OK) {
    hc_job_destroy(*out);
    *out = NULL;
  }
  return st;
}

/* An output every part gave with its own rows along axis 0 becomes one
 * field on the first device; any other output is the first part's. */
static hc_status_t gather_output(hc_job_t *job, run_t *r, const plan_t *pl, hc_device_t *dev0, const char *port) {
  hc_field_t *f0 = hc_job_output(r->parts[0].job, port);
  if (!f0) return HC_OK;
  uint32_t rank = hc_field_rank(f0);
  hc_dtype_t dt = hc_field_dtype(f0);
  int rows_of_parts = rank >= 1;
  for (uint32_t i = 0; i < pl->nparts && rows_of_parts; i++) {
    hc_field_t *f = hc_job_output(r->parts[i].job, port);
    rows_of_parts = f && hc_field_rank(f) == rank && hc_field_dtype(f) == dt &&
                    hc_field_shape(f)[0] == pl->hi[i] - pl->lo[i] &&
                    !memcmp(hc_field_shape(f) + 1, hc_field_shape(f0) + 1, (rank - 1) * sizeof(int64_t));
  }
  if (!rows_of_parts) {
    hc_field_t *mine = NULL;
    hc_status_t st = hc_job_take_output(r->parts[0].job, port, &mine);
    if (st == HC_OK && hc_field_device(mine) != dev0) {
      hc_field_t *moved = NULL;
      st = hc_field_copy_to(mine, dev0, &moved);
      hc_field_destroy(mine);
      mine = moved;
    }
    return st == HC_OK ? hc_job_set_output(job, port, mine) : st;
  }
  int64_t shape[4];
  memcpy(shape, hc_field_shape(f0), rank * sizeof *shape);
  shape[0] = pl->split.rows;
  size_t rb = hc_dtype_size(dt);
  for (uint32_t d = 1; d < rank; d++) rb *= (size_t)shape[d];
  hc_field_t *g = NULL;
  hc_status_t st = hc_field_create(dev0, dt, rank, shape, &g);
  for (uint32_t i = 0; i < pl->nparts && st == HC_OK; i++) {
    hc_field_t *f = hc_job_output(r->parts[i].job, port);
    st = hc_buffer_copy(hc_field_buffer(g), (size_t)pl->lo[i] * rb, hc_field_buffer(f), 0,
                        (size_t)(pl->hi[i] - pl->lo[i]) * rb);
  }
  if (st != HC_OK) {
    hc_field_destroy(g);
    return st;
  }
  hc_field_set_spacing(g, hc_field_spacing(f0));
  hc_field_set_origin(g, hc_field_origin(f0));
  hc_field_set_name(g, hc_field_name(f0));
  return hc_job_set_output(job, port, g);
}

/* The first part's report is the job's (its metrics are global ones,
 * computed by reductions); times are the slowest part's. */
static hc_status_t collect(hc_job_t *job, run_t *r, const plan_t *pl, hc_devset_t *set) {
  hc_context_t *ctx = set->ctx;
  const char *wl = hc_job_workload(job);
  hc_job_t *j0 = r->parts[0].job;
  hc_status_t st = HC_OK;
  uint32_t nout = hc_workload_port_count(ctx, wl, 1);
  for (uint32_t i = 0; i < nout && st == HC_OK; i++)
    st = gather_output(job, r, pl, set->dev[0], hc_workload_port(ctx, wl, 1, i)->name);
  for (uint32_t i = 0; i < hc_job_metric_count(j0) && st == HC_OK; i++) {
    const char *name, *unit;
    double v;
    if (hc_job_metric(j0, i, &name, &v, &unit) == HC_OK) st = hc_job_add_metric(job, name, v, unit);
  }
  const char *notes = hc_job_notes(j0);
  while (*notes) {
    size_t len = strcspn(notes, "\n");
    hc_job_note(job, "%.*s", (int)len, notes);
    notes += len + (notes[len] == '\n');
  }
  const char *msg = NULL;
  int v = hc_job_verified(j0, &msg);
  if (v >= 0) hc_job_set_verified(job, v, "%s", msg);
  double compute = 0, device = 0;
  for (uint32_t i = 0; i < pl->nparts; i++) {
    hc_job_times_t t;
    hc_job_times(r->parts[i].job, &t);
    compute = fmax(compute, t.compute_s);
    device = fmax(device, t.device_s);
    hc_part_stats_t *s = &set->stats[i];
    *s = r->parts[i].part.stats;
    s->size = sizeof *s;
    s->lo = pl->lo[i];
    s->hi = pl->hi[i];
    s->weight = pl->share[i];
    s->compute_s = t.compute_s;
    s->device_s = t.device_s;
  }
  hc_job_set_times(job, compute, device);
  return st;
}

HC_API hc_status_t hc_job_run_split(hc_job_t *job, hc_devset_t *set, uint32_t flags) {
  if (!job || !set || !set->n) return hc_error(HC_ERR_INVALID_ARG, "hc_job_run_split: NULL or empty argument");
  hc__job_clear(job);
  set->nparts = 0;
  set->plan[0] = '\0';
  plan_t pl;
  hc_status_t st = plan_split(job, set, &pl);
  if (st != HC_OK) return st;
  if (pl.nparts == 1) {
    st = hc_job_run(job, set->dev[0], flags);
    if (set->n > 1) {
      snprintf(set->plan, sizeof set->plan, "'%s' ran on %s alone: %s", hc_job_workload(job),
               hc_device_name(set->dev[0]), pl.split.why);
      if (st == HC_OK || st == HC_ERR_VERIFY) hc_job_note(job, "%s", set->plan);
    }
    return st;
  }
  double t0 = hc_now();
  run_t *r = calloc(1, sizeof *r);
  hc__transport_t *tr = NULL;
  if (!r) return hc_error(HC_ERR_NO_MEMORY, "split run: out of host memory");
  r->flags = flags;
  st = hc__transport_inproc_create(pl.nparts, &tr);
  for (uint32_t i = 0; i < pl.nparts && st == HC_OK; i++) {
    part_run_t *pr = &r->parts[i];
    pr->run = r;
    pr->dev = set->dev[i];
    pr->part.index = i;
    pr->part.count = pl.nparts;
    pr->part.rows = pl.split.rows;
    pr->part.lo = pl.lo[i];
    pr->part.hi = pl.hi[i];
    pr->part.halo = pl.split.kind == HC_SPLIT_SLABS ? pl.split.halo : 0;
    pr->part.below = i > 0 ? pr->part.halo : 0;
    pr->part.above = i + 1 < pl.nparts ? pr->part.halo : 0;
    pr->part.tr = tr;
    pr->part.stats.size = sizeof pr->part.stats;
    st = clone_job(job, &pr->job);
    if (st == HC_OK && i == 0) st = hc_job_set_output_dir(pr->job, hc_job_output_dir(job));
  }
  for (uint32_t i = 0; i < pl.nparts && st == HC_OK; i++) {
    part_run_t *pr = &r->parts[i];
    if (pthread_create(&pr->thread, NULL, part_main, pr) != 0) {
      st = hc_error(HC_ERR_NO_MEMORY, "split run: cannot start the thread of part %u", i);
      tr->ops->abort(tr, i);
    } else {
      pr->started = 1;
    }
  }
  for (uint32_t i = 0; i < pl.nparts; i++)
    if (r->parts[i].started) pthread_join(r->parts[i].thread, NULL);
  /* The error to report: the first part that failed (the others stopped
   * because it did), then a failed verification. */
  const part_run_t *first = NULL, *unverified = NULL;
  for (uint32_t i = 0; i < pl.nparts && st == HC_OK; i++) {
    const part_run_t *pr = &r->parts[i];
    if (pr->failed_order && (!first || pr->failed_order < first->failed_order)) first = pr;
    if (pr->status == HC_ERR_VERIFY && !unverified) unverified = pr;
  }
  if (st == HC_OK && first) st = hc_error(first->status, "%s (part %u of %u)", first->message, first->part.index,
                                          pl.nparts);
  if (st == HC_OK) {
    st = collect(job, r, &pl, set);
    if (st == HC_OK) {
      set->nparts = pl.nparts;
      hc__job_set_wall(job, hc_now() - t0);
      if (pl.split.kind == HC_SPLIT_SLABS)
        snprintf(set->plan, sizeof set->plan, "%u parts along axis 0 of %lld rows (halo %u), %s shares, %s transport",
                 pl.nparts, (long long)pl.split.rows, pl.split.halo, set->weighted ? "given" : "equal",
                 tr->ops->name);
      else
        snprintf(set->plan, sizeof set->plan, "%u parts of %lld items (inputs replicated), %s shares, %s transport",
                 pl.nparts, (long long)pl.split.rows, set->weighted ? "given" : "equal", tr->ops->name);
      if (unverified) st = hc_error(HC_ERR_VERIFY, "%s", unverified->message);
    } else {
      hc__job_clear(job);
    }
  }
  for (uint32_t i = 0; i < pl.nparts; i++) {
    hc_job_destroy(r->parts[i].job);
    free(r->parts[i].part.stage);
  }
  if (tr) tr->ops->destroy(tr);
  free(r);
  return st;
}
