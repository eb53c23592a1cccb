/* Loading libcuda and naming its errors (see cu_driver.h). */
#include "cu_driver.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hc_cu_load(hc_cu_api_t *api, char *why, size_t why_size) {
  memset(api, 0, sizeof *api);
  const char *path = "libcuda.so.1";
  if (hc_config_str("HC_CUDA_DRIVER", &path) != HC_OK) {
    snprintf(why, why_size, "%s", hc_last_error());
    return -1;
  }
  snprintf(api->path, sizeof api->path, "%s", path);
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(why, why_size, "%s", e ? e : path);
    return -1;
  }
  const char *missing = NULL;
  void *sym;
  /* dlsym returns void*; the cast to a function pointer is what POSIX
   * specifies for it. */
#define HC_CU_BIND_(name)                          \
  sym = dlsym(lib, HC_CU_STR(name));               \
  if (!sym && !missing) missing = HC_CU_STR(name); \
  *(void **)&api->name = sym;
#define HC_CU_BIND_O_(name) *(void **)&api->name = dlsym(lib, HC_CU_STR(name));
#define HC_CU_BIND_F_(name, old)                   \
  sym = dlsym(lib, HC_CU_STR(name));               \
  if (!sym) sym = dlsym(lib, old);                 \
  if (!sym && !missing) missing = HC_CU_STR(name); \
  *(void **)&api->name = sym;
  HC_CU_FUNCS(HC_CU_BIND_, HC_CU_BIND_O_, HC_CU_BIND_F_)
#undef HC_CU_BIND_
#undef HC_CU_BIND_O_
#undef HC_CU_BIND_F_
  if (missing) {
    int v = 0;
    if (api->cuDriverGetVersion) api->cuDriverGetVersion(&v);
    snprintf(why, why_size, "%s lacks %s (driver API %d.%d; the plugin needs 12.0 or newer)", path, missing, v / 1000,
             v % 1000 / 10);
    /* Keep the library loaded (see the header) but offer no entry points. */
    memset(api, 0, sizeof *api);
    return -2;
  }
  api->lib = lib;
  return 0;
}

/* Names for the results a driver that cannot name them returns at cuInit
 * (a stub library, a mismatched one). */
static const struct {
  CUresult r;
  const char *name, *text;
} known[] = {
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "the CUDA driver is a stub library"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "the driver library does not match the kernel module"},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) busy or unavailable"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
};

void hc_cu_describe(const hc_cu_api_t *api, CUresult r, char *out, size_t n) {
  const char *name = NULL, *text = NULL;
  if (api->cuGetErrorName && api->cuGetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
  if (api->cuGetErrorString && api->cuGetErrorString(r, &text) != CUDA_SUCCESS) text = NULL;
  for (size_t i = 0; !name && i < sizeof known / sizeof known[0]; i++)
    if (known[i].r == r) {
      name = known[i].name;
      text = known[i].text;
    }
  if (name && text)
    snprintf(out, n, "%s: %s", name, text);
  else if (name)
    snprintf(out, n, "%s", name);
  else
    snprintf(out, n, "CUDA error %d", (int)r);
}

hc_status_t hc_cu_fail(const hc_cu_api_t *api, hc_status_t status, CUresult r, const char *fmt, ...) {
  char what[1024], desc[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  hc_cu_describe(api, r, desc, sizeof desc);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) status = HC_ERR_DEVICE_MEMORY;
  return hc_error(status, "%s: %s", what, desc);
}
