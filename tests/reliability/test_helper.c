/* hc_run_helper (include/hc/plugin.h), which runs the plugin probe and
 * libhc-mpi's CUDA check: the report on the chosen descriptor, a crash's
 * signal, an exit status, a helper that hangs (killed with what it started
 * at the limit), one that cannot start, and bad arguments. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

typedef struct {
  hc_status_t st;
  char *report;
  int status, timed_out;
  double seconds;
} run_t;

/* /bin/sh -c script, its report on descriptor fd. */
static run_t run_sh(const char *script, int fd, double limit) {
  char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
  run_t r;
  const double t0 = hc_now();
  r.st = hc_run_helper(argv, NULL, fd, limit, &r.report, &r.status, &r.timed_out);
  r.seconds = hc_now() - t0;
  return r;
}

static void test_report_on_the_chosen_descriptor(void) {
  run_t r = run_sh("echo to-stdout; echo to-stderr >&2; echo report >&3; exit 5", 3, 10);
  TH_ASSERT_OK(r.st);
  CU_ASSERT_FALSE(r.timed_out);
  CU_ASSERT_STRING_EQUAL(r.report ? r.report : "", "report\n"); /* stdout and stderr go nowhere */
  CU_ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 5);
  free(r.report);
  r = run_sh("echo line", 1, 10);
  TH_ASSERT_OK(r.st);
  CU_ASSERT_STRING_EQUAL(r.report ? r.report : "", "line\n");
  CU_ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
  free(r.report);
  /* a report larger than the pipe holds arrives whole */
  r = run_sh("i=0; while [ $i -lt 20000 ]; do echo 0123456789; i=$((i+1)); done", 1, 30);
  TH_ASSERT_OK(r.st);
  CU_ASSERT_EQUAL(r.report ? strlen(r.report) : 0, 20000 * 11);
  free(r.report);
}

static void test_a_crash_gives_its_signal(void) {
  run_t r = run_sh("echo partial >&3; kill -SEGV $$", 3, 10);
  TH_ASSERT_OK(r.st);
  CU_ASSERT_FALSE(r.timed_out);
  CU_ASSERT(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV);
  CU_ASSERT_STRING_EQUAL(r.report ? r.report : "", "partial\n");
  free(r.report);
}

static void test_a_hung_helper_is_killed_with_its_children(void) {
  char marker[1200], script[2600];
  snprintf(marker, sizeof marker, "%s/helper-child-alive", th_tmpdir());
  unlink(marker);
  /* a child of the helper that would write the marker after the limit */
  snprintf(script, sizeof script, "(sleep 1.5; touch '%s') & echo started >&3; sleep 30", marker);
  run_t r = run_sh(script, 3, 0.5);
  TH_ASSERT_OK(r.st);
  CU_ASSERT_TRUE(r.timed_out);
  CU_ASSERT(r.seconds < 5);
  CU_ASSERT(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL);
  CU_ASSERT_STRING_EQUAL(r.report ? r.report : "", "started\n");
  free(r.report);
  usleep(2000 * 1000);
  CU_ASSERT_EQUAL(access(marker, F_OK), -1); /* its process group died with it */
}

static void test_a_helper_that_cannot_start(void) {
  char *argv[] = {"/nonexistent/hc-helper", NULL};
  char *report = NULL;
  int status = 0, timed_out = 0;
  CU_ASSERT_EQUAL(hc_run_helper(argv, NULL, 1, 10, &report, &status, &timed_out), HC_ERR_IO);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "cannot run /nonexistent/hc-helper"));
  CU_ASSERT_PTR_NULL(report);
}

static void test_bad_arguments(void) {
  char *argv[] = {"/bin/true", NULL}, *none[] = {NULL};
  char *report = NULL;
  int status = 0, timed_out = 0;
  CU_ASSERT_EQUAL(hc_run_helper(NULL, NULL, 1, 10, &report, &status, &timed_out), HC_ERR_INVALID_ARG);
  CU_ASSERT_EQUAL(hc_run_helper(none, NULL, 1, 10, &report, &status, &timed_out), HC_ERR_INVALID_ARG);
  CU_ASSERT_EQUAL(hc_run_helper(argv, NULL, 0, 10, &report, &status, &timed_out), HC_ERR_INVALID_ARG);
  CU_ASSERT_EQUAL(hc_run_helper(argv, NULL, 10, 10, &report, &status, &timed_out), HC_ERR_INVALID_ARG);
  CU_ASSERT_EQUAL(hc_run_helper(argv, NULL, 1, 10, NULL, &status, &timed_out), HC_ERR_INVALID_ARG);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("helper programs", NULL, NULL);
  CU_ADD_TEST(s, test_report_on_the_chosen_descriptor);
  CU_ADD_TEST(s, test_a_crash_gives_its_signal);
  CU_ADD_TEST(s, test_a_hung_helper_is_killed_with_its_children);
  CU_ADD_TEST(s, test_a_helper_that_cannot_start);
  CU_ADD_TEST(s, test_bad_arguments);
}

TH_MAIN(register_tests)
