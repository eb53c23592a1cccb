/* nbody — N point charges with masses, all pairs (seed 002).
 *
 *   a_i = (q_i/m_i) [ k Σ_j q_j r_ij / (|r_ij|² + ε²)^{3/2} + v_i × B ],
 *   r_ij = x_i - x_j,
 *
 * integrated by explicit Euler (the paper's) or the Boris pusher. Internal
 * declarations shared by the plugin's files. */
#ifndef NBODY_H
#define NBODY_H

#include <hc/partition.h>
#include <hc/plugin.h>
#include <stdint.h>

/* ---------------------------------------------------------------- config */

typedef struct nb_config {
  int64_t n; /* bodies; 0 until the initial state fixes it */
  int64_t steps;
  double dt, eps, k;
  double B[3];
  int f64;                                 /* dtype=f64 */
  int boris;                               /* integrator resolved (auto: Boris when B != 0) */
  int diagnostics;                         /* energy and momentum traces */
  int output_acc;                          /* output port acc */
  int serial;                              /* variant=serial-reference */
  int wg, bpt, unroll, slices, fast_rsqrt; /* tuning of the tiled kernel */
  const char *init;                        /* cube | plummer | two-stream | path.npy */
  uint64_t seed;
  double v0;
} nb_config_t;

/* Reads and checks the parameters (dt > 0, three components of B, ...).
 * HC_ERR_PARAM with a message naming the parameter. */
hc_status_t nb_config_read(const hc_job_t *job, nb_config_t *cfg);

/* ---------------------------------------------------------------- bodies */

/* Columns of one body in the host state and in a .npy initial state. */
enum { NB_X, NB_Y, NB_Z, NB_VX, NB_VY, NB_VZ, NB_Q, NB_M, NB_COLS };

typedef struct nb_bodies {
  int64_t n;
  double *s; /* n x NB_COLS, row-major: x y z vx vy vz q m */
} nb_bodies_t;

/* The initial state from (in precedence) the input `state`, init=file.npy or
 * a built-in init= distribution, then positions/velocities from the inputs
 * `pos`/`vel`. Sets cfg->n. HC_ERR_PARAM on bad input (nothing allocated). */
hc_status_t nb_bodies_init(hc_job_t *job, nb_config_t *cfg, nb_bodies_t *out);
void nb_bodies_free(nb_bodies_t *b);
/* The number of bodies nb_bodies_init will set up (a .npy init= is read
 * for it). */
hc_status_t nb_bodies_count(const hc_job_t *job, const nb_config_t *cfg, int64_t *n);

/* Is init= one of the built-in distributions (else a .npy path)? */
int nb_init_is_builtin(const char *init);

/* ---------------------------------------------------------------- reference */

/* float64 host reference of the Coulomb field sum E_i = Σ_j q_j r_ij /
 * (|r_ij|²+ε²)^{3/2} (k not applied) for the bodies idx[0..count), with the
 * kernels' conventions (see kernels.hcl: `guard`). out: count x 3. */
void nb_reference_field(const nb_bodies_t *b, double eps2, int guard, const int64_t *idx, int64_t count, double *out);

/* ---------------------------------------------------------------- kernels */

/* Host-language kernels (host_kernels.c), one per kernel of kernels.hcl and
 * per precision, with the same arguments. */
typedef struct nb_host_fns {
  hc_host_kernel_fn field, field_serial, update, reduce, accel, unpack;
} nb_host_fns_t;
extern const nb_host_fns_t nb_host_f32, nb_host_f64;

extern const char nbody_kernels_src[]; /* kernels.hcl, embedded */

/* Self-interaction. With eps^2 (in the working precision) large enough
 * that q_j * eps^-3 * 0 stays finite, r = 0 contributes nothing by itself
 * ("soft" mode); otherwise pairs with |r|^2 + eps^2 <= eps^2 are skipped
 * ("guard" mode), which skips j == i (and coincident bodies). */
static inline int nb_guard(double eps2, int f64) { return !(eps2 >= (f64 ? 1e-180 : 1e-18)); }

/* Bits of the field kernels' flags argument (the GPU kernels have them as
 * build options NB_POT and NB_GUARD). */
enum { NB_FLAG_POT = 1, NB_FLAG_GUARD = 2 };

/* Components of a diagnostics record: kinetic energy, potential energy,
 * momentum x, y, z. */
enum { NB_KE, NB_PE, NB_PX, NB_PY, NB_PZ, NB_DIAG };

/* ---------------------------------------------------------------- device state */

/* A scalar kernel argument in both precisions; the run passes the one of
 * its dtype. */
typedef struct nb_real_arg {
  float f;
  double d;
} nb_real_arg_t;

/* The simulation on one device: kernels, buffers and launch geometry. */
typedef struct nb_sim {
  hc_device_t *dev;
  const nb_config_t *cfg;
  int host;        /* kernels are host-language (cpu backend) */
  int guard;       /* see nb_guard */
  int diag_f64;    /* diagnostics buffers hold doubles */
  size_t es;       /* bytes of one real */
  int64_t n, npad; /* bodies, bodies with padding */
  int64_t lo, hi;  /* bodies the field and update kernels compute: [0, npad), or a part's slice */
  int nslices;     /* j range split for small N on big devices */
  int64_t slice_len;
  int ugroups;         /* groups of nbody_update with diagnostics */
  size_t host_rows;    /* rows per group of the host field kernel */
  int64_t host_groups; /* the groups it aims at over [lo, hi) (tuning x workers) */
  nb_real_arg_t eps2, dt, kc, b[3];
  hc_kernel_t *kfield, *kupdate, *kreduce, *kaccel, *kunpack;
  hc_buffer_t *pos, *vel, *field, *partial, *trace;
} nb_sim_t;

/* Builds the kernels, fixes the geometry, checks the device memory, then
 * allocates and uploads the state (sim.c). nb_sim_destroy frees it all,
 * also after a failed create. */
hc_status_t nb_sim_create(hc_device_t *dev, const nb_config_t *cfg, const nb_bodies_t *b, nb_sim_t *s);
/* The bodies [lo, hi) this simulation computes (a part's slice; the
 * default is all of them), with the host kernel's rows per group sized for
 * them, so that a small slice still keeps every worker busy. */
void nb_sim_set_slice(nb_sim_t *s, int64_t lo, int64_t hi);
void nb_sim_destroy(nb_sim_t *s);
/* The field of the current positions (all slices; or one group only). */
hc_status_t nb_sim_field(nb_sim_t *s, int one_group);
/* Launches each kernel of a step once, on a sliver of the work and
 * storing nothing that a step does not overwrite: lazy kernel compilation
 * (PoCL specialises per group size at the first launch) stays out of the
 * timed loop. */
hc_status_t nb_sim_warm_up(nb_sim_t *s);
/* One step from the field; step: index of the diagnostics record. */
hc_status_t nb_sim_update(nb_sim_t *s, int64_t step, int commit);
/* Output fields: (n,3) positions, velocities or accelerations. */
hc_status_t nb_sim_output3(nb_sim_t *s, const char *what, hc_field_t **out);

/* ---------------------------------------------------------------- split */

/* How a job splits (the ops table's split): replicated, each part owns a
 * slice of the bodies (split.c). */
hc_status_t nb_split(const hc_job_t *job, hc_split_t *split);
/* Every part's new positions of its slice into every part's state (after
 * a committed step), in part order. */
hc_status_t nb_split_share_positions(nb_sim_t *s, hc_part_t *part);
/* The diagnostics traces (steps+1 records) summed over the parts, in part
 * order, back into s->trace on every part. */
hc_status_t nb_split_reduce_traces(nb_sim_t *s, hc_part_t *part);

/* ---------------------------------------------------------------- run */

hc_status_t nb_run(hc_job_t *job);

#endif
