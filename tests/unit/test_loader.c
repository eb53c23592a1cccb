/* Plugin loader and registry: every rejection reason with real broken files
 * made by the test (compiled with the system C compiler), search order,
 * first-on-path wins, and the host surviving all of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "harness.h"
#include "plugins/stub_backend.h"

static char dir1[4200], dir2[4200], dir3[4200];

/* Compiles C source text into dir/name.so against the public headers. */
static int compile_plugin(const char *dir, const char *name, const char *src) {
  char cpath[4400], cmd[16384], err[8192];
  snprintf(cpath, sizeof cpath, "%s/%s.c", dir, name);
  FILE *f = fopen(cpath, "w");
  if (!f) return -1;
  fputs(src, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cc -std=c11 -shared -fPIC -fvisibility=hidden -I%s/include -o %s/%s.so %s -L%s/lib -lhc",
           HC_SOURCE_DIR, dir, name, cpath, th_build_dir());
  int rc = th_run(cmd, NULL, 0, err, sizeof err);
  if (rc != 0) fprintf(stderr, "compiling %s failed: %s\n", name, err);
  remove(cpath);
  return rc;
}

#define WORKLOAD_BODY(NAME, MAJOR, MINOR)                                                  \
  "#include <hc/plugin.h>\n"                                                               \
  "static hc_status_t run(hc_job_t *j) { (void)j; return HC_OK; }\n"                       \
  "static const hc_workload_ops_t ops = { .size = sizeof(hc_workload_ops_t),\n"            \
  "  .languages = HC_LANG_BIT(HC_LANG_HOST), .run = run };\n"                              \
  "HC_PLUGIN_DESCRIPTOR = {" #MAJOR ", " #MINOR ", HC_PLUGIN_WORKLOAD, 0, \"" NAME "\",\n" \
  "  \"1\", \"" NAME " from the loader test\", &ops};\n"

/* A backend whose init returns init_status; without launch when
 * with_launch is 0. */
static const char *backend_src(const char *init_status, int with_launch) {
  static char buf[4096];
  return stub_backend_src(buf, sizeof buf, with_launch ? "failinit" : "nolaunch", "(void)0", init_status, with_launch);
}

/* A backend whose init aborts the process (as PoCL does under a tight
 * process limit). */
static int compile_abort_backend(const char *dir) {
  char src[4096];
  return compile_plugin(dir, "abrtinit", stub_backend_src(src, sizeof src, "abrtinit", "abort()", "HC_OK", 1));
}

static int setup(void) {
  snprintf(dir1, sizeof dir1, "%s/p1", th_tmpdir());
  snprintf(dir3, sizeof dir3, "%s/p3", th_tmpdir());
  mkdir(dir3, 0755);
  snprintf(dir2, sizeof dir2, "%s/p2", th_tmpdir());
  mkdir(dir1, 0755);
  mkdir(dir2, 0755);
  int rc = 0;
  rc |= compile_plugin(dir1, "good", WORKLOAD_BODY("goodwl", HC_ABI_MAJOR, HC_ABI_MINOR));
  rc |= compile_plugin(dir2, "dup", WORKLOAD_BODY("goodwl", HC_ABI_MAJOR, HC_ABI_MINOR));
  rc |= compile_plugin(dir1, "future", WORKLOAD_BODY("futurewl", 99, 0));
  rc |= compile_plugin(dir1, "newminor", WORKLOAD_BODY("minorwl", HC_ABI_MAJOR, 999));
  rc |= compile_plugin(dir1, "badname", WORKLOAD_BODY("Bad Name!", HC_ABI_MAJOR, HC_ABI_MINOR));
  rc |= compile_plugin(dir1, "nodesc", "int hc_something_else = 1;\n");
  rc |= compile_plugin(dir1, "initfail", backend_src("hc_error(HC_ERR_DEVICE, \"no widget attached\")", 1));
  rc |= compile_plugin(dir1, "nolaunch", backend_src("HC_OK", 0));
  rc |= compile_abort_backend(dir3);
  /* Not ELF; and an ELF file cut short. */
  char p[4400], cmd[9000];
  snprintf(p, sizeof p, "%s/text.so", dir1);
  FILE *f = fopen(p, "w");
  fputs("this is not a shared object\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "head -c 200 %s/good.so > %s/truncated.so", dir1, dir1);
  rc |= th_run(cmd, NULL, 0, NULL, 0);
  /* A symlink loop and a dangling symlink: named as what they are. */
  char q[4400];
  snprintf(p, sizeof p, "%s/loop.so", dir1);
  snprintf(q, sizeof q, "%s/loop2.so", dir1);
  rc |= symlink(q, p) != 0;
  rc |= symlink(p, q) != 0;
  snprintf(p, sizeof p, "%s/dangling.so", dir1);
  rc |= symlink("/nonexistent/x.so", p) != 0;
  /* A file that is not *.so is not a plugin candidate at all. */
  snprintf(p, sizeof p, "%s/README", dir1);
  f = fopen(p, "w");
  fputs("notes\n", f);
  fclose(f);
  return rc ? 1 : 0;
}

static const char *reason_for(hc_context_t *c, const char *file) {
  for (uint32_t i = 0; i < hc_rejected_count(c); i++) {
    const char *path, *reason;
    hc_rejected_get(c, i, &path, &reason);
    const char *base = strrchr(path, '/');
    if (base && !strcmp(base + 1, file)) return reason;
  }
  return NULL;
}

static hc_context_t *make_ctx(void) {
  const char *dirs[2] = {dir1, dir2};
  hc_context_options_t o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.plugin_dirs = dirs;
  o.plugin_dir_count = 2;
  o.no_env_path = 1;
  o.no_default_dirs = 1;
  hc_context_t *c = NULL;
  CU_ASSERT_EQUAL(hc_context_create(&o, &c), HC_OK);
  return c;
}

static void expect_reason(hc_context_t *c, const char *file, const char *fragment) {
  const char *r = reason_for(c, file);
  if (!r || !strstr(r, fragment)) fprintf(stderr, "%s: reason '%s' lacks '%s'\n", file, r ? r : "(none)", fragment);
  CU_ASSERT_PTR_NOT_NULL(r);
  if (r) CU_ASSERT_PTR_NOT_NULL(strstr(r, fragment));
}

static void test_rejections(void) {
  hc_context_t *c = make_ctx();
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  expect_reason(c, "text.so", "not a shared object (no ELF header)");
  expect_reason(c, "loop.so", "symlink loop");
  expect_reason(c, "loop2.so", "symlink loop");
  expect_reason(c, "dangling.so", "cannot open: No such file or directory");
  expect_reason(c, "truncated.so", "cannot be loaded: ");
  expect_reason(c, "nodesc.so", "no descriptor symbol 'hc_plugin_descriptor'");
  expect_reason(c, "future.so", "ABI mismatch: plugin built for 99.0, core supports 1.0-1.");
  expect_reason(c, "newminor.so", "ABI mismatch: plugin built for 1.999");
  expect_reason(c, "badname.so", "invalid descriptor: name must be");
  expect_reason(c, "nolaunch.so", "invalid descriptor: backend ops lack 'launch'");
  expect_reason(c, "dup.so", "duplicate workload name 'goodwl' (first loaded from ");
  CU_ASSERT_PTR_NULL(reason_for(c, "good.so"));
  CU_ASSERT_PTR_NULL(reason_for(c, "README"));
  CU_ASSERT_PTR_NULL(reason_for(c, "initfail.so"));
  CU_ASSERT_EQUAL(hc_rejected_count(c), 11);
  /* The good one loaded, from the first directory. */
  CU_ASSERT_EQUAL(hc_workload_count(c), 1);
  hc_plugin_summary_t s;
  TH_ASSERT_OK(hc_workload_get(c, 0, &s));
  CU_ASSERT_STRING_EQUAL(s.name, "goodwl");
  CU_ASSERT_PTR_NOT_NULL(strstr(s.path, "/p1/good.so"));
  /* A backend starts when first needed: the one whose init fails loads,
   * stays listed with the reason as its status, and shows no device. */
  CU_ASSERT_EQUAL_FATAL(hc_backend_count(c), 1);
  TH_ASSERT_OK(hc_backend_get(c, 0, &s));
  CU_ASSERT_PTR_NOT_NULL(strstr(s.path, "initfail.so"));
  uint32_t idx;
  CU_ASSERT_EQUAL(hc_device_find(c, s.name, &idx), HC_ERR_NO_DEVICE);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "init failed: HC_ERR_DEVICE: no widget attached"));
  const char *status = hc_backend_status(c, 0);
  CU_ASSERT(status && strstr(status, "init failed: HC_ERR_DEVICE: no widget attached"));
  CU_ASSERT_EQUAL(hc_device_count(c), 0);
  CU_ASSERT_EQUAL(hc_device_find(c, "auto", &idx), HC_ERR_NO_DEVICE);
  CU_ASSERT_EQUAL(hc_device_find(c, "cpu", &idx), HC_ERR_NO_DEVICE);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "unknown backend 'cpu'"));
  hc_context_destroy(c);
}

static void test_env_path_and_default(void) {
  /* HC_PLUGIN_PATH is searched after the caller's directories. */
  setenv("HC_PLUGIN_PATH", dir2, 1);
  const char *dirs[1] = {dir1};
  hc_context_options_t o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.plugin_dirs = dirs;
  o.plugin_dir_count = 1;
  o.no_default_dirs = 1;
  hc_context_t *c = NULL;
  TH_ASSERT_OK(hc_context_create(&o, &c));
  expect_reason(c, "dup.so", "duplicate workload name 'goodwl'");
  hc_context_destroy(c);
  /* With the environment reversed, dup.so comes first and wins. */
  setenv("HC_PLUGIN_PATH", dir2, 1);
  o.plugin_dir_count = 0;
  o.plugin_dirs = NULL;
  TH_ASSERT_OK(hc_context_create(&o, &c));
  CU_ASSERT_EQUAL(hc_workload_count(c), 1);
  hc_plugin_summary_t s;
  TH_ASSERT_OK(hc_workload_get(c, 0, &s));
  CU_ASSERT_PTR_NOT_NULL(strstr(s.path, "/p2/dup.so"));
  hc_context_destroy(c);
  unsetenv("HC_PLUGIN_PATH");
  /* The default search finds the build tree's plugins next to the binary. */
  TH_ASSERT_OK(hc_context_create(NULL, &c));
  CU_ASSERT_TRUE(hc_backend_count(c) >= 1);
  uint32_t idx;
  TH_ASSERT_OK(hc_device_find(c, "cpu:0", &idx));
  CU_ASSERT_EQUAL(hc_device_find(c, "cpu:7", &idx), HC_ERR_NO_DEVICE);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "device 'cpu:7' does not exist"));
  CU_ASSERT_EQUAL(hc_device_find(c, "cpu:x", &idx), HC_ERR_INVALID_ARG);
  hc_context_destroy(c);
}

static void test_many_contexts(void) {
  /* Contexts are independent; creating and destroying many leaks nothing
   * and libltdl's reference counting holds. */
  for (int i = 0; i < 20; i++) {
    hc_context_t *a = make_ctx(), *b = make_ctx();
    CU_ASSERT_EQUAL(hc_workload_count(a), 1);
    hc_context_destroy(a);
    CU_ASSERT_EQUAL(hc_workload_count(b), 1);
    hc_context_destroy(b);
  }
}

/* Backends start when first needed: a run on cpu:0 starts the cpu backend
 * alone, so a backend that would abort the process in its init (loaded
 * here without the probe, which would have refused it) does not take the
 * run with it. Listing every device starts every backend: with the probe
 * on, that backend is refused as crashed and --list works. */
static void test_backends_start_when_needed(void) {
  char cmd[9000], out[8192], err[16384];
  snprintf(cmd, sizeof cmd,
           "HC_PLUGIN_PROBE=0 HC_LOG=3 %s/bin/hcrun --plugin-dir=%s --device=cpu:0 --workload=simpson n=101",
           th_build_dir(), dir3);
  int rc = th_run(cmd, out, sizeof out, err, sizeof err);
  if (rc != 0) fprintf(stderr, "\n%s: exit %d\n%s", cmd, rc, err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "backend 'cpu' started"));
  CU_ASSERT_PTR_NULL(strstr(err, "backend 'abrtinit' started"));
  CU_ASSERT_PTR_NULL(strstr(err, "backend 'opencl' started"));
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --plugin-dir=%s --list", th_build_dir(), dir3);
  rc = th_run(cmd, out, sizeof out, err, sizeof err);
  if (rc != 0) fprintf(stderr, "\n%s: exit %d\n%s%s", cmd, rc, out, err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "abrtinit.so"));
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("loader", setup, NULL);
  CU_ADD_TEST(s, test_rejections);
  CU_ADD_TEST(s, test_env_path_and_default);
  CU_ADD_TEST(s, test_many_contexts);
  CU_ADD_TEST(s, test_backends_start_when_needed);
}

TH_MAIN(register_tests)
