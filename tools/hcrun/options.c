#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcrun.h"

/* Value of "--name=value" or "--name value"; advances *i for the latter. */
static const char *opt_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, n) != 0) return NULL;
  if (a[n] == '=') return a + n + 1;
  if (a[n] == '\0' && *i + 1 < argc) return argv[++*i];
  return NULL;
}

static int push(char ***arr, int *n, const char *s) {
  char **a = realloc(*arr, (size_t)(*n + 1) * sizeof *a);
  if (!a) return 0;
  *arr = a;
  a[(*n)++] = (char *)s;
  return 1;
}

int hcrun_parse_options(int argc, char **argv, hcrun_options_t *o) {
  memset(o, 0, sizeof *o);
  o->repeat = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (!strcmp(a, "--list")) o->list = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) o->help = 1;
    else if (!strcmp(a, "--version")) o->version = 1;
    else if (!strcmp(a, "--json")) o->json = 1;
    else if (!strcmp(a, "--verify")) o->verify = 1;
    else if ((v = opt_value(argc, argv, &i, "--workload"))) o->workload = v;
    else if ((v = opt_value(argc, argv, &i, "--backend"))) {
      if (o->device) {
        fprintf(stderr, "hcrun: give either --backend or --device, not both\n");
        return HCRUN_USAGE;
      }
      if (strchr(v, ':')) {
        fprintf(stderr, "hcrun: --backend=%s: a backend name has no ':' (use --device=%s)\n", v, v);
        return HCRUN_USAGE;
      }
      o->device = v;
    } else if ((v = opt_value(argc, argv, &i, "--device"))) {
      if (o->device) {
        fprintf(stderr, "hcrun: give either --backend or --device, not both\n");
        return HCRUN_USAGE;
      }
      o->device = v;
    } else if ((v = opt_value(argc, argv, &i, "--split"))) o->split = v;
    else if ((v = opt_value(argc, argv, &i, "--output"))) o->output = v;
    else if ((v = opt_value(argc, argv, &i, "--pipeline-file"))) o->pipeline_file = v;
    else if ((v = opt_value(argc, argv, &i, "--pipeline"))) o->pipeline = v;
    else if ((v = opt_value(argc, argv, &i, "--plugin-dir"))) {
      if (!push(&o->plugin_dirs, &o->nplugin_dirs, v)) return HCRUN_RUNTIME;
    } else if ((v = opt_value(argc, argv, &i, "--repeat"))) {
      char *end = NULL;
      long r = strtol(v, &end, 10);
      if (!*v || *end || r < 1 || r > 100000) {
        fprintf(stderr, "hcrun: --repeat=%s: expected a whole number from 1 to 100000\n", v);
        return HCRUN_USAGE;
      }
      o->repeat = (int)r;
    } else if (a[0] == '-') {
      fprintf(stderr, "hcrun: unknown option '%s'\n", a);
      return HCRUN_USAGE;
    } else if (strchr(a, '=') && a[0] != '=') {
      if (!push(&o->kv, &o->nkv, a)) return HCRUN_RUNTIME;
    } else {
      fprintf(stderr, "hcrun: unexpected argument '%s' (parameters are key=value)\n", a);
      return HCRUN_USAGE;
    }
  }
  int modes = o->list + (o->workload != NULL) + (o->pipeline != NULL || o->pipeline_file != NULL);
  if (o->version || (o->help && !o->workload)) return -1;
  if (modes == 0) {
    fprintf(stderr, "hcrun: nothing to do: give --list, --workload=W or --pipeline=...\n");
    return HCRUN_USAGE;
  }
  if (modes > 1) {
    fprintf(stderr, "hcrun: give only one of --list, --workload, --pipeline\n");
    return HCRUN_USAGE;
  }
  if ((o->pipeline || o->list) && o->nkv) {
    fprintf(stderr, "hcrun: key=value parameters go with --workload (in a pipeline, inside the stage)\n");
    return HCRUN_USAGE;
  }
  if (o->pipeline && o->pipeline_file) {
    fprintf(stderr, "hcrun: give either --pipeline or --pipeline-file\n");
    return HCRUN_USAGE;
  }
  return -1;
}

void hcrun_free_options(hcrun_options_t *o) {
  free(o->plugin_dirs);
  free(o->kv);
  memset(o, 0, sizeof *o);
}
