/* Pipelines — structures shared by pipeline.c (building), pipeline_spec.c
 * (text to stages), pipeline_validate.c and pipeline_run.c. */
#ifndef HC_CORE_PIPELINE_INTERNAL_H
#define HC_CORE_PIPELINE_INTERNAL_H

#include "hc/pipeline.h"
#include "layer.h"

#define HC__PL_OUTSIDE UINT32_MAX /* binding source: a field set from outside */

typedef struct hc__pl_bind {
  uint32_t from;     /* stage, or HC__PL_OUTSIDE */
  uint32_t out_port; /* index in from's outputs */
  uint32_t to;
  uint32_t in_port; /* index in to's inputs */
  int is_default;
  hc_field_t *outside; /* borrowed, when from == HC__PL_OUTSIDE */
} hc__pl_bind_t;

/* What an output will be, as known before running: a dtype set and a rank
 * range; exact when describe_output said (one dtype, one rank). */
typedef struct hc__pl_shape {
  uint32_t dtypes;
  int32_t rank_min, rank_max;
  int exact;
} hc__pl_shape_t;

typedef struct hc__pl_stage {
  hc_job_t *job;
  const char *workload;      /* owned by the context */
  hc_device_t *dev;          /* opened by the pipeline; a set's first device */
  hc_devset_t *set;          /* @a,b or @all: the stage runs split over it (partition.h) */
  char *set_spec;            /* as given */
  hc__pl_shape_t *out_shape; /* one per output, after validation */
  hc_stage_state_t state;
  hc_status_t status;
  double handover_s;
  hc_transfer_stats_t handover, run;
} hc__pl_stage_t;

/* A field moved to another device for this run (shared by every consumer
 * on that device); freed when the run ends. */
typedef struct hc__pl_move {
  const hc_field_t *src;
  hc_field_t *copy;
} hc__pl_move_t;

struct hc_pipeline {
  hc_context_t *ctx;
  hc__pl_stage_t *stages;
  uint32_t nstages;
  hc__pl_bind_t *binds;
  uint32_t nbinds;
  uint32_t *order; /* run order, after validation */
  /* While validating: the bindings by consuming stage (CSR: those into
   * stage k are by_to[to_start[k] .. to_start[k + 1]]), so each lookup
   * reads a stage's few bindings, not all of them; NULL otherwise. */
  uint32_t *to_start, *by_to;
  int validated;
  hc_pipeline_transfer_t *transfers;
  uint32_t ntransfers;
  hc__pl_move_t *moves;
  uint32_t nmoves;
  hc_pipeline_report_t report;
  char *message;    /* report.message */
  char *output_dir; /* given to every stage's job, later ones too */
};

/* Port helpers over the public schema queries. */
uint32_t hc__pl_nports(const hc__pl_stage_t *s, hc_context_t *ctx, int output);
const hc_port_spec_t *hc__pl_port(const hc__pl_stage_t *s, hc_context_t *ctx, int output, uint32_t i);
/* Index of a named port, or of the primary one when name is NULL; -1 when
 * there is none. */
int hc__pl_port_index(const hc__pl_stage_t *s, hc_context_t *ctx, int output, const char *name);
/* "y, z" — the port names, for messages. */
void hc__pl_port_list(const hc__pl_stage_t *s, hc_context_t *ctx, int output, char *buf, size_t n);

/* What a field delivers to an input port. */
hc__pl_shape_t hc__pl_field_shape(const hc_field_t *f);
/* HC_ERR_PIPELINE naming stage k, the port and `source` when what `got`
 * describes cannot feed input port ps of stage k (dtype or rank). */
hc_status_t hc__pl_check_delivery(const hc_pipeline_t *p, uint32_t k, const hc_port_spec_t *ps,
                                  const hc__pl_shape_t *got, const char *source);

/* Drops the default bindings (re-added by each validation). */
void hc__pl_drop_defaults(hc_pipeline_t *p);
/* Drops every stage's outputs and the last run's report. */
void hc__pl_reset_run(hc_pipeline_t *p);

#endif
