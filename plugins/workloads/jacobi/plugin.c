/* jacobi — the workload's descriptor: parameters, ports, checks. */
#include <stdio.h>
#include <string.h>

#include <hc/workload_util.h>

#include "jacobi.h"

static const hc_param_spec_t params[] = {
    {"dim", HC_PARAM_INT, 0, NULL, 2, 3, NULL,
     "2 (unit square) or 3 (unit cube); default: the rank of n=AxB[xC] or of the input field, else 2"},
    {"n", HC_PARAM_SHAPE, 0, "128", 3, 1 << 20, NULL,
     "grid points per axis including the boundary (h = 1/(n-1)): one number for every axis, or NXxNY[xNZ] "
     "in array order (last axis contiguous); default with a field f: its shape"},
    {"f", HC_PARAM_STRING, 0, "sin", 0, 0, NULL,
     "right-hand side: sin (from the exact solution u = prod sin(pi x_d)), gauss (sigma 0.1 at the centre), "
     "point (unit source at the centre point), zero, or a .npy file of the grid's shape"},
    {"f_mode", HC_PARAM_ENUM, 0, "auto", 0, 0, "auto|computed|stored",
     "built-in f computed in the kernel from per-axis factors (8 B/update in f32) or stored as a field "
     "(12 B/update); auto: computed for built-ins, stored for a field"},
    {"dtype", HC_PARAM_ENUM, 0, "f32", 0, 0, "f32|f64", "element type"},
    {"iters", HC_PARAM_INT, 0, "1000", 1, 1e15, NULL, "sweeps (the most when tol is given)"},
    {"tol", HC_PARAM_FLOAT, 0, "0", 1, 0, NULL,
     "stop when the relative residual ||f + Lap u|| / ||f|| <= tol, checked every `check` sweeps by an "
     "on-device reduction; 0: run exactly `iters` sweeps"},
    {"check", HC_PARAM_INT, 0, "100", 1, 1e15, NULL, "sweeps between residual checks and progress reports"},
    {"variant", HC_PARAM_ENUM, 0, "tiled", 0, 0, "naive|tiled",
     "naive: global memory only; tiled: tiles with halos in local/shared memory (3-D with a 2-D block: "
     "tiles marching along the slowest axis); on the cpu: a cache-blocked host kernel"},
    {"block", HC_PARAM_SHAPE, 0, NULL, 1, 1024, NULL,
     "work-group (cache block on the cpu) in the order of n, last extent the contiguous one: 8x8, 16x16, "
     "8x32, 8x8x8, ... (3-D tiled with a 2-D block: the marching tile); default: chosen per device"},
    {"depth", HC_PARAM_INT, 0, "2", 1, 4, NULL,
     "marching sweep (GPU): planes of each column loaded ahead of use, to keep enough loads in flight"},
    {"rows", HC_PARAM_INT, 0, "4", 1, 8, NULL,
     "marching sweep (GPU): rows (y) each work-item updates per plane, its y-neighbours in registers; the "
     "tile covers block rows x rows rows (block=2x128 rows=4: 8x128 points)"},
    {"sweeps_per_pass", HC_PARAM_INT, 0, "0", 0, 2, NULL,
     "sweeps per pass over memory: 2 on host devices (the cpu backend) with variant=tiled and blocks of whole "
     "rows: each cache block is swept twice while in cache (temporal blocking), which halves the memory traffic "
     "and gives the same field bit for bit; 1 on every device; 0: 2 where it runs and the two arrays outgrow the "
     "last-level cache, else 1"},
    {"sweeps_per_exchange", HC_PARAM_INT, 0, "2", 2, 64, NULL,
     "split runs: sweeps between two halo exchanges, and so the ghost rows each part keeps on a side with a "
     "neighbour, which it sweeps again as the neighbour does: fewer, larger exchanges where each one costs a wait "
     "(parts on GPUs, MPI ranks) for a little more work; the field is the same bit for bit"},
    {"stores", HC_PARAM_ENUM, 0, "auto", 0, 0, "auto|plain|streaming",
     "two sweeps per pass (cpu backend): streaming (non-temporal) stores, which skip the read of each written "
     "line, or plain stores; auto: streaming where the two arrays outgrow the last-level cache"},
    {"init", HC_PARAM_STRING, 0, "zero", 0, 0, NULL,
     "initial guess: zero, eigen (the discrete eigenvector prod sin(k_d pi x_d) of the Jacobi iteration, "
     "k from mode), or a .npy file (its boundary values are kept)"},
    {"mode", HC_PARAM_VEC, 0, "1", 1, 1e9, NULL, "wave numbers k of init=eigen: one for every axis or one per axis"},
    {"residual", HC_PARAM_BOOL, 0, "false", 0, 0, NULL, "also output the residual field f + Lap u"},
};

static const hc_port_spec_t inputs[] = {HC_POISSON_INPUT_PORTS};
static const hc_port_spec_t outputs[] = {
    HC_POISSON_OUTPUT_PORTS("the solution after the sweeps (spacing h, origin 0)")};

static int jacobi_check(const hc_job_t *job, const hc_device_info_t *dev, char *why, size_t n) {
  return hc_check_fp64(job, "dtype", dev, why, n);
}

static hc_status_t jacobi_describe(const hc_job_t *job, const char *port, hc_dtype_t *dtype, uint32_t *rank) {
  return hc_poisson_describe(job, "jacobi", port, dtype, rank);
}

static hc_status_t jacobi_run(hc_job_t *job) {
  jacobi_problem_t p;
  hc_status_t st = jacobi_problem_init(job, &p);
  if (st == HC_OK) st = jacobi_solve(job, &p);
  jacobi_problem_free(&p);
  return st;
}

static const hc_workload_ops_t jacobi_ops = {
    .size = sizeof(hc_workload_ops_t),
    .languages = HC_LANG_BIT(HC_LANG_HOST) | HC_LANG_BIT(HC_LANG_OPENCL_C) | HC_LANG_BIT(HC_LANG_CUDA_C),
    HC_WORKLOAD_PARAMS(params),
    HC_WORKLOAD_PORTS(inputs, outputs),
    .check = jacobi_check,
    .describe_output = jacobi_describe,
    .run = jacobi_run,
    .split = jacobi_split,
};

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        HC_ABI_MINOR,
                        HC_PLUGIN_WORKLOAD,
                        0,
                        "jacobi",
                        "1.0",
                        "Poisson's equation on the unit square/cube by Jacobi iteration (seed 001)",
                        &jacobi_ops};
