/* Error messages that stay readable: a message built from the last-error
 * message itself (hc_error("%s: %s", path, hc_last_error())) keeps both
 * halves, and every workload's "file cannot be opened" message names the
 * path and the cause. */
#include <stdio.h>
#include <string.h>

#include "harness.h"

static void test_error_from_itself(void) {
  hc_error(HC_ERR_IO, "/some/file.npy: cannot open: No such file or directory");
  CU_ASSERT_EQUAL(hc_error(HC_ERR_PARAM, "profile=%s: %s", "/some/file.npy", hc_last_error()), HC_ERR_PARAM);
  CU_ASSERT_STRING_EQUAL(hc_last_error(),
                         "profile=/some/file.npy: /some/file.npy: cannot open: No such file or directory");
  /* The message as the only argument, and as a later one after a long
   * prefix that would overrun the start of the message when formatted in
   * place. */
  hc_error(HC_ERR_IO, "cause");
  hc_error(HC_ERR_IO, "%s", hc_last_error());
  CU_ASSERT_STRING_EQUAL(hc_last_error(), "cause");
  char longp[200];
  memset(longp, 'x', sizeof longp - 1);
  longp[sizeof longp - 1] = '\0';
  hc_error(HC_ERR_IO, "tail");
  hc_error(HC_ERR_IO, "%s %s", longp, hc_last_error());
  CU_ASSERT_EQUAL(strlen(hc_last_error()), sizeof longp - 1 + 5);
  CU_ASSERT_STRING_EQUAL(hc_last_error() + sizeof longp, "tail");
  /* The prefix form formats from the message too. */
  hc_error(HC_ERR_IO, "base");
  hc_error_prefix(HC_ERR_IO, "[%s] ", hc_last_error());
  CU_ASSERT_STRING_EQUAL(hc_last_error(), "[base] base");
}

/* Every parameter of an in-tree workload that names a file to read. */
static const struct {
  const char *workload, *param;
} file_params[] = {
    {"simpson", "input"}, {"jacobi", "f"},    {"jacobi", "init"}, {"multigrid", "f"},
    {"nbody", "init"},    {"bpm", "profile"}, {"bpm", "launch"},
};

static void test_missing_file_named(void) {
  char path[512], cmd[2048], err[8192];
  snprintf(path, sizeof path, "%s/no-such-dir/in.npy", th_tmpdir());
  for (size_t i = 0; i < sizeof file_params / sizeof file_params[0]; i++) {
    snprintf(cmd, sizeof cmd, "%s/bin/hcrun --backend=cpu --workload=%s %s=%s", th_build_dir(), file_params[i].workload,
             file_params[i].param, path);
    int rc = th_run(cmd, NULL, 0, err, sizeof err);
    char want[600];
    snprintf(want, sizeof want, "%s=%s: ", file_params[i].param, path);
    int named = strstr(err, want) != NULL, cause = strstr(err, "No such file or directory") != NULL;
    if (rc != 2 || !named || !cause)
      fprintf(stderr, "%s %s=...: rc %d, stderr: %s\n", file_params[i].workload, file_params[i].param, rc, err);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_TRUE(named);
    CU_ASSERT_TRUE(cause);
    /* The path appears whole, never cut by the cause written over it. */
    CU_ASSERT_PTR_NULL(strstr(err, ": pen:"));
  }
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("messages", NULL, NULL);
  CU_ADD_TEST(s, test_error_from_itself);
  CU_ADD_TEST(s, test_missing_file_named);
}

TH_MAIN(register_tests)
