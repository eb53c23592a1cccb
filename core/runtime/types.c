/* Names and sizes of dtypes, languages, device and parameter types: each
 * table generated from the X-macro list in hc/types.h. */
#include <string.h>

#include "internal.h"

static const struct {
  const char *name;
  size_t size;
  int complex;
} dtypes[] = {{"none", 0, 0},
#define HC_DTYPE_ROW_(e, n, b, d, c) {n, b, c},
              HC_DTYPE_LIST(HC_DTYPE_ROW_)
#undef HC_DTYPE_ROW_
};

static int dtype_ok(hc_dtype_t d) { return d > HC_DTYPE_NONE && d < HC_DTYPE_COUNT_; }

HC_API const char *hc_dtype_name(hc_dtype_t d) { return dtype_ok(d) ? dtypes[d].name : "?"; }
HC_API size_t hc_dtype_size(hc_dtype_t d) { return dtype_ok(d) ? dtypes[d].size : 0; }
HC_API int hc_dtype_is_complex(hc_dtype_t d) { return dtype_ok(d) && dtypes[d].complex; }

HC_API hc_dtype_t hc_dtype_from_name(const char *name) {
  if (!name) return HC_DTYPE_NONE;
  for (int d = 1; d < HC_DTYPE_COUNT_; d++)
    if (strcmp(dtypes[d].name, name) == 0) return (hc_dtype_t)d;
  return HC_DTYPE_NONE;
}

HC_API hc_dtype_t hc_dtype_real_part(hc_dtype_t d) {
  switch (d) {
  case HC_C64: return HC_F32;
  case HC_C128: return HC_F64;
  default: return d;
  }
}

static const char *const languages[] = {
#define HC_LANG_ROW_(e, n) n,
    HC_LANGUAGE_LIST(HC_LANG_ROW_)
#undef HC_LANG_ROW_
};
HC_API const char *hc_language_name(hc_language_t l) { return (unsigned)l < HC_LANG_COUNT_ ? languages[l] : "?"; }

static const char *const devtypes[] = {
#define HC_DEVTYPE_ROW_(e, n) n,
    HC_DEVICE_TYPE_LIST(HC_DEVTYPE_ROW_)
#undef HC_DEVTYPE_ROW_
};
HC_API const char *hc_device_type_name(hc_device_type_t t) {
  return (unsigned)t < HC_DEVICE_TYPE_COUNT_ ? devtypes[t] : "?";
}

static const char *const ptypes[] = {
#define HC_PTYPE_ROW_(e, n, ranged) n,
    HC_PARAM_TYPE_LIST(HC_PTYPE_ROW_)
#undef HC_PTYPE_ROW_
};
HC_API const char *hc_param_type_name(hc_param_type_t t) {
  return (unsigned)t < HC_PARAM_TYPE_COUNT_ ? ptypes[t] : "?";
}

static const unsigned char pranged[] = {
#define HC_PTYPE_RANGED_(e, n, ranged) ranged,
    HC_PARAM_TYPE_LIST(HC_PTYPE_RANGED_)
#undef HC_PTYPE_RANGED_
};
HC_API int hc_param_type_ranged(hc_param_type_t t) { return (unsigned)t < HC_PARAM_TYPE_COUNT_ && pranged[t]; }

HC_API const char *hc_version(void) { return HC_VERSION_STRING; }
