/* Pipelines: building (stages, bindings, fields from outside) and reading
 * the results. Validation is in pipeline_validate.c, running in
 * pipeline_run.c, the text syntax in pipeline_parse.c / pipeline_spec.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"

uint32_t hc__pl_nports(const hc__pl_stage_t *s, hc_context_t *ctx, int output) {
  return hc_workload_port_count(ctx, s->workload, output);
}

const hc_port_spec_t *hc__pl_port(const hc__pl_stage_t *s, hc_context_t *ctx, int output, uint32_t i) {
  return hc_workload_port(ctx, s->workload, output, i);
}

int hc__pl_port_index(const hc__pl_stage_t *s, hc_context_t *ctx, int output, const char *name) {
  uint32_t n = hc__pl_nports(s, ctx, output);
  for (uint32_t i = 0; i < n; i++) {
    const hc_port_spec_t *ps = hc__pl_port(s, ctx, output, i);
    if (name ? !strcmp(ps->name, name) : (ps->flags & HC_PORT_PRIMARY) != 0) return (int)i;
  }
  /* A workload with a single port and no flag: that port is primary. */
  return !name && n == 1 ? 0 : -1;
}

void hc__pl_port_list(const hc__pl_stage_t *s, hc_context_t *ctx, int output, char *buf, size_t n) {
  size_t len = 0;
  uint32_t np = hc__pl_nports(s, ctx, output);
  buf[0] = '\0';
  for (uint32_t i = 0; i < np && len + 1 < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", hc__pl_port(s, ctx, output, i)->name);
  if (!np) snprintf(buf, n, "none");
}

HC_API hc_status_t hc_pipeline_create(hc_context_t *ctx, hc_pipeline_t **out) {
  if (!ctx || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_pipeline_create: NULL argument");
  *out = calloc(1, sizeof **out);
  if (!*out) return hc_error(HC_ERR_NO_MEMORY, "pipeline: out of memory");
  (*out)->ctx = ctx;
  (*out)->report.failed_stage = -1;
  (*out)->report.message = "";
  return HC_OK;
}

void hc__pl_reset_run(hc_pipeline_t *p) {
  hc_context_t *ctx = p->ctx;
  for (uint32_t i = 0; i < p->nstages; i++) {
    hc__pl_stage_t *s = &p->stages[i];
    uint32_t n = hc__pl_nports(s, ctx, 1);
    for (uint32_t k = 0; k < n; k++) {
      const char *name = hc__pl_port(s, ctx, 1, k)->name;
      hc_field_t *f = NULL;
      if (hc_job_output(s->job, name) && hc_job_take_output(s->job, name, &f) == HC_OK) hc_field_destroy(f);
    }
    /* Inputs are bound again at each hand-over; the fields they pointed
     * to (outputs of other stages, moved copies) are gone or going. */
    n = hc__pl_nports(s, ctx, 0);
    for (uint32_t k = 0; k < n; k++) hc_job_set_input(s->job, hc__pl_port(s, ctx, 0, k)->name, NULL);
    s->state = HC_STAGE_PENDING;
    s->status = HC_OK;
    s->handover_s = 0;
    memset(&s->handover, 0, sizeof s->handover);
    memset(&s->run, 0, sizeof s->run);
  }
  for (uint32_t i = 0; i < p->nmoves; i++) hc_field_destroy(p->moves[i].copy);
  free(p->moves);
  p->moves = NULL;
  p->nmoves = 0;
  free(p->transfers);
  p->transfers = NULL;
  p->ntransfers = 0;
  free(p->message);
  p->message = NULL;
  memset(&p->report, 0, sizeof p->report);
  p->report.failed_stage = -1;
  p->report.message = "";
}

HC_API void hc_pipeline_destroy(hc_pipeline_t *p) {
  if (!p) return;
  hc__pl_reset_run(p);
  for (uint32_t i = 0; i < p->nstages; i++) {
    hc_job_destroy(p->stages[i].job);
    hc_device_close(p->stages[i].dev);
    hc_devset_destroy(p->stages[i].set);
    free(p->stages[i].set_spec);
    free(p->stages[i].out_shape);
  }
  free(p->stages);
  free(p->binds);
  free(p->order);
  free(p->output_dir);
  free(p);
}

HC_API hc_status_t hc_pipeline_add_stage(hc_pipeline_t *p, const char *workload, const char *const *params,
                                         uint32_t nparams, const char *device, uint32_t *index) {
  if (!p || !workload || (nparams && !params))
    return hc_error(HC_ERR_INVALID_ARG, "hc_pipeline_add_stage: NULL argument");
  const uint32_t number = p->nstages + 1;
  hc_job_t *job = NULL;
  hc_device_t *dev = NULL;
  hc_devset_t *set = NULL;
  char *set_spec = NULL;
  hc_status_t st = hc_job_create(p->ctx, workload, &job);
  if (st != HC_OK) {
    /* An unknown name is a mistake in the pipeline, not a missing device. */
    return hc_error_prefix(st == HC_ERR_NOT_FOUND ? HC_ERR_PIPELINE : st, "pipeline: stage %u: ", number);
  }
  for (uint32_t i = 0; i < nparams && st == HC_OK; i++) {
    st = params[i] ? hc_job_set_kv(job, params[i]) : hc_error(HC_ERR_INVALID_ARG, "NULL parameter");
    if (st != HC_OK) hc_error_prefix(st, "pipeline: stage %u (%s): ", number, workload);
  }
  if (st == HC_OK) {
    if ((!device || !*device) && p->nstages) {
      /* No device given: the previous stage's. */
      st = hc_device_open(p->ctx, hc_device_index(p->stages[p->nstages - 1].dev), &dev);
    } else {
      /* "auto": the best device that can run this workload, as for a
       * single run. */
      const char *spec = device && *device ? device : "auto";
      uint32_t idx = 0;
      if (strchr(spec, ',') || !strcmp(spec, "all")) {
        /* A device set: the stage runs split over it, its outputs gathered
         * on the set's first device (the device the next stage sees). */
        st = hc_devset_parse(p->ctx, spec, workload, &set);
        /* shares from the performance history, as hcrun's default */
        if (st == HC_OK) st = hc_devset_parse_weights(set, "auto");
        if (st == HC_OK) idx = hc_device_index(hc_devset_device(set, 0));
        if (st == HC_OK && !(set_spec = strdup(spec))) st = hc_error(HC_ERR_NO_MEMORY, "pipeline: out of memory");
      } else {
        st = !strcmp(spec, "auto") ? hc_device_find_auto(p->ctx, workload, &idx) : hc_device_find(p->ctx, spec, &idx);
      }
      if (st != HC_OK)
        st = HC_ERR_PIPELINE; /* a device spec that names nothing here */
      else
        st = hc_device_open(p->ctx, idx, &dev);
    }
    if (st != HC_OK) hc_error_prefix(st, "pipeline: stage %u (%s): ", number, workload);
  }
  if (st == HC_OK && p->output_dir) st = hc_job_set_output_dir(job, p->output_dir);
  if (st == HC_OK) {
    /* The stage's extra files get the prefix of its .npy outputs. */
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%u-%s-", number, workload);
    st = hc_job_set_output_prefix(job, prefix);
  }
  hc__pl_stage_t *grown = st == HC_OK ? realloc(p->stages, (p->nstages + 1) * sizeof *grown) : NULL;
  if (st == HC_OK && !grown) st = hc_error(HC_ERR_NO_MEMORY, "pipeline: out of memory");
  if (st != HC_OK) {
    hc_device_close(dev);
    hc_devset_destroy(set);
    free(set_spec);
    hc_job_destroy(job);
    return st;
  }
  p->stages = grown;
  hc__pl_stage_t *s = &p->stages[p->nstages];
  memset(s, 0, sizeof *s);
  s->job = job;
  s->workload = hc_job_workload(job);
  s->dev = dev;
  s->set = set;
  s->set_spec = set_spec;
  if (index) *index = p->nstages;
  p->nstages++;
  p->validated = 0;
  return HC_OK;
}

HC_API uint32_t hc_pipeline_stage_count(const hc_pipeline_t *p) { return p ? p->nstages : 0; }

void hc__pl_drop_defaults(hc_pipeline_t *p) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < p->nbinds; i++)
    if (!p->binds[i].is_default) p->binds[k++] = p->binds[i];
  p->nbinds = k;
}

static hc__pl_bind_t *binding_of(hc_pipeline_t *p, uint32_t to, uint32_t in_port) {
  for (uint32_t i = 0; i < p->nbinds; i++)
    if (p->binds[i].to == to && p->binds[i].in_port == in_port) return &p->binds[i];
  return NULL;
}

static hc_status_t append_binding(hc_pipeline_t *p, const hc__pl_bind_t *b) {
  hc__pl_bind_t *n = realloc(p->binds, (p->nbinds + 1) * sizeof *n);
  if (!n) return hc_error(HC_ERR_NO_MEMORY, "pipeline: out of memory");
  p->binds = n;
  n[p->nbinds++] = *b;
  p->validated = 0;
  return HC_OK;
}

/* Resolves a port by name (NULL: primary) or explains why it cannot. */
static hc_status_t find_port(hc_pipeline_t *p, uint32_t stage, int output, const char *name, uint32_t *index) {
  const hc__pl_stage_t *s = &p->stages[stage];
  int i = hc__pl_port_index(s, p->ctx, output, name);
  if (i >= 0) {
    *index = (uint32_t)i;
    return HC_OK;
  }
  char list[512];
  hc__pl_port_list(s, p->ctx, output, list, sizeof list);
  const char *dir = output ? "output" : "input";
  if (name)
    return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u (%s) has no %s '%s' (%ss: %s)", stage + 1, s->workload, dir,
                    name, dir, list);
  return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u (%s) has no primary %s (%ss: %s)", stage + 1, s->workload, dir,
                  dir, list);
}

static hc_status_t already_bound(hc_pipeline_t *p, const hc__pl_bind_t *b) {
  const hc__pl_stage_t *s = &p->stages[b->to];
  const char *in = hc__pl_port(s, p->ctx, 0, b->in_port)->name;
  if (b->from == HC__PL_OUTSIDE)
    return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u (%s): input '%s' is already bound to a field from outside",
                    b->to + 1, s->workload, in);
  const hc__pl_stage_t *f = &p->stages[b->from];
  return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u (%s): input '%s' is already bound to stage %u (%s) output '%s'",
                  b->to + 1, s->workload, in, b->from + 1, f->workload, hc__pl_port(f, p->ctx, 1, b->out_port)->name);
}

HC_API hc_status_t hc_pipeline_bind(hc_pipeline_t *p, uint32_t from, const char *output, uint32_t to,
                                    const char *input) {
  if (!p) return hc_error(HC_ERR_INVALID_ARG, "hc_pipeline_bind: NULL pipeline");
  if (from >= p->nstages || to >= p->nstages)
    return hc_error(HC_ERR_PIPELINE, "pipeline: no stage %u (the pipeline has %u)",
                    (from >= p->nstages ? from : to) + 1, p->nstages);
  hc__pl_bind_t b = {from, 0, to, 0, 0, NULL};
  hc_status_t st = find_port(p, from, 1, output, &b.out_port);
  if (st == HC_OK) st = find_port(p, to, 0, input, &b.in_port);
  if (st != HC_OK) return st;
  hc__pl_drop_defaults(p);
  const hc__pl_bind_t *old = binding_of(p, to, b.in_port);
  if (old) return already_bound(p, old);
  return append_binding(p, &b);
}

HC_API hc_status_t hc_pipeline_set_input(hc_pipeline_t *p, uint32_t stage, const char *input, hc_field_t *field) {
  if (!p) return hc_error(HC_ERR_INVALID_ARG, "hc_pipeline_set_input: NULL pipeline");
  if (stage >= p->nstages)
    return hc_error(HC_ERR_PIPELINE, "pipeline: no stage %u (the pipeline has %u)", stage + 1, p->nstages);
  hc__pl_bind_t b = {HC__PL_OUTSIDE, 0, stage, 0, 0, field};
  hc_status_t st = find_port(p, stage, 0, input, &b.in_port);
  if (st != HC_OK) return st;
  if (field) { /* refused at the call, as hc_job_set_input does */
    hc__pl_shape_t got = hc__pl_field_shape(field);
    st = hc__pl_check_delivery(p, stage, hc__pl_port(&p->stages[stage], p->ctx, 0, b.in_port), &got,
                               "the field set from outside");
    if (st != HC_OK) return st;
  }
  hc__pl_drop_defaults(p);
  hc__pl_bind_t *old = binding_of(p, stage, b.in_port);
  if (old && old->from != HC__PL_OUTSIDE) return already_bound(p, old);
  if (old && field) {
    old->outside = field;
    return HC_OK;
  }
  if (old) { /* NULL field: unbind */
    *old = p->binds[--p->nbinds];
    p->validated = 0;
    return HC_OK;
  }
  return field ? append_binding(p, &b) : HC_OK;
}

HC_API hc_status_t hc_pipeline_set_output_dir(hc_pipeline_t *p, const char *dir) {
  if (!p) return hc_error(HC_ERR_INVALID_ARG, "hc_pipeline_set_output_dir: NULL pipeline");
  char *copy = dir ? strdup(dir) : NULL;
  if (dir && !copy) return hc_error(HC_ERR_NO_MEMORY, "pipeline: out of memory");
  free(p->output_dir);
  p->output_dir = copy;
  for (uint32_t i = 0; i < p->nstages; i++) {
    hc_status_t st = hc_job_set_output_dir(p->stages[i].job, dir);
    if (st != HC_OK) return st;
  }
  return HC_OK;
}

HC_API hc_job_t *hc_pipeline_stage_job(const hc_pipeline_t *p, uint32_t stage) {
  return p && stage < p->nstages ? p->stages[stage].job : NULL;
}

HC_API hc_device_t *hc_pipeline_stage_device(const hc_pipeline_t *p, uint32_t stage) {
  return p && stage < p->nstages ? p->stages[stage].dev : NULL;
}

HC_API struct hc_devset *hc_pipeline_stage_set(const hc_pipeline_t *p, uint32_t stage) {
  return p && stage < p->nstages ? p->stages[stage].set : NULL;
}

HC_API hc_status_t hc_pipeline_stage_info(const hc_pipeline_t *p, uint32_t stage, hc_pipeline_stage_info_t *out) {
  if (!p || !out || stage >= p->nstages)
    return hc_error(HC_ERR_INVALID_ARG, "hc_pipeline_stage_info: no stage %u", stage + 1);
  const hc__pl_stage_t *s = &p->stages[stage];
  memset(out, 0, sizeof *out);
  out->workload = s->workload;
  out->device = s->set ? s->set_spec : hc_device_name(s->dev);
  out->state = s->state;
  out->status = s->status;
  hc_job_times(s->job, &out->times);
  out->handover_s = s->handover_s;
  out->handover = s->handover;
  out->run = s->run;
  return HC_OK;
}

HC_API uint32_t hc_pipeline_binding_count(const hc_pipeline_t *p) { return p ? p->nbinds : 0; }

HC_API hc_status_t hc_pipeline_binding_get(const hc_pipeline_t *p, uint32_t i, hc_pipeline_binding_t *out) {
  if (!p || !out || i >= p->nbinds) return hc_error(HC_ERR_INVALID_ARG, "hc_pipeline_binding_get: index out of range");
  const hc__pl_bind_t *b = &p->binds[i];
  out->from = b->from == HC__PL_OUTSIDE ? -1 : (int32_t)b->from;
  out->output = b->from == HC__PL_OUTSIDE ? "" : hc__pl_port(&p->stages[b->from], p->ctx, 1, b->out_port)->name;
  out->to = b->to;
  out->input = hc__pl_port(&p->stages[b->to], p->ctx, 0, b->in_port)->name;
  out->is_default = b->is_default;
  return HC_OK;
}

HC_API uint32_t hc_pipeline_transfer_count(const hc_pipeline_t *p) { return p ? p->ntransfers : 0; }

HC_API hc_status_t hc_pipeline_transfer_get(const hc_pipeline_t *p, uint32_t i, hc_pipeline_transfer_t *out) {
  if (!p || !out || i >= p->ntransfers)
    return hc_error(HC_ERR_INVALID_ARG, "hc_pipeline_transfer_get: index out of range");
  *out = p->transfers[i];
  return HC_OK;
}

HC_API void hc_pipeline_report(const hc_pipeline_t *p, hc_pipeline_report_t *out) {
  if (!p || !out) return;
  *out = p->report;
  out->message = p->message ? p->message : "";
}
