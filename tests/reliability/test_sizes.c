/* Sizes and counts at the ends of their documented ranges: no parameter is
 * narrowed to a smaller integer on its way to a kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static char out[65536], err[8192];

/* bpm with more than INT_MAX steps between two saved rows: the kernels'
 * int step count was the low 32 bits, so steps=2^32+3 ran 3 steps and
 * reported 4294967299 at once with exit 0. Now it really marches: still
 * running when killed after a second and a half. */
static void test_bpm_steps_not_truncated(void) {
  static const char *const backends[] = {"cpu", "opencl"};
  for (int b = 0; b < 2; b++) {
    hc_device_t *dev = th_device(backends[b]);
    if (!dev) continue;
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "HC_CACHE=0 timeout -s KILL 1.5 %s/bin/hcrun --backend=%s --workload=bpm n=8 steps=4294967299 "
             "save_every=4294967299",
             th_build_dir(), backends[b]);
    int rc = th_run(cmd, out, sizeof out, err, sizeof err);
    if (rc != 137) fprintf(stderr, "\nbpm on %s: exit %d\n%s%s", backends[b], rc, out, err);
    CU_ASSERT_EQUAL(rc, 137);
    CU_ASSERT_PTR_NULL(strstr(out, "4294967299"));
  }
}

/* bpm's line at the top of n's documented range (1e6), both precisions:
 * the direct march kept the whole line in a work-group's private memory,
 * which PoCL holds on one thread's stack, and n=700000 died there with
 * SIGSEGV; on GPUs its build took minutes. A long line now lives in device
 * memory (line=auto), so every device runs it; the private form, asked
 * for, is refused before any kernel where it cannot fit (exit 4, naming
 * the sizes and the stack). No signal either way. */
static void test_bpm_line_at_its_maximum(void) {
  static const char *const backends[] = {"cpu", "opencl"};
  static const char *const dtypes[] = {"c64", "c128"};
  for (int b = 0; b < 2; b++) {
    if (!th_device(backends[b])) continue;
    for (int d = 0; d < 2; d++) {
      char cmd[4096];
      snprintf(cmd, sizeof cmd, "ulimit -s 8192; %s/bin/hcrun --backend=%s --workload=bpm n=1000000 steps=1 dtype=%s",
               th_build_dir(), backends[b], dtypes[d]);
      int rc = th_run(cmd, out, sizeof out, err, sizeof err);
      if (rc != 0) fprintf(stderr, "\nbpm n=1e6 %s on %s: exit %d\n%s", dtypes[d], backends[b], rc, err);
      CU_ASSERT_EQUAL(rc, 0);
    }
  }
  if (!th_device("opencl") || hc_device_info(th_device("opencl"))->type != HC_DEVICE_CPU) return;
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "ulimit -s 8192; %s/bin/hcrun --backend=opencl --workload=bpm n=1000000 steps=1 dtype=c128 line=private",
           th_build_dir());
  int rc = th_run(cmd, out, sizeof out, err, sizeof err);
  if (rc != 4) fprintf(stderr, "\nbpm n=1e6 line=private on opencl: exit %d\n%s", rc, err);
  CU_ASSERT_EQUAL(rc, 4);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "private memory, which"));
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("sizes", NULL, NULL);
  CU_ADD_TEST(s, test_bpm_steps_not_truncated);
  CU_ADD_TEST(s, test_bpm_line_at_its_maximum);
}

TH_MAIN(register_tests)
