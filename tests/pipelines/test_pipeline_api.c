/* Pipelines through the C API (include/hc/pipeline.h): building, default
 * and explicit bindings, run order, residency (zero transfers between
 * stages on one device, asserted through the transfer counters), moves
 * across devices (listed, and the results identical), every validation
 * error with its exact message, a failing stage, reruns and cleanup (the
 * sanitizer and valgrind runs check that nothing leaks).
 *
 * Uses the test workloads saxpy and probe (build/test-plugins) and the glue
 * workloads; stages that need a second device run on opencl:0 when it is
 * there and print "skipped: ..." otherwise. */
#include <hc/pipeline.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define N 1000

static hc_context_t *ctx(void) { return th_context(); }

/* opencl:0 when it exists (else NULL and a skip line). */
static const char *second_device(void) { return th_device("opencl:0") ? "opencl:0" : NULL; }

static int have_workload(const char *w) {
  if (hc_workload_param_count(ctx(), w) || hc_workload_port_count(ctx(), w, 1)) return 1;
  char msg[128];
  snprintf(msg, sizeof msg, "workload %s not built", w);
  th_skip(msg);
  return 0;
}

/* Asserts a status and the exact last-error message. */
#define EXPECT_ERROR(expr, want_st, want_msg)                                                           \
  do {                                                                                                  \
    hc_status_t e_st_ = (expr);                                                                         \
    if (e_st_ != (want_st) || strcmp(hc_last_error(), (want_msg)))                                      \
      fprintf(stderr, "\n%s:%d: %s\n  expected %s: %s\n  got      %s: %s\n", __FILE__, __LINE__, #expr, \
              hc_status_name(want_st), (want_msg), hc_status_name(e_st_), hc_last_error());             \
    CU_ASSERT_EQUAL(e_st_, (want_st));                                                                  \
    CU_ASSERT_STRING_EQUAL(hc_last_error(), (want_msg));                                                \
  } while (0)

static int starts_with(const char *s, const char *prefix) {
  int ok = strncmp(s, prefix, strlen(prefix)) == 0;
  if (!ok) fprintf(stderr, "\n  expected a message starting '%s'\n  got '%s'\n", prefix, s);
  return ok;
}

static hc_pipeline_t *parse(const char *text) {
  hc_pipeline_t *p = NULL;
  hc_status_t st = hc_pipeline_parse(ctx(), text, &p);
  if (st != HC_OK) fprintf(stderr, "\nparse '%s': %s\n", text, hc_last_error());
  return p;
}

static double reduce_value(const hc_pipeline_t *p, uint32_t stage) {
  double v = NAN;
  hc_field_t *f = hc_job_output(hc_pipeline_stage_job(p, stage), "value");
  if (f) hc_field_read(f, &v);
  return v;
}

/* saxpy gives y[i] = 2 i + 1; scale factor=2 then sum: 2 * N^2. */
static void test_same_device_zero_transfers_api(void) {
  hc_pipeline_t *p = NULL;
  TH_ASSERT_OK(hc_pipeline_create(ctx(), &p));
  const char *sp[] = {"n=1000", "dtype=f64"};
  const char *sc[] = {"factor=2"};
  const char *rd[] = {"op=sum"};
  uint32_t i0 = 9, i1 = 9, i2 = 9;
  TH_ASSERT_OK(hc_pipeline_add_stage(p, "saxpy", sp, 2, "cpu", &i0));
  TH_ASSERT_OK(hc_pipeline_add_stage(p, "scale", sc, 1, NULL, &i1));
  TH_ASSERT_OK(hc_pipeline_add_stage(p, "reduce", rd, 1, NULL, &i2));
  CU_ASSERT_EQUAL(i0, 0);
  CU_ASSERT_EQUAL(i2, 2);
  CU_ASSERT_EQUAL(hc_pipeline_stage_count(p), 3);
  /* Stages without a device take the previous stage's. */
  CU_ASSERT_PTR_EQUAL(hc_pipeline_stage_device(p, 2), hc_pipeline_stage_device(p, 0));
  TH_ASSERT_OK(hc_pipeline_validate(p));
  CU_ASSERT_EQUAL(hc_pipeline_binding_count(p), 2);
  hc_pipeline_binding_t b;
  TH_ASSERT_OK(hc_pipeline_binding_get(p, 1, &b));
  CU_ASSERT_EQUAL(b.from, 1);
  CU_ASSERT_STRING_EQUAL(b.output, "out");
  CU_ASSERT_EQUAL(b.to, 2);
  CU_ASSERT_STRING_EQUAL(b.input, "in");
  CU_ASSERT_TRUE(b.is_default);

  TH_ASSERT_OK(hc_pipeline_run(p, 0));
  CU_ASSERT_DOUBLE_EQUAL(reduce_value(p, 2), 2.0 * N * N, 0);
  hc_pipeline_report_t r;
  hc_pipeline_report(p, &r);
  CU_ASSERT_EQUAL(r.status, HC_OK);
  CU_ASSERT_EQUAL(r.failed_stage, -1);
  CU_ASSERT_STRING_EQUAL(r.message, "");
  CU_ASSERT_EQUAL(r.stages_run, 3);
  CU_ASSERT_EQUAL(r.handovers, 2);
  CU_ASSERT_EQUAL(r.handovers_on_device, 2);
  CU_ASSERT_EQUAL(r.transfer_count, 0);
  CU_ASSERT_EQUAL(hc_pipeline_transfer_count(p), 0);
  /* Zero transfers of any kind between the stages... */
  CU_ASSERT_EQUAL(r.between.to_host_count, 0);
  CU_ASSERT_EQUAL(r.between.to_device_count, 0);
  CU_ASSERT_EQUAL(r.between.cross_device_count, 0);
  /* ...and the middle stage works on the device only. */
  hc_pipeline_stage_info_t si;
  TH_ASSERT_OK(hc_pipeline_stage_info(p, 1, &si));
  CU_ASSERT_EQUAL(si.state, HC_STAGE_DONE);
  CU_ASSERT_STRING_EQUAL(si.workload, "scale");
  CU_ASSERT_STRING_EQUAL(si.device, "cpu:0");
  CU_ASSERT_EQUAL(si.run.to_host_count + si.run.to_device_count + si.run.cross_device_count, 0);
  /* The only host transfers of the run: saxpy uploading its data, reduce
   * reading its 8-byte result for the metric. */
  CU_ASSERT_EQUAL(r.total.to_host_bytes, 8);
  CU_ASSERT_EQUAL(r.total.cross_device_count, 0);
  /* Every stage's outputs stay readable. */
  hc_field_t *y = hc_job_output(hc_pipeline_stage_job(p, 0), "y");
  hc_field_t *s = hc_job_output(hc_pipeline_stage_job(p, 1), "out");
  CU_ASSERT_PTR_NOT_NULL_FATAL(y);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  CU_ASSERT_EQUAL(hc_field_dtype(s), HC_F64);
  CU_ASSERT_EQUAL(hc_field_count(s), N);
  double last = 0;
  TH_ASSERT_OK(hc_buffer_read(hc_field_buffer(s), (N - 1) * sizeof(double), &last, sizeof last));
  CU_ASSERT_DOUBLE_EQUAL(last, 2.0 * (2 * (N - 1) + 1), 0);
  hc_pipeline_destroy(p);
}

/* The same through the text syntax, on every device there is. */
static void test_same_device_every_device(void) {
  const char *devs[] = {"cpu", "opencl", "cuda"};
  for (int d = 0; d < 3; d++) {
    hc_device_t *dev = th_device(devs[d]);
    if (!dev) continue;
    char spec[256];
    snprintf(spec, sizeof spec,
             "saxpy n=1000 dtype=f64 @%s | convert to=c128 | abs2 | scale factor=0.5 | reduce op=max",
             hc_device_name(dev));
    hc_pipeline_t *p = parse(spec);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    TH_ASSERT_OK(hc_pipeline_run(p, 0));
    hc_pipeline_report_t r;
    hc_pipeline_report(p, &r);
    CU_ASSERT_EQUAL(r.handovers, 4);
    CU_ASSERT_EQUAL(r.handovers_on_device, 4);
    CU_ASSERT_EQUAL(r.transfer_count, 0);
    CU_ASSERT_EQUAL(r.between.to_host_count + r.between.to_device_count + r.between.cross_device_count, 0);
    for (uint32_t k = 1; k < 4; k++) {
      hc_pipeline_stage_info_t si;
      hc_pipeline_stage_info(p, k, &si);
      CU_ASSERT_EQUAL(si.run.to_host_count + si.run.to_device_count, 0);
    }
    double top = 2.0 * (N - 1) + 1;
    CU_ASSERT_DOUBLE_EQUAL(reduce_value(p, 4), 0.5 * top * top, 0);
    /* Verification reads back to the host, of course: every stage passes. */
    TH_ASSERT_OK(hc_pipeline_run(p, HC_RUN_VERIFY));
    for (uint32_t k = 0; k < 5; k++) CU_ASSERT_EQUAL(hc_job_verified(hc_pipeline_stage_job(p, k), NULL), 1);
    hc_pipeline_destroy(p);
  }
}

/* cpu -> opencl -> cpu: each move listed; the numbers identical to the
 * one-device run (the stages here round exactly: a product by 2, a copy). */
static void test_cross_device_moves(void) {
  const char *other = second_device();
  if (!other) return;
  hc_pipeline_t *one = parse("saxpy n=1000 dtype=f32 @cpu | scale factor=2 | slice axis=0 index=-1 | reduce op=sum");
  char spec[256];
  snprintf(spec, sizeof spec,
           "saxpy n=1000 dtype=f32 @cpu | scale factor=2 @%s | slice axis=0 index=-1 | reduce op=sum @cpu", other);
  hc_pipeline_t *two = parse(spec);
  CU_ASSERT_PTR_NOT_NULL_FATAL(one);
  CU_ASSERT_PTR_NOT_NULL_FATAL(two);
  TH_ASSERT_OK(hc_pipeline_run(one, 0));
  TH_ASSERT_OK(hc_pipeline_run(two, 0));
  CU_ASSERT_EQUAL(reduce_value(one, 3), reduce_value(two, 3));
  CU_ASSERT_DOUBLE_EQUAL(reduce_value(two, 3), 2.0 * (2 * (N - 1) + 1), 0);
  float a[N], b[N];
  TH_ASSERT_OK(hc_field_read(hc_job_output(hc_pipeline_stage_job(one, 1), "out"), a));
  TH_ASSERT_OK(hc_field_read(hc_job_output(hc_pipeline_stage_job(two, 1), "out"), b));
  CU_ASSERT_EQUAL(memcmp(a, b, sizeof a), 0);

  hc_pipeline_report_t r;
  hc_pipeline_report(two, &r);
  CU_ASSERT_EQUAL(r.transfer_count, 2);
  CU_ASSERT_EQUAL(r.transfer_bytes, N * sizeof(float) + sizeof(float));
  CU_ASSERT_EQUAL(r.between.cross_device_count, 2); /* the context counted exactly the listed moves */
  CU_ASSERT_EQUAL(r.between.to_host_count + r.between.to_device_count, 0);
  CU_ASSERT_EQUAL(r.handovers, 3);
  CU_ASSERT_EQUAL(r.handovers_on_device, 1);
  CU_ASSERT_EQUAL_FATAL(hc_pipeline_transfer_count(two), 2);
  hc_pipeline_transfer_t t;
  TH_ASSERT_OK(hc_pipeline_transfer_get(two, 0, &t));
  CU_ASSERT_EQUAL(t.stage, 1);
  CU_ASSERT_STRING_EQUAL(t.input, "in");
  CU_ASSERT_EQUAL(t.from_stage, 0);
  CU_ASSERT_STRING_EQUAL(t.output, "y");
  CU_ASSERT_STRING_EQUAL(t.from_device, "cpu:0");
  CU_ASSERT_STRING_EQUAL(t.to_device, other);
  CU_ASSERT_EQUAL(t.bytes, N * sizeof(float));
  CU_ASSERT_TRUE(t.seconds > 0);
  TH_ASSERT_OK(hc_pipeline_transfer_get(two, 1, &t));
  CU_ASSERT_EQUAL(t.stage, 3);
  CU_ASSERT_EQUAL(t.from_stage, 2);
  CU_ASSERT_STRING_EQUAL(t.from_device, other);
  CU_ASSERT_STRING_EQUAL(t.to_device, "cpu:0");
  CU_ASSERT_EQUAL(hc_pipeline_transfer_get(two, 2, &t), HC_ERR_INVALID_ARG);
  hc_pipeline_destroy(one);
  hc_pipeline_destroy(two);
}

/* Two consumers on the other device share one move of the same field. */
static void test_one_move_for_two_consumers(void) {
  const char *other = second_device();
  if (!other) return;
  char spec[256];
  snprintf(spec, sizeof spec, "saxpy n=1000 dtype=f64 @cpu | scale factor=3 @%s | reduce op=sum saxpy.y>in", other);
  hc_pipeline_t *p = parse(spec);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  TH_ASSERT_OK(hc_pipeline_run(p, 0));
  hc_pipeline_report_t r;
  hc_pipeline_report(p, &r);
  CU_ASSERT_EQUAL(r.transfer_count, 1);
  CU_ASSERT_EQUAL(r.between.cross_device_count, 1);
  CU_ASSERT_EQUAL(r.handovers, 2);
  CU_ASSERT_DOUBLE_EQUAL(reduce_value(p, 2), (double)N * N, 0);
  hc_pipeline_destroy(p);
}

/* A field from outside, on the cpu, fed to a stage on another device. */
static void test_outside_field(void) {
  hc_device_t *cpu = th_device("cpu");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
  int64_t shape[2] = {3, 4};
  hc_field_t *f = NULL;
  TH_ASSERT_OK(hc_field_create(cpu, HC_C64, 2, shape, &f));
  float z[24];
  for (int i = 0; i < 12; i++) z[2 * i] = (float)i, z[2 * i + 1] = 1.0f;
  TH_ASSERT_OK(hc_field_write(f, z));
  const char *other = th_device("opencl:0") ? "opencl:0" : "cpu";
  hc_pipeline_t *p = NULL;
  TH_ASSERT_OK(hc_pipeline_create(ctx(), &p));
  const char *rd[] = {"op=sum"};
  TH_ASSERT_OK(hc_pipeline_add_stage(p, "abs2", NULL, 0, other, NULL));
  TH_ASSERT_OK(hc_pipeline_add_stage(p, "reduce", rd, 1, NULL, NULL));
  EXPECT_ERROR(hc_pipeline_run(p, 0), HC_ERR_PIPELINE, "pipeline: stage 1 (abs2): required input 'in' is not bound");
  TH_ASSERT_OK(hc_pipeline_set_input(p, 0, NULL, f));
  TH_ASSERT_OK(hc_pipeline_run(p, 0));
  double want = 0;
  for (int i = 0; i < 12; i++) want += (double)i * i + 1;
  CU_ASSERT_DOUBLE_EQUAL(reduce_value(p, 1), want, 0);
  hc_pipeline_report_t r;
  hc_pipeline_report(p, &r);
  CU_ASSERT_EQUAL(r.transfer_count, strcmp(other, "cpu") ? 1u : 0u);
  if (r.transfer_count) {
    hc_pipeline_transfer_t t;
    TH_ASSERT_OK(hc_pipeline_transfer_get(p, 0, &t));
    CU_ASSERT_EQUAL(t.from_stage, -1);
    CU_ASSERT_STRING_EQUAL(t.output, "");
    CU_ASSERT_EQUAL(t.bytes, 12 * 8);
  }
  hc_pipeline_binding_t b;
  TH_ASSERT_OK(hc_pipeline_binding_get(p, 0, &b));
  CU_ASSERT_EQUAL(b.from, -1);
  /* The outside field's dtype and rank take part in validation. */
  const char *cv[] = {"to=f32"};
  hc_pipeline_t *q = NULL;
  TH_ASSERT_OK(hc_pipeline_create(ctx(), &q));
  TH_ASSERT_OK(hc_pipeline_add_stage(q, "convert", cv, 1, "cpu", NULL));
  TH_ASSERT_OK(hc_pipeline_set_input(q, 0, "in", f));
  EXPECT_ERROR(hc_pipeline_validate(q), HC_ERR_PARAM,
               "pipeline: stage 1 (convert): convert: to=f32: input 'in' is c64 (complex) and would lose its imaginary "
               "part; say part=real or part=imag, or use abs2 for |z|^2");
  hc_pipeline_destroy(q);
  hc_pipeline_destroy(p);
  hc_field_destroy(f);
}

/* Every input port of every workload refuses, at hc_job_set_input and at
 * hc_pipeline_set_input, a field whose dtype or rank it does not take (and
 * binds nothing), and takes one it does. */
static void test_input_checked_at_the_call(void) {
  hc_device_t *cpu = th_device("cpu");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cpu);
  int64_t shape[5] = {2, 2, 2, 2, 2};
  uint32_t checked = 0;
  for (uint32_t w = 0; w < hc_workload_count(ctx()); w++) {
    hc_plugin_summary_t sum;
    TH_ASSERT_OK(hc_workload_get(ctx(), w, &sum));
    for (uint32_t i = 0; i < hc_workload_port_count(ctx(), sum.name, 0); i++) {
      const hc_port_spec_t *ps = hc_workload_port(ctx(), sum.name, 0, i);
      hc_job_t *job = NULL;
      TH_ASSERT_OK(hc_job_create(ctx(), sum.name, &job));
      hc_pipeline_t *p = NULL;
      TH_ASSERT_OK(hc_pipeline_create(ctx(), &p));
      TH_ASSERT_OK(hc_pipeline_add_stage(p, sum.name, NULL, 0, "cpu", NULL));
      for (int dt = 1; dt < HC_DTYPE_COUNT_; dt++)
        for (int32_t rank = 0; rank <= HC_MAX_DIMS; rank++) {
          hc_field_t *f = NULL;
          if (hc_field_create(cpu, (hc_dtype_t)dt, (uint32_t)rank, shape, &f) != HC_OK) continue;
          int fits = (ps->dtypes & HC_DTYPE_BIT(dt)) && rank >= ps->rank_min && rank <= ps->rank_max;
          hc_status_t st = hc_job_set_input(job, ps->name, f);
          hc_status_t pst = hc_pipeline_set_input(p, 0, ps->name, f);
          if (fits) {
            CU_ASSERT_EQUAL(st, HC_OK);
            CU_ASSERT_EQUAL(pst, HC_OK);
            CU_ASSERT_PTR_EQUAL(hc_job_input(job, ps->name), f);
          } else {
            if (st != HC_ERR_INVALID_ARG || !strstr(hc_last_error(), ps->name))
              fprintf(stderr, "%s.%s took a %s field of rank %d: %s\n", sum.name, ps->name,
                      hc_dtype_name((hc_dtype_t)dt), rank, hc_status_name(st));
            CU_ASSERT_EQUAL(st, HC_ERR_INVALID_ARG);
            CU_ASSERT_EQUAL(pst, HC_ERR_PIPELINE);
            CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), ps->name));
            checked++;
          }
          hc_job_set_input(job, ps->name, NULL);
          hc_pipeline_set_input(p, 0, ps->name, NULL);
          CU_ASSERT_PTR_NULL(hc_job_input(job, ps->name));
          hc_field_destroy(f);
        }
      hc_pipeline_destroy(p);
      hc_job_destroy(job);
    }
  }
  CU_ASSERT(checked > 0);
  /* the example of the report: a c64 field on simpson's f32|f64 port */
  hc_field_t *z = NULL;
  TH_ASSERT_OK(hc_field_create(cpu, HC_C64, 3, shape, &z));
  hc_job_t *job = NULL;
  TH_ASSERT_OK(hc_job_create(ctx(), "simpson", &job));
  EXPECT_ERROR(hc_job_set_input(job, "f", z), HC_ERR_INVALID_ARG, "simpson: input port 'f' does not take dtype c64");
  hc_job_destroy(job);
  hc_field_destroy(z);
}

/* Stages added in any order run producers first. */
static void test_run_order(void) {
  hc_pipeline_t *p = NULL;
  TH_ASSERT_OK(hc_pipeline_create(ctx(), &p));
  const char *rd[] = {"op=max"};
  const char *sp[] = {"n=1000", "dtype=f64"};
  TH_ASSERT_OK(hc_pipeline_add_stage(p, "reduce", rd, 1, "cpu", NULL));
  TH_ASSERT_OK(hc_pipeline_add_stage(p, "saxpy", sp, 2, NULL, NULL));
  TH_ASSERT_OK(hc_pipeline_bind(p, 1, "y", 0, "in"));
  TH_ASSERT_OK(hc_pipeline_run(p, 0));
  CU_ASSERT_DOUBLE_EQUAL(reduce_value(p, 0), 2.0 * (N - 1) + 1, 0);
  hc_pipeline_destroy(p);
}

/* ---------------------------------------------------------------- validation */

static void test_validation_messages(void) {
  hc_pipeline_t *p = NULL;
  TH_ASSERT_OK(hc_pipeline_create(ctx(), &p));
  EXPECT_ERROR(hc_pipeline_validate(p), HC_ERR_PIPELINE, "pipeline: no stages");
  EXPECT_ERROR(hc_pipeline_run(p, 0), HC_ERR_PIPELINE, "pipeline: no stages");
  hc_pipeline_destroy(p);

  /* Missing binding. */
  p = parse("scale factor=2 @cpu");
  EXPECT_ERROR(hc_pipeline_validate(p), HC_ERR_PIPELINE, "pipeline: stage 1 (scale): required input 'in' is not bound");
  hc_pipeline_destroy(p);

  /* Rank: reduce gives a rank-0 field, slice takes rank 1..4 (known
   * exactly through reduce's describe_output). */
  p = parse("saxpy n=10 @cpu | reduce | slice");
  EXPECT_ERROR(hc_pipeline_validate(p), HC_ERR_PIPELINE,
               "pipeline: stage 3 (slice): input 'in' takes rank 1..4, stage 2 (reduce) output 'value' gives rank 0");
  hc_pipeline_destroy(p);

  /* describe_output refusing a parameter against the input it will get. */
  p = parse("saxpy n=10 @cpu | reduce | convert to=c64 | reduce op=sum");
  EXPECT_ERROR(hc_pipeline_validate(p), HC_ERR_PARAM,
               "pipeline: stage 4 (reduce): reduce: op=sum: input 'in' is c64 (complex); only op=l2 takes a complex "
               "field (use abs2 or convert part=real first)");
  hc_pipeline_destroy(p);
  p = parse("saxpy n=10 @cpu | convert");
  EXPECT_ERROR(hc_pipeline_validate(p), HC_ERR_PARAM, "pipeline: stage 2 (convert): convert: give to=f32|f64|c64|c128");
  hc_pipeline_destroy(p);

  /* Cycles, with every edge named. */
  p = parse("scale @cpu | scale");
  TH_ASSERT_OK(hc_pipeline_bind(p, 1, "out", 0, "in"));
  EXPECT_ERROR(hc_pipeline_validate(p), HC_ERR_PIPELINE,
               "pipeline: cycle: stage 1 (scale) output 'out' -> stage 2 (scale) input 'in', stage 2 (scale) output "
               "'out' -> stage 1 (scale) input 'in'");
  hc_pipeline_destroy(p);
  p = parse("saxpy n=10 @cpu | scale | abs2 | reduce");
  TH_ASSERT_OK(hc_pipeline_bind(p, 2, NULL, 1, NULL)); /* abs2 -> scale, replacing saxpy -> scale */
  EXPECT_ERROR(hc_pipeline_validate(p), HC_ERR_PIPELINE,
               "pipeline: cycle: stage 2 (scale) output 'out' -> stage 3 (abs2) input 'in', stage 3 (abs2) output "
               "'out' -> stage 2 (scale) input 'in'");
  hc_pipeline_destroy(p);
  p = parse("scale @cpu");
  TH_ASSERT_OK(hc_pipeline_bind(p, 0, NULL, 0, NULL));
  EXPECT_ERROR(hc_pipeline_validate(p), HC_ERR_PIPELINE,
               "pipeline: cycle: stage 1 (scale) output 'out' -> stage 1 (scale) input 'in'");
  hc_pipeline_destroy(p);

  /* Binding errors name the stage and the ports there are. */
  p = parse("saxpy n=10 @cpu | scale | reduce");
  EXPECT_ERROR(hc_pipeline_bind(p, 0, "q", 1, "in"), HC_ERR_PIPELINE,
               "pipeline: stage 1 (saxpy) has no output 'q' (outputs: y)");
  EXPECT_ERROR(hc_pipeline_bind(p, 0, "y", 1, "q"), HC_ERR_PIPELINE,
               "pipeline: stage 2 (scale) has no input 'q' (inputs: in)");
  TH_ASSERT_OK(hc_pipeline_bind(p, 0, "y", 1, "in"));
  EXPECT_ERROR(hc_pipeline_bind(p, 0, "y", 1, "in"), HC_ERR_PIPELINE,
               "pipeline: stage 2 (scale): input 'in' is already bound to stage 1 (saxpy) output 'y'");
  hc_pipeline_destroy(p);
  p = parse("saxpy n=10 @cpu | scale | reduce");
  TH_ASSERT_OK(hc_pipeline_bind(p, 0, "y", 2, "in"));
  EXPECT_ERROR(hc_pipeline_bind(p, 1, NULL, 2, NULL), HC_ERR_PIPELINE,
               "pipeline: stage 3 (reduce): input 'in' is already bound to stage 1 (saxpy) output 'y'");
  EXPECT_ERROR(hc_pipeline_bind(p, 0, "y", 7, "in"), HC_ERR_PIPELINE, "pipeline: no stage 8 (the pipeline has 3)");
  EXPECT_ERROR(hc_pipeline_bind(p, 2, NULL, 0, NULL), HC_ERR_PIPELINE,
               "pipeline: stage 1 (saxpy) has no primary input (inputs: none)");
  hc_pipeline_destroy(p);

  /* Parameters are checked when the stage is added. */
  TH_ASSERT_OK(hc_pipeline_create(ctx(), &p));
  const char *bad[] = {"factor=abc"};
  EXPECT_ERROR(hc_pipeline_add_stage(p, "scale", bad, 1, "cpu", NULL), HC_ERR_PARAM,
               "pipeline: stage 1 (scale): parameter factor=abc: not a finite number");
  const char *unknown[] = {"m=3"};
  EXPECT_ERROR(hc_pipeline_add_stage(p, "saxpy", unknown, 1, "cpu", NULL), HC_ERR_PARAM,
               "pipeline: stage 1 (saxpy): workload 'saxpy' has no parameter 'm' (valid: n, a, dtype)");
  EXPECT_ERROR(hc_pipeline_add_stage(p, "saxpy", NULL, 0, "cpu:7", NULL), HC_ERR_PIPELINE,
               "pipeline: stage 1 (saxpy): device 'cpu:7' does not exist: backend 'cpu' has 1 device(s)");
  CU_ASSERT_EQUAL(hc_pipeline_add_stage(p, "nosuch", NULL, 0, "cpu", NULL), HC_ERR_PIPELINE);
  CU_ASSERT_TRUE(starts_with(hc_last_error(), "pipeline: stage 1: unknown workload 'nosuch' (available: "));
  CU_ASSERT_EQUAL(hc_pipeline_add_stage(p, "saxpy", NULL, 0, "nobackend", NULL), HC_ERR_PIPELINE);
  CU_ASSERT_TRUE(
      starts_with(hc_last_error(), "pipeline: stage 1 (saxpy): unknown backend 'nobackend' (loaded backends: "));
  CU_ASSERT_EQUAL(hc_pipeline_stage_count(p), 0); /* nothing half-added */
  hc_pipeline_destroy(p);

  /* A workload that cannot run on its device. */
  if (th_device("opencl:0")) {
    p = parse("probe @opencl:0");
    EXPECT_ERROR(hc_pipeline_validate(p), HC_ERR_UNSUPPORTED,
                 "pipeline: stage 1 (probe) cannot run on opencl:0: no kernel in a language the device accepts");
    hc_pipeline_destroy(p);
  }
}

/* Dtype mismatches need a stage with a real-only input: simpson, jacobi. */
static void test_validation_dtype(void) {
  if (!have_workload("simpson")) return;
  /* Known exactly: reduce describes its output, convert follows it. */
  hc_pipeline_t *p = parse("saxpy n=10 @cpu | reduce | convert to=c64 | simpson");
  EXPECT_ERROR(hc_pipeline_validate(p), HC_ERR_PIPELINE,
               "pipeline: stage 4 (simpson): input 'f' takes f32|f64, stage 3 (convert) output 'out' gives c64");
  hc_pipeline_destroy(p);
  /* saxpy has no describe_output, so convert cannot tell its rank either:
   * validation falls back to the port specs (any dtype: they intersect)
   * and the run itself refuses the field. */
  p = parse("saxpy n=10 @cpu | convert to=c64 | simpson");
  TH_ASSERT_OK(hc_pipeline_validate(p));
  EXPECT_ERROR(hc_pipeline_run(p, 0), HC_ERR_INVALID_ARG,
               "pipeline: stage 3 (simpson) failed: simpson: input port 'f' does not take dtype c64");
  hc_pipeline_destroy(p);
  if (!have_workload("jacobi")) return;
  /* saxpy declares rank 1..1 in its port spec (no describe_output). */
  p = parse("saxpy n=10 @cpu | jacobi n=9");
  EXPECT_ERROR(hc_pipeline_validate(p), HC_ERR_PIPELINE,
               "pipeline: stage 2 (jacobi): input 'f' takes rank 2..3, stage 1 (saxpy) output 'y' gives rank 1");
  hc_pipeline_destroy(p);
}

/* ---------------------------------------------------------------- failures */

static void test_failing_stage(void) {
  /* Fails at run time (saxpy gives rank 1, which validation can only know
   * as the port's range): stage 2 fails, stage 3 is skipped. */
  hc_pipeline_t *p = parse("saxpy n=10 @cpu | slice axis=1 | reduce");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  TH_ASSERT_OK(hc_pipeline_validate(p));
  EXPECT_ERROR(hc_pipeline_run(p, 0), HC_ERR_PARAM,
               "pipeline: stage 2 (slice) failed: workload 'slice' on cpu:0: slice: axis=1: input 'in' has rank 1 "
               "(axes 0..0)");
  hc_pipeline_report_t r;
  hc_pipeline_report(p, &r);
  CU_ASSERT_EQUAL(r.status, HC_ERR_PARAM);
  CU_ASSERT_EQUAL(r.failed_stage, 1);
  CU_ASSERT_EQUAL(r.stages_run, 1);
  CU_ASSERT_STRING_EQUAL(r.message, hc_last_error());
  hc_pipeline_stage_info_t si;
  hc_pipeline_stage_info(p, 0, &si);
  CU_ASSERT_EQUAL(si.state, HC_STAGE_DONE);
  hc_pipeline_stage_info(p, 1, &si);
  CU_ASSERT_EQUAL(si.state, HC_STAGE_FAILED);
  CU_ASSERT_EQUAL(si.status, HC_ERR_PARAM);
  hc_pipeline_stage_info(p, 2, &si);
  CU_ASSERT_EQUAL(si.state, HC_STAGE_SKIPPED);
  CU_ASSERT_PTR_NOT_NULL(hc_job_output(hc_pipeline_stage_job(p, 0), "y")); /* kept for the caller */
  CU_ASSERT_PTR_NULL(hc_job_output(hc_pipeline_stage_job(p, 2), "value"));
  hc_pipeline_destroy(p);

  /* A device error in the first stage. */
  p = parse("probe fail=runtime @cpu | abs2");
  EXPECT_ERROR(hc_pipeline_run(p, 0), HC_ERR_DEVICE,
               "pipeline: stage 1 (probe) failed: workload 'probe' on cpu:0: probe: fail=runtime asked for a device "
               "error");
  hc_pipeline_destroy(p);

  /* After a move, so the moved copy must be freed too (sanitizers). */
  const char *other = second_device();
  if (other) {
    char spec[128];
    snprintf(spec, sizeof spec, "saxpy n=10 @cpu | slice axis=2 @%s", other);
    p = parse(spec);
    EXPECT_ERROR(hc_pipeline_run(p, 0), HC_ERR_PARAM,
                 "pipeline: stage 2 (slice) failed: workload 'slice' on opencl:0: slice: axis=2: input 'in' has rank 1 "
                 "(axes 0..0)");
    hc_pipeline_report(p, &r);
    CU_ASSERT_EQUAL(r.transfer_count, 1);
    hc_pipeline_destroy(p);
  }

  /* An optional output that was not produced, bound to a required input. */
  if (have_workload("jacobi")) {
    p = parse("jacobi dim=2 n=9 iters=10 @cpu | scale jacobi.residual>in");
    EXPECT_ERROR(hc_pipeline_run(p, 0), HC_ERR_PIPELINE,
                 "pipeline: stage 2 (scale) failed: input 'in': stage 1 (jacobi) gave no output 'residual'");
    hc_pipeline_destroy(p);
  }
}

/* A failed verification does not stop the pipeline; the run says so. */
static void test_verification(void) {
  hc_pipeline_t *p = parse("probe fail=verify grid=8 @cpu | reduce op=max");
  hc_status_t st = hc_pipeline_run(p, HC_RUN_VERIFY);
  CU_ASSERT_EQUAL(st, HC_ERR_VERIFY);
  CU_ASSERT_PTR_NOT_NULL(strstr(hc_last_error(), "pipeline: stage 1 (probe): "));
  hc_pipeline_report_t r;
  hc_pipeline_report(p, &r);
  CU_ASSERT_EQUAL(r.stages_run, 2);
  CU_ASSERT_EQUAL(r.failed_stage, -1);
  CU_ASSERT_DOUBLE_EQUAL(reduce_value(p, 1), 7.0, 0);
  CU_ASSERT_EQUAL(hc_job_verified(hc_pipeline_stage_job(p, 1), NULL), 1);
  hc_pipeline_destroy(p);
}

/* Runs again: fresh outputs and report; rebinding after a run. */
static void test_rerun(void) {
  hc_pipeline_t *p = parse("saxpy n=1000 dtype=f64 @cpu | reduce op=sum");
  TH_ASSERT_OK(hc_pipeline_run(p, 0));
  TH_ASSERT_OK(hc_pipeline_run(p, 0));
  CU_ASSERT_DOUBLE_EQUAL(reduce_value(p, 1), (double)N * N, 0);
  /* A stage added after a run is validated and run with the rest. */
  const char *sc[] = {"factor=-1"};
  TH_ASSERT_OK(hc_pipeline_add_stage(p, "scale", sc, 1, NULL, NULL));
  TH_ASSERT_OK(hc_pipeline_run(p, 0));
  double v = 0;
  TH_ASSERT_OK(hc_field_read(hc_job_output(hc_pipeline_stage_job(p, 2), "out"), &v));
  CU_ASSERT_DOUBLE_EQUAL(v, -(double)N * N, 0);
  hc_pipeline_destroy(p);
  hc_pipeline_destroy(NULL);
}

static void register_tests(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/test-plugins", th_build_dir());
  setenv("HC_PLUGIN_PATH", dir, 1);
  CU_pSuite s = CU_add_suite("pipeline_api", NULL, NULL);
  CU_ADD_TEST(s, test_same_device_zero_transfers_api);
  CU_ADD_TEST(s, test_same_device_every_device);
  CU_ADD_TEST(s, test_cross_device_moves);
  CU_ADD_TEST(s, test_one_move_for_two_consumers);
  CU_ADD_TEST(s, test_outside_field);
  CU_ADD_TEST(s, test_input_checked_at_the_call);
  CU_ADD_TEST(s, test_run_order);
  CU_ADD_TEST(s, test_validation_messages);
  CU_ADD_TEST(s, test_validation_dtype);
  CU_ADD_TEST(s, test_failing_stage);
  CU_ADD_TEST(s, test_verification);
  CU_ADD_TEST(s, test_rerun);
}

TH_MAIN(register_tests)
