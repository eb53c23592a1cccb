/* bpm's schema: parameters, ports, the fp64 check, output shapes, and the
 * ops table that the descriptor (plugin.c) points at. */
#include <stdio.h>
#include <string.h>

#include <hc/workload_util.h>

#include "bpm.h"

#define BPM_BC_NAME_(e, s) "|" s
/* "|conductor|absorbing|transparent" from the one list; the schema skips
 * the leading bar. */
static const char bc_choices_[] = BPM_BC_LIST(BPM_BC_NAME_);
#undef BPM_BC_NAME_

static const hc_param_spec_t bpm_params[] = {
    {"dim", HC_PARAM_ENUM, 0, "2", 0, 0, "2|3", "2: scalar (y, z); 3: (x, y, z) by ADI splitting"},
    {"n", HC_PARAM_SHAPE, 0, "1000", 3, 1e6, NULL,
     "transverse unknowns: n (2-D; the paper used 100..3000), n or NXxNY (3-D, default 256)"},
    {"dtype", HC_PARAM_ENUM, 0, "c64", 0, 0, "c64|c128", "complex precision"},
    {"lambda", HC_PARAM_FLOAT, 0, "1.0", 1e-6, 1e6, NULL, "vacuum wavelength, um"},
    {"Ly", HC_PARAM_FLOAT, 0, "10", 1e-6, 1e9, NULL, "window width along y, um"},
    {"Lx", HC_PARAM_FLOAT, 0, "0", 0, 1e9, NULL, "window width along x (3-D), um; 0: Ly"},
    {"Lz", HC_PARAM_FLOAT, 0, "100", 1e-9, 1e12, NULL, "propagation length, um"},
    {"hz", HC_PARAM_FLOAT, 0, "0", 1, 0, NULL, "z step, um (adjusted so that steps*hz = Lz); 0: hy/pi as in the paper"},
    {"steps", HC_PARAM_INT, 0, "0", 0, 1e12, NULL, "number of z steps (instead of hz); 0: from hz"},
    {"theta", HC_PARAM_FLOAT, 0, "0.5", 0, 1, NULL, "weight of the implicit part (0.5: Crank-Nicolson)"},
    {"n0", HC_PARAM_FLOAT, 0, "0", 0, 100, NULL,
     "reference index n* of the envelope; 0: the largest index of the medium"},
    {"profile", HC_PARAM_STRING, 0, "uniform", 1, 0, NULL,
     "refractive index: uniform | slab | graded (parabolic core) | FILE.npy (n per node: shape (n) or (nx, ny), real "
     "or complex)"},
    {"n_clad", HC_PARAM_FLOAT, 0, "1.0", 1e-3, 100, NULL, "index of the cladding (of the whole medium when uniform)"},
    {"n_core", HC_PARAM_FLOAT, 0, "1.02", 1e-3, 100, NULL, "index of the core (slab, graded: on the axis)"},
    {"width", HC_PARAM_FLOAT, 0, "2", 1e-9, 1e9, NULL,
     "core width, um, centred in the window (also the region of the core power)"},
    {"bc", HC_PARAM_ENUM, 0, "conductor", 0, 0, bc_choices_ + 1,
     "walls: conductor (E = 0), absorbing (graded imaginary index layer), transparent (Hadley's TBC)"},
    {"absorb_width", HC_PARAM_FLOAT, 0, "0", 0, 1e9, NULL,
     "absorbing layer width at each wall, um; 0: an eighth of the window"},
    {"kappa", HC_PARAM_FLOAT, 0, "0.2", 0, 10, NULL,
     "imaginary index at the outer edge of the absorbing layer (quadratic grading)"},
    {"launch", HC_PARAM_STRING, 0, "mode", 1, 0, NULL,
     "input field: mode (sin(pi y/Ly), the paper's), gauss, or FILE.npy (shape (n) or (nx, ny)); the input port wins"},
    {"waist", HC_PARAM_FLOAT, 0, "1", 1e-9, 1e9, NULL, "gauss: waist w0 (field ~ exp(-r^2/w0^2)), um"},
    {"offset", HC_PARAM_VEC, 0, "0", 1, 0, NULL, "gauss: centre offset from the window centre, um: y, or x,y (3-D)"},
    {"tilt", HC_PARAM_VEC, 0, "0", -89, 89, NULL, "gauss: launch angle, degrees: y, or x,y (3-D)"},
    {"solver", HC_PARAM_ENUM, 0, "direct", 0, 0, "direct|richardson",
     "direct: Thomas (cpu) / scan-parallel Thomas in a work-group; richardson: the paper's one-parameter iteration "
     "(2-D)"},
    {"order", HC_PARAM_ENUM, 0, "2", 0, 0, "2|4",
     "transverse difference: 2 (3-point) or 4 (5-point, fourth order: a pentadiagonal matrix, p = q = 2; "
     "solver=richardson, 2-D, conductor or absorbing walls)"},
    {"iters", HC_PARAM_INT, 0, "20000", 1, 1e9, NULL, "richardson: most iterations per z step"},
    {"tol", HC_PARAM_FLOAT, 0, "0", 0, 1, NULL,
     "richardson: relative residual; 0: 1e-6 (c64), 1e-12 (c128), or 30 rounding units times the condition number if "
     "larger"},
    {"save_every", HC_PARAM_INT, 0, "0", 0, 1e12, NULL,
     "steps between saved rows of the intensity map and power trace; 0: about 256 rows"},
    {"group", HC_PARAM_INT, 0, "0", 0, 1024, NULL,
     "threads per line of the line solvers (2-D, 3-D y-lines; GPU tuning; rounded down to a power of two); 0: "
     "automatic"},
    {"tile", HC_PARAM_SHAPE, 0, "0x0", 0, 1024, NULL,
     "3-D x-lines work-group (GPU tuning): W neighbouring columns x C chunks of each column; 0x0: automatic"},
    {"image", HC_PARAM_SHAPE, 0, "1024x384", 16, 8192, NULL, "2-D intensity image size WxH (z across, y down)"},
    {"line", HC_PARAM_ENUM, 0, "auto", 0, 0, "auto|private|global",
     "2-D direct march on device languages: where a thread keeps its chunk of the line; private: registers (fast, "
     "but its build time and footprint grow with n/group); global: device memory; auto: private up to "
     "32 unknowns a thread"},
    {"forward_rhs", HC_PARAM_ENUM, 0, "auto", 0, 0, "auto|off",
     "3-D on device languages: the half-steps hand each other their right-hand sides where that applies (uniform "
     "medium, staged y-lines, walls other than transparent); off: never, for comparison"},
};

static const hc_port_spec_t bpm_inputs[] = {
    {"field", HC_DTYPES_COMPLEX, 1, 2, HC_PORT_OPTIONAL | HC_PORT_PRIMARY,
     "launch field E(y) (2-D, shape (n)) or E(x, y) (3-D, shape (nx, ny)); overrides launch="},
};
static const hc_port_spec_t bpm_outputs[] = {
    {"field", HC_DTYPES_COMPLEX, 1, 2, HC_PORT_PRIMARY, "E at z = Lz: shape (n) or (nx, ny)"},
    {"intensity", HC_DTYPES_REAL, 2, 2, 0,
     "|E|^2: 2-D the map of the saved steps, shape (rows, n); 3-D the cross-section at Lz, shape (nx, ny)"},
    {"power", HC_DTYPES_REAL, 1, 1, 0, "power in the window at every saved step"},
};

static int bpm_check(const hc_job_t *job, const hc_device_info_t *dev, char *why, size_t why_size) {
  return hc_check_fp64(job, "dtype", dev, why, why_size);
}

static hc_status_t bpm_describe_output(const hc_job_t *job, const char *port, hc_dtype_t *dtype, uint32_t *rank) {
  int f64 = !strcmp(hc_job_string(job, "dtype"), "c128");
  int dim = (int)(hc_job_string(job, "dim")[0] - '0');
  if (!strcmp(port, "field")) {
    *dtype = f64 ? HC_C128 : HC_C64;
    *rank = (uint32_t)(dim - 1);
  } else if (!strcmp(port, "intensity")) {
    *dtype = f64 ? HC_F64 : HC_F32;
    *rank = 2;
  } else if (!strcmp(port, "power")) {
    *dtype = f64 ? HC_F64 : HC_F32;
    *rank = 1;
  } else {
    return hc_error(HC_ERR_NOT_FOUND, "bpm has no output '%s'", port);
  }
  return HC_OK;
}

/* bpm does not split: each half-step of the 3-D ADI solves tridiagonal
 * systems along another axis, so slabs would need a transpose (all-to-all)
 * per half-step, and the 2-D march is one line at a time. */
static hc_status_t bpm_split(const hc_job_t *job, hc_split_t *split) {
  (void)job;
  snprintf(split->why, sizeof split->why,
           "bpm does not split (each ADI half-step solves along another axis: slabs would need a transpose per "
           "half-step)");
  return HC_OK;
}

const hc_workload_ops_t bpm_ops = {
    .size = sizeof(hc_workload_ops_t),
    .languages = HC_LANG_BIT(HC_LANG_HOST) | HC_LANG_BIT(HC_LANG_OPENCL_C) | HC_LANG_BIT(HC_LANG_CUDA_C),
    HC_WORKLOAD_PARAMS(bpm_params),
    HC_WORKLOAD_PORTS(bpm_inputs, bpm_outputs),
    .check = bpm_check,
    .describe_output = bpm_describe_output,
    .run = bpm_run,
    .split = bpm_split,
};
