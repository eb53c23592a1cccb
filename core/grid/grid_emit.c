/* Code generation: wraps the walk's straight-line values in a kernel.
 *
 * One text serves opencl-c and cuda-c (the portable dialect; the core
 * prepends the prelude); host kernels are C with the same body inside
 * loops over the work-group's rows (the inner loop runs along the
 * contiguous axis, so the compiler vectorises it). Variants:
 *   assign   one work-item per cell of the box (EVEN/ODD ranges: one per
 *            cell of that parity, packed along the fast axis);
 *   staged   (device languages) the shared sub-expression is computed once
 *            per work-group into a local-memory tile with halo; 3-D kernels
 *            march along axis 0 through a ring of 2R+1 planes;
 *   reduce   grid-stride loop, local-memory tree, one partial per group.
 *
 * The arguments are the schedule's (gs_schedule_t.args, grid_schedule.c):
 * each kind has one declaration form here, for device and host kernels.
 *
 * Computable parameters: COORD (origin, h); SIN (amplitude, then per axis
 * origin, h, k pi); GAUSS (amplitude, 1/2 sigma^2, per axis origin, h,
 * center); POINT (amplitude, per axis target index); USER (p0..p3, per
 * axis origin, h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid_walk.h"

/* The host kernel's view of hc_host_group_t: its text goes into generated
 * C, and the same declaration is compiled here so the layouts must agree. */
#define HCG_GROUP_DECL                                          \
  typedef struct {                                              \
    uint32_t dims, worker, num_workers, reserved_;              \
    size_t group_id[3], num_groups[3], lo[3], hi[3], global[3]; \
  } hcg_group_t;
#define HCG_STR_(...) #__VA_ARGS__
#define HCG_STR(...) HCG_STR_(__VA_ARGS__)
HCG_GROUP_DECL
_Static_assert(sizeof(hcg_group_t) == sizeof(hc_host_group_t), "hcg_group_t must mirror hc_host_group_t");
_Static_assert(offsetof(hcg_group_t, lo) == offsetof(hc_host_group_t, lo), "hcg_group_t must mirror hc_host_group_t");
_Static_assert(offsetof(hcg_group_t, global) == offsetof(hc_host_group_t, global),
               "hcg_group_t must mirror hc_host_group_t");

void ge_lin_index(uint32_t rank, const char *v0, const char *v1, const char *v2, char *out, size_t n) {
  if (rank == 3)
    snprintf(out, n, "((%s) * n1 + (%s)) * n2 + (%s)", v0, v1, v2);
  else if (rank == 2)
    snprintf(out, n, "(%s) * n2 + (%s)", v1, v2);
  else
    snprintf(out, n, "%s", v2);
}

static void emit_prologue(gw_t *w, const gk_t *k) {
  const gp_plan_t *p = k->plan;
  const int host = k->lang == HC_LANG_HOST;
  gw_put(w, "/* hc grid expression kernel (generated; key %.60s...) */\n", k->key);
  if (host) {
    gw_put(w, "#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <stdlib.h>\n");
    gw_put(w, "#define HC_KERNEL\n#define HC_INLINE static inline\n#define HC_GLOBAL\n#define HC_RESTRICT restrict\n");
    gw_put(w, "%s\n", HCG_STR(HCG_GROUP_DECL));
  }
  gw_put(w, "#define REAL %s\n", p->dtype == HC_F64 ? "double" : "float");
  gw_put(w, "typedef %s IDX;\n", k->idx64 ? "long" : "int");
  if (k->sched.vec) gw_put(w, "#define VREAL %s%d\n", p->dtype == HC_F64 ? "double" : "float", k->sched.vec);
  gw_put(w, "#ifndef HC_PI\n#define HC_PI 3.14159265358979323846\n#endif\n");
  if (k->mode == GK_REDUCE) {
    if (host)
      gw_put(w, "typedef double ACC;\n");
    else
      gw_put(w, "#ifdef HC_HAS_FP64\ntypedef double ACC;\n#else\ntypedef float ACC;\n#endif\n");
  }
  for (uint32_t i = 0; i < k->nnodes; i++) {
    const gp_node_t *n = k->nodes[i];
    if (n->kind != GX_FUNC || n->src->fn.kind != HC_GFUNC_USER || gk_is_leaf(k, n)) continue;
    gw_put(w,
           "HC_INLINE REAL hcg_user%u(const REAL x, const REAL y, const REAL z, const long i, const long j, const long "
           "k, const REAL p0, const REAL p1, const REAL p2, const REAL p3) {\n  return (REAL)(%s);\n}\n",
           i, n->src->source ? n->src->source : "0");
  }
}

/* Host kernels take their arguments as an array of pointers to them. */
static void emit_host_arg(gw_t *w, const gk_t *k, const gs_arg_t *a, uint32_t i) {
  switch (a->kind) {
  case GS_ARG_OUT:
    if (k->mode == GK_REDUCE)
      gw_put(w, "  ACC *%s = (ACC *)args[%u];\n", a->name, i);
    else
      gw_put(w, "  REAL *restrict %s = (REAL *)args[%u];\n", a->name, i);
    break;
  case GS_ARG_FIELD: gw_put(w, "  const REAL *restrict %s = (const REAL *)args[%u];\n", a->name, i); break;
  case GS_ARG_PARAMS: gw_put(w, "  const REAL *%s = (const REAL *)args[%u];\n", a->name, i); break;
  case GS_ARG_PARAM: gw_put(w, "  const REAL %s = *(const REAL *)args[%u];\n", a->name, i); break;
  case GS_ARG_INDEX: gw_put(w, "  const IDX %s = (IDX)*(const long *)args[%u];\n", a->name, i); break;
  case GS_ARG_LONG: gw_put(w, "  const long %s = *(const long *)args[%u];\n", a->name, i); break;
  }
}

static void emit_device_arg(gw_t *w, const gk_t *k, const gs_arg_t *a) {
  switch (a->kind) {
  case GS_ARG_OUT:
    if (k->mode == GK_REDUCE)
      gw_put(w, "HC_GLOBAL ACC *%s", a->name);
    else
      gw_put(w, "HC_GLOBAL REAL *HC_RESTRICT %s", a->name);
    break;
  case GS_ARG_FIELD: gw_put(w, "HC_GLOBAL const REAL *HC_RESTRICT %s", a->name); break;
  case GS_ARG_PARAMS: gw_put(w, "HC_GLOBAL const REAL *%s", a->name); break;
  case GS_ARG_PARAM: gw_put(w, "const REAL %s", a->name); break;
  case GS_ARG_INDEX: gw_put(w, "const long a_%s", a->name); break;
  case GS_ARG_LONG: gw_put(w, "const long %s", a->name); break;
  }
}

/* The parameters' values from their buffer. */
static void emit_params_from_buffer(gw_t *w, const gk_t *k, const gs_arg_t *a) {
  char pn[16];
  for (uint32_t i = 0; i < k->nparams; i++) {
    gs_param_name(i, pn, sizeof pn);
    gw_put(w, "  const REAL %s = %s[%u];\n", pn, a->name, i);
  }
}

static void emit_signature(gw_t *w, const gk_t *k) {
  const gs_schedule_t *s = &k->sched;
  if (k->lang == HC_LANG_HOST) {
    gw_put(w, "void hcg_kernel(const hcg_group_t *g, void *const *args) {\n");
    for (uint32_t i = 0; i < s->nargs; i++) {
      emit_host_arg(w, k, &s->args[i], i);
      if (s->args[i].kind == GS_ARG_PARAMS) emit_params_from_buffer(w, k, &s->args[i]);
    }
    return;
  }
  gw_put(w, "HC_KERNEL void hcg_kernel(");
  for (uint32_t i = 0; i < s->nargs; i++) {
    if (i) gw_put(w, ", ");
    emit_device_arg(w, k, &s->args[i]);
  }
  gw_put(w, ") {\n");
  /* the longs of the box into IDX, an axis group per line */
  for (uint32_t i = 0; i < s->nargs; i++) {
    const gs_arg_t *a = &s->args[i];
    if (a->kind == GS_ARG_PARAMS) emit_params_from_buffer(w, k, a);
    if (a->kind != GS_ARG_INDEX) continue;
    const int first = i == 0 || s->args[i - 1].kind != GS_ARG_INDEX || a->index == 0;
    const int last = i + 1 == s->nargs || s->args[i + 1].kind != GS_ARG_INDEX || s->args[i + 1].index == 0;
    gw_put(w, "%s%s = (IDX)a_%s%s", first ? "  const IDX " : ", ", a->name, a->name, last ? ";\n" : "");
  }
}

/* Extents of every level the kernel reads, relative to its own. */
static void emit_levels(gw_t *w, const gk_t *k) {
  int mn = 0, mx = 0;
  for (uint32_t i = 0; i < k->nnodes; i++) {
    int rel = k->nodes[i]->level - k->base_level;
    if (rel < mn) mn = rel;
    if (rel > mx) mx = rel;
  }
  uint32_t ax0 = HCG_AX0(k->plan->rank);
  for (int r = 1; r <= mx; r++)
    for (uint32_t a = ax0; a < 3; a++) {
      if (r == 1)
        gw_put(w, "  const IDX nc1_%u = (n%u + 1) >> 1;\n", a, a);
      else
        gw_put(w, "  const IDX nc%d_%u = (nc%d_%u + 1) >> 1;\n", r, a, r - 1, a);
    }
  for (int r = 1; r <= -mn; r++)
    for (uint32_t a = ax0; a < 3; a++) {
      if (r == 1)
        gw_put(w, "  const IDX nf1_%u = 2 * n%u - 1;\n", a, a);
      else
        gw_put(w, "  const IDX nf%d_%u = 2 * nf%d_%u - 1;\n", r, a, r - 1, a);
    }
  gw_put(w, "  (void)n0; (void)n1; (void)n2; (void)c0; (void)c1; (void)c2; (void)lo0; (void)lo1; (void)lo2;\n");
}

static const char *reduce_step(hc_grid_reduce_op_t op) {
  return op == HC_GRID_SUM     ? "acc += (ACC)(%s);\n"
         : op == HC_GRID_SUMSQ ? "acc += (ACC)(%s) * (ACC)(%s);\n"
                               /* keeps a NaN, which fmax would drop */
                               : "{ const ACC a_ = fabs((ACC)(%s)); acc = (isnan(acc) || a_ <= acc) ? acc : a_; }\n";
}

static void emit_accumulate(gw_t *w, const gk_t *k, const char *v) {
  gw_put(w, "  ");
  if (k->op == HC_GRID_SUMSQ)
    gw_put(w, reduce_step(k->op), v, v);
  else
    gw_put(w, reduce_step(k->op), v);
}

static void emit_store(gw_t *w, const gk_t *k, const char *v) {
  char idx[256];
  ge_lin_index(k->plan->rank, "i0", "i1", "i2", idx, sizeof idx);
  char d[8];
  gs_field_name(0, d, sizeof d);
  gw_put(w, "  %s[%s] = %s;\n", d, idx, v);
}

static void emit_host_loops(gw_t *w, const gk_t *k) {
  const int par = k->parity != HC_GRID_ALL;
  gw_put(w, "  for (IDX t0 = (IDX)g->lo[2]; t0 < (IDX)g->hi[2]; t0++) {\n  const IDX i0 = lo0 + t0;\n");
  gw_put(w, "  for (IDX t1 = (IDX)g->lo[1]; t1 < (IDX)g->hi[1]; t1++) {\n  const IDX i1 = lo1 + t1;\n");
  if (par) {
    gw_put(w, "  const IDX s2 = (i0 + i1 + lo2 + %d) & 1;\n", k->parity == HC_GRID_ODD);
    gw_put(w, "  IDX e2 = (c2 - s2 + 1) >> 1;\n  if (e2 > (IDX)g->hi[0]) e2 = (IDX)g->hi[0];\n");
    gw_put(w, "  for (IDX t2 = (IDX)g->lo[0]; t2 < e2; t2++) {\n  const IDX i2 = lo2 + 2 * t2 + s2;\n");
  } else {
    gw_put(w, "  for (IDX t2 = (IDX)g->lo[0]; t2 < (IDX)g->hi[0]; t2++) {\n  const IDX i2 = lo2 + t2;\n");
  }
  gw_val_t v = gw_walk_root(w, k->root, 0);
  if (k->mode == GK_REDUCE)
    emit_accumulate(w, k, v.s);
  else
    emit_store(w, k, v.s);
  gw_put(w, "  }\n  }\n  }\n");
}

void ge_tile_value(const gw_t *w, const int64_t off[3], char *out, size_t n) {
  const int32_t *R = w->rad;
  const long long o0 = (long long)off[0], o1 = (long long)off[1], o2 = (long long)off[2];
  if (w->host_stage) {
    /* slices along the marching axis (0 in 3-D, 1 otherwise) */
    if (w->p->rank == 3)
      snprintf(out, n,
               "T[(size_t)((zq - z0 + (%lld)) %% TW) * TN + (size_t)((i1 - ya + %d + (%lld)) * NX + (i2 - xa + %d + "
               "(%lld)))]",
               o0, R[1], o1, R[2], o2);
    else
      snprintf(out, n, "T[(size_t)((zq - z0 + (%lld)) %% TW) * TN + (size_t)(i2 - xa + %d + (%lld))]", o1, R[2], o2);
  } else if (w->p->rank == 3) {
    snprintf(out, n, "T[(((zq - zb + %d + (%lld)) %% TW) * TY + (ly + %d + (%lld))) * TX + (lx + %d + (%lld))]", R[0],
             o0 - R[0], R[1], o1, R[2], o2);
  } else if (w->p->rank == 2) {
    snprintf(out, n, "T[(ly + %d + (%lld)) * TX + (lx + %d + (%lld))]", R[1], o1, R[2], o2);
  } else {
    snprintf(out, n, "T[lx + %d + (%lld)]", R[2], o2);
  }
}

/* Host staging: the shared sub-expression is computed once per cell into a
 * window of 2R+1 slices (planes in 3-D, rows otherwise) that marches along
 * the slowest axis of the work-group's box; the expression then reads its
 * neighbours from the window. Without memory for the window, the plain
 * recomputing loops run instead. */
static void emit_host_staged(gw_t *w, const gk_t *k, gp_node_t *s) {
  const uint32_t rank = k->plan->rank;
  const int32_t *R = w->rad;
  const int m3 = rank == 3;
  const int Rm = m3 ? R[0] : R[1];
  gw_put(w, "#define TW %d\n", 2 * Rm + 1);
  if (m3) {
    gw_put(w, "  const IDX z0 = lo0 + (IDX)g->lo[2], z1 = lo0 + (IDX)g->hi[2], nm = n0;\n");
    gw_put(w, "  const IDX ya = lo1 + (IDX)g->lo[1], yb = lo1 + (IDX)g->hi[1];\n");
    gw_put(w, "  const IDX NY = yb - ya + %d;\n", 2 * R[1]);
  } else {
    gw_put(w, "  const IDX z0 = lo1 + (IDX)g->lo[1], z1 = lo1 + (IDX)g->hi[1], nm = n1;\n");
    gw_put(w, "  const IDX NY = 1;\n");
  }
  gw_put(w, "  const IDX xa = lo2 + (IDX)g->lo[0], xb = lo2 + (IDX)g->hi[0];\n");
  gw_put(w, "  const IDX NX = xb - xa + %d;\n  const size_t TN = (size_t)NY * (size_t)NX;\n", 2 * R[2]);
  gw_put(w, "  REAL *T = (REAL *)malloc(sizeof(REAL) * TW * TN);\n  if (!T) {\n");
  w->stage = NULL; /* the fallback recomputes */
  emit_host_loops(w, k);
  w->stage = s;
  gw_memo_clear(w);
  gw_put(w, "  return;\n  }\n");
  gw_put(w, "  const IDX xs = xa - %d < 0 ? %d - xa : 0, xe = xb + %d > n2 ? NX - (xb + %d - n2) : NX;\n", R[2], R[2],
         R[2], R[2]);
  gw_put(w, "  for (IDX zq = z0 - %d; zq < z1 + %d; zq++) {\n", Rm, Rm);
  gw_put(w, "  REAL *Ts = T + (size_t)((zq - z0 + %d) %% TW) * TN;\n", Rm);
  gw_put(w, "  if (zq >= 0 && zq < nm) {\n");
  if (m3) {
    gw_put(w, "  for (IDX y = 0; y < NY; y++) {\n  const IDX q0 = zq, q1 = ya - %d + y;\n", R[1]);
    gw_put(w, "  if (q1 < 0 || q1 >= n1) continue;\n  REAL *Tr = Ts + (size_t)y * NX;\n");
  } else {
    gw_put(w, "  {\n  const IDX q0 = 0, q1 = zq;\n  REAL *Tr = Ts;\n");
  }
  gw_put(w, "  for (IDX x = xs; x < xe; x++) {\n  const IDX q2 = xa - %d + x;\n", R[2]);
  gw_memo_clear(w);
  gw_val_t sv = gw_walk_root(w, s, 3);
  gw_memo_clear(w);
  gw_put(w, "  Tr[x] = %s;\n  }\n  }\n  }\n", sv.s);
  gw_put(w, "  const IDX im = zq - %d;\n  if (im < z0) continue;\n", Rm);
  if (m3)
    gw_put(w, "  const IDX i0 = im;\n  for (IDX i1 = ya; i1 < yb; i1++) {\n");
  else
    gw_put(w, "  const IDX i0 = 0, i1 = im;\n  {\n");
  gw_put(w, "  for (IDX i2 = xa; i2 < xb; i2++) {\n");
  gw_val_t v = gw_walk_root(w, k->root, 0);
  gw_memo_clear(w);
  emit_store(w, k, v.s);
  gw_put(w, "  }\n  }\n  }\n  free(T);\n#undef TW\n");
}

static void emit_host(gw_t *w, const gk_t *k, gp_node_t *s) {
  if (k->mode == GK_REDUCE) gw_put(w, "  ACC acc = 0;\n");
  if (s)
    emit_host_staged(w, k, s);
  else
    emit_host_loops(w, k);
  if (k->mode == GK_REDUCE)
    gw_put(w, "  " GS_NAME_PARTIAL
              "[g->group_id[0] + g->num_groups[0] * (g->group_id[1] + g->num_groups[1] * g->group_id[2])] = acc;\n");
  gw_put(w, "}\n");
}

static void emit_cell_of_thread(gw_t *w, const gk_t *k, const char *t0, const char *t1, const char *t2) {
  gw_put(w, "  const IDX i0 = lo0 + %s, i1 = lo1 + %s;\n", t0, t1);
  if (k->parity != HC_GRID_ALL)
    gw_put(w, "  const IDX i2 = lo2 + 2 * %s + ((i0 + i1 + lo2 + %d) & 1);\n", t2, k->parity == HC_GRID_ODD);
  else
    gw_put(w, "  const IDX i2 = lo2 + %s;\n", t2);
}

/* The body of an item's unrolled loop over its cells: the cell (t0, t1,
 * t2), `past` (break or continue) where a colour's cell falls past the
 * range, the expression and its store; closes the loop and the kernel. */
static void emit_unrolled_cell(gw_t *w, const gk_t *k, const char *past) {
  emit_cell_of_thread(w, k, "t0", "t1", "t2");
  if (k->parity != HC_GRID_ALL) gw_put(w, "  if (i2 >= lo2 + c2) %s;\n", past);
  gw_val_t v = gw_walk_root(w, k->root, 0);
  emit_store(w, k, v.s);
  gw_put(w, "  }\n}\n");
}

/* GS_PLANES (gs_launch_shape): 2-D groups, item (t2, t1, tz) takes planes
 * tz Z + z, z < Z; the loop is unrolled so that the compiler can share the
 * planes' common neighbours. */
static void emit_device_planes(gw_t *w, const gk_t *k) {
  gw_put(w, "  const IDX t2 = (IDX)hc_global_id(0), t1 = (IDX)hc_global_id(1), tz = %s;\n", gs_plane_chunk(k));
  gw_put(w, "  if (t2 >= %s || t1 >= c1) return;\n", k->parity != HC_GRID_ALL ? "((c2 + 1) >> 1)" : "c2");
  gw_put(w, "#pragma unroll\n  for (int z = 0; z < %d; z++) {\n  const IDX t0 = tz * %d + (IDX)z;\n", k->sched.planes,
         k->sched.planes);
  gw_put(w, "  if (t0 >= c0) break;\n");
  emit_unrolled_cell(w, k, "continue"); /* a plane past a colour's end: the next plane may have one */
}

/* GS_ROWS (gs_launch_shape): axis 0 covers the fast extent / U
 * (sched.unroll); item x of group g takes cells (g U + u) B + x, u < U, B
 * the group width. */
static void emit_device_rows(gw_t *w, const gk_t *k) {
  gw_put(w, "  const IDX t1 = (IDX)hc_global_id(1), t0 = (IDX)hc_global_id(2);\n");
  gw_put(w, "  if (t0 >= c0 || t1 >= c1) return;\n");
  gw_put(w, "  const IDX w2 = %s, bw = (IDX)hc_local_size(0);\n", k->parity != HC_GRID_ALL ? "(c2 + 1) >> 1" : "c2");
  gw_put(w, "  const IDX x0 = (IDX)hc_group_id(0) * bw * %d + (IDX)hc_local_id(0);\n", k->sched.unroll);
  gw_put(w, "#pragma unroll\n  for (int u = 0; u < %d; u++) {\n  const IDX t2 = x0 + (IDX)u * bw;\n", k->sched.unroll);
  gw_put(w, "  if (t2 >= w2) break;\n");
  emit_unrolled_cell(w, k, "break"); /* t2 grows with u: past the end, so are the rest */
}

static void emit_device_reduce(gw_t *w, const gk_t *k) {
  gw_put(w, "  HC_LOCAL ACC red[%d];\n  const int lid = (int)hc_local_id(0);\n  ACC acc = 0;\n", HCG_REDUCE_LOCAL);
  gw_put(w, "  const IDX w2 = %s;\n", k->parity != HC_GRID_ALL ? "(c2 + 1) >> 1" : "c2");
  gw_put(w, "  for (long t = hc_global_id(0); t < " GS_NAME_CELLS "; t += hc_global_size(0)) {\n");
  gw_put(w, "  const IDX t2 = (IDX)(t %% w2), r = (IDX)(t / w2);\n  const IDX t1 = r %% c1, t0 = r / c1;\n");
  emit_cell_of_thread(w, k, "t0", "t1", "t2");
  if (k->parity != HC_GRID_ALL) gw_put(w, "  if (i2 >= lo2 + c2) continue;\n");
  gw_val_t v = gw_walk_root(w, k->root, 0);
  emit_accumulate(w, k, v.s);
  gw_put(w, "  }\n  red[lid] = acc;\n  HC_BARRIER();\n");
  gw_put(w, "  for (int s = %d; s > 0; s >>= 1) {\n    if (lid < s) ", HCG_REDUCE_LOCAL / 2);
  if (k->op == HC_GRID_MAXABS)
    gw_put(w, "red[lid] = (isnan(red[lid]) || red[lid + s] <= red[lid]) ? red[lid] : red[lid + s];\n");
  else
    gw_put(w, "red[lid] += red[lid + s];\n");
  gw_put(w, "    HC_BARRIER();\n  }\n  if (lid == 0) " GS_NAME_PARTIAL "[hc_group_id(0)] = red[0];\n}\n");
}

/* The staged node, its radius and the tile geometry. */
static gp_node_t *staged_node(const gk_t *k) {
  for (uint32_t i = 0; i < k->nnodes; i++)
    if (k->nodes[i]->staged && !gk_is_leaf(k, k->nodes[i]) && k->nodes[i] != k->root) return k->nodes[i];
  return NULL;
}

/* The staged node's value at tile cell s of plane `q0expr` into `val` (0
 * outside the field); `guard` is a further condition, or "". */
static void emit_tile_value(gw_t *w, gp_node_t *s, const char *q0expr, const char *guard) {
  gw_put(w, "  const IDX q0 = %s, q1 = b1 + s / TX, q2 = b2 + s %% TX;\n", q0expr);
  gw_put(w, "  REAL val = (REAL)0;\n");
  gw_put(w, "  if (%sq0 >= 0 && q0 < n0 && q1 >= 0 && q1 < n1 && q2 >= 0 && q2 < n2) {\n", guard);
  gw_memo_clear(w);
  gw_val_t v = gw_walk_root(w, s, 3);
  gw_memo_clear(w);
  gw_put(w, "  val = %s;\n  }\n", v.s);
}

/* 1-D and 2-D: loads the tile of the staged node (s loops over its cells). */
static void emit_tile_load(gw_t *w, gp_node_t *s) {
  gw_put(w, "  for (int s = lid; s < TX * TY; s += BX * BY) {\n");
  emit_tile_value(w, s, "0", "");
  gw_put(w, "  T[s] = val;\n  }\n");
}

/* Marching (3-D): the staged node's values of plane `q0expr` into the
 * registers pf[0..NT), NT tile cells per item; they go into the ring one
 * plane later, so the loads of the next plane are in flight while the
 * current one is computed. */
static void emit_tile_prefetch(gw_t *w, gp_node_t *s, const char *q0expr) {
  gw_put(w, "#pragma unroll\n  for (int u = 0; u < NT; u++) {\n  const int s = lid + u * BX * BY;\n");
  emit_tile_value(w, s, q0expr, "s < TX * TY && ");
  gw_put(w, "  pf[u] = val;\n  }\n");
}

static void emit_device_staged(gw_t *w, const gk_t *k, gp_node_t *s) {
  const uint32_t rank = k->plan->rank;
  const int32_t *R = w->rad;
  const int bx = rank == 1 ? HCG_STAGE_BX1 : HCG_STAGE_BX, by = rank == 1 ? 1 : HCG_STAGE_BY;
  gw_put(w, "#define BX %d\n#define BY %d\n#define TX %d\n#define TY %d\n#define TW %d\n", bx, by, bx + 2 * R[2],
         by + 2 * R[1], 2 * R[0] + 1);
  gw_put(w, "  HC_LOCAL REAL T[%d];\n", (bx + 2 * R[2]) * (by + 2 * R[1]) * (rank == 3 ? 2 * R[0] + 1 : 1));
  gw_put(w,
         "  const IDX lx = (IDX)hc_local_id(0), ly = (IDX)hc_local_id(1);\n  const int lid = (int)(ly * BX + lx);\n");
  gw_put(w, "  const IDX t2 = (IDX)hc_global_id(0), t1 = (IDX)hc_global_id(1);\n");
  gw_put(w, "  const IDX b2 = lo2 + (IDX)hc_group_id(0) * BX - %d, b1 = lo1 + (IDX)hc_group_id(1) * BY - %d;\n", R[2],
         R[1]);
  gw_put(w, "  const int inside = t1 < c1 && t2 < c2;\n");
  gw_put(w, "  const IDX i1 = lo1 + t1, i2 = lo2 + t2;\n");
  if (rank == 3) {
    gw_put(w, "  const IDX zb = lo0 + (IDX)hc_group_id(2) * %d;\n", HCG_STAGE_CZ);
    gw_put(w, "  const IDX ze = zb + %d < lo0 + c0 ? zb + %d : lo0 + c0;\n", HCG_STAGE_CZ, HCG_STAGE_CZ);
    gw_put(w, "#define NT ((TX * TY + BX * BY - 1) / (BX * BY))\n  REAL pf[NT];\n");
    char q0[64];
    snprintf(q0, sizeof q0, "zb - %d", R[0]);
    emit_tile_prefetch(w, s, q0);
    gw_put(w, "  for (IDX zq = zb - %d; zq < ze + %d; zq++) {\n", R[0], R[0]);
    gw_put(w, "  const int slot = (int)((zq - zb + %d) %% TW);\n", R[0]);
    gw_put(w, "#pragma unroll\n  for (int u = 0; u < NT; u++)\n"
              "    if (lid + u * BX * BY < TX * TY) T[slot * TX * TY + lid + u * BX * BY] = pf[u];\n");
    gw_put(w, "  if (zq + 1 < ze + %d) {\n", R[0]);
    emit_tile_prefetch(w, s, "zq + 1");
    gw_put(w, "  }\n");
    gw_put(w, "  HC_BARRIER();\n  const IDX i0 = zq - %d;\n  if (i0 >= zb && inside) {\n", R[0]);
    gw_val_t v = gw_walk_root(w, k->root, 0);
    emit_store(w, k, v.s);
    gw_memo_clear(w);
    gw_put(w, "  }\n  HC_BARRIER();\n  }\n}\n");
  } else {
    gw_put(w, "  const IDX i0 = 0;\n");
    emit_tile_load(w, s);
    gw_put(w, "  HC_BARRIER();\n  if (inside) {\n");
    gw_val_t v = gw_walk_root(w, k->root, 0);
    emit_store(w, k, v.s);
    gw_put(w, "  }\n}\n");
  }
  gw_put(w, "#undef BX\n#undef BY\n#undef TX\n#undef TY\n#undef TW\n#undef NT\n");
}

hc_status_t ge_emit(const gk_t *k, char **out) {
  *out = NULL;
  gw_t w;
  hc_status_t st = gw_init(&w, k->plan, k, k->root, 1, 1);
  if (st != HC_OK) return st;
  gp_node_t *s = k->staged ? staged_node(k) : NULL;
  if (s && gw_stage_radius(k->plan, k->root, s, w.rad) != 0) {
    gw_fini(&w);
    return hc_error(HC_ERR_INTERNAL, "grid codegen: staged node is not eligible");
  }
  emit_prologue(&w, k);
  emit_signature(&w, k);
  emit_levels(&w, k);
  w.stage = s;
  w.host_stage = k->lang == HC_LANG_HOST;
  switch (k->sched.variant) {
  case GS_EVAL: st = hc_error(HC_ERR_INTERNAL, "grid codegen: the evaluator's instance has no source"); break;
  case GS_HOST: emit_host(&w, k, s); break;
  case GS_REDUCE: emit_device_reduce(&w, k); break;
  case GS_STAGED: emit_device_staged(&w, k, s); break;
  case GS_VECTOR:
    if (gv_emit_assign(&w, k) != 0)
      st = hc_error(HC_ERR_INTERNAL, "grid codegen: vector kernel for an ineligible expression");
    break;
  case GS_PLANES: emit_device_planes(&w, k); break;
  case GS_ROWS: emit_device_rows(&w, k); break;
  }
  if (st == HC_OK && w.fail) st = hc_error(HC_ERR_NO_MEMORY, "grid codegen: out of memory");
  if (st == HC_OK) {
    *out = w.buf;
    w.buf = NULL;
  }
  gw_fini(&w);
  return st;
}
