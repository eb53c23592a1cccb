/* Vector assignments (core/grid/grid_vector.c): items of 16 bytes of cells
 * along the rows. Fields whose fast extent is a multiple of the vector
 * width, in every rank and both dtypes, with boxes that start and end
 * inside an item, a stencil reaching past the item on both sides, an
 * index function (each cell its own i), and an in-place update reading the
 * assigned field: against the host reference, and on device languages the
 * kernel is the vector one (its source declares VREAL). */
#include "grid_testlib.h"

/* A stencil of rank r reaching -2..+3 along the rows and +-1 across. */
static const int32_t off3[6 * 3] = {0, 0, 0, 0, 0, -2, 0, 0, 3, -1, 1, 1, 1, 0, -1, 0, -1, 2};
static const int32_t off2[5 * 2] = {0, 0, 0, -2, 0, 3, 1, 1, -1, -1};
static const int32_t off1[4] = {0, -2, 3, 1};
static const double co[6] = {0.5, -1.25, 2.0, 0.75, -0.3, 1.5};

typedef struct {
  uint32_t rank, np;
  const int32_t *off;
  int64_t shape[3];
  hc_grid_range_t box; /* user axes */
} vcase_t;

static const vcase_t cases[] = {
    {3, 6, off3, {5, 6, 16}, {{1, 1, 3, 0}, {1, 1, 5, 0}, 0, 0}},
    {2, 5, off2, {6, 24}, {{1, 2, 0, 0}, {1, 7, 0, 0}, 0, 0}},
    {1, 4, off1, {40, 0, 0}, {{6, 0, 0, 0}, {3, 0, 0, 0}, 0, 0}},
};

/* h = S f + f g + i_fast on the box; then h = 2 h + f there (in place);
 * `vector`: device languages must have run vector kernels. */
static void check_case(size_t c, const vcase_t *vc, hc_dtype_t dt, int vector) {
  hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_AUTO);
  if (!g) return;
  hc_device_t *d = hc_grid_device(g);
  const int want_vec = vector && !(hc_device_info(d)->languages & HC_LANG_BIT(HC_LANG_HOST));
  double *f, *gg, *h0;
  hc_field_t *F = gt_field(d, dt, vc->rank, vc->shape, NAN, &f), *G = gt_field(d, dt, vc->rank, vc->shape, NAN, &gg);
  hc_field_t *H = gt_field(d, dt, vc->rank, vc->shape, NAN, &h0);
  hc_gexpr_t *ef = hc_gexpr_dense(g, F), *eg = hc_gexpr_dense(g, G);
  hc_gexpr_t *e = hc_gexpr_add(
      g,
      hc_gexpr_add(g, hc_gexpr_apply(g, hc_gop_stencil(g, vc->rank, vc->np, vc->off, co), ef), hc_gexpr_mul(g, ef, eg)),
      hc_gexpr_index(g, vc->rank - 1));
  TH_ASSERT_OK(hc_grid_assign(g, H, e, &vc->box, NULL));
  char what[96];
  snprintf(what, sizeof what, "%s rank %u %s", gt_cfgs[c].label, vc->rank, hc_dtype_name(dt));
  CU_ASSERT(!want_vec || strstr(hc_grid_last_source(g), "VREAL") != NULL);
  int64_t n[3], lo[3], hi[3];
  gt_ext(vc->rank, vc->shape, n);
  gt_box(vc->rank, n, &vc->box, lo, hi);
  const size_t cnt = gt_count(n);
  double *ref = calloc(cnt, sizeof *ref);
  gt_ref_stencil(vc->rank, n, f, vc->np, vc->off, co, lo, hi, ref);
  for (int64_t i = lo[0]; i < hi[0]; i++)
    for (int64_t j = lo[1]; j < hi[1]; j++)
      for (int64_t k = lo[2]; k < hi[2]; k++) {
        size_t id = gt_id(n, i, j, k);
        ref[id] += f[id] * gg[id] + (double)k;
      }
  CU_ASSERT_EQUAL(gt_check(what, H, ref, h0, &vc->box, gt_tol(dt)), 0);
  double *before = gt_read(H);
  TH_ASSERT_OK(hc_grid_assign(g, H, hc_gexpr_add(g, hc_gexpr_scale(g, 2.0, hc_gexpr_dense(g, H)), ef), &vc->box, NULL));
  CU_ASSERT(!want_vec || strstr(hc_grid_last_source(g), "VREAL") != NULL);
  for (size_t i = 0; i < cnt; i++) ref[i] = 2 * before[i] + f[i];
  strncat(what, " in place", sizeof what - strlen(what) - 1);
  CU_ASSERT_EQUAL(gt_check(what, H, ref, before, &vc->box, gt_tol(dt)), 0);
  free(before);
  free(ref);
  free(f);
  free(gg);
  free(h0);
  hc_field_destroy(F);
  hc_field_destroy(G);
  hc_field_destroy(H);
  hc_grid_destroy(g);
}

static void test_vector_kernels(void) {
  static const hc_dtype_t dtypes[] = {HC_F32, HC_F64};
  for (size_t c = 0; c < GT_NCFG; c++)
    for (size_t v = 0; v < sizeof cases / sizeof cases[0]; v++)
      for (int t = 0; t < 2; t++) check_case(c, &cases[v], dtypes[t], 1);
}

/* Other group shapes (HC_GRID_VECTOR), one cutting the rows unevenly, give
 * the same fields; =off falls back to one cell per item; a malformed value
 * is an error naming the variable. */
static void test_vector_shapes(void) {
  static const char *const shapes[] = {"3x2x3", "1x1x1", "off"};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    setenv("HC_GRID_VECTOR", shapes[s], 1);
    for (size_t c = 0; c < GT_NCFG; c++) check_case(c, &cases[0], HC_F32, strcmp(shapes[s], "off") != 0);
  }
  gt_check_bad_shape("HC_GRID_VECTOR", "4x4");
}

/* h = Δf + f g on the interior, h first set to 7 everywhere;
 * the field read back. */
static double *lap_plus_product(hc_grid_t *g, hc_field_t *F, hc_field_t *G, hc_field_t *H) {
  const size_t n = hc_field_count(H);
  float *sevens = malloc(n * sizeof *sevens);
  for (size_t i = 0; i < n; i++) sevens[i] = 7.0f;
  TH_ASSERT_OK(hc_field_write(H, sevens));
  free(sevens);
  const double h[3] = {0.5, 0.25, 1.0};
  hc_gexpr_t *ef = hc_gexpr_dense(g, F);
  hc_gexpr_t *e =
      hc_gexpr_add(g, hc_gexpr_apply(g, hc_gop_laplacian(g, 3, h), ef), hc_gexpr_mul(g, ef, hc_gexpr_dense(g, G)));
  const hc_grid_range_t interior = {{1, 1, 1, 0}, {1, 1, 1, 0}, 0, 0};
  TH_ASSERT_OK(hc_grid_assign(g, H, e, &interior, NULL));
  return gt_read(H);
}

/* Successive 3-D device assignments alternate their planes' order
 * (hcg_plane_order): the same assignment, H reset before each, gives
 * bit-identical fields three times in a row (in alternating orders) on
 * vector and one-cell kernels, and with HC_GRID_PLANE_ORDER=forward; device kernels take the order as an
 * argument; a malformed value is an error naming the variable. */
static void test_plane_order(void) {
  static const int64_t shapes[2][3] = {{9, 6, 16}, {7, 5, 13}};
  static const char *const orders[] = {"alternate", "forward"};
  for (size_t o = 0; o < 2; o++) {
    setenv("HC_GRID_PLANE_ORDER", orders[o], 1);
    for (size_t c = 0; c < GT_NCFG; c++) {
      hc_grid_t *g = gt_grid(&gt_cfgs[c], HC_GRID_FUSE_AUTO);
      if (!g) continue;
      hc_device_t *d = hc_grid_device(g);
      const int device = !(hc_device_info(d)->languages & HC_LANG_BIT(HC_LANG_HOST));
      for (size_t s = 0; s < 2; s++) {
        hc_field_t *F = gt_field(d, HC_F32, 3, shapes[s], NAN, NULL), *G = gt_field(d, HC_F32, 3, shapes[s], NAN, NULL);
        hc_field_t *H = gt_field(d, HC_F32, 3, shapes[s], NAN, NULL);
        double *first = lap_plus_product(g, F, G, H);
        CU_ASSERT(!device || strstr(hc_grid_last_source(g), "a_zrev") != NULL);
        for (int rep = 1; rep < 3; rep++) {
          double *again = lap_plus_product(g, F, G, H);
          if (memcmp(first, again, hc_field_count(H) * sizeof *first)) {
            fprintf(stderr, "%s %s shape %zu: assignment %d differs from the first\n", gt_cfgs[c].label, orders[o], s,
                    rep);
            CU_FAIL("the plane order changed the field");
          }
          free(again);
        }
        free(first);
        hc_field_destroy(F);
        hc_field_destroy(G);
        hc_field_destroy(H);
      }
      hc_grid_destroy(g);
    }
  }
  unsetenv("HC_GRID_PLANE_ORDER");
  gt_check_bad_shape("HC_GRID_PLANE_ORDER", "backward");
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("grid_vector", NULL, NULL);
  CU_ADD_TEST(s, test_vector_kernels);
  CU_ADD_TEST(s, test_vector_shapes);
  CU_ADD_TEST(s, test_plane_order);
}

TH_MAIN(register_tests)
