/* hcrun: reporting a job as a human table or as JSON, saving outputs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hc/trace.h>
#include <hc/transport.h>

#include "hcrun.h"

int hcrun_mkdirs(const char *dir) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", dir);
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
      *p = '/';
    }
  return (mkdir(buf, 0755) == 0 || errno == EEXIST) ? 0 : -1;
}

json_t *hcrun_json_real(double v) {
  if (isnan(v)) return json_string("NaN");
  if (isinf(v)) return json_string(v > 0 ? "Infinity" : "-Infinity");
  return json_real(v);
}

double hcrun_json_double(const json_t *v) {
  if (json_is_number(v)) return json_number_value(v);
  const char *s = json_string_value(v);
  if (s && !strcmp(s, "Infinity")) return INFINITY;
  if (s && !strcmp(s, "-Infinity")) return -INFINITY;
  return NAN;
}

hc_status_t hcrun_prepare_output(const char *dir) {
  struct stat sb;
  if (!*dir) return hc_error(HC_ERR_PARAM, "--output=: give a directory name");
  if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
    return hc_error(HC_ERR_PARAM, "--output=%s: exists and is not a directory", dir);
  if (hcrun_mkdirs(dir) != 0)
    return hc_error(HC_ERR_PARAM, "--output=%s: cannot create the directory: %s", dir, strerror(errno));
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return hc_error(HC_ERR_PARAM, "--output=%s: a part of the path is not a directory", dir);
  if (access(dir, W_OK | X_OK) != 0)
    return hc_error(HC_ERR_PARAM, "--output=%s: cannot write into the directory: %s", dir, strerror(errno));
  return HC_OK;
}

hc_status_t hcrun_check_output_files(const hc_job_t *job, const char *dir, const char *prefix) {
  hc_context_t *ctx = hc_job_context(job);
  uint32_t n = hc_workload_port_count(ctx, hc_job_workload(job), 1);
  for (uint32_t i = 0; i < n; i++) {
    const hc_port_spec_t *p = hc_workload_port(ctx, hc_job_workload(job), 1, i);
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s%s.npy", dir, prefix ? prefix : "", p->name);
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
      return hc_error(HC_ERR_PARAM, "--output=%s: %s exists and is not a regular file", dir, path);
  }
  return HC_OK;
}

void hcrun_list_job_files(const hc_job_t *job, json_t *files) {
  for (uint32_t i = 0; i < hc_job_file_count(job); i++)
    json_array_append_new(files, hcrun_json_str(hc_job_file(job, i)));
}

void hcrun_print_json(json_t *doc) {
  char *d = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
  char *s = d ? hcrun_json_escape_carriers(d) : NULL;
  free(d);
  if (s) {
    fputs(s, stdout);
    fputc('\n', stdout);
    free(s);
  }
}

json_t *hcrun_device_json(const hc_device_info_t *in, const char *id) {
  json_t *d = json_object();
  json_object_set_new(d, "id", hcrun_json_str(id));
  json_object_set_new(d, "name", hcrun_json_str(in->name));
  json_object_set_new(d, "type", hcrun_json_str(hc_device_type_name(in->type)));
  json_object_set_new(d, "vendor", hcrun_json_str(in->vendor));
  json_object_set_new(d, "platform", hcrun_json_str(in->platform));
  json_object_set_new(d, "driver", hcrun_json_str(in->driver));
  json_object_set_new(d, "arch", hcrun_json_str(in->arch));
  json_t *langs = json_array();
  for (int l = 0; l < HC_LANG_COUNT_; l++)
    if (in->languages & HC_LANG_BIT(l))
      json_array_append_new(langs, hcrun_json_str(hc_language_name((hc_language_t)l)));
  json_object_set_new(d, "languages", langs);
  json_object_set_new(d, "compute_units", json_integer(in->compute_units));
  json_object_set_new(d, "clock_mhz", json_integer(in->clock_mhz));
  json_object_set_new(d, "fp64", json_boolean(in->fp64));
  json_object_set_new(d, "global_mem_bytes", json_integer((json_int_t)in->global_mem_bytes));
  json_object_set_new(d, "max_alloc_bytes", json_integer((json_int_t)in->max_alloc_bytes));
  json_object_set_new(d, "local_mem_bytes", json_integer((json_int_t)in->local_mem_bytes));
  json_object_set_new(d, "l2_cache_bytes", json_integer((json_int_t)in->l2_cache_bytes));
  json_object_set_new(d, "l3_cache_bytes", json_integer((json_int_t)in->l3_cache_bytes));
  json_object_set_new(d, "max_work_group_size", json_integer(in->max_work_group_size));
  json_object_set_new(d, "preferred_group_multiple", json_integer(in->preferred_group_multiple));
  if (in->cc_major) {
    char cc[16];
    snprintf(cc, sizeof cc, "%u.%u", in->cc_major, in->cc_minor);
    json_object_set_new(d, "compute_capability", hcrun_json_str(cc));
  }
  json_object_set_new(d, "peak_fp32_gflops", hcrun_json_real(in->peak_fp32_gflops));
  json_object_set_new(d, "peak_fp64_gflops", hcrun_json_real(in->peak_fp64_gflops));
  json_object_set_new(d, "peak_bandwidth_gbs", hcrun_json_real(in->peak_bandwidth_gbs));
  return d;
}

json_t *hcrun_job_json(const hc_job_t *job) {
  json_t *o = json_object();
  json_object_set_new(o, "workload", hcrun_json_str(hc_job_workload(job)));
  json_t *params = json_object();
  for (uint32_t i = 0; i < hc_job_param_count(job); i++) {
    const char *n, *v;
    if (hc_job_param_applies(job, i) && hc_job_param_get(job, i, &n, &v) == HC_OK)
      json_object_set_new(params, n, hcrun_json_str(v));
  }
  json_object_set_new(o, "params", params);
  hc_job_times_t t;
  hc_job_times(job, &t);
  json_t *times = json_object();
  json_object_set_new(times, "wall_s", hcrun_json_real(t.wall_s));
  json_object_set_new(times, "compute_s", hcrun_json_real(t.compute_s));
  json_object_set_new(times, "device_s", hcrun_json_real(t.device_s));
  double build = 0, first_launch = 0;
  hc_job_build_time(job, &build, &first_launch);
  json_object_set_new(times, "build_s", hcrun_json_real(build));
  json_object_set_new(times, "first_launch_build_s", hcrun_json_real(first_launch));
  json_object_set_new(o, "times", times);
  json_t *metrics = json_object();
  for (uint32_t i = 0; i < hc_job_metric_count(job); i++) {
    const char *n, *u;
    double v;
    if (hc_job_metric(job, i, &n, &v, &u) != HC_OK) continue;
    json_t *m = json_object();
    json_object_set_new(m, "value", hcrun_json_real(v));
    json_object_set_new(m, "unit", hcrun_json_str(u));
    json_object_set_new(metrics, n, m);
  }
  json_object_set_new(o, "metrics", metrics);
  const char *msg;
  int ver = hc_job_verified(job, &msg);
  json_t *v = json_object();
  json_object_set_new(v, "passed", ver < 0 ? json_null() : json_boolean(ver));
  json_object_set_new(v, "message", hcrun_json_str(msg));
  json_object_set_new(o, "verification", v);
  json_t *notes = json_array();
  const char *p = hc_job_notes(job);
  while (*p) {
    size_t l = strcspn(p, "\n");
    json_array_append_new(notes, json_stringn(p, l));
    p += l + (p[l] == '\n');
  }
  json_object_set_new(o, "notes", notes);
  return o;
}

void hcrun_fmt_time(char *buf, size_t n, double s) {
  if (s <= 0)
    snprintf(buf, n, "-");
  else if (s < 1e-3)
    snprintf(buf, n, "%.2f us", s * 1e6);
  else if (s < 1)
    snprintf(buf, n, "%.3f ms", s * 1e3);
  else
    snprintf(buf, n, "%.3f s", s);
}

void hcrun_print_job(json_t *doc, const char *device_id) {
  printf("%-14s %s on %s\n", "workload", hcrun_json_bytes(json_object_get(doc, "workload")), device_id);
  printf("%-14s", "parameters");
  const char *key;
  json_t *v;
  json_object_foreach(json_object_get(doc, "params"), key, v) {
    if (*hcrun_json_bytes(v)) printf(" %s=%s", key, hcrun_json_bytes(v));
  }
  printf("\n");
  json_t *t = json_object_get(doc, "times");
  char a[32], b[32], c[32];
  hcrun_fmt_time(a, sizeof a, hcrun_json_double(json_object_get(t, "compute_s")));
  hcrun_fmt_time(b, sizeof b, hcrun_json_double(json_object_get(t, "device_s")));
  hcrun_fmt_time(c, sizeof c, hcrun_json_double(json_object_get(t, "wall_s")));
  printf("%-14s %s (device %s; whole run with setup %s)\n", "time", a, b, c);
  const double build = hcrun_json_double(json_object_get(t, "build_s"));
  if (build > 0) {
    hcrun_fmt_time(a, sizeof a, build);
    hcrun_fmt_time(b, sizeof b, hcrun_json_double(json_object_get(t, "first_launch_build_s")));
    printf("%-14s %s building kernels (%s of it at first launches); not in the time above\n", "build", a,
           b[0] == '-' ? "none" : b);
  }
  json_object_foreach(json_object_get(doc, "metrics"), key, v) {
    printf("  %-22s %.10g %s\n", key, hcrun_json_double(json_object_get(v, "value")),
           hcrun_json_bytes(json_object_get(v, "unit")));
  }
  size_t i;
  json_array_foreach(json_object_get(doc, "notes"), i, v) printf("  note: %s\n", hcrun_json_bytes(v));
  json_t *ver = json_object_get(doc, "verification");
  json_t *passed = json_object_get(ver, "passed");
  const char *msg = hcrun_json_bytes(json_object_get(ver, "message"));
  if (!json_is_null(passed))
    printf("%-14s %s%s%s\n", "verification", json_is_true(passed) ? "PASSED" : "FAILED", msg && *msg ? ": " : "",
           msg ? msg : "");
}

hc_status_t hcrun_save_outputs(hc_job_t *job, hc_devset_t *ranks, const char *dir, const char *prefix, json_t *files) {
  hc_context_t *ctx = hc_job_context(job);
  uint32_t n = hc_workload_port_count(ctx, hc_job_workload(job), 1);
  for (uint32_t i = 0; i < n; i++) {
    const hc_port_spec_t *p = hc_workload_port(ctx, hc_job_workload(job), 1, i);
    hc_field_t *f = hc_job_output(job, p->name);
    if (!f && !ranks) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%s.npy", dir, prefix ? prefix : "", p->name);
    int written = 1;
    hc_status_t st = ranks ? hc_devset_save_output(ranks, job, p->name, path, &written) : hc_field_save_npy(f, path);
    if (st != HC_OK) return st;
    if (!written) continue;
    hcrun_note_written(path);
    if (files) json_array_append_new(files, hcrun_json_str(path));
  }
  return HC_OK;
}

json_t *hcrun_usage_json(hc_context_t *ctx) {
  if (!hc_trace_active(ctx)) return NULL;
  json_t *a = json_array();
  for (uint32_t i = 0; i < hc_device_count(ctx); i++) {
    hc_trace_usage_t u = {.size = sizeof u};
    if (hc_trace_usage(ctx, i, &u) != HC_OK || !u.events) continue;
    const double w = u.window_s > 0 ? u.window_s : 1;
    const double busy = u.compute_s + u.transfer_s;
    json_t *o = json_object();
    json_object_set_new(o, "device", hcrun_json_str(hc_device_id(ctx, i)));
    json_object_set_new(o, "events", json_integer((json_int_t)u.events));
    json_object_set_new(o, "window_s", json_real(u.window_s));
    json_object_set_new(o, "compute_s", json_real(u.compute_s));
    json_object_set_new(o, "transfer_s", json_real(u.transfer_s));
    json_object_set_new(o, "idle_s", json_real(u.window_s > busy ? u.window_s - busy : 0));
    json_object_set_new(o, "busy_fraction", json_real(busy / w));
    json_object_set_new(o, "compute_fraction", json_real(u.compute_s / w));
    json_object_set_new(o, "transfer_fraction", json_real(u.transfer_s / w));
    json_object_set_new(o, "idle_fraction", json_real(busy < w ? 1 - busy / w : 0));
    json_array_append_new(a, o);
  }
  return a;
}

void hcrun_print_usage(hc_context_t *ctx) {
  json_t *a = hcrun_usage_json(ctx);
  size_t i;
  json_t *o;
  json_array_foreach(a, i, o) {
    char w[32];
    hcrun_fmt_time(w, sizeof w, json_real_value(json_object_get(o, "window_s")));
    printf("%-14s %s busy %.1f%% of %s (compute %.1f%%, transfers %.1f%%), idle %.1f%%\n", "utilisation",
           json_string_value(json_object_get(o, "device")), 100 * json_real_value(json_object_get(o, "busy_fraction")),
           w, 100 * json_real_value(json_object_get(o, "compute_fraction")),
           100 * json_real_value(json_object_get(o, "transfer_fraction")),
           100 * json_real_value(json_object_get(o, "idle_fraction")));
  }
  json_decref(a);
}

json_t *hcrun_split_json(const hc_devset_t *set, double compute_s) {
  json_t *o = json_object();
  json_object_set_new(o, "plan", hcrun_json_str(hc_devset_plan(set)));
  json_t *parts = json_array();
  for (uint32_t i = 0; i < hc_devset_parts(set); i++) {
    hc_part_stats_t s = {.size = sizeof s};
    if (hc_devset_part_stats(set, i, &s) != HC_OK) continue;
    json_t *p = json_object();
    json_object_set_new(p, "device", hcrun_json_str(s.device));
    json_object_set_new(p, "lo", json_integer((json_int_t)s.lo));
    json_object_set_new(p, "hi", json_integer((json_int_t)s.hi));
    json_object_set_new(p, "rows", json_integer((json_int_t)(s.hi - s.lo)));
    json_object_set_new(p, "weight", json_real(s.weight));
    json_object_set_new(p, "compute_s", json_real(s.compute_s));
    json_object_set_new(p, "device_s", json_real(s.device_s));
    json_object_set_new(p, "idle_s", json_real(s.idle_s));
    json_object_set_new(p, "halo_s", json_real(s.halo_s));
    json_object_set_new(p, "halo_bytes", json_integer((json_int_t)s.halo_bytes));
    json_object_set_new(p, "halo_peer_bytes", json_integer((json_int_t)s.halo_peer_bytes));
    json_object_set_new(p, "halo_direct_bytes", json_integer((json_int_t)s.halo_direct_bytes));
    json_object_set_new(p, "collective_s", json_real(s.collective_s));
    json_object_set_new(p, "collectives", json_integer((json_int_t)s.collectives));
    json_array_append_new(parts, p);
  }
  json_object_set_new(o, "parts", parts);
  /* Against the performance history's best single device (its rate for
   * this configuration, from earlier runs): hcrun times no device alone. */
  const char *best = NULL;
  const double best_s = hc_devset_best_single(set, &best);
  json_object_set_new(o, "beats_best_single",
                      hcrun_json_str(best_s <= 0          ? "not measured"
                                     : compute_s < best_s ? "yes"
                                                          : "no"));
  json_t *b = json_object();
  json_object_set_new(b, best_s > 0 ? "device" : "why", hcrun_json_str(best));
  if (best_s > 0) json_object_set_new(b, "predicted_s", json_real(best_s));
  json_object_set_new(b, "compute_s", json_real(compute_s));
  json_object_set_new(o, "best_single", b);
  return o;
}

void hcrun_print_split(json_t *split) {
  if (!split) return;
  printf("%-14s %s\n", "split", json_string_value(json_object_get(split, "plan")));
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(split, "parts"), i, p) {
    char c[32], d[32], w[32], h[32], k[32];
    hcrun_fmt_time(c, sizeof c, json_real_value(json_object_get(p, "compute_s")));
    hcrun_fmt_time(d, sizeof d, json_real_value(json_object_get(p, "device_s")));
    hcrun_fmt_time(w, sizeof w, json_real_value(json_object_get(p, "idle_s")));
    hcrun_fmt_time(h, sizeof h, json_real_value(json_object_get(p, "halo_s")));
    hcrun_fmt_time(k, sizeof k, json_real_value(json_object_get(p, "collective_s")));
    long long hb = (long long)json_integer_value(json_object_get(p, "halo_bytes")),
              peer = (long long)json_integer_value(json_object_get(p, "halo_peer_bytes")),
              direct = (long long)json_integer_value(json_object_get(p, "halo_direct_bytes"));
    printf("  part %zu %-9s rows %lld..%lld (%.1f%%)  compute %s  device %s  idle %s  halo %s, %lld B%s  "
           "collectives %s\n",
           i, json_string_value(json_object_get(p, "device")), (long long)json_integer_value(json_object_get(p, "lo")),
           (long long)json_integer_value(json_object_get(p, "hi")), 100 * json_real_value(json_object_get(p, "weight")),
           c, d, w, h, hb,
           !hb            ? ""
           : peer == hb   ? " peer"
           : direct == hb ? " in place"
           : peer         ? " part peer"
                          : " staged",
           k);
  }
  json_t *b = json_object_get(split, "best_single");
  const char *beats = json_string_value(json_object_get(split, "beats_best_single"));
  if (json_object_get(b, "predicted_s")) {
    char run[32], alone[32];
    hcrun_fmt_time(run, sizeof run, json_real_value(json_object_get(b, "compute_s")));
    hcrun_fmt_time(alone, sizeof alone, json_real_value(json_object_get(b, "predicted_s")));
    printf("  %-22s %s: %s against %s for %s alone (its rate in the history)\n", "beats best single", beats, run, alone,
           json_string_value(json_object_get(b, "device")));
  } else {
    printf("  %-22s %s (%s)\n", "beats best single", beats, json_string_value(json_object_get(b, "why")));
  }
}
