/* FIFOs and other special files named where hc reads a file: refused at
 * once with a message that says what they are, never a blocked open (a
 * FIFO named *.so in a plugin directory hung `hcrun --list`; one as input=,
 * f=, --pipeline-file or a .grid side file hung the run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static char out[65536], err[8192], dir[1024];

static void make_fifos(void) {
  snprintf(dir, sizeof dir, "%s/special", th_tmpdir());
  mkdir(dir, 0700);
  char p[1200];
  snprintf(p, sizeof p, "%s/plugins", dir);
  mkdir(p, 0700);
  static const char *const names[] = {"plugins/evil.so", "in.npy", "p.pipe", "ok.npy.grid"};
  for (int i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    CU_ASSERT_EQUAL(mkfifo(p, 0600), 0);
  }
}

/* Exit code of `hcrun ARGS` under a 20 s watchdog (124: it hung). */
static int hcrun(const char *args) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "HC_CACHE=0 timeout 20 %s/bin/hcrun %s", th_build_dir(), args);
  return th_run(cmd, out, sizeof out, err, sizeof err);
}

static void test_hcrun_refuses(void) {
  make_fifos();
  char args[4096];
  snprintf(args, sizeof args, "--list --plugin-dir=%s/plugins", dir);
  CU_ASSERT_EQUAL(hcrun(args), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "evil.so: a FIFO, not a regular file"));
  static const char *const runs[] = {
      "--backend=cpu --workload=simpson input=%s/in.npy", "--backend=cpu --workload=jacobi f=%s/in.npy",
      "--backend=cpu --workload=jacobi init=%s/in.npy",   "--backend=cpu --workload=multigrid f=%s/in.npy",
      "--backend=cpu --workload=bpm profile=%s/in.npy",   "--backend=cpu --workload=bpm launch=%s/in.npy",
      "--backend=cpu --workload=nbody init=%s/in.npy",    "--pipeline-file=%s/p.pipe",
      "--backend=cpu --workload=simpson input=%s", /* a directory */
  };
  for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
    snprintf(args, sizeof args, runs[i], dir);
    int rc = hcrun(args);
    if (rc != 2) fprintf(stderr, "\nhcrun %s: exit %d: %s\n", args, rc, err);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "not a regular file"));
  }
}

static void test_api_refuses(void) {
  alarm(60); /* a blocked open must fail the test, not hang it */
  hc_dtype_t dt;
  uint32_t rank;
  int64_t shape[4];
  void *data = NULL;
  char p[1200];
  snprintf(p, sizeof p, "%s/in.npy", dir);
  CU_ASSERT_EQUAL(hc_npy_read(p, &dt, &rank, shape, &data), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "a FIFO"));
  int fd = 7;
  CU_ASSERT_EQUAL(hc_open_regular(p, &fd), HC_ERR_INVALID_ARG);
  CU_ASSERT_EQUAL(fd, -1);
  CU_ASSERT_EQUAL(hc_open_regular(dir, &fd), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "a directory"));
  /* a FIFO as the optional .grid side file: ignored, the field loads */
  hc_device_t *dev = th_device("cpu");
  if (!dev) return;
  snprintf(p, sizeof p, "%s/ok.npy", dir);
  int64_t sh[1] = {3};
  double v[3] = {1, 2, 3};
  TH_ASSERT_OK(hc_npy_write(p, HC_F64, 1, sh, v));
  hc_field_t *f = NULL;
  TH_ASSERT_OK(hc_field_load_npy(dev, p, &f));
  CU_ASSERT_EQUAL(hc_field_count(f), 3);
  hc_field_destroy(f);
  char args[4096];
  snprintf(args, sizeof args, "--backend=cpu --workload=simpson input=%s", p);
  CU_ASSERT_EQUAL(hcrun(args), 0);
  alarm(0);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("special_files", NULL, NULL);
  CU_ADD_TEST(s, test_hcrun_refuses);
  CU_ADD_TEST(s, test_api_refuses);
}

TH_MAIN(register_tests)
