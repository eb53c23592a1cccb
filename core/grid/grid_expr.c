/* Grid expressions: the grid (arena + caches), option names, ranges, and the
 * evaluable nodes with their bottom-up checks (rank, shape, dtype), so that
 * a bad expression is reported where it is built. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"

void *hcg_fail(hc_grid_t *g, hc_status_t st, const char *fmt, ...) {
  va_list ap;
  char msg[512];
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (g && g->err == HC_OK) {
    g->err = st;
    snprintf(g->errmsg, sizeof g->errmsg, "%s", msg);
  }
  hc_error(st, "%s", msg);
  return NULL;
}

/* ---------------------------------------------------------------- names */

static const char *const fuse_names[] = {"auto", "recompute", "materialise", "stage"};
static const char *const host_names[] = {"auto", "compile", "eval"};

HC_API const char *hc_grid_fuse_name(hc_grid_fuse_t f) { return (unsigned)f < 4 ? fuse_names[f] : "?"; }
HC_API const char *hc_grid_host_name(hc_grid_host_t h) { return (unsigned)h < 3 ? host_names[h] : "?"; }

HC_API hc_status_t hc_grid_fuse_from_name(const char *name, hc_grid_fuse_t *out) {
  for (unsigned i = 0; name && i < 4; i++)
    if (!strcmp(name, fuse_names[i])) {
      *out = (hc_grid_fuse_t)i;
      return HC_OK;
    }
  if (name && !strcmp(name, "materialize")) {
    *out = HC_GRID_FUSE_MATERIALISE;
    return HC_OK;
  }
  return hc_error(HC_ERR_PARAM, "fuse=%s: expected auto, recompute, materialise or stage", name ? name : "(null)");
}

HC_API hc_status_t hc_grid_host_from_name(const char *name, hc_grid_host_t *out) {
  for (unsigned i = 0; name && i < 3; i++)
    if (!strcmp(name, host_names[i])) {
      *out = (hc_grid_host_t)i;
      return HC_OK;
    }
  return hc_error(HC_ERR_PARAM, "host=%s: expected auto, compile or eval", name ? name : "(null)");
}

HC_API hc_grid_range_t hc_grid_interior(int64_t width) {
  hc_grid_range_t r;
  memset(&r, 0, sizeof r);
  for (int d = 0; d < HC_MAX_DIMS; d++) r.lo[d] = r.hi[d] = width;
  return r;
}

/* ---------------------------------------------------------------- the grid */

static hc_status_t read_options(const hc_grid_options_t *o, hc_grid_options_t *out) {
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  if (!o) return HC_OK;
  size_t sz = o->size ? o->size : sizeof *o;
  if (sz >= offsetof(hc_grid_options_t, fuse) + sizeof o->fuse) out->fuse = o->fuse;
  if (sz >= offsetof(hc_grid_options_t, host) + sizeof o->host) out->host = o->host;
  if (out->fuse > HC_GRID_FUSE_STAGE)
    return hc_error(HC_ERR_INVALID_ARG, "grid options: fuse=%u is not a hc_grid_fuse_t", out->fuse);
  if (out->host > HC_GRID_HOST_EVAL)
    return hc_error(HC_ERR_INVALID_ARG, "grid options: host=%u is not a hc_grid_host_t", out->host);
  return HC_OK;
}

hc_status_t hcg_options(const hc_grid_t *g, const hc_grid_options_t *o, hc_grid_options_t *out) {
  if (!o) {
    *out = g->opts;
    return HC_OK;
  }
  return read_options(o, out);
}

HC_API hc_status_t hc_grid_create(hc_device_t *dev, const hc_grid_options_t *opts, hc_grid_t **out) {
  if (!dev || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_grid_create: NULL argument");
  *out = NULL;
  hc_grid_t *g = calloc(1, sizeof *g);
  if (!g) return hc_error(HC_ERR_NO_MEMORY, "hc_grid_create: out of memory");
  hc_status_t st = read_options(opts, &g->opts);
  if (st == HC_OK) st = gs_tuning_read(&g->tune, hc_device_info(dev));
  if (st != HC_OK) {
    free(g);
    return st;
  }
  /* The grid holds its own reference: opening an open device again
   * counts it, so the device outlives its opener's close. */
  if ((st = hc_device_open(hc_device_context(dev), hc_device_index(dev), &g->dev)) != HC_OK) {
    free(g);
    return st;
  }
  g->stats.size = sizeof g->stats;
  *out = g;
  return HC_OK;
}

static void free_exprs(hc_grid_t *g) {
  for (hc_gexpr_t *e = g->exprs, *n; e; e = n) {
    n = e->next_alloc;
    free(e->source);
    free(e);
  }
  g->exprs = NULL;
}

static void free_ops(hc_grid_t *g) {
  for (hc_gop_t *o = g->ops, *n; o; o = n) {
    n = o->next_alloc;
    if (o->st) {
      free(o->st->off);
      free(o->st->coef);
      free(o->st);
    }
    free(o);
  }
  g->ops = NULL;
}

HC_API void hc_grid_destroy(hc_grid_t *g) {
  if (!g) return;
  free_exprs(g);
  free_ops(g);
  gc_free_all(g);
  hcg_temps_free(g);
  hc_kernel_destroy(g->eval_kernel);
  hc_device_t *d = g->dev;
  free(g);
  hc_device_close(d);
}

/* Operators survive: they are built once and applied to fresh expressions
 * in every iteration (expression nodes point at their stencils, never the
 * other way), so only expression nodes go. */
HC_API void hc_grid_clear(hc_grid_t *g) {
  if (!g) return;
  free_exprs(g);
  g->err = HC_OK;
  g->errmsg[0] = '\0';
}

HC_API hc_device_t *hc_grid_device(const hc_grid_t *g) { return g ? g->dev : NULL; }

HC_API hc_status_t hc_grid_error(const hc_grid_t *g, const char **message) {
  if (message) *message = g ? g->errmsg : "";
  return g ? g->err : HC_ERR_INVALID_ARG;
}

HC_API const char *hc_grid_compiler_unavailable(const hc_grid_t *g) { return g && g->cc_state < 0 ? g->cc_why : NULL; }

HC_API void hc_grid_stats(const hc_grid_t *g, hc_grid_stats_t *out) {
  if (!out) return;
  uint32_t want = out->size && out->size < sizeof *out ? out->size : (uint32_t)sizeof *out;
  if (!g) {
    memset(out, 0, want);
    return;
  }
  hc_grid_stats_t s = g->stats;
  s.size = want;
  memcpy(out, &s, want);
}

HC_API const char *hc_grid_last_source(const hc_grid_t *g) { return g && g->last_source ? g->last_source : ""; }

/* ---------------------------------------------------------------- evaluable nodes */

static hc_gexpr_t *new_expr(hc_grid_t *g, gx_kind_t kind) {
  hc_gexpr_t *e = calloc(1, sizeof *e);
  if (!e) return hcg_fail(g, HC_ERR_NO_MEMORY, "grid expression: out of memory");
  e->grid = g;
  e->kind = kind;
  e->serial = g->serial++;
  e->next_alloc = g->exprs;
  g->exprs = e;
  return e;
}

static const char *kind_word(const hc_gexpr_t *e) {
  static const char *const w[] = {"field",       "scalar",      "computable",        "sum",
                                  "difference",  "product",     "scaled expression", "stencil application",
                                  "restriction", "prolongation"};
  return e && e->kind < GX_KIND_COUNT_ ? w[e->kind] : "?";
}

/* "17x17x17" */
static const char *shape_text(char *buf, size_t n, uint32_t rank, const int64_t *shape) {
  size_t len = 0;
  buf[0] = '\0';
  for (uint32_t d = 0; d < rank && len < n; d++)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? "x" : "", (long long)shape[d]);
  return buf;
}

/* Operands must belong to g (NULL operands mean an earlier error). */
static int own(hc_grid_t *g, const hc_gexpr_t *a, const char *what) {
  if (a && a->grid != g) {
    hcg_fail(g, HC_ERR_INVALID_ARG, "%s: operand belongs to another grid", what);
    return 0;
  }
  return a != NULL;
}

HC_API hc_gexpr_t *hc_gexpr_dense(hc_grid_t *g, hc_field_t *f) {
  if (!g) return NULL;
  if (!f) return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gexpr_dense: NULL field");
  uint32_t rank = hc_field_rank(f);
  if (rank < 1 || rank > 3)
    return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gexpr_dense: field '%s' has rank %u (grid functions have rank 1 to 3)",
                    hc_field_name(f), rank);
  hc_dtype_t dt = hc_field_dtype(f);
  if (dt != HC_F32 && dt != HC_F64)
    return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gexpr_dense: field '%s' is %s (grid expressions take f32 or f64)",
                    hc_field_name(f), hc_dtype_name(dt));
  if (hc_field_device(f) != g->dev)
    return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gexpr_dense: field '%s' is on %s, the grid on %s", hc_field_name(f),
                    hc_device_name(hc_field_device(f)), hc_device_name(g->dev));
  hc_gexpr_t *e = new_expr(g, GX_DENSE);
  if (!e) return NULL;
  e->field = f;
  e->rank = rank;
  e->shaped = 1;
  memcpy(e->shape, hc_field_shape(f), rank * sizeof(int64_t));
  e->dtype = dt;
  e->has_grid = 1;
  return e;
}

HC_API hc_gexpr_t *hc_gexpr_scalar(hc_grid_t *g, double v) {
  if (!g) return NULL;
  hc_gexpr_t *e = new_expr(g, GX_SCALAR);
  if (e) e->value = v;
  return e;
}

HC_API hc_status_t hc_gexpr_scalar_set(hc_gexpr_t *e, double v) {
  if (!e || (e->kind != GX_SCALAR && e->kind != GX_SCALE))
    return hc_error(HC_ERR_INVALID_ARG, "hc_gexpr_scalar_set: not a scalar or scaled expression");
  e->value = v;
  return HC_OK;
}

HC_API hc_gexpr_t *hc_gexpr_computable(hc_grid_t *g, const hc_gfunc_t *fn) {
  if (!g) return NULL;
  if (!fn) return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gexpr_computable: NULL function");
  hc_gfunc_t f;
  memset(&f, 0, sizeof f);
  size_t sz = fn->size && fn->size < sizeof f ? fn->size : sizeof f;
  memcpy(&f, fn, sz);
  if (f.kind > HC_GFUNC_USER) return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gexpr_computable: unknown kind %u", f.kind);
  if ((f.kind == HC_GFUNC_COORD || f.kind == HC_GFUNC_INDEX) && f.axis > 2)
    return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gexpr_computable: axis %u (grid functions have axes 0 to 2)", f.axis);
  if (f.kind == HC_GFUNC_GAUSS && !(f.sigma > 0))
    return hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gexpr_computable: gauss needs sigma > 0 (got %g)", f.sigma);
  if (f.kind == HC_GFUNC_USER && !f.source && !f.host)
    return hcg_fail(g, HC_ERR_INVALID_ARG,
                    "hc_gexpr_computable: a user function needs a source, a host function or both");
  if (f.kind == HC_GFUNC_USER && f.source && strpbrk(f.source, ";{}"))
    return hcg_fail(g, HC_ERR_INVALID_ARG,
                    "hc_gexpr_computable: the source must be one expression (no ';', '{' or '}'): \"%s\"", f.source);
  if (f.amplitude == 0) f.amplitude = 1;
  for (int d = 0; d < 3; d++)
    if (f.k[d] == 0) f.k[d] = 1;
  hc_gexpr_t *e = new_expr(g, GX_FUNC);
  if (!e) return NULL;
  if (f.source && !(e->source = strdup(f.source))) return hcg_fail(g, HC_ERR_NO_MEMORY, "out of memory");
  f.source = e->source;
  f.size = sizeof f;
  e->fn = f;
  e->has_grid = 1;
  return e;
}

HC_API hc_gexpr_t *hc_gexpr_coord(hc_grid_t *g, uint32_t axis) {
  hc_gfunc_t f = {.size = sizeof f, .kind = HC_GFUNC_COORD, .axis = axis};
  return hc_gexpr_computable(g, &f);
}

HC_API hc_gexpr_t *hc_gexpr_index(hc_grid_t *g, uint32_t axis) {
  hc_gfunc_t f = {.size = sizeof f, .kind = HC_GFUNC_INDEX, .axis = axis};
  return hc_gexpr_computable(g, &f);
}

/* Combines the inferred rank/shape/dtype of two operands into e. */
static hc_gexpr_t *combine(hc_grid_t *g, hc_gexpr_t *e, const hc_gexpr_t *a, const hc_gexpr_t *b, const char *what) {
  char s1[64], s2[64];
  if (a->rank && b->rank && a->rank != b->rank)
    return hcg_fail(g, HC_ERR_INVALID_ARG, "%s: mismatched ranks: a %u-D %s and a %u-D %s", what, a->rank, kind_word(a),
                    b->rank, kind_word(b));
  if (a->shaped && b->shaped && memcmp(a->shape, b->shape, a->rank * sizeof(int64_t)))
    return hcg_fail(g, HC_ERR_INVALID_ARG, "%s: mismatched shapes %s (%s) and %s (%s)", what,
                    shape_text(s1, sizeof s1, a->rank, a->shape), kind_word(a),
                    shape_text(s2, sizeof s2, b->rank, b->shape), kind_word(b));
  if (a->dtype && b->dtype && a->dtype != b->dtype)
    return hcg_fail(g, HC_ERR_INVALID_ARG, "%s: mixed dtypes %s and %s (convert one field first)", what,
                    hc_dtype_name(a->dtype), hc_dtype_name(b->dtype));
  e->rank = a->rank ? a->rank : b->rank;
  e->shaped = a->shaped || b->shaped;
  memcpy(e->shape, a->shaped ? a->shape : b->shape, sizeof e->shape);
  e->dtype = a->dtype ? a->dtype : b->dtype;
  e->has_grid = a->has_grid || b->has_grid;
  return e;
}

static hc_gexpr_t *binary(hc_grid_t *g, gx_kind_t kind, hc_gexpr_t *a, hc_gexpr_t *b, const char *what) {
  if (!g) return NULL;
  int oa = own(g, a, what), ob = own(g, b, what);
  if (!oa || !ob) {
    if (g->err == HC_OK) hcg_fail(g, HC_ERR_INVALID_ARG, "%s: NULL operand", what);
    return NULL;
  }
  /* Check before allocating so a failed node is never left in the arena
   * half made (it would be freed with the arena anyway). */
  hc_gexpr_t probe;
  memset(&probe, 0, sizeof probe);
  if (!combine(g, &probe, a, b, what)) return NULL;
  hc_gexpr_t *e = new_expr(g, kind);
  if (!e) return NULL;
  e->a = a;
  e->b = b;
  e->rank = probe.rank;
  e->shaped = probe.shaped;
  memcpy(e->shape, probe.shape, sizeof e->shape);
  e->dtype = probe.dtype;
  e->has_grid = probe.has_grid;
  return e;
}

HC_API hc_gexpr_t *hc_gexpr_add(hc_grid_t *g, hc_gexpr_t *a, hc_gexpr_t *b) {
  return binary(g, GX_ADD, a, b, "hc_gexpr_add");
}
HC_API hc_gexpr_t *hc_gexpr_sub(hc_grid_t *g, hc_gexpr_t *a, hc_gexpr_t *b) {
  return binary(g, GX_SUB, a, b, "hc_gexpr_sub");
}
HC_API hc_gexpr_t *hc_gexpr_mul(hc_grid_t *g, hc_gexpr_t *a, hc_gexpr_t *b) {
  return binary(g, GX_MUL, a, b, "hc_gexpr_mul");
}

HC_API hc_gexpr_t *hc_gexpr_scale(hc_grid_t *g, double s, hc_gexpr_t *a) {
  if (!g) return NULL;
  if (!own(g, a, "hc_gexpr_scale")) {
    if (g->err == HC_OK) hcg_fail(g, HC_ERR_INVALID_ARG, "hc_gexpr_scale: NULL operand");
    return NULL;
  }
  hc_gexpr_t *e = new_expr(g, GX_SCALE);
  if (!e) return NULL;
  e->a = a;
  e->value = s;
  e->rank = a->rank;
  e->shaped = a->shaped;
  memcpy(e->shape, a->shape, sizeof e->shape);
  e->dtype = a->dtype;
  e->has_grid = a->has_grid;
  return e;
}

/* Unary grid-operator nodes (used by hc_gexpr_apply's lowering). */
hc_gexpr_t *hcg_expr_stencil(hc_grid_t *g, const gx_stencil_t *st, hc_gexpr_t *a) {
  hc_gexpr_t *e = new_expr(g, GX_STENCIL);
  if (!e) return NULL;
  e->a = a;
  e->st = st;
  e->rank = st->rank;
  e->shaped = a->shaped;
  memcpy(e->shape, a->shape, sizeof e->shape);
  e->dtype = a->dtype;
  e->has_grid = 1;
  return e;
}

hc_gexpr_t *hcg_expr_transfer(hc_grid_t *g, gx_kind_t kind, uint32_t rank, hc_gexpr_t *a) {
  char s1[64];
  int64_t shape[3] = {0, 0, 0};
  if (a->shaped) {
    for (uint32_t d = 0; d < rank; d++) {
      int64_t n = a->shape[d];
      if (kind == GX_RESTRICT) {
        if (n < 3 || n % 2 == 0)
          return hcg_fail(g, HC_ERR_INVALID_ARG,
                          "restriction of a %s grid: extent %lld on axis %u is not 2m+1 with m >= 1 (vertex-centred "
                          "grids need n_fine = 2 n_coarse - 1)",
                          shape_text(s1, sizeof s1, rank, a->shape), (long long)n, d);
        shape[d] = (n + 1) / 2;
      } else {
        shape[d] = 2 * n - 1;
      }
    }
  }
  hc_gexpr_t *e = new_expr(g, kind);
  if (!e) return NULL;
  e->a = a;
  e->rank = rank;
  e->shaped = a->shaped;
  memcpy(e->shape, shape, sizeof shape);
  e->dtype = a->dtype;
  e->has_grid = 1;
  return e;
}
