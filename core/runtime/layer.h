/* hc core — the one internal header that the layers built on the runtime
 * inside libhc (core/pipeline, core/partition) may include. Everything else they use is the
 * public API (include/hc); tests/unit/test_layers.py checks the symbols each
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

 * inside libhc (core/pipeline, core/partition) may include. Everything else they use is the
 * public API (include/hc); tests/unit/test_layers.py checks the symbols each

#endif
