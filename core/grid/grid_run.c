/* Running assignments and reductions: choose the language (host: compiled C
 * or the row evaluator), plan, evaluate materialised sub-expressions into
 * pooled temporaries, then build each kernel instance and launch it
 * (grid_launch.c). */
#include <stdlib.h>

#include "grid_internal.h"
#include "hc/trace.h"

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
                                hc_language_t lang, int *eval, int host_auto, double *result) {
  gk_t k;
  hc_status_t st = gk_build(&k, p, root, dst, lo, cnt, parity, mode, op, lang, *eval);
  if (st != HC_OK) return st;
  st = gl_launch(g, &k, result);
  if (st == HC_ERR_UNSUPPORTED && lang == HC_LANG_HOST && !*eval && host_auto) {
    hc_log(hc_device_context(g->dev), HC_LOG_WARN, "grid expressions: %s; using the evaluator", hc_last_error());
    g->stats.compiler_fallbacks++;
    *eval = 1;
    gk_free(&k);
    if ((st = gk_build(&k, p, root, dst, lo, cnt, parity, mode, op, lang, 1)) != HC_OK) return st;
    st = gl_launch(g, &k, result);
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
  double result = 0;
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
                        mode == GK_REDUCE ? &result : NULL);
  }
  if (st == HC_OK) {
    g->stats.assignments++;
    if (out) *out = result;
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
