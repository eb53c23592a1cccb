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

/* Sets a single-valued option; a second occurrence is a usage error (the
 * user meant one of them, and hcrun cannot tell which). */
static int once(const char **slot, const char *v, const char *name) {
  if (*slot) {
    fprintf(stderr, "hcrun: %s given twice (%s=%s and %s=%s): give it once\n", name, name, *slot, name, v);
    return 0;
  }
  *slot = v;
  return 1;
}

int hcrun_parse_options(int argc, char **argv, hcrun_options_t *o) {
  memset(o, 0, sizeof *o);
  o->repeat = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (!strcmp(a, "--list"))
      o->list = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h"))
      o->help = 1;
    else if (!strcmp(a, "--version"))
      o->version = 1;
    else if (!strcmp(a, "--json"))
      o->json = 1;
    else if (!strcmp(a, "--verify"))
      o->verify = 1;
    else if (!strcmp(a, "--rescan"))
      o->rescan = 1;
    else if ((v = opt_value(argc, argv, &i, "--workload"))) {
      if (!once(&o->workload, v, "--workload")) return HCRUN_USAGE;
    } else if ((v = opt_value(argc, argv, &i, "--backend"))) {
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
    } else if ((v = opt_value(argc, argv, &i, "--split"))) {
      if (!once(&o->split, v, "--split")) return HCRUN_USAGE;
    } else if ((v = opt_value(argc, argv, &i, "--output"))) {
      if (!once(&o->output, v, "--output")) return HCRUN_USAGE;
    } else if ((v = opt_value(argc, argv, &i, "--pipeline-file"))) {
      if (!once(&o->pipeline_file, v, "--pipeline-file")) return HCRUN_USAGE;
    } else if ((v = opt_value(argc, argv, &i, "--pipeline"))) {
      if (!once(&o->pipeline, v, "--pipeline")) return HCRUN_USAGE;
    } else if ((v = opt_value(argc, argv, &i, "--trace"))) {
      if (!*v) {
        fprintf(stderr, "hcrun: --trace needs a file name (--trace=FILE.json)\n");
        return HCRUN_USAGE;
      }
      if (!once(&o->trace, v, "--trace")) return HCRUN_USAGE;
    } else if ((v = opt_value(argc, argv, &i, "--input"))) {
      const char *eq = strchr(v, '=');
      if (!eq || eq == v || !eq[1]) {
        fprintf(stderr, "hcrun: --input=%s: expected PORT=FILE.npy\n", v);
        return HCRUN_USAGE;
      }
      if (!push(&o->inputs, &o->ninputs, v)) return HCRUN_RUNTIME;
    } else if ((v = opt_value(argc, argv, &i, "--plugin-dir"))) {
      if (!push(&o->plugin_dirs, &o->nplugin_dirs, v)) return HCRUN_RUNTIME;
    } else if ((v = opt_value(argc, argv, &i, "--repeat"))) {
      if (!once(&o->repeat_text, v, "--repeat")) return HCRUN_USAGE;
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
  if (o->trace && o->list) {
    fprintf(stderr, "hcrun: --trace records a run (--workload or --pipeline), not --list\n");
    return HCRUN_USAGE;
  }
  if (o->ninputs && !o->workload) {
    fprintf(stderr, "hcrun: --input goes with --workload (in a pipeline, a stage's input is bound to an earlier "
                    "stage's output)\n");
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
  free(o->inputs);
  memset(o, 0, sizeof *o);
}
