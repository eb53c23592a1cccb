/* Running assignments and reductions: choose the language (host: compiled C
 * or the row evaluator), plan, evaluate materialised sub-expressions into
 * pooled temporaries, then find or build each kernel by its structural key
 * and launch it with the values as arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"
#include "hc/trace.h"

struct gk_entry {
  gk_entry_t *next;
  char *key;
  hc_kernel_t *kernel;
  void *dl; /* host=compile: the shared object */
  char *source;
  hc_buffer_t *pbuf; /* parameters when they do not fit the arguments */
  void *pshadow;     /* what pbuf holds now */
  size_t pbytes;
};

struct gtemp {
  gtemp_t *next;
  hc_field_t *field;
  int in_use;
};

/* ---------------------------------------------------------------- cost model */

hc_status_t hcg_tuning_read(hcg_tuning_t *t) {
  long long order = 0;
  hc_status_t st = hc_config_shape("HC_GRID_STENCIL", t->stencil);
  if (st == HC_OK) st = hc_config_shape("HC_GRID_POINT", t->point);
  if (st == HC_OK) st = hc_config_shape("HC_GRID_VECTOR", t->vector);
  if (st == HC_OK) st = hc_config_int("HC_GRID_PLANE_ORDER", &order); /* alternate|forward */
  t->alternate = order == 0;
  const char *cc = "cc", *flags = "";
  if (st == HC_OK) st = hc_config_str("HC_GRID_CC", &cc);
  if (st == HC_OK) st = hc_config_str("HC_GRID_CFLAGS", &flags);
  if (st == HC_OK && (strlen(cc) >= sizeof t->cc || strlen(flags) >= sizeof t->cflags))
    st = hc_error(HC_ERR_PARAM, "HC_GRID_CC or HC_GRID_CFLAGS is longer than %zu characters", sizeof t->cc - 1);
  snprintf(t->cc, sizeof t->cc, "%s", cc);
  snprintf(t->cflags, sizeof t->cflags, "%s", flags);
  return st;
}

double hcg_balance(const hc_device_info_t *info, hc_dtype_t dt) {
  double peak = dt == HC_F64 ? info->peak_fp64_gflops : info->peak_fp32_gflops;
  if (peak > 0 && info->peak_bandwidth_gbs > 0) return peak / info->peak_bandwidth_gbs;
  return 4.0; /* unknown: a conservative machine balance (flops per byte) */
}

/* ---------------------------------------------------------------- temporaries */

hc_status_t hcg_temp_get(hc_grid_t *g, hc_dtype_t dt, uint32_t rank, const int64_t *shape, hc_field_t **out) {
  for (gtemp_t *t = g->temps; t; t = t->next) {
    if (t->in_use || hc_field_dtype(t->field) != dt || hc_field_rank(t->field) != rank) continue;
    if (memcmp(hc_field_shape(t->field), shape, rank * sizeof *shape)) continue;
    t->in_use = 1;
    *out = t->field;
    return HC_OK;
  }
  gtemp_t *t = calloc(1, sizeof *t);
  if (!t) return hc_error(HC_ERR_NO_MEMORY, "grid temporary: out of memory");
  hc_status_t st = hc_field_create(g->dev, dt, rank, shape, &t->field);
  if (st != HC_OK) {
    free(t);
    return hc_error_prefix(st, "grid temporary for a materialised sub-expression: ");
  }
  hc_field_set_name(t->field, "grid-temporary");
  t->in_use = 1;
  t->next = g->temps;
  g->temps = t;
  *out = t->field;
  return HC_OK;
}

void hcg_temp_put(hc_grid_t *g, hc_field_t *f) {
  for (gtemp_t *t = g->temps; t; t = t->next)
    if (t->field == f) t->in_use = 0;
}

void hcg_temps_free(hc_grid_t *g) {
  for (gtemp_t *t = g->temps, *n; t; t = n) {
    n = t->next;
    hc_field_destroy(t->field);
    free(t);
  }
  g->temps = NULL;
}

/* ---------------------------------------------------------------- kernel cache */

static void entry_free(gk_entry_t *e) {
  hc_kernel_destroy(e->kernel);
  hcg_cc_close(e->dl);
  hc_buffer_destroy(e->pbuf);
  free(e->pshadow);
  free(e->source);
  free(e->key);
  free(e);
}

void hcg_kernels_free(hc_grid_t *g) {
  for (gk_entry_t *e = g->kernels, *n; e; e = n) {
    n = e->next;
    entry_free(e);
  }
  g->kernels = NULL;
  g->last_source = NULL;
}

static hc_status_t entry_build(hc_grid_t *g, const gk_t *k, gk_entry_t **out) {
  gk_entry_t *e = calloc(1, sizeof *e);
  if (!e) return hc_error(HC_ERR_NO_MEMORY, "grid kernel: out of memory");
  hc_status_t st = HC_OK;
  if (!(e->key = strdup(k->key))) {
    st = hc_error(HC_ERR_NO_MEMORY, "grid kernel: out of memory");
    goto fail;
  }
  if ((st = gk_emit(k, &e->source)) != HC_OK) goto fail;
  hc_kernel_desc_t d = {sizeof d, "hcg_kernel", NULL, NULL, NULL};
  if (k->lang == HC_LANG_HOST) {
    if ((st = hcg_cc_build(g, e->source, &d.host_fn, &e->dl)) != HC_OK) goto fail;
    g->stats.host_compiled++;
  } else {
    d.source = e->source;
  }
  if ((st = hc_kernel_create(g->dev, &d, &e->kernel)) != HC_OK) goto fail;
  if (k->params_in_buffer) {
    e->pbytes = (k->nparams ? k->nparams : 1) * hc_dtype_size(k->plan->dtype);
    e->pshadow = calloc(1, e->pbytes);
    if (!e->pshadow) {
      st = hc_error(HC_ERR_NO_MEMORY, "grid kernel: out of memory");
      goto fail;
    }
    if ((st = hc_buffer_create(g->dev, e->pbytes, &e->pbuf)) != HC_OK) goto fail;
    if ((st = hc_buffer_write(e->pbuf, 0, e->pshadow, e->pbytes)) != HC_OK) goto fail;
  }
  g->stats.kernels_built++;
  e->next = g->kernels;
  g->kernels = e;
  *out = e;
  return HC_OK;
fail:
  entry_free(e);
  return st;
}

static hc_status_t entry_find(hc_grid_t *g, const gk_t *k, gk_entry_t **out) {
  for (gk_entry_t *e = g->kernels; e; e = e->next)
    if (!strcmp(e->key, k->key)) {
      g->stats.cache_hits++;
      *out = e;
      return HC_OK;
    }
  return entry_build(g, k, out);
}

/* ---------------------------------------------------------------- launching */

typedef struct {
  hc_grid_reduce_op_t op;
  double result;
} reduce_out_t;

static double combine(hc_grid_reduce_op_t op, double a, double b) {
  if (op == HC_GRID_MAXABS) return isnan(a) || b <= a ? a : b; /* a NaN is kept */
  return a + b;
}

/* Launch geometry of a plain or host kernel: launch dim d is internal axis
 * 2 - d; EVEN/ODD boxes pack the fast axis. */
static void plain_global(const gk_t *k, size_t global[3]) {
  global[0] = (size_t)(k->parity != HC_GRID_ALL ? (k->cnt[2] + 1) / 2 : k->cnt[2]);
  global[1] = (size_t)k->cnt[1];
  global[2] = (size_t)k->cnt[0];
}

static uint64_t plain_global_count(const gk_t *k) {
  size_t g[3];
  plain_global(k, g);
  return (uint64_t)g[0] * g[1] * g[2];
}

/* Host reductions: split the slowest launch axis into at most `want`
 * groups (the partials' count). */
static uint32_t host_reduce_local(const gk_t *k, const size_t global[3], size_t local[3], uint32_t want) {
  uint32_t dims = k->plan->rank, last = dims - 1;
  for (uint32_t d = 0; d < 3; d++) local[d] = global[d] ? global[d] : 1;
  size_t n = global[last];
  size_t parts = n < want ? n : want;
  if (parts < 1) parts = 1;
  local[last] = (n + parts - 1) / parts;
  return (uint32_t)((n + local[last] - 1) / local[last]);
}

static hc_status_t launch_eval(hc_grid_t *g, const gk_t *k, reduce_out_t *red) {
  hc_status_t st;
  if (!g->eval_kernel) {
    hc_kernel_desc_t d = {sizeof d, "hcg_eval", NULL, NULL, hcg_eval_host};
    if ((st = hc_kernel_create(g->dev, &d, &g->eval_kernel)) != HC_OK) return st;
  }
  hcg_eval_launch_t L;
  memset(&L, 0, sizeof L);
  L.k = k;
  for (uint32_t s = 0; s < k->nfields; s++) {
    if (!k->fields[s]) continue;
    L.ptr[s] = hc_buffer_host_ptr(hc_field_buffer(k->fields[s]));
    if (!L.ptr[s])
      return hc_error(HC_ERR_UNSUPPORTED, "grid evaluator: field '%s' is not in host memory",
                      hc_field_name(k->fields[s]));
  }
  size_t global[3], local[3];
  plain_global(k, global);
  double *partial = NULL;
  if (red) {
    L.groups = host_reduce_local(k, global, local, 64);
    partial = calloc(L.groups, sizeof *partial);
    if (!partial) return hc_error(HC_ERR_NO_MEMORY, "grid reduce: out of memory");
    L.partial = partial;
  }
  uint64_t lp = (uint64_t)(uintptr_t)&L;
  hc_arg_t arg = HC_ARG_VAL(lp);
  st = hc_kernel_launch(g->eval_kernel, k->plan->rank, global, red ? local : NULL, 1, &arg);
  if (st == HC_OK && red) {
    double r = 0;
    for (uint32_t i = 0; i < L.groups; i++) r = combine(red->op, r, partial[i]);
    red->result = r;
  }
  free(partial);
  g->stats.host_evaluated++;
  g->stats.launches++;
  g->last_source = NULL;
  return st;
}

static hc_status_t launch_kernel(hc_grid_t *g, const gk_t *k, reduce_out_t *red) {
  if (k->host_eval) return launch_eval(g, k, red);
  gk_entry_t *e = NULL;
  hc_status_t st = entry_find(g, k, &e);
  if (st != HC_OK) return st;
  g->last_source = e->source;
  const int f64 = k->plan->dtype == HC_F64;
  const size_t es = f64 ? 8 : 4;
  hc_arg_t args[HC_MAX_KERNEL_ARGS];
  uint32_t na = 0;
  /* parameter values as the kernel's REAL */
  double pd[HC_MAX_KERNEL_ARGS];
  float pf[HC_MAX_KERNEL_ARGS];
  long longs[10];
  hc_buffer_t *partial = NULL;
  void *phost = NULL;
  uint32_t groups = 0;
  size_t global[3], local[3];
  int explicit_local = 0;
  uint32_t dims = k->plan->rank;
  const hc_device_info_t *info = hc_device_info(g->dev);
  const size_t accsize = (k->lang == HC_LANG_HOST || info->fp64) ? 8 : 4;
  plain_global(k, global);
  if (red) {
    if (k->lang == HC_LANG_HOST) {
      groups = host_reduce_local(k, global, local, 64);
    } else {
      uint64_t total = (uint64_t)global[0] * global[1] * global[2];
      uint64_t want = (total + HCG_REDUCE_LOCAL - 1) / HCG_REDUCE_LOCAL;
      uint64_t cap = info->compute_units ? 8u * info->compute_units : 64;
      if (cap < 64) cap = 64;
      if (cap > 1024) cap = 1024;
      groups = (uint32_t)(want < cap ? (want ? want : 1) : cap);
      dims = 1;
      global[0] = (size_t)groups * HCG_REDUCE_LOCAL;
      global[1] = global[2] = 1;
      local[0] = HCG_REDUCE_LOCAL;
      local[1] = local[2] = 1;
    }
    explicit_local = 1;
    if ((st = hc_buffer_create(g->dev, groups * accsize, &partial)) != HC_OK) return st;
    args[na++] = HC_ARG_BUF(partial);
  } else {
    args[na++] = HC_ARG_BUF(hc_field_buffer(k->dst));
  }
  for (uint32_t s = 1; s < k->nfields; s++) args[na++] = HC_ARG_BUF(hc_field_buffer(k->fields[s]));
  if (k->params_in_buffer) {
    void *vals = malloc(e->pbytes);
    if (!vals) {
      hc_buffer_destroy(partial);
      return hc_error(HC_ERR_NO_MEMORY, "grid kernel: out of memory");
    }
    for (uint32_t i = 0; i < k->nparams; i++) {
      if (f64)
        ((double *)vals)[i] = k->params[i];
      else
        ((float *)vals)[i] = (float)k->params[i];
    }
    if (memcmp(vals, e->pshadow, k->nparams * es)) {
      st = hc_buffer_write(e->pbuf, 0, vals, k->nparams * es);
      memcpy(e->pshadow, vals, k->nparams * es);
    }
    free(vals);
    if (st != HC_OK) {
      hc_buffer_destroy(partial);
      return st;
    }
    args[na++] = HC_ARG_BUF(e->pbuf);
  } else {
    for (uint32_t i = 0; i < k->nparams; i++) {
      pd[i] = k->params[i];
      pf[i] = (float)k->params[i];
      args[na++] = f64 ? (hc_arg_t)HC_ARG_VAL(pd[i]) : (hc_arg_t)HC_ARG_VAL(pf[i]);
    }
  }
  for (int d = 0; d < 3; d++) {
    longs[d] = (long)k->n[d];
    longs[3 + d] = (long)k->lo[d];
    longs[6 + d] = (long)k->cnt[d];
  }
  longs[9] = (long)((uint64_t)plain_global_count(k));
  for (int i = 0; i < 9; i++) args[na++] = (hc_arg_t)HC_ARG_VAL(longs[i]);
  if (red && k->lang != HC_LANG_HOST) args[na++] = (hc_arg_t)HC_ARG_VAL(longs[9]);
  long zrev = 0;
  if (k->zrev_arg) {
    zrev = k->alternate ? g->zrev : 0;
    g->zrev = k->alternate && !g->zrev;
    args[na++] = (hc_arg_t)HC_ARG_VAL(zrev);
  }
  if (k->staged && k->lang != HC_LANG_HOST) {
    const uint32_t rank = k->plan->rank;
    size_t bx = rank == 1 ? HCG_STAGE_BX1 : HCG_STAGE_BX, by = rank == 1 ? 1 : HCG_STAGE_BY;
    local[0] = bx;
    local[1] = rank >= 2 ? by : 1;
    local[2] = 1;
    global[0] = (size_t)(k->cnt[2] + (int64_t)bx - 1) / bx * bx;
    global[1] = rank >= 2 ? (size_t)(k->cnt[1] + (int64_t)by - 1) / by * by : 1;
    global[2] = rank == 3 ? (size_t)(k->cnt[0] + HCG_STAGE_CZ - 1) / HCG_STAGE_CZ : 1;
    explicit_local = 1;
  }
  if (k->vec) {
    /* grid_vector.c: V cells per item from the multiple of V at or below lo2 */
    const int64_t v = k->vec, a2 = k->lo[2] - k->lo[2] % v;
    global[0] = (size_t)((k->lo[2] + k->cnt[2] - a2 + v - 1) / v);
  }
  if (!red && !k->staged && k->lang != HC_LANG_HOST && k->zunroll > 0) {
    /* emit_device_stencil_assign: 2-D groups, zunroll planes per item */
    const size_t bx = (size_t)k->sbx, by = (size_t)k->sby;
    local[0] = bx;
    local[1] = by;
    local[2] = 1;
    global[0] = (global[0] + bx - 1) / bx * bx;
    global[1] = (global[1] + by - 1) / by * by;
    if (dims == 3) global[2] = (global[2] + (size_t)k->zunroll - 1) / (size_t)k->zunroll;
    explicit_local = 1;
  } else if (!red && !k->staged && k->lang != HC_LANG_HOST)
    global[0] = (global[0] + (size_t)k->unroll - 1) / (size_t)k->unroll; /* emit_device_assign's cells per item */
  if (k->staged) g->stats.staged++;
  st = hc_kernel_launch(e->kernel, dims, global, explicit_local ? local : NULL, na, args);
  g->stats.launches++;
  if (st == HC_OK && red) {
    phost = malloc(groups * accsize);
    if (!phost)
      st = hc_error(HC_ERR_NO_MEMORY, "grid reduce: out of memory");
    else
      st = hc_buffer_read(partial, 0, phost, groups * accsize);
    if (st == HC_OK) {
      double r = 0;
      for (uint32_t i = 0; i < groups; i++)
        r = combine(red->op, r, accsize == 8 ? ((double *)phost)[i] : (double)((float *)phost)[i]);
      red->result = r;
    }
  }
  free(phost);
  hc_buffer_destroy(partial);
  return st;
}

/* ---------------------------------------------------------------- assignments */

/* The language the device runs and, for host devices, compiled or evaluated. */
static hc_status_t choose_language(hc_grid_t *g, const gp_plan_t *p, const hc_grid_options_t *o, hc_language_t *lang,
                                   int *eval) {
  uint32_t langs = hc_device_info(g->dev)->languages;
  *eval = 0;
  if (langs & HC_LANG_BIT(HC_LANG_HOST)) {
    *lang = HC_LANG_HOST;
    int need_source = 0, need_host = 0;
    for (uint32_t i = 0; i < p->nnodes; i++) {
      const gp_node_t *n = p->nodes[i];
      if (n->kind != GX_FUNC || n->src->fn.kind != HC_GFUNC_USER) continue;
      if (!n->src->fn.source) need_host = 1;
      if (!n->src->fn.host) need_source = 1;
    }
    if (need_host && need_source)
      return hc_error(HC_ERR_UNSUPPORTED, "grid expression: one user function has only a source and another only a "
                                          "host function; the host device can run one kind per kernel");
    switch ((hc_grid_host_t)o->host) {
    case HC_GRID_HOST_EVAL: *eval = !need_source; break;
    case HC_GRID_HOST_COMPILE: *eval = need_host; break;
    case HC_GRID_HOST_AUTO: *eval = need_host || g->cc_state < 0; break;
    }
    return HC_OK;
  }
  if (langs & HC_LANG_BIT(HC_LANG_CUDA_C))
    *lang = HC_LANG_CUDA_C;
  else if (langs & HC_LANG_BIT(HC_LANG_OPENCL_C))
    *lang = HC_LANG_OPENCL_C;
  else
    return hc_error(HC_ERR_UNSUPPORTED, "grid expressions: %s accepts neither host, opencl-c nor cuda-c kernels",
                    hc_device_name(g->dev));
  if (p->dtype == HC_F64 && !hc_device_info(g->dev)->fp64)
    return hc_error(HC_ERR_UNSUPPORTED, "grid expression in f64: %s has no fp64", hc_device_name(g->dev));
  for (uint32_t i = 0; i < p->nnodes; i++) {
    const gp_node_t *n = p->nodes[i];
    if (n->kind == GX_FUNC && n->src->fn.kind == HC_GFUNC_USER && !n->src->fn.source)
      return hc_error(HC_ERR_UNSUPPORTED, "grid expression: a user function without source cannot run on %s",
                      hc_device_name(g->dev));
  }
  return HC_OK;
}

/* Runs one kernel instance; host=auto falls back to the evaluator when the
 * compiler cannot be run. */
static hc_status_t run_instance(hc_grid_t *g, gp_plan_t *p, gp_node_t *root, hc_field_t *dst, const int64_t *lo,
                                const int64_t *cnt, uint32_t parity, gk_mode_t mode, hc_grid_reduce_op_t op,
                                hc_language_t lang, int *eval, int host_auto, reduce_out_t *red) {
  gk_t k;
  hc_status_t st = gk_build(&k, p, root, dst, lo, cnt, parity, mode, op, lang, *eval);
  if (st != HC_OK) return st;
  st = launch_kernel(g, &k, red);
  if (st == HC_ERR_UNSUPPORTED && lang == HC_LANG_HOST && !*eval && host_auto) {
    hc_log(hc_device_context(g->dev), HC_LOG_WARN, "grid expressions: %s; using the evaluator", hc_last_error());
    g->stats.compiler_fallbacks++;
    *eval = 1;
    gk_free(&k);
    if ((st = gk_build(&k, p, root, dst, lo, cnt, parity, mode, op, lang, 1)) != HC_OK) return st;
    st = launch_kernel(g, &k, red);
  }
  gk_free(&k);
  return st;
}

static hc_status_t execute(hc_grid_t *g, hc_field_t *dst, const hc_field_t *grid_of, hc_gexpr_t *e,
                           const hc_grid_range_t *range, const hc_grid_options_t *opts, gk_mode_t mode,
                           hc_grid_reduce_op_t op, double *out) {
  const char *what = mode == GK_ASSIGN ? "hc_grid_assign" : "hc_grid_reduce";
  if (!e) {
    if (g->err != HC_OK) return hc_error(g->err, "%s: the expression could not be built: %s", what, g->errmsg);
    return hc_error(HC_ERR_INVALID_ARG, "%s: NULL expression", what);
  }
  hc_grid_options_t o;
  hc_status_t st = hcg_options(g, opts, &o);
  if (st != HC_OK) return st;
  gp_plan_t *p = NULL;
  /* the planning, a span on the host track of a trace (docs/trace.md) */
  hc_context_t *ctx = hc_device_context(g->dev);
  hc_trace_range_begin(ctx, mode == GK_ASSIGN ? "plan hc_grid_assign" : "plan hc_grid_reduce");
  hc_language_t lang = HC_LANG_HOST;
  int eval = 0;
  st = gp_plan_build(g, dst, grid_of, e, range, &p);
  if (st == HC_OK) st = choose_language(g, p, &o, &lang, &eval);
  if (st == HC_OK) st = gp_plan_decide(p, (hc_grid_fuse_t)o.fuse, lang);
  hc_trace_range_end(ctx);
  if (st != HC_OK && !p) return st;
  if (st != HC_OK) goto done;
  int empty = p->cnt[0] == 0 || p->cnt[1] == 0 || p->cnt[2] == 0;
  reduce_out_t red = {op, 0};
  if (!empty) {
    const int host_auto = o.host == HC_GRID_HOST_AUTO;
    /* materialised sub-expressions, innermost first (post-order) */
    for (uint32_t i = 0; i < p->nnodes && st == HC_OK; i++) {
      gp_node_t *n = p->nodes[i];
      if (!n->materialise || !n->reached) continue;
      int64_t ext[3], lo[3], cnt[3];
      gp_level_extents(p, n->level, ext);
      uint32_t ax0 = HCG_AX0(p->rank);
      for (int a = 0; a < 3; a++) {
        lo[a] = n->rlo[a];
        cnt[a] = n->rhi[a] - n->rlo[a] + 1;
      }
      if ((st = hcg_temp_get(g, p->dtype, p->rank, ext + ax0, &n->field)) != HC_OK) break;
      st = run_instance(g, p, n, n->field, lo, cnt, HC_GRID_ALL, GK_ASSIGN, op, lang, &eval, host_auto, NULL);
      g->stats.materialised++;
    }
    if (st == HC_OK)
      st = run_instance(g, p, p->root, dst, p->lo, p->cnt, p->parity, mode, op, lang, &eval, host_auto,
                        mode == GK_REDUCE ? &red : NULL);
  }
  if (st == HC_OK) {
    g->stats.assignments++;
    if (out) *out = red.result;
  } else {
    hc_error_prefix(st, "%s: ", what);
  }
done:
  gp_plan_free(p);
  return st;
}

HC_API hc_status_t hc_grid_assign(hc_grid_t *g, hc_field_t *dst, hc_gexpr_t *e, const hc_grid_range_t *range,
                                  const hc_grid_options_t *opts) {
  if (!g || !dst) return hc_error(HC_ERR_INVALID_ARG, "hc_grid_assign: NULL %s", g ? "field" : "grid");
  return execute(g, dst, dst, e, range, opts, GK_ASSIGN, HC_GRID_SUM, NULL);
}

HC_API hc_status_t hc_grid_reduce(hc_grid_t *g, hc_grid_reduce_op_t op, const hc_field_t *like, hc_gexpr_t *e,
                                  const hc_grid_range_t *range, const hc_grid_options_t *opts, double *out) {
  if (!g || !like || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_grid_reduce: NULL argument");
  if ((unsigned)op > HC_GRID_MAXABS) return hc_error(HC_ERR_INVALID_ARG, "hc_grid_reduce: unknown operation %d", op);
  *out = 0;
  return execute(g, NULL, like, e, range, opts, GK_REDUCE, op, out);
}
