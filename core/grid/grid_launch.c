/* Launching a kernel instance: the range from its schedule
 * (gs_launch_shape), the values of its schedule's arguments in order, and
 * for reductions the partials of the work-groups combined on the host. The
 * row evaluator (grid_eval.c) takes the instance itself instead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"

static double combine(hc_grid_reduce_op_t op, double a, double b) {
  if (op == HC_GRID_MAXABS) return isnan(a) || b <= a ? a : b; /* a NaN is kept */
  return a + b;
}

static hc_status_t launch_eval(hc_grid_t *g, const gk_t *k, double *result) {
  hc_status_t st;
  if (!g->eval_kernel) {
    hc_kernel_desc_t d = {sizeof d, "hcg_eval", NULL, NULL, hcg_eval_host};
    if ((st = hc_kernel_create(g->dev, &d, &g->eval_kernel)) != HC_OK) return st;
  }
  hcg_eval_launch_t E;
  memset(&E, 0, sizeof E);
  E.k = k;
  for (uint32_t s = 0; s < k->nfields; s++) {
    if (!k->fields[s]) continue;
    E.ptr[s] = hc_buffer_host_ptr(hc_field_buffer(k->fields[s]));
    if (!E.ptr[s])
      return hc_error(HC_ERR_UNSUPPORTED, "grid evaluator: field '%s' is not in host memory",
                      hc_field_name(k->fields[s]));
  }
  gs_launch_t L;
  gs_launch_shape(k, &L);
  double *partial = NULL;
  if (result) {
    E.groups = L.groups;
    partial = calloc(E.groups, sizeof *partial);
    if (!partial) return hc_error(HC_ERR_NO_MEMORY, "grid reduce: out of memory");
    E.partial = partial;
  }
  uint64_t ep = (uint64_t)(uintptr_t)&E;
  hc_arg_t arg = HC_ARG_VAL(ep);
  st = hc_kernel_launch(g->eval_kernel, L.dims, L.global, L.explicit_local ? L.local : NULL, 1, &arg);
  if (st == HC_OK && result) {
    double r = 0;
    for (uint32_t i = 0; i < E.groups; i++) r = combine(k->op, r, partial[i]);
    *result = r;
  }
  free(partial);
  g->stats.host_evaluated++;
  g->stats.launches++;
  g->last_source = NULL;
  return st;
}

/* The sum (or maximum) of the partials the launch left in the buffer. */
static hc_status_t reduce_partials(const gk_t *k, hc_buffer_t *partial, uint32_t groups, double *result) {
  const size_t acc = (size_t)k->sched.acc_bytes;
  void *host = malloc(groups * acc);
  if (!host) return hc_error(HC_ERR_NO_MEMORY, "grid reduce: out of memory");
  hc_status_t st = hc_buffer_read(partial, 0, host, groups * acc);
  if (st == HC_OK) {
    double r = 0;
    for (uint32_t i = 0; i < groups; i++)
      r = combine(k->op, r, acc == 8 ? ((double *)host)[i] : (double)((float *)host)[i]);
    *result = r;
  }
  free(host);
  return st;
}

hc_status_t gl_launch(hc_grid_t *g, const gk_t *k, double *result) {
  if (k->sched.variant == GS_EVAL) return launch_eval(g, k, result);
  gc_entry_t *e = NULL;
  hc_status_t st = gc_find(g, k, &e);
  if (st != HC_OK) return st;
  g->last_source = e->source;
  const gs_schedule_t *s = &k->sched;
  gs_launch_t L;
  gs_launch_shape(k, &L);
  hc_buffer_t *partial = NULL;
  if (result && (st = hc_buffer_create(g->dev, L.groups * (size_t)s->acc_bytes, &partial)) != HC_OK) return st;
  if (s->params_in_buffer && (st = gc_params_write(e, k)) != HC_OK) {
    hc_buffer_destroy(partial);
    return st;
  }
  /* the values the arguments point at, by argument */
  hc_arg_t args[GS_MAX_ARGS];
  double pd[GS_MAX_ARGS];
  float pf[GS_MAX_ARGS];
  long lv[GS_MAX_ARGS];
  const int f64 = k->plan->dtype == HC_F64;
  int zrev = 0;
  if (s->zrev) {
    zrev = s->alternate && g->zrev;
    g->zrev = s->alternate && !g->zrev;
  }
  for (uint32_t i = 0; i < s->nargs; i++) {
    const gs_arg_t *a = &s->args[i];
    switch (a->kind) {
    case GS_ARG_OUT: args[i] = HC_ARG_BUF(result ? partial : hc_field_buffer(k->dst)); break;
    case GS_ARG_FIELD: args[i] = HC_ARG_BUF(hc_field_buffer(k->fields[a->index])); break;
    case GS_ARG_PARAMS: args[i] = HC_ARG_BUF(e->pbuf); break;
    case GS_ARG_PARAM:
      pd[i] = k->params[a->index];
      pf[i] = (float)k->params[a->index];
      args[i] = f64 ? (hc_arg_t)HC_ARG_VAL(pd[i]) : (hc_arg_t)HC_ARG_VAL(pf[i]);
      break;
    case GS_ARG_INDEX:
    case GS_ARG_LONG:
      lv[i] = gs_arg_long(k, a, zrev);
      args[i] = (hc_arg_t)HC_ARG_VAL(lv[i]);
      break;
    }
  }
  if (k->staged) g->stats.staged++;
  st = hc_kernel_launch(e->kernel, L.dims, L.global, L.explicit_local ? L.local : NULL, s->nargs, args);
  g->stats.launches++;
  if (st == HC_OK && result) st = reduce_partials(k, partial, L.groups, result);
  hc_buffer_destroy(partial);
  return st;
}
