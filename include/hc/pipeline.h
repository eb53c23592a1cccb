/* hc — pipelines: workloads chained stage to stage, data kept on the device.
 *
 * A pipeline is a list of stages. A stage is a job (a workload with its
 * parameters) and the device it runs on. An output port of one stage is
 * bound to an input port of another; when both stages use the same device
 * the field is handed over on the device (no copy, no host transfer), and
 * across devices the pipeline moves it and lists the move in its report.
 *
 *   hc_pipeline_t *p;
 *   hc_pipeline_parse(ctx, "jacobi dim=3 n=65 @cuda | simpson @cpu", &p);
 *   hc_pipeline_run(p, 0);                  // validates first
 *   hc_field_t *I = hc_job_output(hc_pipeline_stage_job(p, 1), "integral");
 *   hc_pipeline_destroy(p);                 // frees every stage's outputs
 *
 * Stages are numbered from 0 in this API; messages and hcrun number them
 * from 1 ("stage 2 (simpson)"), as a person counts them.
 *
 * Default binding: a stage whose primary input is not bound explicitly gets
 * the previous stage's primary output (a workload's primary port is the
 * one flagged HC_PORT_PRIMARY, or its only port). A stage without a primary
 * input is a source and starts a new chain.
 *
 * Device of a stage: the spec given ("cpu", "opencl:0", "cuda", "auto": the
 * best device that can run the stage's workload), or, when none is given,
 * the previous stage's device; the first stage's default is "auto".
 *
 * Errors: HC_ERR_PIPELINE for the shape of the pipeline (syntax, unknown
 * workload, stage or port, a device that does not exist, a missing binding,
 * a dtype or rank mismatch, a cycle), HC_ERR_PARAM for a stage's parameter,
 * HC_ERR_UNSUPPORTED when a stage's workload cannot run on its device. Every
 * message starts with "pipeline: " and names the stage and the ports. */
#ifndef HC_PIPELINE_H
#define HC_PIPELINE_H

#include "hc/hc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hc_pipeline hc_pipeline_t;

/* An empty pipeline on ctx (which must outlive it). Caller owns *out. */
hc_status_t hc_pipeline_create(hc_context_t *ctx, hc_pipeline_t **out);
/* Destroys every stage's job and outputs, moved copies, and closes the
 * devices the pipeline opened. NULL is allowed. */
void hc_pipeline_destroy(hc_pipeline_t *p);

/* Builds a pipeline from the text syntax (docs/pipelines.md):
 *   stage := WORKLOAD { key=value | @device | [STAGE.]output>input }
 *   text  := stage { ('|' | newline) stage }     '#' starts a comment
 * Values may be quoted with '...' or "..." (quotes are removed). STAGE is a
 * stage number (1-based) or a workload name (the nearest earlier stage of
 * that workload, else the first later one); without it, the previous stage.
 * Caller owns *out; on failure *out is NULL. */
hc_status_t hc_pipeline_parse(hc_context_t *ctx, const char *text,
                              hc_pipeline_t **out);

/* Appends a stage: a new job of `workload` with parameters ("key=value",
 * each validated now against the workload's schema) and a device spec (NULL:
 * the previous stage's device, or "auto" for the first stage). The device is
 * resolved and opened now. *index (may be NULL) gets the stage's index. */
hc_status_t hc_pipeline_add_stage(hc_pipeline_t *p, const char *workload,
                                  const char *const *params, uint32_t nparams,
                                  const char *device, uint32_t *index);
uint32_t hc_pipeline_stage_count(const hc_pipeline_t *p);

/* Binds output `output` of stage `from` to input `input` of stage `to`
 * (NULL port name: the primary port). An input takes one binding. */
hc_status_t hc_pipeline_bind(hc_pipeline_t *p, uint32_t from,
                             const char *output, uint32_t to,
                             const char *input);
/* Feeds a field from outside (borrowed: it must outlive the runs) to an
 * input of a stage; NULL port: the primary input. A field on another device
 * is moved like a binding's, and listed with from_stage -1. */
hc_status_t hc_pipeline_set_input(hc_pipeline_t *p, uint32_t stage,
                                  const char *input, hc_field_t *field);
/* Where stages may write extra files (hc_job_set_output_dir of each). */
hc_status_t hc_pipeline_set_output_dir(hc_pipeline_t *p, const char *dir);

/* Checks the pipeline without running anything: adds the default bindings,
 * then reports the first of: no stages, a cycle, a stage that cannot run on
 * its device, a required input without binding, a dtype or rank mismatch
 * across a binding. Dtype and rank of an output come from the workload's
 * describe_output when it has one (which may look at its inputs through
 * hc_job_input_info), else from the output port's declared dtype set and
 * rank range: then a binding is accepted when the sets intersect, and the
 * run itself checks the actual field. */
hc_status_t hc_pipeline_validate(hc_pipeline_t *p);

/* Validates, then runs the stages in dependency order (ties: the order they
 * were added). flags: HC_RUN_VERIFY asks every stage to verify itself; a
 * failed verification does not stop the pipeline, the call then returns
 * HC_ERR_VERIFY. A stage that fails stops the pipeline: the call returns
 * its status with "pipeline: stage N (workload) failed: <why>", the stages
 * after it are skipped, and moved copies are freed. Outputs of the stages
 * that ran stay readable until the next run or hc_pipeline_destroy. */
hc_status_t hc_pipeline_run(hc_pipeline_t *p, uint32_t flags);

/* ---- results ---- */

/* The stage's job (owned by the pipeline): hc_job_output, hc_job_metric,
 * hc_job_times, hc_job_verified, hc_job_param_get work on it. */
hc_job_t *hc_pipeline_stage_job(const hc_pipeline_t *p, uint32_t stage);
/* The stage's device (owned by the pipeline). */
hc_device_t *hc_pipeline_stage_device(const hc_pipeline_t *p, uint32_t stage);
/* The device set of a stage on a set (@cuda:0,cpu:0; owned by the
 * pipeline), NULL for a stage on one device: hc_devset_parts,
 * hc_devset_part_stats and hc_devset_plan describe the stage's last run
 * (hc/partition.h). */
struct hc_devset *hc_pipeline_stage_set(const hc_pipeline_t *p, uint32_t stage);

typedef enum hc_stage_state {
  HC_STAGE_PENDING = 0, /* not run yet */
  HC_STAGE_DONE = 1,
  HC_STAGE_FAILED = 2,
  HC_STAGE_SKIPPED = 3 /* an earlier stage failed */
} hc_stage_state_t;

typedef struct hc_pipeline_stage_info {
  const char *workload; /* owned by the context */
  const char *device;   /* "cuda:0"; owned by the pipeline */
  hc_stage_state_t state;
  hc_status_t status;           /* of its run (HC_ERR_VERIFY included) */
  hc_job_times_t times;         /* the job's times */
  double handover_s;            /* moving its inputs to its device */
  hc_transfer_stats_t handover; /* context counters' change while its
                                   inputs were handed to it */
  hc_transfer_stats_t run;      /* ... while it ran (its own uploads and
                                   read-backs) */
} hc_pipeline_stage_info_t;
hc_status_t hc_pipeline_stage_info(const hc_pipeline_t *p, uint32_t stage,
                                   hc_pipeline_stage_info_t *out);

/* One binding, after validation (defaults included). */
typedef struct hc_pipeline_binding {
  int32_t from;       /* producing stage, -1 for a field set from outside */
  const char *output; /* its port ("" for outside); owned by the context */
  uint32_t to;
  const char *input;
  int is_default; /* added by the default rule */
} hc_pipeline_binding_t;
uint32_t hc_pipeline_binding_count(const hc_pipeline_t *p);
hc_status_t hc_pipeline_binding_get(const hc_pipeline_t *p, uint32_t i,
                                    hc_pipeline_binding_t *out);

/* One move of a field between devices during the last run. */
typedef struct hc_pipeline_transfer {
  uint32_t stage;     /* the stage whose input it fed */
  const char *input;  /* that input port; owned by the context */
  int32_t from_stage; /* producing stage, -1 for a field from outside */
  const char *output; /* its output port ("" for outside) */
  char from_device[48];
  char to_device[48];
  uint64_t bytes;
  double seconds;
} hc_pipeline_transfer_t;
uint32_t hc_pipeline_transfer_count(const hc_pipeline_t *p);
hc_status_t hc_pipeline_transfer_get(const hc_pipeline_t *p, uint32_t i,
                                     hc_pipeline_transfer_t *out);

/* The last run as a whole. */
typedef struct hc_pipeline_report {
  hc_status_t status;
  int32_t failed_stage;         /* -1 when none failed */
  const char *message;          /* the failure, or ""; owned by the pipeline */
  uint32_t stages_run;          /* DONE stages */
  double wall_s;                /* the whole hc_pipeline_run call */
  double compute_s, device_s;   /* sums over the stages */
  uint32_t handovers;           /* inputs fed from other stages or outside */
  uint32_t handovers_on_device; /* ... without any copy */
  uint32_t transfer_count;      /* moves between devices (listed) */
  uint64_t transfer_bytes;
  double transfer_s;
  hc_transfer_stats_t between; /* context counters' change during all the
                                  hand-overs: on one device, all zero */
  hc_transfer_stats_t total;   /* ... during the whole run */
} hc_pipeline_report_t;
void hc_pipeline_report(const hc_pipeline_t *p, hc_pipeline_report_t *out);

#ifdef __cplusplus
}
#endif
#endif
