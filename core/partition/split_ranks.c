/* One part of a transport's split (hc_devset_set_transport): this process
 * runs its part on the set's device while the other processes run theirs.
 * Every step that can fail on one part only (planning, the run, gathering
 * the outputs) ends with the transport's agree, so that every part leaves
 * with the same status and the message of the part that failed. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc/config.h"

#include "partition_internal.h"

/* Agrees on st among the parts; the decided failure carries the failing
 * part's message (which names its device). */
static hc_status_t agree(hc_transport_t *tr, uint32_t me, hc_status_t st, const char *what) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", st == HC_OK ? "" : hc_last_error());
  uint32_t from = 0;
  hc_status_t decided = st;
  hc_status_t ast = tr->ops->agree(tr, me, &decided, msg, sizeof msg, &from);
  if (ast != HC_OK) return ast;
  if (decided == HC_OK) return HC_OK;
  if (decided == HC_ERR_VERIFY) return hc_error(decided, "%s", msg);
  return hc_error(decided, "%s (%s part %u of %u)", msg, what, from, tr->ops->count(tr));
}

/* The most bytes an output may have to be gathered on part 0: every
 * part's HC_GATHER_MAX (default a quarter of its host's memory), the
 * smallest, so that all decide alike. */
static hc_status_t gather_limit(hc_transport_t *tr, uint32_t me, double *limit, double *waited_s) {
  long long v = (long long)sysconf(_SC_PHYS_PAGES) / 4 * (long long)sysconf(_SC_PAGESIZE);
  hc_status_t st = hc_config_int("HC_GATHER_MAX", &v);
  *limit = (double)v;
  if (st != HC_OK) tr->ops->abort(tr, me);
  return st == HC_OK ? tr->ops->allreduce(tr, me, HC_REDUCE_MIN, limit, 1, waited_s) : st;
}

void hc__devset_forget_outputs(hc_devset_t *set) {
  for (uint32_t i = 0; i < set->nin_parts; i++) free(set->in_parts[i]);
  free(set->in_parts);
  set->in_parts = NULL;
  set->nin_parts = 0;
}

static hc_status_t keep_in_parts(hc_devset_t *set, const char *port) {
  char **p = realloc(set->in_parts, (set->nin_parts + 1) * sizeof *p);
  if (p) set->in_parts = p;
  if (!p || !(p[set->nin_parts] = strdup(port))) return hc_error(HC_ERR_NO_MEMORY, "split run: out of host memory");
  set->nin_parts++;
  return HC_OK;
}

/* An output every part gave with its own rows along axis 0 becomes one
 * field on part 0's device, or stays with the parts when it is larger
 * than limit (and the transport can write files); any other output stays
 * part 0's. */
static hc_status_t gather_output(hc_job_t *job, hc_devset_t *set, const hc_part_t *part, const char *port, double limit,
                                 double *waited_s) {
  hc_transport_t *tr = set->tr;
  hc_field_t *f = hc_job_output(job, port);
  uint32_t rank = f ? hc_field_rank(f) : 0;
  size_t rb = f ? hc_dtype_size(hc_field_dtype(f)) : 0;
  for (uint32_t d = 1; d < rank; d++) rb *= (size_t)hc_field_shape(f)[d];
  int mine = rank >= 1 && hc_field_shape(f)[0] == part->hi - part->lo;
  const int can_write = tr->ops->size > offsetof(hc_transport_ops_t, write_file) && tr->ops->write_file;
  if (mine && (double)part->rows * (double)rb > limit && can_write) return keep_in_parts(set, port);
  size_t bytes = mine ? (size_t)(part->hi - part->lo) * rb : 0;
  size_t want = part->index == 0 && mine ? (size_t)part->rows * rb : 0;
  char *host = malloc(bytes + want + 1);
  if (!host) return hc_error(HC_ERR_NO_MEMORY, "gathering output '%s': cannot stage %zu bytes", port, bytes + want);
  hc_status_t st = bytes ? hc_buffer_read(hc_field_buffer(f), 0, host, bytes) : HC_OK;
  if (st != HC_OK) tr->ops->abort(tr, part->index);
  size_t total = 0;
  if (st == HC_OK) st = tr->ops->gather(tr, part->index, host, bytes, host + bytes, want, &total, waited_s);
  if (st == HC_OK && part->index == 0 && mine) {
    if (total != want) {
      st = hc_error(HC_ERR_INTERNAL, "gathering output '%s': the parts gave %zu bytes, the whole field has %zu", port,
                    total, want);
    } else {
      int64_t shape[HC_MAX_DIMS];
      memcpy(shape, hc_field_shape(f), rank * sizeof *shape);
      shape[0] = part->rows;
      hc_field_t *g = NULL;
      st = hc_field_create(set->dev[0], hc_field_dtype(f), rank, shape, &g);
      if (st == HC_OK) st = hc_buffer_write(hc_field_buffer(g), 0, host + bytes, want);
      if (st == HC_OK) {
        hc_field_set_spacing(g, hc_field_spacing(f));
        hc_field_set_origin(g, hc_field_origin(f));
        hc_field_set_name(g, hc_field_name(f));
        st = hc_job_set_output(job, port, g);
      } else {
        hc_field_destroy(g);
      }
    }
  }
  free(host);
  return st;
}

/* Times are the slowest part's; every part's stats reach every part: the
 * process's one part's, or its devices' parts' (mine[0..nmine), parts of
 * total). */
static hc_status_t collect(hc_job_t *job, hc_devset_t *set, const split_plan_t *pl, hc_part_t *part,
                           const hc_part_stats_t *mine, uint32_t nmine, uint32_t total) {
  hc_transport_t *tr = set->tr;
  hc_context_t *ctx = set->ctx;
  const char *wl = hc_job_workload(job);
  /* The part's stats are its run's: waits while gathering afterwards are
   * not its idle time. */
  double limit = 0, after = 0;
  hc_status_t st = gather_limit(tr, part->index, &limit, &after);
  uint32_t nout = hc_workload_port_count(ctx, wl, 1);
  for (uint32_t i = 0; i < nout && st == HC_OK; i++)
    st = gather_output(job, set, part, hc_workload_port(ctx, wl, 1, i)->name, limit, &after);
  /* A part that leaves before the others' collectives tells them. */
  if (st != HC_OK) tr->ops->abort(tr, part->index);
  hc_job_times_t t;
  hc_job_times(job, &t);
  double times[4] = {t.compute_s, t.device_s};
  hc_job_build_time(job, &times[2], &times[3]);
  if (st == HC_OK) st = tr->ops->allreduce(tr, part->index, HC_REDUCE_MAX, times, 4, &after);
  hc_part_stats_t own;
  if (!mine) {
    hc_part_stats_t *s = &own;
    hc__part_timed_stats(part, s, NULL);
    s->lo = part->lo;
    s->hi = part->hi;
    s->weight = pl->share[part->index];
    s->compute_s = t.compute_s;
    s->device_s = t.device_s;
    snprintf(s->device, sizeof s->device, "%s", hc_device_name(set->dev[0]));
    mine = s;
    nmine = 1;
  }
  free(set->stats);
  set->stats = calloc(total, sizeof *set->stats);
  if (st == HC_OK && !set->stats) {
    st = hc_error(HC_ERR_NO_MEMORY, "split run: out of host memory");
    tr->ops->abort(tr, part->index);
  }
  if (st == HC_OK)
    st =
        tr->ops->allgather(tr, part->index, mine, nmine * sizeof *mine, set->stats, total * sizeof *mine, NULL, &after);
  if (st == HC_OK) {
    hc_job_set_times(job, times[0], times[1]);
    hc__job_set_build(job, times[2], times[3]);
  }
  return st;
}

/* Auto shares over the transport's parts: each part gives its device's
 * figure from its host's history and its declared fp32 peak; the shares
 * follow the figures where every part has one, else the peaks where every
 * part declares one, else they stay equal. Every part gets the same
 * weights, so every part makes the same plan. */
static hc_status_t rank_shares(hc_job_t *job, hc_devset_t *set, split_plan_t *pl) {
  hc_transport_t *tr = set->tr;
  const uint32_t me = tr->ops->self(tr), n = pl->nparts;
  /* A process driving several devices: the sum of theirs (none when one
   * has none). */
  double mine[2] = {0, 0};
  int rated = 1, peaked = 1;
  for (uint32_t i = 0; i < set->n; i++) {
    const double r = hc__history_rate(job, pl->split.rows, set->dev[i]),
                 p = hc_device_info(set->dev[i])->peak_fp32_gflops;
    rated &= r > 0, peaked &= p > 0;
    mine[0] += r, mine[1] += p;
  }
  if (!rated) mine[0] = 0;
  if (!peaked) mine[1] = 0;
  double *all = malloc(2 * n * sizeof *all), waited = 0;
  hc_status_t st = all ? HC_OK : hc_error(HC_ERR_NO_MEMORY, "split run: out of host memory");
  if (st != HC_OK) tr->ops->abort(tr, me);
  size_t total = 0;
  if (st == HC_OK) st = tr->ops->allgather(tr, me, mine, sizeof mine, all, 2 * n * sizeof *all, &total, &waited);
  if (st == HC_OK && total != 2 * n * sizeof *all)
    st = hc_error(HC_ERR_INTERNAL, "split run: the parts' figures hold %zu bytes, not %zu", total, 2 * n * sizeof *all);
  if (st == HC_OK) {
    int rates = 1, peaks = 1;
    uint32_t missing = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (!(all[2 * i] > 0) && rates) rates = 0, missing = i;
      peaks &= all[2 * i + 1] > 0;
    }
    if (rates || peaks) {
      for (uint32_t i = 0; i < n; i++) all[i] = all[2 * i + (rates ? 0 : 1)]; /* in place: 2 i >= i */
      hc__split_plan_reshare(pl, all);
    }
    if (rates)
      snprintf(pl->shares, sizeof pl->shares, "shares from the parts' history");
    else
      snprintf(pl->shares, sizeof pl->shares, "%s: no history yet for part %u's device (this run's is kept)",
               peaks ? "shares from the devices' peak rates" : "equal shares", missing);
  }
  free(all);
  return agree(tr, me, st, "planning,");
}

hc_status_t hc__run_transport_part(hc_job_t *job, hc_devset_t *set, hc_status_t planned, split_plan_t *pl,
                                   uint32_t flags) {
  hc_transport_t *tr = set->tr;
  uint32_t me = tr->ops->self(tr), n = tr->ops->count(tr);
  hc_device_t *dev = set->dev[0];
  /* Planning failed here (hc_last_error says why) or elsewhere. */
  hc_status_t st = agree(tr, me, planned, "planning,");
  if (st != HC_OK) return st;
  /* pl has rows when the workload splits (over one process, then over
   * that process's devices). */
  if (!pl->lo || (pl->nparts == 1 && set->n == 1)) {
    /* Part 0 runs the whole job; the others wait for its outcome. */
    st = me == 0 ? hc_job_run(job, dev, flags) : HC_OK;
    snprintf(set->plan, sizeof set->plan, "'%s' ran on part 0 (%s) alone: %s", hc_job_workload(job),
             me == 0 ? hc_device_name(dev) : "its device", n < 2 ? "one part" : pl->split.why);
    if (me == 0 && n > 1 && (st == HC_OK || st == HC_ERR_VERIFY)) hc_job_note(job, "%s", set->plan);
    return agree(tr, me, st, "the run,");
  }
  if (set->auto_shares && (st = rank_shares(job, set, pl)) != HC_OK) return st;
  double t0 = hc_now();
  hc_part_t part;
  hc__part_init(&part, set->ctx, pl, me, tr, set->dev[0]);
  set->lo = part.lo;
  set->hi = part.hi;
  set->rows = part.rows;
  split_plan_t local;
  uint32_t first = me, total = n;
  char left_out[200];
  st = hc__rank_plan_devices(job, set, pl, &part, &local, &first, &total, left_out, sizeof left_out);
  if ((st = agree(tr, me, st, "planning,")) != HC_OK) {
    hc__split_plan_free(&local);
    return st;
  }
  hc_part_stats_t *devices_stats = NULL;
  if (total == n) { /* every process runs one part */
    part_inputs_t inputs;
    st = hc__part_inputs_place(job, pl, &part, dev, &inputs);
    hc__job_set_part(job, &part);
    if (st == HC_OK) st = hc_job_run(job, dev, flags);
    hc__job_set_part(job, NULL);
    hc__part_inputs_restore(job, &inputs);
    set->lo = part.lo; /* where hc_part_rebalance left its rows */
    set->hi = part.hi;
    if (st == HC_OK || st == HC_ERR_VERIFY) hc__part_note_moves(&part, job);
  } else {
    st = hc__rank_run_devices(job, set, &local, first, total, flags, pl->share[me], &devices_stats);
  }
  if (st != HC_OK && st != HC_ERR_VERIFY) tr->ops->abort(tr, me);
  hc_status_t run_st = agree(tr, me, st, "the run,");
  if (run_st != HC_OK && run_st != HC_ERR_VERIFY) {
    hc__part_free_stage(&part);
    hc__job_clear(job);
    hc__split_plan_free(&local);
    free(devices_stats);
    return run_st;
  }
  char verify_msg[1024] = "";
  if (run_st == HC_ERR_VERIFY) snprintf(verify_msg, sizeof verify_msg, "%s", hc_last_error());
  st = collect(job, set, pl, &part, devices_stats, devices_stats ? local.nparts : 1, total);
  if (st != HC_OK) tr->ops->abort(tr, me);
  if (st == HC_OK && run_st == HC_OK && !devices_stats) /* the job's times are now the slowest rank's */
    hc__history_record_part(job, pl->split.rows, dev, &part, set->stats[me].compute_s);
  hc__part_free_stage(&part);
  free(devices_stats);
  if ((st = agree(tr, me, st, "gathering the outputs,")) != HC_OK) {
    hc__job_clear(job);
    hc__split_plan_free(&local);
    return st;
  }
  set->nparts = total;
  hc__job_set_wall(job, hc_now() - t0);
  hc__devset_describe(set, pl, tr);
  if (total != n) {
    char what[96];
    if (pl->split.kind == HC_SPLIT_SLABS)
      snprintf(what, sizeof what, "along axis 0 of %lld rows (halo %u)", (long long)pl->split.rows, pl->split.halo);
    else
      snprintf(what, sizeof what, "of %lld items (inputs replicated)", (long long)pl->split.rows);
    snprintf(set->plan, sizeof set->plan, "%u parts on the devices of %u process%s %s, %s, %s transport between them",
             total, n, n == 1 ? "" : "es", what, pl->shares, tr->ops->name);
  }
  hc__split_plan_free(&local);
  if (left_out[0]) hc_job_note(job, "part %u of the processes' split: %s", me, left_out);
  return run_st == HC_ERR_VERIFY ? hc_error(HC_ERR_VERIFY, "%s", verify_msg) : HC_OK;
}

HC_API int hc_devset_output_in_parts(const hc_devset_t *set, const char *port) {
  for (uint32_t i = 0; set && port && i < set->nin_parts; i++)
    if (!strcmp(set->in_parts[i], port)) return 1;
  return 0;
}

/* Every part writes its rows of f into a temporary file at their offset
 * after the header; part 0 then gives it its name. */
static hc_status_t write_in_parts(hc_devset_t *set, hc_field_t *f, const char *path) {
  hc_transport_t *tr = set->tr;
  uint32_t me = tr->ops->self(tr), rank = hc_field_rank(f);
  int64_t shape[HC_MAX_DIMS];
  memcpy(shape, hc_field_shape(f), rank * sizeof *shape);
  size_t rb = hc_dtype_size(hc_field_dtype(f));
  for (uint32_t d = 1; d < rank; d++) rb *= (size_t)shape[d];
  shape[0] = set->rows;
  char head[1024], tmp[4200];
  size_t head_len = 0, bytes = (size_t)(set->hi - set->lo) * rb;
  snprintf(tmp, sizeof tmp, "%s.hc-parts", path);
  hc_status_t st = hc_npy_header(hc_field_dtype(f), rank, shape, head, sizeof head, &head_len);
  char *host = st == HC_OK ? malloc(bytes + 1) : NULL;
  if (st == HC_OK && !host) st = hc_error(HC_ERR_NO_MEMORY, "%s: cannot stage %zu bytes", path, bytes);
  if (st == HC_OK) st = hc_buffer_read(hc_field_buffer(f), 0, host, bytes);
  st = agree(tr, me, st, "writing the outputs,");
  if (st == HC_OK)
    st = tr->ops->write_file(tr, me, tmp, head, me == 0 ? head_len : 0, head_len + (uint64_t)set->lo * rb, host, bytes);
  free(host);
  if (me == 0 && st == HC_OK && rename(tmp, path) != 0)
    st = hc_error(HC_ERR_IO, "%s: cannot rename the file written in parts: %s", path, strerror(errno));
  if (me == 0 && st == HC_OK) st = hc__field_save_sidecar(f, path);
  if (me == 0 && st != HC_OK) remove(tmp);
  return agree(tr, me, st, "writing the outputs,");
}

HC_API hc_status_t hc_devset_save_output(hc_devset_t *set, hc_job_t *job, const char *port, const char *path,
                                         int *written) {
  if (!set || !job || !port || !path) return hc_error(HC_ERR_INVALID_ARG, "hc_devset_save_output: NULL argument");
  hc_field_t *f = hc_job_output(job, port);
  if (written) *written = 0;
  if (!set->tr) {
    if (written) *written = f != NULL;
    return f ? hc_field_save_npy(f, path) : HC_OK;
  }
  hc_transport_t *tr = set->tr;
  uint32_t me = tr->ops->self(tr);
  /* Whether there is anything to write is part 0's to say. */
  double has = me == 0 && f, waited = 0;
  hc_status_t st = tr->ops->allreduce(tr, me, HC_REDUCE_MAX, &has, 1, &waited);
  if (st != HC_OK || !has) return st;
  if (written) *written = 1;
  if (hc_devset_output_in_parts(set, port)) return write_in_parts(set, f, path);
  if (me == 0) st = hc_field_save_npy(f, path);
  return agree(tr, me, st, "writing the outputs,");
}
