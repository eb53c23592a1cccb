/* hc core — the one internal header that the layers built on the runtime
 * inside libhc (core/pipeline, core/partition) may include. Everything else they use is the
 * public API (include/hc); tests/unit/layers.py checks the symbols each
 * layer's objects import against this list. Nothing here is part of the ABI. */
#ifndef HC_CORE_LAYER_H
#define HC_CORE_LAYER_H

#include "hc/hc.h"
#include "hc/plugin.h"
#include "hc/partition.h"

/* Marks a function of the public API for export from libhc. */
#define HC_API __attribute__((visibility("default")))

/* The ops table of a registered workload (zero-extended to the core's
 * size), NULL when the context has none of that name. */
const hc_workload_ops_t *hc__workload_ops(const hc_context_t *ctx, const char *name);

/* The partition layer's hooks into a job: the part a job runs as (NULL:
 * whole), dropping its results before a split run, and the split run's
 * wall time (hc_job_set_times sets the others). */
void hc__job_set_part(hc_job_t *job, hc_part_t *part);
void hc__job_clear(hc_job_t *job);
void hc__job_set_wall(hc_job_t *job, double wall_s);

#endif
