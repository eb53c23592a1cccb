/* Pipeline validation: default bindings, cycles, run order, devices,
 * missing bindings, dtype and rank across every binding — all before any
 * stage runs. What an output will be comes from the workload's
 * describe_output (exact), else from its port spec (a dtype set and a rank
 * range; a binding is then accepted when the sets intersect and the run
 * checks the real field). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"

/* The stage being validated, so that hc_job_input_info can answer for
 * inputs that have no field yet. Validation is synchronous, so a
 * thread-local pointer is all the state it needs. */
typedef struct {
  const hc_pipeline_t *p;
  uint32_t stage;
} scope_t;
static _Thread_local const scope_t *tl_scope;

static const hc__pl_bind_t *binding_of(const hc_pipeline_t *p, uint32_t to, uint32_t in_port) {
  if (p->to_start) {
    for (uint32_t j = p->to_start[to]; j < p->to_start[to + 1]; j++)
      if (p->binds[p->by_to[j]].in_port == in_port) return &p->binds[p->by_to[j]];
    return NULL;
  }
  for (uint32_t i = 0; i < p->nbinds; i++)
    if (p->binds[i].to == to && p->binds[i].in_port == in_port) return &p->binds[i];
  return NULL;
}

static void unindex_bindings(hc_pipeline_t *p) {
  free(p->to_start);
  free(p->by_to);
  p->to_start = p->by_to = NULL;
}

/* Builds the by-consumer index (counting sort on `to`); without memory
 * for it, lookups fall back to the linear scan. */
static void index_bindings(hc_pipeline_t *p) {
  unindex_bindings(p);
  uint32_t *start = calloc((size_t)p->nstages + 1, sizeof *start);
  uint32_t *by = malloc(((size_t)p->nbinds + 1) * sizeof *by);
  if (!start || !by) {
    free(start);
    free(by);
    return;
  }
  for (uint32_t i = 0; i < p->nbinds; i++) start[p->binds[i].to + 1]++;
  for (uint32_t k = 0; k < p->nstages; k++) start[k + 1] += start[k];
  for (uint32_t i = 0; i < p->nbinds; i++) by[start[p->binds[i].to]++] = i;
  for (uint32_t k = p->nstages; k > 0; k--) start[k] = start[k - 1];
  start[0] = 0;
  p->to_start = start;
  p->by_to = by;
}

hc__pl_shape_t hc__pl_field_shape(const hc_field_t *f) {
  hc__pl_shape_t s = {HC_DTYPE_BIT(hc_field_dtype(f)), (int32_t)hc_field_rank(f), (int32_t)hc_field_rank(f), 1};
  return s;
}

/* What the binding into (stage, in_port) delivers, if known yet. */
static const hc__pl_shape_t *bound_shape(const hc_pipeline_t *p, const hc__pl_bind_t *b, hc__pl_shape_t *tmp) {
  if (b->from == HC__PL_OUTSIDE) return b->outside ? (*tmp = hc__pl_field_shape(b->outside), tmp) : NULL;
  const hc__pl_stage_t *f = &p->stages[b->from];
  return f->out_shape ? &f->out_shape[b->out_port] : NULL;
}

static hc_dtype_t single_dtype(uint32_t set) {
  for (int d = 1; d < HC_DTYPE_COUNT_; d++)
    if (set == HC_DTYPE_BIT(d)) return (hc_dtype_t)d;
  return HC_DTYPE_NONE;
}

HC_API hc_status_t hc_job_input_info(const hc_job_t *job, const char *port, hc_dtype_t *dtype, uint32_t *rank) {
  if (!job || !port) return hc_error(HC_ERR_INVALID_ARG, "hc_job_input_info: NULL argument");
  /* While its pipeline validates, a job answers with what the binding
   * will deliver (a field bound by an earlier run may be stale). */
  const scope_t *sc = tl_scope;
  if (sc && sc->p->stages[sc->stage].job == job) {
    const hc__pl_stage_t *s = &sc->p->stages[sc->stage];
    int in = hc__pl_port_index(s, sc->p->ctx, 0, port);
    const hc__pl_bind_t *b = in >= 0 ? binding_of(sc->p, sc->stage, (uint32_t)in) : NULL;
    hc__pl_shape_t tmp;
    const hc__pl_shape_t *sh = b ? bound_shape(sc->p, b, &tmp) : NULL;
    if (sh && sh->exact) {
      if (dtype) *dtype = single_dtype(sh->dtypes);
      if (rank) *rank = (uint32_t)sh->rank_min;
      return HC_OK;
    }
    return hc_error(HC_ERR_NOT_FOUND, "%s: dtype and rank of input '%s' are not known", hc_job_workload(job), port);
  }
  const hc_field_t *f = hc_job_input(job, port);
  if (f) {
    if (dtype) *dtype = hc_field_dtype(f);
    if (rank) *rank = hc_field_rank(f);
    return HC_OK;
  }
  return hc_error(HC_ERR_NOT_FOUND, "%s: dtype and rank of input '%s' are not known", hc_job_workload(job), port);
}

/* "f32|f64" */
static const char *dtype_set(uint32_t set, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = '\0';
  for (int d = 1; d < HC_DTYPE_COUNT_; d++)
    if (set & HC_DTYPE_BIT(d))
      len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s", len ? "|" : "", hc_dtype_name((hc_dtype_t)d));
  if (!len) snprintf(buf, n, "none");
  return buf;
}

/* "2" or "1..3" */
static const char *rank_range(int32_t lo, int32_t hi, char *buf, size_t n) {
  if (lo == hi)
    snprintf(buf, n, "%d", lo);
  else
    snprintf(buf, n, "%d..%d", lo, hi);
  return buf;
}

static void add_defaults(hc_pipeline_t *p) {
  /* room for every default at once (one realloc, not one per stage) */
  hc__pl_bind_t *n = realloc(p->binds, ((size_t)p->nbinds + p->nstages) * sizeof *n);
  if (!n) return; /* then validation reports the inputs as unbound */
  p->binds = n;
  for (uint32_t k = 1; k < p->nstages; k++) {
    int in = hc__pl_port_index(&p->stages[k], p->ctx, 0, NULL);
    int out = hc__pl_port_index(&p->stages[k - 1], p->ctx, 1, NULL);
    if (in < 0 || out < 0 || binding_of(p, k, (uint32_t)in)) continue;
    hc__pl_bind_t b = {k - 1, (uint32_t)out, k, (uint32_t)in, 1, NULL};
    p->binds[p->nbinds++] = b;
  }
}

static const char *in_name(const hc_pipeline_t *p, const hc__pl_bind_t *b) {
  return hc__pl_port(&p->stages[b->to], p->ctx, 0, b->in_port)->name;
}
static const char *out_name(const hc_pipeline_t *p, const hc__pl_bind_t *b) {
  return hc__pl_port(&p->stages[b->from], p->ctx, 1, b->out_port)->name;
}

/* Reports a cycle among the stages Kahn's algorithm could not order:
 * walk back along bindings into unordered stages until a stage repeats. */
static hc_status_t report_cycle(const hc_pipeline_t *p, const int *done) {
  uint32_t n = p->nstages;
  uint32_t *via = malloc(n * sizeof *via); /* binding that entered stage k on the walk */
  int *seen = calloc(n, sizeof *seen);
  if (!via || !seen) {
    free(via);
    free(seen);
    return hc_error(HC_ERR_PIPELINE, "pipeline: cycle among the stages");
  }
  uint32_t k = 0;
  while (done[k]) k++;
  /* Every unordered stage has an unordered producer: follow producers. */
  while (!seen[k]) {
    seen[k] = 1;
    for (uint32_t i = 0; i < p->nbinds; i++) {
      const hc__pl_bind_t *b = &p->binds[i];
      if (b->to == k && b->from != HC__PL_OUTSIDE && !done[b->from]) {
        via[k] = i;
        k = b->from;
        break;
      }
    }
  }
  /* k is on the cycle; list its edges in the direction data flows. */
  uint32_t start = k, len = 0;
  do {
    len++;
    k = p->binds[via[k]].from;
  } while (k != start);
  uint32_t *edges = malloc(len * sizeof *edges);
  char msg[2048];
  size_t m = (size_t)snprintf(msg, sizeof msg, "pipeline: cycle: ");
  if (edges) {
    k = start;
    for (uint32_t e = len; e-- > 0;) { /* collected backwards */
      edges[e] = via[k];
      k = p->binds[via[k]].from;
    }
    /* Start the listing at the edge leaving the lowest-numbered stage. */
    uint32_t first = 0;
    for (uint32_t e = 1; e < len; e++)
      if (p->binds[edges[e]].from < p->binds[edges[first]].from) first = e;
    for (uint32_t e = 0; e < len && m < sizeof msg; e++) {
      const hc__pl_bind_t *b = &p->binds[edges[(first + e) % len]];
      m += (size_t)snprintf(msg + m, sizeof msg - m, "%sstage %u (%s) output '%s' -> stage %u (%s) input '%s'",
                            e ? ", " : "", b->from + 1, p->stages[b->from].workload, out_name(p, b), b->to + 1,
                            p->stages[b->to].workload, in_name(p, b));
    }
  }
  free(edges);
  free(via);
  free(seen);
  return hc_error(HC_ERR_PIPELINE, "%s", msg);
}

/* Min-heap of stage indices (the ready stages, lowest first). */
static void heap_push(uint32_t *h, uint32_t *len, uint32_t v) {
  uint32_t i = (*len)++;
  for (; i && h[(i - 1) / 2] > v; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
  h[i] = v;
}
static uint32_t heap_pop(uint32_t *h, uint32_t *len) {
  uint32_t top = h[0], v = h[--*len], i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= *len) break;
    if (c + 1 < *len && h[c + 1] < h[c]) c++;
    if (h[c] >= v) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = v;
  return top;
}

/* Run order: producers before consumers, ties in the order added (Kahn's
 * algorithm taking the lowest-numbered ready stage each time, with the
 * bindings grouped by producer: O((stages + bindings) log stages)). */
static hc_status_t order_stages(hc_pipeline_t *p) {
  uint32_t n = p->nstages;
  uint32_t *order = malloc(n * sizeof *order);
  int *done = calloc(n, sizeof *done);
  uint32_t *indeg = calloc(n, sizeof *indeg);
  uint32_t *heap = malloc(n * sizeof *heap);
  uint32_t *from_start = calloc((size_t)n + 1, sizeof *from_start);
  uint32_t *by_from = malloc(((size_t)p->nbinds + 1) * sizeof *by_from);
  if (!order || !done || !indeg || !heap || !from_start || !by_from) {
    free(order);
    free(done);
    free(indeg);
    free(heap);
    free(from_start);
    free(by_from);
    return hc_error(HC_ERR_NO_MEMORY, "pipeline: out of memory");
  }
  for (uint32_t i = 0; i < p->nbinds; i++)
    if (p->binds[i].from != HC__PL_OUTSIDE) {
      indeg[p->binds[i].to]++;
      from_start[(uint32_t)p->binds[i].from + 1]++;
    }
  for (uint32_t k = 0; k < n; k++) from_start[k + 1] += from_start[k];
  for (uint32_t i = 0; i < p->nbinds; i++)
    if (p->binds[i].from != HC__PL_OUTSIDE) by_from[from_start[p->binds[i].from]++] = i;
  for (uint32_t k = n; k > 0; k--) from_start[k] = from_start[k - 1];
  from_start[0] = 0;
  uint32_t count = 0, hlen = 0;
  for (uint32_t k = 0; k < n; k++)
    if (!indeg[k]) heap_push(heap, &hlen, k);
  while (hlen) {
    uint32_t k = heap_pop(heap, &hlen);
    done[k] = 1;
    order[count++] = k;
    for (uint32_t j = from_start[k]; j < from_start[k + 1]; j++)
      if (--indeg[p->binds[by_from[j]].to] == 0) heap_push(heap, &hlen, p->binds[by_from[j]].to);
  }
  free(heap);
  free(from_start);
  free(by_from);
  hc_status_t st = HC_OK;
  if (count < n) {
    st = report_cycle(p, done);
    free(order);
  } else {
    free(p->order);
    p->order = order;
  }
  free(done);
  free(indeg);
  return st;
}

static hc_status_t check_input(const hc_pipeline_t *p, uint32_t k, uint32_t in) {
  const hc__pl_stage_t *s = &p->stages[k];
  const hc_port_spec_t *ps = hc__pl_port(s, p->ctx, 0, in);
  const hc__pl_bind_t *b = binding_of(p, k, in);
  if (!b) {
    if (ps->flags & HC_PORT_OPTIONAL) return HC_OK;
    return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u (%s): required input '%s' is not bound", k + 1, s->workload,
                    ps->name);
  }
  hc__pl_shape_t tmp;
  const hc__pl_shape_t *got = bound_shape(p, b, &tmp);
  if (!got) return HC_OK; /* an outside field not given yet: the run checks it */
  char source[256];
  if (b->from == HC__PL_OUTSIDE)
    snprintf(source, sizeof source, "the field set from outside");
  else
    snprintf(source, sizeof source, "stage %u (%s) output '%s'", b->from + 1, p->stages[b->from].workload,
             out_name(p, b));
  return hc__pl_check_delivery(p, k, ps, got, source);
}

hc_status_t hc__pl_check_delivery(const hc_pipeline_t *p, uint32_t k, const hc_port_spec_t *ps,
                                  const hc__pl_shape_t *got, const char *source) {
  const hc__pl_stage_t *s = &p->stages[k];
  char a[64], c[64];
  if (!(got->dtypes & ps->dtypes))
    return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u (%s): input '%s' takes %s, %s gives %s", k + 1, s->workload,
                    ps->name, dtype_set(ps->dtypes, a, sizeof a), source, dtype_set(got->dtypes, c, sizeof c));
  if (got->rank_max < ps->rank_min || got->rank_min > ps->rank_max)
    return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u (%s): input '%s' takes rank %s, %s gives rank %s", k + 1,
                    s->workload, ps->name, rank_range(ps->rank_min, ps->rank_max, a, sizeof a), source,
                    rank_range(got->rank_min, got->rank_max, c, sizeof c));
  return HC_OK;
}

static hc_status_t check_device(const hc_pipeline_t *p, uint32_t k) {
  const hc__pl_stage_t *s = &p->stages[k];
  const hc_workload_ops_t *w = hc__workload_ops(p->ctx, s->workload);
  const hc_device_info_t *info = hc_device_info(s->dev);
  char why[256] = "";
  if (!(w->languages & info->languages))
    snprintf(why, sizeof why, "no kernel in a language the device accepts");
  else if (w->check && w->check(s->job, info, why, sizeof why) != 0) {
    if (!why[0]) snprintf(why, sizeof why, "refused by the workload");
  } else
    return HC_OK;
  return hc_error(HC_ERR_UNSUPPORTED, "pipeline: stage %u (%s) cannot run on %s: %s", k + 1, s->workload,
                  hc_device_name(s->dev), why);
}

static hc_status_t predict_outputs(hc_pipeline_t *p, uint32_t k) {
  hc__pl_stage_t *s = &p->stages[k];
  const hc_workload_ops_t *w = hc__workload_ops(p->ctx, s->workload);
  uint32_t n = hc__pl_nports(s, p->ctx, 1);
  free(s->out_shape);
  s->out_shape = calloc(n ? n : 1, sizeof *s->out_shape);
  if (!s->out_shape) return hc_error(HC_ERR_NO_MEMORY, "pipeline: out of memory");
  for (uint32_t i = 0; i < n; i++) {
    const hc_port_spec_t *ps = hc__pl_port(s, p->ctx, 1, i);
    hc__pl_shape_t sh = {ps->dtypes, ps->rank_min, ps->rank_max, 0};
    if (w->describe_output) {
      hc_dtype_t dt = HC_DTYPE_NONE;
      uint32_t rank = 0;
      hc_status_t st = w->describe_output(s->job, ps->name, &dt, &rank);
      if (st == HC_OK && hc_dtype_size(dt)) {
        sh.dtypes = HC_DTYPE_BIT(dt);
        sh.rank_min = sh.rank_max = (int32_t)rank;
        sh.exact = 1;
      } else if (st != HC_OK && st != HC_ERR_NOT_FOUND && st != HC_ERR_UNSUPPORTED) {
        /* The workload refuses its inputs or parameters already. */
        return hc_error_prefix(st, "pipeline: stage %u (%s): ", k + 1, s->workload);
      }
    }
    s->out_shape[i] = sh;
  }
  return HC_OK;
}

HC_API hc_status_t hc_pipeline_validate(hc_pipeline_t *p) {
  if (!p) return hc_error(HC_ERR_INVALID_ARG, "hc_pipeline_validate: NULL pipeline");
  p->validated = 0;
  if (!p->nstages) return hc_error(HC_ERR_PIPELINE, "pipeline: no stages");
  for (uint32_t k = 0; k < p->nstages; k++) {
    free(p->stages[k].out_shape);
    p->stages[k].out_shape = NULL;
  }
  hc__pl_drop_defaults(p);
  index_bindings(p);
  add_defaults(p);
  index_bindings(p); /* again, with the defaults */
  hc_status_t st = order_stages(p);
  const scope_t *saved = tl_scope;
  for (uint32_t i = 0; st == HC_OK && i < p->nstages; i++) {
    uint32_t k = p->order[i];
    scope_t sc = {p, k};
    tl_scope = &sc;
    uint32_t nin = hc__pl_nports(&p->stages[k], p->ctx, 0);
    for (uint32_t in = 0; st == HC_OK && in < nin; in++) st = check_input(p, k, in);
    if (st == HC_OK) st = check_device(p, k);
    if (st == HC_OK) st = predict_outputs(p, k);
    tl_scope = saved;
  }
  unindex_bindings(p);
  if (st == HC_OK) p->validated = 1;
  return st;
}
