/* Timelines (hc/trace.h): the checker itself, a traced 3-stage pipeline
 * across cpu and PoCL (with the arrow from a transfer to the kernel that
 * reads it), hcrun --trace, the event cap, tracing from several
 * threads at once, where commands go on a device that times only their
 * ends, and a GPU's own times (where there is one). */
#include <hc/pipeline.h>
#include <hc/trace.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "trace_check.h"

static int check_text(const char *text, trace_check_t *r) {
  json_error_t e;
  json_t *doc = json_loads(text, 0, &e);
  if (!doc) return -1;
  trace_check(doc, r);
  json_decref(doc);
  return r->problems;
}

#define META                                                                                  \
  "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"p\"}},"   \
  "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"host\"}}," \
  "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1000,\"args\":{\"name\":\"cpu:0 queue\"}}"
#define X(name, tid, ts, dur) \
  ",{\"name\":\"" name "\",\"cat\":\"c\",\"ph\":\"X\",\"ts\":" #ts ",\"dur\":" #dur ",\"pid\":1,\"tid\":" #tid "}"

/* The events of a trace between META and the end. */
#define DOC(events) "{\"traceEvents\":[" META events "]}"
/* A flow phase event on the device track. */
#define FLOW(ph, id, ts) \
  ",{\"name\":\"reads\",\"cat\":\"flow\",\"ph\":\"" ph "\",\"id\":" #id ",\"ts\":" #ts ",\"pid\":1,\"tid\":1000}"
#define FLOW_END "f\",\"bp\":\"e"

/* The checker finds exactly one problem in text, and names it with needle. */
static void rejected_for(const char *text, const char *needle) {
  trace_check_t r;
  CU_ASSERT_EQUAL(check_text(text, &r), 1);
  if (!strstr(r.first, needle)) fprintf(stderr, "checker said '%s', not '%s'\n", r.first, needle);
  CU_ASSERT_PTR_NOT_NULL(strstr(r.first, needle));
}

/* The checker accepts what it should and names what it should not. */
static void test_checker(void) {
  trace_check_t r;
  CU_ASSERT_EQUAL(
      check_text(DOC(X("job", 1, 0, 10) X("k", 1, 1, 2) X("k2", 1, 3, 7) X("a", 1000, 0, 5) X("b", 1000, 5, 1)), &r),
      0);
  CU_ASSERT_EQUAL(r.tracks, 2);
  CU_ASSERT_EQUAL(r.device_tracks, 1);
  CU_ASSERT_EQUAL(r.complete, 5);
  /* overlap on a device track; a host span that straddles its parent's end */
  rejected_for(DOC(X("a", 1000, 0, 5) X("b", 1000, 4, 1)), "overlaps");
  rejected_for(DOC(X("job", 1, 0, 10) X("k", 1, 5, 6)), "straddles");
  /* a track without a name, a process without a name */
  rejected_for(DOC(X("a", 7, 0, 5)), "thread_name");
  CU_ASSERT(check_text("{\"traceEvents\":[{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":2,\"tid\":1,"
                       "\"args\":{\"name\":\"host\"}}" X("a", 1, 0, 1) "]}",
                       &r) > 0);
  /* types: ts as a string, no ph, a negative duration */
  CU_ASSERT(check_text(DOC(",{\"name\":\"a\",\"cat\":\"c\",\"ph\":\"X\",\"ts\":\"0\",\"dur\":1,\"pid\":1,\"tid\":1}"),
                       &r) > 0);
  CU_ASSERT(check_text(DOC(",{\"name\":\"a\",\"pid\":1,\"tid\":1}"), &r) > 0);
  CU_ASSERT(check_text(DOC(X("a", 1, 0, -1)), &r) > 0);
  CU_ASSERT(check_text("{\"events\":[]}", &r) > 0);
  /* flow arrows: from inside a write to inside the launch that reads it */
  CU_ASSERT_EQUAL(check_text(DOC(X("w", 1000, 0, 5) X("k", 1000, 5, 3) FLOW("s", 1, 2.5) FLOW(FLOW_END, 1, 6.5)), &r),
                  0);
  CU_ASSERT_EQUAL(r.flows, 1);
  CU_ASSERT_EQUAL(r.complete, 2);
  rejected_for(DOC(X("k", 1000, 5, 3) FLOW(FLOW_END, 1, 6.5)), "never starts");
  rejected_for(DOC(X("w", 1000, 0, 5) X("k", 1000, 5, 3) FLOW("s", 1, 6.5) FLOW(FLOW_END, 1, 2.5)), "before it starts");
  rejected_for(DOC(X("w", 1000, 0, 5) FLOW("s", 1, 9)), "lies in no event");
  rejected_for(DOC(X("w", 1000, 0, 5) X("k", 1000, 5, 3) FLOW("s", 1, 2.5) FLOW("f", 1, 6.5)), "bp");
}

static const char *tmp_path(const char *name) {
  static char path[8][1024];
  static int next;
  char *p = path[next++ % 8];
  snprintf(p, sizeof path[0], "%s/%s", th_tmpdir(), name);
  return p;
}

static int arg_is(const json_t *e, const char *key, const char *value) {
  const char *v = json_string_value(json_object_get(json_object_get(e, "args"), key));
  return v && !strcmp(v, value);
}

/* The trace at path, checked: no problem (the first one printed). Ends the
 * test when the file is not JSON. The caller owns the document. */
static json_t *valid_trace(const char *path, trace_check_t *r) {
  json_t *doc = trace_check_file(path, r);
  CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
  if (r->problems) fprintf(stderr, "%s: %s\n", path, r->first);
  CU_ASSERT_EQUAL(r->problems, 0);
  return doc;
}

/* The first X event of category cat whose name starts with prefix. */
static const json_t *find_event(const json_t *doc, const char *cat, const char *prefix) {
  size_t i;
  const json_t *e;
  json_array_foreach(json_object_get(doc, "traceEvents"), i, e) {
    const char *c = json_string_value(json_object_get(e, "cat"));
    const char *n = json_string_value(json_object_get(e, "name"));
    if (c && n && !strcmp(c, cat) && !strncmp(n, prefix, strlen(prefix))) return e;
  }
  return NULL;
}

/* Is there an arrow out of event `from` into an "X" event of category
 * to_cat on track to_tid? */
static int arrow(const json_t *doc, const json_t *from, const char *to_cat, long to_tid) {
  const json_t *evs = json_object_get(doc, "traceEvents");
  const long tid = (long)json_integer_value(json_object_get(from, "tid"));
  const double t0 = json_number_value(json_object_get(from, "ts")),
               t1 = t0 + json_number_value(json_object_get(from, "dur"));
  size_t i, j, k;
  const json_t *s, *f, *x;
  json_array_foreach(evs, i, s) {
    const char *ph = json_string_value(json_object_get(s, "ph"));
    const double ts = json_number_value(json_object_get(s, "ts"));
    if (strcmp(ph, "s") || json_integer_value(json_object_get(s, "tid")) != tid || ts < t0 || ts > t1) continue;
    json_array_foreach(evs, j, f) {
      if (strcmp(json_string_value(json_object_get(f, "ph")), "f") ||
          json_integer_value(json_object_get(f, "id")) != json_integer_value(json_object_get(s, "id")) ||
          json_integer_value(json_object_get(f, "tid")) != to_tid)
        continue;
      const double tf = json_number_value(json_object_get(f, "ts"));
      json_array_foreach(evs, k, x) {
        const char *c = json_string_value(json_object_get(x, "cat"));
        const double xs = json_number_value(json_object_get(x, "ts"));
        if (!strcmp(json_string_value(json_object_get(x, "ph")), "X") && c && !strcmp(c, to_cat) &&
            json_integer_value(json_object_get(x, "tid")) == to_tid && xs <= tf &&
            tf <= xs + json_number_value(json_object_get(x, "dur")))
          return 1;
      }
    }
  }
  return 0;
}

/* jacobi on cpu, simpson of its field on PoCL, scale of the integral on
 * cpu again: tracks, events, and the device times. */
/* Sum of the durations (µs) of the events of category cat on track tid. */
static double trace_sum_cat(const json_t *doc, long tid, const char *cat) {
  double sum = 0;
  size_t i;
  const json_t *e;
  json_array_foreach(json_object_get(doc, "traceEvents"), i, e) {
    const char *c = json_string_value(json_object_get(e, "cat"));
    if (c && !strcmp(c, cat) && json_integer_value(json_object_get(e, "tid")) == tid)
      sum += json_number_value(json_object_get(e, "dur"));
  }
  return sum;
}

static void test_pipeline_cpu_pocl(void) {
  hc_context_t *ctx = th_context();
  uint32_t ocl;
  if (hc_device_find(ctx, "opencl:0", &ocl) != HC_OK) {
    th_skip("no OpenCL device (PoCL)");
    return;
  }
  hc_pipeline_t *p = NULL;
  TH_ASSERT_OK(hc_pipeline_parse(
      ctx, "jacobi dim=3 n=49 f=sin dtype=f64 tol=1e-6 @cpu:0 | simpson @opencl:0 | scale factor=2 @cpu:0", &p));
  const char *path = tmp_path("pipeline.json");
  TH_ASSERT_OK(hc_trace_start(ctx, path, NULL));
  CU_ASSERT_EQUAL(hc_trace_active(ctx), 1);
  CU_ASSERT_EQUAL(hc_trace_start(ctx, path, NULL), HC_ERR_INVALID_ARG); /* one trace at a time */
  TH_ASSERT_OK(hc_pipeline_run(p, 0));
  uint32_t cpu;
  TH_ASSERT_OK(hc_device_find(ctx, "cpu:0", &cpu));
  hc_trace_usage_t ucpu = {.size = sizeof ucpu}, uocl = {.size = sizeof uocl};
  TH_ASSERT_OK(hc_trace_usage(ctx, cpu, &ucpu));
  TH_ASSERT_OK(hc_trace_usage(ctx, ocl, &uocl));
  TH_ASSERT_OK(hc_trace_stop(ctx));
  CU_ASSERT_EQUAL(hc_trace_active(ctx), 0);
  CU_ASSERT_EQUAL(hc_trace_stop(ctx), HC_ERR_INVALID_ARG);

  trace_check_t r;
  json_t *doc = valid_trace(path, &r);
  const long tcpu = trace_track(doc, "cpu:0 queue"), tocl = trace_track(doc, "opencl:0 queue");
  CU_ASSERT(tcpu >= 0 && tocl >= 0 && trace_track(doc, "host") >= 0);
  CU_ASSERT_EQUAL(r.device_tracks, 2);
  /* every stage and job is a span; kernels are named by stage and kernel */
  const json_t *stages[3], *jobs[3];
  const char *wl[3] = {"jacobi", "simpson", "scale"};
  for (int k = 0; k < 3; k++) {
    char name[64];
    snprintf(name, sizeof name, "stage %d %s", k + 1, wl[k]);
    stages[k] = find_event(doc, "stage", name);
    jobs[k] = find_event(doc, "job", wl[k]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(stages[k]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(jobs[k]);
    snprintf(name, sizeof name, "stage %d %s/", k + 1, wl[k]);
    CU_ASSERT_PTR_NOT_NULL(find_event(doc, "kernel", name));
  }
  CU_ASSERT(arg_is(stages[1], "device", "opencl:0"));
  CU_ASSERT_PTR_NOT_NULL(find_event(doc, "build", "build simpson"));
  CU_ASSERT_PTR_NOT_NULL(find_event(doc, "validate", "validate pipeline"));
  /* the moves between devices: a receive on PoCL, a send from it */
  const json_t *recv = find_event(doc, "device_to_device", "stage 2 simpson/receive");
  CU_ASSERT_PTR_NOT_NULL_FATAL(recv);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(recv, "args"), "bytes")), 49 * 49 * 49 * 8);
  CU_ASSERT(arg_is(recv, "peer", "cpu:0"));
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(recv, "tid")), tocl);
  /* an arrow from the field's arrival on PoCL to the kernel that reads it */
  CU_ASSERT(r.flows >= 1);
  CU_ASSERT(arrow(doc, recv, "kernel", tocl));

  /* The device times. What the report calls a device's busy time (the
   * utilisation line: compute + transfers, hc_trace_usage) is the sum of
   * that device's events in the file, kernels and transfers apart. */
  size_t ncpu = 0, nocl = 0;
  const double cpu_us = trace_sum(doc, tcpu, 0, -1, NULL, &ncpu), ocl_us = trace_sum(doc, tocl, 0, -1, NULL, &nocl);
  CU_ASSERT_EQUAL(ncpu, ucpu.events);
  CU_ASSERT_EQUAL(nocl, uocl.events);
  CU_ASSERT(th_rel((ucpu.compute_s + ucpu.transfer_s) * 1e6, cpu_us) < 0.01);
  CU_ASSERT(th_rel((uocl.compute_s + uocl.transfer_s) * 1e6, ocl_us) < 0.01);
  CU_ASSERT(th_rel(uocl.compute_s * 1e6, trace_sum_cat(doc, tocl, "kernel")) < 0.01);
  CU_ASSERT(th_rel(ucpu.compute_s * 1e6, trace_sum_cat(doc, tcpu, "kernel")) < 0.01);
  CU_ASSERT(ucpu.compute_s > 0 && uocl.compute_s > 0 && uocl.transfer_s > 0);
  CU_ASSERT(ucpu.compute_s + ucpu.transfer_s <= ucpu.window_s);
  /* A job's device time (hc_job_times.device_s) is a device timer's span
   * from its first command's start to its last's end on the device's own
   * clock; the trace shows each span on the host track ("device time on
   * <id>", its device_us the same figure). The device events queued
   * inside it, timed by that clock (device_us), sum to it less the
   * device's idle gaps between commands: never to more. */
  int spans[2] = {0, 0};
  size_t i;
  const json_t *e;
  json_array_foreach(json_object_get(doc, "traceEvents"), i, e) {
    const char *c = json_string_value(json_object_get(e, "cat"));
    if (!c || strcmp(c, "device_timer")) continue;
    const int on_ocl = arg_is(e, "device", "opencl:0");
    const double ts = json_number_value(json_object_get(e, "ts"));
    const double te = ts + json_number_value(json_object_get(e, "dur"));
    const double span_us = json_number_value(json_object_get(json_object_get(e, "args"), "device_us"));
    size_t n = 0;
    const double dev_us = trace_sum(doc, on_ocl ? tocl : tcpu, ts, te, "device_us", &n);
    spans[on_ocl] += n > 0;
    CU_ASSERT(dev_us <= span_us * 1.01 + 0.5);
    if (dev_us > span_us * 1.01 + 0.5)
      fprintf(stderr, "%s: device events %.3f us in a device time of %.3f us\n",
              json_string_value(json_object_get(e, "name")), dev_us, span_us);
  }
  CU_ASSERT(spans[0] >= 2 && spans[1] >= 1);
  /* the stages' device times are those spans */
  hc_pipeline_stage_info_t si;
  TH_ASSERT_OK(hc_pipeline_stage_info(p, 1, &si));
  const json_t *ocl_span = find_event(doc, "device_timer", "device time on opencl:0");
  CU_ASSERT_PTR_NOT_NULL_FATAL(ocl_span);
  CU_ASSERT(th_rel(json_number_value(json_object_get(json_object_get(ocl_span, "args"), "device_us")),
                   si.times.device_s * 1e6) < 1e-6);
  /* hc_trace_usage after stop: the last trace's figures */
  hc_trace_usage_t after = {.size = sizeof after};
  TH_ASSERT_OK(hc_trace_usage(ctx, ocl, &after));
  CU_ASSERT(after.events >= uocl.events && after.window_s >= uocl.window_s);
  json_decref(doc);
  hc_pipeline_destroy(p);
}

static void add_one(const hc_host_group_t *g, void *const *args);

static void test_cap(void) {
  hc_device_t *d = th_device("cpu");
  if (!d) return;
  hc_buffer_t *b = NULL;
  TH_ASSERT_OK(hc_buffer_create(d, 1024, &b));
  const char *path = tmp_path("cap.json");
  hc_trace_options_t o = {.size = sizeof o, .max_events = 10};
  TH_ASSERT_OK(hc_trace_start(hc_device_context(d), path, &o));
  const float x = 1;
  for (int i = 0; i < 25; i++) TH_ASSERT_OK(hc_buffer_fill(b, 0, &x, sizeof x, 1024));
  TH_ASSERT_OK(hc_trace_stop(hc_device_context(d)));
  trace_check_t r;
  json_t *doc = valid_trace(path, &r);
  CU_ASSERT_EQUAL(r.complete, 10);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(doc, "otherData"), "dropped_events")), 15);
  size_t i;
  const json_t *e;
  int note = 0;
  json_array_foreach(json_object_get(doc, "traceEvents"), i, e) note |=
      strstr(json_string_value(json_object_get(e, "name")), "trace truncated: 15 events") != NULL;
  CU_ASSERT(note);
  json_decref(doc);

  /* An arrow whose start falls beyond the cap: a copy from PoCL into a cpu
   * buffer is a "send" on PoCL's track, recorded when PoCL's queue is read
   * (here at stop, after the cap), while the cpu launch that reads the
   * buffer is recorded at once and is the one event kept. The arrow's end
   * is not written without its start. */
  hc_context_t *ctx = hc_device_context(d);
  uint32_t oi;
  hc_device_t *ocl = NULL;
  hc_buffer_t *src = NULL;
  if (hc_device_find(ctx, "opencl:0", &oi) == HC_OK && hc_device_open(ctx, oi, &ocl) == HC_OK &&
      hc_buffer_create(ocl, 1024, &src) == HC_OK && !hc_buffer_host_ptr(src)) {
    TH_ASSERT_OK(hc_buffer_fill(src, 0, &x, sizeof x, 1024));
    hc_kernel_desc_t kd = {.size = sizeof kd, .name = "add_one", .host_fn = add_one};
    hc_kernel_t *k = NULL;
    TH_ASSERT_OK(hc_kernel_create(d, &kd, &k));
    o.max_events = 1;
    TH_ASSERT_OK(hc_trace_start(ctx, path, &o));
    TH_ASSERT_OK(hc_buffer_copy(b, 0, src, 0, 1024));
    size_t g = 256;
    hc_arg_t a = HC_ARG_BUF(b);
    TH_ASSERT_OK(hc_kernel_launch(k, 1, &g, NULL, 1, &a));
    TH_ASSERT_OK(hc_trace_stop(ctx));
    doc = valid_trace(path, &r);
    CU_ASSERT_EQUAL(r.complete, 1);
    CU_ASSERT_EQUAL(r.flows, 0);
    CU_ASSERT_PTR_NOT_NULL(find_event(doc, "kernel", "add_one"));
    json_decref(doc);
    hc_kernel_destroy(k);
  }
  hc_buffer_destroy(src);
  hc_device_close(ocl);
  hc_buffer_destroy(b);
}

static void test_api_errors(void) {
  hc_context_t *ctx = NULL;
  hc_context_options_t co = {.size = sizeof co, .no_default_dirs = 1, .no_env_path = 1};
  TH_ASSERT_OK(hc_context_create(&co, &ctx));
  hc_trace_usage_t u = {.size = sizeof u};
  CU_ASSERT_EQUAL(hc_trace_usage(ctx, 0, &u), HC_ERR_INVALID_ARG); /* no devices */
  CU_ASSERT_EQUAL(hc_trace_start(ctx, "/nonexistent-dir/x.json", NULL), HC_ERR_IO);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "/nonexistent-dir/x.json"));
  CU_ASSERT_EQUAL(hc_trace_active(ctx), 0);
  CU_ASSERT_EQUAL(hc_trace_stop(ctx), HC_ERR_INVALID_ARG);
  hc_trace_range_begin(ctx, "off"); /* no-ops while off */
  hc_trace_range_end(ctx);
  /* a context destroyed while tracing completes its file */
  const char *path = tmp_path("destroyed.json");
  TH_ASSERT_OK(hc_trace_start(ctx, path, NULL));
  hc_trace_range_begin(ctx, "outer");
  hc_trace_range_begin(ctx, "inner");
  hc_trace_range_end(ctx);
  hc_trace_range_end(ctx);
  /* a name longer than an event keeps: cut at a whole UTF-8 character */
  char accents[128] = "";
  for (int i = 0; i < 40; i++) strcat(accents, "\xc3\xa9"); /* é */
  hc_trace_range_begin(ctx, accents);
  hc_trace_range_end(ctx);
  hc_context_destroy(ctx);
  trace_check_t r;
  json_t *doc = valid_trace(path, &r);
  CU_ASSERT_EQUAL(r.complete, 3);
  CU_ASSERT_PTR_NOT_NULL(find_event(doc, "range", "inner"));
  const json_t *cut = find_event(doc, "range", "\xc3\xa9");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cut);
  const size_t len = strlen(json_string_value(json_object_get(cut, "name")));
  CU_ASSERT(len > 0 && len < 64 && len % 2 == 0);
  json_decref(doc);
}

static char out[1 << 18], err[1 << 16];
static int hcrun(const char *args) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "%s/bin/hcrun %s", th_build_dir(), args);
  return th_run(cmd, out, sizeof out, err, sizeof err);
}

/* --trace to a path that cannot be written: exit 2, nothing run. */
static void test_hcrun_unwritable(void) {
  char args[2048];
  snprintf(args, sizeof args, "--trace=/nonexistent-dir/t.json --workload=simpson n=17x17x17 --device=cpu");
  CU_ASSERT_EQUAL(hcrun(args), 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "--trace=/nonexistent-dir/t.json"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot be written"));
  CU_ASSERT_PTR_NULL(strstr(out, "simpson on"));
  /* a directory; with --json, the error document */
  snprintf(args, sizeof args, "--trace=%s --workload=simpson n=17x17x17 --device=cpu --json", th_tmpdir());
  CU_ASSERT_EQUAL(hcrun(args), 2);
  json_error_t je;
  json_t *edoc = json_loads(out, 0, &je);
  CU_ASSERT_PTR_NOT_NULL_FATAL(edoc);
  CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(edoc, "error"), "exit_code")), 2);
  CU_ASSERT_PTR_NULL(json_object_get(edoc, "workload"));
  json_decref(edoc);
  CU_ASSERT_EQUAL(hcrun("--trace= --workload=simpson"), 2);
  CU_ASSERT_EQUAL(hcrun("--trace=x.json --list"), 2);
}

/* --trace with --json: the file is valid and the report has the usage. */
static void test_hcrun_trace(void) {
  const char *path = tmp_path("hcrun.json");
  char args[2048];
  snprintf(args, sizeof args, "--trace=%s --workload=simpson n=33x33x33 --device=cpu --json --output=%s/o", path,
           th_tmpdir());
  CU_ASSERT_EQUAL_FATAL(hcrun(args), 0);
  json_error_t e;
  json_t *rep = json_loads(out, 0, &e);
  CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
  const json_t *u = json_array_get(json_object_get(rep, "utilisation"), 0);
  CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(u, "device")), "cpu:0");
  const double busy = json_real_value(json_object_get(u, "busy_fraction"));
  CU_ASSERT(busy > 0 && busy <= 1);
  CU_ASSERT(th_rel(busy + json_real_value(json_object_get(u, "idle_fraction")), 1) < 1e-9);
  trace_check_t r;
  json_t *doc = valid_trace(path, &r);
  CU_ASSERT_PTR_NOT_NULL(find_event(doc, "job", "simpson on cpu:0"));
  CU_ASSERT_PTR_NOT_NULL(find_event(doc, "kernel", "simpson/"));
  CU_ASSERT_PTR_NOT_NULL(find_event(doc, "output", "write "));
  json_decref(doc);
  json_decref(rep);
  /* the text report's line */
  snprintf(args, sizeof args, "--trace=%s --workload=simpson n=33x33x33 --device=cpu", path);
  CU_ASSERT_EQUAL(hcrun(args), 0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "utilisation    cpu:0 busy "));
  /* a grid-expression workload: its planning on the host track */
  snprintf(args, sizeof args, "--trace=%s --workload=multigrid --device=cpu", path);
  CU_ASSERT_EQUAL(hcrun(args), 0);
  doc = valid_trace(path, &r);
  CU_ASSERT_PTR_NOT_NULL(find_event(doc, "range", "plan hc_grid_assign"));
  CU_ASSERT_PTR_NOT_NULL(find_event(doc, "device_timer", "device time on cpu:0"));
  json_decref(doc);
  /* a split run over two cpu devices: a queue each, halo exchanges on the
   * host track, and arrows from each halo's arrival to the sweep that reads
   * it */
  snprintf(args, sizeof args,
           "env HC_CPU_DEVICES=2 %s/bin/hcrun --trace=%s --split=equal --workload=jacobi dim=2 n=65 iters=20 "
           "--device=cpu:0,cpu:1",
           th_build_dir(), path);
  CU_ASSERT_EQUAL(th_run(args, out, sizeof out, err, sizeof err), 0);
  doc = valid_trace(path, &r);
  CU_ASSERT_EQUAL(r.device_tracks, 2);
  CU_ASSERT_PTR_NOT_NULL(find_event(doc, "halo", "halo exchange"));
  for (int d = 0; d < 2; d++) {
    char queue[32];
    snprintf(queue, sizeof queue, "cpu:%d queue", d);
    const long tid = trace_track(doc, queue);
    const json_t *halo_write = NULL, *ev;
    size_t i;
    json_array_foreach(json_object_get(doc, "traceEvents"), i, ev) {
      const char *n = json_string_value(json_object_get(ev, "name"));
      if (!halo_write && json_integer_value(json_object_get(ev, "tid")) == tid && n && strstr(n, "/write"))
        halo_write = ev;
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(halo_write);
    CU_ASSERT(arrow(doc, halo_write, "kernel", tid));
  }
  CU_ASSERT(r.flows >= 2 * 10); /* each part's 10 passes of two sweeps wait for its halo */
  json_decref(doc);
  /* without --trace, no line */
  CU_ASSERT_EQUAL(hcrun("--workload=simpson n=33x33x33 --device=cpu"), 0);
  CU_ASSERT_PTR_NULL(strstr(out, "utilisation"));
}

/* A GPU's queue (cuda:0, where there is one): its events come from the
 * device's own timers and sit where they ran. Each of jacobi's sweeps is
 * an event on the queue, none overlaps another, and inside the job's
 * device-time span they sum to the span less the device's idle gaps: the
 * first launch and the span's end, microseconds against the milliseconds
 * of 60 sweeps of 257^3. */
static void test_gpu_device_times(void) {
  hc_context_t *ctx = th_context();
  uint32_t idx;
  if (hc_device_find(ctx, "cuda:0", &idx) != HC_OK) {
    th_skip("no cuda:0: the GPU's device times are not traced here");
    return;
  }
  const char *path = tmp_path("gpu.json");
  char args[2048];
  snprintf(args, sizeof args, "--trace=%s --workload=jacobi dim=3 n=257 iters=60 --device=cuda:0", path);
  CU_ASSERT_EQUAL_FATAL(hcrun(args), 0);
  trace_check_t r;
  json_t *doc = valid_trace(path, &r);
  const json_t *span = find_event(doc, "device_timer", "device time on cuda:0");
  CU_ASSERT_PTR_NOT_NULL_FATAL(span);
  const double from = json_number_value(json_object_get(span, "ts"));
  const double to = from + json_number_value(json_object_get(span, "dur"));
  size_t n = 0;
  const double sum = trace_sum(doc, trace_track(doc, "cuda:0 queue"), from, to, NULL, &n);
  CU_ASSERT_EQUAL(n, 60);
  if (sum < 0.95 * (to - from) || sum > to - from)
    fprintf(stderr, "cuda:0: events in the span sum to %.1f us of %.1f\n", sum, to - from);
  CU_ASSERT(sum >= 0.95 * (to - from) && sum <= to - from);
  json_decref(doc);
}

/* Several threads launching on one context, one device, under its lock. */
enum { THREADS = 4, ROUNDS = 50 };
static hc_device_t *mt_dev;

static void add_one(const hc_host_group_t *g, void *const *args) {
  float *x = args[0];
  for (size_t i = g->lo[0]; i < g->hi[0]; i++) x[i] += 1;
}

static void *mt_worker(void *arg) {
  (void)arg;
  hc_context_t *ctx = hc_device_context(mt_dev);
  hc_kernel_desc_t kd = {.size = sizeof kd, .name = "add_one", .host_fn = add_one};
  hc_kernel_t *k = NULL;
  hc_buffer_t *b = NULL;
  int ok = 1;
  hc_device_lock(mt_dev);
  ok &= hc_kernel_create(mt_dev, &kd, &k) == HC_OK && hc_buffer_create(mt_dev, 4096 * sizeof(float), &b) == HC_OK;
  hc_device_unlock(mt_dev);
  float v = 0, host[4096];
  for (int r = 0; ok && r < ROUNDS; r++) {
    hc_trace_range_begin(ctx, "round");
    hc_device_lock(mt_dev);
    size_t g = 4096;
    hc_arg_t a = HC_ARG_BUF(b);
    ok &= hc_buffer_fill(b, 0, &v, sizeof v, sizeof host) == HC_OK;
    ok &= hc_kernel_launch(k, 1, &g, NULL, 1, &a) == HC_OK;
    ok &= hc_buffer_read(b, 0, host, sizeof host) == HC_OK;
    hc_device_unlock(mt_dev);
    ok &= host[17] == 1.0f;
    hc_trace_range_end(ctx);
  }
  hc_device_lock(mt_dev);
  hc_kernel_destroy(k);
  hc_buffer_destroy(b);
  hc_device_unlock(mt_dev);
  return ok ? arg : NULL;
}

static void test_threads(void) {
  if (!(mt_dev = th_device("cpu"))) return;
  hc_context_t *ctx = hc_device_context(mt_dev);
  const char *path = tmp_path("threads.json");
  TH_ASSERT_OK(hc_trace_start(ctx, path, NULL));
  pthread_t t[THREADS];
  int ok[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, mt_worker, &ok[i]);
  for (int i = 0; i < THREADS; i++) {
    void *res = NULL;
    pthread_join(t[i], &res);
    CU_ASSERT_PTR_EQUAL(res, &ok[i]);
  }
  TH_ASSERT_OK(hc_trace_stop(ctx));
  trace_check_t r;
  json_t *doc = valid_trace(path, &r);
  CU_ASSERT_EQUAL(r.host_tracks, THREADS);
  size_t n = 0;
  trace_sum(doc, trace_track(doc, "cpu:0 queue"), 0, -1, NULL, &n);
  CU_ASSERT_EQUAL(n, THREADS * ROUNDS * 3);
  /* THREADS x (a build + ROUNDS rounds) on the host tracks */
  CU_ASSERT_EQUAL(r.complete, n + THREADS * (1 + ROUNDS));
  /* every round's fill has its arrow to the launch after it, and only
   * that one: the threads' buffers are their own */
  CU_ASSERT_EQUAL(r.flows, THREADS * ROUNDS);
  json_decref(doc);
}

/* A device whose clock times only a command's end (the serial test backend
 * with HC_TEST_SERIAL_TRACE_LATENCY_MS: every command ends that long after
 * it was queued, on an in-order queue). A command queued while the one
 * before it runs starts when that one ends; one queued on an idle queue
 * starts when it was queued. */
#define END_ONLY_LATENCY_MS 200
static void test_end_only_device_clock(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/test-plugins", th_build_dir()); /* "serial" */
  setenv("HC_PLUGIN_PATH", dir, 1);
  setenv("HC_TEST_SERIAL_TRACE_LATENCY_MS", "200", 1);
  hc_context_t *ctx = NULL;
  hc_device_t *d = NULL;
  hc_buffer_t *b = NULL;
  uint32_t idx = 0;
  const int made = hc_context_create(NULL, &ctx) == HC_OK && hc_device_find(ctx, "serial:0", &idx) == HC_OK &&
                   hc_device_open(ctx, idx, &d) == HC_OK && hc_buffer_create(d, 1024, &b) == HC_OK;
  unsetenv("HC_TEST_SERIAL_TRACE_LATENCY_MS");
  unsetenv("HC_PLUGIN_PATH");
  CU_ASSERT_FATAL(made);
  const char *path = tmp_path("end_only.json");
  TH_ASSERT_OK(hc_trace_start(ctx, path, NULL));
  const float x = 1;
  for (int i = 0; i < 3; i++) TH_ASSERT_OK(hc_buffer_fill(b, 0, &x, sizeof x, 1024)); /* back to back */
  usleep(2 * END_ONLY_LATENCY_MS * 1000 + 100000);                                    /* the queue goes idle */
  TH_ASSERT_OK(hc_buffer_fill(b, 0, &x, sizeof x, 1024));
  TH_ASSERT_OK(hc_trace_stop(ctx));
  trace_check_t r;
  json_t *doc = valid_trace(path, &r);
  const long tid = trace_track(doc, "serial:0 queue");
  double ts[4], dur[4];
  int n = 0;
  size_t i;
  const json_t *e;
  json_array_foreach(json_object_get(doc, "traceEvents"), i, e) {
    const char *cat = json_string_value(json_object_get(e, "cat"));
    if (json_integer_value(json_object_get(e, "tid")) != tid || !cat || strcmp(cat, "fill")) continue;
    if (n < 4)
      ts[n] = json_number_value(json_object_get(e, "ts")), dur[n] = json_number_value(json_object_get(e, "dur"));
    n++;
  }
  CU_ASSERT_EQUAL_FATAL(n, 4);
  const double latency_us = END_ONLY_LATENCY_MS * 1e3;
  /* the first starts as it is queued and ends the latency later */
  CU_ASSERT(dur[0] >= latency_us && dur[0] < latency_us + 50e3);
  /* the next two start as the one before ends: queued behind it */
  for (int k = 1; k < 3; k++) {
    CU_ASSERT(fabs(ts[k] - (ts[k - 1] + dur[k - 1])) < 0.01);
    CU_ASSERT(dur[k] >= 0 && dur[k] < 50e3);
  }
  /* the last was queued on an idle queue: it starts after a gap */
  CU_ASSERT(ts[3] - (ts[2] + dur[2]) > 0.5 * latency_us);
  CU_ASSERT(dur[3] >= latency_us && dur[3] < latency_us + 50e3);
  json_decref(doc);
  hc_buffer_destroy(b);
  hc_device_close(d);
  hc_context_destroy(ctx);
}

static void register_tests(void) {
  CU_pSuite s = CU_add_suite("trace", NULL, NULL);
  CU_ADD_TEST(s, test_checker);
  CU_ADD_TEST(s, test_api_errors);
  CU_ADD_TEST(s, test_cap);
  CU_ADD_TEST(s, test_pipeline_cpu_pocl);
  CU_ADD_TEST(s, test_hcrun_unwritable);
  CU_ADD_TEST(s, test_hcrun_trace);
  CU_ADD_TEST(s, test_threads);
  CU_ADD_TEST(s, test_end_only_device_clock);
  CU_ADD_TEST(s, test_gpu_device_times);
}

TH_MAIN(register_tests)
