/* Parameters: every type's parsing, ranges, defaults, and every error path,
 * through the public job API on the probe test workload. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/workload_util.h>

#include "harness.h"

static hc_job_t *job;

static int setup(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/test-plugins", th_build_dir());
  setenv("HC_PLUGIN_PATH", dir, 1);
  return hc_job_create(th_context(), "probe", &job) == HC_OK ? 0 : 1;
}
static int teardown(void) {
  hc_job_destroy(job);
  return 0;
}

/* Expects hc_job_set_kv to fail with HC_ERR_PARAM and a message holding
 * every fragment. */
static void expect_error(const char *kv, const char *frag1, const char *frag2) {
  hc_status_t st = hc_job_set_kv(job, kv);
  CU_ASSERT_EQUAL(st, HC_ERR_PARAM);
  const char *msg = hc_last_error();
  if (!strstr(msg, frag1) || (frag2 && !strstr(msg, frag2)))
    fprintf(stderr, "set %s: message '%s' lacks '%s' / '%s'\n", kv, msg, frag1, frag2 ? frag2 : "");
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, frag1));
  if (frag2) CU_ASSERT_PTR_NOT_NULL(strstr(msg, frag2));
}

static void test_defaults(void) {
  CU_ASSERT_EQUAL(hc_job_int(job, "count"), 10);
  CU_ASSERT_DOUBLE_EQUAL(hc_job_float(job, "ratio"), 0.5, 0);
  CU_ASSERT_EQUAL(hc_job_bool(job, "flag"), 0);
  CU_ASSERT_STRING_EQUAL(hc_job_string(job, "label"), "hello");
  CU_ASSERT_STRING_EQUAL(hc_job_string(job, "mode"), "fast");
  hc_shape_t s = hc_job_shape(job, "grid");
  CU_ASSERT_EQUAL(s.rank, 3);
  CU_ASSERT_EQUAL(s.dims[0], 4);
  CU_ASSERT_EQUAL(s.dims[2], 6);
  hc_vec_t v = hc_job_vec(job, "dir");
  CU_ASSERT_EQUAL(v.count, 3);
  CU_ASSERT_DOUBLE_EQUAL(v.v[2], 1.0, 0);
  CU_ASSERT_FALSE(hc_job_given(job, "count"));
  CU_ASSERT_FALSE(hc_job_given(job, "nodefault"));
}

static void test_int_forms(void) {
  struct {
    const char *text;
    int64_t want;
  } cases[] = {{"1", 1}, {"4k", 4096}, {"16M", 16 << 20}, {"512M", 512 << 20}, {"1e6", 1000000}, {"2.5e3", 2500}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    TH_ASSERT_OK(hc_job_set(job, "count", cases[i].text));
    CU_ASSERT_EQUAL(hc_job_int(job, "count"), cases[i].want);
  }
  CU_ASSERT_TRUE(hc_job_given(job, "count"));
}

static void test_other_types(void) {
  TH_ASSERT_OK(hc_job_set_kv(job, "ratio=0.25"));
  CU_ASSERT_DOUBLE_EQUAL(hc_job_float(job, "ratio"), 0.25, 0);
  const char *yes[] = {"1", "true", "YES", "on"}, *no[] = {"0", "false", "no", "Off"};
  for (int i = 0; i < 4; i++) {
    TH_ASSERT_OK(hc_job_set(job, "flag", yes[i]));
    CU_ASSERT_EQUAL(hc_job_bool(job, "flag"), 1);
    TH_ASSERT_OK(hc_job_set(job, "flag", no[i]));
    CU_ASSERT_EQUAL(hc_job_bool(job, "flag"), 0);
  }
  TH_ASSERT_OK(hc_job_set_kv(job, "label=a b=c"));
  CU_ASSERT_STRING_EQUAL(hc_job_string(job, "label"), "a b=c");
  TH_ASSERT_OK(hc_job_set_kv(job, "mode=exact"));
  CU_ASSERT_STRING_EQUAL(hc_job_string(job, "mode"), "exact");
  TH_ASSERT_OK(hc_job_set_kv(job, "grid=7"));
  CU_ASSERT_EQUAL(hc_job_shape(job, "grid").rank, 1);
  TH_ASSERT_OK(hc_job_set_kv(job, "grid=2x3x4x1k"));
  hc_shape_t s = hc_job_shape(job, "grid");
  CU_ASSERT_EQUAL(s.rank, 4);
  CU_ASSERT_EQUAL(s.dims[3], 1024);
  TH_ASSERT_OK(hc_job_set_kv(job, "dir=-1.5,2e0"));
  hc_vec_t v = hc_job_vec(job, "dir");
  CU_ASSERT_EQUAL(v.count, 2);
  CU_ASSERT_DOUBLE_EQUAL(v.v[0], -1.5, 0);
  TH_ASSERT_OK(hc_job_set_kv(job, "nodefault=3"));
  CU_ASSERT_TRUE(hc_job_given(job, "nodefault"));
}

static void test_errors(void) {
  expect_error("colour=red", "no parameter 'colour'", "valid: count, ratio, flag, label, mode, grid, dir");
  expect_error("count=abc", "count=abc", "not an integer");
  expect_error("count=0", "count=0", "out of range (allowed values from 1 to 1e+09)");
  expect_error("count=2G", "count=2G", "out of range");
  expect_error("count=99999999999999999999", "not an integer", NULL);
  expect_error("count=1.5", "not an integer", NULL);
  expect_error("count=4q", "not an integer", NULL);
  expect_error("ratio=1.5", "ratio=1.5", "from 0 to 1");
  expect_error("ratio=nan", "not a finite number", NULL);
  expect_error("ratio=1e999", "not a finite number", NULL);
  expect_error("ratio=", "not a finite number", NULL);
  expect_error("flag=maybe", "flag=maybe", "not a boolean");
  expect_error("mode=quick", "mode=quick", "not one of fast|slow|exact");
  expect_error("mode=fas", "not one of", NULL);
  expect_error("grid=4x", "grid=4x", "not a shape");
  expect_error("grid=x4", "not a shape", NULL);
  expect_error("grid=4xx4", "not a shape", NULL);
  expect_error("grid=1x2x3x4x5", "not a shape", "at most 4");
  expect_error("grid=0x4", "grid=0x4", "out of range (allowed extents from 1 to 4096)");
  expect_error("grid=8192", "out of range", NULL);
  expect_error("dir=1,,2", "not a comma-separated list", NULL);
  expect_error("dir=1,2,", "trailing comma", NULL);
  expect_error("dir=1,2,3,4,5", "more than 4", NULL);
  expect_error("dir=11", "out of range (allowed items from -10 to 10)", NULL);
  expect_error("=3", "expected key=value", NULL);
  expect_error("count", "expected key=value", NULL);
  /* A failed set leaves the previous value. */
  TH_ASSERT_OK(hc_job_set(job, "count", "7"));
  CU_ASSERT_EQUAL(hc_job_set(job, "count", "-1"), HC_ERR_PARAM);
  CU_ASSERT_EQUAL(hc_job_int(job, "count"), 7);
}

static void test_run_echoes(void) {
  hc_device_t *dev = th_device("cpu");
  CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
  TH_ASSERT_OK(hc_job_set_kv(job, "grid=3x4"));
  TH_ASSERT_OK(hc_job_set_kv(job, "count=42"));
  TH_ASSERT_OK(hc_job_set_kv(job, "fail=none"));
  TH_ASSERT_OK(hc_job_run(job, dev, HC_RUN_VERIFY));
  double v;
  TH_ASSERT_OK(hc_job_metric_find(job, "count", &v));
  CU_ASSERT_DOUBLE_EQUAL(v, 42, 0);
  TH_ASSERT_OK(hc_job_metric_find(job, "grid_rank", &v));
  CU_ASSERT_DOUBLE_EQUAL(v, 2, 0);
  CU_ASSERT_EQUAL(hc_job_metric_find(job, "absent", &v), HC_ERR_NOT_FOUND);
  const char *msg;
  CU_ASSERT_EQUAL(hc_job_verified(job, &msg), 1);
  hc_field_t *g = hc_job_output(job, "grid");
  CU_ASSERT_PTR_NOT_NULL_FATAL(g);
  CU_ASSERT_EQUAL(hc_field_count(g), 12);
  double host[12];
  TH_ASSERT_OK(hc_field_read(g, host));
  CU_ASSERT_DOUBLE_EQUAL(host[11], 11, 0);
  CU_ASSERT_STRING_EQUAL(hc_job_notes(job), "probe ran\n");
  /* Failure modes. */
  TH_ASSERT_OK(hc_job_set_kv(job, "fail=verify"));
  CU_ASSERT_EQUAL(hc_job_run(job, dev, HC_RUN_VERIFY), HC_ERR_VERIFY);
  CU_ASSERT_EQUAL(hc_job_verified(job, &msg), 0);
  TH_ASSERT_OK(hc_job_set_kv(job, "fail=runtime"));
  CU_ASSERT_EQUAL(hc_job_run(job, dev, 0), HC_ERR_DEVICE);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "workload 'probe' on cpu:0: probe: fail=runtime"));
  CU_ASSERT_PTR_NULL(hc_job_output(job, "grid"));
  hc_field_t *taken = NULL;
  CU_ASSERT_EQUAL(hc_job_take_output(job, "grid", &taken), HC_ERR_NOT_FOUND);
  CU_ASSERT_EQUAL(hc_job_take_output(job, "nope", &taken), HC_ERR_NOT_FOUND);
}

/* An undeclared name (or another type) asked of the getters is the
 * workload's bug: 0 / "" and HC_ERR_PARAM naming it, and a run that reads
 * one fails even though run() returned HC_OK. */
static void test_undeclared_parameter(void) {
  hc_error(HC_OK, "%s", "");
  CU_ASSERT_EQUAL(hc_job_int(job, "typo"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "'typo'"));
  CU_ASSERT_STRING_EQUAL(hc_job_string(job, "count"), ""); /* an int as a string */
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "'count' as string, it is int"));
  CU_ASSERT_EQUAL(hc_job_given(job, "nope"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "'nope'"));
  hc_device_t *dev = th_device("cpu");
  CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
  TH_ASSERT_OK(hc_job_set_kv(job, "fail=typo"));
  CU_ASSERT_EQUAL(hc_job_run(job, dev, 0), HC_ERR_PARAM);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "asked for parameter 'cuont'"));
  CU_ASSERT_PTR_NULL(hc_job_output(job, "grid"));
  /* the record is per run: a correct run afterwards succeeds */
  TH_ASSERT_OK(hc_job_set_kv(job, "fail=none"));
  TH_ASSERT_OK(hc_job_run(job, dev, 0));
}

typedef struct {
  uint32_t device;
  pthread_barrier_t *both; /* both threads alive when the reasons are read */
  const char *why;
  char copy[512];
} can_run_t;

static void *can_run_thread(void *arg) {
  can_run_t *c = arg;
  int ok = hc_workload_can_run(th_context(), "probe", c->device, &c->why);
  pthread_barrier_wait(c->both);
  if (!ok) snprintf(c->copy, sizeof c->copy, "%s", c->why);
  pthread_barrier_wait(c->both);
  return NULL;
}

/* hc_workload_can_run's reason belongs to the calling thread: another
 * thread's call does not overwrite it. */
static void test_can_run_reason_per_thread(void) {
  uint32_t idx = 0, n = hc_device_count(th_context());
  for (idx = 0; idx < n; idx++) {
    hc_device_t *d = NULL;
    if (hc_device_open(th_context(), idx, &d) != HC_OK) continue;
    int host = (hc_device_info(d)->languages & HC_LANG_BIT(HC_LANG_HOST)) != 0;
    hc_device_close(d);
    if (!host) break;
  }
  if (idx == n) {
    th_skip("no device without host kernels (the probe workload's only language)");
    return;
  }
  pthread_barrier_t both;
  pthread_barrier_init(&both, NULL, 2);
  can_run_t a = {idx, &both, NULL, ""}, b = {idx, &both, NULL, ""};
  pthread_t ta, tb;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&ta, NULL, can_run_thread, &a), 0);
  CU_ASSERT_EQUAL_FATAL(pthread_create(&tb, NULL, can_run_thread, &b), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_barrier_destroy(&both);
  CU_ASSERT_PTR_NOT_NULL_FATAL(a.why);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b.why);
  CU_ASSERT_PTR_NOT_NULL(strstr(a.copy, "no kernel in a language the device accepts"));
  CU_ASSERT_STRING_EQUAL(a.copy, b.copy);
  CU_ASSERT(a.why != b.why); /* one buffer each, while both were alive */
}

/* hc_check_fp64 (include/hc/workload_util.h), the check every workload
 * with a dtype parameter shares. */
static void test_check_fp64(void) {
  hc_job_t *j = NULL;
  TH_ASSERT_OK(hc_job_create(th_context(), "saxpy", &j));
  hc_device_info_t dev;
  memset(&dev, 0, sizeof dev);
  char why[64] = "";
  TH_ASSERT_OK(hc_job_set_kv(j, "dtype=f64"));
  CU_ASSERT_EQUAL(hc_check_fp64(j, "dtype", &dev, why, sizeof why), 1);
  CU_ASSERT_STRING_EQUAL(why, "needs fp64 (dtype=f64)");
  dev.fp64 = 1;
  CU_ASSERT_EQUAL(hc_check_fp64(j, "dtype", &dev, why, sizeof why), 0);
  dev.fp64 = 0;
  TH_ASSERT_OK(hc_job_set_kv(j, "dtype=f32"));
  CU_ASSERT_EQUAL(hc_check_fp64(j, "dtype", &dev, why, sizeof why), 0);
  CU_ASSERT(hc_dtype_is_double(HC_C128) && hc_dtype_is_double(HC_F64));
  CU_ASSERT(!hc_dtype_is_double(HC_C64) && !hc_dtype_is_double(HC_F32));
  hc_job_destroy(j);
}

static void test_unknown_workload(void) {
  hc_job_t *j = NULL;
  CU_ASSERT_EQUAL(hc_job_create(th_context(), "nosuch", &j), HC_ERR_NOT_FOUND);
  CU_ASSERT_PTR_NULL(j);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "unknown workload 'nosuch' (available: "));
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("params", setup, teardown);
  CU_ADD_TEST(s, test_defaults);
  CU_ADD_TEST(s, test_int_forms);
  CU_ADD_TEST(s, test_other_types);
  CU_ADD_TEST(s, test_errors);
  CU_ADD_TEST(s, test_run_echoes);
  CU_ADD_TEST(s, test_unknown_workload);
  CU_ADD_TEST(s, test_undeclared_parameter);
  CU_ADD_TEST(s, test_can_run_reason_per_thread);
  CU_ADD_TEST(s, test_check_fp64);
}

TH_MAIN(register_tests)
