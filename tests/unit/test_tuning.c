/* Per-device tuning tables (include/hc/tuning.h): every condition of a
 * device pattern, the first matching row, a table without a "*" row and a
 * pattern hc does not understand refused with a message naming them. */
#include <string.h>

#include <hc/tuning.h>

#include "harness.h"

static hc_device_info_t device(hc_device_type_t type, uint32_t languages, const char *vendor, const char *arch) {
  hc_device_info_t in;
  memset(&in, 0, sizeof in);
  in.size = sizeof in;
  in.type = type;
  in.languages = languages;
  snprintf(in.vendor, sizeof in.vendor, "%s", vendor);
  snprintf(in.arch, sizeof in.arch, "%s", arch);
  return in;
}

static int holds(const hc_device_info_t *in, const char *pattern) {
  int m = -1;
  TH_ASSERT_OK(hc_tuning_match(in, pattern, &m));
  return m;
}

static void test_conditions(void) {
  const uint32_t cuda = HC_LANG_BIT(HC_LANG_CUDA_C), ocl = HC_LANG_BIT(HC_LANG_OPENCL_C),
                 host = HC_LANG_BIT(HC_LANG_HOST);
  hc_device_info_t h100 = device(HC_DEVICE_GPU, cuda, "NVIDIA Corporation", "sm_90");
  hc_device_info_t nv_ocl = device(HC_DEVICE_GPU, ocl, "NVIDIA Corporation", "sm_90");
  hc_device_info_t cpu = device(HC_DEVICE_CPU, host | ocl, "GenuineIntel", "skylake-avx512");
  hc_device_info_t pocl = device(HC_DEVICE_CPU, ocl, "GenuineIntel", "skylake-avx512");
  CU_ASSERT_EQUAL(holds(&h100, "gpu"), 1);
  CU_ASSERT_EQUAL(holds(&h100, "cpu"), 0);
  CU_ASSERT_EQUAL(holds(&h100, "accelerator"), 0);
  CU_ASSERT_EQUAL(holds(&h100, "cuda-c"), 1);
  CU_ASSERT_EQUAL(holds(&nv_ocl, "cuda-c"), 0);
  CU_ASSERT_EQUAL(holds(&nv_ocl, "opencl-c"), 1);
  CU_ASSERT_EQUAL(holds(&h100, "opencl-c"), 0);
  CU_ASSERT_EQUAL(holds(&cpu, "host"), 1);
  CU_ASSERT_EQUAL(holds(&pocl, "host"), 0);
  CU_ASSERT_EQUAL(holds(&pocl, "cpu opencl-c"), 1);
  CU_ASSERT_EQUAL(holds(&h100, "gpu  vendor=nvidia  arch=sm_9"), 1); /* any case; a prefix; extra spaces */
  CU_ASSERT_EQUAL(holds(&h100, "gpu vendor=AMD"), 0);
  CU_ASSERT_EQUAL(holds(&h100, "arch=sm_8"), 0);
  CU_ASSERT_EQUAL(holds(&h100, "arch=sm_900"), 0);
  CU_ASSERT_EQUAL(holds(&cpu, "*"), 1);
}

static void test_bad_patterns(void) {
  hc_device_info_t in = device(HC_DEVICE_GPU, HC_LANG_BIT(HC_LANG_CUDA_C), "NVIDIA", "sm_90");
  int m = 0;
  CU_ASSERT_EQUAL(hc_tuning_match(&in, "gpu nvidia", &m), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "'nvidia' in the device pattern 'gpu nvidia'"));
  CU_ASSERT_EQUAL(hc_tuning_match(&in, "vendor=", &m), HC_ERR_INVALID_ARG);
  CU_ASSERT_EQUAL(hc_tuning_match(&in, "  ", &m), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "empty device pattern"));
  CU_ASSERT_EQUAL(hc_tuning_match(NULL, "*", &m), HC_ERR_INVALID_ARG);
}

typedef struct {
  const char *device;
  int groups, pairs;
} row_t;

static void test_pick(void) {
  static const row_t table[] = {{"gpu cuda-c", 80, 1}, {"gpu", 20, 0}, {"cpu host", 8, 0}, {"*", 4, 0}};
  hc_device_info_t h100 = device(HC_DEVICE_GPU, HC_LANG_BIT(HC_LANG_CUDA_C), "NVIDIA", "sm_90");
  hc_device_info_t nv_ocl = device(HC_DEVICE_GPU, HC_LANG_BIT(HC_LANG_OPENCL_C), "NVIDIA", "sm_90");
  hc_device_info_t pocl = device(HC_DEVICE_CPU, HC_LANG_BIT(HC_LANG_OPENCL_C), "GenuineIntel", "x86-64");
  size_t row = 99;
  TH_ASSERT_OK(HC_TUNING_PICK(&h100, table, &row));
  CU_ASSERT_EQUAL(row, 0); /* the first row that holds, though "gpu" holds too */
  TH_ASSERT_OK(HC_TUNING_PICK(&nv_ocl, table, &row));
  CU_ASSERT_EQUAL(table[row].groups, 20);
  TH_ASSERT_OK(HC_TUNING_PICK(&pocl, table, &row));
  CU_ASSERT_EQUAL(row, 3);

  static const row_t no_default[] = {{"gpu", 20, 0}, {"cpu", 8, 0}};
  CU_ASSERT_EQUAL(HC_TUNING_PICK(&pocl, no_default, &row), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "last row's device pattern is 'cpu'"));
  static const row_t typo[] = {{"gpu cuda", 20, 0}, {"*", 8, 0}};
  CU_ASSERT_EQUAL(HC_TUNING_PICK(&pocl, typo, &row), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "'cuda'"));
  CU_ASSERT_EQUAL(hc_tuning_pick(&pocl, table, 0, sizeof *table, &row), HC_ERR_INVALID_ARG);
}

/* Every device this machine has picks a row of a table that names the
 * kinds hc's own tables use. */
static void test_real_devices(void) {
  static const row_t table[] = {
      {"gpu cuda-c", 1, 0}, {"gpu opencl-c", 2, 0}, {"cpu host", 3, 0}, {"cpu opencl-c", 4, 0}, {"*", 5, 0}};
  hc_context_t *ctx = th_context();
  for (uint32_t i = 0; i < hc_device_count(ctx); i++) {
    hc_device_info_t in;
    if (hc_device_query(ctx, i, &in) != HC_OK) continue;
    size_t row = 99;
    TH_ASSERT_OK(HC_TUNING_PICK(&in, table, &row));
    CU_ASSERT(row < 5);
    if (!strncmp(hc_device_id(ctx, i), "cpu:", 4)) CU_ASSERT_EQUAL(row, 2);
    if (!strncmp(hc_device_id(ctx, i), "cuda:", 5)) CU_ASSERT_EQUAL(row, 0);
  }
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("tuning", NULL, NULL);
  CU_ADD_TEST(s, test_conditions);
  CU_ADD_TEST(s, test_bad_patterns);
  CU_ADD_TEST(s, test_pick);
  CU_ADD_TEST(s, test_real_devices);
}

TH_MAIN(register_tests)
