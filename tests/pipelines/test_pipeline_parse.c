/* The pipeline text syntax: hc_pipeline_parse on good and malformed specs
 * (exact messages), arbitrary bytes (never a crash or a leak), and hcrun
 * --pipeline / --pipeline-file: exit code 2 and the message for every
 * malformed spec, nothing written to --output then, the text and --json
 * reports, and the files --output=DIR writes. */
#include <hc/pipeline.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define EXPECT_PARSE_ERROR(text, want_st, want_msg)                                                                \
  do {                                                                                                             \
    hc_pipeline_t *p_ = (hc_pipeline_t *)1;                                                                        \
    hc_status_t st_ = hc_pipeline_parse(th_context(), (text), &p_);                                                \
    if (st_ != (want_st) || strcmp(hc_last_error(), (want_msg)))                                                   \
      fprintf(stderr, "\n%s:%d: parse \"%s\"\n  expected %s: %s\n  got      %s: %s\n", __FILE__, __LINE__, (text), \
              hc_status_name(want_st), (want_msg), hc_status_name(st_), hc_last_error());                          \
    CU_ASSERT_EQUAL(st_, (want_st));                                                                               \
    CU_ASSERT_STRING_EQUAL(hc_last_error(), (want_msg));                                                           \
    CU_ASSERT_PTR_NULL(p_);                                                                                        \
  } while (0)

static hc_pipeline_t *parse_ok(const char *text) {
  hc_pipeline_t *p = NULL;
  hc_status_t st = hc_pipeline_parse(th_context(), text, &p);
  if (st != HC_OK) fprintf(stderr, "\nparse \"%s\": %s\n", text, hc_last_error());
  CU_ASSERT_EQUAL(st, HC_OK);
  return p;
}

static const char *param(const hc_pipeline_t *p, uint32_t stage, const char *name) {
  hc_job_t *j = hc_pipeline_stage_job(p, stage);
  for (uint32_t i = 0; i < hc_job_param_count(j); i++) {
    const char *n, *v;
    if (hc_job_param_get(j, i, &n, &v) == HC_OK && !strcmp(n, name)) return v;
  }
  return "(none)";
}

/* The binding into (stage, input), as "from.output" or "-". */
static const char *bound(const hc_pipeline_t *p, uint32_t stage, const char *input, char *buf, size_t n) {
  snprintf(buf, n, "-");
  for (uint32_t i = 0; i < hc_pipeline_binding_count(p); i++) {
    hc_pipeline_binding_t b;
    hc_pipeline_binding_get(p, i, &b);
    if (b.to == stage && !strcmp(b.input, input))
      snprintf(buf, n, "%d.%s%s", b.from + 1, b.output, b.is_default ? " (default)" : "");
  }
  return buf;
}

static void test_parse_good(void) {
  char b[64];
  hc_pipeline_t *p = parse_ok("saxpy n=10 dtype=f64 @cpu | scale factor='2.5' | reduce op=\"max\"");
  CU_ASSERT_EQUAL_FATAL(hc_pipeline_stage_count(p), 3);
  CU_ASSERT_STRING_EQUAL(param(p, 0, "n"), "10");
  CU_ASSERT_STRING_EQUAL(param(p, 1, "factor"), "2.5");
  CU_ASSERT_STRING_EQUAL(param(p, 2, "op"), "max");
  CU_ASSERT_STRING_EQUAL(hc_device_name(hc_pipeline_stage_device(p, 2)), "cpu:0");
  TH_ASSERT_OK(hc_pipeline_validate(p));
  CU_ASSERT_STRING_EQUAL(bound(p, 1, "in", b, sizeof b), "1.y (default)");
  CU_ASSERT_STRING_EQUAL(bound(p, 2, "in", b, sizeof b), "2.out (default)");
  hc_pipeline_destroy(p);

  /* One stage per line, comments, blank lines, '|' at the end of a line or
   * at the start of the next (not both: that is an empty stage);
   * quoted values keep blanks, '|', '#', '=' and '>'. */
  p = parse_ok("# a long chain\n"
               "probe label='a | b # c=d>e' grid=4x4 @cpu   # the source\n"
               "\n"
               "  scale factor=3 |\n"
               "reduce op=l2\n"
               "| abs2 probe.grid>in\n"
               "reduce 1.grid>in op=sum\n");
  CU_ASSERT_EQUAL_FATAL(hc_pipeline_stage_count(p), 5);
  CU_ASSERT_STRING_EQUAL(param(p, 0, "label"), "a | b # c=d>e");
  CU_ASSERT_STRING_EQUAL(param(p, 0, "grid"), "4x4");
  TH_ASSERT_OK(hc_pipeline_validate(p));
  CU_ASSERT_STRING_EQUAL(bound(p, 2, "in", b, sizeof b), "2.out (default)");
  CU_ASSERT_STRING_EQUAL(bound(p, 3, "in", b, sizeof b), "1.grid");
  CU_ASSERT_STRING_EQUAL(bound(p, 4, "in", b, sizeof b), "1.grid");
  TH_ASSERT_OK(hc_pipeline_run(p, 0));
  double v = 0;
  TH_ASSERT_OK(hc_field_read(hc_job_output(hc_pipeline_stage_job(p, 4), "value"), &v));
  CU_ASSERT_DOUBLE_EQUAL(v, 15.0 * 16 / 2, 0); /* sum of 0..15 */
  hc_pipeline_destroy(p);

  /* out>in binds from the previous stage; a stage name means the nearest
   * earlier stage running it. */
  p = parse_ok("saxpy n=4 @cpu | scale factor=2 | scale factor=3 | reduce scale.out>in");
  TH_ASSERT_OK(hc_pipeline_validate(p));
  CU_ASSERT_STRING_EQUAL(bound(p, 3, "in", b, sizeof b), "3.out");
  hc_pipeline_destroy(p);
  p = parse_ok("saxpy n=4 @cpu | scale | reduce out>in");
  TH_ASSERT_OK(hc_pipeline_validate(p));
  CU_ASSERT_STRING_EQUAL(bound(p, 2, "in", b, sizeof b), "2.out"); /* explicit: not "(default)" */
  hc_pipeline_destroy(p);
  EXPECT_PARSE_ERROR("saxpy n=4 @cpu | scale | reduce y>in", HC_ERR_PIPELINE,
                     "pipeline: stage 2 (scale) has no output 'y' (outputs: out)");
}

static void test_parse_bad_syntax(void) {
  EXPECT_PARSE_ERROR("", HC_ERR_PIPELINE, "pipeline: no stages");
  EXPECT_PARSE_ERROR("  # only a comment\n\n", HC_ERR_PIPELINE, "pipeline: no stages");
  EXPECT_PARSE_ERROR("saxpy n='10 @cpu", HC_ERR_PIPELINE, "pipeline: unbalanced ' quote at column 9");
  EXPECT_PARSE_ERROR("saxpy\n| scale factor=\"2", HC_ERR_PIPELINE,
                     "pipeline: unbalanced \" quote at line 2, column 16");
  EXPECT_PARSE_ERROR("saxpy n=1 | | scale", HC_ERR_PIPELINE,
                     "pipeline: empty stage between '|' at column 11 and '|' at column 13");
  EXPECT_PARSE_ERROR("saxpy |\n\n| scale", HC_ERR_PIPELINE,
                     "pipeline: empty stage between '|' at line 1, column 7 and '|' at line 3, column 1");
  EXPECT_PARSE_ERROR("| saxpy", HC_ERR_PIPELINE, "pipeline: empty stage before '|' at column 1");
  EXPECT_PARSE_ERROR("saxpy n=1 |  ", HC_ERR_PIPELINE, "pipeline: empty stage after '|' at column 11");
  EXPECT_PARSE_ERROR("saxpy | n=5", HC_ERR_PIPELINE,
                     "pipeline: stage 2 starts with 'n=5' (a stage starts with a workload name)");
  EXPECT_PARSE_ERROR("'saxpy'", HC_ERR_PIPELINE,
                     "pipeline: stage 1 starts with 'saxpy' (a stage starts with a workload name)");
  EXPECT_PARSE_ERROR(
      "saxpy foo", HC_ERR_PIPELINE,
      "pipeline: stage 1 (saxpy): unexpected 'foo' (expected key=value, @device or [STAGE.]output>input)");
  EXPECT_PARSE_ERROR("saxpy =5", HC_ERR_PIPELINE,
                     "pipeline: stage 1 (saxpy): '=5' is not key=value (the key is a parameter name)");
  EXPECT_PARSE_ERROR("saxpy @", HC_ERR_PIPELINE,
                     "pipeline: stage 1 (saxpy): '@' needs a device (e.g. @cpu, @opencl:0, @cuda, @auto)");
  EXPECT_PARSE_ERROR("saxpy @cpu @cpu:0", HC_ERR_PIPELINE,
                     "pipeline: stage 1 (saxpy): device given twice (@cpu and @cpu:0)");
  EXPECT_PARSE_ERROR("saxpy | scale .y>in", HC_ERR_PIPELINE,
                     "pipeline: stage 2 (scale): '.y>in' is not a binding (expected [STAGE.]output>input)");
  EXPECT_PARSE_ERROR("saxpy | scale saxpy.y>", HC_ERR_PIPELINE,
                     "pipeline: stage 2 (scale): 'saxpy.y>' is not a binding (expected [STAGE.]output>input)");
}

static void test_parse_bad_names(void) {
  /* Unknown workload: the message lists the available ones. */
  hc_pipeline_t *p = (hc_pipeline_t *)1;
  CU_ASSERT_EQUAL(hc_pipeline_parse(th_context(), "saxpy @cpu | nosuch", &p), HC_ERR_PIPELINE);
  const char *want = "pipeline: stage 2: unknown workload 'nosuch' (available: ";
  CU_ASSERT_EQUAL(strncmp(hc_last_error(), want, strlen(want)), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "scale"));
  CU_ASSERT_PTR_NULL(p);
  EXPECT_PARSE_ERROR("saxpy @cpu | scale saxpy.q>in", HC_ERR_PIPELINE,
                     "pipeline: stage 1 (saxpy) has no output 'q' (outputs: y)");
  EXPECT_PARSE_ERROR("saxpy @cpu | scale y>q", HC_ERR_PIPELINE,
                     "pipeline: stage 2 (scale) has no input 'q' (inputs: in)");
  EXPECT_PARSE_ERROR("saxpy @cpu | scale bpmx.field>in", HC_ERR_PIPELINE,
                     "pipeline: stage 2 (scale): 'bpmx.field>in': no stage runs workload 'bpmx'");
  EXPECT_PARSE_ERROR("saxpy @cpu | scale 5.y>in", HC_ERR_PIPELINE,
                     "pipeline: stage 2 (scale): '5.y>in': no stage 5 (the pipeline has 2)");
  EXPECT_PARSE_ERROR("scale y>in @cpu", HC_ERR_PIPELINE,
                     "pipeline: stage 1 (scale): 'y>in' has no previous stage (write STAGE.y>in)");
  EXPECT_PARSE_ERROR("saxpy n=abc @cpu", HC_ERR_PARAM,
                     "pipeline: stage 1 (saxpy): parameter n=abc: not an integer (e.g. 100, 4k, 16M, 1e6)");
  EXPECT_PARSE_ERROR("saxpy @cpu:7", HC_ERR_PIPELINE,
                     "pipeline: stage 1 (saxpy): device 'cpu:7' does not exist: backend 'cpu' has 1 device(s)");
  EXPECT_PARSE_ERROR("saxpy @cpu:x", HC_ERR_PIPELINE,
                     "pipeline: stage 1 (saxpy): device 'cpu:x': expected BACKEND or BACKEND:INDEX or auto");
}

/* Arbitrary text never crashes, never leaks, and fails with a message. */
static void test_parse_arbitrary(void) {
  static const char *pieces[] = {"saxpy", "scale",    "reduce", "probe",  " ",          " ",     "|", "\n",
                                 "#",     "'",        "\"",     "@",      "@cpu",       "=",     ">", ".",
                                 "n=3",   "factor=2", "y>in",   "1.y>in", "saxpy.y>in", "op=l2", ":", "x",
                                 "\t",    "||",       "=>",     "a'b'c",  "grid=2x2"};
  unsigned seed = 12345;
  int ok = 0, failed = 0;
  for (int it = 0; it < 3000; it++) {
    char text[256] = "";
    int parts = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 10;
    for (int k = 0; k < parts; k++) {
      seed = seed * 1103515245u + 12345u;
      strncat(text, pieces[(seed >> 16) % (sizeof pieces / sizeof pieces[0])], sizeof text - strlen(text) - 1);
    }
    hc_pipeline_t *p = NULL;
    hc_status_t st = hc_pipeline_parse(th_context(), text, &p);
    if (st == HC_OK) {
      ok++;
      CU_ASSERT_PTR_NOT_NULL(p);
      hc_pipeline_validate(p); /* any outcome; it must not crash */
      hc_pipeline_destroy(p);
    } else {
      failed++;
      CU_ASSERT_PTR_NULL(p);
      CU_ASSERT_EQUAL(strncmp(hc_last_error(), "pipeline: ", 10), 0);
    }
  }
  CU_ASSERT_TRUE(ok > 0 && failed > 0);
}

/* ---------------------------------------------------------------- hcrun */

static char outbuf[1 << 17], errbuf[1 << 15];

/* Runs hcrun with a spec given through --pipeline-file (no shell quoting
 * to get wrong) and extra options; returns the exit code. */
static int hcrun_file(const char *spec, const char *extra) {
  static int count;
  char path[4200], cmd[9000];
  snprintf(path, sizeof path, "%s/spec-%d.txt", th_tmpdir(), count++);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs(spec, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --pipeline-file=%s %s", th_build_dir(), path, extra ? extra : "");
  return th_run(cmd, outbuf, sizeof outbuf, errbuf, sizeof errbuf);
}

/* 1 when dir does not exist or holds no file. */
static int nothing_in(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 1;
  int files = 0;
  for (struct dirent *e; (e = readdir(d));) files += e->d_name[0] != '.';
  closedir(d);
  return files == 0;
}

static void expect_exit(const char *spec, int code, const char *fragment) {
  char out[4200];
  snprintf(out, sizeof out, "%s/never-%d", th_tmpdir(), code);
  char extra[4300];
  snprintf(extra, sizeof extra, "--output=%s", out);
  int rc = hcrun_file(spec, extra);
  if (rc != code || !strstr(errbuf, fragment))
    fprintf(stderr, "\nhcrun \"%s\": exit %d (want %d), stderr: %s(want '%s')\n", spec, rc, code, errbuf, fragment);
  CU_ASSERT_EQUAL(rc, code);
  CU_ASSERT_PTR_NOT_NULL(strstr(errbuf, fragment));
  if (code == 2) CU_ASSERT_TRUE(nothing_in(out)); /* nothing written */
}

static void test_hcrun_malformed_exit_2(void) {
  expect_exit("saxpy n='10 @cpu", 2, "hcrun: pipeline: unbalanced ' quote at column 9");
  expect_exit("saxpy n=10 @cpu | | reduce", 2, "pipeline: empty stage between '|' at column 17 and '|' at column 19");
  expect_exit("saxpy n=10 @cpu |", 2, "pipeline: empty stage after '|' at column 17");
  expect_exit("saxpy n=10 @cpu | nosuch", 2, "pipeline: stage 2: unknown workload 'nosuch' (available: ");
  expect_exit("saxpy n=10 @cpu | scale saxpy.q>in", 2, "pipeline: stage 1 (saxpy) has no output 'q' (outputs: y)");
  expect_exit("saxpy n=10 @cpu | scale y>q", 2, "pipeline: stage 2 (scale) has no input 'q' (inputs: in)");
  expect_exit("saxpy n=10 @cpu:3", 2, "pipeline: stage 1 (saxpy): device 'cpu:3' does not exist");
  expect_exit("saxpy n=10 @nosuchbackend", 2, "pipeline: stage 1 (saxpy): unknown backend 'nosuchbackend'");
  expect_exit("saxpy n=-4 @cpu", 2, "pipeline: stage 1 (saxpy): parameter n=-4: out of range");
  expect_exit("saxpy n=10 @cpu | reduce | slice", 2,
              "pipeline: stage 3 (slice): input 'in' takes rank 1..4, stage 2 (reduce) output 'value' gives rank 0");
  expect_exit("scale @cpu 2.out>in | scale", 2,
              "pipeline: cycle: stage 1 (scale) output 'out' -> stage 2 (scale) input 'in'");
  expect_exit("abs2 @cpu", 2, "pipeline: stage 1 (abs2): required input 'in' is not bound");
  expect_exit("", 2, "pipeline: no stages");

  /* On the command line itself. */
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --pipeline 'saxpy n=10 @cpu | | scale'", th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, outbuf, sizeof outbuf, errbuf, sizeof errbuf), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(errbuf, "pipeline: empty stage between '|' at column 17 and '|' at column 19"));
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --device=cpu --pipeline 'saxpy n=10'", th_build_dir());
  CU_ASSERT_EQUAL(th_run(cmd, outbuf, sizeof outbuf, errbuf, sizeof errbuf), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(errbuf, "give each stage its @device"));
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun --pipeline-file=%s/does-not-exist.txt", th_build_dir(), th_tmpdir());
  CU_ASSERT_EQUAL(th_run(cmd, outbuf, sizeof outbuf, errbuf, sizeof errbuf), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(errbuf, "does-not-exist.txt: cannot open: No such file or directory"));
  /* --json: the error as a document, same exit code. */
  CU_ASSERT_EQUAL(hcrun_file("saxpy n=10 @cpu | | reduce", "--json"), 2);
  json_error_t je;
  json_t *doc = json_loads(outbuf, 0, &je);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  json_t *e = json_object_get(doc, "error");
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(e, "status")), "HC_ERR_PIPELINE");
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(e, "exit_code")), 2);
  json_decref(doc);
}

static void test_hcrun_failures(void) {
  expect_exit(
      "saxpy n=10 @cpu | slice axis=1 | reduce", 2,
      "hcrun: pipeline: stage 2 (slice) failed: workload 'slice' on cpu:0: slice: axis=1: input 'in' has rank 1");
  expect_exit("probe fail=runtime @cpu | reduce", 4, "hcrun: pipeline: stage 1 (probe) failed: ");
  CU_ASSERT_EQUAL(hcrun_file("probe fail=verify grid=4 @cpu | reduce", "--verify"), 1);
  CU_ASSERT_PTR_NOT_NULL(strstr(outbuf, "verification FAILED"));
  /* The report still shows what ran and what did not. */
  CU_ASSERT_EQUAL(hcrun_file("probe fail=runtime @cpu | reduce", NULL), 4);
  CU_ASSERT_PTR_NOT_NULL(strstr(outbuf, "stage 1        probe on cpu:0: failed"));
  CU_ASSERT_PTR_NOT_NULL(strstr(outbuf, "stage 2        reduce on cpu:0: skipped"));
  CU_ASSERT_EQUAL(hcrun_file("probe fail=runtime @cpu | reduce", "--json"), 4);
  json_error_t je;
  json_t *doc = json_loads(outbuf, 0, &je);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(doc, "status")), "failed");
  json_t *e = json_object_get(doc, "error");
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(e, "failed_stage")), 1);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(e, "exit_code")), 4);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(json_object_get(doc, "stages"), 1), "state")),
                         "skipped");
  json_decref(doc);
}

static void test_hcrun_reports_and_outputs(void) {
  char dir[4200], extra[4400];
  snprintf(dir, sizeof dir, "%s/out-json", th_tmpdir());
  snprintf(extra, sizeof extra, "--json --output=%s", dir);
  int rc = hcrun_file("saxpy n=100 dtype=f64 @cpu\nscale factor=2\nreduce op=sum\n", extra);
  CU_ASSERT_EQUAL_FATAL(rc, 0);
  json_error_t je;
  json_t *doc = json_loads(outbuf, 0, &je);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  json_t *stages = json_object_get(doc, "stages");
  CU_ASSERT_EQUAL_FATAL(json_array_size(stages), 3);
  json_t *s2 = json_array_get(stages, 2);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s2, "workload")), "reduce");
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s2, "device")), "cpu:0");
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(s2, "state")), "done");
  CU_ASSERT_DOUBLE_EQUAL(
      json_real_value(json_object_get(json_object_get(json_object_get(s2, "metrics"), "value"), "value")),
      2.0 * 100 * 100, 0);
  json_t *in = json_array_get(json_object_get(s2, "inputs"), 0);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(in, "from_stage")), 2);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(in, "output")), "out");
  CU_ASSERT_TRUE(json_is_object(json_object_get(s2, "times")));
  CU_ASSERT_EQUAL(json_array_size(json_object_get(doc, "transfers")), 0);
  json_t *tot = json_object_get(doc, "totals");
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(tot, "host_transfers_between_stages")), 0);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(tot, "handovers_on_device")), 2);
  CU_ASSERT_EQUAL(json_array_size(json_object_get(doc, "devices")), 1);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(doc, "status")), "ok");
  CU_ASSERT_EQUAL(json_array_size(json_object_get(doc, "outputs")), 3);
  json_decref(doc);
  const char *files[] = {"1-saxpy-y.npy", "2-scale-out.npy", "3-reduce-value.npy"};
  for (int i = 0; i < 3; i++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    CU_ASSERT_EQUAL(access(path, R_OK), 0);
  }
  char path[4400];
  snprintf(path, sizeof path, "%s/3-reduce-value.npy", dir);
  hc_dtype_t dt;
  uint32_t rank = 9;
  int64_t shape[4];
  void *data = NULL;
  TH_ASSERT_OK(hc_npy_read(path, &dt, &rank, shape, &data));
  CU_ASSERT_EQUAL(dt, HC_F64);
  CU_ASSERT_EQUAL(rank, 0);
  CU_ASSERT_DOUBLE_EQUAL(*(double *)data, 2.0 * 100 * 100, 0);
  free(data);

  /* The text report across two devices lists the move. */
  if (!th_device("opencl:0")) return;
  CU_ASSERT_EQUAL(hcrun_file("saxpy n=100 @cpu | scale factor=2 @opencl:0 | reduce", NULL), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(outbuf, "stage 2        scale on opencl:0: "));
  CU_ASSERT_PTR_NOT_NULL(
      strstr(outbuf, "transfer       stage 1 (saxpy) y -> stage 2 (scale) in: cpu:0 -> opencl:0, 400 B in "));
  CU_ASSERT_PTR_NOT_NULL(strstr(outbuf, "2 hand-overs, 1 on the device; 1 transfers between devices (400 B, "));
  CU_ASSERT_PTR_NOT_NULL(strstr(outbuf, "host transfers between stages: 0"));
  CU_ASSERT_EQUAL_FATAL(hcrun_file("saxpy n=100 @cpu | scale factor=2 @opencl:0 | reduce", "--json"), 0);
  doc = json_loads(outbuf, 0, &je);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  json_t *t = json_array_get(json_object_get(doc, "transfers"), 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(t);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(t, "stage")), 2);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(t, "from_stage")), 1);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(t, "from_device")), "cpu:0");
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(t, "to_device")), "opencl:0");
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(t, "bytes")), 400);
  CU_ASSERT_TRUE(json_real_value(json_object_get(t, "seconds")) > 0);
  CU_ASSERT_EQUAL(json_array_size(json_object_get(doc, "devices")), 2);
  json_decref(doc);
}

/* Validation is linear-ish in the stages: 15,000 stages of a chain are
 * ordered and checked in well under a second (it was quadratic: seconds). */
static void test_long_chain_validates_fast(void) {
  int n = th_slow_tool() ? 2000 : 15000;
  size_t cap = (size_t)n * 20 + 64, len = 0;
  char *text = malloc(cap);
  CU_ASSERT_PTR_NOT_NULL_FATAL(text);
  len += (size_t)snprintf(text, cap, "jacobi dim=3 n=9 @cpu");
  for (int i = 0; i < n; i++) len += (size_t)snprintf(text + len, cap - len, " | scale factor=1");
  hc_pipeline_t *p = NULL;
  TH_ASSERT_OK(hc_pipeline_parse(th_context(), text, &p));
  double t0 = hc_now();
  TH_ASSERT_OK(hc_pipeline_validate(p));
  double dt = hc_now() - t0;
  uint32_t order_ok = 1;
  for (uint32_t k = 1; k <= (uint32_t)n && order_ok; k++) {
    hc_pipeline_binding_t b;
    order_ok = hc_pipeline_binding_get(p, k - 1, &b) == HC_OK && b.from == (int32_t)k - 1 && b.to == k;
  }
  CU_ASSERT(order_ok);
  if (!th_slow_tool()) {
    if (dt > 0.5) fprintf(stderr, "validating %d stages took %.3f s\n", n + 1, dt);
    CU_ASSERT(dt <= 0.5);
  }
  hc_pipeline_destroy(p);
  free(text);
}

static void register_tests(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/test-plugins", th_build_dir());
  setenv("HC_PLUGIN_PATH", dir, 1);
  CU_pSuite s = CU_add_suite("pipeline_parse", NULL, NULL);
  CU_ADD_TEST(s, test_long_chain_validates_fast);
  CU_ADD_TEST(s, test_parse_good);
  CU_ADD_TEST(s, test_parse_bad_syntax);
  CU_ADD_TEST(s, test_parse_bad_names);
  CU_ADD_TEST(s, test_parse_arbitrary);
  s = CU_add_suite("hcrun_pipeline", NULL, NULL);
  CU_ADD_TEST(s, test_hcrun_malformed_exit_2);
  CU_ADD_TEST(s, test_hcrun_failures);
  CU_ADD_TEST(s, test_hcrun_reports_and_outputs);
}

TH_MAIN(register_tests)
