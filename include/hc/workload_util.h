/* hc — small helpers for workload plugins (in-tree and out-of-tree alike):
 * the checks and messages every workload would otherwise write again.
 * Header-only (static inline over the public API), so a plugin needs
 * nothing beyond libhc. */
#ifndef HC_WORKLOAD_UTIL_H
#define HC_WORKLOAD_UTIL_H

#include <stdio.h>
#include <string.h>

#include "hc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when dt is a double-precision type (f64, c128). */
static inline int hc_dtype_is_double(hc_dtype_t dt) {
  return hc_dtype_real_part(dt) == HC_F64;
}

/* For a workload's check op: 1, with why = "needs fp64 (dtype=c128)", when
 * the job's parameter `param` names a double-precision dtype (f64, c128)
 * and the device has no fp64; else 0. */
static inline int hc_check_fp64(const hc_job_t *job, const char *param,
                                const hc_device_info_t *dev, char *why,
                                size_t why_size) {
  const char *name = hc_job_string(job, param);
  if (dev->fp64 || !hc_dtype_is_double(hc_dtype_from_name(name))) return 0;
  snprintf(why, why_size, "needs fp64 (%s=%s)", param, name);
  return 1;
}

/* ---- Poisson solvers on a grid (jacobi, multigrid): the same ports and
 * output description, for any workload that solves -Lap u = f on a 2-D or
 * 3-D grid with parameters `dim`, `n` (a shape) and `dtype` (f32|f64). */

/* Its ports, for hc_port_spec_t arrays; u_help describes the solution.
 * (Laid out by hand: clang-format breaks a macro's initialisers apart.) */
// clang-format off
#define HC_POISSON_INPUT_PORTS                                                 \
  {"f", HC_DTYPES_REAL, 2, 3, HC_PORT_OPTIONAL | HC_PORT_PRIMARY,              \
   "right-hand side as a field of the grid's shape (replaces f=...)"},         \
  {"u0", HC_DTYPES_REAL, 2, 3, HC_PORT_OPTIONAL,                               \
   "initial guess (warm start); its boundary values are kept"}
#define HC_POISSON_OUTPUT_PORTS(u_help)                                        \
  {"u", HC_DTYPES_REAL, 2, 3, HC_PORT_PRIMARY, u_help},                        \
  {"residual", HC_DTYPES_REAL, 2, 3, HC_PORT_OPTIONAL,                         \
   "f + Lap u at the interior, 0 on the boundary (residual=true)"}
// clang-format on

/* The grid's rank as given (dim=, else a shape n= of rank >= 2), 0 when
 * neither says. */
static inline int hc_poisson_dim(const hc_job_t *job) {
  if (hc_job_given(job, "dim")) return (int)hc_job_int(job, "dim");
  hc_shape_t n = hc_job_shape(job, "n");
  if (hc_job_given(job, "n") && n.rank >= 2) return (int)n.rank;
  return 0;
}

/* The grid's extents, for a workload's split: from n= when given, else
 * from the shape of the first field that sets the grid (the input field
 * f, the file f=*.npy, the input field u0, the file init_param=*.npy;
 * init_param NULL: none), else n's default. Returns how many extents it
 * wrote to shape (HC_MAX_DIMS of room): 1 for n=N (every axis N), 0 when
 * that file cannot be read (the run then says why). */
static inline uint32_t
hc_poisson_shape(const hc_job_t *job, const char *init_param, int64_t *shape) {
  const char *files[2] = {hc_job_string(job, "f"),
                          init_param ? hc_job_string(job, init_param) : NULL};
  const char *ports[2] = {"f", "u0"};
  for (int i = 0; i < 2 && !hc_job_given(job, "n"); i++) {
    const hc_field_t *in = hc_job_input(job, ports[i]);
    if (in) {
      memcpy(shape, hc_field_shape(in), hc_field_rank(in) * sizeof *shape);
      return hc_field_rank(in);
    }
    const char *path = files[i];
    const size_t len = path ? strlen(path) : 0;
    if (len > 4 && !strcmp(path + len - 4, ".npy")) {
      hc_dtype_t dt;
      uint32_t rank = 0;
      return hc_npy_read_rows(path, 0, 0, &dt, &rank, shape, NULL) == HC_OK
                 ? rank
                 : 0;
    }
  }
  hc_shape_t n = hc_job_shape(job, "n");
  memcpy(shape, n.dims, n.rank * sizeof *shape);
  return n.rank;
}

/* A describe_output op for the ports above (`workload` names it in the
 * message for another port). */
static inline hc_status_t
hc_poisson_describe(const hc_job_t *job, const char *workload, const char *port,
                    hc_dtype_t *dtype, uint32_t *rank) {
  if (strcmp(port, "u") != 0 && strcmp(port, "residual") != 0)
    return hc_error(HC_ERR_NOT_FOUND, "%s has no output port '%s'", workload,
                    port);
  *dtype = !strcmp(hc_job_string(job, "dtype"), "f64") ? HC_F64 : HC_F32;
  const int d = hc_poisson_dim(job);
  *rank = (uint32_t)(d ? d : 2);
  return HC_OK;
}

#ifdef __cplusplus
}
#endif
#endif
