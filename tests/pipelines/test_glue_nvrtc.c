/* Every glue kernel, with every set of build options the glue workloads
 * use, compiled as CUDA C by NVRTC (sm_90) with the dialect prelude exactly
 * as core/runtime/kernel.c prepends it — so a construct OpenCL C accepts and CUDA C
 * does not fails here, on a machine without a GPU. (test_glue runs the same
 * kernels on OpenCL devices and on CUDA devices where there are some.)
 * Skipped when NVRTC cannot be loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* The cuda plugin's own NVRTC module (it needs no device). */
#include "../../plugins/cuda/hc_nvrtc.c"

static const char prelude[] =
#include "dialect_cuda.h"
#include "dialect_common.h"
    ;

static char *kernel_text(const char *workload) {
  char path[4200];
  snprintf(path, sizeof path, "%s/plugins/workloads/%s/kernels.hcl", HC_SOURCE_DIR, workload);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t a = strlen(prelude);
  char *s = malloc(a + 65536);
  memcpy(s, prelude, a);
  size_t n = fread(s + a, 1, 65535 - 1, f);
  fclose(f);
  s[a + n] = '\0';
  return s;
}

static int compiled, failed;

static void compile(hc_nvrtc_t *nv, const char *workload, const char *src, const char *options) {
  void *img = NULL;
  size_t size = 0;
  int is_ptx = -1;
  char *log = NULL;
  hc_status_t st = hc_nvrtc_compile(nv, 90, src, options, &img, &size, &is_ptx, &log);
  if (st != HC_OK) {
    fprintf(stderr, "\n%s with '%s': %s\n", workload, options, hc_last_error());
    failed++;
  }
  CU_ASSERT_EQUAL(st, HC_OK);
  compiled++;
  free(img);
  free(log);
}

static void test_glue_kernels_build_as_cuda(void) {
  static hc_nvrtc_t nv;
  char why[1024];
  if (hc_nvrtc_load(&nv, 0, why, sizeof why) != 0) {
    char msg[1100];
    snprintf(msg, sizeof msg, "NVRTC not available (%s)", why);
    th_skip(msg);
    return;
  }
  static const char *const real[] = {"float", "double"};
  char opts[256];

  char *src = kernel_text("abs2");
  CU_ASSERT_PTR_NOT_NULL_FATAL(src);
  for (int t = 0; t < 2; t++)
    for (int c = 0; c < 2; c++) {
      snprintf(opts, sizeof opts, "-DIN_T=%s%s -DOUT_T=%s -DCPLX=%d", real[t], c ? "2" : "", real[t], c);
      compile(&nv, "abs2", src, opts);
    }
  free(src);

  src = kernel_text("scale");
  CU_ASSERT_PTR_NOT_NULL_FATAL(src);
  for (int t = 0; t < 2; t++) {
    snprintf(opts, sizeof opts, "-DREAL_T=%s", real[t]);
    compile(&nv, "scale", src, opts);
  }
  free(src);

  src = kernel_text("slice");
  CU_ASSERT_PTR_NOT_NULL_FATAL(src);
  compile(&nv, "slice", src, "");
  free(src);

  src = kernel_text("convert");
  CU_ASSERT_PTR_NOT_NULL_FATAL(src);
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++) {
      snprintf(opts, sizeof opts, "-DIN_R=%s -DIN_CPLX=%d -DOUT_R=%s -DOUT_CPLX=%d", real[a % 2], a / 2, real[b % 2],
               b / 2);
      compile(&nv, "convert", src, opts);
    }
  free(src);

  src = kernel_text("reduce");
  CU_ASSERT_PTR_NOT_NULL_FATAL(src);
  for (int t = 0; t < 2; t++)
    for (int op = 0; op < 4; op++) {
      snprintf(opts, sizeof opts, "-DELEM_T=%s -DOP=%d -DBLOCK=256", real[t], op);
      compile(&nv, "reduce", src, opts);
    }
  free(src);
  printf("\n    %d kernel builds, %d failed (NVRTC %d.%d)\n", compiled, failed, nv.major, nv.minor);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("glue_nvrtc", NULL, NULL);
  CU_ADD_TEST(s, test_glue_kernels_build_as_cuda);
}

TH_MAIN(register_tests)
