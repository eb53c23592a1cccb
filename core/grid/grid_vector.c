/* Vector assignments (device languages): each work-item computes V
 * consecutive cells of a row in each of Z consecutive planes, V = 16 bytes
 * / element size; it loads every row those planes read first (one aligned
 * 16-byte load per row, a row shared by two planes once, scalar loads for
 * the stencil's reach past the V cells), then computes and stores plane
 * by plane with 16-byte stores. One scalar access per item per row leaves
 * too few bytes in flight to stream from device memory: a hand-written
 * 7-point Laplacian gained, step by step, from rows that start on a
 * 16-byte boundary, from several cells per item with 16-byte accesses and
 * from loading the planes' rows up front (tests/gpu/stencil_variants.py
 * re-measures each step on a GPU).
 *
 * Eligible kernels: assignments to the whole parity, not staged, whose
 * leaves (dense fields, temporaries) are all read at constant offsets from
 * the cell on the kernel's own level (no restriction or prolongation), and
 * whose fast extent is a multiple of V so that every row starts on a
 * 16-byte boundary (buffers are at least that aligned). The item's first
 * cell is x0 = a multiple of V; the cells of its V that fall outside the
 * box are computed from zero halo values and not used: the item stores
 * their old values back (emit_partial_loads). */
#include <stdio.h>
#include <string.h>

#include "grid_walk.h"

#define GV_MAX_ROWS 96 /* distinct (field, plane, row) reads of one item */

typedef struct {
  uint32_t slot;
  int32_t d0, d1;     /* row offset (internal axes 0 and 1) */
  int32_t xmin, xmax; /* reach along the row */
} gv_row_t;

typedef struct {
  gv_row_t *rows;
  int n, overflow;
  uint32_t slot;
} gv_collect_t;

static void collect_offset(void *u, const int64_t off[3]) {
  gv_collect_t *c = u;
  for (int i = 0; i < c->n; i++) {
    gv_row_t *r = &c->rows[i];
    if (r->slot == c->slot && r->d0 == off[0] && r->d1 == off[1]) {
      if (off[2] < r->xmin) r->xmin = (int32_t)off[2];
      if (off[2] > r->xmax) r->xmax = (int32_t)off[2];
      return;
    }
  }
  if (c->n == GV_MAX_ROWS) {
    c->overflow = 1;
    return;
  }
  c->rows[c->n++] = (gv_row_t){c->slot, (int32_t)off[0], (int32_t)off[1], (int32_t)off[2], (int32_t)off[2]};
}

/* The rows the item reads, or -1 when some leaf is not read at a constant
 * offset on the kernel's level (or there are too many rows). */
static int vector_rows(const gk_t *k, gv_row_t rows[GV_MAX_ROWS]) {
  gv_collect_t c = {rows, 0, 0, 0};
  for (uint32_t i = 0; i < k->nnodes; i++) {
    gp_node_t *n = k->nodes[i];
    if (!gk_is_leaf(k, n)) {
      if (n->kind == GX_RESTRICT || n->kind == GX_PROLONG) return -1;
      continue;
    }
    if (n->level != k->base_level) return -1;
    c.slot = (uint32_t)k->slot[n->id];
    if (!gw_for_each_offset(k->plan, k->root, n, collect_offset, &c) || c.overflow) return -1;
  }
  return c.n;
}

int gv_cells(const gk_t *k) {
  const int v = HCG_VEC_BYTES / (int)hc_dtype_size(k->plan->dtype);
  if (k->lang == HC_LANG_HOST || k->host_eval || k->mode != GK_ASSIGN || k->parity != HC_GRID_ALL || k->staged ||
      k->n[2] % v != 0)
    return 0;
  gv_row_t rows[GV_MAX_ROWS];
  return vector_rows(k, rows) < 0 ? 0 : v;
}

void gv_value_name(uint32_t slot, const int64_t off[3], int plane, int cell, char *out, size_t n) {
  snprintf(out, n, "v%u_%d_%d_%d", slot, (int)off[0] + plane + HCG_MAX_OFFSET, (int)off[1] + HCG_MAX_OFFSET,
           (int)off[2] + cell + HCG_MAX_OFFSET);
}

static const char vector_component[4] = {'x', 'y', 'z', 'w'};

/* A column: the rows of one field at one offset across the rows (d1),
 * over every plane offset d0 it is read at; its reach is their union. */
typedef struct {
  uint32_t slot;
  int32_t d1, xmin, xmax;
  uint32_t d0mask; /* bit d0 + HCG_MAX_OFFSET */
} gv_col_t;

static int columns(const gv_row_t *rows, int nr, gv_col_t *cols) {
  int nc = 0;
  for (int r = 0; r < nr; r++) {
    int c = 0;
    while (c < nc && !(cols[c].slot == rows[r].slot && cols[c].d1 == rows[r].d1)) c++;
    if (c == nc) cols[nc++] = (gv_col_t){rows[r].slot, rows[r].d1, rows[r].xmin, rows[r].xmax, 0};
    if (rows[r].xmin < cols[c].xmin) cols[c].xmin = rows[r].xmin;
    if (rows[r].xmax > cols[c].xmax) cols[c].xmax = rows[r].xmax;
    cols[c].d0mask |= 1u << (rows[r].d0 + HCG_MAX_OFFSET);
  }
  return nc;
}

/* The column's row in plane p of the item (p = z + d0, z < Z): one
 * 16-byte load, then scalars for the reach past the item's cells. The
 * plane is clamped into the field: a plane past it is read only for
 * planes of the item past the box, which are not stored, and every load
 * is unconditional, so all of the item's are in flight together. */
static void emit_column_plane(gw_t *w, const gk_t *k, const gv_col_t *c, int p) {
  const int v = k->sched.vec;
  char ptr[16], i0[64], i1[32], idx[192];
  gs_field_name(c->slot, ptr, sizeof ptr);
  snprintf(i0, sizeof i0, "(ib + (%d) < n0 ? ib + (%d) : n0 - 1)", p, p);
  snprintf(i1, sizeof i1, "i1 + (%d)", c->d1);
  ge_lin_index(k->plan->rank, i0, i1, "x0", idx, sizeof idx);
  char o[48];
  snprintf(o, sizeof o, "o%u_%d_%d", c->slot, p + HCG_MAX_OFFSET, c->d1 + HCG_MAX_OFFSET);
  gw_put(w, "  const IDX %s = %s;\n", o, idx);
  gw_put(w, "  const VREAL w%s = *(HC_GLOBAL const VREAL *)(%s + %s);\n", o, ptr, o);
  const int lo = c->xmin < 0 ? c->xmin : 0, hi = v - 1 + (c->xmax > 0 ? c->xmax : 0);
  for (int j = lo; j <= hi; j++) {
    char name[48];
    const int64_t off[3] = {p, c->d1, j};
    gv_value_name(c->slot, off, 0, 0, name, sizeof name);
    if (j >= 0 && j < v)
      gw_put(w, "  const REAL %s = w%s.%c;\n", name, o, vector_component[j]);
    else
      gw_put(w, "  const REAL %s = x0 + (%d) >= 0 && x0 + (%d) < n2 ? %s[%s + (%d)] : (REAL)0;\n", name, j, j, ptr, o,
             j);
  }
}

/* An item whose V cells straddle the box's edge along the row loads the
 * destination's old values there with its other loads, so that its store
 * writes them back unchanged and always covers 16 bytes. A store of part
 * of a 32-byte sector makes the memory read and merge the rest (HBM with
 * ECC), so merged whole stores beat scalar stores at the edges
 * (tests/gpu/stencil_variants.py "preload", "merge", "whole" compare the
 * two with a ceiling that overwrites the cells outside). */
static void emit_partial_loads(gw_t *w, const gk_t *k) {
  const int v = k->sched.vec;
  char d[8];
  gs_field_name(0, d, sizeof d);
  gw_put(w, "  const int part = x0 < lo2 || x0 + %d > lo2 + c2;\n", v);
  for (int z = 0; z < k->sched.planes; z++) {
    char i0[32], idx[160];
    snprintf(i0, sizeof i0, "ib + %d", z);
    ge_lin_index(k->plan->rank, i0, "i1", "x0", idx, sizeof idx);
    gw_put(w, "  VREAL old%d;\n  if (part && %d < zn) old%d = *(HC_GLOBAL const VREAL *)(%s + %s);\n", z, z, z, d, idx);
  }
}

/* Plane z's cells of the item, from the preloaded values, and their store:
 * 16 bytes, the cells outside the box from emit_partial_loads. */
static void emit_plane(gw_t *w, const gk_t *k, int z) { /* after emit_partial_loads */
  const int v = k->sched.vec;
  char d[8];
  gs_field_name(0, d, sizeof d);
  gw_put(w, "  if (%d < zn) {\n  const IDX i0 = ib + %d;\n  REAL y%d[%d];\n", z, z, z, v);
  for (int u = 0; u < v; u++) {
    gw_put(w, "  {\n  const IDX i2 = x0 + %d;\n  (void)i2;\n", u);
    gw_memo_clear(w);
    w->vec_plane = z;
    w->vec_cell = u;
    gw_val_t val = gw_walk_root(w, k->root, 0);
    gw_put(w, "  y%d[%d] = %s;\n  }\n", z, u, val.s);
  }
  w->vec_cell = -1;
  gw_memo_clear(w);
  char idx[160];
  ge_lin_index(k->plan->rank, "i0", "i1", "x0", idx, sizeof idx);
  gw_put(w, "  const IDX od = %s;\n", idx);
  gw_put(w, "  if (!part) {\n  VREAL s;\n");
  for (int u = 0; u < v; u++) gw_put(w, "  s.%c = y%d[%d];\n", vector_component[u], z, u);
  gw_put(w, "  *(HC_GLOBAL VREAL *)(%s + od) = s;\n  } else {\n  VREAL s = old%d;\n", d, z);
  for (int u = 0; u < v; u++)
    gw_put(w, "  if (x0 + %d >= lo2 && x0 + %d < lo2 + c2) s.%c = y%d[%d];\n", u, u, vector_component[u], z, u);
  gw_put(w, "  *(HC_GLOBAL VREAL *)(%s + od) = s;\n  }\n  }\n", d);
}

/* Item (x0 / V, t1, tz) takes planes tz Z + z, z < Z: it loads every row
 * its Z planes read first (a row shared by two planes once), then computes
 * and stores plane by plane. */
int gv_emit_assign(gw_t *w, const gk_t *k) {
  const int v = k->sched.vec, zc = k->sched.planes;
  gv_row_t rows[GV_MAX_ROWS];
  gv_col_t cols[GV_MAX_ROWS];
  const int nr = vector_rows(k, rows);
  if (nr < 0) return -1; /* gv_cells admitted k: cannot happen */
  const int nc = columns(rows, nr, cols);
  gw_put(w, "  const IDX x0 = lo2 - lo2 %% %d + (IDX)hc_global_id(0) * %d;\n", v, v);
  gw_put(w, "  const IDX t1 = (IDX)hc_global_id(1), tz = %s;\n", gs_plane_chunk(k));
  gw_put(w, "  if (x0 >= lo2 + c2 || t1 >= c1) return;\n");
  gw_put(w, "  const IDX zn = c0 - tz * %d < %d ? c0 - tz * %d : %d;\n", zc, zc, zc, zc);
  gw_put(w, "  const IDX ib = lo0 + tz * %d, i1 = lo1 + t1;\n", zc);
  for (int c = 0; c < nc; c++)
    for (int p = -HCG_MAX_OFFSET; p < zc + HCG_MAX_OFFSET; p++) {
      int needed = 0;
      for (int z = 0; z < zc && !needed; z++) {
        int d0 = p - z;
        needed = d0 >= -HCG_MAX_OFFSET && d0 <= HCG_MAX_OFFSET && (cols[c].d0mask >> (d0 + HCG_MAX_OFFSET) & 1u);
      }
      if (needed) emit_column_plane(w, k, &cols[c], p);
    }
  emit_partial_loads(w, k);
  for (int z = 0; z < zc; z++) emit_plane(w, k, z);
  gw_put(w, "}\n");
  return 0;
}
