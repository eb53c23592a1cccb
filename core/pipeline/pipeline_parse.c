/* The pipeline text syntax (docs/pipelines.md), parsed into plain structs.
 *
 *   text  := stage { sep stage }      sep := '|' or a newline
 *   stage := WORKLOAD { key=value | @device | [STAGE.]output>input }
 *
 * Tokens are separated by blanks; '|' and newlines end a stage (a '|' at the
 * end of a line and a newline after it are one separator, so long chains can
 * be written one stage per line, with or without the '|'). '#' at the start
 * of a token comments out the rest of the line. '...' and "..." quote any
 * text (blanks, '|', '#', '=', '>'); the quotes are removed. Which kind a
 * token is depends on its first unquoted '@', '=' or '>'.
 *
 * Pure: no I/O and no lookups, so it can be fuzzed on arbitrary input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc/plugin.h"
#include "pipeline_parse.h"

typedef struct {
  const char *text;
  size_t i;
  uint32_t line, col; /* of text[i], 1-based */
  int multiline;
} parser_t;

/* A token with quotes removed; quoted[k] says whether val[k] was quoted. */
typedef struct {
  char *val;
  char *quoted;
  size_t len, cap;
  uint32_t line, col;
} token_t;

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
static int is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}
static int is_name(const char *s, size_t n) {
  if (!n) return 0;
  for (size_t k = 0; k < n; k++)
    if (!is_name_char(s[k])) return 0;
  return 1;
}

static void advance(parser_t *ps) {
  if (ps->text[ps->i] == '\n')
    ps->line++, ps->col = 1;
  else
    ps->col++;
  ps->i++;
}

/* "column 7" on one-line text, "line 2, column 7" otherwise. */
static const char *where(const parser_t *ps, uint32_t line, uint32_t col, char *buf, size_t n) {
  if (ps->multiline)
    snprintf(buf, n, "line %u, column %u", line, col);
  else
    snprintf(buf, n, "column %u", col);
  return buf;
}

static hc_status_t oom(void) { return hc_error(HC_ERR_NO_MEMORY, "pipeline: out of memory"); }

static int tok_push(token_t *t, char c, int quoted) {
  if (t->len + 2 > t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 32;
    char *v = realloc(t->val, cap);
    if (!v) return 0;
    t->val = v;
    char *q = realloc(t->quoted, cap);
    if (!q) return 0;
    t->quoted = q;
    t->cap = cap;
  }
  t->val[t->len] = c;
  t->quoted[t->len] = (char)quoted;
  t->len++;
  t->val[t->len] = '\0';
  return 1;
}

static void tok_free(token_t *t) {
  free(t->val);
  free(t->quoted);
  memset(t, 0, sizeof *t);
}

static hc_status_t read_token(parser_t *ps, token_t *t) {
  memset(t, 0, sizeof *t);
  t->line = ps->line;
  t->col = ps->col;
  if (!tok_push(t, 'x', 0)) return oom(); /* allocate, then empty it */
  t->len = 0;
  t->val[0] = '\0';
  for (char c; (c = ps->text[ps->i]) && !is_blank(c) && c != '\n' && c != '|';) {
    if (c == '\'' || c == '"') {
      uint32_t ql = ps->line, qc = ps->col;
      advance(ps);
      while (ps->text[ps->i] && ps->text[ps->i] != c) {
        if (!tok_push(t, ps->text[ps->i], 1)) return oom();
        advance(ps);
      }
      if (!ps->text[ps->i]) {
        char w[64];
        return hc_error(HC_ERR_PIPELINE, "pipeline: unbalanced %c quote at %s", c, where(ps, ql, qc, w, sizeof w));
      }
      advance(ps);
    } else {
      if (!tok_push(t, c, 0)) return oom();
      advance(ps);
    }
  }
  return HC_OK;
}

/* Index of the first unquoted c in t, or -1. */
static long first_unquoted(const token_t *t, char c) {
  for (size_t k = 0; k < t->len; k++)
    if (!t->quoted[k] && t->val[k] == c) return (long)k;
  return -1;
}

static char *dup_n(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

static void stage_free(hc__pp_stage_t *s) {
  free(s->workload);
  free(s->device);
  for (uint32_t k = 0; k < s->nparams; k++) free(s->params[k]);
  free(s->params);
  for (uint32_t k = 0; k < s->nbinds; k++) {
    free(s->binds[k].from);
    free(s->binds[k].output);
    free(s->binds[k].input);
    free(s->binds[k].text);
  }
  free(s->binds);
  memset(s, 0, sizeof *s);
}

void hc__pp_free(hc__pp_t *pp) {
  if (!pp) return;
  for (uint32_t k = 0; k < pp->nstages; k++) stage_free(&pp->stages[k]);
  free(pp->stages);
  memset(pp, 0, sizeof *pp);
}

/* "[FROM.]OUT>IN" at the first unquoted '>' (gt). */
static hc_status_t add_binding(hc__pp_stage_t *s, uint32_t number, const token_t *t, long gt) {
  const char *v = t->val;
  const char *dot = memchr(v, '.', (size_t)gt);
  const char *out = dot ? dot + 1 : v;
  size_t from_len = dot ? (size_t)(dot - v) : 0;
  size_t out_len = (size_t)(v + gt - out);
  const char *in = v + gt + 1;
  size_t in_len = t->len - (size_t)gt - 1;
  if ((dot && !is_name(v, from_len)) || !is_name(out, out_len) || !is_name(in, in_len))
    return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u (%s): '%s' is not a binding (expected [STAGE.]output>input)",
                    number, s->workload, v);
  hc__pp_bind_t *b = realloc(s->binds, (s->nbinds + 1) * sizeof *b);
  if (!b) return oom();
  s->binds = b;
  b += s->nbinds;
  memset(b, 0, sizeof *b);
  b->from = dot ? dup_n(v, from_len) : NULL;
  b->output = dup_n(out, out_len);
  b->input = dup_n(in, in_len);
  b->text = dup_n(v, t->len);
  s->nbinds++;
  if ((dot && !b->from) || !b->output || !b->input || !b->text) return oom();
  return HC_OK;
}

/* A token after the workload name: @device, key=value or a binding. */
static hc_status_t add_token(hc__pp_stage_t *s, uint32_t number, const token_t *t) {
  if (t->len && t->val[0] == '@' && !t->quoted[0]) {
    if (t->len == 1)
      return hc_error(HC_ERR_PIPELINE,
                      "pipeline: stage %u (%s): '@' needs a device (e.g. @cpu, @opencl:0, @cuda, @auto)", number,
                      s->workload);
    if (s->device)
      return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u (%s): device given twice (@%s and %s)", number, s->workload,
                      s->device, t->val);
    return (s->device = dup_n(t->val + 1, t->len - 1)) ? HC_OK : oom();
  }
  long eq = first_unquoted(t, '='), gt = first_unquoted(t, '>');
  if (eq >= 0 && (gt < 0 || eq < gt)) {
    if (eq == 0 || !is_name(t->val, (size_t)eq))
      return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u (%s): '%s' is not key=value (the key is a parameter name)",
                      number, s->workload, t->val);
    char **p = realloc(s->params, (s->nparams + 1) * sizeof *p);
    if (!p) return oom();
    s->params = p;
    if (!(p[s->nparams] = dup_n(t->val, t->len))) return oom();
    s->nparams++;
    return HC_OK;
  }
  if (gt >= 0) return add_binding(s, number, t, gt);
  return hc_error(HC_ERR_PIPELINE,
                  "pipeline: stage %u (%s): unexpected '%s' (expected key=value, @device or [STAGE.]output>input)",
                  number, s->workload, t->val);
}

static hc_status_t new_stage(parser_t *ps, hc__pp_t *pp, const token_t *t) {
  uint32_t number = pp->nstages + 1;
  if (!is_name(t->val, t->len) || t->quoted[0])
    return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u starts with '%s' (a stage starts with a workload name)",
                    number, t->val);
  hc__pp_stage_t *st = realloc(pp->stages, (pp->nstages + 1) * sizeof *st);
  if (!st) return oom();
  pp->stages = st;
  st += pp->nstages;
  memset(st, 0, sizeof *st);
  pp->nstages++;
  st->line = t->line;
  st->column = t->col;
  (void)ps;
  return (st->workload = dup_n(t->val, t->len)) ? HC_OK : oom();
}

hc_status_t hc__pp_parse(const char *text, hc__pp_t *out) {
  if (!out) return hc_error(HC_ERR_INVALID_ARG, "pipeline: NULL output");
  memset(out, 0, sizeof *out);
  if (!text) return hc_error(HC_ERR_PIPELINE, "pipeline: no text");
  /* Locations name the line only when the text has more than one (a
   * trailing newline, as files end, does not count). */
  const char *nl = strchr(text, '\n');
  int multiline = nl && nl[strspn(nl, " \t\r\n")] != '\0';
  parser_t ps = {text, 0, 1, 1, multiline};
  hc__pp_t pp = {NULL, 0};
  hc__pp_stage_t *cur = NULL;           /* the stage tokens go to */
  int after_pipe = 0;                   /* a '|' since the last stage */
  uint32_t pipe_line = 0, pipe_col = 0; /* where that '|' is */
  hc_status_t st = HC_OK;
  char w1[64], w2[64];
  while (st == HC_OK) {
    while (is_blank(text[ps.i])) advance(&ps);
    char c = text[ps.i];
    if (!c) break;
    if (c == '#') {
      while (text[ps.i] && text[ps.i] != '\n') advance(&ps);
    } else if (c == '\n') {
      cur = NULL;
      advance(&ps);
    } else if (c == '|') {
      if (!cur && !pp.nstages)
        st = hc_error(HC_ERR_PIPELINE, "pipeline: empty stage before '|' at %s",
                      where(&ps, ps.line, ps.col, w1, sizeof w1));
      else if (!cur && after_pipe)
        st = hc_error(HC_ERR_PIPELINE, "pipeline: empty stage between '|' at %s and '|' at %s",
                      where(&ps, pipe_line, pipe_col, w1, sizeof w1), where(&ps, ps.line, ps.col, w2, sizeof w2));
      after_pipe = 1;
      pipe_line = ps.line;
      pipe_col = ps.col;
      cur = NULL;
      advance(&ps);
    } else {
      token_t t;
      st = read_token(&ps, &t);
      if (st == HC_OK && !cur) {
        st = new_stage(&ps, &pp, &t);
        if (st == HC_OK) cur = &pp.stages[pp.nstages - 1];
        after_pipe = 0;
      } else if (st == HC_OK) {
        st = add_token(cur, pp.nstages, &t);
      }
      tok_free(&t);
    }
  }
  if (st == HC_OK && after_pipe)
    st = hc_error(HC_ERR_PIPELINE, "pipeline: empty stage after '|' at %s",
                  where(&ps, pipe_line, pipe_col, w1, sizeof w1));
  if (st == HC_OK && !pp.nstages) st = hc_error(HC_ERR_PIPELINE, "pipeline: no stages");
  if (st != HC_OK) {
    hc__pp_free(&pp);
    return st;
  }
  *out = pp;
  return HC_OK;
}
