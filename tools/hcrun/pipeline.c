/* hcrun --pipeline='W1 k=v @dev | W2 ...' and --pipeline-file=FILE: builds
 * the pipeline (hc_pipeline_parse), runs it, reports each stage, the
 * transfers between devices and the totals, as text or --json, and with
 * --output=DIR writes every stage's outputs as DIR/<stage>-<workload>-<port>.npy
 * (stages numbered from 1). Exit codes as for single runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hc/pipeline.h>

#include "hcrun.h"
#include "options.h"

static const char *const state_names[] = {"pending", "done", "failed", "skipped"};

static void fmt_bytes(char *buf, size_t n, double b) {
  if (b < 1e3)
    snprintf(buf, n, "%.0f B", b);
  else if (b < 1e6)
    snprintf(buf, n, "%.2f kB", b / 1e3);
  else if (b < 1e9)
    snprintf(buf, n, "%.2f MB", b / 1e6);
  else
    snprintf(buf, n, "%.2f GB", b / 1e9);
}

/* Reads a whole file; NULL with errno set on failure, or with errno 0 and
 * hc_last_error() saying why when it is not a regular file that opens (a
 * FIFO would block the read). */
static char *read_text(const char *path) {
  FILE *f = NULL;
  if (hc_fopen_regular(path, &f) != HC_OK) {
    errno = 0;
    return NULL;
  }
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  for (size_t r; buf && (r = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
    len += r;
    if (cap - len < 2) {
      char *g = realloc(buf, cap *= 2);
      if (!g) {
        free(buf);
        buf = NULL;
      } else
        buf = g;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    if (!errno) errno = EIO;
    return NULL;
  }
  buf[len] = '\0';
  if (strlen(buf) != len) { /* a NUL byte: not a text file */
    free(buf);
    errno = EINVAL;
    return NULL;
  }
  return buf;
}

static json_t *error_json(hc_status_t st, const char *message) {
  json_t *e = json_object();
  json_object_set_new(e, "status", hcrun_json_str(hc_status_name(st)));
  json_object_set_new(e, "message", hcrun_json_str(message));
  json_object_set_new(e, "exit_code", json_integer(hcrun_exit_code(st)));
  return e;
}

/* Before anything ran: the message, and with --json an error document. */
static int fail_early(hc_status_t st, int json) {
  fprintf(stderr, "hcrun: %s\n", hc_last_error());
  if (json) {
    json_t *doc = json_object();
    json_object_set_new(doc, "error", error_json(st, hc_last_error()));
    hcrun_print_json(doc);
    json_decref(doc);
  }
  return hcrun_exit_code(st);
}

static json_t *stats_json(const hc_transfer_stats_t *t) {
  json_t *o = json_object();
  json_object_set_new(o, "to_device_count", json_integer((json_int_t)t->to_device_count));
  json_object_set_new(o, "to_device_bytes", json_integer((json_int_t)t->to_device_bytes));
  json_object_set_new(o, "to_host_count", json_integer((json_int_t)t->to_host_count));
  json_object_set_new(o, "to_host_bytes", json_integer((json_int_t)t->to_host_bytes));
  json_object_set_new(o, "cross_device_count", json_integer((json_int_t)t->cross_device_count));
  json_object_set_new(o, "cross_device_bytes", json_integer((json_int_t)t->cross_device_bytes));
  json_object_set_new(o, "seconds", hcrun_json_real(t->seconds));
  return o;
}

static json_t *stage_json(const hc_pipeline_t *p, uint32_t k) {
  hc_pipeline_stage_info_t si;
  hc_pipeline_stage_info(p, k, &si);
  json_t *o = json_object();
  json_object_set_new(o, "stage", json_integer(k + 1));
  json_object_set_new(o, "device", hcrun_json_str(si.device));
  json_object_set_new(o, "state", hcrun_json_str(state_names[si.state]));
  json_t *job = hcrun_job_json(hc_pipeline_stage_job(p, k));
  json_object_update(o, job);
  json_decref(job);
  json_t *ins = json_array();
  for (uint32_t i = 0; i < hc_pipeline_binding_count(p); i++) {
    hc_pipeline_binding_t b;
    if (hc_pipeline_binding_get(p, i, &b) != HC_OK || b.to != k) continue;
    json_t *jb = json_object();
    json_object_set_new(jb, "input", hcrun_json_str(b.input));
    json_object_set_new(jb, "from_stage", b.from < 0 ? json_null() : json_integer(b.from + 1));
    json_object_set_new(jb, "output", hcrun_json_str(b.output));
    json_object_set_new(jb, "default", json_boolean(b.is_default));
    json_array_append_new(ins, jb);
  }
  json_object_set_new(o, "inputs", ins);
  hc_devset_t *set = hc_pipeline_stage_set(p, k);
  if (set && hc_devset_parts(set) > 1) json_object_set_new(o, "split", hcrun_split_json(set, si.times.compute_s));
  json_object_set_new(o, "handover_s", hcrun_json_real(si.handover_s));
  json_object_set_new(o, "transfers_during_run", stats_json(&si.run));
  return o;
}

static json_t *transfers_json(const hc_pipeline_t *p) {
  json_t *a = json_array();
  for (uint32_t i = 0; i < hc_pipeline_transfer_count(p); i++) {
    hc_pipeline_transfer_t t;
    if (hc_pipeline_transfer_get(p, i, &t) != HC_OK) continue;
    json_t *o = json_object();
    json_object_set_new(o, "stage", json_integer(t.stage + 1));
    json_object_set_new(o, "input", hcrun_json_str(t.input));
    json_object_set_new(o, "from_stage", t.from_stage < 0 ? json_null() : json_integer(t.from_stage + 1));
    json_object_set_new(o, "output", hcrun_json_str(t.output));
    json_object_set_new(o, "from_device", hcrun_json_str(t.from_device));
    json_object_set_new(o, "to_device", hcrun_json_str(t.to_device));
    json_object_set_new(o, "bytes", json_integer((json_int_t)t.bytes));
    json_object_set_new(o, "seconds", hcrun_json_real(t.seconds));
    json_array_append_new(a, o);
  }
  return a;
}

static json_t *totals_json(const hc_pipeline_report_t *r) {
  json_t *o = json_object();
  json_object_set_new(o, "wall_s", hcrun_json_real(r->wall_s));
  json_object_set_new(o, "compute_s", hcrun_json_real(r->compute_s));
  json_object_set_new(o, "device_s", hcrun_json_real(r->device_s));
  json_object_set_new(o, "stages_run", json_integer(r->stages_run));
  json_object_set_new(o, "handovers", json_integer(r->handovers));
  json_object_set_new(o, "handovers_on_device", json_integer(r->handovers_on_device));
  json_object_set_new(o, "transfer_count", json_integer(r->transfer_count));
  json_object_set_new(o, "transfer_bytes", json_integer((json_int_t)r->transfer_bytes));
  json_object_set_new(o, "transfer_s", hcrun_json_real(r->transfer_s));
  json_object_set_new(o, "host_transfers_between_stages",
                      json_integer((json_int_t)(r->between.to_host_count + r->between.to_device_count)));
  json_object_set_new(o, "between_stages", stats_json(&r->between));
  json_object_set_new(o, "whole_run", stats_json(&r->total));
  return o;
}

/* Distinct devices of the stages, each once, in stage order. */
static json_t *devices_json(const hc_pipeline_t *p) {
  json_t *a = json_array();
  for (uint32_t k = 0; k < hc_pipeline_stage_count(p); k++) {
    hc_device_t *d = hc_pipeline_stage_device(p, k);
    int seen = 0;
    for (uint32_t j = 0; j < k; j++) seen |= hc_pipeline_stage_device(p, j) == d;
    if (!seen) json_array_append_new(a, hcrun_device_json(hc_device_info(d), hc_device_name(d)));
  }
  return a;
}

static void print_stage(const hc_pipeline_t *p, uint32_t k) {
  hc_pipeline_stage_info_t si;
  hc_pipeline_stage_info(p, k, &si);
  hc_job_t *job = hc_pipeline_stage_job(p, k);
  char head[32], a[32], b[32];
  snprintf(head, sizeof head, "stage %u", k + 1);
  if (si.state != HC_STAGE_DONE) {
    printf("%-14s %s on %s: %s\n", head, si.workload, si.device, state_names[si.state]);
    return;
  }
  hcrun_fmt_time(a, sizeof a, si.times.compute_s);
  hcrun_fmt_time(b, sizeof b, si.times.device_s);
  double build = 0;
  hc_job_build_time(job, &build, NULL);
  char c[48] = "";
  if (build > 0) {
    snprintf(c, sizeof c, "; building kernels ");
    hcrun_fmt_time(c + strlen(c), sizeof c - strlen(c), build);
  }
  printf("%-14s %s on %s: %s (device %s%s)\n", head, si.workload, si.device, a, b, c);
  printf("%-14s", "");
  for (uint32_t i = 0; i < hc_job_param_count(job); i++) {
    const char *n, *v;
    if (hc_job_param_get(job, i, &n, &v) == HC_OK && *v && hc_job_param_applies(job, i)) printf(" %s=%s", n, v);
  }
  printf("\n");
  for (uint32_t i = 0; i < hc_pipeline_binding_count(p); i++) {
    hc_pipeline_binding_t bd;
    if (hc_pipeline_binding_get(p, i, &bd) != HC_OK || bd.to != k || bd.from < 0) continue;
    hc_pipeline_stage_info_t fi;
    hc_pipeline_stage_info(p, (uint32_t)bd.from, &fi);
    printf("%-14s  %s <- stage %d (%s) %s%s\n", "", bd.input, bd.from + 1, fi.workload, bd.output,
           strcmp(fi.device, si.device) ? " (moved)" : " (on device)");
  }
  for (uint32_t i = 0; i < hc_job_metric_count(job); i++) {
    const char *n, *u;
    double v;
    if (hc_job_metric(job, i, &n, &v, &u) == HC_OK) printf("%-14s  %-22s %.10g %s\n", "", n, v, u);
  }
  const char *msg;
  int ver = hc_job_verified(job, &msg);
  if (ver >= 0) printf("%-14s  verification %s%s%s\n", "", ver ? "PASSED" : "FAILED", *msg ? ": " : "", msg);
  hc_devset_t *set = hc_pipeline_stage_set(p, k);
  if (set && hc_devset_parts(set) > 1) {
    json_t *split = hcrun_split_json(set, si.times.compute_s);
    hcrun_print_split(split);
    json_decref(split);
  }
}

static void print_report(const hc_pipeline_t *p) {
  hc_pipeline_report_t r;
  hc_pipeline_report(p, &r);
  uint32_t n = hc_pipeline_stage_count(p);
  for (uint32_t k = 0; k < n; k++) print_stage(p, k);
  char a[32], b[32], c[32];
  for (uint32_t i = 0; i < hc_pipeline_transfer_count(p); i++) {
    hc_pipeline_transfer_t t;
    if (hc_pipeline_transfer_get(p, i, &t) != HC_OK) continue;
    fmt_bytes(a, sizeof a, (double)t.bytes);
    hcrun_fmt_time(b, sizeof b, t.seconds);
    char from[96];
    if (t.from_stage < 0)
      snprintf(from, sizeof from, "outside field");
    else {
      hc_pipeline_stage_info_t fi;
      hc_pipeline_stage_info(p, (uint32_t)t.from_stage, &fi);
      snprintf(from, sizeof from, "stage %d (%s) %s", t.from_stage + 1, fi.workload, t.output);
    }
    hc_pipeline_stage_info_t ti;
    hc_pipeline_stage_info(p, t.stage, &ti);
    printf("%-14s %s -> stage %u (%s) %s: %s -> %s, %s in %s (%.3g GB/s)\n", "transfer", from, t.stage + 1, ti.workload,
           t.input, t.from_device, t.to_device, a, b, t.seconds > 0 ? (double)t.bytes / t.seconds / 1e9 : 0.0);
  }
  hcrun_fmt_time(a, sizeof a, r.wall_s);
  hcrun_fmt_time(b, sizeof b, r.compute_s);
  hcrun_fmt_time(c, sizeof c, r.device_s);
  printf("%-14s wall %s; compute %s, device %s over %u of %u stages\n", "total", a, b, c, r.stages_run, n);
  fmt_bytes(a, sizeof a, (double)r.transfer_bytes);
  hcrun_fmt_time(b, sizeof b, r.transfer_s);
  printf("%-14s %u hand-overs, %u on the device; %u transfers between devices (%s, %s); host transfers between "
         "stages: %llu\n",
         "data", r.handovers, r.handovers_on_device, r.transfer_count, a, b,
         (unsigned long long)(r.between.to_host_count + r.between.to_device_count));
}

static hc_status_t save_all(hc_pipeline_t *p, const char *dir, json_t *files) {
  for (uint32_t k = 0; k < hc_pipeline_stage_count(p); k++) {
    hc_pipeline_stage_info_t si;
    hc_pipeline_stage_info(p, k, &si);
    if (si.state != HC_STAGE_DONE) continue;
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%u-%s-", k + 1, si.workload);
    hcrun_list_job_files(hc_pipeline_stage_job(p, k), files);
    hc_status_t st = hcrun_save_outputs(hc_pipeline_stage_job(p, k), NULL, dir, prefix, files);
    if (st != HC_OK) return st;
  }
  return HC_OK;
}

int hcrun_pipeline(hc_context_t *ctx, const hcrun_options_t *o) {
  if (o->device) {
    hc_error(HC_ERR_PIPELINE, "--device/--backend do not apply to pipelines: give each stage its @device");
    return fail_early(HC_ERR_PIPELINE, o->json);
  }
  if (o->repeat > 1) {
    hc_error(HC_ERR_PIPELINE, "--repeat is for single runs, not pipelines");
    return fail_early(HC_ERR_PIPELINE, o->json);
  }
  char *text = NULL;
  if (o->pipeline_file) {
    errno = 0;
    text = read_text(o->pipeline_file);
    if (!text) {
      if (!errno)
        hc_error_prefix(HC_ERR_PIPELINE, "--pipeline-file=");
      else
        hc_error(HC_ERR_PIPELINE, "--pipeline-file=%s: %s", o->pipeline_file,
                 errno == EINVAL ? "not a text file" : strerror(errno));
      return fail_early(HC_ERR_PIPELINE, o->json);
    }
  }
  hc_pipeline_t *p = NULL;
  hc_status_t st = hc_pipeline_parse(ctx, text ? text : o->pipeline, &p);
  if (st == HC_OK) st = hc_pipeline_validate(p);
  if (st == HC_OK && o->output) st = hcrun_prepare_output(o->output);
  for (uint32_t k = 0; st == HC_OK && o->output && k < hc_pipeline_stage_count(p); k++) {
    hc_pipeline_stage_info_t si;
    hc_pipeline_stage_info(p, k, &si);
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%u-%s-", k + 1, si.workload);
    st = hcrun_check_output_files(hc_pipeline_stage_job(p, k), o->output, prefix);
  }
  if (st == HC_OK && o->output) st = hc_pipeline_set_output_dir(p, o->output);
  if (st != HC_OK) {
    hc_pipeline_destroy(p);
    free(text);
    return fail_early(st, o->json);
  }
  st = hc_pipeline_run(p, o->verify ? HC_RUN_VERIFY : 0);
  hc_pipeline_report_t r;
  hc_pipeline_report(p, &r);
  json_t *files = json_array();
  hc_status_t sst = o->output && (st == HC_OK || st == HC_ERR_VERIFY) ? save_all(p, o->output, files) : HC_OK;
  char save_msg[1024] = "";
  if (sst != HC_OK) snprintf(save_msg, sizeof save_msg, "%s", hc_last_error());
  if (o->json) {
    json_t *doc = json_object();
    json_object_set_new(doc, "hc_version", hcrun_json_str(hc_version()));
    json_object_set_new(doc, "pipeline", hcrun_json_str(text ? text : o->pipeline));
    json_object_set_new(doc, "devices", devices_json(p));
    json_t *stages = json_array();
    for (uint32_t k = 0; k < hc_pipeline_stage_count(p); k++) json_array_append_new(stages, stage_json(p, k));
    json_object_set_new(doc, "stages", stages);
    json_object_set_new(doc, "transfers", transfers_json(p));
    json_object_set_new(doc, "totals", totals_json(&r));
    json_object_set_new(doc, "outputs", json_incref(files));
    json_t *usage = hcrun_usage_json(ctx);
    if (usage) json_object_set_new(doc, "utilisation", usage);
    /* The status tells the truth: a failed write is a failed run. */
    const char *status = st == HC_OK && sst == HC_OK           ? "ok"
                         : st == HC_ERR_VERIFY && sst == HC_OK ? "verification failed"
                                                               : "failed";
    json_object_set_new(doc, "status", hcrun_json_str(status));
    if (st != HC_OK && st != HC_ERR_VERIFY) {
      json_t *e = error_json(st, r.message);
      json_object_set_new(e, "failed_stage", r.failed_stage < 0 ? json_null() : json_integer(r.failed_stage + 1));
      json_object_set_new(doc, "error", e);
    } else if (sst != HC_OK) {
      char m[1100];
      snprintf(m, sizeof m, "writing outputs: %s", save_msg);
      json_object_set_new(doc, "error", error_json(sst, m));
    }
    hcrun_print_json(doc);
    json_decref(doc);
  } else {
    print_report(p);
    hcrun_print_usage(ctx);
    size_t i;
    json_t *v;
    json_array_foreach(files, i, v) printf("%-14s %s\n", "wrote", hcrun_json_bytes(v));
  }
  json_decref(files);
  int code = HCRUN_OK;
  if (st != HC_OK) {
    fprintf(stderr, "hcrun: %s\n", r.message);
    code = hcrun_exit_code(st);
  }
  if (sst != HC_OK) {
    fprintf(stderr, "hcrun: writing outputs: %s\n", save_msg);
    if (code == HCRUN_OK) code = hcrun_exit_code(sst);
  }
  hc_pipeline_destroy(p);
  free(text);
  return code;
}
