/* Grid expressions — internal structures shared by the files of core/grid.
 *
 * Four layers:
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
 *                                        structural key.
 *   schedule (gs_schedule_t)             grid_schedule.c: how the instance runs on the
 *                                        device — variant, work-group shape, planes and
 *                                        cells per item, the argument list — decided
 *                                        once from the grid's tuning; the emitter
 *                                        (grid_walk.c, grid_emit.c, grid_vector.c)
 *                                        and the launcher (grid_launch.c) only read it.
 * grid_run.c drives an assignment; grid_cache.c keeps the built kernels and
 * grid_temp.c the temporaries of materialised sub-expressions. */
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
typedef enum { GX_COEF_FIXED, GX_COEF_LAPLACIAN, GX_COEF_DIFF } gx_coef_t;

typedef struct gx_stencil {
  uint32_t rank; /* 1..3 */
  uint32_t n;
  gx_coef_t coef_kind;
  uint32_t axis;     /* GX_COEF_DIFF */
  hc_gdiff_t diff;   /* GX_COEF_DIFF */
  double h[3];       /* GX_COEF_LAPLACIAN/GX_COEF_DIFF: given spacings, 0 = grid's */
  int32_t (*off)[3]; /* n points, offsets in the user's axes (d < rank) */
  double *coef;      /* GX_COEF_FIXED: n coefficients */
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

typedef struct gc_entry gc_entry_t;
typedef struct hcg_temp hcg_temp_t;

/* The grid's kernel shapes and plane order, read once when the grid is
 * created (gs_tuning_read): the device's row of the grid tuning table
 * (grid_schedule.c), unless the configuration variables named below set
 * them (tests/gpu/grid_shapes.sh and tests/gpu/probe.sh grid sweep them on
 * a device to re-measure):
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
 * stage    fuse=auto stages shared sub-expressions: it pays on GPUs (local
 *          memory) and in compiled host code (a window of slices in cache);
 *          a CPU's OpenCL runs work-group barriers in loops slowly.
 * cc, cflags the C compiler of host kernels (grid_cc.c). */
typedef struct gs_tuning {
  int stencil[3], point[3], vector[3]; /* BX, BY, Z */
  int alternate;
  int reduce_fill; /* groups per compute unit of a device reduction */
  int stage;
  char cc[512];     /* host kernels' C compiler (HC_GRID_CC) */
  char cflags[512]; /* its extra flags (HC_GRID_CFLAGS) */
} gs_tuning_t;
/* The device's tuning row and the variables that override it, or an
 * error naming the variable (grid_schedule.c). */
hc_status_t gs_tuning_read(gs_tuning_t *t, const hc_device_info_t *info);

struct hc_grid {
  hc_device_t *dev;
  hc_grid_options_t opts;
  hc_gexpr_t *exprs; /* arena lists */
  hc_gop_t *ops;
  uint32_t serial;
  hc_status_t err; /* first build error */
  char errmsg[512];
  gc_entry_t *kernels; /* structural key -> built kernel */
  hcg_temp_t *temps;
  hc_kernel_t *eval_kernel; /* the evaluator's host function, built once */
  hc_grid_stats_t stats;
  const char *last_source; /* points into a kernel cache entry */
  int cc_state;            /* 0 untried, 1 works, -1 cannot run */
  int zrev;                /* plane order of the next launch that takes one (tune.alternate) */
  gs_tuning_t tune;        /* read when the grid was created */
  char cc_why[256];
};

/* The options of one call (NULL: the grid's defaults), validated. */
hc_status_t hcg_options(const hc_grid_t *g, const hc_grid_options_t *o, hc_grid_options_t *out);

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

/* ================================================================ schedules */

/* How a kernel instance runs (grid_schedule.c). */
typedef enum {
  GS_EVAL,   /* the host row evaluator (grid_eval.c) */
  GS_HOST,   /* compiled C: loops over the work-group's rows, staged or not */
  GS_REDUCE, /* device reduction: grid-stride loop, one partial per group */
  GS_STAGED, /* device: a local-memory tile per group, marching planes in 3-D */
  GS_VECTOR, /* device: vec cells of `planes` planes per item (grid_vector.c) */
  GS_PLANES, /* device: 2-D groups, `planes` consecutive planes per item */
  GS_ROWS    /* device: `unroll` cells per item along the rows, a group's width apart */
} gs_variant_t;

/* The kinds of kernel argument; each has one declaration form in the
 * emitter and one value in the launcher. */
typedef enum {
  GS_ARG_OUT,    /* the assigned field (slot 0), or the reduction's partials */
  GS_ARG_FIELD,  /* a field read (slot index) */
  GS_ARG_PARAM,  /* parameter index, one REAL */
  GS_ARG_PARAMS, /* every parameter in one buffer (too many for arguments) */
  GS_ARG_INDEX,  /* a long copied into an IDX of the same name in the body */
  GS_ARG_LONG    /* a long the body reads as it is */
} gs_arg_kind_t;

/* What a GS_ARG_INDEX or GS_ARG_LONG holds. */
typedef enum {
  GS_VAL_EXTENT, /* extent of the kernel's level on internal axis `index` */
  GS_VAL_LO,     /* first cell of the box on axis `index` */
  GS_VAL_COUNT,  /* cells of the box on axis `index` */
  GS_VAL_CELLS,  /* cells of the whole launch (a reduction's loop bound) */
  GS_VAL_ZREV    /* the plane order of this launch (the grid's alternation) */
} gs_val_t;

typedef struct gs_arg {
  gs_arg_kind_t kind;
  gs_val_t val;   /* GS_ARG_INDEX, GS_ARG_LONG */
  uint32_t index; /* field slot, parameter or axis */
  char name[16];  /* in the kernel's text */
} gs_arg_t;

/* gs_schedule_build fails for an instance that would take more. */
#define GS_MAX_ARGS HC_MAX_KERNEL_ARGS
/* Names of the arguments the kernel bodies read by name (fields and
 * parameters: gs_field_name, gs_param_name). */
#define GS_NAME_PARTIAL "partial" /* GS_ARG_OUT of a reduction */
#define GS_NAME_PARAMS "P"        /* GS_ARG_PARAMS */
#define GS_NAME_CELLS "total"     /* GS_VAL_CELLS */
#define GS_NAME_ZREV "a_zrev"     /* GS_VAL_ZREV */

typedef struct gs_schedule {
  gs_variant_t variant;
  int unroll;           /* GS_ROWS: cells per item along the rows */
  int planes;           /* GS_PLANES, GS_VECTOR: consecutive planes per item (1 below 3-D) */
  int group[2];         /* GS_PLANES, GS_VECTOR: work-group BX x BY */
  int vec;              /* GS_VECTOR: cells per item along the row, else 0 */
  int zrev;             /* takes the plane order (3-D GS_PLANES and GS_VECTOR) */
  int alternate;        /* the grid's tune.alternate: the order flips at each launch */
  int params_in_buffer; /* GS_ARG_PARAMS instead of one GS_ARG_PARAM each */
  int acc_bytes;        /* a reduction partial: 8 (double) or 4 (a device without fp64) */
  uint32_t reduce_cap;  /* GS_REDUCE: most groups (from the device's compute units) */
  uint32_t nargs;
  gs_arg_t args[GS_MAX_ARGS]; /* the kernel's arguments, in order (none for GS_EVAL) */
} gs_schedule_t;

/* One launch of a scheduled instance: its range and, for reductions, the
 * number of partials. */
typedef struct gs_launch {
  uint32_t dims;
  size_t global[3], local[3];
  int explicit_local;
  uint32_t groups;
} gs_launch_t;

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
  int idx64;              /* 64-bit index arithmetic */
  gs_schedule_t sched;    /* how it runs (grid_schedule.c) */
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

/* Decides k->sched from the instance, the grid's tuning and its device
 * (after everything else of the instance but the key, which includes it). */
hc_status_t gs_schedule_build(gk_t *k);
/* Appends the schedule's part of the structural key. */
int gs_schedule_key(const gs_schedule_t *s, char **buf, size_t *len, size_t *cap);
/* The range of one launch of k. */
void gs_launch_shape(const gk_t *k, gs_launch_t *out);
/* The value of a GS_ARG_INDEX or GS_ARG_LONG argument; zrev is the plane
 * order of this launch. */
long gs_arg_long(const gk_t *k, const gs_arg_t *a, int zrev);
/* Names of the kernel's values in its text: field slot s (0 is the
 * assigned field), parameter i. */
void gs_field_name(uint32_t s, char *out, size_t n);
void gs_param_name(uint32_t i, char *out, size_t n);
/* The expression for the item's plane chunk from hc_global_id(2). */
const char *gs_plane_chunk(const gk_t *k);

/* Emits the kernel's source: portable dialect (lang opencl-c / cuda-c) or
 * C (lang host). *out is malloc'd. */
hc_status_t ge_emit(const gk_t *k, char **out);
/* Counting pass: fills npos of every plan node reachable from root
 * (leaves stop at materialised nodes) and the staged halo radii. */
void gw_count_positions(gp_plan_t *p, gp_node_t *root, int stop_at_materialised);
/* Radius per internal axis of the positions the staged node is read at
 * (valid after gw_count_positions); -1 when it is not eligible. */
int gw_stage_radius(gp_plan_t *p, gp_node_t *root, gp_node_t *s, int32_t radius[3]);
/* Offsets at which plan node `leaf` (a dense read of dst) is read relative
 * to the root's cell; returns 0 when some read is not at root-relative
 * offset (under a restriction or prolongation). Calls fn for each offset. */
int gw_for_each_offset(gp_plan_t *p, gp_node_t *root, gp_node_t *leaf, void (*fn)(void *u, const int64_t off[3]),
                       void *u);

/* Staged tile geometry (shared by emitter and schedule). */
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
/* Cells per item when k can run as a vector assignment, else 0
 * (grid_vector.c). */
int gv_cells(const gk_t *k);

/* ================================================================ kernel cache */

/* A built kernel, found by its instance's structural key (grid_cache.c). */
struct gc_entry {
  gc_entry_t *next;
  char *key;
  hc_kernel_t *kernel;
  void *dl; /* host=compile: the shared object */
  char *source;
  hc_buffer_t *pbuf; /* parameters when they do not fit the arguments */
  void *pshadow;     /* what pbuf holds now */
  size_t pbytes;
};

/* The grid's kernel for k, built (emitted and compiled) on first use. */
hc_status_t gc_find(hc_grid_t *g, const gk_t *k, gc_entry_t **out);
/* Brings the entry's parameter buffer up to k's values (params_in_buffer). */
hc_status_t gc_params_write(gc_entry_t *e, const gk_t *k);
void gc_free_all(hc_grid_t *g);

/* ================================================================ launching */

/* Runs k (grid_launch.c); a reduction's result goes to *result. */
hc_status_t gl_launch(hc_grid_t *g, const gk_t *k, double *result);

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

/* A pool of fields for materialised sub-expressions (grid_temp.c). */
hc_status_t hcg_temp_get(hc_grid_t *g, hc_dtype_t dt, uint32_t rank, const int64_t *shape, hc_field_t **out);
void hcg_temp_put(hc_grid_t *g, hc_field_t *f);
void hcg_temps_free(hc_grid_t *g);

#endif
