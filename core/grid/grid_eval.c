/* The host row evaluator (host=eval): runs a kernel instance without a C
 * compiler. The cpu backend calls hcg_eval_host once per work-group; the
 * group finds the interval of the contiguous axis every node is needed on,
 * allocates its row caches, and evaluates the output rows (grid_eval_body.h,
 * compiled for float and double). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"

/* Row cache of a node read at several positions per output cell: rows are
 * direct-mapped on (r0 mod w0, r1 mod w1). In 3-D, w1 covers the node's
 * whole plane and w0 a window of planes, so a row is computed once per
 * work-group however many output rows read it (the evaluator's staging:
 * Δ(f + g) adds f and g once per cell, like the materialised form, without
 * the temporary's traffic); in 2-D a window of rows. */
#define EV_PLANES 8
#define EV_ROWS 8

typedef struct {
  int64_t r0, r1;
  int have; /* colours of the row computed (EV_ALL: every cell) */
} ev_tag_t;

/* Cells of a row by colour, for red-black (EVEN/ODD) ranges: bit c stands
 * for the cells whose level indices (r0 + r1 + position) have parity c. A
 * sweep in place computes a node only at the colours its output cells need,
 * each over its own interval: any other cell may read a cell of the
 * assigned field that another work-group is writing (a data race, even
 * though the value would be discarded). */
#define EV_ALL 3

/* Runs the statement for every cell x of the row to compute: all of them
 * when x0 < 0 (a unit-stride loop the compiler vectorises), else every
 * second cell of [x0, x1) (one colour over its interval). */
#define EV_CELLS(...)                        \
  do {                                       \
    if (x0 < 0)                              \
      for (int64_t x = 0; x < w; x++) {      \
        __VA_ARGS__;                         \
      }                                      \
    else                                     \
      for (int64_t x = x0; x < x1; x += 2) { \
        __VA_ARGS__;                         \
      }                                      \
  } while (0)

typedef struct {
  int64_t a, b, w;      /* interval of the contiguous axis, width */
  int64_t lo[2], hi[2]; /* rows of axes 0 and 1 it is read at (this group) */
  int reached;
  int cols;             /* colours it is read at */
  int64_t xa[2], xb[2]; /* interval of each of them (within [a, b]) */
  int whole;            /* computed at every cell of [a, b], as read: not
                           red-black, or under a restriction or prolongation
                           (where no sweep in place reads the assigned field) */
  void *buf;            /* w0 * w1 rows of w values (scalars: one row) */
  ev_tag_t *tag;
  int64_t w0, w1;
  int64_t ext[3]; /* extents of the node's level */
} ev_node_t;

/* The colours of an operand read at an odd offset. */
static inline int ev_swap(int m) { return ((m & 1) << 1) | (m >> 1); }

#define EV_REAL float
#define EV(name) name##_f32
#include "grid_eval_body.h"
#undef EV_REAL
#undef EV

#define EV_REAL double
#define EV(name) name##_f64
#include "grid_eval_body.h"
#undef EV_REAL
#undef EV

static void widen(ev_node_t *c, const int64_t lo[3], const int64_t hi[3], int cols) {
  if (!c->reached || lo[2] < c->a) c->a = lo[2];
  if (!c->reached || hi[2] > c->b) c->b = hi[2];
  for (int d = 0; d < 2; d++) {
    if (!c->reached || lo[d] < c->lo[d]) c->lo[d] = lo[d];
    if (!c->reached || hi[d] > c->hi[d]) c->hi[d] = hi[d];
  }
  for (int q = 0; q < 2; q++) {
    if (!(cols >> q & 1)) continue;
    if (!(c->cols >> q & 1) || lo[2] < c->xa[q]) c->xa[q] = lo[2];
    if (!(c->cols >> q & 1) || hi[2] > c->xb[q]) c->xb[q] = hi[2];
  }
  c->cols |= cols;
  c->whole |= cols == EV_ALL;
  c->reached = 1;
}

void hcg_eval_host(const hc_host_group_t *g, void *const *args) {
  const hcg_eval_launch_t *L = (const hcg_eval_launch_t *)(uintptr_t)(*(const uint64_t *)args[0]);
  const gk_t *k = L->k;
  const uint32_t nn = k->nnodes;
  const int f64 = k->plan->dtype == HC_F64;
  const size_t es = f64 ? 8 : 4;
  ev_node_t *nodes = calloc(nn, sizeof *nodes);
  if (!nodes) return; /* cannot report from a work-group; the launch stays incomplete */
  /* the root's interval for this group, then every operand's (per colour
   * under a red-black range, see EV_ALL) */
  ev_node_t *re = &nodes[nn - 1];
  {
    int64_t lo[3] = {k->lo[0] + (int64_t)g->lo[2], k->lo[1] + (int64_t)g->lo[1], 0};
    int64_t hi[3] = {k->lo[0] + (int64_t)g->hi[2] - 1, k->lo[1] + (int64_t)g->hi[1] - 1, 0};
    if (k->parity != HC_GRID_ALL) {
      int64_t end = k->lo[2] + 2 * (int64_t)g->hi[0];
      if (end > k->lo[2] + k->cnt[2]) end = k->lo[2] + k->cnt[2];
      lo[2] = k->lo[2] + 2 * (int64_t)g->lo[0];
      hi[2] = end - 1;
    } else {
      lo[2] = k->lo[2] + (int64_t)g->lo[0];
      hi[2] = k->lo[2] + (int64_t)g->hi[0] - 1;
    }
    widen(re, lo, hi, k->parity == HC_GRID_ALL ? EV_ALL : 1 << (k->parity == HC_GRID_ODD));
  }
  const uint32_t ax0 = HCG_AX0(k->plan->rank);
  for (uint32_t i = nn; i-- > 0;) {
    const gp_node_t *n = k->nodes[i];
    ev_node_t *e = &nodes[i];
    gp_level_extents(k->plan, n->level, e->ext);
    if (!e->reached || gk_is_leaf(k, n) || !n->a) continue;
    ev_node_t *ca = &nodes[k->local[n->a->id]], *cb = n->b ? &nodes[k->local[n->b->id]] : NULL;
    if (e->whole) { /* both colours over the whole interval, and so its operands */
      e->cols = EV_ALL;
      e->xa[0] = e->xa[1] = e->a;
      e->xb[0] = e->xb[1] = e->b;
    }
    const int all = e->whole ? EV_ALL : 0;
    if (n->kind == GX_STENCIL) {
      /* the offsets of even and of odd sum apart: an odd one reads the
       * operand's other colour */
      const gx_stencil_t *st = n->src->st;
      int64_t mn[2][3] = {{0}}, mx[2][3] = {{0}};
      int any[2] = {0, 0};
      for (uint32_t p = 0; p < st->n; p++) {
        int64_t o[3] = {0, 0, 0};
        for (uint32_t d = 0; d < st->rank; d++) o[ax0 + d] = st->off[p][d];
        const int q = (int)((o[0] + o[1] + o[2]) & 1);
        for (int a = 0; a < 3; a++) {
          if (!any[q] || o[a] < mn[q][a]) mn[q][a] = o[a];
          if (!any[q] || o[a] > mx[q][a]) mx[q][a] = o[a];
        }
        any[q] = 1;
      }
      for (int q = 0; q < 2; q++)
        for (int c = 0; c < 2 && any[q]; c++) {
          if (!(e->cols >> c & 1)) continue;
          int64_t lo[3] = {e->lo[0] + mn[q][0], e->lo[1] + mn[q][1], e->xa[c] + mn[q][2]};
          int64_t hi[3] = {e->hi[0] + mx[q][0], e->hi[1] + mx[q][1], e->xb[c] + mx[q][2]};
          widen(ca, lo, hi, all | 1 << (c ^ q));
        }
    } else if (n->kind == GX_RESTRICT || n->kind == GX_PROLONG) {
      int64_t lo[3] = {e->lo[0], e->lo[1], e->a}, hi[3] = {e->hi[0], e->hi[1], e->b};
      for (uint32_t a = ax0; a < 3; a++) {
        if (n->kind == GX_RESTRICT)
          lo[a] = 2 * lo[a] - 1, hi[a] = 2 * hi[a] + 1;
        else
          lo[a] = lo[a] >> 1, hi[a] = (hi[a] + 1) >> 1;
      }
      widen(ca, lo, hi, EV_ALL);
    } else {
      for (int c = 0; c < 2; c++) {
        if (!(e->cols >> c & 1)) continue;
        int64_t lo[3] = {e->lo[0], e->lo[1], e->xa[c]}, hi[3] = {e->hi[0], e->hi[1], e->xb[c]};
        widen(ca, lo, hi, all | 1 << c);
        if (cb) widen(cb, lo, hi, all | 1 << c);
      }
    }
  }
  int ok = 1;
  for (uint32_t i = 0; i < nn && ok; i++) {
    const gp_node_t *n = k->nodes[i];
    ev_node_t *e = &nodes[i];
    e->w = e->reached ? e->b - e->a + 1 : 0;
    if (!e->reached || gk_is_leaf(k, n)) continue;
    int64_t r0 = e->hi[0] - e->lo[0] + 1, r1 = e->hi[1] - e->lo[1] + 1;
    e->w0 = e->w1 = 1;
    if (n->kind != GX_SCALAR && n->npos > 1) {
      if (r0 > 1) {
        e->w0 = r0 < EV_PLANES ? r0 : EV_PLANES;
        e->w1 = r1;
      } else {
        e->w1 = r1 < EV_ROWS ? r1 : EV_ROWS;
      }
    }
    size_t rows = (size_t)(e->w0 * e->w1);
    e->buf = malloc(rows * (size_t)(e->w > 0 ? e->w : 1) * es);
    e->tag = calloc(rows, sizeof *e->tag);
    if (!e->buf || !e->tag) {
      ok = 0;
      break;
    }
    if (n->kind == GX_SCALAR) {
      double v = k->params[k->lparam0[n->id]];
      for (int64_t x = 0; x < e->w; x++) {
        if (f64)
          ((double *)e->buf)[x] = v;
        else
          ((float *)e->buf)[x] = (float)v;
      }
    }
  }
  if (ok && re->w > 0) {
    if (f64)
      group_f64(L, g, nodes);
    else
      group_f32(L, g, nodes);
  }
  for (uint32_t i = 0; i < nn; i++) {
    free(nodes[i].buf);
    free(nodes[i].tag);
  }
  free(nodes);
}
