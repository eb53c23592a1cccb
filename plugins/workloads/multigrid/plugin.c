/* multigrid — the workload's descriptor: parameters, ports, checks. The
 * grid, right-hand sides, ports and outputs are jacobi's, so the two drop
 * into the same pipelines. */
#include <stdio.h>
#include <string.h>

#include <hc/workload_util.h>

#include "mg.h"

static const hc_param_spec_t params[] = {
    {"dim", HC_PARAM_INT, 0, NULL, 2, 3, NULL,
     "2 (unit square) or 3 (unit cube); default: the rank of n=AxB[xC] or of the input field, else 2"},
    {"n", HC_PARAM_SHAPE, 0, "129", 5, 1 << 20, NULL,
     "grid points per axis including the boundary (h = 1/(n-1)), each 2^k+1 (5, 9, 17, 33, 65, 129, 257, ...): "
     "one number for every axis, or NXxNY[xNZ]; default with a field f: its shape"},
    {"f", HC_PARAM_STRING, 0, "sin", 0, 0, NULL,
     "right-hand side: sin (exact solution prod sin(pi x_d)), gauss (sigma 0.1 at the centre, unit mass), "
     "point (unit source at the centre point), zero, or a .npy file of the grid's shape"},
    {"dtype", HC_PARAM_ENUM, 0, "f32", 0, 0, "f32|f64", "element type"},
    {"tol", HC_PARAM_FLOAT, 0, "1e-6", 0, 1, NULL,
     "stop when the relative residual ||f + Lap u|| / ||f|| <= tol (checked after every cycle by an on-device "
     "reduction); 0: run exactly `cycles` cycles"},
    {"cycles", HC_PARAM_INT, 0, "30", 1, MG_MAX_RESIDUALS, NULL, "V-cycles (the most when tol is given)"},
    {"pre", HC_PARAM_INT, 0, "2", 0, 100, NULL, "smoothing sweeps before the coarse-grid correction"},
    {"post", HC_PARAM_INT, 0, "2", 0, 100, NULL, "smoothing sweeps after it"},
    {"smoother", HC_PARAM_ENUM, 0, "rbgs", 0, 0, "rbgs|jacobi",
     "red-black Gauss-Seidel (in place) or weighted Jacobi (omega)"},
    {"omega", HC_PARAM_FLOAT, 0, "0", 0, 1, NULL,
     "weighted Jacobi's weight; 0: 4/5 in 2-D, 6/7 in 3-D (the best smoothing factors); the paper's 2/3 also works"},
    {"coarse", HC_PARAM_INT, 0, "30", 1, 100000, NULL, "smoothing sweeps that solve the coarsest grid"},
    {"levels", HC_PARAM_INT, 0, "0", 0, MG_MAX_LEVELS, NULL,
     "grid levels (2 is the two-grid method); 0: all: the finest-spaced axes halved first until the spacings "
     "agree, then every axis down to 3 points"},
    {"fuse", HC_PARAM_ENUM, 0, "auto", 0, 0, "auto|recompute|materialise|stage",
     "grid expressions: shared sub-expressions recomputed, materialised or staged in local memory (docs/grid.md)"},
    {"host", HC_PARAM_ENUM, 0, "auto", 0, 0, "auto|compile|eval",
     "grid expressions on the cpu: generated C compiled at run time, or the row evaluator"},
    {"residual", HC_PARAM_BOOL, 0, "false", 0, 0, NULL, "also output the residual field f + Lap u"},
};

static const hc_port_spec_t inputs[] = {HC_POISSON_INPUT_PORTS};
static const hc_port_spec_t outputs[] = {HC_POISSON_OUTPUT_PORTS("the solution (spacing h, origin 0)")};

static int mg_check(const hc_job_t *job, const hc_device_info_t *dev, char *why, size_t n) {
  if (hc_check_fp64(job, "dtype", dev, why, n)) return 1;
  uint32_t langs = HC_LANG_BIT(HC_LANG_HOST) | HC_LANG_BIT(HC_LANG_OPENCL_C) | HC_LANG_BIT(HC_LANG_CUDA_C);
  if (!(dev->languages & langs)) {
    snprintf(why, n, "grid expressions need host, opencl-c or cuda-c kernels");
    return 1;
  }
  return 0;
}

static hc_status_t mg_describe(const hc_job_t *job, const char *port, hc_dtype_t *dtype, uint32_t *rank) {
  return hc_poisson_describe(job, "multigrid", port, dtype, rank);
}

static hc_status_t mg_run(hc_job_t *job) {
  mg_t m;
  hc_status_t st = mg_setup(job, &m);
  if (st == HC_OK) st = mg_solve(&m);
  mg_free(&m);
  return st;
}

static const hc_workload_ops_t mg_ops = {
    .size = sizeof(hc_workload_ops_t),
    .languages = HC_LANG_BIT(HC_LANG_HOST) | HC_LANG_BIT(HC_LANG_OPENCL_C) | HC_LANG_BIT(HC_LANG_CUDA_C),
    HC_WORKLOAD_PARAMS(params),
    HC_WORKLOAD_PORTS(inputs, outputs),
    .check = mg_check,
    .describe_output = mg_describe,
    .run = mg_run,
    .split = mg_split,
};

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        HC_ABI_MINOR,
                        HC_PLUGIN_WORKLOAD,
                        0,
                        "multigrid",
                        "1.0",
                        "Poisson's equation by geometric multigrid V-cycles written with grid expressions (seed 004)",
                        &mg_ops};
