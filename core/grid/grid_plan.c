/* Planning one assignment: lower the user's expression to plan nodes, one
 * per (node, grid level) — restriction reads the finer level, prolongation
 * the coarser —, check every field against the extents of the level it is
 * read on, find the cells each node is evaluated at over the box (so a
 * stencil that would read outside a field is an error before anything is
 * built), and decide per shared sub-expression between recomputation,
 * a temporary, or a local-memory tile (gp_plan_decide). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"

static const char *level_text(char *buf, size_t n, int level) {
  if (level == 0)
    snprintf(buf, n, "the assigned grid");
  else if (level < 0)
    snprintf(buf, n, "the grid %d level%s finer (inside a restriction)", -level, level == -1 ? "" : "s");
  else
    snprintf(buf, n, "the grid %d level%s coarser (inside a prolongation)", level, level == 1 ? "" : "s");
  return buf;
}

static const char *ext_text(char *buf, size_t n, uint32_t rank, const int64_t *ext3) {
  size_t len = 0;
  buf[0] = '\0';
  for (uint32_t a = HCG_AX0(rank); a < 3 && len < n; a++)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", a > HCG_AX0(rank) ? "x" : "", (long long)ext3[a]);
  return buf;
}

void gp_level_extents(const gp_plan_t *p, int level, int64_t ext[3]) {
  for (int a = 0; a < 3; a++) {
    int64_t n = p->n[a];
    if (a >= (int)HCG_AX0(p->rank)) {
      for (int l = 0; l < level; l++) n = (n + 1) / 2;
      for (int l = 0; l > level; l--) n = 2 * n - 1;
    }
    ext[a] = n;
  }
}

double gp_level_spacing(const gp_plan_t *p, int level, uint32_t a) { return p->h[a] * ldexp(1.0, level); }

/* ---------------------------------------------------------------- lowering */

static gp_node_t *memo_find(gp_plan_t *p, const hc_gexpr_t *e, int level) {
  for (uint32_t i = 0; i < p->nmemo; i++)
    if (p->memo_src[i] == e && p->memo_level[i] == level) return p->memo_node[i];
  return NULL;
}

static hc_status_t grow(void **arr, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return HC_OK;
  uint32_t nc = *cap ? *cap * 2 : 32;
  while (nc < need) nc *= 2;
  void *n = realloc(*arr, (size_t)nc * elem);
  if (!n) return hc_error(HC_ERR_NO_MEMORY, "grid plan: out of memory");
  *arr = n;
  *cap = nc;
  return HC_OK;
}

static hc_status_t add_params(gp_plan_t *p, gp_node_t *n, uint32_t count) {
  n->param0 = p->nparams;
  n->nparam = count;
  if (!count) return HC_OK;
  if (grow((void **)&p->params, &p->pcap, p->nparams + count, sizeof(double)) != HC_OK) return HC_ERR_NO_MEMORY;
  memset(p->params + p->nparams, 0, count * sizeof(double));
  p->nparams += count;
  return HC_OK;
}

/* Stencil coefficients on a level (spacing-derived ones use its spacing). */
static void stencil_coefs(const gp_plan_t *p, const gx_stencil_t *st, int level, double *c) {
  uint32_t ax0 = HCG_AX0(p->rank);
  switch (st->coef_kind) {
  case GX_COEF_FIXED: memcpy(c, st->coef, st->n * sizeof *c); break;
  case GX_COEF_LAPLACIAN: {
    c[0] = 0;
    for (uint32_t d = 0; d < st->rank; d++) {
      double h = st->h[d] > 0 ? st->h[d] : gp_level_spacing(p, level, ax0 + d);
      double w = 1.0 / (h * h);
      c[1 + 2 * d] = c[2 + 2 * d] = w;
      c[0] -= 2 * w;
    }
    break;
  }
  case GX_COEF_DIFF: {
    double h = st->h[st->axis] > 0 ? st->h[st->axis] : gp_level_spacing(p, level, ax0 + st->axis);
    double w = st->diff == HC_GDIFF_CENTRAL ? 0.5 / h : 1.0 / h;
    c[0] = -w;
    c[1] = w;
    break;
  }
  }
}

/* Parameters of a computable on a level (layout documented in grid_emit.c). */
static hc_status_t func_params(gp_plan_t *p, gp_node_t *n, int level) {
  const hc_gfunc_t *f = &n->src->fn;
  uint32_t r = p->rank, ax0 = HCG_AX0(r);
  uint32_t count = 0;
  switch ((hc_gfunc_kind_t)f->kind) {
  case HC_GFUNC_COORD:
  case HC_GFUNC_INDEX:
    if (f->axis >= r)
      return hc_error(HC_ERR_INVALID_ARG, "computable %s of axis %u on a %u-D grid",
                      f->kind == HC_GFUNC_COORD ? "coordinate" : "index", f->axis, r);
    count = f->kind == HC_GFUNC_COORD ? 2 : 0;
    break;
  case HC_GFUNC_SIN: count = 1 + 3 * r; break;
  case HC_GFUNC_GAUSS: count = 2 + 3 * r; break;
  case HC_GFUNC_POINT: count = 1 + r; break;
  case HC_GFUNC_USER: count = 4 + 2 * r; break;
  }
  if (add_params(p, n, count) != HC_OK) return HC_ERR_NO_MEMORY;
  double *q = p->params + n->param0;
  switch ((hc_gfunc_kind_t)f->kind) {
  case HC_GFUNC_COORD:
    q[0] = p->origin[ax0 + f->axis];
    q[1] = gp_level_spacing(p, level, ax0 + f->axis);
    break;
  case HC_GFUNC_INDEX: break;
  case HC_GFUNC_SIN:
    q[0] = f->amplitude;
    for (uint32_t d = 0; d < r; d++) {
      q[1 + 3 * d] = p->origin[ax0 + d];
      q[2 + 3 * d] = gp_level_spacing(p, level, ax0 + d);
      q[3 + 3 * d] = f->k[d] * M_PI;
    }
    break;
  case HC_GFUNC_GAUSS:
    q[0] = f->amplitude;
    q[1] = 1.0 / (2 * f->sigma * f->sigma);
    for (uint32_t d = 0; d < r; d++) {
      q[2 + 3 * d] = p->origin[ax0 + d];
      q[3 + 3 * d] = gp_level_spacing(p, level, ax0 + d);
      q[4 + 3 * d] = f->center[d];
    }
    break;
  case HC_GFUNC_POINT: {
    int64_t ext[3];
    gp_level_extents(p, level, ext);
    q[0] = f->amplitude;
    for (uint32_t d = 0; d < r; d++) {
      double h = gp_level_spacing(p, level, ax0 + d);
      double t = floor((f->center[d] - p->origin[ax0 + d]) / h + 0.5);
      q[1 + d] = t < 0 ? 0 : t > (double)(ext[ax0 + d] - 1) ? (double)(ext[ax0 + d] - 1) : t;
    }
    break;
  }
  case HC_GFUNC_USER:
    for (int i = 0; i < 4; i++) q[i] = f->params[i];
    for (uint32_t d = 0; d < r; d++) {
      q[4 + 2 * d] = p->origin[ax0 + d];
      q[5 + 2 * d] = gp_level_spacing(p, level, ax0 + d);
    }
    break;
  }
  return HC_OK;
}

static hc_status_t lower(gp_plan_t *p, const hc_gexpr_t *e, int level, gp_node_t **out) {
  char s1[64], s2[64], s3[96];
  *out = memo_find(p, e, level);
  if (*out) return HC_OK;
  if (level > HCG_MAX_LEVELS || level < -HCG_MAX_LEVELS)
    return hc_error(HC_ERR_INVALID_ARG, "grid expression nests more than %d restrictions or prolongations",
                    HCG_MAX_LEVELS);
  if (e->rank && e->rank != p->rank)
    return hc_error(HC_ERR_INVALID_ARG, "a %u-D %s inside an expression on a %u-D grid", e->rank,
                    e->kind == GX_DENSE ? "field" : "sub-expression", p->rank);
  if (e->dtype && e->dtype != p->dtype)
    return hc_error(HC_ERR_INVALID_ARG, "mixed dtypes: %s field '%s...' in an expression assigned to %s",
                    hc_dtype_name(e->dtype), e->kind == GX_DENSE ? hc_field_name(e->field) : "",
                    hc_dtype_name(p->dtype));
  gp_node_t *a = NULL, *b = NULL;
  hc_status_t st = HC_OK;
  int64_t ext[3];
  gp_level_extents(p, level, ext);
  switch (e->kind) {
  case GX_ADD:
  case GX_SUB:
  case GX_MUL:
    if ((st = lower(p, e->a, level, &a)) != HC_OK || (st = lower(p, e->b, level, &b)) != HC_OK) return st;
    break;
  case GX_SCALE:
  case GX_STENCIL:
    if ((st = lower(p, e->a, level, &a)) != HC_OK) return st;
    break;
  case GX_RESTRICT:
    for (int d = (int)HCG_AX0(p->rank); d < 3; d++)
      if (ext[d] > (INT64_C(1) << 40))
        return hc_error(HC_ERR_INVALID_ARG, "restriction: the fine grid would have more than 2^40 points per axis");
    if ((st = lower(p, e->a, level - 1, &a)) != HC_OK) return st;
    break;
  case GX_PROLONG:
    for (int d = (int)HCG_AX0(p->rank); d < 3; d++)
      if (ext[d] % 2 == 0 || ext[d] < 3)
        return hc_error(HC_ERR_INVALID_ARG,
                        "prolongation onto %s of %s points: extent %lld on axis %d is not 2m+1 with m >= 1 "
                        "(vertex-centred grids need n_fine = 2 n_coarse - 1)",
                        level_text(s3, sizeof s3, level), ext_text(s1, sizeof s1, p->rank, ext), (long long)ext[d],
                        d - (int)HCG_AX0(p->rank));
    if ((st = lower(p, e->a, level + 1, &a)) != HC_OK) return st;
    break;
  case GX_DENSE: {
    int64_t fs[3] = {1, 1, 1};
    const int64_t *shape = hc_field_shape(e->field);
    for (uint32_t d = 0; d < p->rank; d++) fs[HCG_AX0(p->rank) + d] = shape[d];
    if (memcmp(fs, ext, sizeof ext))
      return hc_error(HC_ERR_INVALID_ARG, "field '%s' is %s but is read on %s, which is %s", hc_field_name(e->field),
                      ext_text(s1, sizeof s1, p->rank, fs), level_text(s3, sizeof s3, level),
                      ext_text(s2, sizeof s2, p->rank, ext));
    break;
  }
  default: break;
  }
  gp_node_t *n = calloc(1, sizeof *n);
  if (!n || grow((void **)&p->nodes, &p->cap, p->nnodes + 1, sizeof *p->nodes) != HC_OK ||
      grow((void **)&p->memo_src, &p->memo_cap, p->nmemo + 1, sizeof *p->memo_src) != HC_OK) {
    free(n);
    return hc_error(HC_ERR_NO_MEMORY, "grid plan: out of memory");
  }
  /* memo arrays share one capacity: grow the other two alongside */
  uint32_t cap = p->memo_cap;
  int *ml = realloc(p->memo_level, cap * sizeof *ml);
  if (ml) p->memo_level = ml;
  gp_node_t **mn = ml ? realloc(p->memo_node, cap * sizeof *mn) : NULL;
  if (mn) p->memo_node = mn;
  if (!ml || !mn) {
    free(n);
    return hc_error(HC_ERR_NO_MEMORY, "grid plan: out of memory");
  }
  n->kind = e->kind;
  n->level = level;
  n->a = a;
  n->b = b;
  n->src = e;
  n->field = e->kind == GX_DENSE ? e->field : NULL;
  n->id = p->nnodes;
  p->nodes[p->nnodes++] = n;
  p->memo_src[p->nmemo] = e;
  p->memo_level[p->nmemo] = level;
  p->memo_node[p->nmemo++] = n;
  if (level < p->min_level) p->min_level = level;
  if (level > p->max_level) p->max_level = level;
  switch (e->kind) {
  case GX_SCALAR:
  case GX_SCALE:
    if (add_params(p, n, 1) != HC_OK) return HC_ERR_NO_MEMORY;
    p->params[n->param0] = e->value;
    break;
  case GX_STENCIL:
    if (e->st->rank != p->rank)
      return hc_error(HC_ERR_INVALID_ARG, "a rank-%u %s applied on a %u-D grid", e->st->rank, e->st->name, p->rank);
    if (add_params(p, n, e->st->n) != HC_OK) return HC_ERR_NO_MEMORY;
    stencil_coefs(p, e->st, level, p->params + n->param0);
    break;
  case GX_FUNC:
    if ((st = func_params(p, n, level)) != HC_OK) return st;
    break;
  default: break;
  }
  n->pointwise = (e->kind != GX_STENCIL && e->kind != GX_RESTRICT && e->kind != GX_PROLONG) && (!a || a->pointwise) &&
                 (!b || b->pointwise);
  n->reads_dst = (n->field && n->field == p->dst) || (a && a->reads_dst) || (b && b->reads_dst);
  *out = n;
  return HC_OK;
}

/* ---------------------------------------------------------------- reach */

static void reach_union(gp_node_t *c, const int64_t lo[3], const int64_t hi[3]) {
  for (int d = 0; d < 3; d++) {
    if (!c->reached || lo[d] < c->rlo[d]) c->rlo[d] = lo[d];
    if (!c->reached || hi[d] > c->rhi[d]) c->rhi[d] = hi[d];
  }
  c->reached = 1;
}

/* Propagates the cells each node is evaluated at, from the root's box down
 * (nodes are in post-order, so walking backwards visits every parent of a
 * node before the node). */
static void reach(gp_plan_t *p) {
  uint32_t ax0 = HCG_AX0(p->rank);
  for (uint32_t i = 0; i < p->nnodes; i++) p->nodes[i]->reached = 0;
  int64_t lo[3], hi[3];
  for (int d = 0; d < 3; d++) {
    lo[d] = p->lo[d];
    hi[d] = p->lo[d] + p->cnt[d] - 1;
  }
  reach_union(p->root, lo, hi);
  for (uint32_t i = p->nnodes; i-- > 0;) {
    gp_node_t *n = p->nodes[i];
    if (!n->reached || !n->a) continue;
    memcpy(lo, n->rlo, sizeof lo);
    memcpy(hi, n->rhi, sizeof hi);
    switch (n->kind) {
    case GX_STENCIL: {
      const gx_stencil_t *st = n->src->st;
      for (uint32_t d = 0; d < st->rank; d++) {
        int32_t mn = 0, mx = 0;
        for (uint32_t k = 0; k < st->n; k++) {
          if (k == 0 || st->off[k][d] < mn) mn = st->off[k][d];
          if (k == 0 || st->off[k][d] > mx) mx = st->off[k][d];
        }
        lo[ax0 + d] += mn;
        hi[ax0 + d] += mx;
      }
      break;
    }
    case GX_RESTRICT:
      for (uint32_t a = ax0; a < 3; a++) lo[a] = 2 * lo[a] - 1, hi[a] = 2 * hi[a] + 1;
      break;
    case GX_PROLONG:
      for (uint32_t a = ax0; a < 3; a++) lo[a] = lo[a] >> 1, hi[a] = (hi[a] + 1) >> 1;
      break;
    default: break;
    }
    reach_union(n->a, lo, hi);
    if (n->b) reach_union(n->b, n->rlo, n->rhi);
  }
}

static hc_status_t check_reads(gp_plan_t *p) {
  char s1[96], s2[64];
  uint32_t ax0 = HCG_AX0(p->rank);
  for (uint32_t i = 0; i < p->nnodes; i++) {
    gp_node_t *n = p->nodes[i];
    if (n->kind != GX_DENSE || !n->reached) continue;
    int64_t ext[3];
    gp_level_extents(p, n->level, ext);
    for (uint32_t a = ax0; a < 3; a++) {
      if (n->rlo[a] >= 0 && n->rhi[a] < ext[a]) continue;
      int64_t bad = n->rlo[a] < 0 ? n->rlo[a] : n->rhi[a];
      size_t len = 0;
      s2[0] = '\0';
      for (uint32_t b = ax0; b < 3; b++)
        len += (size_t)snprintf(s2 + len, sizeof s2 - len, "%s[%lld,%lld]", b > ax0 ? "x" : "", (long long)p->lo[b],
                                (long long)(p->lo[b] + p->cnt[b] - 1));
      return hc_error(HC_ERR_INVALID_ARG,
                      "the expression reads field '%s' at index %lld on axis %u (valid 0..%lld on %s) for the box "
                      "%s: a stencil needs its neighbours inside the field; restrict the assignment (e.g. "
                      "hc_grid_interior(1)) or enlarge the field",
                      hc_field_name(n->field), (long long)bad, a - ax0, (long long)(ext[a] - 1),
                      level_text(s1, sizeof s1, n->level), s2);
    }
  }
  return HC_OK;
}

void gp_plan_free(gp_plan_t *p) {
  if (!p) return;
  for (uint32_t i = 0; i < p->nnodes; i++) {
    gp_node_t *n = p->nodes[i];
    if (n->materialise && n->field) hcg_temp_put(p->g, n->field);
    free(n);
  }
  free(p->nodes);
  free(p->params);
  free(p->memo_src);
  free(p->memo_level);
  free(p->memo_node);
  free(p);
}

hc_status_t gp_plan_build(hc_grid_t *g, hc_field_t *dst, const hc_field_t *grid_of, const hc_gexpr_t *e,
                          const hc_grid_range_t *range, gp_plan_t **out) {
  char s1[64], s2[64];
  *out = NULL;
  uint32_t rank = hc_field_rank(grid_of);
  hc_dtype_t dt = hc_field_dtype(grid_of);
  const char *what = dst ? "hc_grid_assign" : "hc_grid_reduce";
  if (rank < 1 || rank > 3)
    return hc_error(HC_ERR_INVALID_ARG, "%s: field '%s' has rank %u (grid functions have rank 1 to 3)", what,
                    hc_field_name(grid_of), rank);
  if (dt != HC_F32 && dt != HC_F64)
    return hc_error(HC_ERR_INVALID_ARG, "%s: field '%s' is %s (grid expressions take f32 or f64)", what,
                    hc_field_name(grid_of), hc_dtype_name(dt));
  if (hc_field_device(grid_of) != g->dev)
    return hc_error(HC_ERR_INVALID_ARG, "%s: field '%s' is on %s, the grid on %s", what, hc_field_name(grid_of),
                    hc_device_name(hc_field_device(grid_of)), hc_device_name(g->dev));
  if (e->grid != g) return hc_error(HC_ERR_INVALID_ARG, "%s: the expression belongs to another grid", what);
  const int64_t *shape = hc_field_shape(grid_of);
  if (e->rank && e->rank != rank)
    return hc_error(HC_ERR_INVALID_ARG, "%s: a %u-D expression assigned to the %u-D field '%s'", what, e->rank, rank,
                    hc_field_name(grid_of));
  if (e->shaped && memcmp(e->shape, shape, rank * sizeof *shape)) {
    size_t l1 = 0, l2 = 0;
    for (uint32_t d = 0; d < rank; d++) {
      l1 += (size_t)snprintf(s1 + l1, sizeof s1 - l1, "%s%lld", d ? "x" : "", (long long)e->shape[d]);
      l2 += (size_t)snprintf(s2 + l2, sizeof s2 - l2, "%s%lld", d ? "x" : "", (long long)shape[d]);
    }
    return hc_error(HC_ERR_INVALID_ARG, "%s: mismatched shapes: the expression is %s, field '%s' is %s", what, s1,
                    hc_field_name(grid_of), s2);
  }
  if (e->dtype && e->dtype != dt)
    return hc_error(HC_ERR_INVALID_ARG, "%s: mixed dtypes: a %s expression for the %s field '%s'", what,
                    hc_dtype_name(e->dtype), hc_dtype_name(dt), hc_field_name(grid_of));
  gp_plan_t *p = calloc(1, sizeof *p);
  if (!p) return hc_error(HC_ERR_NO_MEMORY, "grid plan: out of memory");
  p->g = g;
  p->rank = rank;
  p->dtype = dt;
  p->dst = dst;
  uint32_t ax0 = HCG_AX0(rank);
  const double *h = hc_field_spacing(grid_of), *o = hc_field_origin(grid_of);
  for (int a = 0; a < 3; a++) {
    int user = a - (int)ax0;
    p->n[a] = user >= 0 ? shape[user] : 1;
    p->h[a] = user >= 0 ? h[user] : 1.0;
    p->origin[a] = user >= 0 ? o[user] : 0.0;
    p->lo[a] = 0;
    p->cnt[a] = p->n[a];
  }
  hc_status_t st = HC_OK;
  if (range) {
    if (range->parity > HC_GRID_ODD) {
      st = hc_error(HC_ERR_INVALID_ARG, "range parity %u (0 all, 1 even, 2 odd)", range->parity);
      goto fail;
    }
    p->parity = range->parity;
    for (uint32_t d = 0; d < rank; d++) {
      int64_t n = shape[d], l = range->lo[d], r = range->hi[d];
      if (l < 0 || r < 0) {
        st = hc_error(HC_ERR_INVALID_ARG, "range offsets on axis %u are %lld and %lld (must be >= 0)", d, (long long)l,
                      (long long)r);
        goto fail;
      }
      if (l > n || r > n - l) {
        st = hc_error(HC_ERR_INVALID_ARG,
                      "the range is wider than field '%s': offsets %lld + %lld on axis %u of %lld cells",
                      hc_field_name(grid_of), (long long)l, (long long)r, d, (long long)n);
        goto fail;
      }
      p->lo[ax0 + d] = l;
      p->cnt[ax0 + d] = n - l - r;
    }
  }
  if ((st = lower(p, e, 0, &p->root)) != HC_OK) goto fail;
  reach(p);
  if ((st = check_reads(p)) != HC_OK) goto fail;
  *out = p;
  return HC_OK;
fail:
  hc_error_prefix(st, "%s: ", what);
  gp_plan_free(p);
  return st;
}

/* ---------------------------------------------------------------- decisions */

/* Per-point cost of a node's own operation, in flop-equivalents (a load
 * that hits the cache counts 1; transcendental functions about 20). */
static double own_cost(const gp_plan_t *p, const gp_node_t *n) {
  switch (n->kind) {
  case GX_DENSE: return 1;
  case GX_SCALAR: return 0;
  case GX_ADD:
  case GX_SUB:
  case GX_MUL:
  case GX_SCALE: return 1;
  case GX_STENCIL: return 2.0 * n->src->st->n;
  case GX_RESTRICT: return 2.0 * pow(3, p->rank);
  case GX_PROLONG: return 3.0 * pow(2, p->rank);
  case GX_FUNC:
    switch ((hc_gfunc_kind_t)n->src->fn.kind) {
    case HC_GFUNC_COORD:
    case HC_GFUNC_INDEX: return 1;
    case HC_GFUNC_POINT: return 2.0 * p->rank;
    case HC_GFUNC_SIN:
    case HC_GFUNC_GAUSS: return 25.0 * p->rank;
    case HC_GFUNC_USER: return 40;
    }
    return 10;
  default: return 1;
  }
}

/* Cost of one evaluation of n's subtree at one point: every node counted
 * once per distinct position it is needed at below n, approximated as
 * once per node (shared nodes are not counted twice), materialised nodes
 * as a load. */
static double subtree_cost(gp_plan_t *p, gp_node_t *n, uint8_t *seen) {
  if (seen[n->id]) return 0;
  seen[n->id] = 1;
  if (n->materialise) return 1;
  double c = own_cost(p, n);
  if (n->a) c += subtree_cost(p, n->a, seen) * (n->kind == GX_STENCIL ? n->src->st->n : 1);
  if (n->b) c += subtree_cost(p, n->b, seen);
  return c;
}

typedef struct {
  const char *name;
  int bad;
  uint32_t parity;
  int64_t off[3];
} inplace_t;

static void check_offset(void *u, const int64_t off[3]) {
  inplace_t *c = u;
  if (c->bad) return;
  int64_t l1 = 0;
  for (int d = 0; d < 3; d++) l1 += off[d] < 0 ? -off[d] : off[d];
  if (l1 == 0) return;
  if (c->parity != HC_GRID_ALL && (l1 & 1)) return; /* the other colour: not written by this launch */
  c->bad = 1;
  memcpy(c->off, off, sizeof c->off);
}

/* Flop-equivalents per byte at which the device is balanced. */
static double balance_of(const hc_device_info_t *info, hc_dtype_t dt) {
  double peak = dt == HC_F64 ? info->peak_fp64_gflops : info->peak_fp32_gflops;
  if (peak > 0 && info->peak_bandwidth_gbs > 0) return peak / info->peak_bandwidth_gbs;
  return 4.0; /* unknown: a conservative machine balance (flops per byte) */
}

hc_status_t gp_plan_decide(gp_plan_t *p, hc_grid_fuse_t fuse, hc_language_t lang) {
  const hc_device_info_t *info = hc_device_info(p->g->dev);
  gw_count_positions(p, p->root, 0);
  uint8_t *seen = calloc(p->nnodes ? p->nnodes : 1, 1);
  if (!seen) return hc_error(HC_ERR_NO_MEMORY, "grid plan: out of memory");
  const double es = (double)hc_dtype_size(p->dtype);
  const double balance = balance_of(info, p->dtype);
  /* The staged tile: one per root kernel, the eligible shared
   * sub-expression that saves the most recomputation. */
  gp_node_t *stage = NULL;
  double stage_gain = 0;
  /* Staging where the device's tuning row says it pays (gs_tuning_t) or
   * when asked for. */
  int want_stage = p->dst && p->parity == HC_GRID_ALL &&
                   (fuse == HC_GRID_FUSE_STAGE || (fuse == HC_GRID_FUSE_AUTO && p->g->tune.stage));
  /* Post-order: inner candidates are decided before the ones containing them. */
  for (uint32_t i = 0; i < p->nnodes; i++) {
    gp_node_t *n = p->nodes[i];
    n->materialise = n->staged = 0;
    if (n == p->root || n->npos < 2 || n->kind == GX_DENSE || n->kind == GX_SCALAR) continue;
    if (n->kind == GX_FUNC && (n->src->fn.kind == HC_GFUNC_COORD || n->src->fn.kind == HC_GFUNC_INDEX)) continue;
    memset(seen, 0, p->nnodes);
    double cost = subtree_cost(p, n, seen);
    n->cost = cost;
    double extra = (double)(n->npos - 1) * cost; /* recomputation per output cell */
    double tmp = 2.0 * es * balance;             /* write + read of a temporary */
    /* A GPU under auto stages only what would be worth a temporary:
     * cheaper sub-expressions recompute faster, since the stencil kernels'
     * 2-D groups serve their re-reads from cache (bench/ grid's
     * recompute / stage / materialise table re-measures it). */
    int stage_pays = fuse == HC_GRID_FUSE_STAGE || lang == HC_LANG_HOST || extra > tmp;
    if (want_stage && stage_pays && n->pointwise && !n->reads_dst) {
      int32_t r[3];
      if (gw_stage_radius(p, p->root, n, r) == 0 && extra > stage_gain) {
        stage = n;
        stage_gain = extra;
      }
    }
    switch (fuse) {
    case HC_GRID_FUSE_RECOMPUTE:
    case HC_GRID_FUSE_STAGE: break;
    case HC_GRID_FUSE_MATERIALISE: n->materialise = 1; break;
    case HC_GRID_FUSE_AUTO: n->materialise = extra > tmp; break;
    }
  }
  free(seen);
  if (stage) {
    /* Staging computes the node once per cell without a temporary's
     * traffic, so it replaces the node's materialisation; nothing inside it
     * is shared (it is pointwise). */
    stage->materialise = 0;
    stage->staged = 1;
  }
  /* In-place: the assigned field may be read only at the cell being written
   * (or at cells of the other colour under an EVEN/ODD range), except inside
   * a temporary, which is complete before the write starts. */
  if (p->dst && p->root->reads_dst) {
    for (uint32_t i = 0; i < p->nnodes; i++) {
      gp_node_t *n = p->nodes[i];
      if (n->kind != GX_DENSE || n->field != p->dst) continue;
      inplace_t c = {hc_field_name(p->dst), 0, p->parity, {0, 0, 0}};
      int ok = gw_for_each_offset(p, p->root, n, check_offset, &c);
      if (!ok || c.bad) {
        uint32_t ax0 = HCG_AX0(p->rank);
        char off[64] = "";
        size_t len = 0;
        for (uint32_t a = ax0; a < 3 && ok; a++)
          len += (size_t)snprintf(off + len, sizeof off - len, "%s%lld", a > ax0 ? "," : "", (long long)c.off[a]);
        return hc_error(HC_ERR_INVALID_ARG,
                        "hc_grid_assign: field '%s' is assigned and also read %s%s%s; an in-place update must read "
                        "only the cell it writes (or, under an even/odd range, cells of the other parity): assign to "
                        "another field, or use fuse=materialise for the sub-expression that reads it",
                        c.name, ok ? "at offset (" : "on another grid level", ok ? off : "", ok ? ")" : "");
      }
    }
  }
  return HC_OK;
}
