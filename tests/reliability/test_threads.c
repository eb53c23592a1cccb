/* Threads: two contexts in two threads, and one context shared by several
 * threads running jobs at once (on different devices in parallel, on the
 * same device serialised by the core). Also run under ThreadSanitizer
 * (scons sanitize=thread test). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define THREADS 4
#define ROUNDS 6

typedef struct {
  hc_context_t *ctx; /* shared, or NULL: the thread makes its own */
  uint32_t device;   /* index into the context's devices */
  int failures;
  char why[512];
} work_t;

/* A few verified jobs on one device: saxpy (test plugin) and, when built,
 * simpson on a built-in function with an analytic value. */
static void *worker(void *arg) {
  work_t *w = arg;
  hc_context_t *ctx = w->ctx;
  int own = ctx == NULL;
  if (own && hc_context_create(NULL, &ctx) != HC_OK) {
    snprintf(w->why, sizeof w->why, "context: %s", hc_last_error());
    w->failures++;
    return NULL;
  }
  hc_device_t *dev = NULL;
  uint32_t idx = own ? 0 : w->device;
  if (own) hc_device_find(ctx, "cpu", &idx);
  if (hc_device_open(ctx, idx, &dev) != HC_OK) {
    snprintf(w->why, sizeof w->why, "open: %s", hc_last_error());
    w->failures++;
    goto out;
  }
  for (int r = 0; r < ROUNDS; r++) {
    const char *wl =
        (r % 2 || !hc_workload_can_run(ctx, "simpson", hc_device_count(ctx) ? idx : 0, NULL)) ? "saxpy" : "simpson";
    hc_job_t *job = NULL;
    if (hc_job_create(ctx, wl, &job) != HC_OK) {
      snprintf(w->why, sizeof w->why, "create %s: %s", wl, hc_last_error());
      w->failures++;
      continue;
    }
    if (!strcmp(wl, "saxpy"))
      hc_job_set_kv(job, "n=20000");
    else
      hc_job_set_kv(job, "n=33x33x33"), hc_job_set_kv(job, "func=sinprod");
    hc_status_t st = hc_job_run(job, dev, HC_RUN_VERIFY);
    if (st != HC_OK) {
      snprintf(w->why, sizeof w->why, "%s on %s: %s", wl, hc_device_name(dev), hc_last_error());
      w->failures++;
    }
    hc_job_destroy(job);
  }
  hc_device_close(dev);
out:
  if (own) hc_context_destroy(ctx);
  return NULL;
}

static int setup(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/test-plugins", th_build_dir());
  setenv("HC_PLUGIN_PATH", dir, 1);
  return 0;
}

static void run_all(work_t *w, int n) {
  pthread_t t[THREADS];
  for (int i = 0; i < n; i++) CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, worker, &w[i]), 0);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < n; i++) {
    if (w[i].failures) fprintf(stderr, "thread %d: %s\n", i, w[i].why);
    CU_ASSERT_EQUAL(w[i].failures, 0);
  }
}

static void test_two_contexts_two_threads(void) {
  work_t w[2];
  memset(w, 0, sizeof w);
  run_all(w, 2);
}

static void test_shared_context(void) {
  hc_context_t *ctx = th_context();
  uint32_t ndev = hc_device_count(ctx);
  CU_ASSERT_TRUE_FATAL(ndev >= 1);
  work_t w[THREADS];
  memset(w, 0, sizeof w);
  for (int i = 0; i < THREADS; i++) {
    w[i].ctx = ctx;
    w[i].device = (uint32_t)i % ndev; /* several threads share a device */
  }
  run_all(w, THREADS);
}

static void *create_destroy(void *arg) {
  int *fails = arg;
  for (int i = 0; i < 5; i++) {
    hc_context_t *c = NULL;
    if (hc_context_create(NULL, &c) != HC_OK || hc_workload_count(c) == 0) (*fails)++;
    hc_context_destroy(c);
  }
  return NULL;
}

static void test_concurrent_context_creation(void) {
  pthread_t t[THREADS];
  int fails[THREADS] = {0};
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, create_destroy, &fails[i]);
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    CU_ASSERT_EQUAL(fails[i], 0);
  }
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("threads", setup, NULL);
  CU_ADD_TEST(s, test_two_contexts_two_threads);
  CU_ADD_TEST(s, test_shared_context);
  CU_ADD_TEST(s, test_concurrent_context_creation);
}

TH_MAIN(register_tests)
