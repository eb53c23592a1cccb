/* Outputs that did not happen: --output is checked before anything runs
 * (exit 2), --json's status says "failed" when a write failed, and a
 * pipeline stage's extra files (CSV, PNG) carry the stage prefix of its .npy
 * outputs and are listed among the files written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

static char out[65536], err[8192];

static int hcrun(const char *args) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "HC_CACHE=0 %s/bin/hcrun %s", th_build_dir(), args);
  return th_run(cmd, out, sizeof out, err, sizeof err);
}

static int exists(const char *dir, const char *name) {
  char p[2048];
  struct stat sb;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return stat(p, &sb) == 0;
}

/* Before: the workload ran in full, then failed with exit 4. */
static void test_output_checked_first(void) {
  char dir[1024], file[1200], args[4096];
  snprintf(dir, sizeof dir, "%s/checked", th_tmpdir());
  mkdir(dir, 0700);
  snprintf(file, sizeof file, "%s/file", dir);
  FILE *f = fopen(file, "w");
  fclose(f);
  snprintf(args, sizeof args, "--backend=cpu --workload=jacobi n=33 --output=%s", file);
  CU_ASSERT_EQUAL(hcrun(args), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "not a directory"));
  CU_ASSERT_PTR_NULL(strstr(out, "sweeps")); /* nothing ran */
  snprintf(args, sizeof args, "--backend=cpu --workload=jacobi n=33 --output=%s/sub --json", file);
  CU_ASSERT_EQUAL(hcrun(args), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"status\": \"failed\""));
  CU_ASSERT_EQUAL(hcrun("--backend=cpu --workload=jacobi n=33 --output="), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "--output=: give a directory name"));
  CU_ASSERT_EQUAL(hcrun("--pipeline 'jacobi n=33 @cpu | simpson' --output="), 2);
  /* an output file that exists as a directory */
  char sub[1300];
  snprintf(sub, sizeof sub, "%s/u.npy", dir);
  mkdir(sub, 0700);
  snprintf(args, sizeof args, "--backend=cpu --workload=jacobi n=33 --output=%s", dir);
  CU_ASSERT_EQUAL(hcrun(args), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "u.npy exists and is not a regular file"));
  snprintf(sub, sizeof sub, "%s/3-simpson-integral.npy", dir);
  mkdir(sub, 0700);
  snprintf(args, sizeof args, "--pipeline 'bpm dim=2 n=31 steps=4 @cpu | abs2 | simpson' --output=%s", dir);
  CU_ASSERT_EQUAL(hcrun(args), 2);
  CU_ASSERT_FALSE(exists(dir, "1-bpm-field.npy")); /* nothing ran */
}

/* A write that fails after the run (a file size limit, SIGXFSZ ignored):
 * --json said "status": "ok" with exit 4. */
static void test_json_status_on_failed_write(void) {
  char args[4096];
  snprintf(args, sizeof args, "--backend=cpu --workload=jacobi n=33 --output=%s/big --json; exit $?'", th_tmpdir());
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "sh -c 'trap \"\" XFSZ; ulimit -f 1; HC_CACHE=0 %s/bin/hcrun %s", th_build_dir(), args);
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 4);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"status\": \"failed\""));
  CU_ASSERT_PTR_NULL(strstr(out, "\"status\": \"ok\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "writing outputs"));
}

/* Before: bpm and multigrid wrote DIR/power.csv, DIR/intensity.png and
 * DIR/multigrid_residuals.csv whatever the stage, and "wrote" omitted them. */
static void test_pipeline_extra_files(void) {
  char dir[1024], args[4096];
  snprintf(dir, sizeof dir, "%s/pipe", th_tmpdir());
  snprintf(args, sizeof args, "--pipeline 'bpm dim=2 n=31 steps=4 @cpu | abs2 | simpson' --output=%s", dir);
  CU_ASSERT_EQUAL(hcrun(args), 0);
  CU_ASSERT(exists(dir, "1-bpm-power.csv"));
  CU_ASSERT_FALSE(exists(dir, "power.csv"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "1-bpm-power.csv"));
  if (exists(dir, "1-bpm-intensity.png")) CU_ASSERT_PTR_NOT_NULL(strstr(out, "1-bpm-intensity.png"));
  CU_ASSERT_FALSE(exists(dir, "intensity.png"));
  snprintf(args, sizeof args, "--pipeline 'multigrid n=17 tol=1e-6 @cpu | simpson' --output=%s --json", dir);
  CU_ASSERT_EQUAL(hcrun(args), 0);
  CU_ASSERT(exists(dir, "1-multigrid-multigrid_residuals.csv"));
  CU_ASSERT_FALSE(exists(dir, "multigrid_residuals.csv"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "1-multigrid-multigrid_residuals.csv\""));
  /* a single run: no prefix, and listed */
  snprintf(args, sizeof args, "--backend=cpu --workload=bpm dim=2 n=31 steps=4 --output=%s/single", th_tmpdir());
  CU_ASSERT_EQUAL(hcrun(args), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "single/power.csv\n"));
}

/* The C API: the file list and the prefix. */
static void test_job_files(void) {
  hc_device_t *dev = th_device("cpu");
  if (!dev) return;
  hc_job_t *job = NULL;
  TH_ASSERT_OK(hc_job_create(th_context(), "multigrid", &job));
  TH_ASSERT_OK(hc_job_set_kv(job, "n=17"));
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/api", th_tmpdir());
  mkdir(dir, 0700);
  TH_ASSERT_OK(hc_job_set_output_dir(job, dir));
  TH_ASSERT_OK(hc_job_set_output_prefix(job, "x-"));
  TH_ASSERT_OK(hc_job_run(job, dev, 0));
  CU_ASSERT_EQUAL(hc_job_file_count(job), 1);
  char want[1200];
  snprintf(want, sizeof want, "%s/x-multigrid_residuals.csv", dir);
  CU_ASSERT_STRING_EQUAL(hc_job_file(job, 0) ? hc_job_file(job, 0) : "", want);
  CU_ASSERT(exists(dir, "x-multigrid_residuals.csv"));
  CU_ASSERT_PTR_NULL(hc_job_file(job, 1));
  hc_job_destroy(job);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("outputs", NULL, NULL);
  CU_ADD_TEST(s, test_output_checked_first);
  CU_ADD_TEST(s, test_json_status_on_failed_write);
  CU_ADD_TEST(s, test_pipeline_extra_files);
  CU_ADD_TEST(s, test_job_files);
}

TH_MAIN(register_tests)
