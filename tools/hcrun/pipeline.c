/* hcrun --pipeline: replaced by the pipeline module (issue 9). */
#include <stdio.h>

#include "hcrun.h"
#include "options.h"

int hcrun_pipeline(hc_context_t *ctx, const hcrun_options_t *o) {
  (void)ctx;
  (void)o;
  fprintf(stderr, "hcrun: --pipeline is not available in this build\n");
  return HCRUN_UNAVAILABLE;
}
