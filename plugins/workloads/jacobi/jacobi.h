/* jacobi — Poisson's equation Δu = -f on the unit square or cube, u = 0 on
 * the boundary, by Jacobi iteration (seed 001). Declarations shared by the
 * workload's files.
 *
 * Internal axes: a problem is always held as three axes n[0] (slowest) ..
 * n[2] (fastest, contiguous); a 2-D grid has n[0] = 1 and its public axes 0
 * and 1 are internal axes 1 and 2. */
#ifndef JACOBI_H
#define JACOBI_H

#include <hc/plugin.h>

/* Built-in right-hand sides: X(ENUM, "name", analytic solution known). */
#define JACOBI_RHS_LIST(X) \
  X(SIN, "sin", 1)         \
  X(GAUSS, "gauss", 0)     \
  X(POINT, "point", 0)     \
  X(ZERO, "zero", 0)

typedef enum {
#define JACOBI_RHS_ENUM_(e, n, a) RHS_##e,
  JACOBI_RHS_LIST(JACOBI_RHS_ENUM_)
#undef JACOBI_RHS_ENUM_
      RHS_FIELD /* a field: the input port f or a .npy file */
} jacobi_rhs_t;

typedef enum { INIT_ZERO, INIT_EIGEN, INIT_FIELD } jacobi_init_t;
typedef enum { VARIANT_NAIVE, VARIANT_TILED } jacobi_variant_t;
/* Sweep kernels: the paper's two, and the marching one that a 2-D block
 * selects for a tiled 3-D sweep on a device compiling source. */
typedef enum { SWEEP_NAIVE, SWEEP_TILED, SWEEP_MARCH } jacobi_sweep_t;

/* Width of the Gaussian right-hand side (standard deviation). */
#define JACOBI_GAUSS_SIGMA 0.1

/* Work-group of the reduction kernels (kernels.hcl RED_X x RED_Y). */
#define JACOBI_RED_X 64
#define JACOBI_RED_Y 4

typedef struct {
  /* Grid. */
  int dim;
  int64_t n[3];
  double h[3], w[3]; /* spacing and 1/h² (0 for the missing 2-D axis) */
  double c[3], cf;   /* Jacobi weights: c_d = w_d / 2Σw, cf = 1 / 2Σw */
  size_t cells;      /* all points */
  size_t interior;   /* updated points */
  hc_dtype_t dtype;
  size_t es; /* element bytes */

  /* Right-hand side: built-in (a product A g0 g1 g2) or a field. */
  jacobi_rhs_t rhs;
  int f_stored;        /* 1: f read from memory, 0: computed from tables */
  hc_field_t *f_field; /* the f field on the device, or NULL */
  int f_owned;         /* 0: borrowed from the input port */

  /* Start. */
  jacobi_init_t init;
  int mode[3];    /* eigenvector wave numbers per internal axis */
  hc_field_t *u0; /* the initial field on the device, or NULL */
  int u0_owned;

  /* Stopping. */
  int64_t iters, check;
  double tol;

  /* Kernels. */
  jacobi_variant_t variant;
  jacobi_sweep_t sweep;
  int block[3]; /* internal order; 1 on axes the block does not cut */
  int block_rank;
  int block_given;
  int depth;           /* marching sweep: planes loaded ahead */
  int rows;            /* marching sweep: rows (y) per work-item */
  int sweeps_per_pass; /* asked for: 1, 2 (host tiled kernel), 0 auto */
  int stores;          /* two sweeps per pass: 0 auto, 1 plain, 2 streaming */
  int want_residual;

  /* A split run (hc_job_part): the arrays hold rows [off, off + n[ax]) of
   * the global grid gn along internal axis ax (public axis 0), ghost rows
   * included; tables are evaluated at global indices, so every point gets
   * the same arithmetic as in a whole run. Whole runs: gn = n, off = 0. */
  hc_part_t *part;
  int ax;
  int64_t gn[3], off;
  size_t interior_global;
  /* The rows [own_lo, own_hi) along ax whose interior points the norms
   * count: the part's own rows (the interior in a whole run). */
  int own_lo, own_hi;
} jacobi_problem_t;

/* setup.c: reads and checks the parameters and inputs of the job (every
 * user error is HC_ERR_PARAM naming the parameter or file) and loads the
 * fields it names onto the device. jacobi_problem_free releases them. */
hc_status_t jacobi_problem_init(hc_job_t *job, jacobi_problem_t *p);
void jacobi_problem_free(jacobi_problem_t *p);
/* Narrows the problem to the part's rows plus its ghost rows (again after
 * they moved: hc_part_rebalance). */
void jacobi_localize(jacobi_problem_t *p);
/* The workload's split (ops->split): slabs along public axis 0, two ghost
 * rows, for built-in right-hand sides and starts. */
hc_status_t jacobi_split(const hc_job_t *job, hc_split_t *split);

/* rhs.c: the built-in right-hand sides and the closed forms. Tables are
 * per internal axis, lengths n[0], n[1], n[2], concatenated; the first
 * factor carries the amplitude A (also returned). */
void jacobi_rhs_tables(const jacobi_problem_t *p, double *tab, double *amplitude);
/* Π_d sin(k_d π x_d) (k = 1 on every axis when mode is NULL). */
void jacobi_sine_tables(const jacobi_problem_t *p, const int *mode, double *tab);
/* The Jacobi eigenvalue of the mode k: Σ w_d cos(k_d π h_d) / Σ w_d. */
double jacobi_lambda(const jacobi_problem_t *p, const int *mode);
/* The discrete solution for f = sin is c Π sin(π x_d); this is c. */
double jacobi_sin_discrete_scale(const jacobi_problem_t *p);
const char *jacobi_rhs_name(jacobi_rhs_t rhs);
int jacobi_rhs_from_name(const char *name, jacobi_rhs_t *out);
int jacobi_rhs_analytic(jacobi_rhs_t rhs);

/* Kernels (kernels.c). */
typedef struct {
  hc_kernel_t *sweep, *residual, *compare, *fill, *rfield;
  hc_kernel_t *sweep2;  /* two sweeps per pass (host tiled), or NULL */
  hc_buffer_t *scratch; /* sweep2's rings, a slice of `slice` elements per group */
  long slice;
  int stream; /* sweep2 writes with non-temporal stores */
  hc_language_t lang;
  size_t sweep_global[3], sweep_local[3];
  uint32_t sweep_dims;
  int chunk; /* planes per work-group of the march sweep */
  size_t red_global[2], red_local[2];
  size_t red_groups;
  int acc_f64;         /* partial sums are doubles */
  void *host_partials; /* host copy of the partials (4 per group) */
  char options[256];
} jacobi_kernels_t;

hc_status_t jacobi_kernels_create(hc_device_t *dev, jacobi_problem_t *p, jacobi_kernels_t *k);
/* The launch geometry for the part's new rows (hc_part_rebalance): the
 * kernels are made again only where their build options changed. */
hc_status_t jacobi_kernels_resize(hc_device_t *dev, jacobi_problem_t *p, jacobi_kernels_t *k);
void jacobi_kernels_destroy(jacobi_kernels_t *k);
/* The rows [r0, r1) of the slowest axis (internal axis ax) that a sweep
 * updates; all of them are [1, n[ax] - 1). */
typedef struct {
  int r0, r1;
} jacobi_rows_t;
/* One sweep in -> out over rows (none when r1 <= r0). */
hc_status_t jacobi_sweep(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_buffer_t *in, hc_buffer_t *out,
                         hc_buffer_t *f, hc_buffer_t *tab, jacobi_rows_t rows);
/* sweep2's slice of the scratch per group: a zeroed pad of this many bytes
 * before and after its ring (the whole-row updates of a 2-D ring row read
 * one element past each end), and the slices stay 64-byte aligned. */
#define JACOBI_RING_PAD_BYTES 64
/* Two sweeps in -> out in one pass over memory (k->sweep2 only): the
 * second sweep's rows; `in` must hold current values two rows beyond them
 * on each side (the first sweep runs on them and one more row each side,
 * in the kernel's own scratch). */
hc_status_t jacobi_sweep2(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_buffer_t *in, hc_buffer_t *out,
                          hc_buffer_t *f, hc_buffer_t *tab, jacobi_rows_t rows);
/* The partial sums of the residual kernel (2 per group) or the compare
 * kernel (4 per group), summed on the host. */
hc_status_t jacobi_residual(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_buffer_t *u, hc_buffer_t *f,
                            hc_buffer_t *tab, hc_buffer_t *partial, double *r2, double *f2);
hc_status_t jacobi_compare(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_buffer_t *u, hc_buffer_t *tab2, double s1,
                           double s2, hc_buffer_t *partial, double out[4]);
hc_status_t jacobi_fill(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_buffer_t *out, hc_buffer_t *tab, double s);
hc_status_t jacobi_residual_field(jacobi_kernels_t *k, const jacobi_problem_t *p, hc_buffer_t *u, hc_buffer_t *f,
                                  hc_buffer_t *tab, hc_buffer_t *r);
/* Uploads a double table as the problem's element type. */
hc_status_t jacobi_upload_table(hc_device_t *dev, const jacobi_problem_t *p, const double *tab, size_t count,
                                hc_buffer_t **out);

/* host_kernels.c: the cpu (host-language) versions, per element type. */
typedef struct {
  hc_host_kernel_fn sweep, sweep2, residual, compare, fill, rfield;
} jacobi_host_fns_t;
extern const jacobi_host_fns_t jacobi_host_fns[2][2]; /* [dtype is f64][f stored] */

/* solve.c: runs the job once it is set up. */
hc_status_t jacobi_solve(hc_job_t *job, jacobi_problem_t *p);

/* Host reference sweeps in double (verify.c) for right-hand sides with no
 * closed form: small problems only. */
hc_status_t jacobi_reference(const jacobi_problem_t *p, const double *f, const double *u0, int64_t sweeps, double *u);

#endif
