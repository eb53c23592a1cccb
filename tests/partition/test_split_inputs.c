/* Split runs that take input fields: jacobi's f and u0 reach each part as
 * its rows (hc_split_t.slab_inputs), multigrid's whole on each part's
 * device; as fields (the C API, a pipeline's hand-over) and as .npy files.
 * Every split gives the one-device run's field bit for bit (cpu parts
 * compute alike), the job keeps its own input fields, and an input whose
 * rows are not the split's is refused before anything runs.
 *
 * The context sees cpu:0..cpu:3, one thread each. */
#include <stdlib.h>
#include <string.h>

#include <hc/partition.h>
#include <hc/pipeline.h>

#include "harness.h"

/* Runs workload with params and the input fields over the set (weights
 * NULL: equal); returns u on the host (NULL on failure, with *st) and the
 * parts it ran in *parts. The job's inputs are the caller's afterwards. */
static void *run_with_inputs(const char *spec, const char *weights, const char *workload, const char *params,
                             hc_field_t *f, hc_field_t *u0, size_t *bytes, uint32_t *parts, hc_status_t *st) {
  hc_context_t *ctx = th_context();
  hc_job_t *job = th_job(ctx, workload, params);
  hc_devset_t *set = NULL;
  void *u = NULL;
  *st = job ? HC_OK : HC_ERR_PARAM;
  if (*st == HC_OK && f) *st = hc_job_set_input(job, "f", f);
  if (*st == HC_OK && u0) *st = hc_job_set_input(job, "u0", u0);
  if (*st == HC_OK) *st = hc_devset_parse(ctx, spec, workload, &set);
  if (*st == HC_OK) *st = hc_devset_parse_weights(set, weights ? weights : "equal");
  if (*st == HC_OK) *st = hc_job_run_split(job, set, 0);
  if (*st == HC_OK) {
    CU_ASSERT_PTR_EQUAL(hc_job_input(job, "f"), f);
    CU_ASSERT_PTR_EQUAL(hc_job_input(job, "u0"), u0);
    hc_field_t *out = hc_job_output(job, "u");
    *bytes = out ? hc_field_bytes(out) : 0;
    u = out ? malloc(*bytes) : NULL;
    if (u && hc_field_read(out, u) != HC_OK) {
      free(u);
      u = NULL;
    }
  }
  *parts = set ? hc_devset_parts(set) : 0;
  hc_job_destroy(job);
  hc_devset_destroy(set);
  return u;
}

static const struct {
  const char *spec, *weights;
  uint32_t parts;
} sets[] = {
    {"cpu:0,cpu:1", NULL, 2},
    {"cpu:1,cpu:0", "0.8,0.2", 2},
    {"cpu:1,cpu:2,cpu:3", "1,5,2", 3}, /* the inputs are on cpu:0, outside the set */
    {"cpu:0,cpu:1,cpu:2,cpu:3", "0.1,0.1,0.1,0.7", 4},
};

/* jacobi's and multigrid's input fields f and u0 on 2-4 parts: the one
 * device run's u bit for bit. */
static void test_input_fields_bit_identical(void) {
  static const struct {
    const char *workload, *params;
    hc_dtype_t dt;
    uint32_t rank;
    int64_t shape[3];
  } cases[] = {
      {"jacobi", "iters=37 tol=0", HC_F64, 2, {41, 37}},
      {"jacobi", "iters=25 tol=0 dtype=f32 sweeps_per_pass=2", HC_F32, 3, {19, 21, 23}},
      {"jacobi", "iters=20 tol=0 dtype=f64", HC_F32, 2, {40, 31}}, /* inputs converted to f64 by the parts */
      {"multigrid", "cycles=3 tol=0", HC_F32, 2, {65, 65}},
      {"multigrid", "cycles=2 tol=0 dtype=f64", HC_F64, 3, {33, 33, 33}},
  };
  hc_device_t *cpu0 = th_device("cpu:0");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu0);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    hc_field_t *f = th_random_field(cpu0, cases[c].dt, cases[c].rank, cases[c].shape, 7 + (unsigned)c);
    hc_field_t *u0 = th_random_field(cpu0, cases[c].dt, cases[c].rank, cases[c].shape, 70 + (unsigned)c);
    CU_ASSERT_FATAL(f && u0);
    size_t bytes = 0, got_bytes = 0;
    uint32_t parts = 0;
    hc_status_t st;
    void *want = run_with_inputs("cpu:0", NULL, cases[c].workload, cases[c].params, f, u0, &bytes, &parts, &st);
    CU_ASSERT_EQUAL(st, HC_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(want);
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
      void *got = run_with_inputs(sets[s].spec, sets[s].weights, cases[c].workload, cases[c].params, f, u0, &got_bytes,
                                  &parts, &st);
      CU_ASSERT_EQUAL(st, HC_OK);
      CU_ASSERT_EQUAL(parts, sets[s].parts);
      CU_ASSERT(got && got_bytes == bytes && !memcmp(got, want, bytes));
      if (!got || memcmp(got, want, bytes))
        fprintf(stderr, "\n%s %s on %s: not the one-device field\n", cases[c].workload, cases[c].params, sets[s].spec);
      free(got);
    }
    free(want);
    hc_field_destroy(f);
    hc_field_destroy(u0);
  }
}

/* f=FILE.npy and init=FILE.npy: each part reads its rows of the files. */
static void test_input_files_bit_identical(void) {
  hc_device_t *cpu0 = th_device("cpu:0");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu0);
  const int64_t shape[3] = {23, 17, 19};
  hc_field_t *f = th_random_field(cpu0, HC_F64, 3, shape, 3), *u0 = th_random_field(cpu0, HC_F32, 3, shape, 4);
  CU_ASSERT_FATAL(f && u0);
  char fpath[512], upath[512], params[1200];
  snprintf(fpath, sizeof fpath, "%s/f.npy", th_tmpdir());
  snprintf(upath, sizeof upath, "%s/u0.npy", th_tmpdir());
  TH_ASSERT_OK(hc_field_save_npy(f, fpath));
  TH_ASSERT_OK(hc_field_save_npy(u0, upath));
  snprintf(params, sizeof params, "f=%s init=%s iters=30 tol=0", fpath, upath);
  size_t bytes = 0, got_bytes = 0;
  uint32_t parts = 0;
  hc_status_t st;
  void *want = run_with_inputs("cpu:0", NULL, "jacobi", params, NULL, NULL, &bytes, &parts, &st);
  CU_ASSERT_PTR_NOT_NULL_FATAL(want);
  /* the same u as with the fields given as fields */
  void *as_fields = run_with_inputs("cpu:0", NULL, "jacobi", "iters=30 tol=0", f, u0, &got_bytes, &parts, &st);
  CU_ASSERT(as_fields && got_bytes == bytes && !memcmp(as_fields, want, bytes));
  free(as_fields);
  for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
    void *got = run_with_inputs(sets[s].spec, sets[s].weights, "jacobi", params, NULL, NULL, &got_bytes, &parts, &st);
    CU_ASSERT_EQUAL(st, HC_OK);
    CU_ASSERT_EQUAL(parts, sets[s].parts);
    CU_ASSERT(got && got_bytes == bytes && !memcmp(got, want, bytes));
    free(got);
  }
  free(want);
  hc_field_destroy(f);
  hc_field_destroy(u0);
}

/* An input field whose axis 0 is not the grid's rows: refused before
 * anything runs, naming the port and both row counts. */
static void test_input_rows_refused(void) {
  hc_device_t *cpu0 = th_device("cpu:0");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu0);
  const int64_t shape[2] = {40, 37};
  hc_field_t *f = th_random_field(cpu0, HC_F32, 2, shape, 5);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  hc_context_t *ctx = th_context();
  hc_job_t *job = th_job(ctx, "jacobi", "n=41x37 iters=5");
  hc_devset_t *set = NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(job);
  TH_ASSERT_OK(hc_job_set_input(job, "f", f));
  TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,cpu:1", "jacobi", &set));
  CU_ASSERT_EQUAL(hc_job_check_split(job, set), HC_ERR_PARAM);
  CU_ASSERT_EQUAL(hc_job_run_split(job, set, 0), HC_ERR_PARAM);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "input field f: 40 rows along axis 0, but the split divides 41"));
  CU_ASSERT_PTR_NULL(hc_job_output(job, "u"));
  CU_ASSERT_EQUAL(hc_devset_parts(set), 0);
  hc_job_destroy(job);
  hc_devset_destroy(set);
  hc_field_destroy(f);
}

/* A pipeline's stage on a device set takes the previous stage's output as
 * its input fields (jacobi's u as the next jacobi's f and u0, multigrid's
 * f and u0): the same fields as on one device. */
static void test_pipeline_hand_over_to_a_set(void) {
  hc_context_t *ctx = th_context();
  static const char *chains[][2] = {
      {"jacobi dim=2 n=41x37 iters=20 tol=0 @cpu:0 | jacobi iters=30 tol=0 u>u0 @cpu:0",
       "jacobi dim=2 n=41x37 iters=20 tol=0 @cpu:0 | jacobi iters=30 tol=0 u>u0 @cpu:1,cpu:2"},
      {"jacobi dim=3 n=33 iters=10 tol=0 @cpu:0 | multigrid cycles=2 tol=0 u>u0 @cpu:0",
       "jacobi dim=3 n=33 iters=10 tol=0 @cpu:0 | multigrid cycles=2 tol=0 u>u0 @cpu:0,cpu:1,cpu:3"},
  };
  for (size_t c = 0; c < sizeof chains / sizeof *chains; c++) {
    void *u[2] = {NULL, NULL};
    size_t bytes[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
      hc_pipeline_t *p = NULL;
      TH_ASSERT_OK(hc_pipeline_parse(ctx, chains[c][k], &p));
      hc_devset_t *set = hc_pipeline_stage_set(p, 1);
      CU_ASSERT_EQUAL(set != NULL, k == 1);
      CU_ASSERT_PTR_NULL(hc_pipeline_stage_set(p, 2)); /* no such stage */
      CU_ASSERT_PTR_NULL(hc_pipeline_stage_set(NULL, 0));
      if (set) TH_ASSERT_OK(hc_devset_parse_weights(set, "equal")); /* (not the history's: it may leave one out) */
      TH_ASSERT_OK(hc_pipeline_run(p, 0));
      if (set) CU_ASSERT_EQUAL(hc_devset_parts(set), hc_devset_count(set));
      /* the grid came from the field: the stage's n does not apply, split or not */
      hc_job_t *job = hc_pipeline_stage_job(p, 1);
      for (uint32_t i = 0; i < hc_job_param_count(job); i++) {
        const char *name, *value;
        if (hc_job_param_get(job, i, &name, &value) == HC_OK && !strcmp(name, "n"))
          CU_ASSERT_EQUAL(hc_job_param_applies(job, i), 0);
      }
      hc_field_t *out = hc_job_output(hc_pipeline_stage_job(p, 1), "u");
      CU_ASSERT_PTR_NOT_NULL_FATAL(out);
      bytes[k] = hc_field_bytes(out);
      u[k] = malloc(bytes[k]);
      TH_ASSERT_OK(hc_field_read(out, u[k]));
      hc_pipeline_destroy(p);
    }
    CU_ASSERT(bytes[0] == bytes[1] && !memcmp(u[0], u[1], bytes[0]));
    free(u[0]);
    free(u[1]);
  }
}

/* A split run's output that feeds the next split run over the same
 * devices: each part of the second takes its rows from the parts of the
 * first where they are (only the ghost rows cross between devices),
 * instead of from the output gathered on the first device; the fields are
 * the same either way. */
static void test_output_parts_feed_the_next_split(void) {
  hc_context_t *ctx = th_context();
  setenv("HC_SPLIT_REBALANCE", "off", 1); /* the rows where they were planned, for the byte counts */
  hc_devset_t *set = NULL;
  TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,cpu:1", "jacobi", &set));
  TH_ASSERT_OK(hc_devset_parse_weights(set, "equal"));
  hc_job_t *first = th_job(ctx, "jacobi", "dim=2 n=161x97 iters=20 tol=0 dtype=f64");
  CU_ASSERT_PTR_NOT_NULL_FATAL(first);
  TH_ASSERT_OK(hc_job_run_split(first, set, 0));
  hc_field_t *u = hc_job_output(first, "u");
  CU_ASSERT_PTR_NOT_NULL_FATAL(u);
  uint64_t crossed[2] = {0, 0};
  void *out[2] = {NULL, NULL};
  size_t bytes = 0;
  for (int settled = 0; settled < 2; settled++) {
    if (settled) { /* reading it gathers it on cpu:0: the parts then take their rows from there */
      void *host = malloc(hc_field_bytes(u));
      TH_ASSERT_OK(hc_field_read(u, host));
      free(host);
    }
    hc_job_t *next = th_job(ctx, "jacobi", "iters=10 tol=0 dtype=f64");
    CU_ASSERT_PTR_NOT_NULL_FATAL(next);
    TH_ASSERT_OK(hc_job_set_input(next, "u0", u));
    TH_ASSERT_OK(hc_job_set_input(next, "f", u));
    hc_transfer_stats_reset(ctx);
    TH_ASSERT_OK(hc_job_run_split(next, set, 0));
    hc_transfer_stats_t ts;
    hc_transfer_stats_get(ctx, &ts);
    crossed[settled] = ts.cross_device_bytes;
    CU_ASSERT_EQUAL(hc_devset_parts(set), 2);
    hc_field_t *v = hc_job_output(next, "u");
    bytes = hc_field_bytes(v);
    out[settled] = malloc(bytes);
    TH_ASSERT_OK(hc_field_read(v, out[settled]));
    hc_job_destroy(next);
  }
  CU_ASSERT(!memcmp(out[0], out[1], bytes));
  /* part 1's 81 rows of f and u0 (97 f64 each) no longer cross from cpu:0 */
  CU_ASSERT(crossed[0] + 2 * 70 * 97 * 8 < crossed[1]);
  if (!(crossed[0] + 2 * 70 * 97 * 8 < crossed[1]))
    fprintf(stderr, "\ncross-device bytes: %llu from the parts, %llu from the gathered field\n",
            (unsigned long long)crossed[0], (unsigned long long)crossed[1]);
  free(out[0]);
  free(out[1]);
  hc_job_destroy(first);
  hc_devset_destroy(set);
  unsetenv("HC_SPLIT_REBALANCE");
}

static int setup(void) {
  /* multigrid: the test grids are small; split every level the slabs
   * allow, so that the exchanges run (by default levels this small run
   * whole on every part) */
  setenv("HC_MG_SPLIT_MIN_POINTS", "1", 1);
  setenv("HC_CPU_DEVICES", "4", 1);
  setenv("HC_CPU_THREADS", "4", 1);
  return 0;
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("split runs with input fields", setup, NULL);
  CU_ADD_TEST(s, test_input_fields_bit_identical);
  CU_ADD_TEST(s, test_input_files_bit_identical);
  CU_ADD_TEST(s, test_input_rows_refused);
  CU_ADD_TEST(s, test_pipeline_hand_over_to_a_set);
  CU_ADD_TEST(s, test_output_parts_feed_the_next_split);
}

TH_MAIN(register_tests)
