/* The grid library's one growable string: kernel keys, generated source. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "grid_internal.h"

int hcg_vappend(char **buf, size_t *len, size_t *cap, const char *fmt, va_list ap) {
  va_list again;
  va_copy(again, ap);
  int need = vsnprintf(NULL, 0, fmt, ap);
  if (need < 0) {
    va_end(again);
    return 0;
  }
  if (*len + (size_t)need + 1 > *cap) {
    size_t ncap = *cap ? *cap * 2 : 4096;
    while (ncap < *len + (size_t)need + 1) ncap *= 2;
    char *n = realloc(*buf, ncap);
    if (!n) {
      va_end(again);
      return 0;
    }
    *buf = n;
    *cap = ncap;
  }
  vsnprintf(*buf + *len, *cap - *len, fmt, again);
  va_end(again);
  *len += (size_t)need;
  return 1;
}

int hcg_append(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int ok = hcg_vappend(buf, len, cap, fmt, ap);
  va_end(ap);
  return ok;
}
