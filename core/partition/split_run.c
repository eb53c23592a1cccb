/* A split run in this process: plan the parts (split_plan.c), run one copy
 * of the job per part on its own thread, gather the outputs on the set's
 * first device. A set that is one part of a transport's split runs its
 * part in split_ranks.c instead. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition_internal.h"

HC_API hc_status_t hc_job_check_split(hc_job_t *job, hc_devset_t *set) {
  if (!job || !set || !set->n) return hc_error(HC_ERR_INVALID_ARG, "hc_job_check_split: NULL or empty argument");
  split_plan_t pl;
  hc_status_t st = hc__split_plan(job, set, &pl);
  hc__split_plan_free(&pl);
  return st;
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
  int thread_started;
  uint32_t workers; /* > 0: its device runs it on this many of its threads */
  int limited;      /* it did */
  part_inputs_t inputs;
} part_run_t;

struct run_s {
  uint32_t flags;
  int bridged; /* the parts' transport is a bridge (rank_devices.c) */
  atomic_int failures;
  part_run_t parts[HC_DEVSET_MAX];
};

static void *part_main(void *arg) {
  part_run_t *pr = arg;
  hc__job_set_part(pr->job, &pr->part);
  /* Fewer threads for the whole run, under the device's run lock, so that
   * no other job sees the device between the two settings. */
  if (pr->workers) {
    hc_device_lock(pr->dev);
    pr->limited = hc__device_set_workers(pr->dev, pr->workers) == HC_OK;
  }
  const int bound = hc__device_bind_thread(pr->dev, 1) == HC_OK;
  pr->status = hc_job_run(pr->job, pr->dev, pr->run->flags);
  if (bound) (void)hc__device_bind_thread(pr->dev, 0);
  if (pr->workers) {
    if (pr->limited) (void)hc__device_set_workers(pr->dev, 0);
    hc_device_unlock(pr->dev);
  }
  if (pr->status != HC_OK && pr->status != HC_ERR_VERIFY) {
    pr->failed_order = atomic_fetch_add(&pr->run->failures, 1) + 1;
    snprintf(pr->message, sizeof pr->message, "%s", hc_last_error());
    pr->part.tr->ops->abort(pr->part.tr, pr->part.index);
  } else if (pr->status == HC_ERR_VERIFY) {
    snprintf(pr->message, sizeof pr->message, "%s", hc_last_error());
  }
  hc__job_set_part(pr->job, NULL);
  if (pr->run->bridged) hc__bridge_part_done(pr->part.tr, pr->part.index);
  return NULL;
}

/* A copy of the job: the parameters the user gave, the same inputs. */
hc_status_t hc__job_clone(hc_job_t *job, hc_job_t **out) {
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
 * field of pl's rows (all of them, or a rank's run of them) on the first
 * device; any other output is the first part's. */
static hc_status_t gather_output(hc_job_t *job, run_t *r, const split_plan_t *pl, hc_device_t *dev0, const char *port) {
  hc_field_t *f0 = hc_job_output(r->parts[0].job, port);
  if (!f0) return HC_OK;
  uint32_t rank = hc_field_rank(f0);
  hc_dtype_t dt = hc_field_dtype(f0);
  int rows_of_parts = rank >= 1;
  for (uint32_t i = 0; i < pl->nparts && rows_of_parts; i++) {
    hc_field_t *f = hc_job_output(r->parts[i].job, port);
    rows_of_parts = f && hc_field_rank(f) == rank && hc_field_dtype(f) == dt &&
                    hc_field_shape(f)[0] == r->parts[i].part.hi - r->parts[i].part.lo &&
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
  int64_t shape[HC_MAX_DIMS], lo[HC_DEVSET_MAX];
  memcpy(shape, hc_field_shape(f0), rank * sizeof *shape);
  shape[0] = pl->hi[pl->nparts - 1] - pl->lo[0]; /* the parts' rows may have moved, not their ends */
  double spacing[HC_MAX_DIMS], origin[HC_MAX_DIMS];
  char name[64];
  memcpy(spacing, hc_field_spacing(f0), rank * sizeof *spacing);
  memcpy(origin, hc_field_origin(f0), rank * sizeof *origin);
  snprintf(name, sizeof name, "%s", hc_field_name(f0));
  /* The parts' rows stay where they are until the field is used: a next
   * split run over the same devices takes its parts' rows from them
   * (part_inputs.c) without gathering them on dev0 first. */
  hc_field_t *pieces[HC_DEVSET_MAX];
  hc_status_t st = HC_OK;
  uint32_t taken = 0;
  for (; taken < pl->nparts && st == HC_OK; taken++) {
    lo[taken] = r->parts[taken].part.lo - pl->lo[0];
    st = hc_job_take_output(r->parts[taken].job, port, &pieces[taken]);
  }
  if (st != HC_OK) {
    for (uint32_t i = 0; i + 1 < taken; i++) hc_field_destroy(pieces[i]);
    return st;
  }
  hc_field_t *g = NULL;
  if ((st = hc__field_of_pieces(dev0, dt, rank, shape, pieces, lo, pl->nparts, &g)) != HC_OK) return st;
  hc_field_set_spacing(g, spacing);
  hc_field_set_origin(g, origin);
  hc_field_set_name(g, name);
  return hc_job_set_output(job, port, g);
}

/* The first part's report is the job's (its metrics are global ones,
 * computed by reductions); times are the slowest part's. */
static hc_status_t collect(hc_job_t *job, run_t *r, const split_plan_t *pl, hc_devset_t *set) {
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
  for (uint32_t i = 0; i < hc_job_param_count(j0); i++) { /* (a stage fed by ports: its own sources unused) */
    const char *name, *value;
    if (!hc_job_param_applies(j0, i) && hc_job_param_get(j0, i, &name, &value) == HC_OK) hc_job_param_unused(job, name);
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
  double compute = 0, device = 0, build = 0, first_launch = 0;
  for (uint32_t i = 0; i < pl->nparts; i++) {
    hc_job_times_t t;
    hc_job_times(r->parts[i].job, &t);
    compute = fmax(compute, t.compute_s);
    device = fmax(device, t.device_s);
    double b, f;
    hc_job_build_time(r->parts[i].job, &b, &f);
    build = fmax(build, b);
    first_launch = fmax(first_launch, f);
    hc_part_stats_t *s = &set->stats[i];
    hc__part_timed_stats(&r->parts[i].part, s, NULL);
    s->size = sizeof *s;
    s->lo = r->parts[i].part.lo; /* where hc_part_rebalance left them */
    s->hi = r->parts[i].part.hi;
    s->weight = pl->share[i];
    s->compute_s = t.compute_s;
    s->device_s = t.device_s;
    snprintf(s->device, sizeof s->device, "%s", hc_device_name(set->dev[pl->dev[i]]));
  }
  hc__part_note_moves(&r->parts[0].part, job);
  hc_job_set_times(job, compute, device);
  hc__job_set_build(job, build, first_launch);
  return st;
}

/* Each part's sample, and the split's time under its devices, for later
 * plans (history.c). */
static void record_parts(hc_job_t *job, const split_plan_t *pl, const hc_devset_t *set, run_t *r) {
  for (uint32_t i = 0; i < pl->nparts; i++)
    hc__history_record_part(job, pl->split.rows, set->dev[pl->dev[i]], &r->parts[i].part, set->stats[i].compute_s);
  if (r->bridged) return; /* the split's time is the ranks' */
  hc_job_times_t t;
  hc_job_times(job, &t);
  hc__history_record_split(job, pl->split.rows, set, pl->dev, pl->nparts, t.compute_s);
}

/* Moves the job's outputs to dev: a set's outputs are on its first device
 * even when another ran the job alone. */
static hc_status_t outputs_to(hc_job_t *job, hc_device_t *dev) {
  hc_context_t *ctx = hc_job_context(job);
  const char *wl = hc_job_workload(job);
  hc_status_t st = HC_OK;
  for (uint32_t i = 0; i < hc_workload_port_count(ctx, wl, 1) && st == HC_OK; i++) {
    const char *port = hc_workload_port(ctx, wl, 1, i)->name;
    hc_field_t *f = hc_job_output(job, port), *moved = NULL;
    if (f && hc_field_device(f) != dev && (st = hc_field_copy_to(f, dev, &moved)) == HC_OK)
      st = hc_job_set_output(job, port, moved);
  }
  return st;
}

/* Each part on a GPU or accelerator has a host thread that queues its
 * work and stages its halos; when the cpu backend's part keeps every core
 * busy, that thread waits for one and the accelerator idles. The cpu part
 * with the most threads (and a backend that can) leaves
 * HC_SPLIT_DRIVER_CORES cores to each such thread for the run; returns
 * that part's index (or -1), with its threads in *had and for the run in
 * *now. */
static int leave_driver_cores(const hc_devset_t *set, const split_plan_t *pl, uint32_t *had, uint32_t *now) {
  long long per = 1;
  if (hc_config_int("HC_SPLIT_DRIVER_CORES", &per) != HC_OK || per <= 0) return -1;
  uint32_t drivers = 0;
  int cpu = -1;
  for (uint32_t i = 0; i < pl->nparts; i++) {
    const hc_device_info_t *in = hc_device_info(set->dev[pl->dev[i]]);
    if (in->type == HC_DEVICE_GPU || in->type == HC_DEVICE_ACCELERATOR)
      drivers++;
    else if (in->type == HC_DEVICE_CPU &&
             (cpu < 0 || in->compute_units > hc_device_info(set->dev[pl->dev[cpu]])->compute_units))
      cpu = (int)i;
  }
  if (!drivers || cpu < 0) return -1;
  *had = hc_device_info(set->dev[pl->dev[cpu]])->compute_units;
  const unsigned long long leave = (unsigned long long)per * drivers;
  *now = *had > leave ? *had - (uint32_t)leave : 1;
  return *now < *had ? cpu : -1;
}

/* Parts on one piece of hardware take turns on it: say so. */
static void note_shared_hardware(hc_job_t *job, const hc_devset_t *set, const split_plan_t *pl) {
  for (uint32_t i = 0; i < pl->nparts; i++)
    for (uint32_t k = i + 1; k < pl->nparts; k++) {
      const hc_device_t *a = set->dev[pl->dev[i]], *b = set->dev[pl->dev[k]];
      char what[64];
      if (hc__shared_hardware(set->ctx, hc_device_index(a), hc_device_index(b), what, sizeof what))
        hc_job_note(job,
                    "%s and %s both run on %s, so their parts take turns and the split may run slower than one "
                    "of them (--device=all takes such hardware once)",
                    hc_device_name(a), hc_device_name(b), what);
    }
}

HC_API hc_status_t hc_job_run_split(hc_job_t *job, hc_devset_t *set, uint32_t flags) {
  if (!job || !set || !set->n) return hc_error(HC_ERR_INVALID_ARG, "hc_job_run_split: NULL or empty argument");
  hc__job_clear(job);
  set->nparts = 0;
  set->plan[0] = '\0';
  hc__devset_forget_outputs(set);
  split_plan_t pl;
  hc_status_t st = hc__split_plan(job, set, &pl);
  set->best_single_s = -1;
  snprintf(set->best_single, sizeof set->best_single, "not a split run of this process");
  /* Auto shares over devices the history does not know: their short
   * runs first, then the plan from those. */
  char calibrated[512] = "";
  if (st == HC_OK && !set->tr && set->auto_shares && pl.nparts > 1 && !pl.from_history) {
    st = hc__history_calibrate(job, set, &pl.split, calibrated, sizeof calibrated);
    if (st != HC_OK || calibrated[0]) hc__split_plan_free(&pl);
    if (st == HC_OK && calibrated[0]) st = hc__split_plan(job, set, &pl);
  }
  if (st == HC_OK && !set->tr && pl.nparts > 1) hc__history_best_single(job, set, pl.split.rows);
  if (set->tr) {
    st = hc__run_transport_part(job, set, st, &pl, flags);
    hc__split_plan_free(&pl);
    return st;
  }
  if (st != HC_OK) return st;
  if (pl.nparts == 1) {
    hc_device_t *alone = set->dev[pl.dev[0]];
    st = hc_job_run(job, alone, flags);
    if (st == HC_OK) hc_job_record_run(job, alone);
    if ((st == HC_OK || st == HC_ERR_VERIFY) && alone != set->dev[0]) {
      hc_status_t mv = outputs_to(job, set->dev[0]);
      if (mv != HC_OK) st = mv;
    }
    if (set->n > 1) {
      snprintf(set->plan, sizeof set->plan, "'%s' ran on %s alone: %s", hc_job_workload(job), hc_device_name(alone),
               pl.split.why);
      if (st == HC_OK || st == HC_ERR_VERIFY) hc_job_note(job, "%s", set->plan);
    }
    if (calibrated[0] && (st == HC_OK || st == HC_ERR_VERIFY))
      hc_job_note(job, "calibrating runs (%s) before the run: %s", pl.split.calibrate, calibrated);
    return st;
  }
  double t0 = hc_now();
  hc_transport_t *tr = NULL;
  st = hc__transport_inproc_create(pl.nparts, &tr);
  if (st == HC_OK) st = hc__split_threads(job, set, &pl, tr, 0, 0, flags);
  if (st == HC_OK || st == HC_ERR_VERIFY) {
    set->nparts = pl.nparts;
    hc__job_set_wall(job, hc_now() - t0);
    hc__devset_describe(set, &pl, tr);
    note_shared_hardware(job, set, &pl);
    if (calibrated[0]) hc_job_note(job, "calibrating runs (%s) before the split: %s", pl.split.calibrate, calibrated);
  }
  if (tr) tr->ops->destroy(tr);
  hc__split_plan_free(&pl);
  return st;
}

hc_status_t hc__split_threads(hc_job_t *job, hc_devset_t *set, const split_plan_t *pl, hc_transport_t *tr, int bridged,
                              uint32_t first, uint32_t flags) {
  free(set->stats);
  set->stats = calloc(pl->nparts, sizeof *set->stats);
  run_t *r = set->stats ? calloc(1, sizeof *r) : NULL;
  if (!r) return hc_error(HC_ERR_NO_MEMORY, "split run: out of host memory");
  const uint32_t total = tr->ops->count(tr);
  r->flags = flags;
  r->bridged = bridged;
  hc_status_t st = HC_OK;
  for (uint32_t i = 0; i < pl->nparts && st == HC_OK; i++) {
    part_run_t *pr = &r->parts[i];
    pr->run = r;
    pr->dev = set->dev[pl->dev[i]];
    hc__part_init(&pr->part, set->ctx, pl, i, tr, pr->dev);
    if (r->bridged) { /* its place among every process's parts */
      pr->part.index = first + i;
      pr->part.count = total;
      pr->part.below = pr->part.index > 0 ? pr->part.halo : 0;
      pr->part.above = pr->part.index + 1 < total ? pr->part.halo : 0;
      pr->part.fixed_rows = 1; /* the process's rows are planned over its devices once */
    } else if (i > 0) {
      hc_part_t *below = &r->parts[i - 1].part;
      below->peer_above = pr->part.peer_below = (uint8_t)hc__peer_halos(r->parts[i - 1].dev, pr->dev);
    }
    pr->part.peer_all = !r->bridged;
    for (uint32_t k = 0; k < pl->nparts && !r->bridged; k++)
      if (k != i && !hc__peer_halos(set->dev[pl->dev[k]], pr->dev)) pr->part.peer_all = 0;
    st = hc__job_clone(job, &pr->job);
    if (st == HC_OK && i == 0) st = hc_job_set_output_dir(pr->job, hc_job_output_dir(job));
    if (st == HC_OK) st = hc__part_inputs_place(pr->job, pl, &pr->part, pr->dev, &pr->inputs);
  }
  uint32_t cpu_had = 0, cpu_now = 0;
  const int cpu_part = st == HC_OK ? leave_driver_cores(set, pl, &cpu_had, &cpu_now) : -1;
  if (cpu_part >= 0) r->parts[cpu_part].workers = cpu_now;
  for (uint32_t i = 0; i < pl->nparts; i++) {
    part_run_t *pr = &r->parts[i];
    if (st == HC_OK && pthread_create(&pr->thread, NULL, part_main, pr) != 0) {
      st = hc_error(HC_ERR_NO_MEMORY, "split run: cannot start the thread of part %u", pr->part.index);
      tr->ops->abort(tr, pr->part.index);
    }
    pr->thread_started = st == HC_OK;
    if (!pr->thread_started && r->bridged) hc__bridge_part_done(tr, pr->part.index); /* it never will */
  }
  /* A bridge's outer transport is this thread's to use. */
  if (r->bridged) hc__bridge_serve(tr);
  for (uint32_t i = 0; i < pl->nparts; i++)
    if (r->parts[i].thread_started) pthread_join(r->parts[i].thread, NULL);
  /* The error to report: the first part that failed (the others stopped
   * because it did), then a failed verification. */
  const part_run_t *first_failed = NULL, *unverified = NULL;
  for (uint32_t i = 0; i < pl->nparts && st == HC_OK; i++) {
    const part_run_t *pr = &r->parts[i];
    if (pr->failed_order && (!first_failed || pr->failed_order < first_failed->failed_order)) first_failed = pr;
    if (pr->status == HC_ERR_VERIFY && !unverified) unverified = pr;
  }
  if (st == HC_OK && first_failed)
    st = hc_error(first_failed->status, "%s (part %u of %u)", first_failed->message, first_failed->part.index, total);
  if (st == HC_OK) {
    st = collect(job, r, pl, set);
    if (st == HC_OK) {
      record_parts(job, pl, set, r);
      if (cpu_part >= 0 && r->parts[cpu_part].limited)
        hc_job_note(job,
                    "%s ran its part on %u of its %u threads, leaving cores to the threads that drive the other "
                    "devices (HC_SPLIT_DRIVER_CORES)",
                    hc_device_name(set->dev[pl->dev[cpu_part]]), cpu_now, cpu_had);
      if (unverified) st = hc_error(HC_ERR_VERIFY, "%s", unverified->message);
    } else {
      hc__job_clear(job);
    }
  }
  for (uint32_t i = 0; i < pl->nparts; i++) {
    if (r->parts[i].job) hc__part_inputs_restore(r->parts[i].job, &r->parts[i].inputs);
    hc_job_destroy(r->parts[i].job);
    hc__part_free_stage(&r->parts[i].part);
  }
  free(r);
  return st;
}
