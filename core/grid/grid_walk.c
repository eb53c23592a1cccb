/* The symbolic walk (see grid_walk.h): index variables, the (node,
 * position) memo, value emission for every node kind, and the analysis
 * passes built on it. Code text is emitted only when w->emit is set;
 * grid_emit.c wraps the values in kernels. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid_walk.h"

/* ---------------------------------------------------------------- text */

void gw_put(gw_t *w, const char *fmt, ...) {
  if (!w->emit || w->fail) return;
  va_list ap;
  va_start(ap, fmt);
  if (!hcg_vappend(&w->buf, &w->len, &w->cap, fmt, ap)) w->fail = 1;
  va_end(ap);
}

/* ---------------------------------------------------------------- variables */

void gw_var_name(const gw_t *w, int32_t v, char *out, size_t n) {
  (void)w;
  if (v < 3)
    snprintf(out, n, "i%d", v);
  else if (v < 6)
    snprintf(out, n, "q%d", v - 3);
  else
    snprintf(out, n, "v%d", v);
}

static int32_t var_get(gw_t *w, int kind, int32_t parent, int64_t off) {
  for (uint32_t i = 6; i < w->nvars; i++)
    if (w->vars[i].kind == kind && w->vars[i].parent == parent && w->vars[i].off == off) return (int32_t)i;
  if (w->nvars == w->vcap) {
    uint32_t nc = w->vcap * 2;
    gw_var_t *n = realloc(w->vars, nc * sizeof *n);
    if (!n) {
      w->fail = 1;
      return parent;
    }
    w->vars = n;
    w->vcap = nc;
  }
  int32_t id = (int32_t)w->nvars++;
  w->vars[id] = (gw_var_t){kind, parent, off};
  char pn[16], me[16];
  gw_var_name(w, parent, pn, sizeof pn);
  gw_var_name(w, id, me, sizeof me);
  switch (kind) {
  case GW_VAR_DBL: gw_put(w, "  const IDX %s = 2 * %s;\n", me, pn); break;
  case GW_VAR_HALF: gw_put(w, "  const IDX %s = (%s + (%lld)) >> 1;\n", me, pn, (long long)off); break;
  case GW_VAR_HALFUP: gw_put(w, "  const IDX %s = (%s + (%lld)) >> 1;\n", me, pn, (long long)off + 1); break;
  case GW_VAR_PARW:
    gw_put(w, "  const REAL %s = (REAL)0.5 * (REAL)((%s + (%lld)) & 1);\n", me, pn, (long long)off);
    break;
  }
  return id;
}

/* ---------------------------------------------------------------- memo */

static uint64_t memo_hash(uint32_t node, const gw_pos_t *p) {
  uint64_t h = 0x9e3779b97f4a7c15ULL * (node + 1);
  for (int d = 0; d < 3; d++) {
    h ^= (uint64_t)(uint32_t)p->var[d] + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= (uint64_t)p->off[d] * 0xff51afd7ed558ccdULL + (h << 6) + (h >> 2);
  }
  return h ^ (h >> 29);
}

static int pos_eq(const gw_pos_t *a, const gw_pos_t *b) {
  for (int d = 0; d < 3; d++)
    if (a->var[d] != b->var[d] || a->off[d] != b->off[d]) return 0;
  return 1;
}

static gw_memo_t *memo_slot(gw_t *w, uint32_t node, const gw_pos_t *p) {
  if ((w->mcount + 1) * 2 > w->mcap) {
    uint32_t nc = w->mcap ? w->mcap * 2 : 256;
    gw_memo_t *n = malloc(nc * sizeof *n);
    if (!n) {
      w->fail = 1;
      return NULL;
    }
    for (uint32_t i = 0; i < nc; i++) n[i].val = -1;
    for (uint32_t i = 0; i < w->mcap; i++) {
      if (w->memo[i].val < 0) continue;
      uint64_t h = memo_hash(w->memo[i].node, &w->memo[i].pos) & (nc - 1);
      while (n[h].val >= 0) h = (h + 1) & (nc - 1);
      n[h] = w->memo[i];
    }
    free(w->memo);
    w->memo = n;
    w->mcap = nc;
  }
  uint64_t h = memo_hash(node, p) & (w->mcap - 1);
  while (w->memo[h].val >= 0 && !(w->memo[h].node == node && pos_eq(&w->memo[h].pos, p))) h = (h + 1) & (w->mcap - 1);
  return &w->memo[h];
}

/* Leaving a C scope: its values and derived index variables are gone. */
void gw_memo_clear(gw_t *w) {
  for (uint32_t i = 0; i < w->mcap; i++) w->memo[i].val = -1;
  w->mcount = 0;
  w->nvars = 6;
}

hc_status_t gw_init(gw_t *w, gp_plan_t *p, const gk_t *k, gp_node_t *root, int stop_mat, int emit) {
  memset(w, 0, sizeof *w);
  w->p = p;
  w->k = k;
  w->root = root;
  w->stop_mat = stop_mat;
  w->emit = emit;
  w->vcap = 64;
  w->vars = malloc(w->vcap * sizeof *w->vars);
  if (!w->vars) return hc_error(HC_ERR_NO_MEMORY, "grid codegen: out of memory");
  for (int i = 0; i < 6; i++) w->vars[i] = (gw_var_t){i < 3 ? GW_VAR_ROOT : GW_VAR_QROOT, -1, 0};
  w->nvars = 6;
  w->watch_ok = 1;
  w->vec_cell = -1;
  return HC_OK;
}

void gw_fini(gw_t *w) {
  free(w->vars);
  free(w->memo);
  free(w->buf);
  w->vars = NULL;
  w->memo = NULL;
  w->buf = NULL;
}

/* ---------------------------------------------------------------- values */

static int is_leaf(const gw_t *w, const gp_node_t *n) {
  return n->kind == GX_DENSE || (w->stop_mat && n->materialise && n != w->root);
}

static int root_relative(const gw_pos_t *p) { return p->var[0] == 0 && p->var[1] == 1 && p->var[2] == 2; }

/* Parameter name of a node's i-th parameter (emit mode). */
static void pname(const gw_t *w, const gp_node_t *n, uint32_t i, char *out, size_t sz) {
  gs_param_name(w->k->lparam0[n->id] + i, out, sz);
}

/* "(v + off)" for internal axis a of pos. */
static void coord_text(const gw_t *w, const gw_pos_t *p, int a, char *out, size_t n) {
  char vn[16];
  gw_var_name(w, p->var[a], vn, sizeof vn);
  if (p->off[a])
    snprintf(out, n, "(%s + (%lld))", vn, (long long)p->off[a]);
  else
    snprintf(out, n, "%s", vn);
}

/* Extents name of internal axis a at level rel (relative to the kernel's). */
static void ext_name(int rel, int a, char *out, size_t n) {
  if (rel == 0)
    snprintf(out, n, "n%d", a);
  else
    snprintf(out, n, "%s%d_%d", rel > 0 ? "nc" : "nf", rel > 0 ? rel : -rel, a);
}

static gw_val_t walk(gw_t *w, gp_node_t *n, const gw_pos_t *pos);

static gw_val_t text_value(const char *text) {
  gw_val_t v;
  snprintf(v.s, sizeof v.s, "%s", text);
  v.temp = -1;
  return v;
}

static gw_val_t temp_value(int32_t t) {
  gw_val_t v;
  snprintf(v.s, sizeof v.s, "e%d", t);
  v.temp = t;
  return v;
}

/* (node, pos) is temporary t from now on. The memo is looked up again: it
 * may have grown, and moved, while the operands were walked. */
static void memo_record(gw_t *w, uint32_t node, const gw_pos_t *pos, int32_t t) {
  if (w->fail) return;
  gw_memo_t *s = memo_slot(w, node, pos);
  if (s) {
    s->node = node;
    s->pos = *pos;
    s->val = t;
    w->mcount++;
  }
}

static gw_val_t new_temp(gw_t *w, gw_memo_t *slot, uint32_t node, const gw_pos_t *pos) {
  gw_val_t v = temp_value(w->ntemps++);
  if (slot) memo_record(w, node, pos, v.temp);
  return v;
}

static gw_val_t emit_load(gw_t *w, gp_node_t *n, const gw_pos_t *pos, gw_memo_t *slot) {
  const uint32_t ax0 = HCG_AX0(w->p->rank);
  const int rel = n->level - w->k->base_level;
  char idx[256] = "", c[64], e[24];
  size_t len = 0;
  for (uint32_t a = ax0; a < 3; a++) {
    coord_text(w, pos, (int)a, c, sizeof c);
    if (a == ax0) {
      len += (size_t)snprintf(idx + len, sizeof idx - len, "%s", c);
    } else {
      ext_name(rel, (int)a, e, sizeof e);
      char tmp[256];
      snprintf(tmp, sizeof tmp, "(%s) * %s + %s", idx, e, c);
      len = (size_t)snprintf(idx, sizeof idx, "%s", tmp);
    }
  }
  uint32_t s = (uint32_t)w->k->slot[n->id];
  gw_val_t v = new_temp(w, slot, n->id, pos);
  if (w->vec_cell >= 0 && root_relative(pos)) {
    char name[48];
    gv_value_name(s, pos->off, w->vec_plane, w->vec_cell, name, sizeof name);
    gw_put(w, "  const REAL %s = %s;\n", v.s, name);
  } else {
    char f[16];
    gs_field_name(s, f, sizeof f);
    gw_put(w, "  const REAL %s = %s[%s];\n", v.s, f, idx);
  }
  return v;
}

/* Staged kernels: the tile value at a root-relative position. */
static gw_val_t emit_tile_read(gw_t *w, gp_node_t *n, const gw_pos_t *pos, gw_memo_t *slot) {
  char at[256];
  ge_tile_value(w, pos->off, at, sizeof at);
  gw_val_t v = new_temp(w, slot, n->id, pos);
  gw_put(w, "  const REAL %s = %s;\n", v.s, at);
  return v;
}

/* Prolongation: nested linear interpolation over the rank's axes. */
static void prolong_terms(gw_t *w, gp_node_t *child, gw_pos_t *cp, const int32_t *hv, const int32_t *uv,
                          const int32_t *wv, uint32_t a, char *out, size_t n) {
  if (a == 3) {
    gw_val_t c = walk(w, child, cp);
    snprintf(out, n, "%s", c.s);
    return;
  }
  char lo[2048], hi[2048], wn[16];
  cp->var[a] = hv[a];
  prolong_terms(w, child, cp, hv, uv, wv, a + 1, lo, sizeof lo);
  cp->var[a] = uv[a];
  prolong_terms(w, child, cp, hv, uv, wv, a + 1, hi, sizeof hi);
  gw_var_name(w, wv[a], wn, sizeof wn);
  if (snprintf(out, n, "(%s + %s * (%s - %s))", lo, wn, hi, lo) >= (int)n) w->fail = 1;
}

static gw_val_t emit_func(gw_t *w, gp_node_t *n, const gw_pos_t *pos, gw_memo_t *slot) {
  const hc_gfunc_t *f = &n->src->fn;
  const uint32_t r = w->p->rank, ax0 = HCG_AX0(r);
  char c[64], p0[16], p1[16], p2[16];
  char x[3][160];
  gw_val_t v = new_temp(w, slot, n->id, pos);
  switch ((hc_gfunc_kind_t)f->kind) {
  case HC_GFUNC_COORD:
    coord_text(w, pos, (int)(ax0 + f->axis), c, sizeof c);
    pname(w, n, 0, p0, sizeof p0);
    pname(w, n, 1, p1, sizeof p1);
    gw_put(w, "  const REAL %s = %s + %s * (REAL)%s;\n", v.s, p0, p1, c);
    break;
  case HC_GFUNC_INDEX:
    coord_text(w, pos, (int)(ax0 + f->axis), c, sizeof c);
    gw_put(w, "  const REAL %s = (REAL)%s;\n", v.s, c);
    break;
  case HC_GFUNC_SIN:
    pname(w, n, 0, p0, sizeof p0);
    gw_put(w, "  const REAL %s = %s", v.s, p0);
    for (uint32_t d = 0; d < r; d++) {
      coord_text(w, pos, (int)(ax0 + d), c, sizeof c);
      pname(w, n, 1 + 3 * d, p0, sizeof p0);
      pname(w, n, 2 + 3 * d, p1, sizeof p1);
      pname(w, n, 3 + 3 * d, p2, sizeof p2);
      gw_put(w, " * sin(%s * (%s + %s * (REAL)%s))", p2, p0, p1, c);
    }
    gw_put(w, ";\n");
    break;
  case HC_GFUNC_GAUSS:
    gw_put(w, "  REAL %s_r2 = (REAL)0;\n", v.s);
    for (uint32_t d = 0; d < r; d++) {
      coord_text(w, pos, (int)(ax0 + d), c, sizeof c);
      pname(w, n, 2 + 3 * d, p0, sizeof p0);
      pname(w, n, 3 + 3 * d, p1, sizeof p1);
      pname(w, n, 4 + 3 * d, p2, sizeof p2);
      gw_put(w, "  { const REAL dx = %s + %s * (REAL)%s - %s; %s_r2 += dx * dx; }\n", p0, p1, c, p2, v.s);
    }
    pname(w, n, 0, p0, sizeof p0);
    pname(w, n, 1, p1, sizeof p1);
    gw_put(w, "  const REAL %s = %s * exp(-%s * %s_r2);\n", v.s, p0, p1, v.s);
    break;
  case HC_GFUNC_POINT:
    gw_put(w, "  const REAL %s = (", v.s);
    for (uint32_t d = 0; d < r; d++) {
      coord_text(w, pos, (int)(ax0 + d), c, sizeof c);
      pname(w, n, 1 + d, p0, sizeof p0);
      gw_put(w, "%s%s == (IDX)%s", d ? " && " : "", c, p0);
    }
    pname(w, n, 0, p0, sizeof p0);
    gw_put(w, ") ? %s : (REAL)0;\n", p0);
    break;
  case HC_GFUNC_USER: {
    char ix[3][80];
    for (uint32_t d = 0; d < 3; d++) {
      if (d < r) {
        coord_text(w, pos, (int)(ax0 + d), c, sizeof c);
        pname(w, n, 4 + 2 * d, p0, sizeof p0);
        pname(w, n, 5 + 2 * d, p1, sizeof p1);
        snprintf(x[d], sizeof x[d], "%s + %s * (REAL)%s", p0, p1, c);
        snprintf(ix[d], sizeof ix[d], "(long)%s", c);
      } else {
        snprintf(x[d], sizeof x[d], "(REAL)0");
        snprintf(ix[d], sizeof ix[d], "0L");
      }
    }
    char q[4][16];
    for (int i = 0; i < 4; i++) pname(w, n, (uint32_t)i, q[i], sizeof q[i]);
    gw_put(w, "  const REAL %s = hcg_user%u(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", v.s, w->k->local[n->id], x[0],
           x[1], x[2], ix[0], ix[1], ix[2], q[0], q[1], q[2], q[3]);
    break;
  }
  }
  return v;
}

static gw_val_t walk(gw_t *w, gp_node_t *n, const gw_pos_t *pos) {
  gw_val_t v = text_value("0");
  if (w->fail) return v;
  if (n->kind == GX_SCALAR) {
    if (w->emit)
      pname(w, n, 0, v.s, sizeof v.s);
    else {
      n->npos = 1;
      v = text_value("s");
    }
    return v;
  }
  gw_memo_t *slot = memo_slot(w, n->id, pos);
  if (!slot) return v;
  if (slot->val >= 0) return temp_value(slot->val);
  if (!w->emit) {
    /* analysis: record the position, then walk the operands */
    slot->node = n->id;
    slot->pos = *pos;
    slot->val = 0;
    w->mcount++;
    n->npos++;
    if (n == w->watch) {
      if (root_relative(pos))
        w->cb(w->cbu, pos->off);
      else
        w->watch_ok = 0;
    }
    v = text_value("x");
    if (is_leaf(w, n)) return v;
  } else {
    if (is_leaf(w, n)) return emit_load(w, n, pos, slot);
    if (n == w->stage && root_relative(pos)) return emit_tile_read(w, n, pos, slot);
  }
  const uint32_t ax0 = HCG_AX0(w->p->rank);
  char p0[16];
  switch (n->kind) {
  case GX_ADD:
  case GX_SUB:
  case GX_MUL: {
    gw_val_t a = walk(w, n->a, pos), b = walk(w, n->b, pos);
    if (!w->emit) return v;
    v = new_temp(w, slot, n->id, pos);
    gw_put(w, "  const REAL %s = %s %c %s;\n", v.s, a.s, n->kind == GX_ADD ? '+' : n->kind == GX_SUB ? '-' : '*', b.s);
    return v;
  }
  case GX_SCALE: {
    gw_val_t a = walk(w, n->a, pos);
    if (!w->emit) return v;
    pname(w, n, 0, p0, sizeof p0);
    v = new_temp(w, slot, n->id, pos);
    gw_put(w, "  const REAL %s = %s * %s;\n", v.s, p0, a.s);
    return v;
  }
  case GX_STENCIL: {
    const gx_stencil_t *st = n->src->st;
    /* analysis: every point; code: the points of non-zero coefficients,
     * summed per class of equal coefficients, one multiply per class */
    const int32_t *cls = w->emit ? w->k->cls + w->k->cls0[n->id] : NULL;
    gw_val_t *vals = malloc(st->n * sizeof *vals);
    if (!vals) {
      w->fail = 1;
      return v;
    }
    for (uint32_t k = 0; k < st->n; k++) {
      if (cls && cls[k] < 0) continue;
      gw_pos_t q = *pos;
      for (uint32_t d = 0; d < st->rank; d++) q.off[ax0 + d] += st->off[k][d];
      vals[k] = walk(w, n->a, &q);
    }
    if (w->emit) {
      uint32_t nc = w->k->ncls[n->id];
      v = new_temp(w, slot, n->id, pos);
      gw_put(w, "  const REAL %s = ", v.s);
      if (nc == 0) gw_put(w, "(REAL)0");
      for (uint32_t c = 0; c < nc; c++) {
        pname(w, n, c, p0, sizeof p0);
        gw_put(w, "%s%s * (", c ? " + " : "", p0);
        int first = 1;
        for (uint32_t k = 0; k < st->n; k++)
          if (cls[k] == (int32_t)c) {
            gw_put(w, "%s%s", first ? "" : " + ", vals[k].s);
            first = 0;
          }
        gw_put(w, ")");
      }
      gw_put(w, ";\n");
    }
    free(vals);
    return v;
  }
  case GX_RESTRICT: {
    /* full weighting: weights (1/4, 1/2, 1/4) per axis around 2i */
    int32_t dv[3];
    for (int a = 0; a < 3; a++) dv[a] = (uint32_t)a >= ax0 ? var_get(w, GW_VAR_DBL, pos->var[a], 0) : pos->var[a];
    uint32_t r = w->p->rank, npts = 1;
    for (uint32_t d = 0; d < r; d++) npts *= 3;
    if (w->emit) v = new_temp(w, NULL, n->id, pos);
    char acc[64];
    snprintf(acc, sizeof acc, "%s_acc", w->emit ? v.s : "x");
    gw_put(w, "  REAL %s = (REAL)0;\n", acc);
    for (uint32_t m = 0; m < npts; m++) {
      gw_pos_t q = *pos;
      double wt = 1;
      uint32_t mm = m;
      for (uint32_t a = ax0; a < 3; a++) {
        int o = (int)(mm % 3) - 1;
        mm /= 3;
        q.var[a] = dv[a];
        q.off[a] = 2 * pos->off[a] + o;
        wt *= o == 0 ? 0.5 : 0.25;
      }
      gw_val_t c = walk(w, n->a, &q);
      gw_put(w, "  %s += (REAL)%.17g * %s;\n", acc, wt, c.s);
    }
    if (w->emit) {
      gw_put(w, "  const REAL %s = %s;\n", v.s, acc);
      /* register the memo entry now that the operands are emitted */
      memo_record(w, n->id, pos, v.temp);
    }
    return v;
  }
  case GX_PROLONG: {
    int32_t hv[3], uv[3], wv[3];
    gw_pos_t q = *pos;
    for (int a = 0; a < 3; a++) {
      if ((uint32_t)a >= ax0) {
        hv[a] = var_get(w, GW_VAR_HALF, pos->var[a], pos->off[a]);
        uv[a] = var_get(w, GW_VAR_HALFUP, pos->var[a], pos->off[a]);
        wv[a] = var_get(w, GW_VAR_PARW, pos->var[a], pos->off[a]);
        q.off[a] = 0;
      }
    }
    char expr[4096];
    /* padded axes keep their variable and offset */
    prolong_terms(w, n->a, &q, hv, uv, wv, ax0, expr, sizeof expr);
    if (!w->emit) return v;
    v = new_temp(w, slot, n->id, pos);
    gw_put(w, "  const REAL %s = %s;\n", v.s, expr);
    return v;
  }
  case GX_FUNC:
    if (!w->emit) return v;
    return emit_func(w, n, pos, slot);
  default: break;
  }
  return v;
}

gw_val_t gw_walk_root(gw_t *w, gp_node_t *n, int32_t var_base) {
  gw_pos_t p;
  for (int d = 0; d < 3; d++) {
    p.var[d] = var_base + d;
    p.off[d] = 0;
  }
  return walk(w, n, &p);
}

/* ---------------------------------------------------------------- analysis passes */

void gw_count_positions(gp_plan_t *p, gp_node_t *root, int stop_at_materialised) {
  for (uint32_t i = 0; i < p->nnodes; i++) p->nodes[i]->npos = 0;
  gw_t w;
  if (gw_init(&w, p, NULL, root, stop_at_materialised, 0) != HC_OK) return;
  gw_walk_root(&w, root, 0);
  gw_fini(&w);
}

typedef struct {
  int32_t rad[3];
} radius_t;

static void radius_cb(void *u, const int64_t off[3]) {
  radius_t *r = u;
  for (int d = 0; d < 3; d++) {
    int64_t a = off[d] < 0 ? -off[d] : off[d];
    if (a > r->rad[d]) r->rad[d] = (int32_t)(a > 99 ? 99 : a);
  }
}

int gw_stage_radius(gp_plan_t *p, gp_node_t *root, gp_node_t *s, int32_t radius[3]) {
  radius_t r = {{0, 0, 0}};
  gw_t w;
  if (gw_init(&w, p, NULL, root, 1, 0) != HC_OK) return -1;
  w.watch = s;
  w.cb = radius_cb;
  w.cbu = &r;
  /* npos is recomputed by this walk; keep the caller's counts */
  uint32_t *saved = malloc(p->nnodes * sizeof *saved);
  if (!saved) {
    gw_fini(&w);
    return -1;
  }
  for (uint32_t i = 0; i < p->nnodes; i++) saved[i] = p->nodes[i]->npos;
  for (uint32_t i = 0; i < p->nnodes; i++) p->nodes[i]->npos = 0;
  gw_walk_root(&w, root, 0);
  int ok = w.watch_ok && !w.fail && s->npos >= 2;
  for (uint32_t i = 0; i < p->nnodes; i++) p->nodes[i]->npos = saved[i];
  free(saved);
  gw_fini(&w);
  for (int d = 0; d < 3; d++) {
    radius[d] = r.rad[d];
    if (r.rad[d] > 2) ok = 0;
  }
  return ok ? 0 : -1;
}

int gw_for_each_offset(gp_plan_t *p, gp_node_t *root, gp_node_t *leaf, void (*fn)(void *u, const int64_t off[3]),
                       void *u) {
  gw_t w;
  if (gw_init(&w, p, NULL, root, 1, 0) != HC_OK) return 0;
  w.watch = leaf;
  w.cb = fn;
  w.cbu = u;
  uint32_t *saved = malloc(p->nnodes * sizeof *saved);
  if (!saved) {
    gw_fini(&w);
    return 0;
  }
  for (uint32_t i = 0; i < p->nnodes; i++) saved[i] = p->nodes[i]->npos;
  gw_walk_root(&w, root, 0);
  for (uint32_t i = 0; i < p->nnodes; i++) p->nodes[i]->npos = saved[i];
  free(saved);
  int ok = w.watch_ok && !w.fail;
  gw_fini(&w);
  return ok;
}
