/* Small string helpers and the monotonic clock. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

char *hc__strdup(const char *s) { return s ? hc__strndup(s, strlen(s)) : NULL; }

char *hc__strndup(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

int hc__append(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int need = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (need < 0) return 0;
  if (*len + (size_t)need + 1 > *cap) {
    size_t ncap = (*cap ? *cap * 2 : 256);
    while (ncap < *len + (size_t)need + 1) ncap *= 2;
    char *n = realloc(*buf, ncap);
    if (!n) return 0;
    *buf = n;
    *cap = ncap;
  }
  va_start(ap, fmt);
  vsnprintf(*buf + *len, *cap - *len, fmt, ap);
  va_end(ap);
  *len += (size_t)need;
  return 1;
}

HC_API double hc_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
