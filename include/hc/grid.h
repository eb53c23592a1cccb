/* hc — grid expressions: lazily evaluated, fused grid-operator expressions.
 *
 * A grid (hc_grid_t) is an arena bound to one device. Expressions built from
 * it compute nothing: they describe grid functions (dense fields, scalars,
 * formulas of the indices or coordinates), grid operators (stencils,
 * restriction, prolongation, their sums, multiples and compositions) and
 * arithmetic on both. Assigning an expression to a dense field, optionally
 * restricted to a box of the grid, generates ONE kernel for the whole
 * expression and runs it on the field's device:
 *
 *   hc_grid_t *g;  hc_grid_create(dev, NULL, &g);
 *   hc_gop_t *L = hc_gop_laplacian(g, 3, NULL);              // 7-point
 *   hc_gexpr_t *e = hc_gexpr_apply(g, L, hc_gexpr_add(g, hc_gexpr_dense(g, f),
 *                                                      hc_gexpr_dense(g, h)));
 *   hc_grid_range_t in = hc_grid_interior(1);
 *   hc_grid_assign(g, out, e, &in, NULL);                     // out = Δ(f + h)
 *   hc_grid_destroy(g);                                        // frees it all
 *
 * Kernels are cached by the expression's structure (node kinds, stencil
 * offsets, which fields alias), never by its numbers: scalars and stencil
 * coefficients are kernel arguments, extents and ranges too, so a loop that
 * re-assigns the same expression builds once (per grid; the device's
 * program cache and the on-disk cache sit beneath).
 *
 * Ownership: every hc_gexpr_t and hc_gop_t belongs to the grid that made it;
 * never free one. An expression lives until hc_grid_clear() or
 * hc_grid_destroy(); an operator until hc_grid_destroy() (it survives a
 * clear, so operators built once can be applied in every iteration of a
 * loop that clears its expressions).
 * Dense nodes borrow their field: it must outlive every assignment that
 * reads it. Nodes of one grid cannot be mixed with another grid's.
 *
 * Errors while building: a constructor that cannot build its node (shapes
 * that do not match, a bad axis, an operator of another rank) returns NULL
 * and records the first such error in the grid (hc_grid_error); every
 * constructor given a NULL operand returns NULL, so a whole expression can
 * be written in one statement and checked once, at hc_grid_assign, which
 * then fails with that error before any kernel is built.
 *
 * Grids and axes: shapes are in C order (axis 0 slowest), as fields. Grid
 * functions have rank 1 to 3. Coordinates are origin[d] + i * spacing[d]
 * of the field being assigned; restriction and prolongation move between a
 * vertex-centred fine grid of n points and its coarse grid of (n + 1) / 2
 * points per axis (n_fine = 2 n_coarse - 1), spacing doubling on the way
 * down. All fields of one expression share one real dtype (f32 or f64).
 *
 * Thread safety: like a device — one thread at a time per grid. */
#ifndef HC_GRID_H
#define HC_GRID_H

#include "hc/hc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hc_grid hc_grid_t;
typedef struct hc_gexpr
    hc_gexpr_t;                 /* an evaluable: grid function or evaluator */
typedef struct hc_gop hc_gop_t; /* a grid operator */

/* ---------------------------------------------------------------- options */

/* What to do with a sub-expression that an operator reads at several points
 * (h = Δ(f + g) needs f + g at 7 points). */
typedef enum hc_grid_fuse {
  HC_GRID_FUSE_AUTO = 0,      /* cost model per sub-expression (docs/grid.md) */
  HC_GRID_FUSE_RECOMPUTE = 1, /* one kernel; recompute at every point read */
  HC_GRID_FUSE_MATERIALISE = 2, /* evaluate it into a temporary field first */
  HC_GRID_FUSE_STAGE = 3        /* compute it once per cell into fast memory:
                                   a local-memory tile with halo (opencl-c,
                                   cuda-c) or a cache window of planes
                                   (compiled host C); where its shape does not
                                   allow it (not pointwise, reach > 2, a parity
                                   range) the same as RECOMPUTE */
} hc_grid_fuse_t;

/* How host-language devices (cpu) run an expression. */
typedef enum hc_grid_host {
  HC_GRID_HOST_AUTO =
      0, /* COMPILE when the system C compiler works, else EVAL */
  HC_GRID_HOST_COMPILE =
      1, /* generate C, compile it with cc at run time (cached) */
  HC_GRID_HOST_EVAL =
      2 /* the built-in vectorised row evaluator (no compiler) */
} hc_grid_host_t;

typedef struct hc_grid_options {
  uint32_t size; /* sizeof(hc_grid_options_t); 0 is taken as the full size */
  uint32_t fuse; /* hc_grid_fuse_t */
  uint32_t host; /* hc_grid_host_t */
  uint32_t reserved_;
} hc_grid_options_t;

/* Reads "fuse=auto|recompute|materialise|stage" and "host=auto|compile|eval"
 * values; HC_ERR_PARAM naming the value otherwise. */
hc_status_t hc_grid_fuse_from_name(const char *name, hc_grid_fuse_t *out);
hc_status_t hc_grid_host_from_name(const char *name, hc_grid_host_t *out);
const char *hc_grid_fuse_name(hc_grid_fuse_t fuse);
const char *hc_grid_host_name(hc_grid_host_t host);

/* ---------------------------------------------------------------- grids */

/* Creates an arena + kernel cache for expressions evaluated on dev. opts
 * gives the defaults of every assignment (NULL: auto, auto). The caller owns
 * *out. The grid reads its HC_GRID_* settings here, once (docs/env.md: the
 * C compiler for HOST_COMPILE, $HC_GRID_CC, else "cc"; kernel shapes);
 * a value they do not accept is HC_ERR_PARAM naming the variable. */
hc_status_t hc_grid_create(hc_device_t *dev, const hc_grid_options_t *opts,
                           hc_grid_t **out);
/* Frees every node, kernel and temporary of the grid. NULL is allowed. */
void hc_grid_destroy(hc_grid_t *g);
/* Frees every expression node (and the recorded build error), keeping the
 * operators, compiled kernels and temporaries: call it between iterations
 * of a loop that builds fresh expressions each time. Expressions built
 * before the clear must not be used after it; operators may (build them
 * once, outside the loop: each one lives until hc_grid_destroy). */
void hc_grid_clear(hc_grid_t *g);
hc_device_t *hc_grid_device(const hc_grid_t *g);
/* The first error recorded while building nodes (HC_OK if none); its
 * message, or "" (owned by the grid). */
hc_status_t hc_grid_error(const hc_grid_t *g, const char **message);

/* ---------------------------------------------------------------- ranges */

/* The box an assignment writes: lo[d] cells are left out at the low face of
 * axis d and hi[d] at the high face, so the box is lo[d] <= i < n[d] - hi[d].
 * parity restricts it further to the cells whose index sum is even
 * (HC_GRID_EVEN, "red") or odd (HC_GRID_ODD, "black"). */
typedef enum hc_grid_parity {
  HC_GRID_ALL = 0,
  HC_GRID_EVEN = 1,
  HC_GRID_ODD = 2
} hc_grid_parity_t;

typedef struct hc_grid_range {
  int64_t lo[HC_MAX_DIMS];
  int64_t hi[HC_MAX_DIMS];
  uint32_t parity; /* hc_grid_parity_t */
  uint32_t reserved_;
} hc_grid_range_t;

/* The box `width` cells in from every face (width 1: the interior). */
hc_grid_range_t hc_grid_interior(int64_t width);

/* ---------------------------------------------------------------- grid
 * functions */

/* A dense grid function: the field's values (borrowed, see above). */
hc_gexpr_t *hc_gexpr_dense(hc_grid_t *g, hc_field_t *field);
/* One value everywhere. The value is a kernel argument: hc_gexpr_scalar_set
 * changes it without a rebuild. */
hc_gexpr_t *hc_gexpr_scalar(hc_grid_t *g, double value);
/* Changes a scalar node's value (or a scale node's factor). HC_ERR_INVALID_ARG
 * for any other node. */
hc_status_t hc_gexpr_scalar_set(hc_gexpr_t *e, double value);

/* Computable grid functions: a formula of the indices or coordinates of the
 * grid they are evaluated on, never stored. x_d = origin[d] + i_d h[d]. */
typedef enum hc_gfunc_kind {
  HC_GFUNC_COORD = 0, /* x_axis */
  HC_GFUNC_INDEX = 1, /* i_axis (as a real number) */
  HC_GFUNC_SIN = 2,   /* amplitude * prod_d sin(k[d] pi x_d) */
  HC_GFUNC_GAUSS = 3, /* amplitude * exp(-|x - center|^2 / (2 sigma^2)) */
  HC_GFUNC_POINT =
      4, /* amplitude at the grid point nearest to center, 0 elsewhere */
  HC_GFUNC_USER = 5 /* source (device languages and host=compile) and/or host */
} hc_gfunc_kind_t;

/* USER functions: `source` is one portable-dialect expression of type REAL
 * (float or double, the expression's dtype) in the coordinates x, y, z, the
 * indices i, j, k (long) and p0..p3 (the params); math functions of C99
 * (sin, exp, sqrt, pow...) and HC_PI may be used. `host` evaluates the same
 * function in double on the host evaluator. A device runs whichever it can:
 * source languages need `source`; host=eval needs `host` (else it compiles
 * `source`). Axes a rank does not have read as 0. */
typedef double (*hc_gfunc_host_fn)(const double *x, const int64_t *i,
                                   const double *params, void *user);

typedef struct hc_gfunc {
  uint32_t size; /* sizeof(hc_gfunc_t); 0 is taken as the full size */
  uint32_t kind; /* hc_gfunc_kind_t */
  uint32_t axis; /* COORD, INDEX */
  uint32_t reserved_;
  double amplitude;      /* SIN, GAUSS, POINT (0 is taken as 1) */
  double k[3];           /* SIN: wave numbers per axis (0 is taken as 1) */
  double center[3];      /* GAUSS, POINT: a point in coordinates */
  double sigma;          /* GAUSS */
  const char *source;    /* USER (copied) */
  hc_gfunc_host_fn host; /* USER */
  void *user;            /* USER: passed to host */
  double params[4];      /* USER: p0..p3, kernel arguments (no rebuild) */
} hc_gfunc_t;

hc_gexpr_t *hc_gexpr_computable(hc_grid_t *g, const hc_gfunc_t *fn);
/* Shorthands: the coordinate x_axis and the index i_axis. */
hc_gexpr_t *hc_gexpr_coord(hc_grid_t *g, uint32_t axis);
hc_gexpr_t *hc_gexpr_index(hc_grid_t *g, uint32_t axis);

/* ---------------------------------------------------------------- arithmetic
 * on evaluables */

hc_gexpr_t *hc_gexpr_add(hc_grid_t *g, hc_gexpr_t *a,
                         hc_gexpr_t *b); /* a + b */
hc_gexpr_t *hc_gexpr_sub(hc_grid_t *g, hc_gexpr_t *a,
                         hc_gexpr_t *b); /* a - b */
hc_gexpr_t *hc_gexpr_mul(hc_grid_t *g, hc_gexpr_t *a,
                         hc_gexpr_t *b); /* a * b, pointwise */
hc_gexpr_t *hc_gexpr_scale(hc_grid_t *g, double s,
                           hc_gexpr_t *a); /* s a (s: argument) */
/* A(e): the operator applied to an evaluable. Applying an operator to an
 * expression with no grid function in it (only scalars) is an error: the
 * operator's points are undefined there. */
hc_gexpr_t *hc_gexpr_apply(hc_grid_t *g, hc_gop_t *op, hc_gexpr_t *e);

/* ---------------------------------------------------------------- operators */

/* A user stencil of rank 1..3: (A u)(i) = sum_k coeffs[k] u(i + offsets[k]),
 * offsets given as n groups of `rank` integers (|offset| <= 8). The offsets
 * are the kernel's structure, the coefficients its arguments. */
hc_gop_t *hc_gop_stencil(hc_grid_t *g, uint32_t rank, uint32_t n,
                         const int32_t *offsets, const double *coeffs);
/* The (2 rank + 1)-point Laplacian. h: `rank` spacings, or NULL for the
 * spacing of the grid it is evaluated on (so one operator serves every
 * level of a multigrid hierarchy). */
hc_gop_t *hc_gop_laplacian(hc_grid_t *g, uint32_t rank, const double *h);
typedef enum hc_gdiff {
  HC_GDIFF_FORWARD = 0,  /* (u(i+1) - u(i)) / h */
  HC_GDIFF_BACKWARD = 1, /* (u(i) - u(i-1)) / h */
  HC_GDIFF_CENTRAL = 2   /* (u(i+1) - u(i-1)) / 2h */
} hc_gdiff_t;
/* First difference along axis. h <= 0: the grid's spacing on that axis. */
hc_gop_t *hc_gop_diff(hc_grid_t *g, uint32_t rank, uint32_t axis,
                      hc_gdiff_t kind, double h);
/* Full-weighting restriction fine -> coarse, (1/4, 1/2, 1/4) per axis:
 * defined at coarse points whose 3^rank fine neighbours exist (the coarse
 * interior). */
hc_gop_t *hc_gop_restrict_fw(hc_grid_t *g, uint32_t rank);
/* (Bi/tri)linear prolongation coarse -> fine: defined everywhere. */
hc_gop_t *hc_gop_prolong_linear(hc_grid_t *g, uint32_t rank);
/* The identity (rank 0: any rank). */
hc_gop_t *hc_gop_identity(hc_grid_t *g, uint32_t rank);
hc_gop_t *hc_gop_add(hc_grid_t *g, hc_gop_t *a, hc_gop_t *b); /* A + B */
hc_gop_t *hc_gop_sub(hc_grid_t *g, hc_gop_t *a, hc_gop_t *b); /* A - B */
hc_gop_t *hc_gop_scale(hc_grid_t *g, double s, hc_gop_t *a);  /* s A */
hc_gop_t *hc_gop_compose(hc_grid_t *g, hc_gop_t *a,
                         hc_gop_t *b); /* A o B: A(B(u)) */

/* ---------------------------------------------------------------- evaluation
 */

/* dst = e on the box of range (NULL: the whole field) — one fused kernel
 * (plus one per materialised sub-expression). Fails with a message before
 * anything is built when: e is NULL (the recorded build error), dst is not
 * a real field of rank 1..3 on the grid's device, a field of e does not have
 * the shape its place in e needs, the box is empty of sense (negative or
 * wider than the field), a stencil would read outside a field for some
 * cell of the box, or dst itself is read at other points than the one being
 * written (an in-place update must be pointwise, or read only cells of the
 * other parity under an EVEN/ODD range). Cells outside the box are left
 * untouched. opts NULL: the grid's defaults. */
hc_status_t hc_grid_assign(hc_grid_t *g, hc_field_t *dst, hc_gexpr_t *e,
                           const hc_grid_range_t *range,
                           const hc_grid_options_t *opts);

typedef enum hc_grid_reduce_op {
  HC_GRID_SUM = 0,   /* sum of e */
  HC_GRID_SUMSQ = 1, /* sum of e^2 (for norms) */
  HC_GRID_MAXABS = 2 /* max |e| */
} hc_grid_reduce_op_t;

/* *out = op over the box of e evaluated on the grid of `like` (its shape,
 * spacing and origin; its values are not read unless e reads it). One fused
 * kernel with per-group partials in double (float where the device has no
 * fp64), summed on the host in double. */
hc_status_t hc_grid_reduce(hc_grid_t *g, hc_grid_reduce_op_t op,
                           const hc_field_t *like, hc_gexpr_t *e,
                           const hc_grid_range_t *range,
                           const hc_grid_options_t *opts, double *out);

/* ----------------------------------------------------------------
 * introspection */

typedef struct hc_grid_stats {
  uint32_t size; /* sizeof(hc_grid_stats_t) */
  uint32_t reserved_;
  uint64_t assignments;    /* hc_grid_assign + hc_grid_reduce calls that ran */
  uint64_t launches;       /* kernels launched (temporaries included) */
  uint64_t kernels_built;  /* distinct kernels generated by this grid */
  uint64_t cache_hits;     /* launches that found their kernel built */
  uint64_t materialised;   /* sub-expressions evaluated into temporaries */
  uint64_t staged;         /* launches of local-memory staged kernels */
  uint64_t host_compiled;  /* kernels compiled with the C compiler */
  uint64_t host_evaluated; /* launches run by the row evaluator */
  uint64_t compiler_fallbacks; /* host=auto fell back to EVAL (no compiler) */
} hc_grid_stats_t;
void hc_grid_stats(const hc_grid_t *g, hc_grid_stats_t *out);

/* Why compiled host kernels cannot be used by this grid (no C compiler, a
 * TMPDIR that is missing or mounted noexec), so that host=auto runs the
 * row evaluator; NULL when nothing stopped them. Owned by the grid. */
const char *hc_grid_compiler_unavailable(const hc_grid_t *g);

/* The text of the last kernel generated or used (portable dialect or C), or
 * "" (evaluator). Owned by the grid, valid until its next assignment. */
const char *hc_grid_last_source(const hc_grid_t *g);

#ifdef __cplusplus
}
#endif
#endif
