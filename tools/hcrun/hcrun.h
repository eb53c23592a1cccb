/* hcrun — shared declarations of the command-line tool's parts. */
#ifndef HCRUN_H
#define HCRUN_H

#include <hc/hc.h>
#include <hc/plugin.h>
#include <jansson.h>

/* Documented exit codes (README, hcrun --help): those of include/hc/status.h. */
enum {
  HCRUN_OK = HC_EXIT_OK,
  HCRUN_VERIFY_FAILED = HC_EXIT_VERIFY,
  HCRUN_USAGE = HC_EXIT_USAGE,
  HCRUN_UNAVAILABLE = HC_EXIT_UNAVAILABLE,
  HCRUN_RUNTIME = HC_EXIT_RUNTIME
};

/* Maps a library status to hcrun's exit code (hc_status_exit_code: the one
 * mapping, kept in the status list). */
#define hcrun_exit_code(st) hc_status_exit_code(st)

/* --list, as text or JSON. */
int hcrun_list(hc_context_t *ctx, int json);
/* --workload=W --help. */
int hcrun_workload_help(hc_context_t *ctx, const char *workload);

/* JSON pieces shared by single runs and pipelines. */
json_t *hcrun_device_json(const hc_device_info_t *info, const char *id);
json_t *hcrun_job_json(const hc_job_t *job);
/* The human table of one run, from its hcrun_job_json document (so that
 * --repeat prints the best run, as --json does). */
void hcrun_print_job(json_t *jobdoc, const char *device_id);
/* Writes every output field of job into dir as <prefix><port>.npy;
 * appends the file names to files (may be NULL). */
hc_status_t hcrun_save_outputs(hc_job_t *job, const char *dir, const char *prefix, json_t *files);
/* mkdir -p; 0 on success. */
int hcrun_mkdirs(const char *dir);
/* Prints json to stdout (indented) followed by a newline. */
void hcrun_print_json(json_t *doc);

#endif
