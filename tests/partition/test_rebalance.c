/* Rows that follow the parts' speed (hc_part_rebalance, docs/partition.md):
 * jacobi (slab fields) and multigrid (fields held whole) over cpu devices
 * with shares far from their speeds (one part given most of the rows of
 * alike devices) move rows while they run, and their fields stay bit for
 * bit the one-device run's, with a built-in f, a stored one and f and u0
 * given as fields; HC_SPLIT_REBALANCE=off keeps the planned rows. The
 * runs move with HC_SPLIT_REBALANCE=always (at every comparison where the
 * measured shares differ), so that whether they move does not hang on
 * how fast this host runs them (auto also asks a move to pay for itself:
 * bench/ measures that). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/partition.h>

#include "harness.h"

typedef struct {
  void *u;
  size_t bytes;
  int64_t rows[4];      /* each part's rows at the end */
  uint64_t collectives; /* the first part's */
  int moved;            /* the run's note says rows moved */
} outcome_t;

/* workload with params on spec at weights, its inputs f and u0 (NULL: none). */
static outcome_t run_split(const char *workload, const char *spec, const char *weights, const char *params,
                           hc_field_t *f, hc_field_t *u0) {
  hc_context_t *ctx = th_context();
  outcome_t o;
  memset(&o, 0, sizeof o);
  hc_job_t *job = th_job(ctx, workload, params);
  CU_ASSERT_PTR_NOT_NULL_FATAL(job);
  if (f) TH_ASSERT_OK(hc_job_set_input(job, "f", f));
  if (u0) TH_ASSERT_OK(hc_job_set_input(job, "u0", u0));
  hc_devset_t *set = NULL;
  TH_ASSERT_OK(hc_devset_parse(ctx, spec, workload, &set));
  if (weights) TH_ASSERT_OK(hc_devset_parse_weights(set, weights));
  TH_ASSERT_OK(hc_job_run_split(job, set, 0));
  for (uint32_t i = 0; i < hc_devset_parts(set) && i < 4; i++) {
    hc_part_stats_t s = {.size = sizeof s};
    TH_ASSERT_OK(hc_devset_part_stats(set, i, &s));
    o.rows[i] = s.hi - s.lo;
    if (i == 0) o.collectives = s.collectives;
  }
  o.moved = strstr(hc_job_notes(job), "rows moved between the parts") != NULL;
  hc_field_t *u = hc_job_output(job, "u");
  CU_ASSERT_PTR_NOT_NULL_FATAL(u);
  o.bytes = hc_field_bytes(u);
  o.u = malloc(o.bytes);
  TH_ASSERT_OK(hc_field_read(u, o.u));
  hc_job_destroy(job);
  hc_devset_destroy(set);
  return o;
}

static int same_field(const outcome_t *a, const outcome_t *b) {
  return a->u && b->u && a->bytes == b->bytes && !memcmp(a->u, b->u, a->bytes);
}

/* workload on cpu:0 alone and split over spec at weights with rows that
 * move at every comparison (HC_SPLIT_REBALANCE=always): the split's field
 * is the one-device field bit for bit, and its nparts parts' rows add up
 * to the grid's. The split's outcome, its field freed. */
static outcome_t moving_split(const char *workload, const char *spec, const char *weights, const char *params,
                              uint32_t nparts) {
  outcome_t whole = run_split(workload, "cpu:0", NULL, params, NULL, NULL);
  setenv("HC_SPLIT_REBALANCE", "always", 1);
  outcome_t split = run_split(workload, spec, weights, params, NULL, NULL);
  unsetenv("HC_SPLIT_REBALANCE");
  CU_ASSERT(same_field(&whole, &split));
  if (!same_field(&whole, &split)) fprintf(stderr, "\n%s %s: the split's u differs\n", workload, params);
  int64_t sum = 0;
  for (uint32_t i = 0; i < nparts; i++) sum += split.rows[i];
  CU_ASSERT_EQUAL(sum, atoll(strstr(params, "n=") + 2));
  free(whole.u);
  free(split.u);
  split.u = NULL;
  return split;
}

/* Two alike devices, nine tenths of the rows on the second: rows move to
 * the first while the run lasts, and every point keeps its arithmetic. */
static void test_rows_follow_speed(void) {
  const int slow = th_slow_tool();
  const char *params[] = {
      slow ? "dim=2 n=301x257 iters=64 tol=0 dtype=f64" : "dim=2 n=301x257 iters=160 tol=0 dtype=f64",
      slow ? "dim=2 n=301x257 iters=65 tol=0 dtype=f32 f_mode=stored"
           : "dim=2 n=301x257 iters=161 tol=0 dtype=f32 f_mode=stored",
      slow ? "dim=3 n=61x47x45 iters=48 tol=0 dtype=f64 init=eigen"
           : "dim=3 n=61x47x45 iters=128 tol=0 dtype=f64 init=eigen",
  };
  for (size_t k = 0; k < sizeof params / sizeof *params; k++) {
    outcome_t split = moving_split("jacobi", "cpu:0,cpu:1", "1,9", params[k], 2);
    const int64_t planned0 = atoll(strstr(params[k], "n=") + 2) / 10; /* a tenth of the rows */
    /* Moves follow measured time: under a slowing tool every part's
     * measure may be the tool's. */
    if (!slow) {
      CU_ASSERT(split.moved);
      CU_ASSERT(split.rows[0] > planned0);
      if (!split.moved) fprintf(stderr, "\njacobi %s: no rows moved\n", params[k]);
    }
    if (split.moved) CU_ASSERT(split.rows[0] != planned0);
    /* HC_SPLIT_REBALANCE=off: the planned rows, no note */
    setenv("HC_SPLIT_REBALANCE", "off", 1);
    outcome_t fixed = run_split("jacobi", "cpu:0,cpu:1", "1,9", params[k], NULL, NULL);
    unsetenv("HC_SPLIT_REBALANCE");
    CU_ASSERT_FALSE(fixed.moved);
    CU_ASSERT_EQUAL(fixed.rows[0], planned0);
    free(fixed.u);
  }
}

/* With HC_SPLIT_REBALANCE=off the parts learn at their first comparison
 * that no row can move, and meet for it no more: twice the sweeps, the
 * same collectives. */
static void test_off_compares_once(void) {
  setenv("HC_SPLIT_REBALANCE", "off", 1);
  outcome_t a = run_split("jacobi", "cpu:0,cpu:1", "1,9", "dim=2 n=101x65 iters=96 tol=0 dtype=f64", NULL, NULL);
  outcome_t b = run_split("jacobi", "cpu:0,cpu:1", "1,9", "dim=2 n=101x65 iters=192 tol=0 dtype=f64", NULL, NULL);
  unsetenv("HC_SPLIT_REBALANCE");
  CU_ASSERT(a.collectives > 0);
  CU_ASSERT_EQUAL(a.collectives, b.collectives);
  free(a.u);
  free(b.u);
}

/* f and u0 as fields over three parts: the moved rows of f are the
 * part's own copy, and the field is still the one-device run's. */
static void test_input_fields_move(void) {
  const int64_t shape[2] = {241, 199};
  hc_field_t *f = th_random_field(th_device("cpu:0"), HC_F64, 2, shape, 3),
             *u0 = th_random_field(th_device("cpu:0"), HC_F64, 2, shape, 4);
  CU_ASSERT_FATAL(f && u0);
  const char *params = th_slow_tool() ? "iters=48 tol=0 dtype=f64" : "iters=160 tol=0 dtype=f64";
  outcome_t whole = run_split("jacobi", "cpu:0", NULL, params, f, u0);
  setenv("HC_SPLIT_REBALANCE", "always", 1);
  outcome_t split = run_split("jacobi", "cpu:0,cpu:1,cpu:2", "1,1,8", params, f, u0);
  unsetenv("HC_SPLIT_REBALANCE");
  CU_ASSERT(same_field(&whole, &split));
  CU_ASSERT_EQUAL(split.rows[0] + split.rows[1] + split.rows[2], 241);
  if (!th_slow_tool()) CU_ASSERT(split.moved);
  free(whole.u);
  free(split.u);
  hc_field_destroy(f);
  hc_field_destroy(u0);
}

/* multigrid's parts hold every level whole: between V-cycles the rows of
 * the finest u that change hands move, and the slabs of every level follow. */
static void test_multigrid_rows_follow_speed(void) {
  const int slow = th_slow_tool();
  const char *params[] = {
      slow ? "dim=3 n=33 tol=0 cycles=4 dtype=f64" : "dim=3 n=65 tol=0 cycles=6 dtype=f64",
      slow ? "dim=2 n=129 tol=0 cycles=4 dtype=f32 smoother=jacobi"
           : "dim=2 n=257 tol=0 cycles=6 dtype=f32 smoother=jacobi",
  };
  for (size_t k = 0; k < sizeof params / sizeof *params; k++) {
    outcome_t split = moving_split("multigrid", "cpu:0,cpu:1,cpu:2", "1,1,6", params[k], 3);
    if (!slow) CU_ASSERT(split.moved);
  }
}

/* The test workload "parts" (tests/plugins/parts_workload.c) over two
 * alike devices at 1:9, working in proportion to its rows, calls
 * hc_part_rebalance with its u and a borrowed field: rows move, both hold
 * their new rows' values, the borrowed one is left as it was, and the
 * gathered u is the whole one; laid out as slabs and held whole. */
static void test_part_fields_move(void) {
  const char *params[] = {"rows=40 cols=8 moves=6", "rows=40 cols=8 moves=6 whole=1"};
  for (size_t k = 0; k < sizeof params / sizeof *params; k++) {
    hc_context_t *ctx = th_context();
    hc_job_t *job = th_job(ctx, "parts", params[k]);
    hc_devset_t *set = NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(job);
    TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,cpu:1", "parts", &set));
    TH_ASSERT_OK(hc_devset_parse_weights(set, "1,9"));
    setenv("HC_SPLIT_REBALANCE", "always", 1);
    TH_ASSERT_OK(hc_job_run_split(job, set, 0));
    unsetenv("HC_SPLIT_REBALANCE");
    double moves = 0, right = 0;
    hc_job_metric_find(job, "moves", &moves);
    hc_job_metric_find(job, "moved_right", &right);
    CU_ASSERT(moves >= 1);
    CU_ASSERT_EQUAL(right, 1);
    hc_field_t *u = hc_job_output(job, "u");
    CU_ASSERT_FATAL(u != NULL && hc_field_bytes(u) == 40 * 8 * sizeof(double));
    double h[40 * 8];
    TH_ASSERT_OK(hc_field_read(u, h));
    int same = 1;
    for (int r = 0; r < 40; r++)
      for (int c = 0; c < 8; c++) same &= h[r * 8 + c] == 1000.0 * r + c;
    CU_ASSERT(same);
    hc_job_destroy(job);
    hc_devset_destroy(set);
  }
}

/* A field of the wrong shape handed to a move fails the run with a
 * message naming it, on every part, without a hang. */
static void test_wrong_field_in_a_move(void) {
  hc_context_t *ctx = th_context();
  hc_job_t *job = th_job(ctx, "parts", "rows=40 cols=8 moves=4 bad_move=1");
  hc_devset_t *set = NULL;
  CU_ASSERT_PTR_NOT_NULL_FATAL(job);
  TH_ASSERT_OK(hc_devset_parse(ctx, "cpu:0,cpu:1,cpu:2", "parts", &set));
  TH_ASSERT_OK(hc_devset_parse_weights(set, "1,1,8"));
  setenv("HC_SPLIT_REBALANCE", "always", 1);
  CU_ASSERT_EQUAL(hc_job_run_split(job, set, 0), HC_ERR_INVALID_ARG);
  unsetenv("HC_SPLIT_REBALANCE");
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "hc_part_rebalance: field"));
  hc_job_destroy(job);
  hc_devset_destroy(set);
}

/* A value of HC_SPLIT_REBALANCE that is not one of its choices is refused
 * when the context is made, naming the variable. */
static void test_rebalance_setting_refused(void) {
  setenv("HC_SPLIT_REBALANCE", "sometimes", 1);
  hc_context_t *ctx = NULL;
  CU_ASSERT_EQUAL(hc_context_create(NULL, &ctx), HC_ERR_PARAM);
  unsetenv("HC_SPLIT_REBALANCE");
  CU_ASSERT_PTR_NULL(ctx);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "HC_SPLIT_REBALANCE"));
}

static void test_rebalance_misuse(void) {
  int moved = 1;
  CU_ASSERT_EQUAL(hc_part_rebalance(NULL, NULL, 0, 0, 0, 1, &moved), HC_ERR_INVALID_ARG);
  CU_ASSERT_EQUAL(moved, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "hc_part_rebalance"));
  /* the borrowed mask has a bit per field: 32 at most */
  hc_field_t **fields[33] = {NULL};
  CU_ASSERT_EQUAL(hc_part_rebalance(NULL, fields, 33, 0, 0, 1, &moved), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "33 fields, at most 32"));
}

static int setup(void) {
  /* multigrid: the test grids are small; split every level the slabs
   * allow, so that the exchanges run (by default levels this small run
   * whole on every part) */
  setenv("HC_MG_SPLIT_MIN_POINTS", "1", 1);
  setenv("HC_CPU_DEVICES", "3", 1);
  setenv("HC_CPU_THREADS", "3", 1);
  char path[4200];
  snprintf(path, sizeof path, "%s/test-plugins", th_build_dir()); /* "parts" */
  setenv("HC_PLUGIN_PATH", path, 1);
  return 0;
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("rows that follow the parts' speed", setup, NULL);
  CU_ADD_TEST(s, test_rows_follow_speed);
  CU_ADD_TEST(s, test_off_compares_once);
  CU_ADD_TEST(s, test_input_fields_move);
  CU_ADD_TEST(s, test_multigrid_rows_follow_speed);
  CU_ADD_TEST(s, test_part_fields_move);
  CU_ADD_TEST(s, test_wrong_field_in_a_move);
  CU_ADD_TEST(s, test_rebalance_setting_refused);
  CU_ADD_TEST(s, test_rebalance_misuse);
}

TH_MAIN(register_tests)
