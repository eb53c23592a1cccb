/* The cpu backend's devices over disjoint cores (HC_CPU_DEVICES=2, one
 * thread each, HC_CPU_PIN on): the thread that drives each part of a
 * split run stays on the core its device leaves it for the run
 * (device_bind_thread), and gets its cores back afterwards; with
 * HC_CPU_PIN=0 nothing is bound. The test workload "parts" reports its
 * part threads' cores. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/partition.h>

#include "harness.h"

/* The first two cores this process may run on; 0 when it has fewer. */
static int first_two(int *a, int *b) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) return 0;
  int n = 0;
  for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
    if (CPU_ISSET(c, &allowed)) *(n++ ? b : a) = c;
  return 1;
}

/* Splits "parts" over cpu:0,cpu:1 in ctx; the parts' cores metrics. */
static void split_cores(hc_context_t *ctx, double *cores, double *core_sum) {
  hc_job_t *job = th_job(ctx, "parts", "rows=40 cols=8");
  hc_devset_t *set = NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(job);
  TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,cpu:1", "parts", &set));
  TH_ASSERT_OK(hc_job_run_split(job, set, 0));
  CU_ASSERT_EQUAL(hc_devset_parts(set), 2);
  *cores = *core_sum = -1;
  hc_job_metric_find(job, "cores", cores);
  hc_job_metric_find(job, "core_sum", core_sum);
  hc_job_destroy(job);
  hc_devset_destroy(set);
}

static void test_part_threads_bound(void) {
  int a, b;
  if (!first_two(&a, &b)) {
    th_skip("fewer than 2 cores: the cpu devices are not pinned");
    return;
  }
  cpu_set_t before, after;
  CU_ASSERT_EQUAL_FATAL(sched_getaffinity(0, sizeof before, &before), 0);
  double cores, core_sum;
  split_cores(th_context(), &cores, &core_sum);
  CU_ASSERT_EQUAL(cores, 1);        /* each part's thread on one core */
  CU_ASSERT_EQUAL(core_sum, a + b); /* cpu:0's and cpu:1's own */
  CU_ASSERT_EQUAL_FATAL(sched_getaffinity(0, sizeof after, &after), 0);
  CU_ASSERT(CPU_EQUAL(&before, &after)); /* this thread drove no part: untouched */
  /* HC_CPU_PIN=0: the devices are not pinned, nor are the parts' threads */
  setenv("HC_CPU_PIN", "0", 1);
  hc_context_t *free_ctx = NULL;
  TH_ASSERT_OK(hc_context_create(NULL, &free_ctx));
  split_cores(free_ctx, &cores, &core_sum);
  CU_ASSERT_EQUAL(cores, CPU_COUNT(&before));
  hc_context_destroy(free_ctx);
  unsetenv("HC_CPU_PIN");
}

/* Unset HC_CPU_THREADS, the cpu backend runs a thread per core this
 * process may run on (taskset, a batch system's cpuset, an MPI
 * launcher's binding), not per core of the host. */
static void test_default_threads_follow_the_affinity(void) {
  int a, b;
  if (!first_two(&a, &b)) {
    th_skip("fewer than 2 cores: every mask is the whole host");
    return;
  }
  cpu_set_t before, one;
  CU_ASSERT_EQUAL_FATAL(sched_getaffinity(0, sizeof before, &before), 0);
  CPU_ZERO(&one);
  CPU_SET(b, &one);
  CU_ASSERT_EQUAL_FATAL(sched_setaffinity(0, sizeof one, &one), 0);
  unsetenv("HC_CPU_THREADS");
  setenv("HC_CPU_DEVICES", "1", 1);
  CU_ASSERT_EQUAL(hc_host_cores(), 1);
  hc_context_t *ctx = NULL;
  TH_ASSERT_OK(hc_context_create(NULL, &ctx));
  hc_device_info_t info;
  uint32_t cpu = 0;
  TH_ASSERT_OK(hc_device_find(ctx, "cpu:0", &cpu));
  TH_ASSERT_OK(hc_device_query(ctx, cpu, &info));
  CU_ASSERT_EQUAL(info.compute_units, 1);
  hc_context_destroy(ctx);
  CU_ASSERT_EQUAL(sched_setaffinity(0, sizeof before, &before), 0);
  CU_ASSERT_EQUAL(hc_host_cores(), (uint32_t)CPU_COUNT(&before));
  setenv("HC_CPU_DEVICES", "2", 1);
  setenv("HC_CPU_THREADS", "2", 1);
}

static int setup(void) {
  setenv("HC_CPU_DEVICES", "2", 1);
  setenv("HC_CPU_THREADS", "2", 1);
  char path[4200];
  snprintf(path, sizeof path, "%s/test-plugins", th_build_dir()); /* "parts" */
  setenv("HC_PLUGIN_PATH", path, 1);
  return 0;
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("cpu devices' part threads", setup, NULL);
  CU_ADD_TEST(s, test_part_threads_bound);
  CU_ADD_TEST(s, test_default_threads_follow_the_affinity);
}

TH_MAIN(register_tests)
