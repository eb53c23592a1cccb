/* nbody: the plugin's schema (parameters, ports) and descriptor. */
#include <stdio.h>
#include <string.h>

#include <hc/workload_util.h>

#include "nbody.h"

#define UNBOUNDED 1, 0 /* min > max: no range */

static const hc_param_spec_t params[] = {
    {"n", HC_PARAM_INT, 0, "4096", 1, 2147483647.0, NULL,
     "number of bodies (taken from the initial state when a file or input gives it)"},
    {"steps", HC_PARAM_INT, 0, "10", 0, 1e12, NULL, "time steps (0: only the initial state, e.g. with output_acc)"},
    {"dt", HC_PARAM_FLOAT, 0, "1e-3", UNBOUNDED, NULL, "time step, > 0"},
    {"eps", HC_PARAM_FLOAT, 0, "0.01", 0, 1e300, NULL, "softening length: r / (|r|^2 + eps^2)^(3/2)"},
    {"k", HC_PARAM_FLOAT, 0, "1", UNBOUNDED, NULL, "Coulomb constant"},
    {"B", HC_PARAM_VEC, 0, "0,0,0", UNBOUNDED, NULL, "uniform magnetic field bx,by,bz"},
    {"integrator", HC_PARAM_ENUM, 0, "auto", 0, 0, "auto|euler|boris",
     "euler: the paper's explicit Euler; boris: Boris pusher (keeps |v| in a pure magnetic field); "
     "auto: boris when B != 0, else euler"},
    {"init", HC_PARAM_STRING, 0, "cube", UNBOUNDED, NULL,
     "initial state: cube (uniform), plummer (Plummer-like sphere), two-stream, or a .npy file of shape "
     "(n,8) with rows x,y,z,vx,vy,vz,q,m"},
    {"seed", HC_PARAM_INT, 0, "1", 0, 9.2e18, NULL, "random seed of the built-in initial states"},
    {"v0", HC_PARAM_FLOAT, 0, "0.1", 0, 1e300, NULL,
     "built-in initial states: thermal speed (cube, plummer) or beam speed (two-stream)"},
    {"dtype", HC_PARAM_ENUM, 0, "f32", 0, 0, "f32|f64", "precision"},
    {"diagnostics", HC_PARAM_BOOL, 0, "false", UNBOUNDED, NULL,
     "total energy and momentum at every step (outputs energy, momentum)"},
    {"output_acc", HC_PARAM_BOOL, 0, "false", UNBOUNDED, NULL,
     "output the accelerations of the final state (port acc)"},
    {"variant", HC_PARAM_ENUM, 0, "tiled", 0, 0, "tiled|serial-reference",
     "tiled: the fast kernels; serial-reference: a plain serial double loop on the host (a benchmark peer)"},
    {"wg", HC_PARAM_INT, 0, "256", 32, 1024, NULL,
     "tiled kernel: work-group size = bodies per shared-memory tile (multiple of 32)"},
    {"bpt", HC_PARAM_INT, 0, "2", 1, 8, NULL, "tiled kernel: bodies per work-item (register blocking)"},
    {"unroll", HC_PARAM_INT, 0, "16", 1, 1024, NULL, "tiled kernel: unroll factor of the loop over a tile"},
    {"slices", HC_PARAM_INT, 0, "0", 0, 4096, NULL,
     "tiled kernel: split the j range in this many slices when N is too small to fill the device (0: auto)"},
    {"fast_rsqrt", HC_PARAM_BOOL, 0, "true", UNBOUNDED, NULL,
     "f32 on GPUs: the hardware approximate rsqrt (CUDA rsqrt.approx.ftz, OpenCL native_rsqrt)"},
};

/* Rank-2 (n,3) ports of positions, velocities and accelerations. */
static const hc_port_spec_t inputs[] = {
    {"pos", HC_DTYPES_REAL, 2, 2, HC_PORT_OPTIONAL | HC_PORT_PRIMARY, "positions (n,3), replacing the initial ones"},
    {"vel", HC_DTYPES_REAL, 2, 2, HC_PORT_OPTIONAL, "velocities (n,3), replacing the initial ones"},
    {"state", HC_DTYPES_REAL, 2, 2, HC_PORT_OPTIONAL, "initial state (n,8): x,y,z,vx,vy,vz,q,m (replaces init=)"},
};

static const hc_port_spec_t outputs[] = {
    {"pos", HC_DTYPES_REAL, 2, 2, HC_PORT_PRIMARY, "final positions (n,3)"},
    {"vel", HC_DTYPES_REAL, 2, 2, 0, "final velocities (n,3) (Boris: at the half step before the final positions)"},
    {"acc", HC_DTYPES_REAL, 2, 2, HC_PORT_OPTIONAL, "accelerations of the final state (n,3) (output_acc=true)"},
    {"energy", HC_DTYPES_REAL, 1, 1, HC_PORT_OPTIONAL, "total energy at steps 0..steps (diagnostics=true)"},
    {"momentum", HC_DTYPES_REAL, 2, 2, HC_PORT_OPTIONAL, "total momentum (steps+1, 3) (diagnostics=true)"},
};

static int nb_check(const hc_job_t *job, const hc_device_info_t *dev, char *why, size_t n) {
  if (hc_check_fp64(job, "dtype", dev, why, n)) return 1;
  if (!strcmp(hc_job_string(job, "variant"), "serial-reference") && !(dev->languages & HC_LANG_BIT(HC_LANG_HOST))) {
    strncpy(why, "variant=serial-reference runs host code: use the cpu device", n);
    return 1;
  }
  return 0;
}

static hc_status_t nb_describe_output(const hc_job_t *job, const char *port, hc_dtype_t *dtype, uint32_t *rank) {
  *dtype = !strcmp(hc_job_string(job, "dtype"), "f64") ? HC_F64 : HC_F32;
  *rank = !strcmp(port, "energy") ? 1 : 2;
  return HC_OK;
}

static const hc_workload_ops_t nb_ops = {
    .size = sizeof(hc_workload_ops_t),
    .languages = HC_LANG_BIT(HC_LANG_HOST) | HC_LANG_BIT(HC_LANG_OPENCL_C) | HC_LANG_BIT(HC_LANG_CUDA_C),
    HC_WORKLOAD_PARAMS(params),
    HC_WORKLOAD_PORTS(inputs, outputs),
    .check = nb_check,
    .describe_output = nb_describe_output,
    .run = nb_run,
    .split = nb_split,
};

HC_PLUGIN_DESCRIPTOR = {
    HC_ABI_MAJOR,
    HC_ABI_MINOR,
    HC_PLUGIN_WORKLOAD,
    0,
    "nbody",
    "1.0",
    "charged particles in a magnetic field, all pairs: Coulomb + Lorentz, Euler or Boris (seed 002)",
    &nb_ops};
