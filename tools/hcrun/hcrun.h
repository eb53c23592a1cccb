/* hcrun — shared declarations of the command-line tool's parts. */
#ifndef HCRUN_H
#define HCRUN_H

#include <hc/hc.h>
#include <hc/plugin.h>
#include <hc/partition.h>
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
/* Seconds as the reports print them ("12.300 ms", "-" for none). */
void hcrun_fmt_time(char *buf, size_t n, double seconds);
/* A split run's parts (device, rows, share, times, halo traffic) and plan;
 * NULL when the last run did not split (partition.h). */
json_t *hcrun_split_json(const hc_devset_t *set, double compute_s);
void hcrun_print_split(json_t *split);
/* Writes every output field of job into dir as <prefix><port>.npy;
 * appends the file names to files (may be NULL). ranks: the set of an MPI
 * run, whose every rank calls this (rank 0 writes, or every rank writes
 * its rows of an output left in parts); NULL otherwise. */
hc_status_t hcrun_save_outputs(hc_job_t *job, hc_devset_t *ranks, const char *dir, const char *prefix, json_t *files);
/* mkdir -p; 0 on success. */
int hcrun_mkdirs(const char *dir);
/* jsontext.c: any bytes as a JSON string, losslessly (bytes that are not
 * UTF-8 as \udcXX escapes, Python's surrogateescape; README "JSON"). Use
 * hcrun_json_str for every string put in a document; hcrun_print_json
 * writes the escapes; hcrun_json_bytes gives a string's original bytes
 * back for the text report (valid until 8 more calls). */
json_t *hcrun_json_str(const char *s);
char *hcrun_json_escape_carriers(const char *dumped);
const char *hcrun_json_bytes(const json_t *v);
/* The per-device utilisation over the trace's window (--trace): a JSON
 * array of the devices that did traced work, NULL when ctx is not tracing;
 * and the same as report lines. */
json_t *hcrun_usage_json(hc_context_t *ctx);
void hcrun_print_usage(hc_context_t *ctx);
/* Before anything runs: --output=DIR is a directory or can be made one,
 * and none of the .npy files that job's outputs will become
 * (DIR/<prefix><port>.npy) exists as something other than a regular file.
 * HC_ERR_PARAM (exit 2) naming the path otherwise. */
hc_status_t hcrun_prepare_output(const char *dir);
hc_status_t hcrun_check_output_files(const hc_job_t *job, const char *dir, const char *prefix);
/* Appends the extra files job wrote (hc_job_file) to files. */
void hcrun_list_job_files(const hc_job_t *job, json_t *files);
/* A number for the JSON document: a real, or for NaN and the infinities
 * (which JSON has no numbers for, and jansson refuses) the strings "NaN",
 * "Infinity" and "-Infinity", as JavaScript spells them. */
json_t *hcrun_json_real(double v);
/* The inverse: a real, an integer or one of those strings; NaN otherwise. */
double hcrun_json_double(const json_t *v);
/* SIGINT/SIGTERM: temporaries removed, the outputs written listed, exit
 * 130/143 (signals.c). hcrun_note_written records a finished output. */
void hcrun_install_signals(void);
/* From now on the handler says nothing (a rank that does not report, or a
 * run whose report is out: under MPI the launcher ends the other ranks
 * with SIGTERM as soon as one exits with a failure). */
void hcrun_signals_quiet(void);
void hcrun_note_written(const char *path);
/* Prints json to stdout (indented) followed by a newline. */
void hcrun_print_json(json_t *doc);

#endif
