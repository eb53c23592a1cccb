/* Parameter parsing and validation from a workload's schema. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "params.h"

int hc__parse_int(const char *s, int64_t *out) {
  if (!s || !*s) return 0;
  errno = 0;
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (end == s || errno) return 0;
  if (*end == 'e' || *end == 'E' || *end == '.') {
    /* 1e6 or 2.5e3: accepted when the value is an exact integer. */
    char *e2 = NULL;
    double d = strtod(s, &e2);
    if (*e2 || !isfinite(d) || d != floor(d) || fabs(d) > 9.2e18) return 0;
    *out = (int64_t)d;
    return 1;
  }
  int64_t mul = 1;
  if (*end) {
    switch (*end) {
    case 'k':
    case 'K': mul = 1LL << 10; break;
    case 'm':
    case 'M': mul = 1LL << 20; break;
    case 'g':
    case 'G': mul = 1LL << 30; break;
    default: return 0;
    }
    if (end[1]) return 0;
  }
  if (v > INT64_MAX / mul || v < INT64_MIN / mul) return 0;
  *out = (int64_t)v * mul;
  return 1;
}

int hc__parse_shape(const char *s, hc_shape_t *out) {
  memset(out, 0, sizeof *out);
  if (!s || !*s) return 0;
  char buf[256];
  if (strlen(s) >= sizeof buf) return 0;
  snprintf(buf, sizeof buf, "%s", s);
  char *save = NULL;
  if (buf[strlen(buf) - 1] == 'x' || buf[0] == 'x' || strstr(buf, "xx")) return 0;
  for (char *tok = strtok_r(buf, "xX", &save); tok; tok = strtok_r(NULL, "xX", &save)) {
    if (out->rank >= HC_MAX_DIMS) return 0;
    if (!hc__parse_int(tok, &out->dims[out->rank])) return 0;
    out->rank++;
  }
  return out->rank > 0;
}

static int ranged(const hc_param_spec_t *s) {
  return hc_param_type_ranged((hc_param_type_t)s->type) && s->min <= s->max;
}

static hc_status_t range_err(const hc_param_spec_t *s, const char *text) {
  return hc_error(HC_ERR_PARAM, "parameter %s=%s: out of range (allowed %s from %g to %g)", s->name, text,
                  s->type == HC_PARAM_SHAPE ? "extents"
                  : s->type == HC_PARAM_VEC ? "items"
                                            : "values",
                  s->min, s->max);
}

void hc__param_clear(hc__param_value_t *v) {
  free(v->text);
  memset(v, 0, sizeof *v);
}

hc_status_t hc__param_parse(const hc_param_spec_t *s, const char *text, hc__param_value_t *out) {
  hc__param_value_t v;
  memset(&v, 0, sizeof v);
  if (!text) return hc_error(HC_ERR_PARAM, "parameter %s: no value", s->name);
  switch ((hc_param_type_t)s->type) {
  case HC_PARAM_INT:
    if (!hc__parse_int(text, &v.i))
      return hc_error(HC_ERR_PARAM, "parameter %s=%s: not an integer (e.g. 100, 4k, 16M, 1e6)", s->name, text);
    if (ranged(s) && ((double)v.i < s->min || (double)v.i > s->max)) return range_err(s, text);
    v.f = (double)v.i;
    break;
  case HC_PARAM_FLOAT: {
    char *end = NULL;
    errno = 0;
    v.f = strtod(text, &end);
    if (end == text || *end || errno == ERANGE || !isfinite(v.f))
      return hc_error(HC_ERR_PARAM, "parameter %s=%s: not a finite number", s->name, text);
    if (ranged(s) && (v.f < s->min || v.f > s->max)) return range_err(s, text);
    break;
  }
  case HC_PARAM_BOOL:
    if (!strcasecmp(text, "1") || !strcasecmp(text, "true") || !strcasecmp(text, "yes") || !strcasecmp(text, "on"))
      v.b = 1;
    else if (!strcasecmp(text, "0") || !strcasecmp(text, "false") || !strcasecmp(text, "no") ||
             !strcasecmp(text, "off"))
      v.b = 0;
    else
      return hc_error(HC_ERR_PARAM, "parameter %s=%s: not a boolean (true/false, 1/0, yes/no, on/off)", s->name, text);
    break;
  case HC_PARAM_STRING: break;
  case HC_PARAM_ENUM: {
    const char *c = s->choices;
    size_t tl = strlen(text);
    int ok = 0;
    while (c && *c) {
      size_t l = strcspn(c, "|");
      if (l == tl && !strncmp(c, text, l)) ok = 1;
      c += l + (c[l] == '|');
    }
    if (!ok) return hc_error(HC_ERR_PARAM, "parameter %s=%s: not one of %s", s->name, text, s->choices);
    break;
  }
  case HC_PARAM_SHAPE:
    if (!hc__parse_shape(text, &v.shape))
      return hc_error(HC_ERR_PARAM, "parameter %s=%s: not a shape (e.g. 256 or 128x128 or 64x64x64, at most 4 extents)",
                      s->name, text);
    for (uint32_t i = 0; i < v.shape.rank; i++)
      if (ranged(s) && ((double)v.shape.dims[i] < s->min || (double)v.shape.dims[i] > s->max))
        return range_err(s, text);
    break;
  case HC_PARAM_VEC: {
    const char *p = text;
    while (*p) {
      if (v.vec.count >= HC_MAX_DIMS)
        return hc_error(HC_ERR_PARAM, "parameter %s=%s: more than %d numbers", s->name, text, HC_MAX_DIMS);
      char *end = NULL;
      double x = strtod(p, &end);
      if (end == p || !isfinite(x) || (*end && *end != ','))
        return hc_error(HC_ERR_PARAM, "parameter %s=%s: not a comma-separated list of numbers (e.g. 0,0,1)", s->name,
                        text);
      if (ranged(s) && (x < s->min || x > s->max)) return range_err(s, text);
      v.vec.v[v.vec.count++] = x;
      p = *end ? end + 1 : end;
      if (*end && !*p) return hc_error(HC_ERR_PARAM, "parameter %s=%s: trailing comma", s->name, text);
    }
    if (!v.vec.count) return hc_error(HC_ERR_PARAM, "parameter %s: empty list", s->name);
    break;
  }
  default: return hc_error(HC_ERR_INTERNAL, "parameter %s: unknown type %u", s->name, s->type);
  }
  v.text = hc__strdup(text);
  if (!v.text) return hc_error(HC_ERR_NO_MEMORY, "out of memory");
  v.present = 1;
  hc__param_clear(out);
  *out = v;
  return HC_OK;
}
