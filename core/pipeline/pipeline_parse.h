/* The pipeline text syntax as a pure function: text in, a plain list of
 * stages (or an error message) out. No I/O, no context, no plugin lookup,
 * so a fuzz target can call it on any bytes: it needs libc and hc_error()
 * only. Names are resolved later (pipeline_spec.c). */
#ifndef HC_CORE_PIPELINE_PARSE_H
#define HC_CORE_PIPELINE_PARSE_H

#include <stdint.h>

#include "hc/status.h"

/* [from.]output>input as written; from NULL: the previous stage. */
typedef struct hc__pp_bind {
  char *from;
  char *output;
  char *input;
  char *text; /* the token, for messages */
} hc__pp_bind_t;

typedef struct hc__pp_stage {
  char *workload;
  char *device;  /* without '@'; NULL when not given */
  char **params; /* "key=value", quotes removed */
  uint32_t nparams;
  hc__pp_bind_t *binds;
  uint32_t nbinds;
  uint32_t line, column; /* of the workload name, 1-based */
} hc__pp_stage_t;

typedef struct hc__pp {
  hc__pp_stage_t *stages;
  uint32_t nstages;
} hc__pp_t;

/* Parses text. On success *out holds at least one stage (free it with
 * hc__pp_free). On failure returns HC_ERR_PIPELINE (or HC_ERR_NO_MEMORY)
 * with the message in hc_last_error() and *out empty. */
hc_status_t hc__pp_parse(const char *text, hc__pp_t *out);
void hc__pp_free(hc__pp_t *pp);

#endif
