/* hc — status codes.
 *
 * One X-macro list generates the enum, hc_status_str() and hc_status_name():
 * add a code here and every table follows. Codes are append-only (ABI). */
#ifndef HC_STATUS_H
#define HC_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(ENUM_SUFFIX, value, "human description") */
#define HC_STATUS_LIST(X)                                                      \
  X(OK, 0, "success")                                                          \
  X(ERR_INVALID_ARG, 1, "invalid argument")                                    \
  X(ERR_NO_MEMORY, 2, "out of host memory")                                    \
  X(ERR_NOT_FOUND, 3, "not found")                                             \
  X(ERR_UNSUPPORTED, 4, "not supported by this device or plugin")              \
  X(ERR_PARAM, 5, "bad parameter")                                             \
  X(ERR_IO, 6, "input/output error")                                           \
  X(ERR_FORMAT, 7, "malformed file or data")                                   \
  X(ERR_PLUGIN, 8, "plugin could not be loaded")                               \
  X(ERR_ABI, 9, "plugin ABI mismatch")                                         \
  X(ERR_DEVICE, 10, "device error")                                            \
  X(ERR_DEVICE_MEMORY, 11, "out of device memory")                             \
  X(ERR_BUILD, 12, "kernel build failed")                                      \
  X(ERR_LAUNCH, 13, "kernel launch failed")                                    \
  X(ERR_NO_DEVICE, 14, "no device available")                                  \
  X(ERR_VERIFY, 15, "verification failed")                                     \
  X(ERR_PIPELINE, 16, "invalid pipeline")                                      \
  X(ERR_BUSY, 17, "resource busy")                                             \
  X(ERR_INTERNAL, 18, "internal error")                                       \
  X(ERR_NUMERIC, 19, "non-finite result (the computation diverged or overflowed)")

/* Non-finite values (NaN, +-Inf), the one policy of every workload, the
 * grid library and hcrun:
 *   - Inputs a workload cannot use (the right-hand side or start of an
 *     iterative solver, a refractive-index profile, particle states) are
 *     refused before the run: HC_ERR_PARAM (hcrun: exit 2), naming the port
 *     or file and the first bad element (hc_job_check_finite).
 *   - Elsewhere they propagate: an integral or a glue stage over data with a
 *     NaN gives NaN, never a finite number that hides it.
 *   - A residual, error or convergence test never passes on NaN: a solver
 *     whose residual becomes non-finite stops with HC_ERR_NUMERIC (exit 4),
 *     naming the step; a verification fails on any non-finite metric
 *     (hc_job_run with HC_RUN_VERIFY: HC_ERR_VERIFY, exit 1).
 *   - Reports print them as nan, inf, -inf; hcrun --json encodes them as the
 *     strings "NaN", "Infinity" and "-Infinity" (JSON has no such numbers).
 *
 * Exit codes of hcrun by status: HC_OK 0; HC_ERR_VERIFY 1; HC_ERR_PARAM,
 * HC_ERR_INVALID_ARG, HC_ERR_FORMAT, HC_ERR_PIPELINE 2 (usage); HC_ERR_NO_DEVICE,
 * HC_ERR_UNSUPPORTED, HC_ERR_NOT_FOUND, HC_ERR_PLUGIN 3 (unavailable); every
 * other status 4 (runtime error). */
typedef enum hc_status {
#define HC_STATUS_ENUM_(name, value, text) HC_##name = value,
  HC_STATUS_LIST(HC_STATUS_ENUM_)
#undef HC_STATUS_ENUM_
} hc_status_t;

/* Human description of a status ("out of device memory"). Never NULL. */
const char *hc_status_str(hc_status_t status);
/* Symbolic name of a status ("HC_ERR_DEVICE_MEMORY"). Never NULL. */
const char *hc_status_name(hc_status_t status);

/* The detail message of the last failing call made by this thread: which
 * file, which parameter, the OpenCL build log, the CUDA error string.
 * Owned by the library, valid until the thread's next hc call. Never NULL. */
const char *hc_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
