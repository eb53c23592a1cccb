/* bpm — finite-difference beam propagation (seed 003): the workload's
 * internal interface. The Fresnel (paraxial) equation
 *
 *   dE/dz = i/(2 k0 n0) * (d2E/dy2 [+ d2E/dx2] + V E),  V = k0^2 (n^2 - n0^2)
 *
 * (the sign that gives the guide mode the phase exp(-i (pi/Ly)^2 z/(2 k0 n0)))
 * is marched in z by the theta scheme
 *   (I - theta hz A) E^{k+1} = (I + (1-theta) hz A) E^k,
 * a tridiagonal complex system per step (2-D) or, in 3-D, a Peaceman-
 * Rachford ADI splitting into two batches of tridiagonal solves.
 *
 * Grid: n unknowns per transverse axis at y_i = (i+1) hy, hy = Ly/(n+1);
 * the walls y = 0 and y = Ly are the ghost nodes -1 and n (conductor: 0;
 * transparent: Hadley's extrapolation; absorbing: conductor behind a graded
 * imaginary-index layer). Lengths in micrometres. */
#ifndef BPM_BPM_H
#define BPM_BPM_H

#include <complex.h>
#include <hc/plugin.h>
#include <stddef.h>
#include <stdint.h>

/* Boundary kinds: X(ENUM, "name"). One list for the schema and the code. */
#define BPM_BC_LIST(X)      \
  X(CONDUCTOR, "conductor") \
  X(ABSORBING, "absorbing") \
  X(TRANSPARENT, "transparent")

typedef enum {
#define BPM_BC_ENUM_(e, s) BPM_BC_##e,
  BPM_BC_LIST(BPM_BC_ENUM_)
#undef BPM_BC_ENUM_
} bpm_bc_t;

typedef enum { BPM_PROFILE_UNIFORM, BPM_PROFILE_SLAB, BPM_PROFILE_GRADED, BPM_PROFILE_FILE } bpm_profile_t;
typedef enum { BPM_LAUNCH_MODE, BPM_LAUNCH_GAUSS, BPM_LAUNCH_FILE, BPM_LAUNCH_PORT } bpm_launch_t;
typedef enum { BPM_SOLVER_DIRECT, BPM_SOLVER_RICHARDSON } bpm_solver_t;
typedef enum { BPM_LINE_AUTO, BPM_LINE_PRIVATE, BPM_LINE_GLOBAL } bpm_line_t;

/* Everything a run needs, validated, in double precision. Axis 0 of a 3-D
 * field is x (slow), axis 1 is y (fast); a 2-D run has nx = 1. */
typedef struct {
  int dim;        /* 2 or 3 */
  int f64;        /* c128 (else c64) */
  int64_t nx, ny; /* unknowns per axis (nx = 1 in 2-D) */
  double Lx, Ly, Lz;
  double hx, hy, hz;
  int64_t steps, save_every, nsaved; /* nsaved rows: z = 0, every save_every steps, Lz */
  double theta, lambda, k0, n0, n_core, n_clad, width;
  bpm_bc_t bc;
  double absorb_width, kappa;
  bpm_solver_t solver;
  int order; /* transverse stencil: 2 (3-point) or 4 (5-point) */
  int64_t iters;
  double tol;
  bpm_profile_t profile;
  bpm_launch_t launch;
  double waist, offset[2], tilt[2]; /* [0] x, [1] y */
  int64_t group;                    /* threads per line request (0: auto) */
  int64_t tile_w, tile_c;           /* 3-D x-lines work-group request (0: auto) */
  int64_t image_w, image_h;
  int forward_rhs; /* forward_rhs=auto (1) or off (0) */
  bpm_line_t line; /* line=: where the 2-D direct march keeps the line */
} bpm_config_t;

/* The medium and the launch field on the host (double precision).
 * v[i*ny + j] = k0^2 (n^2 - n0^2) + i*absorption; core[] marks the guide
 * (1) for the core power; e0 the field at z = 0. */
typedef struct {
  double complex *v;
  unsigned char *core;
  double complex *e0;
  int v_uniform; /* every v[] equal: per-line coefficients collapse to one line */
} bpm_problem_t;

/* params.c: the schema and the ops table; plugin.c: run() and the descriptor. */
extern const hc_workload_ops_t bpm_ops;
hc_status_t bpm_run(hc_job_t *job);

/* setup.c: parameters -> config; HC_ERR_PARAM with a message on bad input. */
hc_status_t bpm_config_from_job(const hc_job_t *job, bpm_config_t *c);
/* A parameter's text, defaults included (for messages). */
const char *bpm_param_text(const hc_job_t *job, const char *name);

/* medium.c: profile, absorbing layer, core mask and launch field (reads the
 * .npy files and the input port). Frees with bpm_problem_free. */
hc_status_t bpm_problem_build(const hc_job_t *job, bpm_config_t *c, bpm_problem_t *p);
void bpm_problem_free(bpm_problem_t *p);

/* coef.c: the scheme's coefficients for one axis of lines.
 * Lines of length m along an axis with spacing h; their diagonals vary with
 * v (sampled at v[line*vl + k*vk]). With alpha = i hz/(2 k0 n0 h^2):
 *   LHS  tridiag(-theta alpha, 1 - theta alpha (-2 + h^2 v s), -theta alpha)
 *   RHS  diagonal 1 + (1-theta) alpha (-2 + h^2 v s), off (1-theta) alpha
 * (s = 1 in 2-D, 1/2 per axis in 3-D: the potential is split evenly). */
typedef struct {
  double complex alpha; /* i hz / (2 k0 n0 h^2) */
  double complex lo;    /* LHS off-diagonal: -theta alpha */
  double complex beta;  /* RHS off-diagonal: (1-theta) alpha */
  double vscale;        /* h^2 * s */
} bpm_axis_t;
bpm_axis_t bpm_axis(const bpm_config_t *c, double h, double share);
/* Thomas factors of the LHS of one line: cp[k] (the eliminated upper
 * diagonal) and inv[k] = 1/pivot[k]. dv(k) is the diagonal's v. */
void bpm_factor_line(const bpm_axis_t *a, double theta, int64_t m, const double complex *v, ptrdiff_t vstride,
                     double complex *cp, double complex *inv);
/* Solves LHS x = b for one line with the factors (b may alias x). */
void bpm_solve_line(const bpm_axis_t *a, int64_t m, const double complex *cp, const double complex *inv,
                    const double complex *b, double complex *x);
/* Hadley's transparent-boundary factor from the two nodes next to a wall:
 * ghost = edge * eta, with the phase of edge/inner clipped to point out. */
double complex bpm_tbc_eta(double complex edge, double complex inner);

/* band.c: the 2-D scheme by diagonals in the paper's storage (M: the LHS,
 * R: the explicit side; p = q = *pq), the stencil (order 2: 3-point, 4:
 * 5-point) and its symbol sum_k c_k e^{ik theta}, Richardson's tau. */
const double *bpm_stencil(int order, int *half);
double bpm_stencil_symbol(int order, double theta);
size_t bpm_band_size(int64_t n, int p, int q);
hc_status_t bpm_build_bands(const bpm_config_t *c, const bpm_axis_t *a, const bpm_problem_t *p, double complex **m,
                            double complex **r, int *pq);
double complex bpm_richardson_tau(const bpm_config_t *c, const bpm_axis_t *a, const bpm_problem_t *p, double *rho);
/* The same matrices as rows of 2 half + 1 entries (offsets -half..half). */
hc_status_t bpm_dense_bands(const bpm_config_t *c, const bpm_axis_t *a, const bpm_problem_t *p, double complex **m,
                            double complex **r, int *half);

/* march2d.c / adi3d.c: the device runs. They fill the outputs of the job. */
typedef struct {
  double compute_s, device_s;
  double step_s;              /* per z-step (device time when the device has timers) */
  double *power, *core_power; /* nsaved each (malloc'd) */
  void *intensity;            /* host copy of the intensity output (REAL) */
  hc_field_t *field;          /* E at z = Lz (device) */
  hc_field_t *intensity_f, *power_f;
  double iters_mean, iters_max; /* richardson */
  int64_t nonconverged;
  double bytes_per_step; /* algorithmic traffic of one step (3-D) */
} bpm_result_t;
hc_status_t bpm_run2d(hc_job_t *job, const bpm_config_t *c, const bpm_problem_t *p, bpm_result_t *r);
hc_status_t bpm_run3d(hc_job_t *job, const bpm_config_t *c, const bpm_problem_t *p, bpm_result_t *r);
void bpm_result_free(bpm_result_t *r);

/* output.c: PNG (libpng when built with it) and CSV under the output dir. */
hc_status_t bpm_write_files(hc_job_t *job, const bpm_config_t *c, const bpm_result_t *r);
/* colormap.c: a perceptual colormap (viridis), t in [0,1] -> RGB. */
void bpm_colormap(double t, unsigned char rgb[3]);

/* verify.c: checks the run against the discrete-exact guide mode, a host
 * double-precision march, or power conservation (whichever applies). */
hc_status_t bpm_verify(hc_job_t *job, const bpm_config_t *c, const bpm_problem_t *p, const bpm_result_t *r);
/* The same march on the host in double precision (2-D, direct solver):
 * E(Lz) into out[ny]. Used by verify and as the reference of the tests. */
hc_status_t bpm_host_march2d(const bpm_config_t *c, const bpm_problem_t *p, double complex *out);

/* devbuf.c: device buffers from double-precision host data, rounded to
 * the run's precision; kernels of kernels.hcl with the run's options. */
hc_status_t bpm_upload(hc_device_t *dev, int f64, const double complex *src, size_t count, hc_buffer_t **out);
hc_status_t bpm_upload_to(hc_buffer_t *buf, int f64, const double complex *src, size_t count);
/* Builds kernel `name` (host function host_fn for the cpu backend) with
 * "-DT=t [extra] [-DBPM_F64]". */
hc_status_t bpm_kernel(hc_device_t *dev, int f64, const char *name, hc_host_kernel_fn host_fn, const char *extra,
                       hc_kernel_t **out);
/* Launches over global0 x global1 items in groups of local0 x local1
 * (global1 = 0: a 1-D range; local0 = 0: the backend chooses). */
hc_status_t bpm_launch(hc_kernel_t *k, size_t global0, size_t global1, size_t local0, size_t local1, uint32_t nargs,
                       const hc_arg_t *args);

/* kernels.hcl, embedded at build time. */
extern const char bpm_kernels_src[];

#endif
