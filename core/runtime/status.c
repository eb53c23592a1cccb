/* Status names and the per-thread last-error message. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local char last_error[8192];

HC_API const char *hc_status_str(hc_status_t status) {
  switch (status) {
#define HC_STATUS_STR_(name, value, exit_code, text) \
  case HC_##name: return text;
    HC_STATUS_LIST(HC_STATUS_STR_)
#undef HC_STATUS_STR_
  }
  return "unknown status";
}

HC_API const char *hc_status_name(hc_status_t status) {
  switch (status) {
#define HC_STATUS_NAME_(name, value, exit_code, text) \
  case HC_##name: return "HC_" #name;
    HC_STATUS_LIST(HC_STATUS_NAME_)
#undef HC_STATUS_NAME_
  }
  return "HC_UNKNOWN";
}

HC_API int hc_status_exit_code(hc_status_t status) {
  switch (status) {
#define HC_STATUS_EXIT_(name, value, exit_code, text) \
  case HC_##name: return exit_code;
    HC_STATUS_LIST(HC_STATUS_EXIT_)
#undef HC_STATUS_EXIT_
  }
  return HC_EXIT_RUNTIME;
}

HC_API const char *hc_last_error(void) { return last_error; }

/* Formats into a temporary first: callers may pass hc_last_error() itself as
 * an argument ("%s: %s", path, hc_last_error()), and vsnprintf into the
 * buffer it is reading from overwrites the text before it is read. */
void hc__vformat_error(hc_status_t status, const char *fmt, va_list ap) {
  char tmp[sizeof last_error];
  (void)status;
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  memcpy(last_error, tmp, strlen(tmp) + 1);
}

HC_API hc_status_t hc_error(hc_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hc__vformat_error(status, fmt, ap);
  va_end(ap);
  return status;
}

HC_API hc_status_t hc_error_prefix(hc_status_t status, const char *fmt, ...) {
  char prefix[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  size_t plen = strlen(prefix), olen = strlen(last_error);
  if (plen >= sizeof last_error - 1) plen = sizeof last_error - 2;
  if (plen + olen >= sizeof last_error) olen = sizeof last_error - plen - 1;
  memmove(last_error + plen, last_error, olen);
  memcpy(last_error, prefix, plen);
  last_error[plen + olen] = '\0';
  return status;
}
