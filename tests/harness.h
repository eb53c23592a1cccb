/* Shared harness for hc's CUnit test programs.
 *
 * Each test program defines register_tests() (adding its suites with
 * CU_add_suite / CU_ADD_TEST) and uses TH_MAIN. The program exits 0 only
 * when every suite's setup succeeded and every assertion passed; it prints
 * CUnit's summary. */
#ifndef HC_TEST_HARNESS_H
#define HC_TEST_HARNESS_H

#include <CUnit/Basic.h>
#include <hc/hc.h>
#include <hc/plugin.h>

/* A context over the build tree's plugins, created on first use and
 * destroyed at exit. */
hc_context_t *th_context(void);
/* Opens a device by spec ("cpu", "opencl:0", "auto"); NULL (and a
 * "skipped: ..." line on stdout) when it does not exist here. */
hc_device_t *th_device(const char *spec);
/* Prints "skipped: <why>" once per distinct message. */
void th_skip(const char *why);
/* Directory of the running test binary's build tree (build/). */
const char *th_build_dir(void);
/* A fresh temporary directory (removed at exit). */
const char *th_tmpdir(void);
/* Runs a command line through /bin/sh, capturing stdout and stderr (each
 * up to cap bytes, NUL-terminated; either may be NULL). Returns the exit
 * status, or -1 if it died by a signal. */
int th_run(const char *cmd, char *out, size_t out_cap, char *err, size_t err_cap);
/* Relative difference |a-b| / max(|b|, tiny). */
double th_rel(double a, double b);
/* 1 when path is missing or holds no entries. */
int th_dir_empty(const char *path);
/* `hcrun --device=DEVICE --workload=WORKLOAD --output=DIR ARGS` exits 2,
 * says needle on stderr and writes nothing to DIR (a fresh directory). */
void th_expect_usage_error(const char *workload, const char *device, const char *args, const char *needle);

/* A new job of context `in` for workload, with parameters "k=v k=v ..." (NULL or
 * "" for none); NULL when the workload or a parameter is refused. */
hc_job_t *th_job(hc_context_t *in, const char *workload, const char *params);

/* A field of `shape` on dev (f32 or f64) with pseudo-random values in
 * [-1, 1) from seed; NULL when it cannot be made. */
hc_field_t *th_random_field(hc_device_t *dev, hc_dtype_t dt, uint32_t rank, const int64_t *shape, unsigned seed);

/* 1 under a tool that makes the program many times slower (valgrind, or a
 * sanitizer build: HC_SANITIZED, set by tests/run.py): tests scale their
 * work down and drop wall-time bounds then. */
int th_slow_tool(void);

int th_main(int argc, char **argv, void (*register_tests)(void));
#define TH_MAIN(reg) \
  int main(int argc, char **argv) { return th_main(argc, argv, reg); }

/* Asserts a status and prints the last error when it is not the one. */
#define TH_ASSERT_OK(expr)                                                                                          \
  do {                                                                                                              \
    hc_status_t th_st_ = (expr);                                                                                    \
    if (th_st_ != HC_OK)                                                                                            \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr, hc_status_name(th_st_), hc_last_error()); \
    CU_ASSERT_EQUAL_FATAL(th_st_, HC_OK);                                                                           \
  } while (0)

#endif
