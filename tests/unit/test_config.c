/* The configuration table and its reader (include/hc/config.h): every type's
 * parsing, defaults and messages; a bad value fails hc_context_create and
 * hcrun (exit 2) naming the variable; a plugin's own variable; docs/env.md
 * against the table; no HC_* variable read around the reader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void expect_rejected(const char *name, const char *value, const char *accepted) {
  setenv(name, value, 1);
  long long i = 0;
  double d = 0;
  const char *s = NULL;
  int sh[3];
  const hc_config_var_t *v = hc_config_find(name);
  CU_ASSERT_PTR_NOT_NULL_FATAL(v);
  hc_status_t st = v->type == HC_CONFIG_DOUBLE   ? hc_config_double(name, &d)
                   : v->type == HC_CONFIG_SHAPE  ? hc_config_shape(name, sh)
                   : v->type == HC_CONFIG_STRING ? hc_config_str(name, &s)
                                                 : hc_config_int(name, &i);
  CU_ASSERT_EQUAL(st, HC_ERR_PARAM);
  char want[128];
  snprintf(want, sizeof want, "%s=%s: ", name, value);
  const char *msg = hc_last_error();
  if (!strstr(msg, want) || !strstr(msg, accepted)) fprintf(stderr, "message '%s'\n", msg);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, want));
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, accepted));
  /* the same value fails the whole table's check */
  CU_ASSERT_EQUAL(hc_config_check(), HC_ERR_PARAM);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), want));
  unsetenv(name);
}

static void test_types(void) {
  long long i = -7;
  double d = 0;
  const char *s = NULL;
  int sh[3] = {0, 0, 0};
  /* unset: the default, or the caller's value when there is none */
  unsetenv("HC_CACHE");
  CU_ASSERT_EQUAL(hc_config_int("HC_CACHE", &i), HC_OK);
  CU_ASSERT_EQUAL(i, 1);
  i = -7;
  unsetenv("HC_CPU_THREADS");
  CU_ASSERT_EQUAL(hc_config_int("HC_CPU_THREADS", &i), HC_OK);
  CU_ASSERT_EQUAL(i, -7);
  setenv("HC_CPU_THREADS", "", 1); /* empty is unset */
  CU_ASSERT_EQUAL(hc_config_int("HC_CPU_THREADS", &i), HC_OK);
  CU_ASSERT_EQUAL(i, -7);
  /* each type */
  static const struct {
    const char *name, *value;
    long long want;
  } ints[] = {{"HC_CACHE", "off", 0},
              {"HC_CACHE", "Yes", 1},
              {"HC_CACHE", "0", 0},
              {"HC_CPU_THREADS", "3", 3},
              {"HC_LOG", "debug", 3},
              {"HC_LOG", "1", 1},
              {"HC_CUDA_STAGING", "4M", 4 << 20},
              {"HC_CUDA_STAGING", "off", 0},
              {"HC_CUDA_STAGING", "on", 1},
              {"HC_CUDA_STAGE_CHUNK", "256k", 256 << 10},
              {"HC_GRID_PLANE_ORDER", "forward", 1}};
  for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
    setenv(ints[k].name, ints[k].value, 1);
    i = -7;
    CU_ASSERT_EQUAL(hc_config_int(ints[k].name, &i), HC_OK);
    if (i != ints[k].want) fprintf(stderr, "%s=%s read as %lld\n", ints[k].name, ints[k].value, i);
    CU_ASSERT_EQUAL(i, ints[k].want);
    CU_ASSERT_EQUAL(hc_config_check(), HC_OK);
    unsetenv(ints[k].name);
  }
  setenv("HC_PLUGIN_PROBE_TIMEOUT", "2.5", 1);
  CU_ASSERT_EQUAL(hc_config_double("HC_PLUGIN_PROBE_TIMEOUT", &d), HC_OK);
  CU_ASSERT_DOUBLE_EQUAL(d, 2.5, 0);
  unsetenv("HC_PLUGIN_PROBE_TIMEOUT");
  CU_ASSERT_EQUAL(hc_config_double("HC_PLUGIN_PROBE_TIMEOUT", &d), HC_OK);
  CU_ASSERT_DOUBLE_EQUAL(d, 10, 0);
  setenv("HC_GRID_VECTOR", "8x2x3", 1);
  CU_ASSERT_EQUAL(hc_config_shape("HC_GRID_VECTOR", sh), HC_OK);
  CU_ASSERT(sh[0] == 8 && sh[1] == 2 && sh[2] == 3);
  setenv("HC_GRID_VECTOR", "off", 1);
  CU_ASSERT_EQUAL(hc_config_shape("HC_GRID_VECTOR", sh), HC_OK);
  CU_ASSERT(sh[0] == 0 && sh[1] == 0 && sh[2] == 0);
  /* unset without a default: the caller's value (the grid's tuning row) stays */
  unsetenv("HC_GRID_VECTOR");
  sh[0] = 32, sh[1] = 4, sh[2] = 4;
  CU_ASSERT_EQUAL(hc_config_shape("HC_GRID_VECTOR", sh), HC_OK);
  CU_ASSERT(sh[0] == 32 && sh[1] == 4 && sh[2] == 4);
  CU_ASSERT_EQUAL(hc_config_str("HC_GRID_CC", &s), HC_OK);
  CU_ASSERT_STRING_EQUAL(s, "cc");
  /* the wrong reader, an unknown name */
  CU_ASSERT_EQUAL(hc_config_shape("HC_CACHE", sh), HC_ERR_INVALID_ARG);
  CU_ASSERT_EQUAL(hc_config_int("HC_NO_SUCH_VARIABLE", &i), HC_ERR_INVALID_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "HC_NO_SUCH_VARIABLE"));
  CU_ASSERT_PTR_NULL(hc_config_at(hc_config_count()));
}

/* A value outside what a variable accepts is an error naming the variable,
 * the value and the accepted values. */
static void test_rejected(void) {
  expect_rejected("HC_CPU_THREADS", "0", "from 1 to 1024");
  expect_rejected("HC_CPU_THREADS", "4x", "from 1 to 1024");
  expect_rejected("HC_LOG", "loud", "error, warn, info or debug");
  expect_rejected("HC_CACHE", "maybe", "0, off, no, false");
  expect_rejected("HC_PLUGIN_PROBE_TIMEOUT", "0", "from 0.001 to 3600");
  expect_rejected("HC_CUDA_STAGE_CHUNK", "1k", "from 4096");
  expect_rejected("HC_CUDA_STAGING", "-1", "or off or on");
  expect_rejected("HC_CUDA_STAGE_THREADS", "65", "from 1 to 64");
  expect_rejected("HC_GRID_STENCIL", "32x8", "BXxBYxZ");
  expect_rejected("HC_GRID_POINT", "64x64x1", "<= 1024 items");
  expect_rejected("HC_GRID_PLANE_ORDER", "backward", "alternate or forward");
}

/* HC_CPU_THREADS=0 once removed the cpu backend without a word: now the
 * context fails, and hcrun exits 2 with the message. */
static void test_context_and_hcrun(void) {
  setenv("HC_CPU_THREADS", "0", 1);
  hc_context_options_t o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  hc_context_t *ctx = (hc_context_t *)&o;
  CU_ASSERT_EQUAL(hc_context_create(&o, &ctx), HC_ERR_PARAM);
  CU_ASSERT_PTR_NULL(ctx);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "HC_CPU_THREADS=0"));
  unsetenv("HC_CPU_THREADS");
  char cmd[1024], out[8192], err[8192];
  snprintf(cmd, sizeof cmd, "HC_CPU_THREADS=0 '%s/bin/hcrun' --list", th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "HC_CPU_THREADS=0: give a whole number from 1 to 1024"));
  snprintf(cmd, sizeof cmd, "HC_CPU_THREADS=2 '%s/bin/hcrun' --device=cpu --workload=simpson func=poly n=33",
           th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
}

/* An out-of-tree plugin's own variable, read with the same rules. */
static void test_own_variable(void) {
  static const hc_config_var_t answer = {"HC_TEST_ANSWER",         HC_CONFIG_INT, HC_CONFIG_PUBLIC, "42", 1, 100, NULL,
                                         "a test plugin's setting"};
  long long v = 0;
  unsetenv("HC_TEST_ANSWER");
  CU_ASSERT_EQUAL(hc_config_var_int(&answer, &v), HC_OK);
  CU_ASSERT_EQUAL(v, 42);
  setenv("HC_TEST_ANSWER", "7", 1);
  CU_ASSERT_EQUAL(hc_config_var_int(&answer, &v), HC_OK);
  CU_ASSERT_EQUAL(v, 7);
  setenv("HC_TEST_ANSWER", "101", 1);
  CU_ASSERT_EQUAL(hc_config_var_int(&answer, &v), HC_ERR_PARAM);
  CU_ASSERT_EQUAL(v, 7);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "HC_TEST_ANSWER=101: give a whole number from 1 to 100"));
  unsetenv("HC_TEST_ANSWER");
  CU_ASSERT_PTR_NULL(hc_config_find("HC_TEST_ANSWER")); /* not in hc's table */
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
  if (buf) buf[n] = '\0';
  fclose(f);
  return buf;
}

/* docs/env.md holds one row per public and tuning variable, exactly as
 * the table gives it (name, type, default, accepted values, description),
 * and no other variable's row. */
static void test_doc_matches_table(void) {
  char *doc = slurp(HC_SOURCE_DIR "/docs/env.md");
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  static const char *const types[] = {"text", "boolean", "integer", "size", "number", "choice", "shape"};
  int listed = 0;
  for (uint32_t k = 0; k < hc_config_count(); k++) {
    const hc_config_var_t *v = hc_config_at(k);
    char head[96], row[1024], acc[400];
    snprintf(head, sizeof head, "| `%s` |", v->name);
    if (v->scope == HC_CONFIG_INTERNAL) {
      CU_ASSERT_PTR_NULL(strstr(doc, head));
      continue;
    }
    listed++;
    hc_config_accepted(v, acc, sizeof acc);
    snprintf(row, sizeof row, "| `%s` | %s | %s%s%s | %s | %s |\n", v->name, types[v->type], v->def ? "`" : "",
             v->def ? v->def : "unset", v->def ? "`" : "", v->type == HC_CONFIG_STRING ? "any text" : acc + 5, v->doc);
    if (!strstr(doc, row)) fprintf(stderr, "docs/env.md lacks the row\n%s", row);
    CU_ASSERT_PTR_NOT_NULL(strstr(doc, row));
  }
  int rows = 0;
  for (const char *p = doc; (p = strstr(p, "\n| `HC_")); p++) rows++;
  CU_ASSERT_EQUAL(rows, listed);
  free(doc);
}

/* Every HC_* variable is read through the reader: no getenv("HC_ in the
 * library, the plugins or the tools. */
static void test_one_reader(void) {
  char cmd[1024], out[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && grep -rn 'getenv(\"HC_' core plugins tools", HC_SOURCE_DIR);
  int rc = th_run(cmd, out, sizeof out, NULL, 0);
  if (rc != 1) fprintf(stderr, "raw reads:\n%s", out);
  CU_ASSERT_EQUAL(rc, 1);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("config", NULL, NULL);
  CU_ADD_TEST(s, test_types);
  CU_ADD_TEST(s, test_rejected);
  CU_ADD_TEST(s, test_context_and_hcrun);
  CU_ADD_TEST(s, test_own_variable);
  CU_ADD_TEST(s, test_doc_matches_table);
  CU_ADD_TEST(s, test_one_reader);
}

TH_MAIN(register_tests)
