/* hcrun --list and --workload=W --help. */
#include <stdio.h>
#include <string.h>

#include "hcrun.h"

static void languages_text(uint32_t mask, char *buf, size_t n) {
  buf[0] = '\0';
  size_t len = 0;
  for (int l = 0; l < HC_LANG_COUNT_; l++)
    if (mask & HC_LANG_BIT(l))
      len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "," : "", hc_language_name((hc_language_t)l));
}

int hcrun_list(hc_context_t *ctx, int json) {
  json_t *doc = json ? json_object() : NULL;
  json_t *jb = json ? json_array() : NULL;
  if (!json) printf("Backends:\n");
  for (uint32_t b = 0; b < hc_backend_count(ctx); b++) {
    hc_plugin_summary_t s;
    hc_backend_get(ctx, b, &s);
    const char *why = hc_backend_status(ctx, b);
    json_t *devs = json ? json_array() : NULL;
    uint32_t ndev = 0;
    if (!json) printf("  %-10s %s  (%s)\n", s.name, s.summary, s.path);
    for (uint32_t i = 0; i < hc_device_count(ctx); i++) {
      const char *id = hc_device_id(ctx, i);
      size_t bl = strlen(s.name);
      if (strncmp(id, s.name, bl) || id[bl] != ':') continue;
      hc_device_info_t in;
      hc_device_query(ctx, i, &in);
      ndev++;
      const char *pci = hc_device_pci_bus_id(ctx, i);
      if (json) {
        json_t *d = hcrun_device_json(&in, id);
        if (pci && pci[0]) json_object_set_new(d, "pci_bus_id", hcrun_json_str(pci));
        json_array_append_new(devs, d);
      } else {
        char langs[64];
        languages_text(in.languages, langs, sizeof langs);
        printf("    %-10s %s [%s] %u units, %.1f GiB, %s, fp64 %s, local %llu KiB, max group %u%s%s%s%s\n", id, in.name,
               hc_device_type_name(in.type), in.compute_units, (double)in.global_mem_bytes / (1u << 30), langs,
               in.fp64 ? "yes" : "no", (unsigned long long)in.local_mem_bytes / 1024, in.max_work_group_size,
               in.platform[0] ? ", platform " : "", in.platform, pci && pci[0] ? ", pci " : "", pci ? pci : "");
      }
    }
    if (!json && !ndev) printf("    (no devices%s%s)\n", why ? ": " : "", why ? why : "");
    if (json) {
      json_t *o = json_object();
      json_object_set_new(o, "name", hcrun_json_str(s.name));
      json_object_set_new(o, "version", hcrun_json_str(s.version));
      json_object_set_new(o, "summary", hcrun_json_str(s.summary));
      json_object_set_new(o, "path", hcrun_json_str(s.path));
      json_object_set_new(o, "status", why ? hcrun_json_str(why) : json_null());
      json_object_set_new(o, "devices", devs);
      json_array_append_new(jb, o);
    }
  }
  if (!json && !hc_backend_count(ctx)) printf("  (none)\n");
  json_t *jw = json ? json_array() : NULL;
  if (!json) printf("Workloads:\n");
  for (uint32_t w = 0; w < hc_workload_count(ctx); w++) {
    hc_plugin_summary_t s;
    hc_workload_get(ctx, w, &s);
    if (!json) {
      printf("  %-10s %s\n", s.name, s.summary);
    } else {
      json_t *o = json_object();
      json_object_set_new(o, "name", hcrun_json_str(s.name));
      json_object_set_new(o, "version", hcrun_json_str(s.version));
      json_object_set_new(o, "summary", hcrun_json_str(s.summary));
      json_object_set_new(o, "path", hcrun_json_str(s.path));
      json_array_append_new(jw, o);
    }
  }
  if (!json && !hc_workload_count(ctx)) printf("  (none)\n");
  json_t *jr = json ? json_array() : NULL;
  if (!json && hc_rejected_count(ctx)) printf("Rejected plugin files:\n");
  for (uint32_t r = 0; r < hc_rejected_count(ctx); r++) {
    const char *path, *reason;
    hc_rejected_get(ctx, r, &path, &reason);
    if (!json) {
      printf("  %s: %s\n", path, reason);
    } else {
      json_t *o = json_object();
      json_object_set_new(o, "path", hcrun_json_str(path));
      json_object_set_new(o, "reason", hcrun_json_str(reason));
      json_array_append_new(jr, o);
    }
  }
  /* Where plugins come from: each plugin's path above lies in one of these. */
  json_t *js = json ? json_array() : NULL;
  if (!json) printf("Plugin search path (the first plugin of a name wins):\n");
  for (uint32_t i = 0; i < hc_search_dir_count(ctx); i++) {
    const char *dir, *source, *refused;
    hc_search_dir_get(ctx, i, &dir, &source, &refused);
    if (!json) {
      printf("  %u. %s  [%s]%s%s\n", i + 1, dir, source, refused ? " refused: " : "", refused ? refused : "");
    } else {
      json_t *o = json_object();
      json_object_set_new(o, "dir", json_string(dir));
      json_object_set_new(o, "source", json_string(source));
      json_object_set_new(o, "refused", refused ? json_string(refused) : json_null());
      json_array_append_new(js, o);
    }
  }
  /* The matrix: which workload runs on which device, and why not. */
  json_t *jm = json ? json_array() : NULL;
  if (!json && hc_workload_count(ctx) && hc_device_count(ctx)) {
    printf("Workloads x devices:\n  %-10s", "");
    for (uint32_t i = 0; i < hc_device_count(ctx); i++) printf(" %-10s", hc_device_id(ctx, i));
    printf("\n");
  }
  char whys[2048] = "";
  size_t wlen = 0;
  for (uint32_t w = 0; w < hc_workload_count(ctx); w++) {
    hc_plugin_summary_t s;
    hc_workload_get(ctx, w, &s);
    if (!json && hc_device_count(ctx)) printf("  %-10s", s.name);
    for (uint32_t i = 0; i < hc_device_count(ctx); i++) {
      const char *why = NULL;
      int ok = hc_workload_can_run(ctx, s.name, i, &why);
      if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "workload", hcrun_json_str(s.name));
        json_object_set_new(o, "device", hcrun_json_str(hc_device_id(ctx, i)));
        json_object_set_new(o, "runs", json_boolean(ok));
        json_object_set_new(o, "why", ok ? json_null() : hcrun_json_str(why));
        json_array_append_new(jm, o);
      } else {
        printf(" %-10s", ok ? "yes" : "no*");
        if (!ok && wlen < sizeof whys - 200)
          wlen += (size_t)snprintf(whys + wlen, sizeof whys - wlen, "  * %s on %s: %s\n", s.name, hc_device_id(ctx, i),
                                   why);
      }
    }
    if (!json && hc_device_count(ctx)) printf("\n");
  }
  if (!json) fputs(whys, stdout);
  /* What --device=auto picks for each workload (hc_device_find_auto). */
  json_t *ja = json ? json_object() : NULL;
  if (!json && hc_workload_count(ctx) && hc_device_count(ctx)) printf("--device=auto picks:\n");
  for (uint32_t w = 0; w < hc_workload_count(ctx); w++) {
    hc_plugin_summary_t s;
    hc_workload_get(ctx, w, &s);
    uint32_t idx = 0;
    const char *id = hc_device_find_auto(ctx, s.name, &idx) == HC_OK ? hc_device_id(ctx, idx) : NULL;
    if (json)
      json_object_set_new(ja, s.name, id ? json_string(id) : json_null());
    else if (hc_device_count(ctx))
      printf("  %-10s %s\n", s.name, id ? id : "(none)");
  }
  if (json) {
    json_object_set_new(doc, "hc_version", hcrun_json_str(hc_version()));
    json_object_set_new(doc, "backends", jb);
    json_object_set_new(doc, "workloads", jw);
    json_object_set_new(doc, "rejected", jr);
    json_object_set_new(doc, "search_path", js);
    json_object_set_new(doc, "auto", ja);
    json_object_set_new(doc, "matrix", jm);
    hcrun_print_json(doc);
    json_decref(doc);
  }
  return HCRUN_OK;
}

int hcrun_workload_help(hc_context_t *ctx, const char *w) {
  hc_job_t *job = NULL;
  hc_status_t st = hc_job_create(ctx, w, &job);
  if (st != HC_OK) {
    fprintf(stderr, "hcrun: %s\n", hc_last_error());
    return hcrun_exit_code(st);
  }
  hc_job_destroy(job);
  for (uint32_t i = 0; i < hc_workload_count(ctx); i++) {
    hc_plugin_summary_t s;
    hc_workload_get(ctx, i, &s);
    if (!strcmp(s.name, w)) printf("%s %s: %s\n", s.name, s.version, s.summary);
  }
  printf("\nParameters (key=value):\n");
  for (uint32_t i = 0; i < hc_workload_param_count(ctx, w); i++) {
    const hc_param_spec_t *p = hc_workload_param(ctx, w, i);
    char range[128] = "";
    if (p->type == HC_PARAM_ENUM)
      snprintf(range, sizeof range, " one of %s", p->choices);
    else if (hc_param_type_ranged((hc_param_type_t)p->type) && p->min <= p->max)
      snprintf(range, sizeof range, " in [%g, %g]", p->min, p->max);
    printf("  %-12s %-7s default %-10s%s\n      %s\n", p->name, hc_param_type_name((hc_param_type_t)p->type),
           p->def ? p->def : "(none)", range, p->help ? p->help : "");
  }
  for (int out = 0; out < 2; out++) {
    uint32_t n = hc_workload_port_count(ctx, w, out);
    if (!n) continue;
    printf("\n%s:\n", out ? "Outputs" : "Inputs");
    for (uint32_t i = 0; i < n; i++) {
      const hc_port_spec_t *p = hc_workload_port(ctx, w, out, i);
      char dts[64] = "";
      size_t l = 0;
      for (int d = 1; d < HC_DTYPE_COUNT_; d++)
        if (p->dtypes & HC_DTYPE_BIT(d))
          l += (size_t)snprintf(dts + l, sizeof dts - l, "%s%s", l ? "|" : "", hc_dtype_name((hc_dtype_t)d));
      printf("  %-12s %s, rank %d..%d%s%s\n      %s\n", p->name, dts, p->rank_min, p->rank_max,
             (p->flags & HC_PORT_PRIMARY) ? ", primary" : "", (p->flags & HC_PORT_OPTIONAL) ? ", optional" : "",
             p->help ? p->help : "");
    }
  }
  return HCRUN_OK;
}
