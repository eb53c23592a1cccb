/* hcrun — shared declarations of the command-line tool's parts. */
#ifndef HCRUN_H
#define HCRUN_H

#include <hc/hc.h>
#include <hc/plugin.h>
#include <hc/partition.h>
#include <jansson.h>

/* Documented exit codes (README, hcrun --help). */
enum {
  HCRUN_OK = 0,
  HCRUN_VERIFY_FAILED = 1,
  HCRUN_USAGE = 2,
  HCRUN_UNAVAILABLE = 3,
  HCRUN_RUNTIME = 4
};

/* Maps a library status to hcrun's exit code. */
int hcrun_exit_code(hc_status_t st);

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
/* A split run's parts (device, rows, share, times, halo traffic) and plan;
 * NULL when the last run did not split (partition.h). */
json_t *hcrun_split_json(const hc_devset_t *set);
void hcrun_print_split(json_t *split);
/* Writes every output field of job into dir as <prefix><port>.npy;
 * appends the file names to files (may be NULL). */
hc_status_t hcrun_save_outputs(hc_job_t *job, const char *dir, const char *prefix, json_t *files);
/* mkdir -p; 0 on success. */
int hcrun_mkdirs(const char *dir);
/* Prints json to stdout (indented) followed by a newline. */
void hcrun_print_json(json_t *doc);

#endif
