/* multigrid — Poisson's equation Δu = -f on the unit square or cube, u = 0
 * on the boundary (the jacobi workload's problem, right-hand sides and
 * outputs), by geometric multigrid V-cycles written entirely with grid
 * expressions:
 *
 *   smooth    u <- u + s (f + Δ_h u)      red-black Gauss-Seidel in place
 *                                          (s = 1 / Σ 2/h_d²), or weighted
 *                                          Jacobi (s ω, ping-pong)
 *   restrict  f_H <- R (f_h + Δ_h u_h)    the residual restricted in one
 *                                          fused kernel (no residual field)
 *   correct   u_h <- u_h + P u_H           linear prolongation, in place
 *   coarse    many smoothing sweeps on the coarsest grid (3 points per axis:
 *             one unknown, so they solve it)
 *
 * On grids whose spacings differ the levels first halve only the axes with
 * the finest spacing, until the spacings agree (semi-coarsening, semi.c).
 *
 * i.e. the two-grid operator of the seed paper, Q = S^p (I - P A_H^-1 R A_h) S^p,
 * applied recursively. */
#ifndef MULTIGRID_H
#define MULTIGRID_H

#include <hc/grid.h>
#include <hc/plugin.h>

#define MG_MAX_LEVELS 24
#define MG_MAX_RESIDUALS 200
#define MG_GAUSS_SIGMA 0.1 /* as jacobi's gauss right-hand side */

typedef enum { MG_RBGS, MG_JACOBI } mg_smoother_t;

typedef struct {
  int64_t n[3]; /* public extents (dim of them) */
  double h[3];
  unsigned semi;                 /* axes (bit d: axis d) that the next level halves, when
                                    not all of them (semi-coarsening, semi.c); 0: all */
  hc_field_t *u, *f, *t;         /* t: weighted Jacobi's second buffer */
  hc_field_t *r;                 /* semi-coarsening: the residual handed to semi.c */
  hc_gexpr_t *smooth_u;          /* u + s (f + Δu): into u (RB-GS) or t (Jacobi) */
  hc_gexpr_t *smooth_t;          /* t + s (f + Δt): into u (Jacobi) */
  hc_gexpr_t *copy_t;            /* t (Jacobi: an odd sweep count copies back) */
  hc_gexpr_t *restrict_residual; /* R (f + Δu) of this level: into the next f */
  hc_gexpr_t *correct;           /* u + P u_coarser */
  hc_gexpr_t *zero;
  hc_gexpr_t *residual; /* f + Δu */
} mg_level_t;

typedef struct {
  hc_job_t *job;
  hc_device_t *dev;
  /* A split run's part (split.c), NULL for a whole run: levels below
   * split_levels update the part's rows [slab_lo, slab_hi) of each level,
   * the coarser ones run whole on every part. */
  hc_part_t *part;
  int split_levels;
  /* The levels worth splitting, measured once the kernels are built
   * (mg_split_measure; HC_MG_SPLIT_MIN_POINTS unset), and what was
   * measured: µs per red half-sweep, whole / slab and exchange share. */
  int split_measured, split_worth_known, split_worth;
  char split_probe[256];
  int64_t slab_lo[MG_MAX_LEVELS], slab_hi[MG_MAX_LEVELS];
  int dim;
  hc_dtype_t dtype;
  size_t es;
  /* right-hand side */
  char rhs[16];     /* sin | gauss | point | zero | field */
  hc_field_t *f_in; /* a field given (port or file), or NULL */
  int f_in_owned;
  hc_field_t *u0; /* initial guess (port), or NULL */
  /* solver */
  mg_smoother_t smoother;
  double omega;
  int64_t pre, post, coarse, cycles;
  double tol;
  int nlevels;
  mg_level_t lv[MG_MAX_LEVELS];
  hc_grid_t *g;
  hc_grid_options_t gopt;
  hc_grid_range_t interior;
  /* results */
  double f_norm;
  double res[MG_MAX_RESIDUALS + 1]; /* relative residual before cycle 1, after each */
  int64_t done;
} mg_t;

/* setup.c: parameters and inputs (HC_ERR_PARAM naming the parameter or
 * file, before anything is allocated on the device), then the levels'
 * fields and expressions. */
hc_status_t mg_setup(hc_job_t *job, mg_t *m);
void mg_free(mg_t *m);

/* cycle.c */
hc_status_t mg_smooth(mg_t *m, int l, int64_t sweeps);
hc_status_t mg_vcycle(mg_t *m, int l);
/* ||f + Δu|| over the finest interior, relative to ||f|| */
hc_status_t mg_residual(mg_t *m, double *rel);

/* semi.c: the transfers of a level that halves only some axes */
hc_status_t mg_semi_restrict(mg_t *m, int l); /* f_{l+1} = R (f + Δu)_l */
hc_status_t mg_semi_correct(mg_t *m, int l);  /* u_l += P u_{l+1} */

/* split.c: the split over a device set. mg_split is the ops table's;
 * mg_split_setup plans the part's slabs once the levels are known. The
 * cycle's steps go through mg_assign (dst = e on range at level l: on a
 * slab level only the part's rows, then the neighbours' rows next to them
 * are exchanged), mg_restrict_to (level l's restricted residual into level
 * l + 1's f) and mg_reduce (a reduction over the finest interior, combined
 * over the parts). Each is the plain grid call in a whole run; outputs
 * are narrowed to the part's rows by hc_part_own_rows. */
hc_status_t mg_split(const hc_job_t *job, hc_split_t *split);
hc_status_t mg_split_setup(mg_t *m);
/* After the untimed warm-up cycle: which levels are worth splitting. */
hc_status_t mg_split_measure(mg_t *m);
int mg_slab_level(const mg_t *m, int l);
/* Between V-cycles (and once before the first, which starts measuring):
 * the parts' rows follow their measured speed (hc_part_rebalance), and
 * the slabs of every level with them. */
hc_status_t mg_rebalance(mg_t *m);
hc_status_t mg_assign(mg_t *m, int l, hc_field_t *dst, hc_gexpr_t *e, const hc_grid_range_t *range);
/* mg_assign on the part's rows and `wide` (at most MG_HALO) rows beyond
 * them on each side, with no exchange after it: for an assignment that
 * the neighbours make alike on those rows, from values that the last
 * exchange brought or this part computed alike (cycle.c says which). */
hc_status_t mg_assign_wide(mg_t *m, int l, hc_field_t *dst, hc_gexpr_t *e, const hc_grid_range_t *range, int64_t wide);
hc_status_t mg_restrict_to(mg_t *m, int l);
hc_status_t mg_reduce(mg_t *m, hc_grid_reduce_op_t op, hc_field_t *like, hc_gexpr_t *e, double *out);

/* solve.c */
hc_status_t mg_solve(mg_t *m);
/* The relative residual below which rounding, not the cycle, stops the
 * solve (computed from the dtype, the spacings and ||u|| / ||f||). */
hc_status_t mg_rounding_floor(mg_t *m, double *out);

#endif
