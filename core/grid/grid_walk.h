/* The symbolic walk over a plan shared by the analysis passes (distinct
 * positions per node, staged-tile radius, in-place offsets) and the code
 * generator: a node is evaluated at a *position*, one index variable plus
 * a constant offset per internal axis; operators derive their operands'
 * positions (a stencil adds its offsets, a restriction doubles, a
 * prolongation halves), and (node, position) pairs are memoised, so every
 * distinct value is computed once per output cell — common
 * sub-expressions of the fused kernel are shared, never recomputed. */
#ifndef HC_CORE_GRID_WALK_H
#define HC_CORE_GRID_WALK_H

#include "grid_internal.h"

typedef struct {
  int32_t var[3];
  int64_t off[3];
} gw_pos_t;

enum { GW_VAR_ROOT, GW_VAR_QROOT, GW_VAR_DBL, GW_VAR_HALF, GW_VAR_HALFUP, GW_VAR_PARW };

typedef struct {
  int kind;
  int32_t parent;
  int64_t off;
} gw_var_t;

typedef struct {
  uint32_t node;
  gw_pos_t pos;
  int32_t val; /* temp number, or -1: empty slot */
} gw_memo_t;

typedef struct gw {
  gp_plan_t *p;
  const gk_t *k; /* emitting: the kernel instance (NULL in analysis) */
  gp_node_t *root;
  int stop_mat; /* materialised nodes other than root are leaves */
  int emit;
  gw_var_t *vars;
  uint32_t nvars, vcap;
  gw_memo_t *memo;
  uint32_t mcap, mcount;
  int32_t ntemps;
  char *buf;
  size_t len, cap;
  int fail;
  /* staged kernels */
  gp_node_t *stage; /* read from the tile at root-relative positions */
  int host_stage;   /* the tile is the host kernel's window of slices */
  int32_t rad[3];
  /* vector kernels (grid_vector.c): the cell of the item being emitted,
   * -1 otherwise; leaves read the item's preloaded rows */
  int vec_cell, vec_plane;
  /* analysis hooks */
  gp_node_t *watch; /* report the positions of this node */
  void (*cb)(void *u, const int64_t off[3]);
  void *cbu;
  int watch_ok; /* 0 once a watched position is not root-relative */
} gw_t;

/* A value in the kernel's text: a temporary (temp >= 0) or another
 * expression (a parameter; temp -1). */
typedef struct {
  char s[40];
  int32_t temp;
} gw_val_t;

hc_status_t gw_init(gw_t *w, gp_plan_t *p, const gk_t *k, gp_node_t *root, int stop_mat, int emit);
void gw_fini(gw_t *w);
void gw_put(gw_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gw_memo_clear(gw_t *w);
void gw_var_name(const gw_t *w, int32_t v, char *out, size_t n);
/* Value of n at the root variables (var_base 0: i0..i2, 3: q0..q2). */
gw_val_t gw_walk_root(gw_t *w, gp_node_t *n, int32_t var_base);

/* "((v0) * n1 + (v1)) * n2 + (v2)" for the rank (grid_emit.c). */
void ge_lin_index(uint32_t rank, const char *v0, const char *v1, const char *v2, char *out, size_t n);
/* The staged node's value at root-relative offset off in the names the
 * emitter declares: the host kernel's window of slices or the device
 * kernel's tile (grid_emit.c). */
void ge_tile_value(const gw_t *w, const int64_t off[3], char *out, size_t n);

/* Vector kernels (grid_vector.c): the body of an assignment whose items
 * take sched.vec cells of sched.planes planes each (-1 when k is not eligible),
 * and the name of the preloaded value of field slot `slot` at offset off
 * from the item's cell `cell` of plane `plane`. */
int gv_emit_assign(gw_t *w, const gk_t *k);
void gv_value_name(uint32_t slot, const int64_t off[3], int plane, int cell, char *out, size_t n);

#endif
