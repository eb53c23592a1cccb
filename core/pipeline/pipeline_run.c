/* Running a pipeline: each stage in dependency order gets its inputs handed
 * over — the producer's field itself when both stages share a device (no
 * copy, no host transfer), else a copy moved here by the pipeline, timed
 * and listed in the report — then runs as an ordinary job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"

static hc_transfer_stats_t stats_now(const hc_pipeline_t *p) {
  hc_transfer_stats_t t;
  hc_transfer_stats_get(p->ctx, &t);
  return t;
}

static void stats_add_diff(hc_transfer_stats_t *acc, const hc_transfer_stats_t *a, const hc_transfer_stats_t *b) {
  acc->to_device_count += b->to_device_count - a->to_device_count;
  acc->to_device_bytes += b->to_device_bytes - a->to_device_bytes;
  acc->to_host_count += b->to_host_count - a->to_host_count;
  acc->to_host_bytes += b->to_host_bytes - a->to_host_bytes;
  acc->cross_device_count += b->cross_device_count - a->cross_device_count;
  acc->cross_device_bytes += b->cross_device_bytes - a->cross_device_bytes;
  acc->seconds += b->seconds - a->seconds;
}

static const hc__pl_bind_t *binding_of(const hc_pipeline_t *p, uint32_t to, uint32_t in_port) {
  for (uint32_t i = 0; i < p->nbinds; i++)
    if (p->binds[i].to == to && p->binds[i].in_port == in_port) return &p->binds[i];
  return NULL;
}

/* A copy of src on dev: made now (and listed), or the one an earlier
 * consumer on dev already caused. */
static hc_status_t moved_copy(hc_pipeline_t *p, const hc__pl_bind_t *b, hc_field_t *src, hc_device_t *dev,
                              hc_field_t **out) {
  for (uint32_t i = 0; i < p->nmoves; i++)
    if (p->moves[i].src == src && hc_field_device(p->moves[i].copy) == dev) {
      *out = p->moves[i].copy;
      return HC_OK;
    }
  hc__pl_move_t *mv = realloc(p->moves, (p->nmoves + 1) * sizeof *mv);
  if (!mv) return hc_error(HC_ERR_NO_MEMORY, "out of memory");
  p->moves = mv;
  hc_pipeline_transfer_t *tr = realloc(p->transfers, (p->ntransfers + 1) * sizeof *tr);
  if (!tr) return hc_error(HC_ERR_NO_MEMORY, "out of memory");
  p->transfers = tr;
  /* Both devices locked (in index order, as every thread must) for the copy. */
  hc_device_t *sdev = hc_field_device(src), *first = hc_device_index(sdev) < hc_device_index(dev) ? sdev : dev;
  hc_device_t *second = first == dev ? sdev : dev;
  hc_device_lock(first);
  hc_device_lock(second);
  double t0 = hc_now();
  hc_field_t *copy = NULL;
  hc_status_t st = hc_field_copy_to(src, dev, &copy);
  if (st == HC_OK) st = hc_device_finish(dev);
  double dt = hc_now() - t0;
  hc_device_unlock(second);
  hc_device_unlock(first);
  if (st != HC_OK) {
    hc_field_destroy(copy);
    return hc_error_prefix(st, "moving it from %s to %s: ", hc_device_name(hc_field_device(src)), hc_device_name(dev));
  }
  mv[p->nmoves].src = src;
  mv[p->nmoves].copy = copy;
  p->nmoves++;
  hc_pipeline_transfer_t *t = &tr[p->ntransfers++];
  memset(t, 0, sizeof *t);
  t->stage = b->to;
  t->input = hc__pl_port(&p->stages[b->to], p->ctx, 0, b->in_port)->name;
  t->from_stage = b->from == HC__PL_OUTSIDE ? -1 : (int32_t)b->from;
  t->output = b->from == HC__PL_OUTSIDE ? "" : hc__pl_port(&p->stages[b->from], p->ctx, 1, b->out_port)->name;
  snprintf(t->from_device, sizeof t->from_device, "%s", hc_device_name(hc_field_device(src)));
  snprintf(t->to_device, sizeof t->to_device, "%s", hc_device_name(dev));
  t->bytes = hc_field_bytes(src);
  t->seconds = dt;
  p->report.transfer_count++;
  p->report.transfer_bytes += t->bytes;
  p->report.transfer_s += dt;
  *out = copy;
  return HC_OK;
}

/* Binds every input of stage k to what feeds it. */
static hc_status_t hand_over(hc_pipeline_t *p, uint32_t k) {
  hc__pl_stage_t *s = &p->stages[k];
  uint32_t nin = hc__pl_nports(s, p->ctx, 0);
  for (uint32_t in = 0; in < nin; in++) {
    const hc_port_spec_t *ps = hc__pl_port(s, p->ctx, 0, in);
    const hc__pl_bind_t *b = binding_of(p, k, in);
    hc_field_t *src = NULL;
    if (b)
      src = b->from == HC__PL_OUTSIDE
                ? b->outside
                : hc_job_output(p->stages[b->from].job, hc__pl_port(&p->stages[b->from], p->ctx, 1, b->out_port)->name);
    if (b && !src && !(ps->flags & HC_PORT_OPTIONAL)) {
      if (b->from == HC__PL_OUTSIDE)
        return hc_error(HC_ERR_PIPELINE, "input '%s': no field was set from outside", ps->name);
      return hc_error(HC_ERR_PIPELINE, "input '%s': stage %u (%s) gave no output '%s'", ps->name, b->from + 1,
                      p->stages[b->from].workload, hc__pl_port(&p->stages[b->from], p->ctx, 1, b->out_port)->name);
    }
    hc_field_t *use = src;
    if (src && hc_field_device(src) != s->dev) {
      hc_status_t st = moved_copy(p, b, src, s->dev, &use);
      if (st != HC_OK) return hc_error_prefix(st, "input '%s': ", ps->name);
    } else if (src) {
      p->report.handovers_on_device++;
    }
    if (src) p->report.handovers++;
    hc_status_t st = hc_job_set_input(s->job, ps->name, use);
    if (st != HC_OK) return st;
  }
  return HC_OK;
}

/* Moved copies live for one run: unbind them from the jobs, free them. */
static void drop_moves(hc_pipeline_t *p) {
  for (uint32_t k = 0; k < p->nstages; k++) {
    hc__pl_stage_t *s = &p->stages[k];
    uint32_t nin = hc__pl_nports(s, p->ctx, 0);
    for (uint32_t in = 0; in < nin; in++) {
      const char *name = hc__pl_port(s, p->ctx, 0, in)->name;
      hc_field_t *f = hc_job_input(s->job, name);
      for (uint32_t m = 0; f && m < p->nmoves; m++)
        if (p->moves[m].copy == f) hc_job_set_input(s->job, name, NULL);
    }
  }
  for (uint32_t m = 0; m < p->nmoves; m++) hc_field_destroy(p->moves[m].copy);
  free(p->moves);
  p->moves = NULL;
  p->nmoves = 0;
}

HC_API hc_status_t hc_pipeline_run(hc_pipeline_t *p, uint32_t flags) {
  if (!p) return hc_error(HC_ERR_INVALID_ARG, "hc_pipeline_run: NULL pipeline");
  hc__pl_reset_run(p);
  hc__trace_t *tv_tr = hc__trace_enter(p->ctx);
  const double tv = tv_tr ? hc_now() : 0;
  hc_status_t result = hc_pipeline_validate(p);
  if (tv_tr) {
    hc__trace_host(tv_tr, HC__TRACE_VALIDATE, "validate pipeline", tv, "status", hc_status_name(result));
    hc__trace_leave(tv_tr);
  }
  if (result != HC_OK) {
    p->report.status = result;
    p->message = strdup(hc_last_error());
    return result;
  }
  const hc_transfer_stats_t start = stats_now(p);
  const double t_start = hc_now();
  char *verify_msg = NULL;
  for (uint32_t i = 0; i < p->nstages; i++) {
    const uint32_t k = p->order[i];
    hc__pl_stage_t *s = &p->stages[k];
    if (result != HC_OK && result != HC_ERR_VERIFY) {
      s->state = HC_STAGE_SKIPPED;
      continue;
    }
    /* The stage's span and the prefix of its device events' names. */
    hc__trace_t *tr = hc__trace_enter(p->ctx);
    const double ts0 = tr ? hc_now() : 0;
    char label[64], scope[64];
    snprintf(label, sizeof label, "stage %u %s", k + 1, s->workload);
    if (tr) hc__trace_scope_swap(label, scope, sizeof scope);
    hc__profiler_push(p->ctx, label);
    hc_transfer_stats_t a = stats_now(p);
    double h0 = hc_now();
    hc_status_t st = hand_over(p, k);
    s->handover_s = hc_now() - h0;
    hc_transfer_stats_t b = stats_now(p);
    stats_add_diff(&s->handover, &a, &b);
    stats_add_diff(&p->report.between, &a, &b);
    if (st == HC_OK) {
      st = s->set ? hc_job_run_split(s->job, s->set, flags) : hc_job_run(s->job, s->dev, flags);
      hc_transfer_stats_t c = stats_now(p);
      stats_add_diff(&s->run, &b, &c);
    }
    s->status = st;
    if (st == HC_OK || st == HC_ERR_VERIFY) {
      s->state = HC_STAGE_DONE;
      hc_job_times_t t;
      hc_job_times(s->job, &t);
      p->report.stages_run++;
      p->report.compute_s += t.compute_s;
      p->report.device_s += t.device_s;
      if (st == HC_ERR_VERIFY && result == HC_OK) {
        result = st;
        hc_error_prefix(st, "pipeline: stage %u (%s): ", k + 1, s->workload);
        verify_msg = strdup(hc_last_error());
      }
    } else {
      s->state = HC_STAGE_FAILED;
      p->report.failed_stage = (int32_t)k;
      result = hc_error_prefix(st, "pipeline: stage %u (%s) failed: ", k + 1, s->workload);
      free(verify_msg);
      verify_msg = strdup(hc_last_error());
    }
    hc__profiler_pop(p->ctx);
    if (tr) {
      char where[64];
      snprintf(where, sizeof where, "%s", hc_device_name(s->dev));
      hc__trace_host(tr, HC__TRACE_STAGE, label, ts0, "device", where);
      hc__trace_scope_swap(scope, NULL, 0);
      hc__trace_leave(tr);
    }
  }
  drop_moves(p);
  hc_transfer_stats_t end = stats_now(p);
  stats_add_diff(&p->report.total, &start, &end);
  p->report.wall_s = hc_now() - t_start;
  p->report.status = result;
  p->message = verify_msg; /* the failure, or the first failed verification */
  if (result != HC_OK) hc_error(result, "%s", p->message ? p->message : hc_status_str(result));
  return result;
}
