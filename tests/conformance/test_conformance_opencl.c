/* The opencl backend beyond the portable conformance suite: what only an
 * OpenCL device has (reqd_work_group_size, CL error names, the binary
 * cache) and how the backend behaves without a platform or with
 * HC_OPENCL_PLATFORM. Environment cases run in a child process (this same
 * program, --child=CASE): the ICD loader reads its environment once per
 * process. Without an OpenCL device it says so and passes. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static hc_device_t *g_dev;
static char g_self[PATH_MAX];

/* Index of the opencl backend in ctx, or -1. */
static int opencl_backend(hc_context_t *ctx) {
  for (uint32_t b = 0; b < hc_backend_count(ctx); b++) {
    hc_plugin_summary_t s;
    if (hc_backend_get(ctx, b, &s) == HC_OK && !strcmp(s.name, "opencl")) return (int)b;
  }
  return -1;
}

/* ------------------------------------------------------------ children */

/* Exit status 0 when the backend loaded, reports no device, and its status
 * message and hc_device_find's error contain `want`. */
static int child_expect_no_device(const char *want) {
  hc_context_t *ctx = NULL;
  if (hc_context_create(NULL, &ctx) != HC_OK) return 10;
  int b = opencl_backend(ctx), rc = 0;
  const char *why = b >= 0 ? hc_backend_status(ctx, (uint32_t)b) : NULL;
  uint32_t idx;
  if (b < 0)
    rc = 11; /* the backend must still load */
  else if (!why || !strstr(why, want))
    rc = 12;
  else if (hc_device_find(ctx, "opencl", &idx) != HC_ERR_NO_DEVICE || !strstr(hc_last_error(), want))
    rc = 13;
  printf("status: %s\nfind: %s\n", why ? why : "(none)", hc_last_error());
  hc_context_destroy(ctx);
  return rc;
}

static int child_expect_devices(void) {
  hc_context_t *ctx = NULL;
  uint32_t idx;
  if (hc_context_create(NULL, &ctx) != HC_OK) return 10;
  int rc = hc_device_find(ctx, "opencl", &idx) == HC_OK ? 0 : 14;
  hc_context_destroy(ctx);
  return rc;
}

/* The opencl backend leaves OCL_ICD_FILENAMES as it found it (the first
 * OpenCL call on the H100 machine cut it at its first ':', and the
 * children of a process holding hc lost every vendor after the first). */
static int child_expect_environment_kept(void) {
  const char *want = getenv("HC_TEST_ICD_FILENAMES");
  hc_context_t *ctx = NULL;
  if (!want || hc_context_create(NULL, &ctx) != HC_OK) return 10;
  const char *now = getenv("OCL_ICD_FILENAMES");
  int rc = opencl_backend(ctx) < 0 ? 11 : !now || strcmp(now, want) ? 15 : 0;
  printf("OCL_ICD_FILENAMES before: %s, after: %s\n", want, now ? now : "(unset)");
  hc_context_destroy(ctx);
  return rc;
}

static int run_child(const char *which) {
  if (!strcmp(which, "noplatform")) return child_expect_no_device("no OpenCL platform installed");
  if (!strcmp(which, "nomatch")) return child_expect_no_device("matches none of the OpenCL platforms");
  if (!strcmp(which, "match")) return child_expect_devices();
  if (!strcmp(which, "envkept")) return child_expect_environment_kept();
  fprintf(stderr, "unknown child case %s\n", which);
  return 2;
}

static void test_no_platform(void) {
  char cmd[PATH_MAX + 128], out[4096];
  /* An empty vendor directory and no vendor named by file: the ICD loader
   * finds no platform. */
  snprintf(cmd, sizeof cmd, "env -u OCL_ICD_FILENAMES OCL_ICD_VENDORS=%s/no-vendors '%s' --child=noplatform",
           th_tmpdir(), g_self);
  int rc = th_run(cmd, out, sizeof out, NULL, 0);
  if (rc != 0) fprintf(stderr, "child (no platform) exited %d:\n%s\n", rc, out);
  CU_ASSERT_EQUAL(rc, 0);
}

static void test_platform_filter(void) {
  const hc_device_info_t *in = hc_device_info(g_dev);
  char cmd[PATH_MAX + 256], out[4096], word[64];
  snprintf(cmd, sizeof cmd, "HC_OPENCL_PLATFORM=no-such-platform-xyz '%s' --child=nomatch", g_self);
  int rc = th_run(cmd, out, sizeof out, NULL, 0);
  if (rc != 0) fprintf(stderr, "child (no match) exited %d:\n%s\n", rc, out);
  CU_ASSERT_EQUAL(rc, 0);
  /* The filter is a case-insensitive substring: the platform's first word
   * in upper case still matches. */
  size_t n = strcspn(in->platform, " '\"\\$`");
  if (n >= sizeof word) n = sizeof word - 1;
  for (size_t i = 0; i < n; i++)
    word[i] = (char)(in->platform[i] >= 'a' && in->platform[i] <= 'z' ? in->platform[i] - 32 : in->platform[i]);
  word[n] = '\0';
  snprintf(cmd, sizeof cmd, "HC_OPENCL_PLATFORM='%s' '%s' --child=match", word, g_self);
  rc = th_run(cmd, out, sizeof out, NULL, 0);
  CU_ASSERT_EQUAL(rc, 0);
}

static void test_environment_kept(void) {
  const char *have = getenv("OCL_ICD_FILENAMES");
  char list[2048], cmd[PATH_MAX + 4200], out[4096];
  /* Two vendors, the second absent (the loader skips it): a list to cut. */
  snprintf(list, sizeof list, "%s:libhc-absent-icd.so.1", have && *have ? have : "libpocl.so.2");
  CU_ASSERT_FATAL(strchr(list, '\'') == NULL);
  snprintf(cmd, sizeof cmd, "OCL_ICD_FILENAMES='%s' HC_TEST_ICD_FILENAMES='%s' '%s' --child=envkept", list, list,
           g_self);
  int rc = th_run(cmd, out, sizeof out, NULL, 0);
  if (rc != 0) fprintf(stderr, "child (environment kept) exited %d:\n%s\n", rc, out);
  CU_ASSERT_EQUAL(rc, 0);
}

/* ------------------------------------------------------------ device */

static void test_info(void) {
  const hc_device_info_t *in = hc_device_info(g_dev);
  CU_ASSERT_EQUAL(in->languages, HC_LANG_BIT(HC_LANG_OPENCL_C));
  CU_ASSERT(in->platform[0] && in->driver[0] && in->vendor[0]);
  CU_ASSERT(in->preferred_group_multiple >= 1);
  CU_ASSERT(in->local_mem_bytes > 0);
  CU_ASSERT(in->max_alloc_bytes > 0 && in->max_alloc_bytes <= in->global_mem_bytes);
  /* Trimmed: drivers pad names with blanks. */
  size_t len = strlen(in->name);
  CU_ASSERT(len > 0 && in->name[len - 1] != ' ' && in->name[0] != ' ');
}

static const char k_src[] =
    "HC_KERNEL __attribute__((reqd_work_group_size(64, 1, 1)))\n"
    "void r64(HC_GLOBAL uint *o, int n) {\n"
    "  long i = hc_global_id(0);\n"
    "  if (i < n) o[i] = (uint)hc_local_size(0);\n"
    "}\n"
    "HC_KERNEL void lsize(HC_GLOBAL uint *o, int n) {\n"
    "  long i = hc_global_id(0);\n"
    "  if (i < n) { o[2 * i] = (uint)hc_local_size(0); o[2 * i + 1] = (uint)hc_num_groups(0); }\n"
    "}\n";

static hc_kernel_t *kernel(const char *name, const char *src, const char *options) {
  hc_kernel_desc_t d = {sizeof d, name, src, options, NULL};
  hc_kernel_t *k = NULL;
  TH_ASSERT_OK(hc_kernel_create(g_dev, &d, &k));
  return k;
}

static void test_reqd_group_size(void) {
  hc_kernel_t *k = kernel("r64", k_src, NULL);
  int32_t n = 1000;
  hc_buffer_t *b = NULL;
  TH_ASSERT_OK(hc_buffer_create(g_dev, 4 * 1000, &b));
  hc_arg_t args[] = {HC_ARG_BUF(b), HC_ARG_VAL(n)};
  size_t global = 1000, l64[3] = {64, 1, 1}, l32[3] = {32, 1, 1};
  uint32_t out[1000];
  /* Chosen by the backend: the declared size. */
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 2, args));
  TH_ASSERT_OK(hc_buffer_read(b, 0, out, sizeof out));
  int bad = 0;
  for (int i = 0; i < 1000; i++) bad += out[i] != 64;
  CU_ASSERT_EQUAL(bad, 0);
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, l64, 2, args));
  /* Another size contradicts the kernel: refused with a reason. */
  CU_ASSERT_EQUAL(hc_kernel_launch(k, 1, &global, l32, 2, args), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "reqd_work_group_size"));
  hc_buffer_destroy(b);
  hc_kernel_destroy(k);
}

/* A kernel declaring the device's largest group runs it: NVIDIA's OpenCL
 * reports 256 items for every kernel (this one too), and the backend takes
 * the declared size as the kernel's limit. */
static void test_reqd_largest_group(void) {
  const size_t most = hc_device_info(g_dev)->max_work_group_size;
  if (most < 2 || most > 4096) return;
  char src[512];
  snprintf(src, sizeof src,
           "HC_KERNEL __attribute__((reqd_work_group_size(%zu, 1, 1)))\n"
           "void rmax(HC_GLOBAL uint *o, int n) {\n"
           "  long i = hc_global_id(0);\n"
           "  if (i < n) o[i] = (uint)hc_local_size(0);\n"
           "}\n",
           most);
  hc_kernel_t *k = kernel("rmax", src, NULL);
  CU_ASSERT_EQUAL(hc_kernel_max_group_size(k), most);
  const int32_t n = (int32_t)(2 * most);
  hc_buffer_t *b = NULL;
  TH_ASSERT_OK(hc_buffer_create(g_dev, 4 * (size_t)n, &b));
  hc_arg_t args[] = {HC_ARG_BUF(b), HC_ARG_VAL(n)};
  size_t global = (size_t)n, local[3] = {most, 1, 1};
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, local, 2, args));
  uint32_t *out = malloc(4 * (size_t)n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(out);
  TH_ASSERT_OK(hc_buffer_read(b, 0, out, 4 * (size_t)n));
  int bad = 0;
  for (int32_t i = 0; i < n; i++) bad += out[i] != most;
  CU_ASSERT_EQUAL(bad, 0);
  free(out);
  hc_buffer_destroy(b);
  hc_kernel_destroy(k);
}

/* The backend's own group choice stays within the kernel's limit and
 * covers the range (the kernel sees the rounded-up global size). */
static void test_chosen_group(void) {
  hc_kernel_t *k = kernel("lsize", k_src, NULL);
  size_t max = hc_kernel_max_group_size(k);
  static const int32_t sizes[] = {1, 5, 300, 100000};
  for (int s = 0; s < 4; s++) {
    int32_t n = sizes[s];
    hc_buffer_t *b = NULL;
    TH_ASSERT_OK(hc_buffer_create(g_dev, 8 * (size_t)n, &b));
    hc_arg_t args[] = {HC_ARG_BUF(b), HC_ARG_VAL(n)};
    size_t global = (size_t)n;
    TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 2, args));
    uint32_t last[2];
    TH_ASSERT_OK(hc_buffer_read(b, 8 * ((size_t)n - 1), last, 8));
    size_t local = last[0], groups = last[1];
    CU_ASSERT(local >= 1 && local <= max);
    CU_ASSERT(local * groups >= (size_t)n && local * (groups - 1) < (size_t)n);
    hc_buffer_destroy(b);
  }
  hc_kernel_destroy(k);
}

static void test_arg_checks(void) {
  hc_kernel_t *k = kernel("lsize", k_src, NULL);
  hc_buffer_t *b = NULL;
  TH_ASSERT_OK(hc_buffer_create(g_dev, 64, &b));
  int32_t n = 4; /* 4 items, 2 words each */
  int64_t wide = 4;
  size_t global = 4;
  hc_arg_t one[] = {HC_ARG_BUF(b)};
  CU_ASSERT_EQUAL(hc_kernel_launch(k, 1, &global, NULL, 1, one), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "takes 2 argument"));
  hc_arg_t wrong[] = {HC_ARG_BUF(b), HC_ARG_VAL(wide)};
  CU_ASSERT_EQUAL(hc_kernel_launch(k, 1, &global, NULL, 2, wrong), HC_ERR_INVALID_ARG);
  /* A cl error reads as its name. */
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "CL_INVALID_ARG_SIZE"));
  hc_arg_t right[] = {HC_ARG_BUF(b), HC_ARG_VAL(n)};
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, NULL, 2, right));
  TH_ASSERT_OK(hc_device_finish(g_dev));
  hc_buffer_destroy(b);
  hc_kernel_destroy(k);
}

static void test_build_log(void) {
  hc_kernel_desc_t d = {sizeof d, "bad", "HC_KERNEL void bad(HC_GLOBAL int *o) { o[0] = missing_thing_q; }\n", NULL,
                        NULL};
  hc_kernel_t *k = NULL;
  CU_ASSERT_EQUAL(hc_kernel_create(g_dev, &d, &k), HC_ERR_BUILD);
  const char *msg = hc_last_error();
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "CL_BUILD_PROGRAM_FAILURE"));
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "build log"));
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "missing_thing_q"));
  /* Bad options are a build error too, named. */
  hc_kernel_desc_t o = {sizeof o, "lsize", k_src, "-this-is-not-an-option", NULL};
  CU_ASSERT_EQUAL(hc_kernel_create(g_dev, &o, &k), HC_ERR_BUILD);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "opencl: clBuildProgram failed: CL_"));
}

static void test_timer_misuse(void) {
  double s = 1;
  CU_ASSERT_EQUAL(hc_device_timer_end(g_dev, &s), HC_ERR_INVALID_ARG);
  CU_ASSERT_EQUAL(s, 0);
  /* A second begin restarts the span. */
  TH_ASSERT_OK(hc_device_timer_begin(g_dev));
  TH_ASSERT_OK(hc_device_timer_begin(g_dev));
  TH_ASSERT_OK(hc_device_timer_end(g_dev, &s));
  CU_ASSERT(s >= 0);
}

/* ------------------------------------------------------------ cache */

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strstr(e->d_name, ".bin") && !strstr(e->d_name, ".tmp")) n++;
  closedir(d);
  return n;
}

/* Builds kernel `name` of `src` on a fresh context's opencl device (so the
 * core's per-device program cache cannot answer) and runs it. */
static void build_in_new_context(const char *src) {
  hc_context_t *ctx = NULL;
  hc_device_t *dev = NULL;
  uint32_t idx;
  TH_ASSERT_OK(hc_context_create(NULL, &ctx));
  TH_ASSERT_OK(hc_device_find(ctx, hc_device_name(g_dev), &idx));
  TH_ASSERT_OK(hc_device_open(ctx, idx, &dev));
  hc_kernel_desc_t d = {sizeof d, "lsize", src, NULL, NULL};
  hc_kernel_t *k = NULL;
  TH_ASSERT_OK(hc_kernel_create(dev, &d, &k));
  hc_buffer_t *b = NULL;
  TH_ASSERT_OK(hc_buffer_create(dev, 8 * 10, &b));
  int32_t n = 10;
  hc_arg_t args[] = {HC_ARG_BUF(b), HC_ARG_VAL(n)};
  size_t global = 10, local[3] = {2, 1, 1};
  TH_ASSERT_OK(hc_kernel_launch(k, 1, &global, local, 2, args));
  uint32_t out[20];
  TH_ASSERT_OK(hc_buffer_read(b, 0, out, sizeof out));
  CU_ASSERT_EQUAL(out[18], 2);
  CU_ASSERT_EQUAL(out[19], 5);
  hc_buffer_destroy(b);
  hc_kernel_destroy(k);
  hc_device_close(dev);
  hc_context_destroy(ctx);
}

static void test_binary_cache(void) {
  char cache[PATH_MAX], dir[PATH_MAX + 16], src[1024];
  snprintf(cache, sizeof cache, "%s/cache", th_tmpdir());
  snprintf(dir, sizeof dir, "%s/opencl", cache);
  setenv("HC_CACHE_DIR", cache, 1);
  /* A source no earlier run has cached. */
  snprintf(src, sizeof src, "/* %ld */\n%s", (long)getpid(), k_src);

  setenv("HC_CACHE", "0", 1); /* disabled: nothing is written */
  build_in_new_context(src);
  CU_ASSERT_EQUAL(count_entries(dir), 0);
  unsetenv("HC_CACHE");

  build_in_new_context(src); /* miss: builds and stores */
  CU_ASSERT_EQUAL(count_entries(dir), 1);
  build_in_new_context(src); /* hit */
  CU_ASSERT_EQUAL(count_entries(dir), 1);

  /* An entry that verifies but holds no program binary of this backend's:
   * a miss, rebuilt, never an error (and never handed to the driver). */
  DIR *d = opendir(dir);
  CU_ASSERT_PTR_NOT_NULL_FATAL(d);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    char key[64];
    size_t n = strcspn(e->d_name, ".");
    if (!strstr(e->d_name, ".bin") || n >= sizeof key) continue;
    memcpy(key, e->d_name, n);
    key[n] = '\0';
    TH_ASSERT_OK(hc_cache_store("opencl", key, "not a program binary", 20));
  }
  closedir(d);
  build_in_new_context(src);
  CU_ASSERT_EQUAL(count_entries(dir), 1);
  unsetenv("HC_CACHE_DIR");
}

/* ------------------------------------------------------------ main */

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("opencl backend", NULL, NULL);
  if (!s) return;
  uint32_t idx;
  if (hc_device_find(th_context(), "opencl", &idx) != HC_OK) {
    char why[700];
    snprintf(why, sizeof why, "no opencl device (%s)", hc_last_error());
    th_skip(why);
    return;
  }
  g_dev = th_device("opencl");
  if (!g_dev) return;
  CU_ADD_TEST(s, test_info);
  CU_ADD_TEST(s, test_no_platform);
  CU_ADD_TEST(s, test_platform_filter);
  CU_ADD_TEST(s, test_environment_kept);
  CU_ADD_TEST(s, test_reqd_group_size);
  CU_ADD_TEST(s, test_reqd_largest_group);
  CU_ADD_TEST(s, test_chosen_group);
  CU_ADD_TEST(s, test_arg_checks);
  CU_ADD_TEST(s, test_build_log);
  CU_ADD_TEST(s, test_timer_misuse);
  CU_ADD_TEST(s, test_binary_cache);
}

int main(int argc, char **argv) {
  if (argc == 2 && !strncmp(argv[1], "--child=", 8)) return run_child(argv[1] + 8);
  ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
  g_self[n > 0 ? n : 0] = '\0';
  return th_main(argc, argv, register_tests);
}
