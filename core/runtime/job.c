/* Jobs: one configured run of a workload (parameters, inputs, outputs,
 * metrics, timings, verification). Both the embedding program and the
 * workload plugin talk to the same object. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"

typedef struct {
  char name[64];
  char unit[32];
  double value;
} metric_t;

struct hc_job {
  hc_context_t *ctx;
  hc__workload_t *wl;
  hc__param_value_t *values; /* one per param spec */
  hc_field_t **inputs;       /* one per input port (borrowed) */
  hc_field_t **outputs;      /* one per output port (owned) */
  metric_t *metrics;
  uint32_t nmetrics, cap_metrics;
  hc_job_times_t times;
  hc__build_clock_t build; /* the last run's kernel builds (build_time.c) */
  int verified;
  char *verify_msg;
  char *notes;
  size_t notes_len, notes_cap;
  char *output_dir;
  char *output_prefix; /* of extra files' names: "<stage>-<workload>-" in a pipeline */
  char **files;        /* extra files the last run wrote (hc_job_output_file) */
  uint32_t nfiles;
  hc_device_t *dev; /* during run */
  hc_part_t *part;  /* during a split run: this job's part (core/partition) */
  uint32_t flags;
  double last_progress;
  /* The first parameter the workload asked for that its schema does not
   * declare (or as another type): hc_job_run then fails naming it. The
   * getters take a const job, and the job belongs to one thread at a time,
   * so they record it here (bad_param_mark). */
  char bad_param[256];
};

static void bad_param_mark(const hc_job_t *j, const char *fmt, const char *name, const char *as, const char *is) {
  hc_job_t *mj = (hc_job_t *)j; /* see bad_param */
  char msg[256];
  snprintf(msg, sizeof msg, fmt, hc_job_workload(j), name, as, is);
  if (!mj->bad_param[0]) snprintf(mj->bad_param, sizeof mj->bad_param, "%s", msg);
  hc_error(HC_ERR_PARAM, "%s", msg);
}

static const hc_param_spec_t *pspec(const hc__workload_t *w, uint32_t i) {
  return (const void *)((const char *)w->ops.params + (size_t)i * w->ops.param_spec_size);
}

static const hc_port_spec_t *port(const hc__workload_t *w, int output, uint32_t i) {
  const hc_port_spec_t *base = output ? w->ops.outputs : w->ops.inputs;
  return (const void *)((const char *)base + (size_t)i * w->ops.port_spec_size);
}

static int port_index(const hc__workload_t *w, int output, const char *name) {
  uint32_t n = output ? w->ops.noutputs : w->ops.ninputs;
  for (uint32_t i = 0; i < n; i++)
    if (!strcmp(port(w, output, i)->name, name)) return (int)i;
  return -1;
}

static int param_index(const hc__workload_t *w, const char *name) {
  for (uint32_t i = 0; name && i < w->ops.nparams; i++)
    if (!strcmp(pspec(w, i)->name, name)) return (int)i;
  return -1;
}

HC_API hc_status_t hc_job_create(hc_context_t *ctx, const char *workload, hc_job_t **out) {
  if (!ctx || !workload || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_job_create: NULL argument");
  *out = NULL;
  hc__workload_t *w = hc__find_workload(ctx, workload);
  if (!w) {
    char names[512] = "";
    size_t len = 0;
    for (uint32_t i = 0; i < ctx->nworkloads && len < sizeof names - 70; i++)
      len +=
          (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", ctx->workloads[i].plugin.desc->name);
    return hc_error(HC_ERR_NOT_FOUND, "unknown workload '%s' (available: %s)", workload, len ? names : "none");
  }
  hc_job_t *j = calloc(1, sizeof *j);
  if (!j) return hc_error(HC_ERR_NO_MEMORY, "out of memory");
  j->ctx = ctx;
  j->wl = w;
  j->verified = -1;
  j->values = calloc(w->ops.nparams + 1, sizeof *j->values);
  j->inputs = calloc(w->ops.ninputs + 1, sizeof *j->inputs);
  j->outputs = calloc(w->ops.noutputs + 1, sizeof *j->outputs);
  if (!j->values || !j->inputs || !j->outputs) {
    hc_job_destroy(j);
    return hc_error(HC_ERR_NO_MEMORY, "out of memory");
  }
  for (uint32_t i = 0; i < w->ops.nparams; i++) {
    const hc_param_spec_t *s = pspec(w, i);
    if (!s->def) continue;
    hc_status_t st = hc__param_parse(s, s->def, &j->values[i]);
    if (st != HC_OK) {
      hc_job_destroy(j);
      return hc_error_prefix(HC_ERR_PLUGIN, "workload '%s' has a bad default: ", workload);
    }
  }
  *out = j;
  return HC_OK;
}

static void drop_outputs(hc_job_t *j) {
  for (uint32_t i = 0; i < j->wl->ops.nparams; i++) j->values[i].unused = 0;
  for (uint32_t i = 0; i < j->wl->ops.noutputs; i++) {
    hc_field_destroy(j->outputs[i]);
    j->outputs[i] = NULL;
  }
  j->nmetrics = 0;
  j->verified = -1;
  free(j->verify_msg);
  j->verify_msg = NULL;
  free(j->notes);
  j->notes = NULL;
  j->notes_len = j->notes_cap = 0;
  memset(&j->times, 0, sizeof j->times);
  memset(&j->build, 0, sizeof j->build);
}

static void drop_files(hc_job_t *j) {
  for (uint32_t i = 0; i < j->nfiles; i++) free(j->files[i]);
  free(j->files);
  j->files = NULL;
  j->nfiles = 0;
}

HC_API void hc_job_destroy(hc_job_t *j) {
  if (!j) return;
  if (j->outputs) drop_outputs(j);
  for (uint32_t i = 0; j->values && i < j->wl->ops.nparams; i++) hc__param_clear(&j->values[i]);
  free(j->values);
  free(j->inputs);
  free(j->outputs);
  free(j->metrics);
  free(j->output_dir);
  free(j->output_prefix);
  drop_files(j);
  free(j);
}

HC_API const char *hc_job_workload(const hc_job_t *j) { return j ? j->wl->plugin.desc->name : ""; }

HC_API hc_status_t hc_job_set(hc_job_t *j, const char *name, const char *value) {
  if (!j || !name) return hc_error(HC_ERR_INVALID_ARG, "hc_job_set: NULL argument");
  int i = param_index(j->wl, name);
  if (i < 0) {
    char names[1024] = "";
    size_t len = 0;
    for (uint32_t k = 0; k < j->wl->ops.nparams && len < sizeof names - 70; k++)
      len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", k ? ", " : "", pspec(j->wl, k)->name);
    return hc_error(HC_ERR_PARAM, "workload '%s' has no parameter '%s' (valid: %s)", hc_job_workload(j), name,
                    len ? names : "none");
  }
  hc_status_t st = hc__param_parse(pspec(j->wl, (uint32_t)i), value, &j->values[i]);
  if (st == HC_OK) j->values[i].given = 1;
  return st;
}

HC_API hc_status_t hc_job_set_kv(hc_job_t *j, const char *kv) {
  if (!j || !kv) return hc_error(HC_ERR_INVALID_ARG, "hc_job_set_kv: NULL argument");
  const char *eq = strchr(kv, '=');
  if (!eq || eq == kv) return hc_error(HC_ERR_PARAM, "'%s': expected key=value", kv);
  char key[128];
  if ((size_t)(eq - kv) >= sizeof key) return hc_error(HC_ERR_PARAM, "'%.40s...': key too long", kv);
  memcpy(key, kv, (size_t)(eq - kv));
  key[eq - kv] = '\0';
  return hc_job_set(j, key, eq + 1);
}

static hc_status_t check_field_port(const hc_job_t *j, const hc_port_spec_t *p, const hc_field_t *f, const char *dir) {
  if (!(p->dtypes & HC_DTYPE_BIT(f->dtype)))
    return hc_error(HC_ERR_INVALID_ARG, "%s: %s port '%s' does not take dtype %s", hc_job_workload(j), dir, p->name,
                    hc_dtype_name(f->dtype));
  if ((int)f->rank < p->rank_min || (int)f->rank > p->rank_max)
    return hc_error(HC_ERR_INVALID_ARG, "%s: %s port '%s' takes rank %d..%d, got rank %u", hc_job_workload(j), dir,
                    p->name, p->rank_min, p->rank_max, f->rank);
  return HC_OK;
}

HC_API hc_status_t hc_job_set_input(hc_job_t *j, const char *name, hc_field_t *f) {
  if (!j || !name) return hc_error(HC_ERR_INVALID_ARG, "hc_job_set_input: NULL argument");
  int i = port_index(j->wl, 0, name);
  if (i < 0) return hc_error(HC_ERR_NOT_FOUND, "workload '%s' has no input port '%s'", hc_job_workload(j), name);
  /* A field the port cannot take is refused here, where the caller can
   * still name it, not when the job runs. */
  if (f) {
    hc_status_t st = check_field_port(j, port(j->wl, 0, (uint32_t)i), f, "input");
    if (st != HC_OK) return st;
  }
  j->inputs[i] = f;
  return HC_OK;
}

HC_API hc_status_t hc_job_set_output_dir(hc_job_t *j, const char *dir) {
  if (!j) return hc_error(HC_ERR_INVALID_ARG, "hc_job_set_output_dir: NULL job");
  free(j->output_dir);
  j->output_dir = dir ? hc__strdup(dir) : NULL;
  return HC_OK;
}

/* Why the workload cannot run on a device with this info, or NULL. */
static const char *cannot_run(const hc_job_t *j, const hc_device_info_t *in, char *why, size_t n) {
  uint32_t common = j->wl->ops.languages & in->languages;
  if (!common) {
    snprintf(why, n, "no kernel in a language the device accepts");
    return why;
  }
  if (j->wl->ops.check && j->wl->ops.check(j, in, why, n) != 0) return why;
  return NULL;
}

HC_API int hc_workload_can_run(hc_context_t *ctx, const char *workload, uint32_t device_index, const char **why) {
  hc_job_t *j = NULL;
  if (!ctx || !hc_device_id(ctx, device_index) || hc_job_create(ctx, workload, &j) != HC_OK) {
    if (why) *why = "unknown workload or device";
    return 0;
  }
  char buf[256] = "";
  const char *r = cannot_run(j, &ctx->devices[device_index].info, buf, sizeof buf);
  if (j->bad_param[0]) r = j->bad_param;
  if (r) {
    /* the calling thread's own copy: other threads asking at the same
     * time get theirs */
    static _Thread_local char reason[512];
    snprintf(reason, sizeof reason, "%s", r);
    hc_job_destroy(j);
    if (why) *why = reason;
    return 0;
  }
  hc_job_destroy(j);
  if (why) *why = NULL;
  return 1;
}

/* A verified run whose metrics include a NaN or an infinity has not shown
 * anything (status.h, "Non-finite values"): the verification fails, naming
 * the metric, whatever the workload's own check said. Returns 1 then. */
static int nonfinite_metric(hc_job_t *j) {
  for (uint32_t i = 0; i < j->nmetrics; i++)
    if (!isfinite(j->metrics[i].value)) {
      hc_job_set_verified(j, 0, "metric '%s' is %g", j->metrics[i].name, j->metrics[i].value);
      return 1;
    }
  return 0;
}

static hc_status_t job_run(hc_job_t *j, hc_device_t *dev, uint32_t flags, hc__trace_t *tr);

HC_API hc_status_t hc_job_run(hc_job_t *j, hc_device_t *dev, uint32_t flags) {
  if (!j || !dev) return hc_error(HC_ERR_INVALID_ARG, "hc_job_run: NULL argument");
  hc__trace_t *tr = hc__trace_enter(j->ctx);
  const double tj = tr ? hc_now() : 0;
  char scope[64] = "";
  if (tr) hc__trace_scope_swap(hc_job_workload(j), scope, sizeof scope);
  if (tr && scope[0]) hc__trace_scope_swap(scope, NULL, 0); /* a pipeline stage names it */
  char range[128];
  snprintf(range, sizeof range, "%s on %s", hc_job_workload(j), dev->id);
  hc__profiler_push(j->ctx, range);
  hc_status_t st = job_run(j, dev, flags, tr);
  hc__profiler_pop(j->ctx);
  if (tr) {
    hc__trace_device_sync(dev); /* its commands inside the job's span */
    hc__trace_host(tr, HC__TRACE_JOB, range, tj, "status", hc_status_name(st));
    hc__trace_scope_swap(scope, NULL, 0);
    hc__trace_leave(tr);
  }
  return st;
}

static hc_status_t job_run(hc_job_t *j, hc_device_t *dev, uint32_t flags, hc__trace_t *tr) {
  drop_outputs(j);
  const double tv = tr ? hc_now() : 0;
  drop_files(j);
  j->bad_param[0] = '\0';
  char why[256];
  const char *no = cannot_run(j, &dev->info, why, sizeof why);
  if (j->bad_param[0]) return hc_error(HC_ERR_PARAM, "%s", j->bad_param);
  if (no) return hc_error(HC_ERR_UNSUPPORTED, "workload '%s' cannot run on %s: %s", hc_job_workload(j), dev->id, why);
  /* Inputs: check them; move those on another device to this one. */
  hc_field_t *moved[64] = {0};
  hc_field_t *orig[64] = {0};
  hc_status_t st = HC_OK;
  for (uint32_t i = 0; i < j->wl->ops.ninputs && i < 64 && st == HC_OK; i++)
    if (j->inputs[i]) st = check_field_port(j, port(j->wl, 0, i), j->inputs[i], "input");
  if (tr) hc__trace_host(tr, HC__TRACE_VALIDATE, "validate", tv, NULL, NULL);
  for (uint32_t i = 0; i < j->wl->ops.ninputs && i < 64 && st == HC_OK; i++) {
    hc_field_t *f = j->inputs[i];
    if (f && f->dev != dev) {
      st = hc_field_copy_to(f, dev, &moved[i]);
      if (st == HC_OK) {
        orig[i] = f;
        j->inputs[i] = moved[i];
      }
    }
  }
  if (st == HC_OK) {
    j->dev = dev;
    j->flags = flags;
    j->last_progress = 0;
    hc_error(HC_OK, "%s", "");
    hc_device_lock(dev); /* jobs on one device run one at a time */
    hc__build_clock_t *outer = hc__build_clock_swap(&j->build);
    double t0 = hc_now();
    st = j->wl->ops.run(j);
    j->times.wall_s = hc_now() - t0;
    hc__build_clock_swap(outer);
    hc_device_unlock(dev);
    if (j->times.compute_s == 0) j->times.compute_s = fmax(0, j->times.wall_s - j->build.total_s);
    j->dev = NULL;
    if (j->bad_param[0]) st = hc_error(HC_ERR_PARAM, "%s", j->bad_param); /* a bug of the workload */
    if (st != HC_OK) {
      if (!*hc_last_error()) hc_error(st, "%s", hc_status_str(st));
      hc_error_prefix(st, "workload '%s' on %s: ", hc_job_workload(j), dev->id);
      drop_outputs(j);
    } else if ((flags & HC_RUN_VERIFY) && (j->verified == 0 || nonfinite_metric(j))) {
      st = hc_error(HC_ERR_VERIFY, "workload '%s' on %s: verification failed: %s", hc_job_workload(j), dev->id,
                    j->verify_msg ? j->verify_msg : "");
    }
  }
  for (uint32_t i = 0; i < 64; i++)
    if (moved[i]) {
      hc_field_destroy(moved[i]);
      j->inputs[i] = orig[i];
    }
  return st;
}

HC_API hc_field_t *hc_job_output(const hc_job_t *j, const char *name) {
  int i = j && name ? port_index(j->wl, 1, name) : -1;
  return i < 0 ? NULL : j->outputs[i];
}

HC_API hc_status_t hc_job_take_output(hc_job_t *j, const char *name, hc_field_t **out) {
  if (!j || !name || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_job_take_output: NULL argument");
  int i = port_index(j->wl, 1, name);
  if (i < 0) return hc_error(HC_ERR_NOT_FOUND, "workload '%s' has no output port '%s'", hc_job_workload(j), name);
  if (!j->outputs[i])
    return hc_error(HC_ERR_NOT_FOUND, "output '%s' of '%s' was not produced", name, hc_job_workload(j));
  *out = j->outputs[i];
  j->outputs[i] = NULL;
  return HC_OK;
}

HC_API void hc_job_times(const hc_job_t *j, hc_job_times_t *out) {
  if (j && out) *out = j->times;
}

HC_API void hc_job_build_time(const hc_job_t *j, double *build_s, double *first_launch_s) {
  if (build_s) *build_s = j ? j->build.total_s : 0;
  if (first_launch_s) *first_launch_s = j ? j->build.first_launch_s : 0;
}

HC_API uint32_t hc_job_metric_count(const hc_job_t *j) { return j ? j->nmetrics : 0; }

HC_API hc_status_t hc_job_metric(const hc_job_t *j, uint32_t i, const char **name, double *value, const char **unit) {
  if (!j || i >= j->nmetrics) return hc_error(HC_ERR_INVALID_ARG, "hc_job_metric: index out of range");
  if (name) *name = j->metrics[i].name;
  if (value) *value = j->metrics[i].value;
  if (unit) *unit = j->metrics[i].unit;
  return HC_OK;
}

HC_API hc_status_t hc_job_metric_find(const hc_job_t *j, const char *name, double *value) {
  for (uint32_t i = 0; j && name && i < j->nmetrics; i++)
    if (!strcmp(j->metrics[i].name, name)) {
      if (value) *value = j->metrics[i].value;
      return HC_OK;
    }
  return hc_error(HC_ERR_NOT_FOUND, "no metric '%s'", name ? name : "(null)");
}

HC_API int hc_job_verified(const hc_job_t *j, const char **message) {
  if (message) *message = j && j->verify_msg ? j->verify_msg : "";
  return j ? j->verified : -1;
}

HC_API const char *hc_job_notes(const hc_job_t *j) { return j && j->notes ? j->notes : ""; }

HC_API uint32_t hc_job_param_count(const hc_job_t *j) { return j ? j->wl->ops.nparams : 0; }

HC_API hc_status_t hc_job_param_get(const hc_job_t *j, uint32_t i, const char **name, const char **value) {
  if (!j || i >= j->wl->ops.nparams) return hc_error(HC_ERR_INVALID_ARG, "hc_job_param_get: index out of range");
  if (name) *name = pspec(j->wl, i)->name;
  if (value) *value = j->values[i].present ? j->values[i].text : "";
  return HC_OK;
}

HC_API int hc_job_param_applies(const hc_job_t *j, uint32_t i) {
  return j && i < j->wl->ops.nparams && !j->values[i].unused;
}

HC_API void hc_job_param_unused(hc_job_t *j, const char *name) {
  for (uint32_t i = 0; j && name && i < j->wl->ops.nparams; i++)
    if (!strcmp(pspec(j->wl, i)->name, name)) j->values[i].unused = 1;
}

/* ---- schema queries ---- */
HC_API uint32_t hc_workload_param_count(const hc_context_t *ctx, const char *w) {
  const hc__workload_t *wl = hc__find_workload(ctx, w);
  return wl ? wl->ops.nparams : 0;
}
HC_API const hc_param_spec_t *hc_workload_param(const hc_context_t *ctx, const char *w, uint32_t i) {
  const hc__workload_t *wl = hc__find_workload(ctx, w);
  return wl && i < wl->ops.nparams ? pspec(wl, i) : NULL;
}
HC_API uint32_t hc_workload_port_count(const hc_context_t *ctx, const char *w, int output) {
  const hc__workload_t *wl = hc__find_workload(ctx, w);
  return wl ? (output ? wl->ops.noutputs : wl->ops.ninputs) : 0;
}
HC_API const hc_port_spec_t *hc_workload_port(const hc_context_t *ctx, const char *w, int output, uint32_t i) {
  const hc__workload_t *wl = hc__find_workload(ctx, w);
  return wl && i < (output ? wl->ops.noutputs : wl->ops.ninputs) ? port(wl, output, i) : NULL;
}

/* ---- the workload's side ---- */
HC_API hc_device_t *hc_job_device(const hc_job_t *j) { return j ? j->dev : NULL; }
HC_API hc_part_t *hc_job_part(const hc_job_t *j) { return j ? j->part : NULL; }
HC_API void hc__job_set_part(hc_job_t *j, hc_part_t *part) { j->part = part; }
HC_API void hc__job_clear(hc_job_t *j) { drop_outputs(j); }
HC_API void hc__job_set_wall(hc_job_t *j, double wall_s) { j->times.wall_s = wall_s; }
HC_API void hc__job_set_build(hc_job_t *j, double build_s, double first_launch_s) {
  j->build.total_s = build_s;
  j->build.first_launch_s = first_launch_s;
}
HC_API hc_context_t *hc_job_context(const hc_job_t *j) { return j ? j->ctx : NULL; }

static const hc__param_value_t *value_of(const hc_job_t *j, const char *name, hc_param_type_t want) {
  if (!j) return NULL;
  int i = name ? param_index(j->wl, name) : -1;
  if (i < 0) {
    bad_param_mark(j, "workload '%s' asked for parameter '%s' (as %s), which it does not declare%s",
                   name ? name : "(null)", hc_param_type_name(want), "");
    return NULL;
  }
  hc_param_type_t t = (hc_param_type_t)pspec(j->wl, (uint32_t)i)->type;
  int compatible =
      t == want || (want == HC_PARAM_STRING && t == HC_PARAM_ENUM) || (want == HC_PARAM_FLOAT && t == HC_PARAM_INT);
  if (!compatible) {
    bad_param_mark(j, "workload '%s' asked for parameter '%s' as %s, it is %s", name, hc_param_type_name(want),
                   hc_param_type_name(t));
    return NULL;
  }
  return j->values[i].present ? &j->values[i] : NULL;
}

HC_API int64_t hc_job_int(const hc_job_t *j, const char *n) {
  const hc__param_value_t *v = value_of(j, n, HC_PARAM_INT);
  return v ? v->i : 0;
}
HC_API double hc_job_float(const hc_job_t *j, const char *n) {
  const hc__param_value_t *v = value_of(j, n, HC_PARAM_FLOAT);
  return v ? v->f : 0.0;
}
HC_API int hc_job_bool(const hc_job_t *j, const char *n) {
  const hc__param_value_t *v = value_of(j, n, HC_PARAM_BOOL);
  return v ? v->b : 0;
}
HC_API const char *hc_job_string(const hc_job_t *j, const char *n) {
  const hc__param_value_t *v = value_of(j, n, HC_PARAM_STRING);
  return v ? v->text : "";
}
HC_API hc_shape_t hc_job_shape(const hc_job_t *j, const char *n) {
  const hc__param_value_t *v = value_of(j, n, HC_PARAM_SHAPE);
  hc_shape_t empty = {0, {0, 0, 0, 0}};
  return v ? v->shape : empty;
}
HC_API hc_vec_t hc_job_vec(const hc_job_t *j, const char *n) {
  const hc__param_value_t *v = value_of(j, n, HC_PARAM_VEC);
  hc_vec_t empty = {0, {0, 0, 0, 0}};
  return v ? v->vec : empty;
}
HC_API int hc_job_given(const hc_job_t *j, const char *n) {
  if (!j) return 0;
  int i = n ? param_index(j->wl, n) : -1;
  if (i < 0)
    bad_param_mark(j, "workload '%s' asked whether parameter '%s' was given%s%s, which it does not declare",
                   n ? n : "(null)", "", "");
  return i >= 0 && j->values[i].given;
}

HC_API hc_field_t *hc_job_input(const hc_job_t *j, const char *name) {
  int i = j && name ? port_index(j->wl, 0, name) : -1;
  return i < 0 ? NULL : j->inputs[i];
}

HC_API hc_status_t hc_job_set_output(hc_job_t *j, const char *name, hc_field_t *f) {
  if (!j || !name || !f) {
    hc_field_destroy(f);
    return hc_error(HC_ERR_INVALID_ARG, "hc_job_set_output: NULL argument");
  }
  int i = port_index(j->wl, 1, name);
  if (i < 0) {
    hc_field_destroy(f);
    return hc_error(HC_ERR_NOT_FOUND, "workload '%s' has no output port '%s'", hc_job_workload(j), name);
  }
  hc_status_t st = check_field_port(j, port(j->wl, 1, (uint32_t)i), f, "output");
  if (st != HC_OK) {
    hc_field_destroy(f);
    return st;
  }
  if (!f->name[0]) hc_field_set_name(f, name);
  hc_field_destroy(j->outputs[i]);
  j->outputs[i] = f;
  return HC_OK;
}

HC_API hc_status_t hc_job_add_metric(hc_job_t *j, const char *name, double value, const char *unit) {
  if (!j || !name) return hc_error(HC_ERR_INVALID_ARG, "hc_job_add_metric: NULL argument");
  for (uint32_t i = 0; i < j->nmetrics; i++)
    if (!strcmp(j->metrics[i].name, name)) {
      j->metrics[i].value = value;
      return HC_OK;
    }
  if (j->nmetrics == j->cap_metrics) {
    uint32_t cap = j->cap_metrics ? j->cap_metrics * 2 : 16;
    metric_t *m = realloc(j->metrics, cap * sizeof *m);
    if (!m) return hc_error(HC_ERR_NO_MEMORY, "out of memory");
    j->metrics = m;
    j->cap_metrics = cap;
  }
  metric_t *m = &j->metrics[j->nmetrics++];
  snprintf(m->name, sizeof m->name, "%s", name);
  snprintf(m->unit, sizeof m->unit, "%s", unit ? unit : "");
  m->value = value;
  return HC_OK;
}

HC_API void hc_job_set_times(hc_job_t *j, double compute_s, double device_s) {
  if (!j) return;
  /* Builds inside the timed region (a driver's at a first launch) are
   * reported as build time, not as compute; the partition layer sets a
   * finished run's times, already without them. */
  j->times.compute_s = j->dev ? fmax(0, compute_s - j->build.in_span_s) : compute_s;
  j->times.device_s = device_s;
}

HC_API int hc_job_verify_requested(const hc_job_t *j) { return j && (j->flags & HC_RUN_VERIFY); }

HC_API void hc_job_set_verified(hc_job_t *j, int passed, const char *fmt, ...) {
  if (!j) return;
  char buf[1024] = "";
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
  }
  /* Several checks may report: one failure fails the job; messages join. */
  int now = passed ? 1 : 0;
  j->verified = j->verified < 0 ? now : (j->verified && now);
  size_t old = j->verify_msg ? strlen(j->verify_msg) : 0;
  char *m = realloc(j->verify_msg, old + strlen(buf) + 3);
  if (!m) return;
  if (old)
    memcpy(m + old, "; ", 3), old += 2;
  else
    m[0] = '\0';
  strcpy(m + old, buf);
  j->verify_msg = m;
}

HC_API void hc_job_note(hc_job_t *j, const char *fmt, ...) {
  if (!j || !fmt) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  hc__append(&j->notes, &j->notes_len, &j->notes_cap, "%s\n", buf);
}

HC_API void hc_job_progress(hc_job_t *j, double fraction, const char *fmt, ...) {
  if (!j || !j->ctx->progress) return;
  double now = hc_now();
  if (fraction < 1.0 && now - j->last_progress < 0.2) return;
  j->last_progress = now;
  char buf[256] = "";
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
  }
  j->ctx->progress(j->ctx->progress_user, hc_job_workload(j), fraction, buf);
}

HC_API const char *hc_job_output_dir(const hc_job_t *j) { return j ? j->output_dir : NULL; }

HC_API hc_status_t hc_job_set_output_prefix(hc_job_t *j, const char *prefix) {
  if (!j) return hc_error(HC_ERR_INVALID_ARG, "hc_job_set_output_prefix: NULL job");
  char *copy = prefix ? hc__strdup(prefix) : NULL;
  if (prefix && !copy) return hc_error(HC_ERR_NO_MEMORY, "out of memory");
  free(j->output_prefix);
  j->output_prefix = copy;
  return HC_OK;
}

HC_API hc_status_t hc_job_output_file(hc_job_t *j, const char *name, char *path, size_t size) {
  if (!j || !name || !path || !size) return hc_error(HC_ERR_INVALID_ARG, "hc_job_output_file: NULL argument");
  if (!j->output_dir) return hc_error(HC_ERR_NOT_FOUND, "no output directory");
  if (strchr(name, '/')) return hc_error(HC_ERR_INVALID_ARG, "hc_job_output_file: '%s' is not a plain file name", name);
  int n = snprintf(path, size, "%s/%s%s", j->output_dir, j->output_prefix ? j->output_prefix : "", name);
  if (n < 0 || (size_t)n >= size)
    return hc_error(HC_ERR_PARAM, "output file %s/%s%s: path too long", j->output_dir,
                    j->output_prefix ? j->output_prefix : "", name);
  for (uint32_t i = 0; i < j->nfiles; i++)
    if (!strcmp(j->files[i], path)) return HC_OK;
  char **grown = realloc(j->files, (j->nfiles + 1) * sizeof *grown);
  char *copy = hc__strdup(path);
  if (!grown || !copy) {
    if (grown) j->files = grown;
    free(copy);
    return hc_error(HC_ERR_NO_MEMORY, "out of memory");
  }
  j->files = grown;
  j->files[j->nfiles++] = copy;
  return HC_OK;
}

HC_API uint32_t hc_job_file_count(const hc_job_t *j) { return j ? j->nfiles : 0; }

HC_API const char *hc_job_file(const hc_job_t *j, uint32_t i) { return j && i < j->nfiles ? j->files[i] : NULL; }
