/* Grid expressions: bad expressions fail with a clear message before any
 * kernel is built, and the host compiler's absence or failure is handled
 * (fallback to the evaluator; HC_ERR_BUILD with the compiler's output). */
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grid_testlib.h"

static hc_device_t *cpu(void) { return th_device("cpu"); }

/* Asserts that the assignment fails with INVALID_ARG, its message contains
 * `needle`, and nothing was built or launched. */
static void expect_error(hc_grid_t *g, hc_status_t st, const char *needle, const char *what) {
  const char *msg = hc_last_error();
  if (st != HC_ERR_INVALID_ARG || !strstr(msg, needle))
    fprintf(stderr, "%s: got %s '%s', wanted INVALID_ARG mentioning '%s'\n", what, hc_status_name(st), msg, needle);
  CU_ASSERT_EQUAL(st, HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, needle));
  hc_grid_stats_t s = gt_stats(g);
  CU_ASSERT_EQUAL(s.kernels_built, 0);
  CU_ASSERT_EQUAL(s.launches, 0);
}

static void test_shape_errors(void) {
  hc_device_t *d = cpu();
  if (!d) return;
  hc_grid_t *g = NULL;
  TH_ASSERT_OK(hc_grid_create(d, NULL, &g));
  int64_t s8[3] = {8, 8, 8}, s9[3] = {9, 9, 9}, s5[3] = {5, 5, 5}, s2[2] = {8, 8};
  hc_field_t *A = gt_field(d, HC_F64, 3, s8, 0.0, NULL), *B = gt_field(d, HC_F64, 3, s9, 0.0, NULL);
  hc_field_t *C = gt_field(d, HC_F64, 3, s5, 0.0, NULL), *A32 = gt_field(d, HC_F32, 3, s8, 0.0, NULL);
  hc_field_t *P = gt_field(d, HC_F64, 2, s2, 0.0, NULL);

  /* mismatched shapes: recorded at construction, reported by assign */
  hc_gexpr_t *bad = hc_gexpr_add(g, hc_gexpr_dense(g, A), hc_gexpr_dense(g, B));
  CU_ASSERT_PTR_NULL(bad);
  const char *msg = NULL;
  CU_ASSERT_EQUAL(hc_grid_error(g, &msg), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "mismatched shapes 8x8x8"));
  /* NULL propagates through further constructors */
  hc_gexpr_t *worse = hc_gexpr_scale(g, 2.0, hc_gexpr_apply(g, hc_gop_laplacian(g, 3, NULL), bad));
  CU_ASSERT_PTR_NULL(worse);
  expect_error(g, hc_grid_assign(g, A, worse, NULL, NULL), "mismatched shapes", "NULL expression");
  hc_grid_clear(g);
  CU_ASSERT_EQUAL(hc_grid_error(g, NULL), HC_OK);

  /* an expression of one shape assigned to a field of another */
  expect_error(g, hc_grid_assign(g, B, hc_gexpr_dense(g, A), NULL, NULL), "mismatched shapes", "wrong destination");
  /* mixed dtypes */
  CU_ASSERT_PTR_NULL(hc_gexpr_add(g, hc_gexpr_dense(g, A), hc_gexpr_dense(g, A32)));
  hc_grid_clear(g);
  expect_error(g, hc_grid_assign(g, A32, hc_gexpr_dense(g, A), NULL, NULL), "mixed dtypes", "f64 into f32");
  /* an operator of another rank */
  CU_ASSERT_PTR_NULL(hc_gexpr_apply(g, hc_gop_laplacian(g, 2, NULL), hc_gexpr_dense(g, A)));
  CU_ASSERT_EQUAL(hc_grid_error(g, &msg), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "rank-2"));
  hc_grid_clear(g);
  /* an operator applied to a scalar */
  CU_ASSERT_PTR_NULL(hc_gexpr_apply(g, hc_gop_laplacian(g, 3, NULL), hc_gexpr_scalar(g, 1.0)));
  hc_grid_error(g, &msg);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "applied to a scalar"));
  expect_error(g, hc_grid_assign(g, A, NULL, NULL, NULL), "applied to a scalar", "operator on scalar");
  hc_grid_clear(g);
  /* restriction of an even extent */
  CU_ASSERT_PTR_NULL(hc_gexpr_apply(g, hc_gop_restrict_fw(g, 3), hc_gexpr_dense(g, A)));
  hc_grid_error(g, &msg);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "2m+1"));
  hc_grid_clear(g);
  /* a coarse field where the fine grid is needed */
  hc_grid_range_t in = hc_grid_interior(1);
  expect_error(g, hc_grid_assign(g, B, hc_gexpr_apply(g, hc_gop_prolong_linear(g, 3), hc_gexpr_dense(g, B)), &in, NULL),
               "the expression is 17x17x17", "prolongation of the wrong field");
  /* ranks of 2-D field vs 3-D expression */
  expect_error(g, hc_grid_assign(g, P, hc_gexpr_dense(g, A), NULL, NULL), "3-D expression", "rank mismatch");
  hc_grid_destroy(g);
  hc_field_destroy(A);
  hc_field_destroy(B);
  hc_field_destroy(C);
  hc_field_destroy(A32);
  hc_field_destroy(P);
}

static void test_range_errors(void) {
  hc_device_t *d = cpu();
  if (!d) return;
  hc_grid_t *g = NULL;
  TH_ASSERT_OK(hc_grid_create(d, NULL, &g));
  int64_t s[3] = {6, 7, 8};
  hc_field_t *A = gt_field(d, HC_F64, 3, s, 1.0, NULL), *B = gt_field(d, HC_F64, 3, s, 2.0, NULL);
  hc_grid_range_t wide = {{4, 0, 0, 0}, {3, 0, 0, 0}, 0, 0};
  expect_error(g, hc_grid_assign(g, A, hc_gexpr_dense(g, B), &wide, NULL), "wider than field", "range too wide");
  hc_grid_range_t neg = {{0, -1, 0, 0}, {0, 0, 0, 0}, 0, 0};
  expect_error(g, hc_grid_assign(g, A, hc_gexpr_dense(g, B), &neg, NULL), "must be >= 0", "negative offset");
  /* a stencil on the whole field reads outside it */
  hc_gexpr_t *lap = hc_gexpr_apply(g, hc_gop_laplacian(g, 3, NULL), hc_gexpr_dense(g, B));
  expect_error(g, hc_grid_assign(g, A, lap, NULL, NULL), "reads field", "stencil on the boundary");
  /* restriction on the coarse boundary */
  int64_t f9[3] = {9, 9, 9}, c5[3] = {5, 5, 5};
  hc_field_t *F = gt_field(d, HC_F64, 3, f9, 1.0, NULL), *C = gt_field(d, HC_F64, 3, c5, 1.0, NULL);
  expect_error(g, hc_grid_assign(g, C, hc_gexpr_apply(g, hc_gop_restrict_fw(g, 3), hc_gexpr_dense(g, F)), NULL, NULL),
               "index -1", "restriction on the boundary");
  /* in-place stencils */
  hc_grid_range_t in = hc_grid_interior(1);
  hc_gexpr_t *self = hc_gexpr_apply(g, hc_gop_laplacian(g, 3, NULL), hc_gexpr_dense(g, A));
  expect_error(g, hc_grid_assign(g, A, self, &in, NULL), "in-place", "in-place stencil");
  /* ... also under a parity range when a same-colour neighbour is read */
  static const int32_t off[2 * 3] = {0, 0, 0, 0, 1, 1};
  static const double co[2] = {1, 1};
  hc_grid_range_t red = hc_grid_interior(1);
  red.parity = HC_GRID_EVEN;
  expect_error(
      g, hc_grid_assign(g, A, hc_gexpr_apply(g, hc_gop_stencil(g, 3, 2, off, co), hc_gexpr_dense(g, A)), &red, NULL),
      "offset (0,1,1)", "same-colour read");
  /* an empty box is fine: nothing runs */
  hc_grid_range_t empty = {{3, 0, 0, 0}, {3, 0, 0, 0}, 0, 0};
  TH_ASSERT_OK(hc_grid_assign(g, A, hc_gexpr_dense(g, B), &empty, NULL));
  hc_grid_destroy(g);
  hc_field_destroy(A);
  hc_field_destroy(B);
  hc_field_destroy(F);
  hc_field_destroy(C);
}

/* No compiler: host=auto falls back to the evaluator (and says so in the
 * stats), host=compile fails cleanly; a user source the compiler rejects
 * is HC_ERR_BUILD with the compiler's message. */
static void test_compiler_fallback(void) {
  hc_device_t *d = cpu();
  if (!d) return;
  int64_t s[3] = {5, 6, 7};
  hc_field_t *A = gt_field(d, HC_F64, 3, s, 0.0, NULL);
  double *b;
  hc_field_t *B = gt_field(d, HC_F64, 3, s, NAN, &b);
  const char *old = getenv("HC_GRID_CC");
  char *saved = old ? strdup(old) : NULL;
  setenv("HC_GRID_CC", "/nonexistent/hc-no-cc", 1);
  for (int mode = 0; mode < 2; mode++) {
    hc_grid_options_t o = {sizeof o, 0, mode == 0 ? HC_GRID_HOST_AUTO : HC_GRID_HOST_COMPILE, 0};
    hc_grid_t *g = NULL;
    TH_ASSERT_OK(hc_grid_create(d, &o, &g));
    hc_gexpr_t *e = hc_gexpr_scale(g, 2.0, hc_gexpr_dense(g, B));
    hc_status_t st = hc_grid_assign(g, A, e, NULL, NULL);
    hc_grid_stats_t stats = gt_stats(g);
    if (mode == 0) {
      TH_ASSERT_OK(st);
      CU_ASSERT_EQUAL(stats.compiler_fallbacks, 1);
      CU_ASSERT_EQUAL(stats.host_evaluated, 1);
      size_t n = hc_field_count(A);
      double *ref = malloc(n * sizeof *ref);
      for (size_t i = 0; i < n; i++) ref[i] = 2 * b[i];
      CU_ASSERT_EQUAL(gt_check("fallback", A, ref, NULL, NULL, 1e-15), 0);
      free(ref);
      /* the second assignment goes straight to the evaluator */
      TH_ASSERT_OK(hc_grid_assign(g, A, e, NULL, NULL));
      stats = gt_stats(g);
      CU_ASSERT_EQUAL(stats.compiler_fallbacks, 1);
    } else {
      CU_ASSERT_EQUAL(st, HC_ERR_UNSUPPORTED);
      CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "hc-no-cc"));
    }
    hc_grid_destroy(g);
  }
  if (saved)
    setenv("HC_GRID_CC", saved, 1);
  else
    unsetenv("HC_GRID_CC");
  free(saved);
  /* a user function whose source does not compile */
  static const char *specs[] = {"cpu", "opencl", "cuda"};
  for (int i = 0; i < 3; i++) {
    hc_device_t *dev = th_device(specs[i]);
    if (!dev) continue;
    hc_grid_options_t o = {sizeof o, 0, HC_GRID_HOST_COMPILE, 0};
    hc_grid_t *g = NULL;
    TH_ASSERT_OK(hc_grid_create(dev, &o, &g));
    hc_field_t *X = gt_field(dev, HC_F64, 3, s, 0.0, NULL);
    hc_gfunc_t fn = {.size = sizeof fn, .kind = HC_GFUNC_USER, .source = "x + no_such_function(y)"};
    hc_status_t st = hc_grid_assign(g, X, hc_gexpr_computable(g, &fn), NULL, NULL);
    CU_ASSERT_EQUAL(st, HC_ERR_BUILD);
    if (st == HC_ERR_BUILD) CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "no_such_function"));
    hc_field_destroy(X);
    hc_grid_destroy(g);
  }
  free(b);
  hc_field_destroy(A);
  hc_field_destroy(B);
}

/* hcrun W with TMPDIR=tmp: exit 0 and the evaluator's note. */
static void runs_with_evaluator(const char *tmp, const char *workload) {
  static char out[1 << 16], err[1 << 14];
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "TMPDIR='%s' HC_CACHE=0 %s/bin/hcrun --backend=cpu --workload=%s %s", tmp, th_build_dir(),
           workload, !strcmp(workload, "multigrid") ? "n=17" : "");
  int rc = th_run(cmd, out, sizeof out, err, sizeof err);
  if (rc != 0 || !strstr(out, "compiled host kernels unavailable"))
    fprintf(stderr, "%s -> %d\n%s%s\n", cmd, rc, out, err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "the row evaluator ran instead"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, tmp));
}

/* A TMPDIR that is missing, or on a noexec mount (where a compiled object
 * cannot be mapped), is no runtime error under host=auto: the evaluator
 * runs, with a note. */
static void test_unusable_tmpdir(void) {
  char missing[4200], noexec[4200];
  snprintf(missing, sizeof missing, "%s/no-such-tmp", th_tmpdir());
  runs_with_evaluator(missing, "multigrid");
  runs_with_evaluator(missing, "gridexpr");
  snprintf(noexec, sizeof noexec, "%s/noexec", th_tmpdir());
  mkdir(noexec, 0700);
  if (mount("tmpfs", noexec, "tmpfs", MS_NOEXEC, "size=16m") != 0) {
    printf("\n    (noexec TMPDIR part skipped: cannot mount a tmpfs here)");
    return;
  }
  runs_with_evaluator(noexec, "multigrid");
  runs_with_evaluator(noexec, "gridexpr");
  CU_ASSERT_TRUE(th_dir_empty(noexec)); /* nothing left behind */
  umount(noexec);
}

/* The compile directory of a process killed during a compile is removed by
 * the next process that compiles; a live process's is kept; and
 * hc_remove_temporaries (for a signal handler) removes what is registered. */
static void test_stale_compile_dirs(void) {
  char tmp[4200], dead[4400], live[4400], cmd[32768];
  snprintf(tmp, sizeof tmp, "%s/sweep", th_tmpdir());
  mkdir(tmp, 0700);
  pid_t p = fork();
  if (p == 0) _exit(0);
  waitpid(p, NULL, 0); /* p is now a pid no process has */
  snprintf(dead, sizeof dead, "%s/hcgrid-%ld-abcdef", tmp, (long)p);
  snprintf(live, sizeof live, "%s/hcgrid-%ld-abcdef", tmp, (long)getpid());
  snprintf(cmd, sizeof cmd, "mkdir '%s' '%s' && touch '%s/k.c' '%s/cc.log' '%s/k.c'", dead, live, dead, dead, live);
  CU_ASSERT_EQUAL_FATAL(th_run(cmd, NULL, 0, NULL, 0), 0);
  snprintf(cmd, sizeof cmd, "TMPDIR='%s' HC_CACHE=0 %s/bin/hcrun --backend=cpu --workload=gridexpr host=compile", tmp,
           th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, NULL, 0, NULL, 0), 0);
  struct stat st;
  CU_ASSERT_NOT_EQUAL(stat(dead, &st), 0);
  CU_ASSERT_EQUAL(stat(live, &st), 0);
  /* Registered temporaries: files first, then their directory. */
  char f[4500];
  snprintf(f, sizeof f, "%s/k.c", live);
  int a = hc_temp_register(live), b = hc_temp_register(f);
  CU_ASSERT_TRUE(a >= 0 && b >= 0);
  hc_remove_temporaries();
  CU_ASSERT_NOT_EQUAL(stat(live, &st), 0);
  hc_temp_unregister(a);
  hc_temp_unregister(b);
}

static void test_option_names(void) {
  hc_grid_fuse_t f;
  hc_grid_host_t h;
  TH_ASSERT_OK(hc_grid_fuse_from_name("materialise", &f));
  CU_ASSERT_EQUAL(f, HC_GRID_FUSE_MATERIALISE);
  TH_ASSERT_OK(hc_grid_host_from_name("eval", &h));
  CU_ASSERT_EQUAL(h, HC_GRID_HOST_EVAL);
  CU_ASSERT_EQUAL(hc_grid_fuse_from_name("fast", &f), HC_ERR_PARAM);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "fuse=fast"));
  CU_ASSERT_STRING_EQUAL(hc_grid_fuse_name(HC_GRID_FUSE_STAGE), "stage");
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("grid_errors", NULL, NULL);
  CU_ADD_TEST(s, test_shape_errors);
  CU_ADD_TEST(s, test_range_errors);
  CU_ADD_TEST(s, test_compiler_fallback);
  CU_ADD_TEST(s, test_option_names);
  CU_ADD_TEST(s, test_unusable_tmpdir);
  CU_ADD_TEST(s, test_stale_compile_dirs);
}

TH_MAIN(register_tests)
