/* Shared code of the glue workloads (abs2, scale, slice, convert, reduce):
 * small stages that real pipelines need between the numerical workloads.
 * Compiled into each glue plugin (this directory has no SConscript).
 *
 * Conventions: input port 'in' (primary), output port 'out' (primary;
 * reduce: 'value'). Outputs keep the input's grid (spacing, origin) except
 * where the stage changes the axes. Kernels: one portable text per plugin,
 * types chosen by build options; a host function per type for the cpu
 * backend. */
#ifndef HC_GLUE_H
#define HC_GLUE_H

#include <hc/plugin.h>
#include <hc/workload_util.h>

#define GLUE_LANGUAGES (HC_LANG_BIT(HC_LANG_HOST) | HC_LANG_BIT(HC_LANG_OPENCL_C) | HC_LANG_BIT(HC_LANG_CUDA_C))

/* "float" or "double": the scalar type of a dtype (its real part). */
const char *glue_real_ctype(hc_dtype_t dt);

/* The field bound to input `port`: HC_ERR_PARAM naming the port when none. */
hc_status_t glue_input(hc_job_t *job, const char *port, hc_field_t **out);

/* A check op helper: 1 (with why) when the input's dtype, or `extra` (may be
 * HC_DTYPE_NONE), is double precision and the device has no fp64. */
int glue_needs_fp64(const hc_job_t *job, const hc_device_info_t *dev, hc_dtype_t extra, char *why, size_t n);

/* A new field on dev shaped like `like` (rank, shape, spacing, origin) with
 * dtype dt. Caller owns *out. */
hc_status_t glue_field_like(hc_device_t *dev, const hc_field_t *like, hc_dtype_t dt, hc_field_t **out);

/* One element-wise launch: kernel(long items, in, out, extra scalars...). */
typedef struct glue_map {
  const char *kernel;     /* name in source */
  const char *source;     /* portable text */
  char options[256];      /* build options selecting the types */
  hc_host_kernel_fn host; /* the same on the cpu backend */
  hc_dtype_t out_dtype;
  long items; /* work items (scalars or elements) */
  uint32_t nextra;
  hc_arg_t extra[4];
  double bytes; /* algorithmic traffic, for bandwidth_gbs */
} glue_map_t;

/* Creates the output (like `in`, dtype m->out_dtype), runs the map timed
 * (hc_job_set_times, bandwidth metrics). Caller owns *out on success. */
hc_status_t glue_map_run(hc_job_t *job, const hc_field_t *in, const glue_map_t *m, hc_field_t **out);

/* Builds the kernel and runs one timed 1-D launch of `items` work items,
 * then records times and bandwidth metrics (glue_report). */
hc_status_t glue_launch(hc_job_t *job, const hc_kernel_desc_t *kd, long items, uint32_t nargs, const hc_arg_t *args,
                        double bytes);

/* Times one or more launches already made between begin and end and
 * records times and bandwidth metrics (bytes of algorithmic traffic). */
void glue_report(hc_job_t *job, double wall_s, double device_s, double bytes);

/* The larger of a running worst error and one more, where a NaN (a
 * non-finite result compared with its reference) wins and stays: a
 * verification never passes on a value it could not compare. */
double glue_worse(double worst, double err);

/* The field's values as doubles (complex: interleaved re, im), for
 * verification against a host reference. Caller frees *out. */
hc_status_t glue_read_doubles(const hc_field_t *f, double **out, size_t *count);

/* Tolerance of a result computed in dt's precision. */
double glue_tolerance(hc_dtype_t dt);

#endif
