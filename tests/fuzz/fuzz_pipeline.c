/* Fuzz target: the pipeline text syntax (core/pipeline/pipeline_parse.c), as given
 * to --pipeline and read from --pipeline-file. The input up to its first
 * NUL byte is the text (a file with a NUL byte is refused before parsing).
 *
 * Properties: never a crash or an out-of-bounds read; failures are
 * HC_ERR_PIPELINE with a message starting "pipeline: "; an accepted text
 * has at least one stage, every workload name, parameter key and binding
 * part is a name, every stage's line and column point at its workload name
 * in the text; and printing the stages back (every value and device quoted)
 * and parsing that gives the same stages. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "hc/plugin.h"
#include "pipeline_parse.h"

static int is_name(const char *s) {
  if (!s || !*s) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
      return 0;
  return 1;
}

/* Offset of 1-based (line, column) in text, or -1. */
static long offset_of(const char *text, uint32_t line, uint32_t col) {
  size_t i = 0;
  for (uint32_t l = 1; l < line; l++) {
    const char *nl = strchr(text + i, '\n');
    if (!nl) return -1;
    i = (size_t)(nl - text) + 1;
  }
  for (uint32_t c = 1; c < col; c++) {
    if (!text[i] || text[i] == '\n') return -1;
    i++;
  }
  return (long)i;
}

typedef struct {
  char *s;
  size_t len, cap;
} str_t;

static void put(str_t *o, const char *s, size_t n) {
  if (o->len + n + 1 > o->cap) {
    o->cap = (o->len + n + 1) * 2;
    o->s = realloc(o->s, o->cap);
    if (!o->s) abort();
  }
  memcpy(o->s + o->len, s, n);
  o->len += n;
  o->s[o->len] = '\0';
}
static void puts_(str_t *o, const char *s) { put(o, s, strlen(s)); }

/* 'text' with each ' written as '"'"' (the syntax has no escapes, but
 * adjacent quoted pieces join into one token). */
static void put_quoted(str_t *o, const char *s) {
  puts_(o, "'");
  for (; *s; s++) {
    if (*s == '\'')
      puts_(o, "'\"'\"'");
    else
      put(o, s, 1);
  }
  puts_(o, "'");
}

static void print_pipeline(const hc__pp_t *pp, str_t *o) {
  for (uint32_t i = 0; i < pp->nstages; i++) {
    const hc__pp_stage_t *s = &pp->stages[i];
    if (i) puts_(o, " | ");
    puts_(o, s->workload);
    for (uint32_t k = 0; k < s->nparams; k++) {
      const char *eq = strchr(s->params[k], '=');
      puts_(o, " ");
      put(o, s->params[k], (size_t)(eq - s->params[k]) + 1);
      put_quoted(o, eq + 1);
    }
    if (s->device) {
      puts_(o, " @");
      put_quoted(o, s->device);
    }
    for (uint32_t k = 0; k < s->nbinds; k++) {
      puts_(o, " ");
      if (s->binds[k].from) {
        puts_(o, s->binds[k].from);
        puts_(o, ".");
      }
      puts_(o, s->binds[k].output);
      puts_(o, ">");
      puts_(o, s->binds[k].input);
    }
  }
}

static int same_str(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static void check_same(const hc__pp_t *a, const hc__pp_t *b, const char *text) {
  FZ_CHECK(a->nstages == b->nstages, "%u stages, %u after printing as [%s]", a->nstages, b->nstages, text);
  for (uint32_t i = 0; i < a->nstages; i++) {
    const hc__pp_stage_t *x = &a->stages[i], *y = &b->stages[i];
    FZ_CHECK(!strcmp(x->workload, y->workload) && same_str(x->device, y->device) && x->nparams == y->nparams &&
                 x->nbinds == y->nbinds,
             "stage %u changed after printing as [%s]", i + 1, text);
    for (uint32_t k = 0; k < x->nparams; k++)
      FZ_CHECK(!strcmp(x->params[k], y->params[k]), "stage %u parameter %u changed: [%s]", i + 1, k, text);
    for (uint32_t k = 0; k < x->nbinds; k++)
      FZ_CHECK(same_str(x->binds[k].from, y->binds[k].from) && !strcmp(x->binds[k].output, y->binds[k].output) &&
                   !strcmp(x->binds[k].input, y->binds[k].input),
               "stage %u binding %u changed: [%s]", i + 1, k, text);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_t f;
  fz_init(&f, data, size);
  const char *text = f.buf;
  hc__pp_t pp;
  hc_status_t st = hc__pp_parse(text, &pp);
  if (st != HC_OK) {
    FZ_CHECK(st == HC_ERR_PIPELINE, "status %s", hc_status_name(st));
    FZ_CHECK(!strncmp(hc_last_error(), "pipeline: ", 10), "message '%s'", hc_last_error());
    FZ_CHECK(pp.nstages == 0 && pp.stages == NULL, "a failed parse left stages");
    fz_free(&f);
    return 0;
  }
  FZ_CHECK(pp.nstages >= 1, "no stages accepted");
  for (uint32_t i = 0; i < pp.nstages; i++) {
    const hc__pp_stage_t *s = &pp.stages[i];
    FZ_CHECK(is_name(s->workload), "workload '%s'", s->workload);
    long at = offset_of(text, s->line, s->column);
    /* The position is the token's start: the name, or a quote in it. */
    FZ_CHECK(at >= 0 && (text[at] == s->workload[0] || text[at] == '\'' || text[at] == '"'),
             "stage %u at line %u column %u is not where '%s' is", i + 1, s->line, s->column, s->workload);
    FZ_CHECK(!s->device || *s->device, "empty device");
    for (uint32_t k = 0; k < s->nparams; k++) {
      const char *eq = strchr(s->params[k], '=');
      FZ_CHECK(eq && eq > s->params[k], "parameter '%s'", s->params[k]);
      char key[512];
      snprintf(key, sizeof key, "%.*s", (int)(eq - s->params[k]), s->params[k]);
      FZ_CHECK(strlen(key) >= sizeof key - 1 || is_name(key), "parameter key '%s'", key);
    }
    for (uint32_t k = 0; k < s->nbinds; k++) {
      const hc__pp_bind_t *b = &s->binds[k];
      FZ_CHECK((!b->from || is_name(b->from)) && is_name(b->output) && is_name(b->input) && b->text, "binding '%s'",
               b->text ? b->text : "(null)");
    }
  }
  str_t out = {NULL, 0, 0};
  print_pipeline(&pp, &out);
  hc__pp_t again;
  st = hc__pp_parse(out.s, &again);
  FZ_CHECK(st == HC_OK, "printed text [%s] does not parse: %s", out.s, hc_last_error());
  check_same(&pp, &again, out.s);
  hc__pp_free(&again);
  hc__pp_free(&pp);
  free(out.s);
  fz_free(&f);
  return 0;
}
