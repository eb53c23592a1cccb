/* Grid expressions: every operator and arithmetic form against a direct
 * host evaluation in f64 on random fields, on every device configuration
 * (cpu with compiled C, cpu with the row evaluator, opencl, cuda), in f32
 * and f64; ranges write exactly their cells (the rest stay bit-identical);
 * every fuse policy gives the same field; reductions; kernel caching. */
#include "grid_testlib.h"

static const hc_dtype_t dtypes[] = {HC_F64, HC_F32};

/* h = 2.5 f + f g - g + 3 on the whole field. */
/* 2.5 f + f g - g + 3 on a 3-D field of every configuration; `note`
 * names the setting in the failure messages. */
static void check_arithmetic(const char *note) {
  int64_t shape[3] = {7, 9, 11};
  for (size_t c = 0; c < GT_NCFG; c++)
    for (int t = 0; t < 2; t++) {
      hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_AUTO);
      if (!g) continue;
      hc_device_t *d = hc_grid_device(g);
      double *f, *gg, *h0;
      hc_field_t *F = gt_field(d, dtypes[t], 3, shape, NAN, &f), *G = gt_field(d, dtypes[t], 3, shape, NAN, &gg);
      hc_field_t *H = gt_field(d, dtypes[t], 3, shape, NAN, &h0);
      hc_gexpr_t *ef = hc_gexpr_dense(g, F), *eg = hc_gexpr_dense(g, G);
      hc_gexpr_t *e =
          hc_gexpr_add(g, hc_gexpr_sub(g, hc_gexpr_add(g, hc_gexpr_scale(g, 2.5, ef), hc_gexpr_mul(g, ef, eg)), eg),
                       hc_gexpr_scalar(g, 3.0));
      TH_ASSERT_OK(hc_grid_assign(g, H, e, NULL, NULL));
      size_t n = hc_field_count(H);
      double *ref = malloc(n * sizeof *ref);
      for (size_t i = 0; i < n; i++) ref[i] = 2.5 * f[i] + f[i] * gg[i] - gg[i] + 3.0;
      char what[96];
      snprintf(what, sizeof what, "%s%s", gt_cfgs[c].label, note);
      CU_ASSERT_EQUAL(gt_check(what, H, ref, h0, NULL, gt_tol(dtypes[t])), 0);
      free(ref);
      free(f);
      free(gg);
      free(h0);
      hc_field_destroy(F);
      hc_field_destroy(G);
      hc_field_destroy(H);
      hc_grid_destroy(g);
    }
}

static void test_arithmetic(void) { check_arithmetic(""); }

/* Runs `check` with the kernel shape variable `var` (HC_GRID_POINT,
 * HC_GRID_STENCIL) set to shapes whose groups cut the boxes unevenly and
 * whose plane counts leave a remainder; `check` gets " VAR=shape". */
static void with_odd_shapes(const char *var, void (*check)(const char *note)) {
  static const char *const shapes[] = {"8x2x3", "1x1x1", "16x4x16"};
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    setenv(var, shapes[k], 1);
    char note[48];
    snprintf(note, sizeof note, " %s=%s", var, shapes[k]);
    check(note);
  }
}

/* 3-D pointwise kernels in other shapes (HC_GRID_POINT) give the same
 * field; a malformed value is an error that names the variable. */
static void test_point_shapes(void) {
  with_odd_shapes("HC_GRID_POINT", check_arithmetic);
  gt_check_bad_shape("HC_GRID_POINT", "64");
}

/* h = Δ(f + g) on the interior of a rank-D field of configuration c,
 * against the host reference; the kernels' counts checked per policy. */
static void check_laplacian_of_sum(size_t c, uint32_t rank, hc_dtype_t dt, hc_grid_fuse_t fuse, const char *note) {
  hc_grid_t *g = gt_grid(&gt_cfgs[c], fuse);
  if (!g) return;
  hc_device_t *d = hc_grid_device(g);
  int64_t shape[3] = {rank == 1 ? 70 : 9, 12, 13};
  const double hs[3] = {0.5, 0.25, 2.0};
  double *f, *gg, *h0;
  hc_field_t *F = gt_field(d, dt, rank, shape, NAN, &f), *G = gt_field(d, dt, rank, shape, NAN, &gg);
  hc_field_t *H = gt_field(d, dt, rank, shape, NAN, &h0);
  hc_field_set_spacing(H, hs);
  /* 3-D: h from the field's spacing; 1-D/2-D: given */
  hc_gop_t *L = hc_gop_laplacian(g, rank, rank == 3 ? NULL : hs);
  hc_gexpr_t *e = hc_gexpr_apply(g, L, hc_gexpr_add(g, hc_gexpr_dense(g, F), hc_gexpr_dense(g, G)));
  hc_grid_range_t in = hc_grid_interior(1);
  TH_ASSERT_OK(hc_grid_assign(g, H, e, &in, NULL));
  int64_t n[3], lo[3], hi[3];
  gt_ext(rank, shape, n);
  gt_box(rank, n, &in, lo, hi);
  size_t cnt = gt_count(n);
  double *s = malloc(cnt * sizeof *s), *ref = calloc(cnt, sizeof *ref);
  for (size_t i = 0; i < cnt; i++) s[i] = f[i] + gg[i];
  int32_t off[7 * 3] = {0};
  double co[7] = {0};
  for (uint32_t dd = 0; dd < rank; dd++) {
    double w = 1.0 / (hs[dd] * hs[dd]);
    off[(1 + 2 * dd) * rank + dd] = -1;
    off[(2 + 2 * dd) * rank + dd] = 1;
    co[1 + 2 * dd] = co[2 + 2 * dd] = w;
    co[0] -= 2 * w;
  }
  gt_ref_stencil(rank, n, s, 2 * rank + 1, off, co, lo, hi, ref);
  char what[128];
  snprintf(what, sizeof what, "Δ(f+g) %uD %s %s fuse=%s%s", rank, gt_cfgs[c].label, hc_dtype_name(dt),
           hc_grid_fuse_name(fuse), note);
  CU_ASSERT_EQUAL(gt_check(what, H, ref, h0, &in, 20 * gt_tol(dt)), 0);
  hc_grid_stats_t st = gt_stats(g);
  if (fuse == HC_GRID_FUSE_MATERIALISE) CU_ASSERT_EQUAL(st.materialised, 1);
  if (fuse == HC_GRID_FUSE_RECOMPUTE) CU_ASSERT_EQUAL(st.launches, 1);
  if (fuse == HC_GRID_FUSE_STAGE && gt_cfgs[c].host != HC_GRID_HOST_EVAL) CU_ASSERT_EQUAL(st.staged, 1);
  free(s);
  free(ref);
  free(f);
  free(gg);
  free(h0);
  hc_field_destroy(F);
  hc_field_destroy(G);
  hc_field_destroy(H);
  hc_grid_destroy(g);
}

/* Δ(f + g) on the interior, spacing (0.5, 0.25, 2), under every fuse policy;
 * 2-D and 1-D with explicit h. */
static void test_laplacian_of_sum(void) {
  static const hc_grid_fuse_t fuses[] = {HC_GRID_FUSE_AUTO, HC_GRID_FUSE_RECOMPUTE, HC_GRID_FUSE_MATERIALISE,
                                         HC_GRID_FUSE_STAGE};
  for (uint32_t rank = 1; rank <= 3; rank++)
    for (size_t c = 0; c < GT_NCFG; c++)
      for (int t = 0; t < (rank == 3 ? 2 : 1); t++)
        for (size_t fu = 0; fu < 4; fu++) check_laplacian_of_sum(c, rank, dtypes[t], fuses[fu], "");
}

static void check_laplacian_2d_3d(const char *note) {
  for (uint32_t rank = 2; rank <= 3; rank++)
    for (size_t c = 0; c < GT_NCFG; c++) check_laplacian_of_sum(c, rank, HC_F64, HC_GRID_FUSE_RECOMPUTE, note);
}

/* The device stencil kernels' shape (HC_GRID_STENCIL): other shapes give
 * the same field; a malformed value is an error that names the variable. */
static void test_stencil_shapes(void) {
  with_odd_shapes("HC_GRID_STENCIL", check_laplacian_2d_3d);
  gt_check_bad_shape("HC_GRID_STENCIL", "32x8");
}

/* A user stencil reaching 2 cells, applied with asymmetric ranges, and the
 * parity ranges on a pointwise expression. */
static void test_user_stencil_and_ranges(void) {
  static const int32_t off[5 * 3] = {0, 0, 0, -2, 0, 1, 1, 2, 0, 0, -1, -2, 2, 1, 2};
  static const double co[5] = {0.5, -1.25, 2.0, 0.75, -0.3};
  int64_t shape[3] = {10, 9, 12};
  for (size_t c = 0; c < GT_NCFG; c++) {
    hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_AUTO);
    if (!g) continue;
    hc_device_t *d = hc_grid_device(g);
    double *f, *h0;
    hc_field_t *F = gt_field(d, HC_F64, 3, shape, NAN, &f), *H = gt_field(d, HC_F64, 3, shape, NAN, &h0);
    hc_grid_range_t r = {{2, 3, 2, 0}, {3, 2, 2, 0}, 0, 0};
    hc_gexpr_t *e = hc_gexpr_apply(g, hc_gop_stencil(g, 3, 5, off, co), hc_gexpr_dense(g, F));
    TH_ASSERT_OK(hc_grid_assign(g, H, e, &r, NULL));
    int64_t n[3], lo[3], hi[3];
    gt_ext(3, shape, n);
    gt_box(3, n, &r, lo, hi);
    double *ref = calloc(gt_count(n), sizeof *ref);
    gt_ref_stencil(3, n, f, 5, off, co, lo, hi, ref);
    CU_ASSERT_EQUAL(gt_check("user stencil", H, ref, h0, &r, 1e-12), 0);
    /* parity: H = 2 f - 1 on even, then on odd cells of a box */
    for (uint32_t par = HC_GRID_EVEN; par <= HC_GRID_ODD; par++) {
      double *before = gt_read(H);
      hc_grid_range_t pr = {{1, 0, 2, 0}, {0, 1, 3, 0}, par, 0};
      hc_gexpr_t *pe = hc_gexpr_add(g, hc_gexpr_scale(g, 2.0, hc_gexpr_dense(g, F)), hc_gexpr_scalar(g, -1.0));
      TH_ASSERT_OK(hc_grid_assign(g, H, pe, &pr, NULL));
      for (size_t i = 0; i < gt_count(n); i++) ref[i] = 2 * f[i] - 1;
      CU_ASSERT_EQUAL(gt_check(par == HC_GRID_EVEN ? "even cells" : "odd cells", H, ref, before, &pr, 1e-14), 0);
      free(before);
    }
    free(ref);
    free(f);
    free(h0);
    hc_field_destroy(F);
    hc_field_destroy(H);
    hc_grid_destroy(g);
  }
}

/* First differences along every axis, forward / backward / central. */
static void test_differences(void) {
  int64_t shape[3] = {8, 10, 9};
  const double hs[3] = {0.1, 0.2, 0.4};
  for (size_t c = 0; c < GT_NCFG; c++) {
    hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_AUTO);
    if (!g) continue;
    hc_device_t *d = hc_grid_device(g);
    double *f, *h0;
    hc_field_t *F = gt_field(d, HC_F64, 3, shape, NAN, &f), *H = gt_field(d, HC_F64, 3, shape, NAN, &h0);
    hc_field_set_spacing(H, hs);
    int64_t n[3];
    gt_ext(3, shape, n);
    double *ref = calloc(gt_count(n), sizeof *ref);
    for (uint32_t axis = 0; axis < 3; axis++)
      for (int kind = 0; kind < 3; kind++) {
        hc_grid_range_t r;
        memset(&r, 0, sizeof r);
        if (kind != HC_GDIFF_BACKWARD) r.hi[axis] = 1;
        if (kind != HC_GDIFF_FORWARD) r.lo[axis] = 1;
        double *before = gt_read(H);
        hc_gexpr_t *e = hc_gexpr_apply(g, hc_gop_diff(g, 3, axis, (hc_gdiff_t)kind, 0), hc_gexpr_dense(g, F));
        TH_ASSERT_OK(hc_grid_assign(g, H, e, &r, NULL));
        int32_t off[6] = {0};
        double co[2];
        double w = kind == HC_GDIFF_CENTRAL ? 0.5 / hs[axis] : 1.0 / hs[axis];
        off[axis] = kind == HC_GDIFF_FORWARD ? 0 : -1;
        off[3 + axis] = kind == HC_GDIFF_BACKWARD ? 0 : 1;
        co[0] = -w;
        co[1] = w;
        int64_t lo[3], hi[3];
        gt_box(3, n, &r, lo, hi);
        gt_ref_stencil(3, n, f, 2, off, co, lo, hi, ref);
        char what[64];
        snprintf(what, sizeof what, "diff axis %u kind %d on %s", axis, kind, gt_cfgs[c].label);
        CU_ASSERT_EQUAL(gt_check(what, H, ref, before, &r, 1e-12), 0);
        free(before);
      }
    free(ref);
    free(f);
    free(h0);
    hc_field_destroy(F);
    hc_field_destroy(H);
    hc_grid_destroy(g);
  }
}

/* (A + 2B - I)(f) and the composition A o A (a 13-point biharmonic). */
static void test_operator_algebra(void) {
  int64_t shape[3] = {9, 8, 11};
  for (size_t c = 0; c < GT_NCFG; c++)
    for (int t = 0; t < 2; t++) {
      hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_RECOMPUTE);
      if (!g) continue;
      hc_device_t *d = hc_grid_device(g);
      double *f, *h0;
      hc_field_t *F = gt_field(d, dtypes[t], 3, shape, NAN, &f), *H = gt_field(d, dtypes[t], 3, shape, NAN, &h0);
      hc_gop_t *A = hc_gop_laplacian(g, 3, NULL);
      hc_gop_t *B = hc_gop_diff(g, 3, 1, HC_GDIFF_CENTRAL, 0);
      hc_gop_t *S = hc_gop_sub(g, hc_gop_add(g, A, hc_gop_scale(g, 2.0, B)), hc_gop_identity(g, 0));
      hc_grid_range_t in = hc_grid_interior(1);
      TH_ASSERT_OK(hc_grid_assign(g, H, hc_gexpr_apply(g, S, hc_gexpr_dense(g, F)), &in, NULL));
      int64_t n[3], lo[3], hi[3];
      gt_ext(3, shape, n);
      gt_box(3, n, &in, lo, hi);
      double *ref = calloc(gt_count(n), sizeof *ref);
      /* A + 2B - I as one stencil: centre -6 - 1, neighbours 1, axis 1 +-1 */
      int32_t off[7 * 3] = {0, 0, 0, -1, 0, 0, 1, 0, 0, 0, -1, 0, 0, 1, 0, 0, 0, -1, 0, 0, 1};
      double co[7] = {-7, 1, 1, 1 - 1.0, 1 + 1.0, 1, 1};
      gt_ref_stencil(3, n, f, 7, off, co, lo, hi, ref);
      CU_ASSERT_EQUAL(gt_check("(A + 2B - I)(f)", H, ref, h0, &in, 20 * gt_tol(dtypes[t])), 0);
      /* A o A on the box 2 cells in */
      double *before = gt_read(H);
      hc_grid_range_t in2 = hc_grid_interior(2);
      TH_ASSERT_OK(hc_grid_assign(g, H, hc_gexpr_apply(g, hc_gop_compose(g, A, A), hc_gexpr_dense(g, F)), &in2, NULL));
      double *lap = calloc(gt_count(n), sizeof *lap);
      gt_ref_stencil(3, n, f, 7, off, (double[]){-6, 1, 1, 1, 1, 1, 1}, lo, hi, lap);
      gt_box(3, n, &in2, lo, hi);
      gt_ref_stencil(3, n, lap, 7, off, (double[]){-6, 1, 1, 1, 1, 1, 1}, lo, hi, ref);
      CU_ASSERT_EQUAL(gt_check("(A o A)(f)", H, ref, before, &in2, 100 * gt_tol(dtypes[t])), 0);
      free(before);
      free(lap);
      free(ref);
      free(f);
      free(h0);
      hc_field_destroy(F);
      hc_field_destroy(H);
      hc_grid_destroy(g);
    }
}

/* Restriction (full weighting), prolongation (linear), and the fused
 * restricted residual R(f + Δu) — multigrid's transfer operators. */
static void test_transfers(void) {
  for (uint32_t rank = 1; rank <= 3; rank++)
    for (size_t c = 0; c < GT_NCFG; c++) {
      hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_AUTO);
      if (!g) continue;
      hc_device_t *d = hc_grid_device(g);
      int64_t fs[3] = {rank == 1 ? 33 : 9, 11, 13}, cs[3];
      for (int i = 0; i < 3; i++) cs[i] = (fs[i] + 1) / 2;
      double *f, *u, *cc, *h0, *c0;
      hc_field_t *F = gt_field(d, HC_F64, rank, fs, NAN, &f), *U = gt_field(d, HC_F64, rank, fs, NAN, &u);
      hc_field_t *C = gt_field(d, HC_F64, rank, cs, NAN, &cc), *Hf = gt_field(d, HC_F64, rank, fs, NAN, &h0);
      hc_field_t *Hc = gt_field(d, HC_F64, rank, cs, NAN, &c0);
      int64_t nf[3], nc[3], lo[3], hi[3];
      gt_ext(rank, fs, nf);
      gt_ext(rank, cs, nc);
      hc_grid_range_t in = hc_grid_interior(1);
      gt_box(rank, nc, &in, lo, hi);
      double *ref = calloc(gt_count(nf), sizeof *ref), *res = calloc(gt_count(nf), sizeof *res);
      char what[64];
      /* R(f) */
      TH_ASSERT_OK(
          hc_grid_assign(g, Hc, hc_gexpr_apply(g, hc_gop_restrict_fw(g, rank), hc_gexpr_dense(g, F)), &in, NULL));
      gt_ref_restrict(rank, nf, f, nc, lo, hi, ref);
      snprintf(what, sizeof what, "R(f) %uD %s", rank, gt_cfgs[c].label);
      CU_ASSERT_EQUAL(gt_check(what, Hc, ref, c0, &in, 1e-13), 0);
      /* P(c) everywhere */
      TH_ASSERT_OK(
          hc_grid_assign(g, Hf, hc_gexpr_apply(g, hc_gop_prolong_linear(g, rank), hc_gexpr_dense(g, C)), NULL, NULL));
      gt_ref_prolong(rank, nc, cc, nf, ref);
      snprintf(what, sizeof what, "P(c) %uD %s", rank, gt_cfgs[c].label);
      CU_ASSERT_EQUAL(gt_check(what, Hf, ref, h0, NULL, 1e-13), 0);
      /* R(f + Δu): one fused kernel reading f and u; the Laplacian takes the
       * fine level's spacing, half the coarse field's (2 -> 1) */
      const double two[3] = {2, 2, 2};
      hc_field_set_spacing(Hc, two);
      double *before = gt_read(Hc);
      hc_gexpr_t *r = hc_gexpr_add(g, hc_gexpr_dense(g, F),
                                   hc_gexpr_apply(g, hc_gop_laplacian(g, rank, NULL), hc_gexpr_dense(g, U)));
      TH_ASSERT_OK(hc_grid_assign(g, Hc, hc_gexpr_apply(g, hc_gop_restrict_fw(g, rank), r), &in, NULL));
      int64_t flo[3], fhi[3];
      gt_box(rank, nf, &in, flo, fhi);
      int32_t off[7 * 3] = {0};
      double co[7] = {0};
      for (uint32_t dd = 0; dd < rank; dd++) {
        off[(1 + 2 * dd) * rank + dd] = -1;
        off[(2 + 2 * dd) * rank + dd] = 1;
        co[1 + 2 * dd] = co[2 + 2 * dd] = 1;
        co[0] -= 2;
      }
      gt_ref_stencil(rank, nf, u, 2 * rank + 1, off, co, flo, fhi, res);
      for (size_t i = 0; i < gt_count(nf); i++) res[i] += f[i];
      gt_ref_restrict(rank, nf, res, nc, lo, hi, ref);
      snprintf(what, sizeof what, "R(f + Δu) %uD %s", rank, gt_cfgs[c].label);
      CU_ASSERT_EQUAL(gt_check(what, Hc, ref, before, &in, 1e-12), 0);
      /* u + P(c) on the interior, in place (pointwise in u) */
      double *ub = gt_read(U);
      TH_ASSERT_OK(hc_grid_assign(g, U,
                                  hc_gexpr_add(g, hc_gexpr_dense(g, U),
                                               hc_gexpr_apply(g, hc_gop_prolong_linear(g, rank), hc_gexpr_dense(g, C))),
                                  &in, NULL));
      gt_ref_prolong(rank, nc, cc, nf, ref);
      for (size_t i = 0; i < gt_count(nf); i++) ref[i] += u[i];
      snprintf(what, sizeof what, "u += P(c) %uD %s", rank, gt_cfgs[c].label);
      CU_ASSERT_EQUAL(gt_check(what, U, ref, ub, &in, 1e-13), 0);
      free(ub);
      free(before);
      free(ref);
      free(res);
      free(f);
      free(u);
      free(cc);
      free(h0);
      free(c0);
      hc_field_destroy(F);
      hc_field_destroy(U);
      hc_field_destroy(C);
      hc_field_destroy(Hf);
      hc_field_destroy(Hc);
      hc_grid_destroy(g);
    }
}

static double user_host(const double *x, const int64_t *i, const double *p, void *user) {
  (void)user;
  return p[0] * x[0] * x[0] + sin(x[1]) - 0.5 * (double)i[2];
}

/* Computable grid functions, alone and under a stencil. */
static void test_computables(void) {
  int64_t shape[3] = {9, 10, 12};
  const double hs[3] = {0.125, 0.1, 0.05}, org[3] = {-0.5, 0.25, 1.0};
  for (size_t c = 0; c < GT_NCFG; c++) {
    hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_AUTO);
    if (!g) continue;
    hc_device_t *d = hc_grid_device(g);
    double *h0;
    hc_field_t *H = gt_field(d, HC_F64, 3, shape, NAN, &h0);
    hc_field_set_spacing(H, hs);
    hc_field_set_origin(H, org);
    int64_t n[3];
    gt_ext(3, shape, n);
    size_t cnt = gt_count(n);
    double *ref = malloc(cnt * sizeof *ref);
    hc_gfunc_t fs[6] = {
        {.size = sizeof(hc_gfunc_t), .kind = HC_GFUNC_COORD, .axis = 1},
        {.size = sizeof(hc_gfunc_t), .kind = HC_GFUNC_INDEX, .axis = 2},
        {.size = sizeof(hc_gfunc_t), .kind = HC_GFUNC_SIN, .amplitude = 2, .k = {1, 2, 3}},
        {.size = sizeof(hc_gfunc_t), .kind = HC_GFUNC_GAUSS, .amplitude = 3, .center = {0, 0.6, 1.2}, .sigma = 0.3},
        {.size = sizeof(hc_gfunc_t), .kind = HC_GFUNC_POINT, .amplitude = 5, .center = {0.0, 0.45, 1.3}},
        {.size = sizeof(hc_gfunc_t),
         .kind = HC_GFUNC_USER,
         .source = "p0 * x * x + sin(y) - (REAL)0.5 * (REAL)k",
         .host = user_host,
         .params = {1.5}},
    };
    for (int fi = 0; fi < 6; fi++) {
      hc_gexpr_t *e = hc_gexpr_computable(g, &fs[fi]);
      TH_ASSERT_OK(hc_grid_assign(g, H, e, NULL, NULL));
      for (int64_t i = 0; i < n[0]; i++)
        for (int64_t j = 0; j < n[1]; j++)
          for (int64_t k = 0; k < n[2]; k++) {
            double x[3] = {org[0] + hs[0] * i, org[1] + hs[1] * j, org[2] + hs[2] * k}, v = 0;
            int64_t id[3] = {i, j, k};
            switch (fi) {
            case 0: v = x[1]; break;
            case 1: v = (double)k; break;
            case 2: v = 2 * sin(M_PI * x[0]) * sin(2 * M_PI * x[1]) * sin(3 * M_PI * x[2]); break;
            case 3: {
              double r2 = x[0] * x[0] + (x[1] - 0.6) * (x[1] - 0.6) + (x[2] - 1.2) * (x[2] - 1.2);
              v = 3 * exp(-r2 / (2 * 0.09));
              break;
            }
            case 4: v = (i == 4 && j == 2 && k == 6) ? 5 : 0; break;
            case 5: v = user_host(x, id, (double[]){1.5}, NULL); break;
            }
            ref[gt_id(n, i, j, k)] = v;
          }
      char what[64];
      snprintf(what, sizeof what, "computable %d on %s", fi, gt_cfgs[c].label);
      CU_ASSERT_EQUAL(gt_check(what, H, ref, NULL, NULL, 1e-12), 0);
    }
    /* Δ(sin product) fused (the cost model materialises it) */
    double *s = malloc(cnt * sizeof *s);
    for (int64_t i = 0; i < n[0]; i++)
      for (int64_t j = 0; j < n[1]; j++)
        for (int64_t k = 0; k < n[2]; k++)
          s[gt_id(n, i, j, k)] = 2 * sin(M_PI * (org[0] + hs[0] * i)) * sin(2 * M_PI * (org[1] + hs[1] * j)) *
                                 sin(3 * M_PI * (org[2] + hs[2] * k));
    double *before = gt_read(H);
    hc_grid_range_t in = hc_grid_interior(1);
    TH_ASSERT_OK(hc_grid_assign(g, H, hc_gexpr_apply(g, hc_gop_laplacian(g, 3, NULL), hc_gexpr_computable(g, &fs[2])),
                                &in, NULL));
    int32_t off[7 * 3] = {0, 0, 0, -1, 0, 0, 1, 0, 0, 0, -1, 0, 0, 1, 0, 0, 0, -1, 0, 0, 1};
    double co[7];
    co[0] = 0;
    for (int dd = 0; dd < 3; dd++) {
      co[1 + 2 * dd] = co[2 + 2 * dd] = 1 / (hs[dd] * hs[dd]);
      co[0] -= 2 / (hs[dd] * hs[dd]);
    }
    int64_t lo[3], hi[3];
    gt_box(3, n, &in, lo, hi);
    gt_ref_stencil(3, n, s, 7, off, co, lo, hi, ref);
    CU_ASSERT_EQUAL(gt_check("Δ(sin)", H, ref, before, &in, 1e-10), 0);
    free(before);
    free(s);
    free(ref);
    free(h0);
    hc_field_destroy(H);
    hc_grid_destroy(g);
  }
}

/* Reductions: sum, sum of squares, max |.| of f - g on boxes. */
static void test_reductions(void) {
  int64_t shape[3] = {13, 14, 15};
  for (size_t c = 0; c < GT_NCFG; c++)
    for (int t = 0; t < 2; t++) {
      hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_AUTO);
      if (!g) continue;
      hc_device_t *d = hc_grid_device(g);
      double *f, *gg;
      hc_field_t *F = gt_field(d, dtypes[t], 3, shape, NAN, &f), *G = gt_field(d, dtypes[t], 3, shape, NAN, &gg);
      int64_t n[3];
      gt_ext(3, shape, n);
      for (uint32_t par = 0; par <= 2; par++) {
        hc_grid_range_t r = {{1, 2, 0, 0}, {0, 1, 3, 0}, par, 0};
        int64_t lo[3], hi[3];
        gt_box(3, n, &r, lo, hi);
        double want[3] = {0, 0, 0};
        for (int64_t i = 0; i < n[0]; i++)
          for (int64_t j = 0; j < n[1]; j++)
            for (int64_t k = 0; k < n[2]; k++) {
              if (!gt_in_box(lo, hi, par, i, j, k)) continue;
              double v = f[gt_id(n, i, j, k)] - gg[gt_id(n, i, j, k)];
              want[0] += v;
              want[1] += v * v;
              if (fabs(v) > want[2]) want[2] = fabs(v);
            }
        for (int op = 0; op < 3; op++) {
          double got = -1;
          hc_gexpr_t *e = hc_gexpr_sub(g, hc_gexpr_dense(g, F), hc_gexpr_dense(g, G));
          TH_ASSERT_OK(hc_grid_reduce(g, (hc_grid_reduce_op_t)op, F, e, &r, NULL, &got));
          double tol = (dtypes[t] == HC_F64 ? 1e-12 : 2e-6) * (op == 0 ? 100.0 : 1.0);
          if (fabs(got - want[op]) > tol * (fabs(want[op]) + 1)) {
            fprintf(stderr, "reduce op %d parity %u on %s %s: got %.17g want %.17g\n", op, par, gt_cfgs[c].label,
                    hc_dtype_name(dtypes[t]), got, want[op]);
            CU_FAIL("reduction differs");
          }
        }
      }
      free(f);
      free(gg);
      hc_field_destroy(F);
      hc_field_destroy(G);
      hc_grid_destroy(g);
    }
}

/* A NaN or an infinity in the data reaches every reduction's result
 * (status.h, "Non-finite values"): max |.| kept a finite maximum through
 * fmax and plain comparisons, on every configuration. */
static void test_reductions_nonfinite(void) {
  int64_t shape[3] = {9, 10, 11};
  for (size_t c = 0; c < GT_NCFG; c++)
    for (int t = 0; t < 2; t++)
      for (int bad = 0; bad < 2; bad++) {
        hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_AUTO);
        if (!g) continue;
        hc_device_t *d = hc_grid_device(g);
        hc_field_t *F = gt_field(d, dtypes[t], 3, shape, 0.5, NULL);
        size_t n = hc_field_count(F), at = bad ? n / 2 + 3 : 0; /* first or mid-field */
        void *raw = malloc(n * 8);
        TH_ASSERT_OK(hc_field_read(F, raw));
        if (dtypes[t] == HC_F32)
          ((float *)raw)[at] = bad ? -INFINITY : NAN;
        else
          ((double *)raw)[at] = bad ? -INFINITY : NAN;
        TH_ASSERT_OK(hc_field_write(F, raw));
        free(raw);
        for (int op = 0; op < 3; op++) {
          double got = 0;
          TH_ASSERT_OK(hc_grid_reduce(g, (hc_grid_reduce_op_t)op, F, hc_gexpr_dense(g, F), NULL, NULL, &got));
          int ok = bad ? (op == 0 ? isinf(got) && got < 0 : isinf(got) && got > 0) : isnan(got);
          if (!ok)
            fprintf(stderr, "reduce op %d of a field with %s on %s %s: %g\n", op, bad ? "-inf" : "nan",
                    gt_cfgs[c].label, hc_dtype_name(dtypes[t]), got);
          CU_ASSERT(ok);
        }
        hc_field_destroy(F);
        hc_grid_destroy(g);
      }
}

/* The same expression gives the same field on every configuration. */
static void test_backends_agree(void) {
  int64_t fs[3] = {17, 9, 13}, cs[3] = {9, 5, 7};
  double *first = NULL;
  const char *first_label = NULL;
  for (size_t c = 0; c < GT_NCFG; c++) {
    hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_AUTO);
    if (!g) continue;
    hc_device_t *d = hc_grid_device(g);
    gt_rng = 12345;
    hc_field_t *F = gt_field(d, HC_F64, 3, fs, NAN, NULL), *U = gt_field(d, HC_F64, 3, fs, NAN, NULL);
    hc_field_t *C = gt_field(d, HC_F64, 3, cs, NAN, NULL), *H = gt_field(d, HC_F64, 3, fs, 0.0, NULL);
    const double hs[3] = {0.5, 0.25, 0.125};
    hc_field_set_spacing(H, hs);
    /* H = 0.3 Δ(f·u + x) - P(R(f)) + c-correction, interior 2 */
    hc_gop_t *L = hc_gop_laplacian(g, 3, NULL);
    hc_gexpr_t *fu = hc_gexpr_add(g, hc_gexpr_mul(g, hc_gexpr_dense(g, F), hc_gexpr_dense(g, U)), hc_gexpr_coord(g, 0));
    hc_gexpr_t *pr = hc_gexpr_apply(g, hc_gop_compose(g, hc_gop_prolong_linear(g, 3), hc_gop_restrict_fw(g, 3)),
                                    hc_gexpr_dense(g, F));
    hc_gexpr_t *pc = hc_gexpr_apply(g, hc_gop_prolong_linear(g, 3), hc_gexpr_dense(g, C));
    hc_gexpr_t *e = hc_gexpr_add(g, hc_gexpr_sub(g, hc_gexpr_scale(g, 0.3, hc_gexpr_apply(g, L, fu)), pr), pc);
    hc_grid_range_t in = hc_grid_interior(2);
    TH_ASSERT_OK(hc_grid_assign(g, H, e, &in, NULL));
    double *got = gt_read(H);
    if (!first) {
      first = got;
      first_label = gt_cfgs[c].label;
    } else {
      double worst = 0;
      for (size_t i = 0; i < hc_field_count(H); i++) {
        double dd = fabs(got[i] - first[i]) / (fabs(first[i]) + 1);
        if (dd > worst) worst = dd;
      }
      if (worst > 1e-12)
        fprintf(stderr, "%s vs %s: max relative difference %.3g\n", gt_cfgs[c].label, first_label, worst);
      CU_ASSERT(worst <= 1e-12);
      free(got);
    }
    hc_field_destroy(F);
    hc_field_destroy(U);
    hc_field_destroy(C);
    hc_field_destroy(H);
    hc_grid_destroy(g);
  }
  free(first);
}

/* Kernels are cached by structure: re-assigning builds nothing; a new
 * scalar value, other fields of the same shape and a rebuilt expression
 * reuse the kernel. */
static void test_kernel_cache(void) {
  int64_t shape[3] = {6, 7, 8};
  for (size_t c = 0; c < GT_NCFG; c++) {
    hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_RECOMPUTE);
    if (!g) continue;
    hc_device_t *d = hc_grid_device(g);
    double *f, *f2;
    hc_field_t *F = gt_field(d, HC_F64, 3, shape, NAN, &f), *F2 = gt_field(d, HC_F64, 3, shape, NAN, &f2);
    hc_field_t *H = gt_field(d, HC_F64, 3, shape, 0.0, NULL);
    hc_gexpr_t *s = hc_gexpr_scalar(g, 2.0);
    hc_gexpr_t *e = hc_gexpr_mul(g, s, hc_gexpr_dense(g, F));
    TH_ASSERT_OK(hc_grid_assign(g, H, e, NULL, NULL));
    TH_ASSERT_OK(hc_gexpr_scalar_set(s, -3.0));
    TH_ASSERT_OK(hc_grid_assign(g, H, e, NULL, NULL));
    size_t n = hc_field_count(H);
    double *ref = malloc(n * sizeof *ref);
    for (size_t i = 0; i < n; i++) ref[i] = -3.0 * f[i];
    CU_ASSERT_EQUAL(gt_check("scalar changed", H, ref, NULL, NULL, 1e-15), 0);
    hc_grid_clear(g);
    hc_gexpr_t *e2 = hc_gexpr_mul(g, hc_gexpr_scalar(g, 0.5), hc_gexpr_dense(g, F2));
    TH_ASSERT_OK(hc_grid_assign(g, H, e2, NULL, NULL));
    for (size_t i = 0; i < n; i++) ref[i] = 0.5 * f2[i];
    CU_ASSERT_EQUAL(gt_check("rebuilt expression", H, ref, NULL, NULL, 1e-15), 0);
    hc_grid_stats_t st = gt_stats(g);
    int evaluator = gt_cfgs[c].host == HC_GRID_HOST_EVAL;
    CU_ASSERT_EQUAL(st.assignments, 3);
    CU_ASSERT_EQUAL(st.kernels_built, evaluator ? 0 : 1);
    CU_ASSERT_EQUAL(st.cache_hits, evaluator ? 0 : 2);
    free(ref);
    free(f);
    free(f2);
    hc_field_destroy(F);
    hc_field_destroy(F2);
    hc_field_destroy(H);
    hc_grid_destroy(g);
  }
}

/* Operators survive hc_grid_clear (docs/grid.md's pattern: operators built
 * once, expressions rebuilt and cleared per iteration): a composite operator
 * built before several clears still applies correctly after them, even when
 * the memory the clears freed has been handed out to new nodes since. */
static void test_operators_survive_clear(void) {
  int64_t shape[3] = {7, 8, 9};
  for (size_t c = 0; c < GT_NCFG; c++) {
    hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_AUTO);
    if (!g) continue;
    hc_device_t *d = hc_grid_device(g);
    double *f;
    hc_field_t *F = gt_field(d, HC_F64, 3, shape, NAN, &f), *H = gt_field(d, HC_F64, 3, shape, 0.0, NULL);
    hc_gop_t *L = hc_gop_laplacian(g, 3, NULL);
    hc_gop_t *A = hc_gop_sub(g, hc_gop_scale(g, 2.0, L), hc_gop_identity(g, 3)); /* 2 Δ - I */
    CU_ASSERT_PTR_NOT_NULL_FATAL(A);
    int64_t n[3];
    gt_ext(3, shape, n);
    double h2[3];
    for (int a = 0; a < 3; a++) h2[a] = 1.0 / (hc_field_spacing(F)[a] * hc_field_spacing(F)[a]);
    double *ref = calloc(gt_count(n), sizeof *ref);
    hc_grid_range_t in = hc_grid_interior(1);
    for (int it = 0; it < 3; it++) {
      /* fresh expressions of every kind reuse the memory the clear freed */
      for (int k = 0; k < 64; k++) hc_gexpr_add(g, hc_gexpr_scalar(g, k), hc_gexpr_dense(g, F));
      double s = 1.0 + it;
      TH_ASSERT_OK(hc_grid_assign(g, H, hc_gexpr_apply(g, A, hc_gexpr_scale(g, s, hc_gexpr_dense(g, F))), &in, NULL));
      for (int64_t i = 1; i < n[0] - 1; i++)
        for (int64_t j = 1; j < n[1] - 1; j++)
          for (int64_t k = 1; k < n[2] - 1; k++) {
            size_t id = gt_id(n, i, j, k);
            double lap = (f[gt_id(n, i - 1, j, k)] + f[gt_id(n, i + 1, j, k)] - 2 * f[id]) * h2[0] +
                         (f[gt_id(n, i, j - 1, k)] + f[gt_id(n, i, j + 1, k)] - 2 * f[id]) * h2[1] +
                         (f[gt_id(n, i, j, k - 1)] + f[gt_id(n, i, j, k + 1)] - 2 * f[id]) * h2[2];
            ref[id] = s * (2 * lap - f[id]);
          }
      if (gt_check(gt_cfgs[c].label, H, ref, NULL, &in, 1e-12)) CU_FAIL("operator applied after hc_grid_clear");
      hc_grid_clear(g);
      CU_ASSERT_EQUAL(hc_grid_error(g, NULL), HC_OK);
    }
    free(ref);
    free(f);
    hc_field_destroy(F);
    hc_field_destroy(H);
    hc_grid_destroy(g);
  }
}

/* Red-black Gauss-Seidel in place: u = u + s (f + Δu) on the red then the
 * black cells reads only the other colour, so it is allowed and equals a
 * sequential host sweep. */
static void test_red_black_in_place(void) {
  int64_t shape[3] = {9, 10, 11};
  for (size_t c = 0; c < GT_NCFG; c++) {
    hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_AUTO);
    if (!g) continue;
    hc_device_t *d = hc_grid_device(g);
    double *u, *f;
    hc_field_t *U = gt_field(d, HC_F64, 3, shape, NAN, &u), *F = gt_field(d, HC_F64, 3, shape, NAN, &f);
    hc_gexpr_t *eu = hc_gexpr_dense(g, U);
    hc_gexpr_t *e = hc_gexpr_add(
        g, eu,
        hc_gexpr_scale(g, 1.0 / 6,
                       hc_gexpr_add(g, hc_gexpr_dense(g, F), hc_gexpr_apply(g, hc_gop_laplacian(g, 3, NULL), eu))));
    int64_t n[3];
    gt_ext(3, shape, n);
    for (uint32_t par = HC_GRID_EVEN; par <= HC_GRID_ODD; par++) {
      hc_grid_range_t r = hc_grid_interior(1);
      r.parity = par;
      TH_ASSERT_OK(hc_grid_assign(g, U, e, &r, NULL));
      for (int64_t i = 1; i < n[0] - 1; i++)
        for (int64_t j = 1; j < n[1] - 1; j++)
          for (int64_t k = 1; k < n[2] - 1; k++) {
            if (((i + j + k) & 1) != (par == HC_GRID_ODD)) continue;
            double s = u[gt_id(n, i - 1, j, k)] + u[gt_id(n, i + 1, j, k)] + u[gt_id(n, i, j - 1, k)] +
                       u[gt_id(n, i, j + 1, k)] + u[gt_id(n, i, j, k - 1)] + u[gt_id(n, i, j, k + 1)];
            u[gt_id(n, i, j, k)] = (s + f[gt_id(n, i, j, k)]) / 6;
          }
    }
    CU_ASSERT_EQUAL(gt_check("red-black sweep", U, u, NULL, NULL, 1e-13), 0);
    free(u);
    free(f);
    hc_field_destroy(U);
    hc_field_destroy(F);
    hc_grid_destroy(g);
  }
}

/* Even/odd ranges on expressions that share rows between colours: a
 * stencil of a stencil of a product (an operand read at both colours of one
 * row), a computable, a prolongation, and a restriction of a stencil; each
 * colour equals the whole-box assignment there. Then a red-black sweep in
 * place whose stencil reads a product with u, against a host sweep. One
 * kernel per assignment (recompute), so the row evaluator sees it all. */
static void test_parity_shared_rows(void) {
  for (uint32_t rank = 1; rank <= 3; rank++)
    for (size_t c = 0; c < GT_NCFG; c++) {
      hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_RECOMPUTE);
      if (!g) continue;
      hc_device_t *d = hc_grid_device(g);
      int64_t fs[3] = {rank == 1 ? 33 : 9, 11, 13}, cs[3];
      for (int i = 0; i < 3; i++) cs[i] = (fs[i] + 1) / 2;
      double *u, *f, *gg;
      hc_field_t *F = gt_field(d, HC_F64, rank, fs, NAN, &f), *G = gt_field(d, HC_F64, rank, fs, NAN, &gg);
      hc_field_t *U = gt_field(d, HC_F64, rank, fs, NAN, &u), *C = gt_field(d, HC_F64, rank, cs, NAN, NULL);
      hc_field_t *Rf = gt_field(d, HC_F64, rank, fs, 0, NULL), *Hf = gt_field(d, HC_F64, rank, fs, NAN, NULL);
      hc_field_t *Rc = gt_field(d, HC_F64, rank, cs, 0, NULL), *Hc = gt_field(d, HC_F64, rank, cs, NAN, NULL);
      hc_gop_t *L = hc_gop_laplacian(g, rank, NULL);
      hc_gexpr_t *v = hc_gexpr_mul(g, hc_gexpr_dense(g, F), hc_gexpr_dense(g, G));
      hc_gfunc_t sn = {.size = sizeof(hc_gfunc_t), .kind = HC_GFUNC_SIN, .amplitude = 2, .k = {1, 2, 3}};
      hc_gexpr_t *ef = hc_gexpr_add(
          g,
          hc_gexpr_add(g, hc_gexpr_apply(g, L, hc_gexpr_add(g, hc_gexpr_apply(g, L, v), hc_gexpr_computable(g, &sn))),
                       v),
          hc_gexpr_apply(g, hc_gop_prolong_linear(g, rank), hc_gexpr_dense(g, C)));
      hc_gexpr_t *ec = hc_gexpr_apply(g, hc_gop_restrict_fw(g, rank), hc_gexpr_apply(g, L, v));
      hc_grid_range_t fr = {{2, 3, 2, 0}, {3, 2, 2, 0}, 0, 0}, cr = hc_grid_interior(1);
      TH_ASSERT_OK(hc_grid_assign(g, Rf, ef, &fr, NULL));
      TH_ASSERT_OK(hc_grid_assign(g, Rc, ec, &cr, NULL));
      double *reff = gt_read(Rf), *refc = gt_read(Rc);
      char what[80];
      for (uint32_t par = HC_GRID_EVEN; par <= HC_GRID_ODD; par++) {
        const char *col = par == HC_GRID_EVEN ? "even" : "odd";
        double *before = gt_read(Hf);
        fr.parity = cr.parity = par;
        TH_ASSERT_OK(hc_grid_assign(g, Hf, ef, &fr, NULL));
        snprintf(what, sizeof what, "Δ(Δ(fg) + sin) + fg + P(c), %s, %uD %s", col, rank, gt_cfgs[c].label);
        CU_ASSERT_EQUAL(gt_check(what, Hf, reff, before, &fr, 1e-13), 0);
        free(before);
        before = gt_read(Hc);
        TH_ASSERT_OK(hc_grid_assign(g, Hc, ec, &cr, NULL));
        snprintf(what, sizeof what, "R(Δ(fg)), %s, %uD %s", col, rank, gt_cfgs[c].label);
        CU_ASSERT_EQUAL(gt_check(what, Hc, refc, before, &cr, 1e-13), 0);
        free(before);
      }
      /* u = u + s (f + Δ(u g)) by colours: the product is read at the
       * centre (this colour, the cell written) and at the neighbours (the
       * other colour) */
      const double s = 0.05;
      hc_gexpr_t *eu = hc_gexpr_dense(g, U);
      hc_gexpr_t *sw =
          hc_gexpr_add(g, eu,
                       hc_gexpr_scale(g, s,
                                      hc_gexpr_add(g, hc_gexpr_dense(g, F),
                                                   hc_gexpr_apply(g, L, hc_gexpr_mul(g, eu, hc_gexpr_dense(g, G))))));
      int64_t n[3], lo[3], hi[3];
      gt_ext(rank, fs, n);
      hc_grid_range_t in = hc_grid_interior(1);
      gt_box(rank, n, &in, lo, hi);
      const int ax0 = 3 - (int)rank;
      for (uint32_t par = HC_GRID_EVEN; par <= HC_GRID_ODD; par++) {
        in.parity = par;
        TH_ASSERT_OK(hc_grid_assign(g, U, sw, &in, NULL));
        for (int64_t i = lo[0]; i < hi[0]; i++)
          for (int64_t j = lo[1]; j < hi[1]; j++)
            for (int64_t k = lo[2]; k < hi[2]; k++) {
              if (!gt_in_box(lo, hi, par, i, j, k)) continue;
              size_t id = gt_id(n, i, j, k);
              double lap = -2.0 * rank * u[id] * gg[id];
              for (int a = ax0; a < 3; a++)
                for (int o = -1; o <= 1; o += 2) {
                  int64_t q[3] = {i, j, k};
                  q[a] += o;
                  size_t qi = gt_id(n, q[0], q[1], q[2]);
                  lap += u[qi] * gg[qi];
                }
              u[id] += s * (f[id] + lap);
            }
      }
      snprintf(what, sizeof what, "red-black u += s (f + Δ(ug)) %uD %s", rank, gt_cfgs[c].label);
      CU_ASSERT_EQUAL(gt_check(what, U, u, NULL, NULL, 1e-13), 0);
      free(reff);
      free(refc);
      free(u);
      free(f);
      free(gg);
      hc_field_t *all[] = {F, G, U, C, Rf, Hf, Rc, Hc};
      for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) hc_field_destroy(all[i]);
      hc_grid_destroy(g);
    }
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("grid_ops", NULL, NULL);
  CU_ADD_TEST(s, test_arithmetic);
  CU_ADD_TEST(s, test_laplacian_of_sum);
  CU_ADD_TEST(s, test_stencil_shapes);
  CU_ADD_TEST(s, test_point_shapes);
  CU_ADD_TEST(s, test_user_stencil_and_ranges);
  CU_ADD_TEST(s, test_differences);
  CU_ADD_TEST(s, test_operator_algebra);
  CU_ADD_TEST(s, test_transfers);
  CU_ADD_TEST(s, test_computables);
  CU_ADD_TEST(s, test_reductions);
  CU_ADD_TEST(s, test_reductions_nonfinite);
  CU_ADD_TEST(s, test_backends_agree);
  CU_ADD_TEST(s, test_kernel_cache);
  CU_ADD_TEST(s, test_operators_survive_clear);
  CU_ADD_TEST(s, test_red_black_in_place);
  CU_ADD_TEST(s, test_parity_shared_rows);
}

TH_MAIN(register_tests)
