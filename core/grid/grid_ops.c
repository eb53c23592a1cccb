/* Grid operators: stencils (user and built-in), restriction, prolongation,
 * identity, their sums, multiples and compositions, and hc_gexpr_apply,
 * which lowers an operator tree applied to an evaluable into expression
 * nodes: (A + B)(f) = A(f) + B(f), (s A)(f) = s A(f), (A o B)(f) = A(B(f)).
 * Lowering shares the operand node, so f is one node read at the union of
 * the points A and B need (the code generator evaluates it once per point). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"

hc_gexpr_t *hcg_expr_stencil(hc_grid_t *g, const gx_stencil_t *st, hc_gexpr_t *a);
hc_gexpr_t *hcg_expr_transfer(hc_grid_t *g, gx_kind_t kind, uint32_t rank, hc_gexpr_t *a);

static hc_gop_t *new_op(hc_grid_t *g, gop_kind_t kind, uint32_t rank) {
  hc_gop_t *o = calloc(1, sizeof *o);
  if (!o) return hcg_fail(g, HC_ERR_NO_MEMORY, "grid operator: out of memory");
  o->grid = g;
  o->kind = kind;
  o->rank = rank;
  o->next_alloc = g->ops;
  g->ops = o;
  return o;
}

static int rank_ok(hc_grid_t *g, uint32_t rank, const char *what) {
  if (rank < 1 || rank > 3) {
    hcg_fail(g, HC_ERR_INVALID_ARG, "%s: rank %u (grid operators have rank 1 to 3)", what, rank);
    return 0;
  }
  return 1;
}

/* A stencil operator node owning n points. */
static hc_gop_t *stencil_op(hc_grid_t *g, uint32_t rank, uint32_t n, const char *name) {
  hc_gop_t *o = new_op(g, OP_STENCIL, rank);
  if (!o) return NULL;
  gx_stencil_t *st = calloc(1, sizeof *st);
  if (st) {
    st->off = calloc(n, sizeof *st->off);
    st->coef = calloc(n, sizeof *st->coef);
  }
  if (!st || !st->off || !st->coef) {
    if (st) {
      free(st->off);
      free(st->coef);
      free(st);
    }
    return hcg_fail(g, HC_ERR_NO_MEMORY, "grid operator: out of memory");
  }
  st->rank = rank;
  st->n = n;
  snprintf(st->name, sizeof st->name, "%s", name);
  o->st = st;
  return o;
}

HC_API hc_gop_t *hc_gop_stencil(hc_grid_t *g, uint32_t rank, uint32_t n, const int32_t *offsets, const double *coeffs) {
  if (!g || !rank_ok(g, rank, "hc_gop_stencil")) return NULL;
  if (n < 1 || n > HCG_MAX_POINTS || !offsets || !coeffs)
    return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gop_stencil: %u points (1 to %d, with offsets and coefficients)", n,
                    HCG_MAX_POINTS);
  for (uint32_t k = 0; k < n; k++)
    for (uint32_t d = 0; d < rank; d++)
      if (abs(offsets[k * rank + d]) > HCG_MAX_OFFSET)
        return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gop_stencil: point %u has offset %d on axis %u (at most %d)", k,
                        offsets[k * rank + d], d, HCG_MAX_OFFSET);
  for (uint32_t k = 0; k < n; k++)
    if (!isfinite(coeffs[k])) return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gop_stencil: coefficient %u is not finite", k);
  hc_gop_t *o = stencil_op(g, rank, n, "stencil");
  if (!o) return NULL;
  for (uint32_t k = 0; k < n; k++) {
    for (uint32_t d = 0; d < rank; d++) o->st->off[k][d] = offsets[k * rank + d];
    o->st->coef[k] = coeffs[k];
  }
  o->st->coef_kind = GX_COEF_FIXED;
  return o;
}

HC_API hc_gop_t *hc_gop_laplacian(hc_grid_t *g, uint32_t rank, const double *h) {
  if (!g || !rank_ok(g, rank, "hc_gop_laplacian")) return NULL;
  for (uint32_t d = 0; h && d < rank; d++)
    if (!(h[d] > 0)) return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gop_laplacian: h[%u] = %g (must be > 0)", d, h[d]);
  hc_gop_t *o = stencil_op(g, rank, 2 * rank + 1, "laplacian");
  if (!o) return NULL;
  gx_stencil_t *st = o->st;
  st->coef_kind = GX_COEF_LAPLACIAN;
  /* point 0: centre; 2d+1, 2d+2: -1 and +1 on axis d */
  for (uint32_t d = 0; d < rank; d++) {
    st->off[1 + 2 * d][d] = -1;
    st->off[2 + 2 * d][d] = 1;
    st->h[d] = h ? h[d] : 0;
  }
  return o;
}

HC_API hc_gop_t *hc_gop_diff(hc_grid_t *g, uint32_t rank, uint32_t axis, hc_gdiff_t kind, double h) {
  if (!g || !rank_ok(g, rank, "hc_gop_diff")) return NULL;
  if (axis >= rank) return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gop_diff: axis %u of a rank-%u operator", axis, rank);
  if ((unsigned)kind > HC_GDIFF_CENTRAL) return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gop_diff: unknown kind %d", kind);
  hc_gop_t *o = stencil_op(g, rank, 2, "diff");
  if (!o) return NULL;
  gx_stencil_t *st = o->st;
  st->coef_kind = GX_COEF_DIFF;
  st->axis = axis;
  st->diff = kind;
  st->h[axis] = h > 0 ? h : 0;
  /* point 0 gets -1/h (or -1/2h), point 1 +1/h */
  st->off[0][axis] = kind == HC_GDIFF_FORWARD ? 0 : -1;
  st->off[1][axis] = kind == HC_GDIFF_BACKWARD ? 0 : 1;
  return o;
}

HC_API hc_gop_t *hc_gop_restrict_fw(hc_grid_t *g, uint32_t rank) {
  if (!g || !rank_ok(g, rank, "hc_gop_restrict_fw")) return NULL;
  return new_op(g, OP_RESTRICT, rank);
}

HC_API hc_gop_t *hc_gop_prolong_linear(hc_grid_t *g, uint32_t rank) {
  if (!g || !rank_ok(g, rank, "hc_gop_prolong_linear")) return NULL;
  return new_op(g, OP_PROLONG, rank);
}

HC_API hc_gop_t *hc_gop_identity(hc_grid_t *g, uint32_t rank) {
  if (!g) return NULL;
  if (rank > 3) return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gop_identity: rank %u (0 to 3)", rank);
  return new_op(g, OP_IDENTITY, rank);
}

static int op_own(hc_grid_t *g, const hc_gop_t *a, const char *what) {
  if (a && a->grid != g) {
    hcg_fail(g, HC_ERR_INVALID_ARG, "%s: operator belongs to another grid", what);
    return 0;
  }
  if (!a && g->err == HC_OK) hcg_fail(g, HC_ERR_INVALID_ARG, "%s: NULL operator", what);
  return a != NULL;
}

static hc_gop_t *op_binary(hc_grid_t *g, gop_kind_t kind, hc_gop_t *a, hc_gop_t *b, const char *what) {
  if (!g) return NULL;
  int oa = op_own(g, a, what), ob = op_own(g, b, what);
  if (!oa || !ob) return NULL;
  if (a->rank && b->rank && a->rank != b->rank)
    return hcg_fail(g, HC_ERR_INVALID_ARG, "%s: operators of rank %u and %u", what, a->rank, b->rank);
  hc_gop_t *o = new_op(g, kind, a->rank ? a->rank : b->rank);
  if (!o) return NULL;
  o->a = a;
  o->b = b;
  return o;
}

HC_API hc_gop_t *hc_gop_add(hc_grid_t *g, hc_gop_t *a, hc_gop_t *b) { return op_binary(g, OP_ADD, a, b, "hc_gop_add"); }
HC_API hc_gop_t *hc_gop_sub(hc_grid_t *g, hc_gop_t *a, hc_gop_t *b) { return op_binary(g, OP_SUB, a, b, "hc_gop_sub"); }
HC_API hc_gop_t *hc_gop_compose(hc_grid_t *g, hc_gop_t *a, hc_gop_t *b) {
  return op_binary(g, OP_COMPOSE, a, b, "hc_gop_compose");
}

HC_API hc_gop_t *hc_gop_scale(hc_grid_t *g, double s, hc_gop_t *a) {
  if (!g || !op_own(g, a, "hc_gop_scale")) return NULL;
  hc_gop_t *o = new_op(g, OP_SCALE, a->rank);
  if (!o) return NULL;
  o->a = a;
  o->s = s;
  return o;
}

static const char *op_word(const hc_gop_t *o) {
  switch (o->kind) {
  case OP_STENCIL: return o->st->name;
  case OP_RESTRICT: return "restriction";
  case OP_PROLONG: return "prolongation";
  case OP_IDENTITY: return "identity";
  default: return "operator";
  }
}

static hc_gexpr_t *lower(hc_grid_t *g, hc_gop_t *o, hc_gexpr_t *e) {
  if (!e) return NULL;
  switch (o->kind) {
  case OP_STENCIL: return hcg_expr_stencil(g, o->st, e);
  case OP_RESTRICT: return hcg_expr_transfer(g, GX_RESTRICT, o->rank, e);
  case OP_PROLONG: return hcg_expr_transfer(g, GX_PROLONG, o->rank, e);
  case OP_IDENTITY: return e;
  case OP_ADD: return hc_gexpr_add(g, lower(g, o->a, e), lower(g, o->b, e));
  case OP_SUB: return hc_gexpr_sub(g, lower(g, o->a, e), lower(g, o->b, e));
  case OP_SCALE: return hc_gexpr_scale(g, o->s, lower(g, o->a, e));
  case OP_COMPOSE: return lower(g, o->a, lower(g, o->b, e));
  }
  return NULL;
}

HC_API hc_gexpr_t *hc_gexpr_apply(hc_grid_t *g, hc_gop_t *op, hc_gexpr_t *e) {
  if (!g || !op_own(g, op, "hc_gexpr_apply")) return NULL;
  if (!e) {
    if (g->err == HC_OK) hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gexpr_apply: NULL operand");
    return NULL;
  }
  if (e->grid != g) return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gexpr_apply: operand belongs to another grid");
  if (!e->has_grid)
    return hcg_fail(g, HC_ERR_INVALID_ARG,
                    "hc_gexpr_apply: %s applied to a scalar expression: an operator needs a grid function (a field or "
                    "a computable) to define its points",
                    op_word(op));
  if (op->rank && e->rank && op->rank != e->rank)
    return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gexpr_apply: a rank-%u %s applied to a %u-D expression", op->rank,
                    op_word(op), e->rank);
  return lower(g, op, e);
}
