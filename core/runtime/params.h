/* Parameter values parsed against a workload's schema. */
#ifndef HC_CORE_PARAMS_H
#define HC_CORE_PARAMS_H

#include "internal.h"

typedef struct hc__param_value {
  int given;   /* set by the user, not the default */
  int present; /* has a value (given or default) */
  int unused;  /* the last run said it did not apply (hc_job_param_unused) */
  char *text;  /* canonical text */
  int64_t i;
  double f;
  int b;
  hc_shape_t shape;
  hc_vec_t vec;
} hc__param_value_t;

/* Parses text as the spec's type and checks its range. On error the
 * message names the parameter, the value and what is allowed. */
hc_status_t hc__param_parse(const hc_param_spec_t *spec, const char *text, hc__param_value_t *out);
void hc__param_clear(hc__param_value_t *v);

/* Integer with optional k/M/G (binary) suffix or exact e-notation. */
int hc__parse_int(const char *s, int64_t *out);
/* "NxMxK" (1..4 extents). */
int hc__parse_shape(const char *s, hc_shape_t *out);

#endif
