/* simpson: resolving and checking a run's configuration. Every user error
 * is found here, before anything is allocated or written, and reported as
 * HC_ERR_PARAM with the parameter (or input file) and the problem. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpson.h"

static const char *const variant_names[] = {
#define SIMPSON_VARIANT_NAME_(e, n, h) n,
    SIMPSON_VARIANT_LIST(SIMPSON_VARIANT_NAME_)
#undef SIMPSON_VARIANT_NAME_
};

static const char *const func_names[] = {
#define SIMPSON_FUNC_NAME_(e, n) n,
    SIMPSON_FUNC_LIST(SIMPSON_FUNC_NAME_)
#undef SIMPSON_FUNC_NAME_
};

static const char *const axis_param[3] = {"hx", "hy", "hz"};

const char *simpson_variant_name(simpson_variant_t v) {
  return (unsigned)v < SIMPSON_VARIANT_COUNT_ ? variant_names[v] : "?";
}

const char *simpson_func_name(simpson_func_t f) { return (unsigned)f < SIMPSON_FUNC_COUNT_ ? func_names[f] : "?"; }

/* A parameter's text as given (hc_job_string reads strings and enums only). */
static const char *param_text(const hc_job_t *job, const char *name) {
  for (uint32_t i = 0; i < hc_job_param_count(job); i++) {
    const char *n, *v;
    if (hc_job_param_get(job, i, &n, &v) == HC_OK && !strcmp(n, name)) return v;
  }
  return "";
}

static int lookup(const char *const *names, int count, const char *s) {
  for (int i = 0; i < count; i++)
    if (!strcmp(names[i], s)) return i;
  return -1;
}

static void shape_text(char *buf, size_t n, uint32_t rank, const int64_t *shape) {
  size_t len = 0;
  buf[0] = '\0';
  for (uint32_t d = 0; d < rank && len < n; d++)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? "x" : "", (long long)shape[d]);
}

/* Rank 1..3 and at least 2 samples per axis: the rule needs an interval. */
static hc_status_t check_shape(const char *what, uint32_t rank, const int64_t *shape) {
  char s[96];
  shape_text(s, sizeof s, rank, shape);
  if (rank < 1 || rank > 3)
    return hc_error(HC_ERR_PARAM, "%s: a %u-D array (shape %s): simpson integrates 1-, 2- or 3-D fields", what, rank,
                    rank ? s : "()");
  double total = 1;
  for (uint32_t d = 0; d < rank; d++) {
    if (shape[d] < 2)
      return hc_error(HC_ERR_PARAM,
                      "%s: axis %u has %lld sample%s (shape %s); Simpson's rule needs at least 2 samples per axis",
                      what, d, (long long)shape[d], shape[d] == 1 ? "" : "s", s);
    if (shape[d] > SIMPSON_MAX_EXTENT)
      return hc_error(HC_ERR_PARAM, "%s: axis %u has %lld samples (shape %s); at most %lld per axis", what, d,
                      (long long)shape[d], s, (long long)SIMPSON_MAX_EXTENT);
    total *= (double)shape[d];
  }
  if (total > (double)SIMPSON_MAX_SAMPLES)
    return hc_error(HC_ERR_PARAM, "%s: %.3g samples (shape %s); at most %.3g", what, total, s,
                    (double)SIMPSON_MAX_SAMPLES);
  return HC_OK;
}

/* box= "a:b" for every axis, or "a:b,c:d[,e:f]" one interval per axis. */
static hc_status_t parse_box(const char *text, simpson_config_t *cfg) {
  double lo[3], hi[3];
  uint32_t count = 0;
  const char *p = text;
  while (*p) {
    if (count == 3) return hc_error(HC_ERR_PARAM, "box=%s: more than 3 intervals", text);
    char *end;
    lo[count] = strtod(p, &end);
    if (end == p || *end != ':')
      return hc_error(HC_ERR_PARAM,
                      "box=%s: expected intervals a:b, one for all axes or one per axis (e.g. -1:1 or 0:1,0:2,0:3)",
                      text);
    p = end + 1;
    hi[count] = strtod(p, &end);
    if (end == p || (*end && *end != ','))
      return hc_error(HC_ERR_PARAM,
                      "box=%s: expected intervals a:b, one for all axes or one per axis (e.g. -1:1 or 0:1,0:2,0:3)",
                      text);
    if (!isfinite(lo[count]) || !isfinite(hi[count]) || !(hi[count] > lo[count]))
      return hc_error(HC_ERR_PARAM, "box=%s: interval %u is %g:%g; it needs finite a < b", text, count + 1, lo[count],
                      hi[count]);
    /* The length and the spacing from it must be finite too, or every
     * sample and weight is Inf or NaN. */
    if (!isfinite(hi[count] - lo[count]))
      return hc_error(HC_ERR_PARAM, "box=%s: interval %u is %g:%g, whose length %g is not a finite double", text,
                      count + 1, lo[count], hi[count], hi[count] - lo[count]);
    count++;
    p = *end ? end + 1 : end;
    if (*end && !*p) return hc_error(HC_ERR_PARAM, "box=%s: trailing comma", text);
  }
  if (count != 1 && count != cfg->rank)
    return hc_error(HC_ERR_PARAM, "box=%s: %u intervals for a %u-D field (give 1, or one per axis)", text, count,
                    cfg->rank);
  for (uint32_t d = 0; d < cfg->rank; d++) {
    cfg->lo[d] = lo[count == 1 ? 0 : d];
    cfg->hi[d] = hi[count == 1 ? 0 : d];
    cfg->h[d] = (cfg->hi[d] - cfg->lo[d]) / (double)(cfg->shape[d] - 1);
  }
  return HC_OK;
}

/* The spacing parameters: positive where given, and only for axes the
 * field has. h= sets every axis, hx= hy= hz= one each (over h=). */
static hc_status_t apply_spacing(hc_job_t *job, simpson_config_t *cfg) {
  static const char *const names[4] = {"h", "hx", "hy", "hz"};
  for (int i = 0; i < 4; i++)
    if (hc_job_given(job, names[i]) && !(hc_job_float(job, names[i]) > 0))
      return hc_error(HC_ERR_PARAM, "%s=%s: a grid spacing must be positive", names[i], param_text(job, names[i]));
  if (cfg->source == SIMPSON_SRC_FUNC) {
    for (int i = 0; i < 4; i++)
      if (hc_job_given(job, names[i]))
        return hc_error(HC_ERR_PARAM,
                        "%s=: with func= the spacing follows from box= and n= (h = length / (samples - 1)); "
                        "give box= instead",
                        names[i]);
    return HC_OK;
  }
  for (uint32_t d = cfg->rank; d < 3; d++)
    if (hc_job_given(job, axis_param[d]))
      return hc_error(HC_ERR_PARAM, "%s=: the input is %u-D (its spacings are %s)", axis_param[d], cfg->rank,
                      cfg->rank == 1 ? "hx" : "hx, hy");
  for (uint32_t d = 0; d < cfg->rank; d++) {
    if (hc_job_given(job, "h")) cfg->h[d] = hc_job_float(job, "h");
    if (hc_job_given(job, axis_param[d])) cfg->h[d] = hc_job_float(job, axis_param[d]);
  }
  return HC_OK;
}

/* Where the samples come from: the f port (from a previous stage or the
 * embedding program), input=, or a built-in function. */
static hc_status_t resolve_source(hc_job_t *job, simpson_config_t *cfg) {
  hc_field_t *port = hc_job_input(job, "f");
  const char *input = hc_job_string(job, "input");
  int has_input = hc_job_given(job, "input") && input && *input;
  /* The built-in function's parameters do not apply to samples from a port
   * or a file: the report leaves them out (dtype, shape and spacing are the
   * samples'). */
  static const char *const func_params[] = {"func", "n", "box", "dtype"};
  if (port || has_input)
    for (size_t i = 0; i < sizeof func_params / sizeof func_params[0]; i++)
      if (!hc_job_given(job, func_params[i])) hc_job_param_unused(job, func_params[i]);
  if (port) {
    if (has_input) hc_job_note(job, "input=%s ignored: the f port is bound", input);
    if (has_input) hc_job_param_unused(job, "input");
    cfg->source = SIMPSON_SRC_PORT;
    cfg->dtype = hc_field_dtype(port);
    cfg->rank = hc_field_rank(port);
    hc_status_t st = check_shape("input f", cfg->rank, hc_field_shape(port));
    if (st != HC_OK) return st;
    memcpy(cfg->shape, hc_field_shape(port), cfg->rank * sizeof cfg->shape[0]);
    memcpy(cfg->h, hc_field_spacing(port), cfg->rank * sizeof cfg->h[0]);
    for (uint32_t d = 0; d < cfg->rank; d++)
      if (!(cfg->h[d] > 0))
        return hc_error(HC_ERR_PARAM, "input f: spacing %g on axis %u; a grid spacing must be positive (set %s=)",
                        cfg->h[d], d, axis_param[d]);
    return HC_OK;
  }
  if (has_input) {
    if (hc_job_given(job, "func"))
      return hc_error(HC_ERR_PARAM, "input=%s and func=%s: give one source of samples, not both", input,
                      hc_job_string(job, "func"));
    cfg->source = SIMPSON_SRC_FILE;
    cfg->path = input;
    int64_t shape[HC_MAX_DIMS];
    hc_status_t st = simpson_npy_peek(input, &cfg->dtype, &cfg->rank, shape);
    if (st != HC_OK) return hc_error_prefix(HC_ERR_PARAM, "input=%s: ", input);
    if (cfg->dtype != HC_F32 && cfg->dtype != HC_F64)
      return hc_error(HC_ERR_PARAM, "input=%s: dtype %s; simpson integrates real samples (f32 or f64)", input,
                      hc_dtype_name(cfg->dtype));
    char what[600];
    snprintf(what, sizeof what, "input=%s", input);
    if ((st = check_shape(what, cfg->rank, shape)) != HC_OK) return st;
    memcpy(cfg->shape, shape, cfg->rank * sizeof cfg->shape[0]);
    for (uint32_t d = 0; d < 3; d++) cfg->h[d] = 1.0;
    if (!simpson_grid_spacing(input, cfg->rank, cfg->h) && !hc_job_given(job, "h")) {
      int all = 1;
      for (uint32_t d = 0; d < cfg->rank; d++) all &= hc_job_given(job, axis_param[d]);
      if (!all)
        hc_job_note(job, "input=%s has no .grid side file and no h= was given: spacing 1 on the other axes", input);
    }
    return HC_OK;
  }
  cfg->source = SIMPSON_SRC_FUNC;
  cfg->func = (simpson_func_t)lookup(func_names, SIMPSON_FUNC_COUNT_, hc_job_string(job, "func"));
  cfg->dtype = hc_dtype_from_name(hc_job_string(job, "dtype"));
  hc_shape_t s = hc_job_shape(job, "n");
  cfg->rank = s.rank;
  char what[300];
  snprintf(what, sizeof what, "n=%s", param_text(job, "n"));
  hc_status_t st = check_shape(what, s.rank, s.dims);
  if (st != HC_OK) return st;
  memcpy(cfg->shape, s.dims, s.rank * sizeof cfg->shape[0]);
  return parse_box(hc_job_string(job, "box"), cfg);
}

hc_status_t simpson_config_resolve(hc_job_t *job, simpson_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  int v = lookup(variant_names, SIMPSON_VARIANT_COUNT_, hc_job_string(job, "variant"));
  if (v < 0) return hc_error(HC_ERR_PARAM, "variant=%s: unknown", hc_job_string(job, "variant"));
  cfg->variant = (simpson_variant_t)v;
  cfg->groups = hc_job_int(job, "groups");
  cfg->isa = simpson_isa(hc_job_string(job, "isa"));
  hc_status_t st = resolve_source(job, cfg);
  if (st != HC_OK) return st;
  if (cfg->source != SIMPSON_SRC_FUNC) {
    const char *from = cfg->source == SIMPSON_SRC_PORT ? "the f port" : cfg->path;
    if (hc_job_given(job, "dtype") && hc_dtype_from_name(hc_job_string(job, "dtype")) != cfg->dtype)
      return hc_error(HC_ERR_PARAM, "dtype=%s: the input (%s) holds %s", hc_job_string(job, "dtype"), from,
                      hc_dtype_name(cfg->dtype));
    if (hc_job_given(job, "box"))
      return hc_error(HC_ERR_PARAM, "box=%s: box= applies to func=; an input's spacing comes from h= or hx= hy= hz=",
                      hc_job_string(job, "box"));
    if (hc_job_given(job, "n")) {
      hc_shape_t s = hc_job_shape(job, "n");
      int same = s.rank == cfg->rank;
      for (uint32_t d = 0; same && d < s.rank; d++) same = s.dims[d] == cfg->shape[d];
      if (!same) {
        char have[96];
        shape_text(have, sizeof have, cfg->rank, cfg->shape);
        return hc_error(HC_ERR_PARAM, "n=%s disagrees with the shape of the input (%s): %s", param_text(job, "n"), from,
                        have);
      }
    }
  }
  if ((st = apply_spacing(job, cfg)) != HC_OK) return st;
  const uint32_t r = cfg->rank;
  cfg->nz = (int)cfg->shape[r - 1];
  cfg->ny = r >= 2 ? (int)cfg->shape[r - 2] : 1;
  cfg->nx = r >= 3 ? (int)cfg->shape[0] : 1;
  cfg->n = (int64_t)cfg->nx * cfg->ny * cfg->nz;
  cfg->row0 = 0;
  cfg->grows = cfg->shape[0];
  return HC_OK;
}

double simpson_scale(const simpson_config_t *cfg) {
  double s = 1.0;
  for (uint32_t d = 0; d < 3; d++) s *= d < cfg->rank ? cfg->h[d] / 12.0 : 1.0 / 12.0;
  return s;
}
