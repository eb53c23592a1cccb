/* hc — status codes.
 *
 * One X-macro list generates the enum, hc_status_str() and hc_status_name():
 * add a code here and every table follows. Codes are append-only (ABI). */
#ifndef HC_STATUS_H
#define HC_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Exit codes of programs that report a status as their outcome (hcrun, and
 * any embedding tool that wants the same convention): hc_status_exit_code
 * maps every status to one of these. */
#define HC_EXIT_OK 0     /* success */
#define HC_EXIT_VERIFY 1 /* the run completed; its verification failed */
#define HC_EXIT_USAGE                              \
  2 /* the caller's input is wrong: an option,     \
       parameter, input file (missing, unreadable, \
       malformed, wrong dtype or rank) or pipeline */
#define HC_EXIT_UNAVAILABLE                       \
  3 /* a backend, device, workload or plugin that \
       cannot be had here */
#define HC_EXIT_RUNTIME                       \
  4 /* the run itself failed: memory, device, \
       kernel build or launch, writing results */

/* X(ENUM_SUFFIX, value, exit code, "human description") */
#define HC_STATUS_LIST(X)                                             \
  X(OK, 0, HC_EXIT_OK, "success")                                     \
  X(ERR_INVALID_ARG, 1, HC_EXIT_USAGE, "invalid argument")            \
  X(ERR_NO_MEMORY, 2, HC_EXIT_RUNTIME, "out of host memory")          \
  X(ERR_NOT_FOUND, 3, HC_EXIT_UNAVAILABLE, "not found")               \
  X(ERR_UNSUPPORTED, 4, HC_EXIT_UNAVAILABLE,                          \
    "not supported by this device or plugin")                         \
  X(ERR_PARAM, 5, HC_EXIT_USAGE, "bad parameter")                     \
  X(ERR_IO, 6, HC_EXIT_RUNTIME, "input/output error")                 \
  X(ERR_FORMAT, 7, HC_EXIT_USAGE, "malformed file or data")           \
  X(ERR_PLUGIN, 8, HC_EXIT_UNAVAILABLE, "plugin could not be loaded") \
  X(ERR_ABI, 9, HC_EXIT_UNAVAILABLE, "plugin ABI mismatch")           \
  X(ERR_DEVICE, 10, HC_EXIT_RUNTIME, "device error")                  \
  X(ERR_DEVICE_MEMORY, 11, HC_EXIT_RUNTIME, "out of device memory")   \
  X(ERR_BUILD, 12, HC_EXIT_RUNTIME, "kernel build failed")            \
  X(ERR_LAUNCH, 13, HC_EXIT_RUNTIME, "kernel launch failed")          \
  X(ERR_NO_DEVICE, 14, HC_EXIT_UNAVAILABLE, "no device available")    \
  X(ERR_VERIFY, 15, HC_EXIT_VERIFY, "verification failed")            \
  X(ERR_PIPELINE, 16, HC_EXIT_USAGE, "invalid pipeline")              \
  X(ERR_BUSY, 17, HC_EXIT_RUNTIME, "resource busy")                   \
  X(ERR_INTERNAL, 18, HC_EXIT_RUNTIME, "internal error")              \
  X(ERR_NUMERIC, 19, HC_EXIT_RUNTIME,                                 \
    "non-finite result (the computation diverged or overflowed)")

/* Which status a failure gets decides its exit code, so: a file the caller
 * names as input that cannot be opened or is not a regular file is
 * HC_ERR_INVALID_ARG (usage), a malformed one HC_ERR_FORMAT (usage); a read
 * or write that fails part-way, or an output that cannot be written, is
 * HC_ERR_IO (runtime). */

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
 * Exit codes of hcrun: the third column of HC_STATUS_LIST above
 * (hc_status_exit_code). */
typedef enum hc_status {
#define HC_STATUS_ENUM_(name, value, exit_code, text) HC_##name = value,
  HC_STATUS_LIST(HC_STATUS_ENUM_)
#undef HC_STATUS_ENUM_
} hc_status_t;

/* Human description of a status ("out of device memory"). Never NULL. */
const char *hc_status_str(hc_status_t status);
/* Symbolic name of a status ("HC_ERR_DEVICE_MEMORY"). Never NULL. */
const char *hc_status_name(hc_status_t status);
/* The exit code (HC_EXIT_*) a program reports for a status; HC_EXIT_RUNTIME
 * for a value that is no status. */
int hc_status_exit_code(hc_status_t status);

/* The detail message of the last failing call made by this thread: which
 * file, which parameter, the OpenCL build log, the CUDA error string.
 * Owned by the library, valid until the thread's next hc call. Never NULL. */
const char *hc_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
