/* hc_pipeline_parse: the parsed text (pipeline_parse.c) turned into a
 * pipeline — workloads, parameters and devices looked up, stage names in
 * explicit bindings resolved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"
#include "pipeline_parse.h"

/* STAGE in "STAGE.output>input": a 1-based number, or a workload name (the
 * nearest earlier stage running it, else the first later one, else the
 * stage itself — which validation then reports as a cycle). */
static hc_status_t resolve_stage(const hc_pipeline_t *p, const hc__pp_t *pp, uint32_t self, const hc__pp_bind_t *b,
                                 uint32_t *from) {
  const char *w = pp->stages[self].workload;
  if (!b->from) {
    if (self == 0)
      return hc_error(HC_ERR_PIPELINE, "pipeline: stage 1 (%s): '%s' has no previous stage (write STAGE.%s)", w,
                      b->text, b->text);
    *from = self - 1;
    return HC_OK;
  }
  char *end = NULL;
  unsigned long n = strtoul(b->from, &end, 10);
  if (b->from[0] >= '0' && b->from[0] <= '9' && !*end) {
    if (n < 1 || n > p->nstages)
      return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u (%s): '%s': no stage %s (the pipeline has %u)", self + 1, w,
                      b->text, b->from, p->nstages);
    *from = (uint32_t)(n - 1);
    return HC_OK;
  }
  for (uint32_t k = self; k-- > 0;)
    if (!strcmp(pp->stages[k].workload, b->from)) return *from = k, HC_OK;
  for (uint32_t k = self + 1; k < pp->nstages; k++)
    if (!strcmp(pp->stages[k].workload, b->from)) return *from = k, HC_OK;
  if (!strcmp(w, b->from)) return *from = self, HC_OK;
  return hc_error(HC_ERR_PIPELINE, "pipeline: stage %u (%s): '%s': no stage runs workload '%s'", self + 1, w, b->text,
                  b->from);
}

HC_API hc_status_t hc_pipeline_parse(hc_context_t *ctx, const char *text, hc_pipeline_t **out) {
  if (!ctx || !out) return hc_error(HC_ERR_INVALID_ARG, "hc_pipeline_parse: NULL argument");
  *out = NULL;
  hc__pp_t pp;
  hc_status_t st = hc__pp_parse(text, &pp);
  if (st != HC_OK) return st;
  hc_pipeline_t *p = NULL;
  st = hc_pipeline_create(ctx, &p);
  for (uint32_t i = 0; st == HC_OK && i < pp.nstages; i++) {
    const hc__pp_stage_t *s = &pp.stages[i];
    st = hc_pipeline_add_stage(p, s->workload, (const char *const *)s->params, s->nparams, s->device, NULL);
  }
  /* Bindings once every stage exists: they may name a later stage. */
  for (uint32_t i = 0; st == HC_OK && i < pp.nstages; i++)
    for (uint32_t k = 0; st == HC_OK && k < pp.stages[i].nbinds; k++) {
      const hc__pp_bind_t *b = &pp.stages[i].binds[k];
      uint32_t from = 0;
      st = resolve_stage(p, &pp, i, b, &from);
      if (st == HC_OK) st = hc_pipeline_bind(p, from, b->output, i, b->input);
    }
  hc__pp_free(&pp);
  if (st != HC_OK) {
    hc_pipeline_destroy(p);
    return st;
  }
  *out = p;
  return HC_OK;
}
