/* OpenCL error codes by name, and the one way the plugin reports a failed
 * cl* call: "opencl: clXxx failed: CL_NAME (detail)". */
#include <stdarg.h>
#include <stdio.h>

#include "cl_errors.h"
#include "ocl.h"

const char *ocl_err_name(cl_int err) {
  switch (err) {
#define OCL_ERR_CASE_(name, value) \
  case value: return #name;
    OCL_ERROR_LIST(OCL_ERR_CASE_)
#undef OCL_ERR_CASE_
  }
  /* A code no list knows still reads as a name, never a bare number. */
  static _Thread_local char buf[40];
  snprintf(buf, sizeof buf, "CL_UNKNOWN_ERROR(%d)", (int)err);
  return buf;
}

hc_status_t ocl_status(cl_int err, hc_status_t fallback) {
  switch (err) {
  case CL_MEM_OBJECT_ALLOCATION_FAILURE: return HC_ERR_DEVICE_MEMORY;
  case CL_OUT_OF_HOST_MEMORY: return HC_ERR_NO_MEMORY;
  default: return fallback;
  }
}

hc_status_t ocl_fail(cl_int err, hc_status_t fallback, const char *call, const char *fmt, ...) {
  char detail[1024] = "";
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
  }
  return hc_error(ocl_status(err, fallback), "opencl: %s failed: %s%s%s%s", call, ocl_err_name(err),
                  detail[0] ? " (" : "", detail, detail[0] ? ")" : "");
}
