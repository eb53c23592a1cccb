/* The cuda backend.
 *
 * Without a GPU (CI): the plugin loads, lists no device and says why, a
 * lookup of "cuda" fails with that reason, and the NVRTC compile path of the
 * portable dialect runs for real (the plugin's own hc_nvrtc.c is compiled
 * into this program; it needs no device). With a GPU: kernels run end to
 * end through hc, and transfers, fills, copies, timers, the kernel cache and
 * the error paths are checked against host results. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

/* The plugin's NVRTC module and staging copier themselves, not copies:
 * what passes here is what the plugin runs. Neither needs a device. */
#include "../../plugins/cuda/copier.c"
#include "../../plugins/cuda/hc_nvrtc.c"

/* The prelude exactly as core/runtime/kernel.c prepends it. */
static const char prelude[] =
#include "dialect_cuda.h"
#include "dialect_common.h"
    ;

static const char sample_src[] =
    "HC_KERNEL void saxpy(HC_GLOBAL float *y, HC_GLOBAL const float *x, float a, int n) {\n"
    "  long i = hc_global_id(0);\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "HC_KERNEL void daxpy(HC_GLOBAL double *y, HC_GLOBAL const double *x, double a, int n) {\n"
    "  long i = hc_global_id(0);\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "HC_KERNEL void block_sum(HC_GLOBAL const float *x, HC_GLOBAL float *partial, int n) {\n"
    "  HC_LOCAL float tmp[256];\n"
    "  long l = hc_local_id(0), i = hc_global_id(0);\n"
    "  tmp[l] = i < n ? x[i] : 0.0f;\n"
    "  HC_BARRIER();\n"
    "  for (long s = hc_local_size(0) / 2; s > 0; s /= 2) {\n"
    "    if (l < s) tmp[l] += tmp[l + s];\n"
    "    HC_BARRIER();\n"
    "  }\n"
    "  if (l == 0) partial[hc_group_id(0)] = tmp[0];\n"
    "}\n"
    "HC_KERNEL void index3d(HC_GLOBAL int *out, int nx, int ny, int nz) {\n"
    "  long x = hc_global_id(0), y = hc_global_id(1), z = hc_global_id(2);\n"
    "  if (x < nx && y < ny && z < nz) out[(z * ny + y) * nx + x] = (int)(x + 100 * y + 10000 * z);\n"
    "}\n"
    "HC_KERNEL void csquare(HC_GLOBAL double2 *z, int n) {\n"
    "  long i = hc_global_id(0);\n"
    "  if (i < n) z[i] = hc_cmul(z[i], z[i]);\n"
    "}\n"
    "#ifndef BLOCK\n"
    "#error BLOCK not set\n"
    "#endif\n"
    "HC_KERNEL void scale(HC_GLOBAL float *y, float s, int n) {\n"
    "  long i = hc_global_id(0) * BLOCK / BLOCK;\n"
    "  if (i < n) y[i] = hc_fma(y[i], s, 0.0f);\n"
    "}\n";

#define SAMPLE_OPTS "-DBLOCK=64"

static const char broken_src[] = "HC_KERNEL void broken(HC_GLOBAL float *y) {\n"
                                 "  y[0] = 1.0f;\n"
                                 "  y[1] = undefined_thing_42;\n"
                                 "}\n";

/* ------------------------------------------------------------ registry */

static int cuda_backend_index(hc_context_t *ctx) {
  for (uint32_t i = 0; i < hc_backend_count(ctx); i++) {
    hc_plugin_summary_t s;
    if (hc_backend_get(ctx, i, &s) == HC_OK && !strcmp(s.name, "cuda")) return (int)i;
  }
  return -1;
}

static uint32_t cuda_devices(hc_context_t *ctx) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < hc_device_count(ctx); i++)
    if (!strncmp(hc_device_id(ctx, i), "cuda:", 5)) n++;
  return n;
}

static void test_backend_listed(void) {
  hc_context_t *ctx = th_context();
  int b = cuda_backend_index(ctx);
  CU_ASSERT_FATAL(b >= 0);
  for (uint32_t i = 0; i < hc_rejected_count(ctx); i++) {
    const char *path = NULL, *why = NULL;
    hc_rejected_get(ctx, i, &path, &why);
    if (strstr(path, "backend-cuda")) fprintf(stderr, "rejected %s: %s\n", path, why);
    CU_ASSERT_PTR_NULL(strstr(path, "backend-cuda"));
  }
  const char *status = hc_backend_status(ctx, (uint32_t)b);
  uint32_t idx = 0;
  if (cuda_devices(ctx) == 0) {
    /* No GPU here: the reason is one of the documented ones. */
    CU_ASSERT_PTR_NOT_NULL_FATAL(status);
    CU_ASSERT(strstr(status, "no CUDA driver found") || strstr(status, "driver found, no device") ||
              strstr(status, "CUDA driver too old"));
    CU_ASSERT_EQUAL(hc_device_find(ctx, "cuda", &idx), HC_ERR_NO_DEVICE);
    CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), status));
    CU_ASSERT_EQUAL(hc_device_find(ctx, "cuda:0", &idx), HC_ERR_NO_DEVICE);
  } else {
    TH_ASSERT_OK(hc_device_find(ctx, "cuda", &idx));
    CU_ASSERT_STRING_EQUAL(hc_device_id(ctx, idx), "cuda:0");
    CU_ASSERT_EQUAL(hc_device_find(ctx, "cuda:63", &idx), HC_ERR_NO_DEVICE);
  }
}

/* A context whose cuda plugin loads the driver from `driver` (a backend
 * reads its settings when it starts: the first device query). */
static hc_context_t *context_with_driver(const char *driver) {
  hc_context_t *ctx = NULL;
  setenv("HC_CUDA_DRIVER", driver, 1);
  hc_status_t st = hc_context_create(NULL, &ctx);
  if (st == HC_OK) (void)hc_device_count(ctx);
  unsetenv("HC_CUDA_DRIVER");
  return st == HC_OK ? ctx : NULL;
}

static void test_missing_driver(void) {
  hc_context_t *ctx = context_with_driver("/nonexistent/libcuda.so.1");
  CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
  int b = cuda_backend_index(ctx);
  CU_ASSERT_FATAL(b >= 0);
  CU_ASSERT_EQUAL(cuda_devices(ctx), 0);
  const char *status = hc_backend_status(ctx, (uint32_t)b);
  CU_ASSERT_PTR_NOT_NULL_FATAL(status);
  CU_ASSERT_STRING_EQUAL(status, "no CUDA driver found (/nonexistent/libcuda.so.1 not loadable)");
  uint32_t idx;
  CU_ASSERT_EQUAL(hc_device_find(ctx, "cuda", &idx), HC_ERR_NO_DEVICE);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "no CUDA driver found"));
  /* The other backends are unaffected. */
  CU_ASSERT_EQUAL(hc_device_find(ctx, "cpu", &idx), HC_OK);
  hc_context_destroy(ctx);
}

/* The toolkit's stub libcuda loads but every call fails: the "driver found,
 * no device" path, with the CUresult in the reason. */
static void test_stub_driver(void) {
  char stub[1024];
  snprintf(stub, sizeof stub, "%s/lib64/stubs/libcuda.so", HC_CUDA_PATH);
  struct stat sb;
  if (stat(stub, &sb) != 0) {
    th_skip("no stub libcuda in the CUDA toolkit");
    return;
  }
  hc_context_t *ctx = context_with_driver(stub);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
  int b = cuda_backend_index(ctx);
  CU_ASSERT_FATAL(b >= 0);
  CU_ASSERT_EQUAL(cuda_devices(ctx), 0);
  const char *status = hc_backend_status(ctx, (uint32_t)b);
  CU_ASSERT_PTR_NOT_NULL_FATAL(status);
  printf("\n    stub driver: %s\n", status);
  CU_ASSERT(!strncmp(status, "driver found, no device (cuInit: ", 33) || strstr(status, "too old"));
  uint32_t idx;
  CU_ASSERT_EQUAL(hc_device_find(ctx, "cuda", &idx), HC_ERR_NO_DEVICE);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), status));
  hc_context_destroy(ctx);
}

/* ------------------------------------------------------------ NVRTC */

static hc_nvrtc_t nvrtc;
static int nvrtc_state; /* 0 untried, 1 loaded, -1 unavailable */

static hc_nvrtc_t *get_nvrtc(void) {
  if (!nvrtc_state) {
    char why[1024];
    nvrtc_state = hc_nvrtc_load(&nvrtc, 0, why, sizeof why) == 0 ? 1 : -1;
    if (nvrtc_state < 0) {
      char msg[1100];
      snprintf(msg, sizeof msg, "NVRTC not available (%s)", why);
      th_skip(msg);
    }
  }
  return nvrtc_state > 0 ? &nvrtc : NULL;
}

static char *with_prelude(const char *src) {
  size_t a = strlen(prelude), b = strlen(src);
  char *s = malloc(a + b + 2);
  memcpy(s, prelude, a);
  memcpy(s + a, src, b);
  strcpy(s + a + b, "\n");
  return s;
}

static void test_nvrtc_compiles_dialect(void) {
  hc_nvrtc_t *n = get_nvrtc();
  if (!n) return;
  printf("\n    NVRTC %d.%d from %s, %d architectures\n", n->major, n->minor, n->path, n->narchs);
  char *src = with_prelude(sample_src);
  void *img = NULL;
  size_t size = 0;
  int is_ptx = -1;
  char *log = NULL;
  hc_status_t st = hc_nvrtc_compile(n, 90, src, SAMPLE_OPTS, &img, &size, &is_ptx, &log);
  if (st != HC_OK) fprintf(stderr, "%s\n", hc_last_error());
  CU_ASSERT_EQUAL_FATAL(st, HC_OK);
  CU_ASSERT_EQUAL(is_ptx, 0);
  CU_ASSERT(size > 1000);
  CU_ASSERT(img && !memcmp(img, "\177ELF", 4)); /* a CUBIN is an ELF image */
  free(img);
  free(log);
  /* Without the define the source's own #error must stop the build:
   * options really are passed through. */
  st = hc_nvrtc_compile(n, 90, src, "", &img, &size, &is_ptx, NULL);
  CU_ASSERT_EQUAL(st, HC_ERR_BUILD);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "BLOCK not set"));
  CU_ASSERT_PTR_NULL(img);
  /* Quoted options group: a define whose value holds a blank; "-D NAME"
   * and -U work as in a C compiler. */
  st = hc_nvrtc_compile(n, 90, src, "-D BLOCK=64 \"-DUNUSED=1 + 2\" -DGONE -UGONE", &img, &size, &is_ptx, NULL);
  CU_ASSERT_EQUAL(st, HC_OK);
  free(img);
  /* A one-letter macro must not reach NVRTC's own builtin header (whose
   * templates say "typename T"): -DT=128 is fine in OpenCL C too. */
  st = hc_nvrtc_compile(n, 90, src, "-DBLOCK=64 -DT=128 -DN", &img, &size, &is_ptx, NULL);
  if (st != HC_OK) fprintf(stderr, "%.2000s\n", hc_last_error());
  CU_ASSERT_EQUAL(st, HC_OK);
  free(img);
  /* Options that are not defines still reach NVRTC (an unknown one is
   * refused by it, by name). */
  st = hc_nvrtc_compile(n, 90, src, "-DBLOCK=64 --no-such-nvrtc-option", &img, &size, &is_ptx, NULL);
  CU_ASSERT_EQUAL(st, HC_ERR_BUILD);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "no-such-nvrtc-option"));
  st = hc_nvrtc_compile(n, 90, src, "-DBLOCK=64 -use_fast_math", &img, &size, &is_ptx, NULL);
  CU_ASSERT_EQUAL(st, HC_OK);
  free(img);
  free(src);
}

static void test_nvrtc_reports_errors(void) {
  hc_nvrtc_t *n = get_nvrtc();
  if (!n) return;
  char *src = with_prelude(broken_src);
  void *img = (void *)1;
  size_t size = 1;
  int is_ptx = 0;
  char *log = NULL;
  hc_status_t st = hc_nvrtc_compile(n, 90, src, NULL, &img, &size, &is_ptx, &log);
  CU_ASSERT_EQUAL(st, HC_ERR_BUILD);
  CU_ASSERT_PTR_NULL(img);
  CU_ASSERT_EQUAL(size, 0);
  const char *e = hc_last_error();
  CU_ASSERT_PTR_NOT_NULL(strstr(e, "undefined_thing_42"));
  /* The prelude ends with #line 1: lines count in the workload's source. */
  CU_ASSERT_PTR_NOT_NULL(strstr(e, "hc_kernel.cu(3)"));
  CU_ASSERT_PTR_NOT_NULL(strstr(e, "NVRTC_ERROR_COMPILATION"));
  CU_ASSERT(log && strstr(log, "undefined_thing_42"));
  free(log);
  free(src);
}

/* A device newer than NVRTC gets PTX for the newest architecture NVRTC
 * knows; one older than NVRTC supports is refused by name. */
static void test_nvrtc_arch_fallback(void) {
  hc_nvrtc_t *n = get_nvrtc();
  if (!n) return;
  if (!n->narchs) {
    th_skip("this NVRTC cannot list its architectures");
    return;
  }
  char *src = with_prelude(sample_src);
  void *img = NULL;
  size_t size = 0;
  int is_ptx = 0;
  hc_status_t st = hc_nvrtc_compile(n, 990, src, SAMPLE_OPTS, &img, &size, &is_ptx, NULL);
  CU_ASSERT_EQUAL(st, HC_OK);
  CU_ASSERT_EQUAL(is_ptx, 1);
  CU_ASSERT(img && strstr(img, ".target"));
  free(img);
  img = NULL;
  st = hc_nvrtc_compile(n, 10, src, SAMPLE_OPTS, &img, &size, &is_ptx, NULL);
  CU_ASSERT_EQUAL(st, HC_ERR_BUILD);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "cannot compile for sm_10"));
  free(src);
}

/* ------------------------------------------------------------ copier */

/* The staging path's parallel memcpy: every size, split over 1..8 threads
 * (page-aligned shares, a short or empty last one), copies exactly. */
static void test_copier(void) {
  static const size_t sizes[] = {0, 1, 4095, 262144 * 3 + 17, (5u << 20) + 3, 4096 * 1000};
  size_t max = (5u << 20) + 3;
  unsigned char *src = malloc(max), *dst = malloc(max + 1);
  for (size_t i = 0; i < max; i++) src[i] = (unsigned char)(i * 131 + (i >> 12));
  for (unsigned t = 1; t <= 8; t++) {
    hc_cuda_copier_t *c = hc_cuda_copier_create(t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    for (int round = 0; round < 3; round++) /* workers serve job after job */
      for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k] <= max ? sizes[k] : max;
        memset(dst, 0xEE, max + 1);
        hc_cuda_copier_memcpy(c, dst, src, n);
        CU_ASSERT_EQUAL(memcmp(dst, src, n), 0);
        CU_ASSERT_EQUAL(dst[n], 0xEE); /* nothing past the end */
      }
    hc_cuda_copier_destroy(c);
  }
  hc_cuda_copier_memcpy(NULL, dst, src, 100); /* no copier: plain memcpy */
  CU_ASSERT_EQUAL(memcmp(dst, src, 100), 0);
  free(src);
  free(dst);
}

/* ------------------------------------------------------------ on a GPU */

static hc_device_t *gpu(void) {
  static int tried;
  static hc_device_t *dev;
  if (!tried) {
    tried = 1;
    dev = th_device("cuda");
  }
  return dev;
}

static hc_kernel_t *kernel(hc_device_t *dev, const char *name) {
  hc_kernel_desc_t desc = {sizeof desc, name, sample_src, SAMPLE_OPTS, NULL};
  hc_kernel_t *k = NULL;
  hc_status_t st = hc_kernel_create(dev, &desc, &k);
  if (st != HC_OK) fprintf(stderr, "kernel %s: %s\n", name, hc_last_error());
  return k;
}

static void test_gpu_info(void) {
  hc_device_t *dev = gpu();
  if (!dev) return;
  const hc_device_info_t *in = hc_device_info(dev);
  printf("\n    %s: %s, %s, %u SMs at %u MHz, %.1f GiB, L2 %llu KiB, %.0f/%.0f GFLOP/s fp32/fp64, %.0f GB/s, "
         "driver %s\n",
         hc_device_name(dev), in->name, in->arch, in->compute_units, in->clock_mhz, in->global_mem_bytes / 1073741824.0,
         (unsigned long long)in->l2_cache_bytes / 1024, in->peak_fp32_gflops, in->peak_fp64_gflops,
         in->peak_bandwidth_gbs, in->driver);
  CU_ASSERT_EQUAL(in->type, HC_DEVICE_GPU);
  CU_ASSERT_STRING_EQUAL(in->platform, "CUDA");
  char arch[32];
  snprintf(arch, sizeof arch, "sm_%u%u", in->cc_major, in->cc_minor);
  CU_ASSERT_STRING_EQUAL(in->arch, arch);
  CU_ASSERT(in->cc_major >= 3);
  CU_ASSERT(in->compute_units > 0);
  CU_ASSERT(in->global_mem_bytes > (1u << 30));
  CU_ASSERT_EQUAL(in->preferred_group_multiple, 32);
  CU_ASSERT(in->max_work_group_size >= 512);
  CU_ASSERT(in->local_mem_bytes >= 16384);
  CU_ASSERT(in->languages & HC_LANG_BIT(HC_LANG_CUDA_C));
  CU_ASSERT(in->fp64);
  if (in->cc_major == 9 && in->cc_minor == 0 && in->clock_mhz) {
    /* 128 FP32 and 64 FP64 lanes per SM, 2 FLOP per FMA. */
    CU_ASSERT(th_rel(in->peak_fp32_gflops, in->compute_units * 128 * 2.0 * in->clock_mhz / 1e3) < 0.01);
    CU_ASSERT(th_rel(in->peak_fp64_gflops, in->peak_fp32_gflops / 2) < 1e-9);
  }
}

static void test_gpu_saxpy(void) {
  hc_device_t *dev = gpu();
  if (!dev) return;
  enum { N = 100003 }; /* not a multiple of any block size */
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *out = malloc(N * sizeof *out);
  double *xd = malloc(N * sizeof *xd), *yd = malloc(N * sizeof *yd), *outd = malloc(N * sizeof *outd);
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = 1.0f;
    xd[i] = i * 0.5;
    yd[i] = -3.0;
  }
  hc_buffer_t *bx, *by, *bxd, *byd;
  TH_ASSERT_OK(hc_buffer_create(dev, N * sizeof *x, &bx));
  TH_ASSERT_OK(hc_buffer_create(dev, N * sizeof *y, &by));
  TH_ASSERT_OK(hc_buffer_create(dev, N * sizeof *xd, &bxd));
  TH_ASSERT_OK(hc_buffer_create(dev, N * sizeof *yd, &byd));
  TH_ASSERT_OK(hc_buffer_write(bx, 0, x, N * sizeof *x));
  TH_ASSERT_OK(hc_buffer_write(by, 0, y, N * sizeof *y));
  TH_ASSERT_OK(hc_buffer_write(bxd, 0, xd, N * sizeof *xd));
  TH_ASSERT_OK(hc_buffer_write(byd, 0, yd, N * sizeof *yd));
  hc_kernel_t *k = kernel(dev, "saxpy"), *kd = kernel(dev, "daxpy");
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  CU_ASSERT_PTR_NOT_NULL_FATAL(kd);
  CU_ASSERT_EQUAL(hc_kernel_language(k), HC_LANG_CUDA_C);
  CU_ASSERT(hc_kernel_max_group_size(k) >= 256);
  float a = 2.0f;
  double ad = 0.25;
  int n = N;
  size_t global = N;
  hc_arg_t args[] = {HC_ARG_BUF(by), HC_ARG_BUF(bx), HC_ARG_VAL(a), HC_ARG_VAL(n)};
  hc_arg_t argsd[] = {HC_ARG_BUF(byd), HC_ARG_BUF(bxd), HC_ARG_VAL(ad), HC_ARG_VAL(n)};
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 4, args));
  size_t local = 128;
  TH_ASSERT_OK(hc_kernel_launch(kd, 1, &global, &local, 4, argsd));
  TH_ASSERT_OK(hc_device_finish(dev));
  TH_ASSERT_OK(hc_buffer_read(by, 0, out, N * sizeof *out));
  TH_ASSERT_OK(hc_buffer_read(byd, 0, outd, N * sizeof *outd));
  int bad = 0, badd = 0;
  for (int i = 0; i < N; i++) {
    bad += out[i] != 2.0f * i + 1.0f; /* exact: small integers */
    badd += outd[i] != 0.25 * (i * 0.5) - 3.0;
  }
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(badd, 0);
  hc_kernel_destroy(k);
  hc_kernel_destroy(kd);
  hc_buffer_destroy(bx);
  hc_buffer_destroy(by);
  hc_buffer_destroy(bxd);
  hc_buffer_destroy(byd);
  free(x), free(y), free(out), free(xd), free(yd), free(outd);
}

static void test_gpu_local_memory_and_ranges(void) {
  hc_device_t *dev = gpu();
  if (!dev) return;
  /* Group reduction through local memory and barriers. */
  enum { N = 10000, G = 256, NG = (N + G - 1) / G };
  float *x = malloc(N * sizeof *x), partial[NG];
  for (int i = 0; i < N; i++) x[i] = (float)(i % 7);
  hc_buffer_t *bx, *bp;
  TH_ASSERT_OK(hc_buffer_create(dev, N * sizeof *x, &bx));
  TH_ASSERT_OK(hc_buffer_create(dev, sizeof partial, &bp));
  TH_ASSERT_OK(hc_buffer_write(bx, 0, x, N * sizeof *x));
  hc_kernel_t *k = kernel(dev, "block_sum");
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  int n = N;
  size_t global = N, local = G;
  hc_arg_t args[] = {HC_ARG_BUF(bx), HC_ARG_BUF(bp), HC_ARG_VAL(n)};
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, &local, 3, args));
  TH_ASSERT_OK(hc_buffer_read(bp, 0, partial, sizeof partial));
  int bad = 0;
  for (int g = 0; g < NG; g++) {
    float want = 0;
    for (int i = g * G; i < (g + 1) * G && i < N; i++) want += x[i];
    bad += partial[g] != want;
  }
  CU_ASSERT_EQUAL(bad, 0);
  hc_kernel_destroy(k);
  hc_buffer_destroy(bx);
  hc_buffer_destroy(bp);
  free(x);

  /* 3-D ids over ranges that are no multiple of any block, with the
   * backend's block choice and with given ones, and a 2-D-like range of
   * one row (the block must still cover it). */
  static const size_t ranges[][3] = {{37, 19, 5}, {1000, 1, 1}, {1, 300, 2}, {65, 3, 70}};
  static const size_t locals[][3] = {{0, 0, 0}, {8, 8, 4}, {1, 1, 64}};
  hc_kernel_t *k3 = kernel(dev, "index3d");
  CU_ASSERT_PTR_NOT_NULL_FATAL(k3);
  for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++)
    for (size_t l = 0; l < sizeof locals / sizeof locals[0]; l++) {
      int nx = (int)ranges[r][0], ny = (int)ranges[r][1], nz = (int)ranges[r][2];
      size_t count = (size_t)nx * ny * nz;
      int *out = malloc(count * sizeof *out);
      hc_buffer_t *bo;
      TH_ASSERT_OK(hc_buffer_create(dev, count * sizeof *out, &bo));
      int minus1 = -1;
      TH_ASSERT_OK(hc_buffer_fill(bo, 0, &minus1, 4, count * sizeof *out));
      hc_arg_t a3[] = {HC_ARG_BUF(bo), HC_ARG_VAL(nx), HC_ARG_VAL(ny), HC_ARG_VAL(nz)};
      TH_ASSERT_OK(hc_kernel_launch(k3, 3, ranges[r], locals[l][0] ? locals[l] : NULL, 4, a3));
      TH_ASSERT_OK(hc_buffer_read(bo, 0, out, count * sizeof *out));
      int wrong = 0;
      for (int z = 0; z < nz; z++)
        for (int y = 0; y < ny; y++)
          for (int xx = 0; xx < nx; xx++) wrong += out[((size_t)z * ny + y) * nx + xx] != xx + 100 * y + 10000 * z;
      if (wrong) fprintf(stderr, "index3d %dx%dx%d local #%zu: %d wrong\n", nx, ny, nz, l, wrong);
      CU_ASSERT_EQUAL(wrong, 0);
      hc_buffer_destroy(bo);
      free(out);
    }
  hc_kernel_destroy(k3);
}

static void test_gpu_complex_fp64(void) {
  hc_device_t *dev = gpu();
  if (!dev) return;
  enum { N = 513 };
  double z[2 * N], out[2 * N];
  for (int i = 0; i < N; i++) {
    z[2 * i] = i * 0.125;
    z[2 * i + 1] = 1.0 - i * 0.25;
  }
  hc_buffer_t *b;
  TH_ASSERT_OK(hc_buffer_create(dev, sizeof z, &b));
  TH_ASSERT_OK(hc_buffer_write(b, 0, z, sizeof z));
  hc_kernel_t *k = kernel(dev, "csquare");
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  int n = N;
  size_t global = N;
  hc_arg_t args[] = {HC_ARG_BUF(b), HC_ARG_VAL(n)};
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 2, args));
  TH_ASSERT_OK(hc_buffer_read(b, 0, out, sizeof out));
  double worst = 0;
  for (int i = 0; i < N; i++) {
    double re = z[2 * i] * z[2 * i] - z[2 * i + 1] * z[2 * i + 1], im = 2 * z[2 * i] * z[2 * i + 1];
    double e = fabs(out[2 * i] - re) + fabs(out[2 * i + 1] - im);
    if (e > worst) worst = e;
  }
  CU_ASSERT(worst < 1e-12);
  hc_kernel_destroy(k);
  hc_buffer_destroy(b);
}

static void test_gpu_fill_copy(void) {
  hc_device_t *dev = gpu();
  if (!dev) return;
  enum { N = 4096 };
  unsigned char host[N], want[N];
  hc_buffer_t *b, *c;
  TH_ASSERT_OK(hc_buffer_create(dev, N, &b));
  TH_ASSERT_OK(hc_buffer_create(dev, N, &c));
  static const size_t sizes[] = {1, 2, 4, 8, 16};
  for (size_t s = 0; s < 5; s++) {
    size_t ps = sizes[s];
    unsigned char pat[16];
    for (size_t i = 0; i < 16; i++) pat[i] = (unsigned char)(0x11 * (i + 1) + ps);
    unsigned char zero = 0;
    TH_ASSERT_OK(hc_buffer_fill(b, 0, &zero, 1, N));
    size_t off = 16 * 3, len = 16 * 200;
    TH_ASSERT_OK(hc_buffer_fill(b, off, pat, ps, len));
    TH_ASSERT_OK(hc_buffer_read(b, 0, host, N));
    memset(want, 0, N);
    for (size_t i = 0; i < len; i++) want[off + i] = pat[i % ps];
    CU_ASSERT_EQUAL(memcmp(host, want, N), 0);
  }
  /* A pattern that repeats a shorter one (reduced to a byte fill). */
  double zero8 = 0.0;
  TH_ASSERT_OK(hc_buffer_fill(b, 8, &zero8, 8, N - 16));
  TH_ASSERT_OK(hc_buffer_read(b, 0, host, N));
  for (size_t i = 8; i < N - 8; i++) want[i] = 0;
  CU_ASSERT_EQUAL(memcmp(host, want, N), 0);

  /* Device copies: between buffers and within one (overlapping). */
  for (int i = 0; i < N; i++) host[i] = (unsigned char)(i * 7 + 3);
  TH_ASSERT_OK(hc_buffer_write(b, 0, host, N));
  TH_ASSERT_OK(hc_buffer_copy(c, 100, b, 0, N - 100));
  unsigned char got[N];
  TH_ASSERT_OK(hc_buffer_read(c, 100, got, N - 100));
  CU_ASSERT_EQUAL(memcmp(got, host, N - 100), 0);
  memcpy(want, host, N);
  memmove(want + 10, want, N - 10);
  TH_ASSERT_OK(hc_buffer_copy(b, 10, b, 0, N - 10));
  TH_ASSERT_OK(hc_buffer_read(b, 0, got, N));
  CU_ASSERT_EQUAL(memcmp(got, want, N), 0);
  memmove(want, want + 1000, N - 1000);
  TH_ASSERT_OK(hc_buffer_copy(b, 0, b, 1000, N - 1000));
  TH_ASSERT_OK(hc_buffer_read(b, 0, got, N));
  CU_ASSERT_EQUAL(memcmp(got, want, N), 0);
  hc_buffer_destroy(b);
  hc_buffer_destroy(c);
}

static void test_gpu_timer(void) {
  hc_device_t *dev = gpu();
  if (!dev) return;
  enum { N = 1 << 22 };
  hc_buffer_t *b;
  TH_ASSERT_OK(hc_buffer_create(dev, N * sizeof(float), &b));
  float one = 1.0f;
  TH_ASSERT_OK(hc_buffer_fill(b, 0, &one, 4, N * sizeof(float)));
  hc_kernel_t *k = kernel(dev, "scale");
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  float s = 1.5f;
  int n = N;
  size_t global = N;
  hc_arg_t args[] = {HC_ARG_BUF(b), HC_ARG_VAL(s), HC_ARG_VAL(n)};
  TH_ASSERT_OK(hc_device_timer_begin(dev));
  for (int i = 0; i < 10; i++) TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 3, args));
  double secs = -1;
  TH_ASSERT_OK(hc_device_timer_end(dev, &secs));
  CU_ASSERT(secs > 0 && secs < 5);
  float v = 0;
  TH_ASSERT_OK(hc_buffer_read(b, (N - 1) * sizeof(float), &v, sizeof v));
  CU_ASSERT_EQUAL(v, 57.6650390625f); /* 1.5^10, exact in float */
  hc_kernel_destroy(k);
  hc_buffer_destroy(b);
}

static void test_gpu_errors(void) {
  hc_device_t *dev = gpu();
  if (!dev) return;
  /* A build error carries the NVRTC log, with lines of the workload's own
   * source. */
  hc_kernel_desc_t bad = {sizeof bad, "broken", broken_src, NULL, NULL};
  hc_kernel_t *k = NULL;
  CU_ASSERT_EQUAL(hc_kernel_create(dev, &bad, &k), HC_ERR_BUILD);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "undefined_thing_42"));
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "hc_kernel.cu(3)"));
  /* A kernel name the program lacks. */
  hc_kernel_desc_t missing = {sizeof missing, "no_such_kernel", sample_src, SAMPLE_OPTS, NULL};
  CU_ASSERT_EQUAL(hc_kernel_create(dev, &missing, &k), HC_ERR_NOT_FOUND);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "no_such_kernel"));
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "CUDA_ERROR_NOT_FOUND"));
  printf("\n    missing kernel: %s\n", hc_last_error());
  /* Arguments that do not match the kernel are refused before launch. */
  k = kernel(dev, "scale");
  CU_ASSERT_PTR_NOT_NULL_FATAL(k);
  hc_buffer_t *b;
  TH_ASSERT_OK(hc_buffer_create(dev, 1024, &b));
  double wrong = 1.0;
  int n = 10;
  size_t global = 10;
  hc_arg_t args[] = {HC_ARG_BUF(b), HC_ARG_VAL(wrong), HC_ARG_VAL(n)};
  CU_ASSERT_NOT_EQUAL(hc_kernel_launch(k, 1, &global, NULL, 3, args), HC_OK);
  printf("    wrong argument: %s\n", hc_last_error());
  CU_ASSERT_NOT_EQUAL(hc_kernel_launch(k, 1, &global, NULL, 2, args), HC_OK);
  size_t huge_local = 4096;
  float s = 1;
  hc_arg_t ok_args[] = {HC_ARG_BUF(b), HC_ARG_VAL(s), HC_ARG_VAL(n)};
  CU_ASSERT_EQUAL(hc_kernel_launch(k, 1, &global, &huge_local, 3, ok_args), HC_ERR_LAUNCH);
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 3, ok_args));
  TH_ASSERT_OK(hc_device_finish(dev));
  hc_kernel_destroy(k);
  hc_buffer_destroy(b);
  /* Out of device memory: HC_ERR_DEVICE_MEMORY with the sizes. */
  size_t big = (size_t)(hc_device_info(dev)->global_mem_bytes * 0.6);
  hc_buffer_t *b1 = NULL, *b2 = NULL;
  TH_ASSERT_OK(hc_buffer_create(dev, big, &b1));
  CU_ASSERT_EQUAL(hc_buffer_create(dev, big, &b2), HC_ERR_DEVICE_MEMORY);
  printf("    out of memory: %s\n", hc_last_error());
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "CUDA_ERROR_OUT_OF_MEMORY"));
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "bytes free"));
  hc_buffer_destroy(b1);
  hc_buffer_destroy(b2);
}

/* ---- a fresh context: on-disk cache and forced staging ---- */

static char log_text[1 << 16];
static size_t log_len;
static void capture(void *user, hc_log_level_t level, const char *msg) {
  (void)user;
  (void)level;
  log_len += (size_t)snprintf(log_text + log_len, sizeof log_text - log_len, "%s\n", msg);
  if (log_len >= sizeof log_text) log_len = sizeof log_text - 1;
}

static hc_device_t *fresh_device(hc_context_t **ctx) {
  hc_context_options_t o = {0};
  o.size = sizeof o;
  o.log = capture;
  o.log_level = HC_LOG_DEBUG;
  if (hc_context_create(&o, ctx) != HC_OK) return NULL;
  uint32_t idx;
  hc_device_t *dev = NULL;
  if (hc_device_find(*ctx, "cuda", &idx) != HC_OK || hc_device_open(*ctx, idx, &dev) != HC_OK) {
    hc_context_destroy(*ctx);
    return NULL;
  }
  return dev;
}

static int count_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static void test_gpu_disk_cache(void) {
  if (!gpu()) return;
  char dir[1024], sub[1100];
  snprintf(dir, sizeof dir, "%s/kcache", th_tmpdir());
  snprintf(sub, sizeof sub, "%s/cuda", dir);
  const char *old = getenv("HC_CACHE_DIR");
  char *saved = old ? strdup(old) : NULL;
  setenv("HC_CACHE_DIR", dir, 1);
  for (int round = 0; round < 2; round++) {
    hc_context_t *ctx;
    log_len = 0;
    log_text[0] = '\0';
    hc_device_t *dev = fresh_device(&ctx);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    hc_kernel_t *k = kernel(dev, "saxpy");
    CU_ASSERT_PTR_NOT_NULL(k);
    hc_kernel_destroy(k);
    int from_cache = strstr(log_text, "from the kernel cache") != NULL;
    CU_ASSERT_EQUAL(from_cache, round == 1); /* built once, then loaded */
    CU_ASSERT_EQUAL(count_files(sub), 1);
    hc_device_close(dev);
    hc_context_destroy(ctx);
  }
  if (saved)
    setenv("HC_CACHE_DIR", saved, 1);
  else
    unsetenv("HC_CACHE_DIR");
  free(saved);
}

/* A staged write and read back of n bytes at offset 64, on a device of
 * its own whose staging chunks have this size. */
static void staged_round_trip(const char *chunk, size_t n) {
  setenv("HC_CUDA_STAGING", "1", 1);
  setenv("HC_CUDA_STAGE_CHUNK", chunk, 1);
  setenv("HC_CUDA_STAGE_THREADS", "3", 1); /* uneven shares */
  hc_context_t *ctx;
  hc_device_t *dev = fresh_device(&ctx);
  unsetenv("HC_CUDA_STAGING");
  unsetenv("HC_CUDA_STAGE_CHUNK");
  unsetenv("HC_CUDA_STAGE_THREADS");
  CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
  unsigned char *src = malloc(n), *dst = malloc(n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(src && dst);
  for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 31 + (i >> 13));
  hc_buffer_t *b;
  TH_ASSERT_OK(hc_buffer_create(dev, n + 64, &b));
  TH_ASSERT_OK(hc_buffer_write(b, 64, src, n));
  memset(dst, 0, n);
  TH_ASSERT_OK(hc_buffer_read(b, 64, dst, n));
  CU_ASSERT_EQUAL(memcmp(src, dst, n), 0);
  hc_buffer_destroy(b);
  hc_device_close(dev);
  hc_context_destroy(ctx);
  free(src);
  free(dst);
}

static void test_gpu_staged_transfers(void) {
  if (!gpu()) return;
  /* Several chunks and a partial last one through the bounce buffers,
   * and a transfer shorter than one chunk. */
  size_t n = (21u << 19) + 12345; /* 10.5 MiB and a bit */
  staged_round_trip("1M", n);
  staged_round_trip("1M", (300u << 10) + 7);
  /* The default policy stages large transfers (from 16 MiB): an odd size
   * at an odd offset, through the shared device. */
  hc_buffer_t *b;
  size_t big = (40u << 20) + 5;
  unsigned char *bsrc = malloc(big), *bdst = malloc(big);
  for (size_t i = 0; i < big; i++) bsrc[i] = (unsigned char)(i * 7 + (i >> 17));
  TH_ASSERT_OK(hc_buffer_create(gpu(), big + 3, &b));
  TH_ASSERT_OK(hc_buffer_write(b, 3, bsrc, big));
  TH_ASSERT_OK(hc_buffer_read(b, 3, bdst, big));
  CU_ASSERT_EQUAL(memcmp(bsrc, bdst, big), 0);
  TH_ASSERT_OK(hc_buffer_read(b, 3 + 1000, bdst, n)); /* below the threshold */
  CU_ASSERT_EQUAL(memcmp(bsrc + 1000, bdst, n), 0);
  hc_buffer_destroy(b);
  free(bsrc);
  free(bdst);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("cuda backend (no GPU needed)", NULL, NULL);
  CU_ADD_TEST(s, test_backend_listed);
  CU_ADD_TEST(s, test_missing_driver);
  CU_ADD_TEST(s, test_stub_driver);
  CU_pSuite n = CU_add_suite("cuda NVRTC dialect compile (no GPU needed)", NULL, NULL);
  CU_ADD_TEST(n, test_nvrtc_compiles_dialect);
  CU_ADD_TEST(n, test_nvrtc_reports_errors);
  CU_ADD_TEST(n, test_nvrtc_arch_fallback);
  CU_pSuite c = CU_add_suite("cuda staging copier (no GPU needed)", NULL, NULL);
  CU_ADD_TEST(c, test_copier);
  CU_pSuite g = CU_add_suite("cuda device (skipped without a GPU)", NULL, NULL);
  CU_ADD_TEST(g, test_gpu_info);
  CU_ADD_TEST(g, test_gpu_saxpy);
  CU_ADD_TEST(g, test_gpu_local_memory_and_ranges);
  CU_ADD_TEST(g, test_gpu_complex_fp64);
  CU_ADD_TEST(g, test_gpu_fill_copy);
  CU_ADD_TEST(g, test_gpu_timer);
  CU_ADD_TEST(g, test_gpu_errors);
  CU_ADD_TEST(g, test_gpu_disk_cache);
  CU_ADD_TEST(g, test_gpu_staged_transfers);
}

TH_MAIN(register_tests)
