/* Shared code of the glue workloads (see glue.h). */

#include "glue.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *glue_real_ctype(hc_dtype_t dt) { return hc_dtype_is_double(dt) ? "double" : "float"; }

hc_status_t glue_input(hc_job_t *job, const char *port, hc_field_t **out) {
  *out = hc_job_input(job, port);
  if (!*out)
    return hc_error(HC_ERR_PARAM,
                    "%s: input '%s' is not bound (give it a field, or put a stage before it in a pipeline)",
                    hc_job_workload(job), port);
  return HC_OK;
}

int glue_needs_fp64(const hc_job_t *job, const hc_device_info_t *dev, hc_dtype_t extra, char *why, size_t n) {
  if (dev->fp64) return 0;
  hc_dtype_t dt = HC_DTYPE_NONE;
  uint32_t rank = 0;
  int wide = hc_dtype_is_double(extra);
  if (hc_job_input_info(job, "in", &dt, &rank) == HC_OK && hc_dtype_is_double(dt)) wide = 1;
  if (wide) snprintf(why, n, "needs fp64");
  return wide;
}

hc_status_t glue_field_like(hc_device_t *dev, const hc_field_t *like, hc_dtype_t dt, hc_field_t **out) {
  hc_status_t st = hc_field_create(dev, dt, hc_field_rank(like), hc_field_shape(like), out);
  if (st != HC_OK) return st;
  hc_field_set_spacing(*out, hc_field_spacing(like));
  hc_field_set_origin(*out, hc_field_origin(like));
  return HC_OK;
}

void glue_report(hc_job_t *job, double wall_s, double device_s, double bytes) {
  hc_job_set_times(job, wall_s, device_s);
  const double t = device_s > 0 ? device_s : wall_s;
  const double gbs = t > 0 ? bytes / t / 1e9 : 0;
  hc_job_add_metric(job, "bandwidth_gbs", gbs, "GB/s");
  const hc_device_info_t *info = hc_device_info(hc_job_device(job));
  if (info && info->peak_bandwidth_gbs > 0)
    hc_job_add_metric(job, "bandwidth_fraction", gbs / info->peak_bandwidth_gbs, "");
  hc_job_add_metric(job, "bytes", bytes, "B");
}

hc_status_t glue_launch(hc_job_t *job, const hc_kernel_desc_t *kd, long items, uint32_t nargs, const hc_arg_t *args,
                        double bytes) {
  hc_device_t *dev = hc_job_device(job);
  hc_kernel_t *k = NULL;
  hc_status_t st = hc_kernel_create(dev, kd, &k);
  if (st != HC_OK) return st;
  size_t global = (size_t)items;
  double dev_s = 0, t0 = hc_now();
  st = hc_device_timer_begin(dev);
  if (st == HC_OK) st = hc_kernel_launch(k, 1, &global, NULL, nargs, args);
  if (st == HC_OK) st = hc_device_timer_end(dev, &dev_s);
  if (st == HC_OK) glue_report(job, hc_now() - t0, dev_s, bytes);
  hc_kernel_destroy(k);
  return st;
}

hc_status_t glue_map_run(hc_job_t *job, const hc_field_t *in, const glue_map_t *m, hc_field_t **out) {
  hc_device_t *dev = hc_job_device(job);
  hc_field_t *o = NULL;
  *out = NULL;
  hc_status_t st =
      hc_device_check_memory(dev, (uint64_t)hc_field_bytes(in) + hc_field_count(in) * hc_dtype_size(m->out_dtype),
                             "the input and output fields");
  if (st == HC_OK) st = glue_field_like(dev, in, m->out_dtype, &o);
  if (st == HC_OK) {
    hc_kernel_desc_t kd = {sizeof kd, m->kernel, m->source, m->options, m->host};
    hc_arg_t args[3 + 4] = {HC_ARG_VAL(m->items), HC_ARG_BUF(hc_field_buffer(in)), HC_ARG_BUF(hc_field_buffer(o))};
    for (uint32_t i = 0; i < m->nextra && i < 4; i++) args[3 + i] = m->extra[i];
    st = glue_launch(job, &kd, m->items, 3 + m->nextra, args, m->bytes);
  }
  if (st != HC_OK) {
    hc_field_destroy(o);
    return st;
  }
  *out = o;
  return HC_OK;
}

hc_status_t glue_read_doubles(const hc_field_t *f, double **out, size_t *count) {
  hc_dtype_t dt = hc_field_dtype(f);
  size_t n = hc_field_count(f) * (hc_dtype_is_complex(dt) ? 2 : 1);
  void *raw = malloc(hc_field_bytes(f) ? hc_field_bytes(f) : 1);
  double *d = malloc((n ? n : 1) * sizeof *d);
  hc_status_t st = raw && d ? hc_field_read(f, raw) : hc_error(HC_ERR_NO_MEMORY, "out of host memory");
  if (st == HC_OK) {
    for (size_t i = 0; i < n; i++) d[i] = hc_dtype_is_double(dt) ? ((const double *)raw)[i] : ((const float *)raw)[i];
  }
  free(raw);
  if (st != HC_OK) {
    free(d);
    return st;
  }
  *out = d;
  *count = n;
  return HC_OK;
}

double glue_tolerance(hc_dtype_t dt) { return hc_dtype_is_double(dt) ? 1e-14 : 1e-6; }

double glue_worse(double worst, double err) {
  if (isnan(worst)) return worst;
  return !(err <= worst) ? err : worst;
}
