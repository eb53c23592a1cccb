/* Fuzz target: workload parameters (core/runtime/params.c) — every schema type with
 * random text, through the parser the core runs on each key=value.
 *
 * Input: byte 0 picks the type (one past the last is an unknown type), byte
 * 1 the range, then for an enum its choices up to a NUL, then the text.
 *
 * Properties: never a crash or an out-of-bounds read; the status is OK or
 * PARAM (INTERNAL for the unknown type) with a message naming the parameter;
 * an accepted value is within the range, keeps the text, and round-trips:
 * printed in canonical form and parsed again it gives the same value (ints,
 * shapes, vectors and floats exactly). Parsing again into a used value
 * frees the old one (LeakSanitizer checks). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fuzz_input.h"
#include "params.h"

static const struct {
  double min, max;
} ranges[] = {{1, 0}, {0, 100}, {1, 1e6}, {-1, 1}, {3, 3}, {-1e300, 1e300}, {NAN, 1}, {0, INFINITY}};

static void check_int_round_trip(int64_t i) {
  char buf[64];
  snprintf(buf, sizeof buf, "%lld", (long long)i);
  int64_t j = 0;
  FZ_CHECK(hc__parse_int(buf, &j) && j == i, "int %lld printed as %s", (long long)i, buf);
}

static void check_shape_round_trip(const hc_shape_t *s) {
  char buf[256];
  size_t len = 0;
  for (uint32_t k = 0; k < s->rank; k++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%lld", k ? "x" : "", (long long)s->dims[k]);
  hc_shape_t t;
  FZ_CHECK(hc__parse_shape(buf, &t), "shape printed as %s does not parse", buf);
  FZ_CHECK(t.rank == s->rank && !memcmp(t.dims, s->dims, s->rank * sizeof *s->dims), "shape %s changed", buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_t f;
  fz_init(&f, data, size);
  hc_param_spec_t spec;
  memset(&spec, 0, sizeof spec);
  spec.name = "p";
  spec.type = fz_u8(&f) % (HC_PARAM_TYPE_COUNT_ + 1);
  uint8_t r = fz_u8(&f) % (sizeof ranges / sizeof ranges[0]);
  spec.min = ranges[r].min;
  spec.max = ranges[r].max;
  if (spec.type == HC_PARAM_ENUM) spec.choices = fz_str(&f);
  const char *text = fz_str(&f);
  int ranged = spec.min <= spec.max;

  /* The standalone helpers first: no crash, and their own round trips. */
  int64_t iv = 0;
  if (hc__parse_int(text, &iv)) check_int_round_trip(iv);
  hc_shape_t sh;
  if (hc__parse_shape(text, &sh)) {
    FZ_CHECK(sh.rank >= 1 && sh.rank <= HC_MAX_DIMS, "rank %u", sh.rank);
    check_shape_round_trip(&sh);
  }

  hc__param_value_t v;
  memset(&v, 0, sizeof v);
  hc_status_t st = hc__param_parse(&spec, text, &v);
  if (st != HC_OK) {
    hc_status_t want = spec.type == HC_PARAM_TYPE_COUNT_ ? HC_ERR_INTERNAL : HC_ERR_PARAM;
    FZ_CHECK(st == want, "status %s for type %u", hc_status_name(st), spec.type);
    FZ_CHECK(!strncmp(hc_last_error(), "parameter p", 11), "message '%s' does not name the parameter", hc_last_error());
    FZ_CHECK(!v.present && !v.text, "a failed parse left a value");
    fz_free(&f);
    return 0;
  }
  FZ_CHECK(spec.type != HC_PARAM_TYPE_COUNT_, "unknown type accepted");
  FZ_CHECK(v.present && v.text && !strcmp(v.text, text), "value text '%s' for '%s'", v.text ? v.text : "(null)", text);
  switch ((hc_param_type_t)spec.type) {
  case HC_PARAM_INT:
    FZ_CHECK(!ranged || ((double)v.i >= spec.min && (double)v.i <= spec.max), "int %lld out of range", (long long)v.i);
    check_int_round_trip(v.i);
    break;
  case HC_PARAM_FLOAT: {
    FZ_CHECK(isfinite(v.f), "float %g", v.f);
    FZ_CHECK(!ranged || (v.f >= spec.min && v.f <= spec.max), "float %g out of range", v.f);
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v.f);
    /* Subnormals are left out: strtod flags their decimal spelling as an
     * underflow (ERANGE), which the parser refuses, while an exact hex
     * spelling of the same value passes. */
    if (v.f == 0 || fabs(v.f) >= DBL_MIN) {
      hc__param_value_t w;
      memset(&w, 0, sizeof w);
      FZ_CHECK(hc__param_parse(&spec, buf, &w) == HC_OK && w.f == v.f, "float %.17g does not round-trip", v.f);
      hc__param_clear(&w);
    }
    break;
  }
  case HC_PARAM_BOOL: FZ_CHECK(v.b == 0 || v.b == 1, "bool %d", v.b); break;
  case HC_PARAM_STRING: break;
  case HC_PARAM_ENUM: {
    /* The text is one of the '|'-separated choices. */
    int found = 0;
    size_t tl = strlen(text);
    for (const char *c = spec.choices; *c;) {
      size_t l = strcspn(c, "|");
      if (l == tl && !strncmp(c, text, l)) found = 1;
      c += l + (c[l] == '|');
    }
    FZ_CHECK(found, "'%s' accepted but not among '%s'", text, spec.choices);
    break;
  }
  case HC_PARAM_SHAPE:
    FZ_CHECK(v.shape.rank >= 1 && v.shape.rank <= HC_MAX_DIMS, "rank %u", v.shape.rank);
    for (uint32_t k = 0; k < v.shape.rank; k++)
      FZ_CHECK(!ranged || ((double)v.shape.dims[k] >= spec.min && (double)v.shape.dims[k] <= spec.max),
               "extent %lld out of range", (long long)v.shape.dims[k]);
    check_shape_round_trip(&v.shape);
    break;
  case HC_PARAM_VEC: {
    FZ_CHECK(v.vec.count >= 1 && v.vec.count <= HC_MAX_DIMS, "count %u", v.vec.count);
    char buf[256];
    size_t len = 0;
    for (uint32_t k = 0; k < v.vec.count; k++) {
      FZ_CHECK(isfinite(v.vec.v[k]) && (!ranged || (v.vec.v[k] >= spec.min && v.vec.v[k] <= spec.max)), "item %g",
               v.vec.v[k]);
      len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%.17g", k ? "," : "", v.vec.v[k]);
    }
    hc__param_value_t w;
    memset(&w, 0, sizeof w);
    FZ_CHECK(hc__param_parse(&spec, buf, &w) == HC_OK && w.vec.count == v.vec.count &&
                 !memcmp(w.vec.v, v.vec.v, v.vec.count * sizeof *v.vec.v),
             "vector %s does not round-trip", buf);
    hc__param_clear(&w);
    break;
  }
  default: break;
  }
  /* Parsing again into the used value replaces it (the old text is freed). */
  FZ_CHECK(hc__param_parse(&spec, text, &v) == HC_OK, "second parse of the same text failed");
  hc__param_clear(&v);
  fz_free(&f);
  return 0;
}
