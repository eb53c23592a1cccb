/* The host row evaluator (host=eval): runs a kernel instance without a C
 * compiler. The cpu backend calls hcg_eval_host once per work-group; the
 * group finds the interval of the contiguous axis every node is needed on,
 * allocates its row caches, and evaluates the output rows (grid_eval_body.h,
 * compiled for float and double). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grid_internal.h"

#define EV_CACHE 8

typedef struct {
  int64_t r0, r1;
  uint64_t stamp;
  int valid;
} ev_tag_t;

typedef struct {
  int64_t a, b, w; /* interval of the contiguous axis, width */
  int reached;
  void *buf;       /* EV_CACHE rows of w values (scalars: one row) */
  ev_tag_t tag[EV_CACHE];
  int64_t ext[3];  /* extents of the node's level */
} ev_node_t;

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

static void widen(ev_node_t *c, int64_t a, int64_t b) {
  if (!c->reached || a < c->a) c->a = a;
  if (!c->reached || b > c->b) c->b = b;
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
  /* the root's interval for this group, then every operand's */
  ev_node_t *re = &nodes[nn - 1];
  if (k->parity != HC_GRID_ALL) {
    int64_t end = k->lo[2] + 2 * (int64_t)g->hi[0];
    if (end > k->lo[2] + k->cnt[2]) end = k->lo[2] + k->cnt[2];
    widen(re, k->lo[2] + 2 * (int64_t)g->lo[0], end - 1);
  } else {
    widen(re, k->lo[2] + (int64_t)g->lo[0], k->lo[2] + (int64_t)g->hi[0] - 1);
  }
  for (uint32_t i = nn; i-- > 0;) {
    const gp_node_t *n = k->nodes[i];
    ev_node_t *e = &nodes[i];
    gp_level_extents(k->plan, n->level, e->ext);
    if (!e->reached || gk_is_leaf(k, n) || !n->a) continue;
    int64_t a = e->a, b = e->b;
    if (n->kind == GX_STENCIL) {
      const gx_stencil_t *st = n->src->st;
      int64_t mn = 0, mx = 0;
      for (uint32_t p = 0; p < st->n; p++) {
        int64_t o = st->off[p][st->rank - 1];
        if (p == 0 || o < mn) mn = o;
        if (p == 0 || o > mx) mx = o;
      }
      a += mn;
      b += mx;
    } else if (n->kind == GX_RESTRICT) {
      a = 2 * a - 1;
      b = 2 * b + 1;
    } else if (n->kind == GX_PROLONG) {
      a = a >> 1;
      b = (b + 1) >> 1;
    }
    widen(&nodes[k->local[n->a->id]], a, b);
    if (n->b) widen(&nodes[k->local[n->b->id]], e->a, e->b);
  }
  int ok = 1;
  for (uint32_t i = 0; i < nn && ok; i++) {
    const gp_node_t *n = k->nodes[i];
    ev_node_t *e = &nodes[i];
    e->w = e->reached ? e->b - e->a + 1 : 0;
    if (!e->reached || gk_is_leaf(k, n)) continue;
    size_t rows = n->kind == GX_SCALAR ? 1 : EV_CACHE;
    e->buf = malloc(rows * (size_t)(e->w > 0 ? e->w : 1) * es);
    if (!e->buf) {
      ok = 0;
      break;
    }
    if (n->kind == GX_SCALAR) {
      double v = k->params[k->lparam0[n->id]];
      for (int64_t x = 0; x < e->w; x++) {
        if (f64) ((double *)e->buf)[x] = v;
        else ((float *)e->buf)[x] = (float)v;
      }
    }
  }
  if (ok && re->w > 0) {
    if (f64) group_f64(L, g, nodes);
    else group_f32(L, g, nodes);
  }
  for (uint32_t i = 0; i < nn; i++) free(nodes[i].buf);
  free(nodes);
}
