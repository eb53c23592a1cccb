/* Plugins really are drop-in: the test workload (saxpy) and the test
 * backend (serial) are compiled here the way an outside author would —
 * the public headers and libhc only — into a temporary directory, found
 * through HC_PLUGIN_PATH, and then: saxpy runs on every device, and every
 * workload in the tree runs on the serial backend. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static char dir[4200], dir10[4300];
static char out[1 << 18], err[1 << 16];

static int compile_in(const char *where, const char *flags, const char *src, const char *name) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd,
           "cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden %s -I%s/include "
           "%s/tests/plugins/%s -o %s/%s.so -L%s/lib -lhc -lm",
           flags, HC_SOURCE_DIR, HC_SOURCE_DIR, src, where, name, th_build_dir());
  int rc = th_run(cmd, out, sizeof out, err, sizeof err);
  if (rc) fprintf(stderr, "%s\n%s\n", cmd, err);
  return rc;
}

static int compile(const char *src, const char *name) { return compile_in(dir, "", src, name); }

static int setup(void) {
  snprintf(dir, sizeof dir, "%s/dropin", th_tmpdir());
  snprintf(dir10, sizeof dir10, "%s/dropin-abi10", th_tmpdir());
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s'", dir, dir10);
  if (th_run(cmd, NULL, 0, NULL, 0)) return 1;
  return compile("saxpy_workload.c", "my-saxpy") || compile("serial_backend.c", "my-serial") ||
         compile_in(dir10, "-DHC_TEST_ABI10", "saxpy_workload.c", "saxpy-abi10") ||
         compile_in(dir10, "-DHC_TEST_ABI10", "serial_backend.c", "serial-abi10");
}

static int hcrun_in(const char *where, const char *args) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "HC_PLUGIN_PATH=%s timeout 300 %s/bin/hcrun %s", where, th_build_dir(), args);
  return th_run(cmd, out, sizeof out, err, sizeof err);
}

static int hcrun(const char *args) { return hcrun_in(dir, args); }

/* Plugins built with ABI 1.0's minor and table sizes (HC_*_SIZE_1_0,
 * smaller than today's backend table) load and run: the core reads only
 * the members their sizes cover. */
static void test_abi10_plugins(void) {
  CU_ASSERT_EQUAL(hcrun_in(dir10, "--list"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "serial:0"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "/dropin-abi10/serial-abi10.so"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "test workload: y = a*x + y")); /* only dir10 has it */
  CU_ASSERT_PTR_NULL(strstr(out, "smaller than ABI 1.0"));
  int rc = hcrun_in(dir10, "--workload=saxpy --device=serial:0 n=1001 --verify");
  if (rc) fprintf(stderr, "saxpy (ABI 1.0) on serial (ABI 1.0): exit %d: %s\n", rc, err);
  CU_ASSERT_EQUAL(rc, 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "verification   PASSED"));
}

static void test_listed(void) {
  CU_ASSERT_EQUAL(hcrun("--list"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "serial:0"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "saxpy"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "/dropin/my-serial.so"));
}

static json_t *list_json(void) {
  if (hcrun("--list --json") != 0) return NULL;
  return json_loads(out, 0, NULL);
}

static void test_saxpy_everywhere(void) {
  json_t *j = list_json();
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  size_t i, k;
  json_t *b, *d;
  int ran = 0;
  json_array_foreach(json_object_get(j, "backends"), i, b) {
    json_array_foreach(json_object_get(b, "devices"), k, d) {
      const char *id = json_string_value(json_object_get(d, "id"));
      char args[512];
      snprintf(args, sizeof args, "--workload=saxpy --device=%s n=100003 --verify", id);
      int rc = hcrun(args);
      if (rc) fprintf(stderr, "saxpy on %s: exit %d: %s\n", id, rc, err);
      CU_ASSERT_EQUAL(rc, 0);
      CU_ASSERT_PTR_NOT_NULL(strstr(out, "verification   PASSED"));
      ran++;
    }
  }
  CU_ASSERT_TRUE(ran >= 2); /* at least cpu:0 and serial:0 */
  json_decref(j);
}

/* Small, quick parameters for the tree's workloads; others run with their
 * defaults. A workload whose primary input is required is run behind the
 * saxpy test workload in a pipeline instead (see the pipeline tests). */
static const struct {
  const char *name, *args;
} small[] = {
    {"simpson", "n=17x17x17"}, {"jacobi", "n=17 iters=20"},    {"nbody", "n=64 steps=2"},
    {"bpm", "n=64 steps=20"},  {"multigrid", "n=17 cycles=2"},
};

static int needs_input(json_t *list, const char *w) {
  (void)list;
  char args[256];
  snprintf(args, sizeof args, "--workload=%s --help", w);
  if (hcrun(args) != 0) return 0;
  const char *in = strstr(out, "Inputs:");
  if (!in) return 0;
  const char *outp = strstr(in, "Outputs:");
  /* A required input is a port line without ", optional". */
  for (const char *p = strchr(in, '\n'); p && (!outp || p < outp); p = strchr(p + 1, '\n')) {
    const char *eol = strchr(p + 1, '\n');
    if (!eol) break;
    if (p[1] == ' ' && p[2] == ' ' && p[3] != ' ') {
      char line[512];
      size_t l = (size_t)(eol - p - 1) < sizeof line - 1 ? (size_t)(eol - p - 1) : sizeof line - 1;
      memcpy(line, p + 1, l);
      line[l] = '\0';
      if (!strstr(line, "optional")) return 1;
    }
  }
  return 0;
}

static void test_every_workload_on_serial(void) {
  json_t *j = list_json();
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  size_t i;
  json_t *w;
  json_array_foreach(json_object_get(j, "workloads"), i, w) {
    const char *name = json_string_value(json_object_get(w, "name"));
    if (needs_input(j, name)) {
      printf("\n  %s needs an input field: covered by the pipeline tests\n", name);
      continue;
    }
    const char *extra = "";
    for (size_t s = 0; s < sizeof small / sizeof small[0]; s++)
      if (!strcmp(small[s].name, name)) extra = small[s].args;
    char args[1024];
    snprintf(args, sizeof args, "--workload=%s --device=serial:0 %s", name, extra);
    int rc = hcrun(args);
    if (rc) fprintf(stderr, "%s on serial:0: exit %d: %s\n", name, rc, err);
    CU_ASSERT_EQUAL(rc, 0);
  }
  json_decref(j);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("dropin", setup, NULL);
  CU_ADD_TEST(s, test_listed);
  CU_ADD_TEST(s, test_saxpy_everywhere);
  CU_ADD_TEST(s, test_every_workload_on_serial);
  CU_ADD_TEST(s, test_abi10_plugins);
}

TH_MAIN(register_tests)
