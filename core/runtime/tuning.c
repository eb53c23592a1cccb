/* Per-device tuning tables (include/hc/tuning.h): matching a device
 * against a row's pattern. */
#include <hc/tuning.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

static int is_word(const char *word, size_t len, const char *name) {
  return len == strlen(name) && !strncmp(word, name, len);
}

/* Does the condition [word, word+len) hold? -1 when it is not one. */
static int condition(const hc_device_info_t *in, const char *word, size_t len) {
  if (len == 1 && word[0] == '*') return 1;
  for (int t = 0; t < HC_DEVICE_TYPE_COUNT_; t++)
    if (is_word(word, len, hc_device_type_name((hc_device_type_t)t))) return in->type == (hc_device_type_t)t;
  /* host: the device runs host functions; a source language: the one
   * hc_kernel_create builds source kernels in there */
  for (int l = 0; l < HC_LANG_COUNT_; l++)
    if (is_word(word, len, hc_language_name((hc_language_t)l)))
      return l == HC_LANG_HOST ? (in->languages & HC_LANG_BIT(HC_LANG_HOST)) != 0
                               : hc__source_language(in->languages) == (hc_language_t)l;
  if (len > 7 && !strncmp(word, "vendor=", 7)) {
    const size_t n = len - 7, have = strlen(in->vendor);
    for (size_t at = 0; at + n <= have; at++)
      if (!strncasecmp(in->vendor + at, word + 7, n)) return 1;
    return 0;
  }
  if (len > 5 && !strncmp(word, "arch=", 5)) return !strncmp(in->arch, word + 5, len - 5);
  return -1;
}

HC_API hc_status_t hc_tuning_match(const hc_device_info_t *info, const char *pattern, int *matches) {
  if (!info || !pattern || !matches) return hc_error(HC_ERR_INVALID_ARG, "hc_tuning_match: NULL argument");
  int all = 1, any_word = 0;
  for (const char *p = pattern; *p;) {
    p += strspn(p, " ");
    const size_t len = strcspn(p, " ");
    if (!len) break;
    const int holds = condition(info, p, len);
    if (holds < 0)
      return hc_error(HC_ERR_INVALID_ARG,
                      "tuning table: '%.*s' in the device pattern '%s' is not a condition (cpu, gpu, accelerator, "
                      "other, host, opencl-c, cuda-c, vendor=TEXT, arch=TEXT or *)",
                      (int)len, p, pattern);
    all = all && holds;
    any_word = 1;
    p += len;
  }
  if (!any_word)
    return hc_error(HC_ERR_INVALID_ARG, "tuning table: an empty device pattern (\"*\" matches any device)");
  *matches = all;
  return HC_OK;
}

HC_API hc_status_t hc_tuning_pick(const hc_device_info_t *info, const void *table, size_t count, size_t stride,
                                  size_t *row) {
  if (!info || !table || !row || !count || stride < sizeof(const char *))
    return hc_error(HC_ERR_INVALID_ARG, "hc_tuning_pick: NULL or empty table");
  const char *last = *(const char *const *)((const char *)table + (count - 1) * stride);
  if (!last || strcmp(last, "*"))
    return hc_error(HC_ERR_INVALID_ARG, "tuning table: the last row's device pattern is '%s', not \"*\"",
                    last ? last : "(null)");
  for (size_t i = 0; i < count; i++) {
    const char *pattern = *(const char *const *)((const char *)table + i * stride);
    int holds = 0;
    hc_status_t st = hc_tuning_match(info, pattern ? pattern : "", &holds);
    if (st != HC_OK) return st;
    if (holds) {
      *row = i;
      return HC_OK;
    }
  }
  *row = count - 1; /* not reached: the last row is "*" */
  return HC_OK;
}
