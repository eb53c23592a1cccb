/* Load: one embedding process, 8 threads, 1,000 jobs each on one shared
 * context, across the cpu and the first OpenCL device (when there is one),
 * mixed workloads (reduce, scale, simpson with verification) and jobs that
 * fail on purpose (a field the port cannot take, a required input left
 * unbound, a parameter value it does not take). Every result is checked, every
 * failure must be the expected one, and no buffer is left behind
 * (hc_context_live_buffers). Also run under ThreadSanitizer; under a slow
 * tool (th_slow_tool) each thread runs 60 jobs. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define THREADS 8
#define JOBS 1000
#define KINDS 6

typedef struct {
  int id, jobs;
  uint32_t devices[2];
  uint32_t ndevices;
  int done[KINDS];
  int failures;
  char why[512];
} load_t;

static void fail(load_t *w, const char *fmt, const char *a, const char *b) {
  if (!w->failures++) snprintf(w->why, sizeof w->why, fmt, a, b);
}

/* A field of n f64 values v, v+1, ... on dev (NULL on failure). */
static hc_field_t *ramp(hc_device_t *dev, int64_t n, double v) {
  hc_field_t *f = NULL;
  if (hc_field_create(dev, HC_F64, 1, &n, &f) != HC_OK) return NULL;
  double buf[64];
  for (int64_t i = 0; i < n && i < 64; i++) buf[i] = v + (double)i;
  if (hc_field_write(f, buf) != HC_OK) {
    hc_field_destroy(f);
    return NULL;
  }
  return f;
}

static double read0(hc_job_t *job, const char *port, size_t at) {
  hc_field_t *o = hc_job_output(job, port);
  double buf[64] = {NAN};
  if (!o || hc_field_read(o, buf) != HC_OK) return NAN;
  return buf[at];
}

static void one_job(load_t *w, hc_context_t *ctx, hc_device_t *dev, int i) {
  int kind = (i + w->id) % KINDS;
  const char *dn = hc_device_name(dev);
  double v = (double)(w->id * JOBS + i);
  hc_job_t *job = NULL;
  hc_field_t *in = NULL;
  hc_status_t st;
  switch (kind) {
  case 0: /* reduce op=sum of 64 values v .. v+63 */
    in = ramp(dev, 64, v);
    if (!in || hc_job_create(ctx, "reduce", &job) != HC_OK || hc_job_set_kv(job, "op=sum") != HC_OK ||
        hc_job_set_input(job, "in", in) != HC_OK || (st = hc_job_run(job, dev, 0)) != HC_OK)
      fail(w, "reduce on %s: %s", dn, hc_last_error());
    else if (read0(job, "value", 0) != 64 * v + 2016)
      fail(w, "reduce on %s: wrong sum%s", dn, "");
    break;
  case 1: /* scale factor=-2 */
    in = ramp(dev, 17, v);
    if (!in || hc_job_create(ctx, "scale", &job) != HC_OK || hc_job_set_kv(job, "factor=-2") != HC_OK ||
        hc_job_set_input(job, "in", in) != HC_OK || (st = hc_job_run(job, dev, 0)) != HC_OK)
      fail(w, "scale on %s: %s", dn, hc_last_error());
    else if (read0(job, "out", 16) != -2 * (v + 16))
      fail(w, "scale on %s: wrong value%s", dn, "");
    break;
  case 2: /* simpson, verified against its analytic value */
    if (hc_job_create(ctx, "simpson", &job) != HC_OK || hc_job_set_kv(job, "func=sinprod") != HC_OK ||
        hc_job_set_kv(job, "n=9x9x9") != HC_OK || hc_job_set_kv(job, "dtype=f64") != HC_OK ||
        (st = hc_job_run(job, dev, HC_RUN_VERIFY)) != HC_OK)
      fail(w, "simpson on %s: %s", dn, hc_last_error());
    else if (hc_job_verified(job, NULL) != 1)
      fail(w, "simpson on %s: not verified%s", dn, "");
    break;
  case 3: { /* on purpose: a c64 field on simpson's f32|f64 port */
    int64_t s[3] = {5, 5, 5};
    if (hc_field_create(dev, HC_C64, 3, s, &in) != HC_OK || hc_job_create(ctx, "simpson", &job) != HC_OK)
      fail(w, "simpson setup on %s: %s", dn, hc_last_error());
    else if ((st = hc_job_set_input(job, "f", in)) != HC_ERR_INVALID_ARG || !strstr(hc_last_error(), "c64"))
      fail(w, "a c64 field on simpson's port on %s: %s", dn, hc_status_name(st));
    break;
  }
  case 4: /* on purpose: reduce with its required input unbound */
    if (hc_job_create(ctx, "reduce", &job) != HC_OK)
      fail(w, "reduce: %s%s", hc_last_error(), "");
    else if ((st = hc_job_run(job, dev, 0)) == HC_OK || hc_job_output(job, "value"))
      fail(w, "reduce without input on %s: %s", dn, hc_status_name(st));
    break;
  case 5: /* on purpose: a parameter value it does not take */
    if (hc_job_create(ctx, "simpson", &job) != HC_OK)
      fail(w, "simpson: %s%s", hc_last_error(), "");
    else if ((st = hc_job_set_kv(job, "dtype=f16")) != HC_ERR_PARAM)
      fail(w, "simpson dtype=f16 on %s: %s", dn, hc_status_name(st));
    break;
  }
  w->done[kind]++;
  hc_job_destroy(job);
  hc_field_destroy(in);
}

static void *worker(void *arg) {
  load_t *w = arg;
  hc_context_t *ctx = th_context();
  hc_device_t *dev[2] = {NULL, NULL};
  for (uint32_t d = 0; d < w->ndevices; d++)
    if (hc_device_open(ctx, w->devices[d], &dev[d]) != HC_OK) {
      fail(w, "open: %s%s", hc_last_error(), "");
      return NULL;
    }
  for (int i = 0; i < w->jobs; i++) one_job(w, ctx, dev[(uint32_t)(i + w->id) % w->ndevices], i);
  for (uint32_t d = 0; d < w->ndevices; d++) hc_device_close(dev[d]);
  return NULL;
}

static void test_eight_threads_one_context(void) {
  hc_context_t *ctx = th_context();
  uint32_t devs[2], n = 0;
  if (hc_device_find(ctx, "cpu", &devs[n]) == HC_OK) n++;
  if (hc_device_find(ctx, "opencl", &devs[n]) == HC_OK)
    n++;
  else
    th_skip("the OpenCL half of the load test: no OpenCL device");
  CU_ASSERT_FATAL(n >= 1);
  /* warm up once per device (kernel builds, caches), then count buffers */
  load_t warm = {.id = 0, .jobs = KINDS * (int)n, .ndevices = n, .devices = {devs[0], devs[n - 1]}};
  worker(&warm);
  CU_ASSERT_EQUAL(warm.failures, 0);
  uint64_t live = hc_context_live_buffers(ctx);
  load_t w[THREADS];
  pthread_t t[THREADS];
  int jobs = th_slow_tool() ? 60 : JOBS;
  double t0 = hc_now();
  for (int i = 0; i < THREADS; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].id = i;
    w[i].jobs = jobs;
    w[i].ndevices = n;
    memcpy(w[i].devices, devs, sizeof devs);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, worker, &w[i]), 0);
  }
  int total = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    if (w[i].failures) fprintf(stderr, "thread %d: %d failures, first: %s\n", i, w[i].failures, w[i].why);
    CU_ASSERT_EQUAL(w[i].failures, 0);
    for (int k = 0; k < KINDS; k++) {
      CU_ASSERT(w[i].done[k] >= jobs / KINDS);
      total += w[i].done[k];
    }
  }
  CU_ASSERT_EQUAL(total, THREADS * jobs);
  CU_ASSERT_EQUAL(hc_context_live_buffers(ctx), live);
  fprintf(stderr, "(%d jobs on %u device(s) in %.2f s) ", total, n, hc_now() - t0);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("load", NULL, NULL);
  CU_ADD_TEST(s, test_eight_threads_one_context);
}

TH_MAIN(register_tests)
