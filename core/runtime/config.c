/* The one reader of hc's environment variables (include/hc/config.h): the
 * table of config_vars.h, parsing and validation as pure functions of a
 * variable's entry and its text. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hc/config.h"
#include "config_vars.h"
#include "internal.h"

static const hc_config_var_t table[] = {
#define X(name, type, scope, def, min, max, names, doc) \
  {#name, HC_CONFIG_##type, HC_CONFIG_##scope, def, min, max, names, doc},
    HC_CONFIG_VARS(X)
#undef X
};
#define NVARS (sizeof table / sizeof table[0])

HC_API uint32_t hc_config_count(void) { return (uint32_t)NVARS; }

HC_API const hc_config_var_t *hc_config_at(uint32_t i) { return i < NVARS ? &table[i] : NULL; }

HC_API const hc_config_var_t *hc_config_find(const char *name) {
  for (size_t i = 0; name && i < NVARS; i++)
    if (!strcmp(table[i].name, name)) return &table[i];
  return NULL;
}

/* The value of `word` in a "a=1|b=2" or "a|b" list (its index when the list
 * has no '='), matched without case; 0 when absent. */
static int named_value(const char *names, const char *word, long long *out) {
  size_t wl = strlen(word);
  long long index = 0;
  for (const char *p = names; p && *p; index++) {
    const char *bar = strchr(p, '|'), *end = bar ? bar : p + strlen(p);
    const char *eq = memchr(p, '=', (size_t)(end - p));
    const char *nend = eq ? eq : end;
    if ((size_t)(nend - p) == wl && !strncasecmp(p, word, wl)) {
      *out = eq ? strtoll(eq + 1, NULL, 10) : index;
      return 1;
    }
    p = bar ? bar + 1 : end;
  }
  return 0;
}

/* The names of a list, without their values: "a, b or c". */
static void list_names(const char *names, char *out, size_t n) {
  size_t len = 0;
  int count = 0, total = 1;
  for (const char *p = names; *p; p++) total += *p == '|';
  out[0] = '\0';
  for (const char *p = names; *p && len < n; count++) {
    const char *bar = strchr(p, '|'), *end = bar ? bar : p + strlen(p);
    const char *eq = memchr(p, '=', (size_t)(end - p));
    const char *sep = count == 0 ? "" : count == total - 1 ? " or " : ", ";
    len += (size_t)snprintf(out + len, n - len, "%s%.*s", sep, (int)((eq ? eq : end) - p), p);
    p = bar ? bar + 1 : end;
  }
}

static void fmt_num(double v, char *out, size_t n) {
  if (v == floor(v) && fabs(v) < 1e15)
    snprintf(out, n, "%lld", (long long)v);
  else
    snprintf(out, n, "%g", v);
}

HC_API char *hc_config_accepted(const hc_config_var_t *v, char *out, size_t n) {
  char lo[32], hi[32], names[256] = "";
  fmt_num(v->min, lo, sizeof lo);
  fmt_num(v->max, hi, sizeof hi);
  if (v->names) list_names(v->names, names, sizeof names);
  const char *alt = v->names ? " or " : "";
  switch (v->type) {
  case HC_CONFIG_BOOL: snprintf(out, n, "give 1, on, yes, true or 0, off, no, false"); break;
  case HC_CONFIG_INT: snprintf(out, n, "give a whole number from %s to %s%s%s", lo, hi, alt, names); break;
  case HC_CONFIG_SIZE:
    snprintf(out, n, "give a size in bytes from %s to %s (k, M, G: KiB, MiB, GiB)%s%s", lo, hi, alt, names);
    break;
  case HC_CONFIG_DOUBLE: snprintf(out, n, "give a number from %s to %s", lo, hi); break;
  case HC_CONFIG_CHOICE: snprintf(out, n, "give %s", names); break;
  case HC_CONFIG_SHAPE:
    snprintf(out, n, "give BXxBYxZ (work-group BX x BY <= %s items, Z = 1..16 planes per item), e.g. 32x8x4%s%s", hi,
             alt, names);
    break;
  default: snprintf(out, n, "give any text"); break;
  }
  return out;
}

static int parse_whole(const char *s, long long *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno) return 0;
  *out = v;
  return 1;
}

static int parse_size(const char *s, long long *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || errno || *s == '-') return 0;
  int shift = 0;
  switch (*end) {
  case 'k':
  case 'K':
    shift = 10;
    end++;
    break;
  case 'm':
  case 'M':
    shift = 20;
    end++;
    break;
  case 'g':
  case 'G':
    shift = 30;
    end++;
    break;
  default: break;
  }
  if (*end || v > (ULLONG_MAX >> 1) >> shift) return 0;
  *out = (long long)(v << shift);
  return 1;
}

/* The integer of text under v (0 when v's type has none); 1 if accepted. */
static int parse_int(const hc_config_var_t *v, const char *text, long long *out) {
  long long x;
  switch (v->type) {
  case HC_CONFIG_BOOL: return named_value("1=1|on=1|yes=1|true=1|0=0|off=0|no=0|false=0", text, out);
  case HC_CONFIG_CHOICE: return named_value(v->names, text, out);
  case HC_CONFIG_INT:
  case HC_CONFIG_SIZE:
    if (v->names && named_value(v->names, text, out)) return 1;
    if (!(v->type == HC_CONFIG_INT ? parse_whole(text, &x) : parse_size(text, &x))) return 0;
    if ((double)x < v->min || (double)x > v->max) return 0;
    *out = x;
    return 1;
  default: return 0;
  }
}

static int parse_double(const hc_config_var_t *v, const char *text, double *out) {
  char *end = NULL;
  double x = strtod(text, &end);
  if (end == text || *end || !(x >= v->min && x <= v->max)) return 0;
  *out = x;
  return 1;
}

static int parse_shape(const hc_config_var_t *v, const char *text, int out[3]) {
  long long none;
  if (v->names && named_value(v->names, text, &none)) {
    out[0] = out[1] = out[2] = 0;
    return 1;
  }
  int a, b, c, used = 0;
  if (sscanf(text, "%dx%dx%d%n", &a, &b, &c, &used) != 3 || text[used] || a < 1 || b < 1 || c < 1 || c > 16 ||
      (double)a * b < v->min || (double)a * b > v->max)
    return 0;
  out[0] = a, out[1] = b, out[2] = c;
  return 1;
}

static int accepts(const hc_config_var_t *v, const char *text) {
  long long i;
  double d;
  int s[3];
  switch (v->type) {
  case HC_CONFIG_DOUBLE: return parse_double(v, text, &d);
  case HC_CONFIG_SHAPE: return parse_shape(v, text, s);
  case HC_CONFIG_STRING: return 1;
  default: return parse_int(v, text, &i);
  }
}

static hc_status_t rejected(const hc_config_var_t *v, const char *text) {
  char what[384];
  return hc_error(HC_ERR_PARAM, "%s=%s: %s", v->name, text, hc_config_accepted(v, what, sizeof what));
}

/* The text to parse: the variable's value, else its default, else NULL. */
static hc_status_t text_of(const hc_config_var_t *v, const char *reader, const char **out) {
  if (!v || !v->name) return hc_error(HC_ERR_INVALID_ARG, "%s: no such configuration variable", reader);
  const char *e = getenv(v->name);
  *out = e && *e ? e : v->def;
  return HC_OK;
}

static hc_status_t wrong_type(const hc_config_var_t *v, const char *reader) {
  return hc_error(HC_ERR_INVALID_ARG, "%s: %s is not read that way (its type is %d)", reader, v->name, (int)v->type);
}

HC_API hc_status_t hc_config_var_int(const hc_config_var_t *v, long long *out) {
  const char *t = NULL;
  hc_status_t st = text_of(v, "hc_config_int", &t);
  if (st != HC_OK) return st;
  if (v->type != HC_CONFIG_BOOL && v->type != HC_CONFIG_INT && v->type != HC_CONFIG_SIZE && v->type != HC_CONFIG_CHOICE)
    return wrong_type(v, "hc_config_int");
  long long x;
  if (!t) return HC_OK;
  if (!parse_int(v, t, &x)) return rejected(v, t);
  *out = x;
  return HC_OK;
}

HC_API hc_status_t hc_config_var_double(const hc_config_var_t *v, double *out) {
  const char *t = NULL;
  hc_status_t st = text_of(v, "hc_config_double", &t);
  if (st != HC_OK) return st;
  if (v->type == HC_CONFIG_INT) {
    long long x;
    if (!t) return HC_OK;
    if (!parse_int(v, t, &x)) return rejected(v, t);
    *out = (double)x;
    return HC_OK;
  }
  if (v->type != HC_CONFIG_DOUBLE) return wrong_type(v, "hc_config_double");
  double x;
  if (!t) return HC_OK;
  if (!parse_double(v, t, &x)) return rejected(v, t);
  *out = x;
  return HC_OK;
}

HC_API hc_status_t hc_config_var_str(const hc_config_var_t *v, const char **out) {
  const char *t = NULL;
  hc_status_t st = text_of(v, "hc_config_str", &t);
  if (st != HC_OK) return st;
  if (!t) return HC_OK;
  if (!accepts(v, t)) return rejected(v, t);
  *out = t;
  return HC_OK;
}

HC_API hc_status_t hc_config_var_shape(const hc_config_var_t *v, int out[3]) {
  const char *t = NULL;
  hc_status_t st = text_of(v, "hc_config_shape", &t);
  if (st != HC_OK) return st;
  if (v->type != HC_CONFIG_SHAPE) return wrong_type(v, "hc_config_shape");
  int s[3];
  if (!t) return HC_OK;
  if (!parse_shape(v, t, s)) return rejected(v, t);
  memcpy(out, s, sizeof s);
  return HC_OK;
}

/* By name: an unknown name is the caller's error, named. */
static const hc_config_var_t *known(const char *name, const char *reader) {
  const hc_config_var_t *v = hc_config_find(name);
  if (!v)
    hc_error(HC_ERR_INVALID_ARG, "%s: %s is not a configuration variable of hc (core/runtime/config_vars.h)", reader,
             name ? name : "NULL");
  return v;
}

HC_API hc_status_t hc_config_int(const char *name, long long *out) {
  const hc_config_var_t *v = known(name, "hc_config_int");
  return v ? hc_config_var_int(v, out) : HC_ERR_INVALID_ARG;
}

HC_API hc_status_t hc_config_double(const char *name, double *out) {
  const hc_config_var_t *v = known(name, "hc_config_double");
  return v ? hc_config_var_double(v, out) : HC_ERR_INVALID_ARG;
}

HC_API hc_status_t hc_config_str(const char *name, const char **out) {
  const hc_config_var_t *v = known(name, "hc_config_str");
  return v ? hc_config_var_str(v, out) : HC_ERR_INVALID_ARG;
}

HC_API hc_status_t hc_config_shape(const char *name, int out[3]) {
  const hc_config_var_t *v = known(name, "hc_config_shape");
  return v ? hc_config_var_shape(v, out) : HC_ERR_INVALID_ARG;
}

HC_API hc_status_t hc_config_check(void) {
  for (size_t i = 0; i < NVARS; i++) {
    const char *e = getenv(table[i].name);
    if (e && *e && !accepts(&table[i], e)) return rejected(&table[i], e);
  }
  return HC_OK;
}
