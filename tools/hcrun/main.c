/* hcrun — run hc workloads from the command line.
 *
 *   hcrun --list [--json]
 *   hcrun --workload=W --help
 *   hcrun [--backend=B | --device=B:i | --device=auto] --workload=W [key=value ...]
 *   hcrun --device=B:i,B:j[,...] | --device=all [--split=w1,w2,...|auto|equal] --workload=W ...
 *         [--input PORT=FILE.npy ...] [--verify] [--repeat=N] [--json] [--output=DIR] [--plugin-dir=DIR]
 *         [--trace=FILE.json]
 *   hcrun --pipeline='W1 k=v @dev | W2 ...' | --pipeline-file=FILE [--trace=FILE.json]
 *   any of them with --rescan (forget the plugin probe's verdicts first)
 *
 * Exit codes: 0 ok, 1 verification failed, 2 usage error, 3 backend, device
 * or workload unavailable, 4 runtime error, 130/143 interrupted by
 * SIGINT/SIGTERM (temporary files removed, finished outputs listed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hc/trace.h>

#include "hcrun.h"
#include "mpi.h"
#include "options.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: hcrun --list [--json]\n"
      "       hcrun --workload=W --help\n"
      "       hcrun [--backend=B | --device=B:i | --device=auto] --workload=W [key=value ...]\n"
      "       hcrun --device=B:i,B:j,... | --device=all [--split=w1,w2,...|auto|equal] --workload=W [key=value ...]\n"
      "             [--input PORT=FILE.npy ...] [--verify] [--repeat=N] [--json] [--output=DIR]\n"
      "             [--plugin-dir=DIR] [--trace=FILE.json]\n"
      "       hcrun --pipeline='W1 k=v @device | W2 k=v' [--pipeline-file=FILE] [--json] [--output=DIR]\n"
      "             [--trace=FILE.json]\n"
      "       hcrun --version\n"
      "       --rescan with any of them: forget the plugin probe's remembered verdicts, probe again\n"
      "exit codes: 0 ok, 1 verification failed, 2 usage error, 3 backend/device/workload unavailable,\n"
      "            4 runtime error, 130/143 interrupted by SIGINT/SIGTERM\n");
}

static void progress_cb(void *user, const char *workload, double fraction, const char *line) {
  (void)user;
  fprintf(stderr, "\r\033[K[%s] %5.1f%% %s", workload, 100.0 * fraction, line);
  if (fraction >= 1.0) fprintf(stderr, "\r\033[K");
  fflush(stderr);
}

/* Reports a failure (text, and the JSON error document with --json) and
 * returns its exit code: the status's, or `code` when it is not 0. */
static int fail_with(hc_status_t st, int json, const char *what, int code) {
  if (!code) code = hcrun_exit_code(st);
  if (!hcrun_mpi_leads()) return code; /* the leading rank says what failed */
  fprintf(stderr, "hcrun: %s%s%s\n", what ? what : "", what ? ": " : "", hc_last_error());
  if (json) {
    json_t *doc = json_object();
    json_object_set_new(doc, "status", hcrun_json_str("failed"));
    json_t *e = json_object();
    json_object_set_new(e, "status", hcrun_json_str(hc_status_name(st)));
    json_object_set_new(e, "message", hcrun_json_str(hc_last_error()));
    json_object_set_new(e, "exit_code", json_integer(code));
    json_object_set_new(doc, "error", e);
    hcrun_print_json(doc);
    json_decref(doc);
  }
  return code;
}

static int fail(hc_status_t st, int json, const char *what) { return fail_with(st, json, what, 0); }

/* --input PORT=FILE: loads each file onto dev and binds it, all before
 * anything runs. An unknown port, a file that cannot be read or a field the
 * port does not take fails with a status that maps to exit 2. fields[]
 * gets what was loaded (the caller destroys them after the job). */
static hc_status_t bind_inputs(hc_context_t *ctx, hc_job_t *job, hc_device_t *dev, const hcrun_options_t *o,
                               hc_field_t **fields) {
  for (int i = 0; i < o->ninputs; i++) {
    const char *arg = o->inputs[i], *eq = strchr(arg, '=');
    char port[128];
    snprintf(port, sizeof port, "%.*s", (int)(eq - arg), arg);
    uint32_t n = hc_workload_port_count(ctx, o->workload, 0), k = 0;
    while (k < n && strcmp(hc_workload_port(ctx, o->workload, 0, k)->name, port)) k++;
    if (k == n) {
      char list[512] = "";
      size_t len = 0;
      for (uint32_t j = 0; j < n && len < sizeof list; j++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", j ? ", " : "",
                                hc_workload_port(ctx, o->workload, 0, j)->name);
      return hc_error(HC_ERR_PARAM, "--input=%s: workload '%s' has no input port '%s' (%s%s)", arg, o->workload, port,
                      n ? "its inputs: " : "it takes no input fields", list);
    }
    hc_status_t st = hc_field_load_npy(dev, eq + 1, &fields[i]);
    if (st == HC_OK) st = hc_job_set_input(job, port, fields[i]);
    if (st != HC_OK) return hc_error_prefix(st, "--input=%s: ", arg);
  }
  return HC_OK;
}

/* What a single run holds. */
typedef struct {
  hc_job_t *job;
  hc_device_t *dev;
  hc_devset_t *set; /* a device set, or this rank's part of an MPI split */
  hc_field_t **inputs;
  int ninputs;
  char auto_why[256]; /* how --device=auto chose, "" otherwise */
} single_t;

static void single_free(single_t *s) {
  hc_devset_destroy(s->set);
  hc_job_destroy(s->job);
  for (int i = 0; s->inputs && i < s->ninputs; i++) hc_field_destroy(s->inputs[i]);
  free(s->inputs);
  hc_device_close(s->dev);
}

/* Picks and opens the device (or device set), checks the outputs, binds
 * the inputs: everything that can fail before the run. */
static hc_status_t prepare(hc_context_t *ctx, const hcrun_options_t *o, single_t *s) {
  hc_status_t st = hc_job_create(ctx, o->workload, &s->job);
  for (int i = 0; i < o->nkv && st == HC_OK; i++) st = hc_job_set_kv(s->job, o->kv[i]);
  if (st != HC_OK) return st;
  uint32_t idx;
  int is_set = o->device && (strchr(o->device, ',') || !strcmp(o->device, "all"));
  if (is_set && hcrun_mpi_active() && !strcmp(o->device, "all"))
    return hc_error(HC_ERR_PARAM,
                    "--device=all: under MPI each rank names the devices it drives (--device=auto,cpu:0: the "
                    "rank's GPU and its share of the cores)");
  if (is_set && hcrun_mpi_active()) {
    /* Each rank drives the set; "auto" in it is the rank's device. */
    char spec[1024];
    st = hcrun_mpi_rank_set(ctx, o->workload, o->device, spec, sizeof spec);
    if (st == HC_OK) st = hc_devset_parse(ctx, spec, o->workload, &s->set);
    if (st == HC_OK) st = hc_devset_set_transport(s->set, hcrun_mpi_transport());
    if (st == HC_OK) st = hc_devset_parse_weights(s->set, o->split ? o->split : "auto");
    if (st != HC_OK) return st == HC_ERR_UNSUPPORTED ? HC_ERR_PARAM : st;
    idx = hc_device_index(hc_devset_device(s->set, 0));
  } else if (is_set) {
    /* A device set: every problem with it (a device listed twice, unknown
     * or unable to run the workload, bad weights, more parts than rows) is
     * a usage error, found before anything runs. */
    st = hc_devset_parse(ctx, o->device, o->workload, &s->set);
    /* shares from the performance history unless given */
    if (st == HC_OK) st = hc_devset_parse_weights(s->set, o->split ? o->split : "auto");
    if (st == HC_OK) st = hc_job_check_split(s->job, s->set);
    if (st != HC_OK) return st == HC_ERR_UNSUPPORTED ? HC_ERR_PARAM : st;
    idx = hc_device_index(hc_devset_device(s->set, 0));
  } else if (o->split && !hcrun_mpi_active()) {
    return hc_error(HC_ERR_PARAM, "--split=%s needs a device set (--device=B:i,B:j,... or --device=all)", o->split);
  } else if ((!o->device || !strcmp(o->device, "auto")) && hcrun_mpi_active()) {
    st = hc_device_find_auto(ctx, o->workload, &idx);
    if (st == HC_OK) st = hcrun_mpi_rank_device(ctx, o->workload, &idx);
  } else if (!o->device || !strcmp(o->device, "auto")) {
    /* the fastest device in the performance history, once the rule's
     * device has a figure */
    st = hc_job_find_device(s->job, &idx, s->auto_why, sizeof s->auto_why);
  } else {
    st = hc_device_find(ctx, o->device, &idx);
  }
  if (st == HC_OK) st = hc_device_open(ctx, idx, &s->dev);
  if (st == HC_OK && hcrun_mpi_active() && !s->set) {
    /* This rank's part of the split over every rank. */
    st = hc_devset_create(ctx, &s->dev, 1, &s->set);
    if (st == HC_OK) st = hc_devset_set_transport(s->set, hcrun_mpi_transport());
    if (st == HC_OK) st = hc_devset_parse_weights(s->set, o->split ? o->split : "auto");
  }
  if (st == HC_OK && o->output && hcrun_mpi_leads() && ((st = hcrun_prepare_output(o->output)) == HC_OK))
    st = hcrun_check_output_files(s->job, o->output, "");
  if (st != HC_OK) return st;
  s->ninputs = o->ninputs;
  s->inputs = calloc((size_t)o->ninputs + 1, sizeof *s->inputs);
  st = s->inputs ? bind_inputs(ctx, s->job, s->dev, o, s->inputs) : hc_error(HC_ERR_NO_MEMORY, "hcrun: out of memory");
  /* Only the leading rank writes: the workloads' own files too. */
  if (st == HC_OK && hcrun_mpi_leads()) hc_job_set_output_dir(s->job, o->output);
  return st;
}

/* The name the report gives the run's device. */
static const char *run_device_name(const single_t *s, const hcrun_options_t *o, char *buf, size_t n) {
  if (hcrun_mpi_active() && hc_devset_parts(s->set) > 1) {
    snprintf(buf, n, "%d MPI ranks", hcrun_mpi_ranks());
    return buf;
  }
  return s->set && hc_devset_parts(s->set) > 1 ? o->device : hc_device_name(s->dev);
}

/* Runs one workload (possibly repeated) and reports it. */
static int run_single(hc_context_t *ctx, const hcrun_options_t *o) {
  single_t s;
  memset(&s, 0, sizeof s);
  hc_status_t st = hcrun_mpi_agree(prepare(ctx, o, &s));
  if (st != HC_OK) {
    single_free(&s);
    return fail(st, o->json, NULL);
  }
  hc_job_t *job = s.job;
  hc_device_t *dev = s.dev;
  hc_devset_t *set = s.set;
  json_t *runs = json_array();
  double best = -1;
  json_t *best_doc = NULL;
  for (int r = 0; r < o->repeat; r++) {
    st = set ? hc_job_run_split(job, set, o->verify ? HC_RUN_VERIFY : 0)
             : hc_job_run(job, dev, o->verify ? HC_RUN_VERIFY : 0);
    if (st != HC_OK && st != HC_ERR_VERIFY) break;
    if (st == HC_OK && !set) hc_job_record_run(job, dev); /* --device=auto's figures */
    if (s.auto_why[0]) hc_job_note(job, "--device=auto: %s", s.auto_why);
    hc_job_times_t t;
    hc_job_times(job, &t);
    json_t *jr = json_object();
    json_object_set_new(jr, "wall_s", hcrun_json_real(t.wall_s));
    json_object_set_new(jr, "compute_s", hcrun_json_real(t.compute_s));
    json_object_set_new(jr, "device_s", hcrun_json_real(t.device_s));
    json_array_append_new(runs, jr);
    /* Keep the best run's report (least compute time), as benchmarks do. */
    if (best < 0 || t.compute_s < best) {
      best = t.compute_s;
      json_decref(best_doc);
      best_doc = hcrun_job_json(job);
      if (set && hc_devset_parts(set) > 1) json_object_set_new(best_doc, "split", hcrun_split_json(set, t.compute_s));
    }
    if (st == HC_ERR_VERIFY) break;
  }
  int code = HCRUN_OK;
  if (st != HC_OK && st != HC_ERR_VERIFY) {
    code = fail(st, o->json, NULL);
  } else {
    json_t *files = json_array();
    hcrun_list_job_files(job, files);
    hc_devset_t *ranks = hcrun_mpi_active() ? set : NULL;
    hc_status_t sst = o->output ? hcrun_save_outputs(job, ranks, o->output, "", files) : HC_OK;
    sst = hcrun_mpi_agree(sst);
    char save_msg[1024] = "", name[64];
    if (sst != HC_OK) snprintf(save_msg, sizeof save_msg, "writing outputs: %s", hc_last_error());
    if (!hcrun_mpi_leads()) {
      /* the leading rank reports */
    } else if (o->json) {
      json_t *doc = json_object();
      json_object_set_new(doc, "hc_version", hcrun_json_str(hc_version()));
      json_object_set_new(doc, "device", hcrun_device_json(hc_device_info(dev), hc_device_name(dev)));
      json_object_update(doc, best_doc);
      json_object_set_new(doc, "runs", json_incref(runs));
      json_object_set_new(doc, "outputs", json_incref(files));
      hc_transfer_stats_t ts;
      hc_transfer_stats_get(ctx, &ts);
      json_t *jt = json_object();
      json_object_set_new(jt, "to_device_bytes", json_integer((json_int_t)ts.to_device_bytes));
      json_object_set_new(jt, "to_host_bytes", json_integer((json_int_t)ts.to_host_bytes));
      json_object_set_new(doc, "transfers", jt);
      json_t *usage = hcrun_usage_json(ctx);
      if (usage) json_object_set_new(doc, "utilisation", usage);
      /* The status tells the truth: a failed write is a failed run. */
      json_object_set_new(doc, "status",
                          hcrun_json_str(sst != HC_OK  ? "failed"
                                         : st == HC_OK ? "ok"
                                                       : "verification failed"));
      if (sst != HC_OK) {
        json_t *e = json_object();
        json_object_set_new(e, "status", hcrun_json_str(hc_status_name(sst)));
        json_object_set_new(e, "message", hcrun_json_str(save_msg));
        json_object_set_new(e, "exit_code", json_integer(hcrun_exit_code(sst)));
        json_object_set_new(doc, "error", e);
      }
      hcrun_print_json(doc);
      json_decref(doc);
    } else {
      hcrun_print_job(best_doc, run_device_name(&s, o, name, sizeof name));
      hcrun_print_split(json_object_get(best_doc, "split"));
      hcrun_print_usage(ctx);
      if (o->repeat > 1) {
        printf("%-14s %d runs, best compute time reported; compute times:", "repeat", o->repeat);
        size_t i;
        json_t *v;
        json_array_foreach(runs, i, v) printf(" %.4g", hcrun_json_double(json_object_get(v, "compute_s")));
        printf(" s\n");
      }
      if (o->output) {
        size_t i;
        json_t *v;
        json_array_foreach(files, i, v) printf("%-14s %s\n", "wrote", hcrun_json_bytes(v));
      }
    }
    json_decref(files);
    if (sst != HC_OK) {
      if (hcrun_mpi_leads()) fprintf(stderr, "hcrun: %s\n", save_msg);
      code = hcrun_exit_code(sst);
    } else if (st == HC_ERR_VERIFY) {
      if (hcrun_mpi_leads()) fprintf(stderr, "hcrun: %s\n", hc_last_error());
      code = HCRUN_VERIFY_FAILED;
    }
  }
  json_decref(best_doc);
  json_decref(runs);
  single_free(&s);
  return code;
}

/* Everything after MPI has started (or not): parse, run, report. */
static int hcrun_main(int argc, char **argv) {
  hcrun_options_t o;
  int rc = hcrun_parse_options(argc, argv, &o);
  hc_status_t st0 = HC_OK;
  if (rc >= 0) {
    if (rc == HCRUN_USAGE && hcrun_mpi_leads()) usage(stderr);
    hcrun_free_options(&o);
    return rc;
  }
  if (o.version) {
    if (hcrun_mpi_leads()) printf("hcrun %s (plugin ABI %d.%d)\n", hc_version(), HC_ABI_MAJOR, HC_ABI_MINOR);
    hcrun_free_options(&o);
    return 0;
  }
  if (o.help && !o.workload) {
    if (hcrun_mpi_leads()) usage(stdout);
    hcrun_free_options(&o);
    return 0;
  }
  hcrun_install_signals();
  if (o.rescan && hcrun_mpi_leads() && (st0 = hc_plugin_rescan()) != HC_OK) {
    rc = fail(st0, o.json, "--rescan");
    hcrun_free_options(&o);
    return rc;
  }
  hc_context_options_t co;
  memset(&co, 0, sizeof co);
  co.size = sizeof co;
  co.plugin_dirs = (const char *const *)o.plugin_dirs;
  co.plugin_dir_count = (uint32_t)o.nplugin_dirs;
  if (isatty(2) && !o.json && hcrun_mpi_leads()) co.progress = progress_cb;
  hcrun_mpi_share_cores();
  hc_context_t *ctx = NULL;
  hc_status_t st = hc_context_create(&co, &ctx);
  if (hcrun_mpi_active() && (o.pipeline || o.pipeline_file) && st == HC_OK)
    st = hc_error(HC_ERR_PARAM, "pipelines do not run across MPI ranks: run the pipeline as one process (without "
                                "the MPI launcher, or HC_MPI=off), or one workload per command");
  st = hcrun_mpi_agree(st);
  if (st != HC_OK) {
    rc = fail(st, o.json, "creating the context");
    hc_context_destroy(ctx);
    hcrun_free_options(&o);
    return rc;
  }
  /* The trace file is created before anything runs: a path that cannot be
   * written is a usage error, not a run lost at its end. Under MPI each
   * rank writes its own file (rank 0 the one named). */
  char trace_path[4200], what[4300];
  if (o.trace && !o.help) {
    hc_trace_options_t to = {.size = sizeof to, .process_name = hcrun_mpi_process_name()};
    st = hc_trace_start(ctx, hcrun_mpi_rank_path(o.trace, trace_path, sizeof trace_path), &to);
    if ((st = hcrun_mpi_agree(st)) != HC_OK) {
      snprintf(what, sizeof what, "--trace=%s", o.trace);
      rc = fail_with(st, o.json, what, HCRUN_USAGE);
      hc_context_destroy(ctx);
      hcrun_free_options(&o);
      return rc;
    }
  }
  if (o.list)
    rc = hcrun_mpi_leads() ? hcrun_list(ctx, o.json) : HCRUN_OK;
  else if (o.help)
    rc = hcrun_mpi_leads() ? hcrun_workload_help(ctx, o.workload) : HCRUN_OK;
  else if (o.pipeline || o.pipeline_file)
    rc = hcrun_pipeline(ctx, &o);
  else
    rc = run_single(ctx, &o);
  if (o.trace && !o.help) {
    /* Under MPI rank 0 then joins the ranks' files into the one named. */
    st = hc_trace_active(ctx) ? hc_trace_stop(ctx) : HC_OK;
    if ((st = hcrun_mpi_agree(st)) == HC_OK) st = hcrun_mpi_join_traces(o.trace);
    if (st != HC_OK && hcrun_mpi_leads()) fprintf(stderr, "hcrun: --trace=%s: %s\n", o.trace, hc_last_error());
    if (st != HC_OK && rc == HCRUN_OK) rc = HCRUN_RUNTIME;
  }
  hc_context_destroy(ctx);
  hcrun_free_options(&o);
  return rc;
}

int main(int argc, char **argv) {
  int rc = hcrun_mpi_start(&argc, &argv);
  if (rc >= 0) return rc;
  return hcrun_mpi_finish(hcrun_main(argc, argv));
}
