/* The row evaluator's body, included twice by grid_eval.c with EV_REAL
 * float or double and EV(name) giving the suffixed name. Every node value is
 * a row along the contiguous axis (internal axis 2) over the node's interval
 * [a, b] of that axis; dense rows are read in place, other rows come from a
 * small per-node LRU cache so that neighbouring output rows reuse them (a
 * stencil's operand row is computed once, not once per stencil point). Each
 * operation runs as simple loops over contiguous memory that the compiler
 * vectorises. A node holds at most one operand row pointer at a time (binary
 * operations copy the first operand into their output first), so the LRU
 * may evict any other row safely. Under a red-black range a row is asked
 * for by colour (EV_ALL in grid_eval.c), each colour computed over its own
 * interval, and a cached row may hold one colour only; the other is computed
 * into the same buffer when it is needed. */

typedef struct {
  const hcg_eval_launch_t *L;
  const gk_t *k;
  ev_node_t *nodes; /* by local index */
} EV(ev_state_t);

static const EV_REAL *EV(row)(EV(ev_state_t) * S, uint32_t li, int64_t r0, int64_t r1, int m);

static EV_REAL EV(param)(const EV(ev_state_t) * S, const gp_node_t *n, uint32_t i) {
  return (EV_REAL)S->k->params[S->k->lparam0[n->id] + i];
}

/* The cache slot of (r0, r1), tagged as holding colours m; *todo: those
 * of m it did not hold yet, for the caller to fill in. */
static EV_REAL *EV(slot)(ev_node_t *e, int64_t r0, int64_t r1, int m, int *todo) {
  int64_t m0 = r0 % e->w0, m1 = r1 % e->w1;
  if (m0 < 0) m0 += e->w0;
  if (m1 < 0) m1 += e->w1;
  size_t i = (size_t)(m0 * e->w1 + m1);
  ev_tag_t *t = &e->tag[i];
  if (t->r0 != r0 || t->r1 != r1) t->have = 0;
  *todo = m & ~t->have;
  t->have |= m;
  t->r0 = r0;
  t->r1 = r1;
  return (EV_REAL *)e->buf + i * (size_t)e->w;
}

static void EV(func)(EV(ev_state_t) * S, const gp_node_t *n, const ev_node_t *e, int64_t r0, int64_t r1, int64_t x0,
                     int64_t x1, EV_REAL *restrict out) {
  const hc_gfunc_t *f = &n->src->fn;
  const uint32_t r = S->k->plan->rank, ax0 = HCG_AX0(r);
  const int64_t w = e->w, a = e->a;
  const int64_t rr[3] = {r0, r1, 0};
  switch ((hc_gfunc_kind_t)f->kind) {
  case HC_GFUNC_COORD:
  case HC_GFUNC_INDEX: {
    uint32_t ax = ax0 + f->axis;
    EV_REAL o = f->kind == HC_GFUNC_COORD ? EV(param)(S, n, 0) : 0,
            h = f->kind == HC_GFUNC_COORD ? EV(param)(S, n, 1) : 1;
    if (ax == 2)
      EV_CELLS(out[x] = o + h * (EV_REAL)(a + x));
    else
      EV_CELLS(out[x] = o + h * (EV_REAL)rr[ax]);
    break;
  }
  case HC_GFUNC_SIN: {
    EV_REAL c = EV(param)(S, n, 0);
    for (uint32_t d = 0; d + 1 < r; d++) {
      uint32_t ax = ax0 + d;
      c *= (EV_REAL)sin((double)(EV(param)(S, n, 3 + 3 * d) *
                                 (EV(param)(S, n, 1 + 3 * d) + EV(param)(S, n, 2 + 3 * d) * (EV_REAL)rr[ax])));
    }
    const uint32_t d = r - 1;
    const EV_REAL o = EV(param)(S, n, 1 + 3 * d), h = EV(param)(S, n, 2 + 3 * d), kk = EV(param)(S, n, 3 + 3 * d);
    EV_CELLS(out[x] = c * (EV_REAL)sin((double)(kk * (o + h * (EV_REAL)(a + x)))));
    break;
  }
  case HC_GFUNC_GAUSS: {
    EV_REAL base = 0;
    for (uint32_t d = 0; d + 1 < r; d++) {
      EV_REAL dx =
          EV(param)(S, n, 2 + 3 * d) + EV(param)(S, n, 3 + 3 * d) * (EV_REAL)rr[ax0 + d] - EV(param)(S, n, 4 + 3 * d);
      base += dx * dx;
    }
    const uint32_t d = r - 1;
    const EV_REAL amp = EV(param)(S, n, 0), s = EV(param)(S, n, 1);
    const EV_REAL o = EV(param)(S, n, 2 + 3 * d), h = EV(param)(S, n, 3 + 3 * d), c = EV(param)(S, n, 4 + 3 * d);
    EV_CELLS(EV_REAL dx = o + h * (EV_REAL)(a + x) - c; out[x] = amp * (EV_REAL)exp((double)(-s * (base + dx * dx))));
    break;
  }
  case HC_GFUNC_POINT: {
    int on = 1;
    for (uint32_t d = 0; d + 1 < r; d++) on &= rr[ax0 + d] == (int64_t)EV(param)(S, n, 1 + d);
    EV_CELLS(out[x] = 0);
    /* t may be a cell not asked for (another colour): it gets its value early */
    int64_t t = (int64_t)EV(param)(S, n, r) - a;
    if (on && t >= 0 && t < w) out[t] = EV(param)(S, n, 0);
    break;
  }
  case HC_GFUNC_USER: {
    double xs[3] = {0, 0, 0}, prm[4];
    int64_t is[3] = {0, 0, 0};
    for (int i = 0; i < 4; i++) prm[i] = S->k->params[S->k->lparam0[n->id] + (uint32_t)i];
    for (uint32_t d = 0; d + 1 < r; d++) {
      is[d] = rr[ax0 + d];
      xs[d] = (double)EV(param)(S, n, 4 + 2 * d) + (double)EV(param)(S, n, 5 + 2 * d) * (double)is[d];
    }
    const uint32_t d = r - 1;
    const double o = (double)EV(param)(S, n, 4 + 2 * d), h = (double)EV(param)(S, n, 5 + 2 * d);
    EV_CELLS(is[d] = a + x; xs[d] = o + h * (double)is[d]; out[x] = (EV_REAL)f->host(xs, is, prm, f->user));
    break;
  }
  }
}

/* The row of local node li at rows (r0, r1) of its level: a pointer p with
 * p[x] the value at position a + x of the contiguous axis, valid at the
 * cells of colours m. */
static const EV_REAL *EV(row)(EV(ev_state_t) * S, uint32_t li, int64_t r0, int64_t r1, int m) {
  const gk_t *k = S->k;
  const gp_node_t *n = k->nodes[li];
  ev_node_t *e = &S->nodes[li];
  if (gk_is_leaf(k, n)) {
    const EV_REAL *base = (const EV_REAL *)S->L->ptr[k->slot[n->id]];
    return base + ((r0 * e->ext[1] + r1) * e->ext[2] + e->a);
  }
  if (n->kind == GX_SCALAR) return (const EV_REAL *)e->buf; /* filled at setup */
  int todo;
  EV_REAL *restrict out = EV(slot)(e, r0, r1, e->whole ? EV_ALL : m, &todo);
  if (!todo) return out;
  const uint32_t rank = k->plan->rank, ax0 = HCG_AX0(rank);
  const int64_t w = e->w;
  int64_t x0 = -1, x1 = w; /* EV_CELLS */
  if (todo != EV_ALL) {
    const int c = todo >> 1;
    x0 = e->xa[c] - e->a;
    x0 += (c ^ (r0 + r1 + e->a + x0)) & 1;
    x1 = e->xb[c] - e->a + 1;
  }
  const uint32_t ca = n->a ? (uint32_t)k->local[n->a->id] : 0, cb = n->b ? (uint32_t)k->local[n->b->id] : 0;
  switch (n->kind) {
  case GX_ADD:
  case GX_SUB:
  case GX_MUL: {
    /* One pass when an operand is a field or a scalar (fetching it touches
     * no cache, so both rows can be held); else copy the first operand out
     * before computing the second (see the top of this file). */
    const gp_node_t *na = n->a, *nb = n->b;
    const int la = gk_is_leaf(k, na) || na->kind == GX_SCALAR, lb = gk_is_leaf(k, nb) || nb->kind == GX_SCALAR;
    const EV_REAL *A, *B;
    if (la || lb) {
      if (lb) {
        A = EV(row)(S, ca, r0, r1, todo) + (e->a - S->nodes[ca].a);
        B = EV(row)(S, cb, r0, r1, todo) + (e->a - S->nodes[cb].a);
      } else {
        B = EV(row)(S, cb, r0, r1, todo) + (e->a - S->nodes[cb].a);
        A = EV(row)(S, ca, r0, r1, todo) + (e->a - S->nodes[ca].a);
      }
      if (n->kind == GX_ADD)
        EV_CELLS(out[x] = A[x] + B[x]);
      else if (n->kind == GX_SUB)
        EV_CELLS(out[x] = A[x] - B[x]);
      else
        EV_CELLS(out[x] = A[x] * B[x]);
      break;
    }
    A = EV(row)(S, ca, r0, r1, todo) + (e->a - S->nodes[ca].a);
    EV_CELLS(out[x] = A[x]);
    B = EV(row)(S, cb, r0, r1, todo) + (e->a - S->nodes[cb].a);
    if (n->kind == GX_ADD)
      EV_CELLS(out[x] += B[x]);
    else if (n->kind == GX_SUB)
      EV_CELLS(out[x] -= B[x]);
    else
      EV_CELLS(out[x] *= B[x]);
    break;
  }
  case GX_SCALE: {
    const EV_REAL s = EV(param)(S, n, 0);
    const EV_REAL *A = EV(row)(S, ca, r0, r1, todo) + (e->a - S->nodes[ca].a);
    EV_CELLS(out[x] = s * A[x]);
    break;
  }
  case GX_STENCIL: {
    const gx_stencil_t *st = n->src->st;
    int first = 1;
    for (uint32_t p = 0; p < st->n; p++) {
      int64_t o[3] = {0, 0, 0};
      for (uint32_t d = 0; d < st->rank; d++) o[ax0 + d] = st->off[p][d];
      const EV_REAL c = (EV_REAL)k->plan->params[n->param0 + p];
      if (c == 0) continue;
      /* an odd offset reads the operand's other colour */
      const int mo = (o[0] + o[1] + o[2]) & 1 ? ev_swap(todo) : todo;
      const EV_REAL *A = EV(row)(S, ca, r0 + o[0], r1 + o[1], mo) + (e->a + o[2] - S->nodes[ca].a);
      if (first)
        EV_CELLS(out[x] = c * A[x]);
      else
        EV_CELLS(out[x] += c * A[x]);
      first = 0;
    }
    if (first) EV_CELLS(out[x] = 0);
    break;
  }
  /* The operand of a restriction or prolongation is computed whole (see
   * ev_node_t.whole in grid_eval.c). */
  case GX_RESTRICT: {
    EV_CELLS(out[x] = 0);
    const int m0 = rank == 3 ? 3 : 1, m1 = rank >= 2 ? 3 : 1;
    for (int i0 = 0; i0 < m0; i0++)
      for (int i1 = 0; i1 < m1; i1++) {
        const int o0 = m0 == 3 ? i0 - 1 : 0, o1 = m1 == 3 ? i1 - 1 : 0;
        const int64_t f0 = m0 == 3 ? 2 * r0 + o0 : r0, f1 = m1 == 3 ? 2 * r1 + o1 : r1;
        const EV_REAL wt =
            (EV_REAL)((o0 ? 0.25 : 0.5) * (m0 == 3 ? 1.0 : 2.0) * (o1 ? 0.25 : 0.5) * (m1 == 3 ? 1.0 : 2.0));
        /* A[j] is the fine value at position 2 (a + x) + j - 1 for j = 0..2 */
        const EV_REAL *A = EV(row)(S, ca, f0, f1, EV_ALL) + (2 * e->a - 1 - S->nodes[ca].a);
        EV_CELLS(out[x] +=
                 wt * ((EV_REAL)0.25 * A[2 * x] + (EV_REAL)0.5 * A[2 * x + 1] + (EV_REAL)0.25 * A[2 * x + 2]));
      }
    break;
  }
  case GX_PROLONG: {
    EV_CELLS(out[x] = 0);
    int64_t c0[2] = {r0, r0}, c1[2] = {r1, r1};
    EV_REAL w0[2] = {1, 0}, w1[2] = {1, 0};
    if (rank == 3) {
      c0[0] = r0 >> 1;
      c0[1] = (r0 + 1) >> 1;
      w0[0] = (r0 & 1) ? (EV_REAL)0.5 : 1;
      w0[1] = (r0 & 1) ? (EV_REAL)0.5 : 0;
    }
    if (rank >= 2) {
      c1[0] = r1 >> 1;
      c1[1] = (r1 + 1) >> 1;
      w1[0] = (r1 & 1) ? (EV_REAL)0.5 : 1;
      w1[1] = (r1 & 1) ? (EV_REAL)0.5 : 0;
    }
    const ev_node_t *ce = &S->nodes[ca];
    for (int i0 = 0; i0 < 2; i0++)
      for (int i1 = 0; i1 < 2; i1++) {
        const EV_REAL wt = w0[i0] * w1[i1];
        if (wt == 0) continue;
        const EV_REAL *A = EV(row)(S, ca, c0[i0], c1[i1], EV_ALL) - ce->a; /* A[c]: coarse position c */
        if (x0 >= 0) { /* one colour: every position computed has the parity of a + x0 */
          if ((e->a + x0) & 1)
            for (int64_t x = x0; x < x1; x += 2) {
              const int64_t p = e->a + x;
              out[x] += wt * (EV_REAL)0.5 * (A[p >> 1] + A[(p + 1) >> 1]);
            }
          else
            for (int64_t x = x0; x < x1; x += 2) out[x] += wt * A[(e->a + x) >> 1];
          continue;
        }
        int64_t x = 0, p = e->a;
        if (p & 1) { /* odd first position */
          out[0] += wt * (EV_REAL)0.5 * (A[p >> 1] + A[(p + 1) >> 1]);
          x = 1;
        }
        for (; x + 1 < w; x += 2) {
          const int64_t c = (e->a + x) >> 1; /* even position 2c, then 2c + 1 */
          out[x] += wt * A[c];
          out[x + 1] += wt * (EV_REAL)0.5 * (A[c] + A[c + 1]);
        }
        if (x < w) out[x] += wt * A[(e->a + x) >> 1];
      }
    break;
  }
  case GX_FUNC: EV(func)(S, n, e, r0, r1, x0, x1, out); break;
  default: break;
  }
  return out;
}

/* One work-group: output rows of the group's box part. */
static void EV(group)(const hcg_eval_launch_t *L, const hc_host_group_t *g, ev_node_t *nodes) {
  const gk_t *k = L->k;
  EV(ev_state_t) S = {L, k, nodes};
  const uint32_t root = k->nnodes - 1;
  const int par = k->parity != HC_GRID_ALL;
  const int want = k->parity == HC_GRID_ODD;
  const ev_node_t *re = &nodes[root];
  double acc = 0;
  EV_REAL *D = k->mode == GK_ASSIGN ? (EV_REAL *)L->ptr[0] : NULL;
  for (size_t t0 = g->lo[2]; t0 < g->hi[2]; t0++) {
    const int64_t i0 = k->lo[0] + (int64_t)t0;
    for (size_t t1 = g->lo[1]; t1 < g->hi[1]; t1++) {
      const int64_t i1 = k->lo[1] + (int64_t)t1;
      /* the output cells' colour only (see EV_ALL) */
      const EV_REAL *v = EV(row)(&S, root, i0, i1, par ? 1 << want : EV_ALL);
      EV_REAL *drow = D ? D + (i0 * k->n[1] + i1) * k->n[2] : NULL;
      int64_t x0 = 0, step = 1;
      if (par) {
        x0 = ((i0 + i1 + re->a + want) & 1);
        step = 2;
      }
      if (D) {
        if (step == 1)
          for (int64_t x = 0; x < re->w; x++) drow[re->a + x] = v[x];
        else
          for (int64_t x = x0; x < re->w; x += 2) drow[re->a + x] = v[x];
      } else if (k->op == HC_GRID_MAXABS) {
        for (int64_t x = x0; x < re->w; x += step) {
          double a = fabs((double)v[x]);
          if (!isnan(acc) && !(a <= acc)) acc = a; /* a NaN is kept */
        }
      } else if (k->op == HC_GRID_SUMSQ) {
        for (int64_t x = x0; x < re->w; x += step) acc += (double)v[x] * (double)v[x];
      } else {
        for (int64_t x = x0; x < re->w; x += step) acc += (double)v[x];
      }
    }
  }
  if (!D) L->partial[g->group_id[0] + g->num_groups[0] * (g->group_id[1] + g->num_groups[1] * g->group_id[2])] = acc;
}
