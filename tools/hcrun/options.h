/* hcrun: command-line options. */
#ifndef HCRUN_OPTIONS_H
#define HCRUN_OPTIONS_H

#include <hc/hc.h>

typedef struct hcrun_options {
  int list, help, version, json, verify, rescan;
  int repeat;
  const char *workload;
  const char *device; /* "auto", "cuda", "cuda:1", a set "cuda:0,cpu:0" or "all" */
  const char *split;  /* --split=0.8,0.2: weights of a device set */
  const char *output;
  const char *pipeline;
  const char *pipeline_file;
  const char *trace; /* --trace=FILE */
  char **plugin_dirs;
  int nplugin_dirs;
  char **kv; /* key=value arguments */
  int nkv;
  char **inputs; /* --input PORT=FILE arguments */
  int ninputs;
  const char *repeat_text; /* --repeat as given (once) */
} hcrun_options_t;

/* Parses argv. Returns -1 to go on, or an exit code (after printing the
 * problem) when parsing alone decides the outcome. */
int hcrun_parse_options(int argc, char **argv, hcrun_options_t *o);
void hcrun_free_options(hcrun_options_t *o);

/* --pipeline / --pipeline-file (pipeline.c). */
struct hc_context;
int hcrun_pipeline(hc_context_t *ctx, const hcrun_options_t *o);

#endif
