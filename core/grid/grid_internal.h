/* Grid expressions — internal structures shared by the files of core/grid.
 *
 * Three layers:
 *   user nodes (hc_gexpr_t, hc_gop_t)   grid_expr.c, grid_ops.c: what the user built;
 *                                        operators are lowered into expression
 *                                        nodes by hc_gexpr_apply.
 *   plan (gp_plan_t, gp_node_t)          grid_plan.c: one assignment's view — each
 *                                        user node at each grid level it is used on,
 *                                        validated shapes, the cells each node is read
 *                                        at, and the recompute/materialise decisions.
 *   kernel instance (gk_t)               grid_kernel.c: one kernel to run (the root or
 *                                        a materialised sub-expression) with its own
 *                                        field and parameter numbering and its
 *                                        structural key; emitted as portable source or
 *                                        C (grid_emit.c), or run by the row evaluator
 *                                        (grid_eval.c). grid_run.c drives it all. */
#ifndef HC_CORE_GRID_INTERNAL_H
#define HC_CORE_GRID_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "hc/grid.h"
#include "hc/plugin.h"

/* libhc-grid is built on libhc's public API alone (linked with -z defs;
 * tests/unit/test_layers.py checks its imports). */
#define HC_API __attribute__((visibility("default")))

/* Appends printf-formatted text to a growable string (grid_str.c);
 * 0 on allocation failure. */
int hcg_append(char **buf, size_t *len, size_t *cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int hcg_vappend(char **buf, size_t *len, size_t *cap, const char *fmt, va_list ap);

#define HCG_MAX_FIELDS 24  /* distinct fields one kernel reads (+ dst) */
#define HCG_MAX_OFFSET 8   /* |stencil offset| per axis */
#define HCG_MAX_POINTS 729 /* stencil points */
#define HCG_MAX_LEVELS 12  /* restrictions/prolongations nested in one expression */

/* ================================================================ user nodes */

typedef enum {
  GX_DENSE,
  GX_SCALAR,
  GX_FUNC,
  GX_ADD,
  GX_SUB,
  GX_MUL,
  GX_SCALE,
  GX_STENCIL,
  GX_RESTRICT,
  GX_PROLONG,
  GX_KIND_COUNT_
} gx_kind_t;

/* How stencil coefficients are obtained: given, or from the spacing of the
 * grid the stencil is evaluated on (h = 0 given: that level's spacing). */
typedef enum { GS_FIXED, GS_LAPLACIAN, GS_DIFF } gs_coef_t;

typedef struct gx_stencil {
  uint32_t rank; /* 1..3 */
  uint32_t n;
  gs_coef_t coef_kind;
  uint32_t axis;     /* GS_DIFF */
  hc_gdiff_t diff;   /* GS_DIFF */
  double h[3];       /* GS_LAPLACIAN/GS_DIFF: given spacings, 0 = grid's */
  int32_t (*off)[3]; /* n points, offsets in the user's axes (d < rank) */
  double *coef;      /* GS_FIXED: n coefficients */
  char name[24];     /* for messages */
} gx_stencil_t;

struct hc_gexpr {
  struct hc_gexpr *next_alloc; /* arena list */
  hc_grid_t *grid;
  gx_kind_t kind;
  uint32_t serial; /* creation order, for stable hashing */
  struct hc_gexpr *a, *b;
  hc_field_t *field;      /* GX_DENSE */
  double value;           /* GX_SCALAR value, GX_SCALE factor */
  const gx_stencil_t *st; /* GX_STENCIL */
  hc_gfunc_t fn;          /* GX_FUNC (source points at owned copy) */
  char *source;           /* GX_FUNC USER: owned copy */
  /* Inferred bottom-up: rank 0 and shaped 0 mean "adapts to its grid". */
  uint32_t rank;
  uint32_t shaped;
  int64_t shape[3];  /* user axes, valid when shaped */
  hc_dtype_t dtype;  /* HC_DTYPE_NONE when no field inside */
  uint32_t has_grid; /* a field or computable is inside */
};

typedef enum { OP_STENCIL, OP_RESTRICT, OP_PROLONG, OP_IDENTITY, OP_ADD, OP_SUB, OP_SCALE, OP_COMPOSE } gop_kind_t;

struct hc_gop {
  struct hc_gop *next_alloc;
  hc_grid_t *grid;
  gop_kind_t kind;
  uint32_t rank; /* 0: any (identity) */
  struct hc_gop *a, *b;
  double s;
  gx_stencil_t *st; /* OP_STENCIL (owned by the node) */
};

/* ================================================================ the grid */

typedef struct gk_entry gk_entry_t;
typedef struct gtemp gtemp_t;

/* The grid's kernel shapes and plane order, read once when the grid is
 * created (hcg_tuning_read) from the configuration table
 * (core/runtime/config_vars.h holds the defaults; tests/gpu/grid_shapes.sh
 * and tests/gpu/probe.sh grid sweep them on a device to re-measure):
 *
 * stencil  device stencil assignments (stencil, restriction, prolongation)
 *          run in 2-D work-groups of BX x BY items, each item taking Z
 *          consecutive planes (3-D). With 1-D groups along the rows, a
 *          7-point Laplacian read its y and z neighbours from L2; in a 2-D
 *          group the y neighbours are mostly L1 hits, and an item's planes
 *          share their z neighbours in registers (HC_GRID_STENCIL).
 * point    3-D pointwise device assignments run the stencils' way too,
 *          which streams better than UNROLL cells along the rows
 *          (HC_GRID_POINT).
 * vector   vector assignments (grid_vector.c): items of 16 bytes /
 *          element size cells along the rows, in groups of BX x BY items
 *          taking Z planes each; all 0 when turned off (HC_GRID_VECTOR=off).
 * alternate successive 3-D device assignments alternate between ascending
 *          and descending planes, so that each one starts on the planes the
 *          previous one touched last, which are still in the device's
 *          cache; the order within a launch does not change what it
 *          computes. 0 with HC_GRID_PLANE_ORDER=forward.
 * cc, cflags the C compiler of host kernels (grid_cc.c). */
typedef struct hcg_tuning {
  int stencil[3], point[3], vector[3]; /* BX, BY, Z */
  int alternate;
  char cc[512];     /* host kernels' C compiler (HC_GRID_CC) */
  char cflags[512]; /* its extra flags (HC_GRID_CFLAGS) */
} hcg_tuning_t;
/* The values of the environment, or an error naming the variable. */
hc_status_t hcg_tuning_read(hcg_tuning_t *t);

struct hc_grid {
  hc_device_t *dev;
  hc_grid_options_t opts;
  hc_gexpr_t *exprs; /* arena lists */
  hc_gop_t *ops;
  uint32_t serial;
  hc_status_t err; /* first build error */
  char errmsg[512];
  gk_entry_t *kernels; /* structural key -> built kernel */
  gtemp_t *temps;
  hc_kernel_t *eval_kernel; /* the evaluator's host function, built once */
  hc_grid_stats_t stats;
  const char *last_source; /* points into a kernel cache entry */
  int cc_state;            /* 0 untried, 1 works, -1 cannot run */
  int zrev;                /* a_zrev of the next 3-D device assignment (tune.alternate) */
  hcg_tuning_t tune;       /* read when the grid was created */
  char cc_why[256];
};

/* The options of one call (NULL: the grid's defaults), validated. */
hc_status_t hcg_options(const hc_grid_t *g, const hc_grid_options_t *o, hc_grid_options_t *out);
void hcg_kernels_free(hc_grid_t *g);
/* Flop-equivalents per byte at which the device is balanced (cost model). */
double hcg_balance(const hc_device_info_t *info, hc_dtype_t dt);

/* Records the grid's first build error (and the thread's last error);
 * returns NULL for use in constructors. */
void *hcg_fail(hc_grid_t *g, hc_status_t st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ================================================================ plan */

/* Internal axes: every grid function is handled as 3-D with the rank's axes
 * right-aligned (a 2-D field of n0 x n1 is 1 x n0 x n1), so internal axis
 * a is user axis a - (3 - rank). */
#define HCG_AX0(rank) (3u - (rank))

typedef struct gp_node {
  gx_kind_t kind;
  int level;   /* coarsenings relative to the assigned field */
  uint32_t id; /* index in plan->nodes (post-order) */
  struct gp_node *a, *b;
  const hc_gexpr_t *src;
  hc_field_t *field;       /* GX_DENSE, or the temporary of a materialised node */
  uint32_t param0, nparam; /* into plan->params */
  /* The cells the node is evaluated at, per internal axis, at its level
   * (union over its uses; valid when reached). */
  int64_t rlo[3], rhi[3];
  int reached;
  /* Analysis: distinct index positions per output cell, cost per point. */
  uint32_t npos;
  double cost;
  int materialise; /* evaluate into a temporary first */
  int staged;      /* the local-memory tile of a staged kernel */
  int pointwise;   /* no stencil, restriction or prolongation inside */
  int reads_dst;   /* the assigned field is read in its subtree */
} gp_node_t;

typedef struct gp_plan {
  hc_grid_t *g;
  uint32_t rank;
  hc_dtype_t dtype;
  hc_field_t *dst;        /* NULL for a reduction */
  int64_t n[3];           /* internal extents of level 0 */
  double h[3], origin[3]; /* internal spacing and origin of level 0 */
  int64_t lo[3], cnt[3];  /* the box (internal axes) */
  uint32_t parity;
  int min_level, max_level;
  gp_node_t **nodes;
  uint32_t nnodes, cap;
  gp_node_t *root;
  double *params;
  uint32_t nparams, pcap;
  /* lowering memo: (user node, level) -> plan node */
  const hc_gexpr_t **memo_src;
  int *memo_level;
  gp_node_t **memo_node;
  uint32_t nmemo, memo_cap;
} gp_plan_t;

/* Builds the plan of e evaluated on the grid of `grid_of` (dst for an
 * assignment) over the box; validates everything that can be validated
 * without running. On failure nothing is left allocated. */
hc_status_t gp_plan_build(hc_grid_t *g, hc_field_t *dst, const hc_field_t *grid_of, const hc_gexpr_t *e,
                          const hc_grid_range_t *range, gp_plan_t **out);
void gp_plan_free(gp_plan_t *p);
/* Internal extents of a level. */
void gp_level_extents(const gp_plan_t *p, int level, int64_t ext[3]);
/* Spacing of a level on internal axis a. */
double gp_level_spacing(const gp_plan_t *p, int level, uint32_t a);
/* Decides recompute / materialise / stage for every shared sub-expression
 * and checks in-place reads of the assigned field. */
hc_status_t gp_plan_decide(gp_plan_t *p, hc_grid_fuse_t fuse, hc_language_t lang);

/* ================================================================ kernel instances */

typedef enum { GK_ASSIGN = 0, GK_REDUCE = 1 } gk_mode_t;

typedef struct gk {
  gp_plan_t *plan;
  gp_node_t *root;
  int base_level;  /* root's level: extents args are this level's */
  hc_field_t *dst; /* GK_ASSIGN */
  gk_mode_t mode;
  hc_grid_reduce_op_t op; /* GK_REDUCE */
  hc_language_t lang;     /* what it is emitted for */
  int host_eval;          /* run by the row evaluator */
  int staged;             /* a staged kernel: the shared sub-expression computed once
                             per cell into a local-memory tile (device languages)
                             or a window of slices (host C) */
  int params_in_buffer;   /* too many for kernel arguments */
  int idx64;              /* 64-bit index arithmetic */
  int unroll;             /* cells per item of a plain device assignment */
  int zunroll;            /* planes per item of a device stencil assignment (2-D work-groups) */
  int sbx, sby;           /* its work-group (the grid's tune.stencil) */
  int vec;                /* cells per item of a vector assignment (grid_vector.c; its
                             zunroll and group are HCG_VEC_*), or 0 */
  int zrev_arg;           /* takes a_zrev: its items take the planes in reverse order when
                             it is set (3-D device assignments; tune.alternate) */
  int alternate;          /* tune.alternate when built (not in the key) */
  int64_t lo[3], cnt[3];  /* box at base level (internal axes) */
  int64_t n[3];           /* base level extents */
  uint32_t parity;
  /* Local numbering (post-order of the kernel's own nodes). */
  gp_node_t **nodes;
  uint32_t nnodes;
  int32_t *local;                         /* plan node id -> local index or -1 */
  hc_field_t *fields[HCG_MAX_FIELDS + 1]; /* slot 0: dst (or unused) */
  uint32_t nfields;
  int32_t *slot;     /* plan node id -> field slot (dense/materialised) */
  uint32_t *lparam0; /* plan node id -> first local param */
  double *params;    /* local parameter values */
  uint32_t nparams;
  /* Stencil coefficients are grouped into classes of equal value (one
   * parameter each, points of a class summed before the multiply; a zero
   * coefficient drops its point): the pattern is structure, in the key. */
  int32_t *cls;   /* per stencil point: class, -1 for a zero coefficient */
  uint32_t *cls0; /* plan node id -> its first entry in cls */
  uint32_t *ncls; /* plan node id -> number of classes */
  char *key;      /* structural key */
} gk_t;

/* Builds the instance for root (plan->root or a materialised node). */
hc_status_t gk_build(gk_t *k, gp_plan_t *p, gp_node_t *root, hc_field_t *dst, const int64_t *lo, const int64_t *cnt,
                     uint32_t parity, gk_mode_t mode, hc_grid_reduce_op_t op, hc_language_t lang, int host_eval);
void gk_free(gk_t *k);
/* True when node is a leaf inside kernel k (dense or materialised). */
int gk_is_leaf(const gk_t *k, const gp_node_t *n);

/* Emits the kernel's source: portable dialect (lang opencl-c / cuda-c) or
 * C (lang host). *out is malloc'd. */
hc_status_t gk_emit(const gk_t *k, char **out);
/* Counting pass: fills npos of every plan node reachable from root
 * (leaves stop at materialised nodes) and the staged halo radii. */
void gk_count_positions(gp_plan_t *p, gp_node_t *root, int stop_at_materialised);
/* Radius per internal axis of the positions the staged node is read at
 * (valid after gk_count_positions); -1 when it is not eligible. */
int gk_stage_radius(gp_plan_t *p, gp_node_t *root, gp_node_t *s, int32_t radius[3]);
/* Offsets at which plan node `leaf` (a dense read of dst) is read relative
 * to the root's cell; returns 0 when some read is not at root-relative
 * offset (under a restriction or prolongation). Calls fn for each offset. */
int gk_for_each_offset(gp_plan_t *p, gp_node_t *root, gp_node_t *leaf, void (*fn)(void *u, const int64_t off[3]),
                       void *u);

/* Staged tile geometry (shared by emitter and launcher). */
#define HCG_STAGE_BX 32
#define HCG_STAGE_BY 8
#define HCG_STAGE_BX1 256 /* 1-D */
#define HCG_STAGE_CZ 16   /* planes per work-group when marching (3-D) */
#define HCG_REDUCE_LOCAL 256
/* Cells per work-item of a 1-D or 2-D pointwise device assignment, along
 * the fast axis: one cell per item leaves too few loads in flight to
 * stream from device memory; each item takes UNROLL cells a group's width
 * apart, so every load of a warp stays one coalesced row segment. Stencils
 * keep one cell per item: there the neighbours' loads already overlap, and
 * more cells per item were slower. Re-measure with bench/ (grid) after
 * changing it. */
#define HCG_ASSIGN_UNROLL 4

/* Bytes per item of a vector assignment (the tune.vector groups). */
#define HCG_VEC_BYTES 16
/* The expression for the item's plane chunk from hc_global_id(2). */
const char *gk_plane_chunk(const gk_t *k);
/* Cells per item when k can run as a vector assignment, else 0. */
int gk_vector_cells(const gk_t *k);
/* Cells per item when k can run as a vector assignment, else 0. */
int gk_vector_cells(const gk_t *k);

/* ================================================================ host compile */

/* Compiles C source into a shared object (cached on disk, kind "grid-host")
 * and returns the kernel function; *dl is the dlopen handle. HC_ERR_BUILD
 * with the compiler's output; HC_ERR_UNSUPPORTED when no compiler can be
 * run (the caller may fall back to the evaluator). */
hc_status_t hcg_cc_build(hc_grid_t *g, const char *source, hc_host_kernel_fn *fn, void **dl);
void hcg_cc_close(void *dl);

/* ================================================================ evaluator */

/* What one evaluator launch needs (passed as a pointer argument). */
typedef struct hcg_eval_launch {
  const gk_t *k;
  void *ptr[HCG_MAX_FIELDS + 1]; /* host addresses of the fields by slot */
  double *partial;               /* GK_REDUCE: one per group */
  uint32_t groups;
} hcg_eval_launch_t;
void hcg_eval_host(const hc_host_group_t *group, void *const *args);

/* ================================================================ temporaries */

hc_status_t hcg_temp_get(hc_grid_t *g, hc_dtype_t dt, uint32_t rank, const int64_t *shape, hc_field_t **out);
void hcg_temp_put(hc_grid_t *g, hc_field_t *f);
void hcg_temps_free(hc_grid_t *g);

#endif
