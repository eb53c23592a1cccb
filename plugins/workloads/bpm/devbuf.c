/* bpm: device buffers from double-precision host data, kernel building
 * and launching with the run's options. */
#include <stdio.h>
#include <stdlib.h>

#include "bpm.h"

hc_status_t bpm_upload_to(hc_buffer_t *buf, int f64, const double complex *src, size_t count) {
  if (f64) return hc_buffer_write(buf, 0, src, count * sizeof *src);
  float complex *tmp = malloc(count * sizeof *tmp);
  if (!tmp) return hc_error(HC_ERR_NO_MEMORY, "bpm: out of host memory");
  for (size_t i = 0; i < count; i++) tmp[i] = (float complex)src[i];
  hc_status_t st = hc_buffer_write(buf, 0, tmp, count * sizeof *tmp);
  free(tmp);
  return st;
}

hc_status_t bpm_upload(hc_device_t *dev, int f64, const double complex *src, size_t count, hc_buffer_t **out) {
  hc_status_t st = hc_buffer_create(dev, count * (f64 ? 16 : 8), out);
  if (st != HC_OK) return st;
  if ((st = bpm_upload_to(*out, f64, src, count)) != HC_OK) {
    hc_buffer_destroy(*out);
    *out = NULL;
  }
  return st;
}

hc_status_t bpm_kernel(hc_device_t *dev, int f64, const char *name, hc_host_kernel_fn host_fn, const char *extra,
                       hc_kernel_t **out) {
  char opts[512];
  snprintf(opts, sizeof opts, "%s%s", extra ? extra : "", f64 ? " -DBPM_F64" : "");
  hc_kernel_desc_t kd = {sizeof kd, name, bpm_kernels_src, opts, host_fn};
  hc_status_t st = hc_kernel_create(dev, &kd, out);
  if (st != HC_OK) return hc_error_prefix(st, "bpm: building kernel %s (%s)", name, opts);
  return HC_OK;
}

hc_status_t bpm_launch(hc_kernel_t *k, size_t global0, size_t global1, size_t local0, size_t local1, uint32_t nargs,
                       const hc_arg_t *args) {
  size_t g[2] = {global0, global1}, l[2] = {local0, local1 ? local1 : 1};
  return hc_kernel_launch(k, global1 ? 2 : 1, g, local0 ? l : NULL, nargs, args);
}
