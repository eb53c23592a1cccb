/* hc — small helpers for workload plugins (in-tree and out-of-tree alike):
 * the checks and messages every workload would otherwise write again.
 * Header-only (static inline over the public API), so a plugin needs
 * nothing beyond libhc. */
#ifndef HC_WORKLOAD_UTIL_H
#define HC_WORKLOAD_UTIL_H

#include <stdio.h>

#include "hc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when dt is a double-precision type (f64, c128). */
static inline int hc_dtype_is_double(hc_dtype_t dt) {
  return hc_dtype_real_part(dt) == HC_F64;
}

/* For a workload's check op: 1, with why = "needs fp64 (dtype=c128)", when
 * the job's parameter `param` names a double-precision dtype (f64, c128)
 * and the device has no fp64; else 0. */
static inline int hc_check_fp64(const hc_job_t *job, const char *param,
                                const hc_device_info_t *dev, char *why,
                                size_t why_size) {
  const char *name = hc_job_string(job, param);
  if (dev->fp64 || !hc_dtype_is_double(hc_dtype_from_name(name))) return 0;
  snprintf(why, why_size, "needs fp64 (%s=%s)", param, name);
  return 1;
}

#ifdef __cplusplus
}
#endif
#endif
