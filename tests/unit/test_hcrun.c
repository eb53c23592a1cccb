/* hcrun as a spawned process: outputs, JSON validity, exit codes. Uses the
 * test plugins (probe, saxpy) through HC_PLUGIN_PATH. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

static char out[1 << 18], err[1 << 16];

/* Runs hcrun with args; returns its exit code. */
static int hcrun(const char *args) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "HC_PLUGIN_PATH=%s/test-plugins %s/bin/hcrun %s", th_build_dir(), th_build_dir(), args);
  return th_run(cmd, out, sizeof out, err, sizeof err);
}

static json_t *parse_out(void) {
  json_error_t e;
  json_t *j = json_loads(out, 0, &e);
  if (!j) fprintf(stderr, "invalid JSON (%s at line %d): %.500s\n", e.text, e.line, out);
  return j;
}

static void test_version_and_usage(void) {
  CU_ASSERT_EQUAL(hcrun("--version"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "hcrun 0.1.0"));
  CU_ASSERT_EQUAL(hcrun("--help"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "exit codes: 0 ok, 1 verification failed, 2 usage error"));
  CU_ASSERT_EQUAL(hcrun(""), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "nothing to do"));
  CU_ASSERT_EQUAL(hcrun("--bogus"), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown option '--bogus'"));
  CU_ASSERT_EQUAL(hcrun("--workload=probe stray"), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "unexpected argument 'stray'"));
  CU_ASSERT_EQUAL(hcrun("--workload=probe --repeat=0"), 2);
  CU_ASSERT_EQUAL(hcrun("--workload=probe --backend=cpu --device=cpu:0"), 2);
  CU_ASSERT_EQUAL(hcrun("--workload=probe --backend=cpu:0"), 2);
  CU_ASSERT_EQUAL(hcrun("--list --workload=probe"), 2);
}

static void test_list(void) {
  CU_ASSERT_EQUAL(hcrun("--list"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "Backends:"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "cpu:0"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "serial:0"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "probe"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "Workloads x devices:"));
  CU_ASSERT_EQUAL(hcrun("--list --json"), 0);
  json_t *j = parse_out();
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  json_t *backends = json_object_get(j, "backends");
  CU_ASSERT_TRUE(json_is_array(backends));
  int found_cpu = 0;
  size_t i;
  json_t *b;
  json_array_foreach(backends, i, b) {
    if (!strcmp(json_string_value(json_object_get(b, "name")), "cpu")) {
      found_cpu = 1;
      json_t *d = json_array_get(json_object_get(b, "devices"), 0);
      CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(d, "id")), "cpu:0");
      CU_ASSERT_TRUE(json_integer_value(json_object_get(d, "compute_units")) >= 1);
    }
  }
  CU_ASSERT_TRUE(found_cpu);
  CU_ASSERT_TRUE(json_is_array(json_object_get(j, "matrix")));
  CU_ASSERT_TRUE(json_is_array(json_object_get(j, "rejected")));
  json_decref(j);
}

static void test_workload_help(void) {
  CU_ASSERT_EQUAL(hcrun("--workload=probe --help"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "count        int     default 10         in [1, 1e+09]"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "one of fast|slow|exact"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "Outputs:"));
  CU_ASSERT_EQUAL(hcrun("--workload=nosuch --help"), 3);
  /* a range only where one is checked: never "in [0, 0]" for a string */
  CU_ASSERT_EQUAL(hcrun("--workload=jacobi --help"), 0);
  const char *f = strstr(out, "\n  f            string  default sin");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  CU_ASSERT_PTR_NULL(strstr(out, "in [0, 0]"));
  CU_ASSERT(strchr(f + 1, '\n') < strstr(f, " in [") || !strstr(f, " in ["));
}

static void test_run_and_json(void) {
  CU_ASSERT_EQUAL(hcrun("--workload=probe --device=cpu count=5 --verify"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "workload       probe on cpu:0"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "verification   PASSED"));
  CU_ASSERT_EQUAL(hcrun("--workload=probe --backend=serial --json --repeat=3 grid=2x3"), 0);
  json_t *j = parse_out();
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(j, "device"), "id")), "serial:0");
  CU_ASSERT_EQUAL(json_array_size(json_object_get(j, "runs")), 3);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(j, "params"), "grid")), "2x3");
  json_t *m = json_object_get(json_object_get(j, "metrics"), "grid_rank");
  CU_ASSERT_DOUBLE_EQUAL(json_real_value(json_object_get(m, "value")), 2, 0);
  CU_ASSERT_TRUE(json_is_null(json_object_get(json_object_get(j, "verification"), "passed")));
  json_decref(j);
  /* --device=auto resolves to some device and runs. */
  CU_ASSERT_EQUAL(hcrun("--workload=saxpy --device=auto n=1000 --verify"), 0);
}

static void test_exit_codes(void) {
  CU_ASSERT_EQUAL(hcrun("--workload=probe count=0"), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "parameter count=0: out of range"));
  CU_ASSERT_EQUAL(hcrun("--workload=probe colour=red"), 2);
  CU_ASSERT_EQUAL(hcrun("--workload=probe fail=param"), 2);
  CU_ASSERT_EQUAL(hcrun("--workload=nosuch"), 3);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown workload 'nosuch'"));
  CU_ASSERT_EQUAL(hcrun("--workload=probe --device=cpu:3"), 3);
  CU_ASSERT_EQUAL(hcrun("--workload=probe --backend=warp9"), 3);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown backend 'warp9'"));
  CU_ASSERT_EQUAL(hcrun("--workload=probe fail=verify --verify"), 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "verification   FAILED"));
  CU_ASSERT_EQUAL(hcrun("--workload=probe fail=verify"), 0); /* not asked to verify */
  CU_ASSERT_EQUAL(hcrun("--workload=probe fail=runtime"), 4);
  CU_ASSERT_EQUAL(hcrun("--workload=probe fail=runtime --json"), 4);
  json_t *j = parse_out();
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  json_t *e = json_object_get(j, "error");
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(e, "status")), "HC_ERR_DEVICE");
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(e, "exit_code")), 4);
  json_decref(j);
  CU_ASSERT_EQUAL(hcrun("--workload=probe --plugin-dir=/nonexistent"), 0);
}

static void test_output_dir(void) {
  char dir[4200], args[8192], file[4400];
  snprintf(dir, sizeof dir, "%s/out/nested", th_tmpdir());
  snprintf(args, sizeof args, "--workload=probe grid=4x4 --output=%s", dir);
  CU_ASSERT_EQUAL(hcrun(args), 0);
  snprintf(file, sizeof file, "%s/grid.npy", dir);
  hc_dtype_t dt;
  uint32_t rank;
  int64_t shape[4];
  void *data = NULL;
  TH_ASSERT_OK(hc_npy_read(file, &dt, &rank, shape, &data));
  CU_ASSERT_EQUAL(rank, 2);
  CU_ASSERT_DOUBLE_EQUAL(((double *)data)[15], 15, 0);
  free(data);
  /* A bad parameter writes nothing, not even the directory. */
  snprintf(dir, sizeof dir, "%s/out-bad", th_tmpdir());
  snprintf(args, sizeof args, "--workload=probe count=-4 --output=%s", dir);
  CU_ASSERT_EQUAL(hcrun(args), 2);
  struct stat st;
  CU_ASSERT_NOT_EQUAL(stat(dir, &st), 0);
}

/* The JSON document after turning each \udcXX escape into \u00XX (which
 * jansson reads; it refuses a lone surrogate), so the rest can be checked. */
static json_t *parse_escaped(void) {
  for (char *p = out; (p = strstr(p, "\\udc")) != NULL; p += 4) memcpy(p + 2, "00", 2);
  return parse_out();
}

/* Paths are bytes: an --output directory, an input file and the message
 * about a file, with bytes that are not UTF-8 (Latin-1 e9, ff) beside a
 * UTF-8 e-acute, reach the JSON document whole, each invalid byte as the
 * escape \udcXX (Python's surrogateescape; README). They used to vanish:
 * "outputs": [], no params entry, no "message". */
static void test_json_bytes(void) {
  char dir[4200], args[8192], in[4400], want[4400];
  snprintf(dir, sizeof dir, "%s/out\xe9\xff-\xc3\xa9", th_tmpdir());
  snprintf(args, sizeof args, "--workload=probe grid=4x4 --json --output='%s'", dir);
  CU_ASSERT_EQUAL(hcrun(args), 0);
  snprintf(want, sizeof want, "\"%s/out\\udce9\\udcff-\xc3\xa9/grid.npy\"", th_tmpdir());
  CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
  json_t *j = parse_escaped();
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  CU_ASSERT_EQUAL(json_array_size(json_object_get(j, "outputs")), 1);
  json_decref(j);
  /* the text report writes the bytes themselves */
  snprintf(args, sizeof args, "--workload=probe grid=4x4 --output='%s'", dir);
  CU_ASSERT_EQUAL(hcrun(args), 0);
  snprintf(want, sizeof want, "%s/grid.npy", dir);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, want));

  /* an input path in params */
  snprintf(in, sizeof in, "%s/in\xe9.npy", dir);
  static const double v[5] = {1, 1, 1, 1, 1};
  int64_t shape[1] = {5};
  TH_ASSERT_OK(hc_npy_write(in, HC_F64, 1, shape, v));
  snprintf(args, sizeof args, "--workload=simpson --backend=cpu --json 'input=%s'", in);
  CU_ASSERT_EQUAL(hcrun(args), 0);
  snprintf(want, sizeof want, "\"input\": \"%s/out\\udce9\\udcff-\xc3\xa9/in\\udce9.npy\"", th_tmpdir());
  CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
  j = parse_escaped();
  CU_ASSERT_PTR_NOT_NULL(j);
  json_decref(j);

  /* an error about such a file keeps its message */
  snprintf(args, sizeof args, "--workload=simpson --backend=cpu --json 'input=%s/none\xe9.npy'", dir);
  CU_ASSERT_EQUAL(hcrun(args), 2);
  j = parse_escaped();
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
  CU_ASSERT_PTR_NOT_NULL(msg);
  CU_ASSERT_PTR_NOT_NULL(msg ? strstr(msg, "none\xc3\xa9.npy: cannot open") : NULL); /* \u00e9 read back */
  json_decref(j);
}

/* hcrun --list with HC_PLUGIN_PATH set to path (run in dir). */
static int list_with_path(const char *path, const char *dir) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "cd '%s' && HC_PLUGIN_PATH='%s' %s/bin/hcrun --list", dir, path, th_build_dir());
  return th_run(cmd, out, sizeof out, err, sizeof err);
}

/* Plugin directories are trusted as the kernel cache is: one that another
 * user could write (directly or through a link), or a relative entry, is
 * refused and listed with the reason, and its plugins are not loaded; so is
 * a plugin file that others may write. */
static void test_untrusted_plugin_dirs_refused(void) {
  char open_dir[4200], link[4200], good[4200], cmd[32768];
  snprintf(open_dir, sizeof open_dir, "%s/world", th_tmpdir());
  snprintf(link, sizeof link, "%s/link", th_tmpdir());
  snprintf(good, sizeof good, "%s/good", th_tmpdir());
  snprintf(cmd, sizeof cmd,
           "mkdir -p '%s' '%s' && cp %s/test-plugins/test-probe.so '%s' && "
           "cp %s/test-plugins/test-probe.so '%s' && chmod 0777 '%s' && ln -sfn '%s' '%s'",
           open_dir, good, th_build_dir(), open_dir, th_build_dir(), good, open_dir, open_dir, link);
  CU_ASSERT_EQUAL_FATAL(th_run(cmd, NULL, 0, NULL, 0), 0);
  /* The private copy loads: the check passes what it should. */
  CU_ASSERT_EQUAL(list_with_path(good, "/"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "  probe "));
  CU_ASSERT_PTR_NULL(strstr(out, "refused"));
  /* World-writable, or reached through a link: refused, named, not loaded. */
  const char *ways[] = {open_dir, link};
  for (int i = 0; i < 2; i++) {
    CU_ASSERT_EQUAL(list_with_path(ways[i], "/"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "plugin directory refused:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "is writable by others (mode 0777)"));
    CU_ASSERT_PTR_NULL(strstr(out, "  probe "));
  }
  /* A relative entry: refused with a message, even where it exists. */
  CU_ASSERT_EQUAL(list_with_path("good", th_tmpdir()), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "a relative HC_PLUGIN_PATH entry"));
  CU_ASSERT_PTR_NULL(strstr(out, "  probe "));
  /* A plugin file others may write, in a private directory. */
  snprintf(cmd, sizeof cmd, "chmod 0666 '%s/test-probe.so'", good);
  CU_ASSERT_EQUAL(th_run(cmd, NULL, 0, NULL, 0), 0);
  CU_ASSERT_EQUAL(list_with_path(good, "/"), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "test-probe.so: not trusted:"));
  CU_ASSERT_PTR_NULL(strstr(out, "  probe "));
}

/* The plugins beside the libhc in use (the build tree's own) come before
 * the configured install directory, and --list says where each entry of
 * the search path came from. */
static void test_search_order(void) {
  CU_ASSERT_EQUAL(hcrun("--list --json"), 0);
  json_t *doc = parse_out();
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  json_t *sp = json_object_get(doc, "search_path");
  CU_ASSERT_TRUE_FATAL(json_is_array(sp));
  char own[4200];
  snprintf(own, sizeof own, "%s/lib/hc/plugins", th_build_dir());
  char real[4200];
  CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(own, real));
  long at_own = -1, at_install = -1, at_env = -1;
  for (size_t i = 0; i < json_array_size(sp); i++) {
    json_t *e = json_array_get(sp, i);
    const char *dir = json_string_value(json_object_get(e, "dir"));
    const char *src = json_string_value(json_object_get(e, "source"));
    if (!dir || !src) continue;
    if (!strcmp(dir, real)) at_own = (long)i;
    if (!strcmp(src, "install directory")) at_install = (long)i;
    if (!strcmp(src, "HC_PLUGIN_PATH")) at_env = (long)i;
  }
  CU_ASSERT_EQUAL(at_env, 0);
  CU_ASSERT_TRUE(at_own > at_env);
  if (at_install >= 0) CU_ASSERT_TRUE(at_own < at_install);
  json_decref(doc);
}

/* A one-core backend whose device is of type OTHER does not take
 * --device=auto from the devices hc already had (the CPU here, a GPU where
 * there is one); --list says what auto picks per workload. */
static void test_auto_prefers_cpu_over_other(void) {
  char dir[4200], cmd[32768], want[64] = "";
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --list --json", th_build_dir());
  CU_ASSERT_EQUAL_FATAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  json_t *doc = parse_out();
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  const char *before = json_string_value(json_object_get(json_object_get(doc, "auto"), "simpson"));
  CU_ASSERT_PTR_NOT_NULL(before);
  snprintf(want, sizeof want, "%s", before ? before : "");
  json_decref(doc);
  snprintf(dir, sizeof dir, "%s/other", th_tmpdir());
  snprintf(cmd, sizeof cmd,
           "mkdir -p '%s' && cc -std=c11 -shared -fPIC -fvisibility=hidden -DSERIAL_DEVICE_TYPE=HC_DEVICE_OTHER "
           "-I%s/include -o '%s/toy.so' %s/tests/plugins/serial_backend.c -L%s/lib -lhc",
           dir, HC_SOURCE_DIR, dir, HC_SOURCE_DIR, th_build_dir());
  CU_ASSERT_EQUAL_FATAL(th_run(cmd, NULL, 0, err, sizeof err), 0);
  snprintf(cmd, sizeof cmd, "HC_PLUGIN_PATH='%s' %s/bin/hcrun --list --json", dir, th_build_dir());
  CU_ASSERT_EQUAL_FATAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  doc = parse_out();
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  json_t *pick = json_object_get(json_object_get(doc, "auto"), "simpson");
  CU_ASSERT_TRUE(json_is_string(pick));
  if (json_is_string(pick) && strcmp(json_string_value(pick), want) != 0)
    fprintf(stderr, "auto picks %s for simpson, %s without the toy backend\n", json_string_value(pick), want);
  if (json_is_string(pick)) CU_ASSERT_STRING_EQUAL(json_string_value(pick), want);
  json_decref(doc);
  snprintf(cmd, sizeof cmd, "HC_PLUGIN_PATH='%s' %s/bin/hcrun --list", dir, th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "--device=auto picks:\n"));
  char line[128];
  snprintf(line, sizeof line, "  simpson    %s\n", want);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
  /* And a run with the default device lands there. */
  snprintf(cmd, sizeof cmd, "HC_PLUGIN_PATH='%s' %s/bin/hcrun --workload=simpson n=9x9x9 --json", dir, th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  snprintf(line, sizeof line, "\"%s\"", want);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
}

/* --input PORT=FILE binds a port for one run; everything about it is
 * checked before running and a bad one is a usage error (exit 2), as a bad
 * input file is through a workload's own file parameter. */
static void test_input_option(void) {
  char f3[1200], z3[1200], l1[1200], missing[1200], args[4096];
  snprintf(f3, sizeof f3, "%s/in-f64.npy", th_tmpdir());
  snprintf(z3, sizeof z3, "%s/in-c64.npy", th_tmpdir());
  snprintf(l1, sizeof l1, "%s/in-line.npy", th_tmpdir());
  snprintf(missing, sizeof missing, "%s/in-missing.npy", th_tmpdir());
  double v[125];
  for (int i = 0; i < 125; i++) v[i] = 2.0;
  int64_t s3[3] = {5, 5, 5}, s1[1] = {5};
  TH_ASSERT_OK(hc_npy_write(f3, HC_F64, 3, s3, v));
  TH_ASSERT_OK(hc_npy_write(z3, HC_C64, 3, s3, v)); /* 125 c64 values: 1000 bytes, as 125 doubles */
  TH_ASSERT_OK(hc_npy_write(l1, HC_F64, 1, s1, v));
  /* spacing 1 (no .grid side file): 2 over a 4x4x4 box */
  snprintf(args, sizeof args, "--workload=simpson --device=cpu --input f=%s --json", f3);
  CU_ASSERT_EQUAL(hcrun(args), 0);
  json_t *j = parse_out();
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  json_t *m = json_object_get(json_object_get(j, "metrics"), "integral");
  CU_ASSERT_DOUBLE_EQUAL(json_real_value(json_object_get(m, "value")), 128.0, 1e-12);
  /* the built-in function's parameters do not apply: not reported */
  json_t *params = json_object_get(j, "params");
  CU_ASSERT_PTR_NULL(json_object_get(params, "func"));
  CU_ASSERT_PTR_NULL(json_object_get(params, "n"));
  CU_ASSERT_PTR_NULL(json_object_get(params, "box"));
  CU_ASSERT_PTR_NOT_NULL(json_object_get(params, "variant"));
  json_decref(j);
  snprintf(args, sizeof args, "--workload=simpson --device=cpu --input f=%s", f3);
  CU_ASSERT_EQUAL(hcrun(args), 0);
  CU_ASSERT_PTR_NULL(strstr(out, "func="));
  CU_ASSERT_PTR_NULL(strstr(out, "n=129x129x129"));
  CU_ASSERT_EQUAL(hcrun("--workload=simpson --device=cpu n=9"), 0); /* they apply here */
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "func=gauss n=9 box=0:1"));
  /* a port-fed pipeline stage: the same */
  CU_ASSERT_EQUAL(hcrun("--pipeline='jacobi dim=3 n=9 @cpu | simpson' --json"), 0);
  j = parse_out();
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  params = json_object_get(json_array_get(json_object_get(j, "stages"), 1), "params");
  CU_ASSERT_PTR_NOT_NULL(params);
  CU_ASSERT_PTR_NULL(json_object_get(params, "func"));
  CU_ASSERT_PTR_NULL(json_object_get(params, "n"));
  json_decref(j);
  snprintf(args, sizeof args, "--workload=simpson --device=cpu --input=f=%s", missing);
  CU_ASSERT_EQUAL(hcrun(args), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot open"));
  /* the same file through simpson's own parameter: the same exit code */
  snprintf(args, sizeof args, "--workload=simpson --device=cpu input=%s", missing);
  CU_ASSERT_EQUAL(hcrun(args), 2);
  snprintf(args, sizeof args, "--workload=simpson --device=cpu --input g=%s", f3);
  CU_ASSERT_EQUAL(hcrun(args), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "has no input port 'g' (its inputs: f)"));
  snprintf(args, sizeof args, "--workload=simpson --device=cpu --input f=%s", z3);
  CU_ASSERT_EQUAL(hcrun(args), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "does not take dtype c64"));
  snprintf(args, sizeof args, "--workload=jacobi --device=cpu --input f=%s", l1);
  CU_ASSERT_EQUAL(hcrun(args), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "takes rank 2..3, got rank 1"));
  snprintf(args, sizeof args, "--workload=simpson --device=cpu --input f=%s --json", th_tmpdir());
  CU_ASSERT_EQUAL(hcrun(args), 2);
  j = parse_out();
  CU_ASSERT_PTR_NOT_NULL_FATAL(j);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(j, "error"), "exit_code")), 2);
  json_decref(j);
  CU_ASSERT_EQUAL(hcrun("--workload=simpson --input=f"), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "expected PORT=FILE.npy"));
  CU_ASSERT_EQUAL(hcrun("--pipeline='simpson' --input=f=x.npy"), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "--input goes with --workload"));
}

/* A bad HC_LOG is an error naming the variable and what it takes, in the
 * library (hc_context_create) and so in hcrun (exit 2). */
static void test_bad_log_setting(void) {
  setenv("HC_LOG", "verbose", 1);
  hc_context_t *c = NULL;
  CU_ASSERT_EQUAL(hc_context_create(NULL, &c), HC_ERR_PARAM);
  CU_ASSERT_PTR_NULL(c);
  CU_ASSERT_PTR_NOT_NULL(
      strstr(hc_last_error(), "HC_LOG=verbose: give a whole number from 0 to 3 or error, warn, info or debug"));
  CU_ASSERT_EQUAL(hcrun("--list"), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "HC_LOG=verbose"));
  setenv("HC_LOG", "WARN", 1);
  CU_ASSERT_EQUAL(hcrun("--workload=probe"), 0);
  unsetenv("HC_LOG");
}

/* Out of memory on a CPU OpenCL device (PoCL), whose memory is the host's:
 * exit 4 naming the size, not PoCL's assertion aborting the process. (Not
 * under sanitizers or valgrind, which an address-space limit breaks.) */
static void test_opencl_cpu_out_of_memory(void) {
  if (th_slow_tool()) return;
  if (hcrun("--list") != 0 || !strstr(out, "opencl:0")) {
    th_skip("no OpenCL device");
    return;
  }
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "ulimit -v 400000; HC_PLUGIN_PATH=%s/test-plugins %s/bin/hcrun --backend=opencl --workload=jacobi "
           "n=4000x4000 dtype=f64 iters=10",
           th_build_dir(), th_build_dir());
  hc_device_t *d = th_device("opencl");
  if (!d || hc_device_info(d)->type != HC_DEVICE_CPU) return; /* a GPU's memory is not the host's */
  /* The same run without the limit first, so that PoCL's kernel cache is
   * warm: PoCL's compiler itself can crash under an address-space limit,
   * which is not what this checks. */
  CU_ASSERT_EQUAL(th_run(cmd + strlen("ulimit -v 400000; "), out, sizeof out, err, sizeof err), 0);
  int rc = th_run(cmd, out, sizeof out, err, sizeof err);
  if (rc == 3 && strstr(err, "unknown backend 'opencl'")) {
    /* the OpenCL loader with all the host's drivers (a GPU's among them)
     * can need more address space than the limit: not what this checks */
    th_skip("the OpenCL backend does not load under the address-space limit here");
    return;
  }
  if (rc != 4) fprintf(stderr, "exit %d: %s\n", rc, err);
  CU_ASSERT_EQUAL(rc, 4);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "out of device memory: 128000000 bytes"));
}

/* When OpenCL finds no device, --list says what in the environment is the
 * likely cause: a PoCL cache directory that cannot be written (an
 * unwritable HOME), an address-space limit. */
static void test_opencl_unavailable_says_why(void) {
  if (th_slow_tool()) return;
  if (hcrun("--list") != 0 || !strstr(out, "opencl:0")) {
    th_skip("no OpenCL device");
    return;
  }
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "env -u XDG_CACHE_HOME -u POCL_CACHE_DIR HOME=/proc/hc-no-home %s/bin/hcrun --list",
           th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  if (!strstr(out, "opencl:0")) { /* PoCL did not start: the message says why */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "cache directory /proc/hc-no-home/.cache/pocl cannot be created or written"));
  }
  snprintf(cmd, sizeof cmd, "ulimit -v 150000; %s/bin/hcrun --list", th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, out, sizeof out, err, sizeof err), 0);
  if (!strstr(out, "opencl:0")) {
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "an address-space limit of"));
  }
}

/* A single-valued option given twice is a usage error naming it. */
static void test_options_given_twice(void) {
  CU_ASSERT_EQUAL(hcrun("--workload=probe --workload=saxpy"), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "--workload given twice (--workload=probe and --workload=saxpy)"));
  CU_ASSERT_EQUAL(hcrun("--workload=probe --output=a --output=b"), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "--output given twice"));
  CU_ASSERT_EQUAL(hcrun("--workload=probe --repeat=2 --repeat=3"), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "--repeat given twice"));
  CU_ASSERT_EQUAL(hcrun("--pipeline=probe --pipeline=saxpy"), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "--pipeline given twice"));
  CU_ASSERT_EQUAL(hcrun("--workload=probe --device=cpu --device=cpu:0"), 2);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("hcrun", NULL, NULL);
  CU_ADD_TEST(s, test_version_and_usage);
  CU_ADD_TEST(s, test_list);
  CU_ADD_TEST(s, test_workload_help);
  CU_ADD_TEST(s, test_run_and_json);
  CU_ADD_TEST(s, test_json_bytes);
  CU_ADD_TEST(s, test_exit_codes);
  CU_ADD_TEST(s, test_output_dir);
  CU_ADD_TEST(s, test_untrusted_plugin_dirs_refused);
  CU_ADD_TEST(s, test_search_order);
  CU_ADD_TEST(s, test_auto_prefers_cpu_over_other);
  CU_ADD_TEST(s, test_input_option);
  CU_ADD_TEST(s, test_options_given_twice);
  CU_ADD_TEST(s, test_bad_log_setting);
  CU_ADD_TEST(s, test_opencl_cpu_out_of_memory);
  CU_ADD_TEST(s, test_opencl_unavailable_says_why);
}

TH_MAIN(register_tests)
