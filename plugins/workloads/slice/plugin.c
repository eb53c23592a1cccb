/* slice — one plane of a field: fixes axis `axis` at `index`, so a rank-r
 * field gives a rank r-1 one (a 3-D field a plane, a plane a line, a line a
 * scalar). The remaining axes keep their spacing and origin; the fixed
 * coordinate is reported as the metric `coordinate`. Chain two slices for a
 * line through a volume. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"

extern const char slice_kernels_src[];

/* Host kernel: items are output words; copy row segments with memcpy. */
static void slice_host(const hc_host_group_t *g, void *const *args) {
  const uint32_t *in = args[1];
  uint32_t *out = args[2];
  const long inner = *(const long *)args[3], n_axis = *(const long *)args[4], index = *(const long *)args[5];
  size_t i = g->lo[0];
  while (i < g->hi[0]) {
    const size_t o = i / (size_t)inner, w = i - o * (size_t)inner;
    size_t len = (size_t)inner - w;
    if (len > g->hi[0] - i) len = g->hi[0] - i;
    memcpy(out + i, in + ((o * (size_t)n_axis + (size_t)index) * (size_t)inner + w), len * sizeof *out);
    i += len;
  }
}

static const hc_param_spec_t params[] = {
    {"axis", HC_PARAM_INT, 0, "0", 0, 3, NULL, "the axis to fix (0 = x, the slowest)"},
    {"index", HC_PARAM_INT, 0, NULL, 1, 0, NULL,
     "the grid index along that axis; negative counts from the end (-1: the last); default: the middle, n/2"},
};
static const hc_port_spec_t inputs[] = {
    {"in", HC_DTYPES_ANY, 1, 4, HC_PORT_PRIMARY, "field of rank 1..4"},
};
static const hc_port_spec_t outputs[] = {
    {"out", HC_DTYPES_ANY, 0, 3, HC_PORT_PRIMARY, "the plane: rank one less, same dtype, the other axes' grid"},
};

static hc_status_t check_axis(const hc_job_t *job, uint32_t rank) {
  const int64_t axis = hc_job_int(job, "axis");
  if (axis >= (int64_t)rank)
    return hc_error(HC_ERR_PARAM, "slice: axis=%lld: input 'in' has rank %u (axes 0..%u)", (long long)axis, rank,
                    rank ? rank - 1 : 0);
  return HC_OK;
}

static int slice_check(const hc_job_t *job, const hc_device_info_t *dev, char *why, size_t n) {
  return glue_needs_fp64(job, dev, HC_DTYPE_NONE, why, n);
}

static hc_status_t slice_describe(const hc_job_t *job, const char *port, hc_dtype_t *dtype, uint32_t *rank) {
  (void)port;
  hc_status_t st = hc_job_input_info(job, "in", dtype, rank);
  if (st == HC_OK) st = check_axis(job, *rank);
  if (st == HC_OK) *rank -= 1;
  return st;
}

static hc_status_t slice_run(hc_job_t *job) {
  hc_field_t *in = NULL, *out = NULL;
  hc_status_t st = glue_input(job, "in", &in);
  if (st == HC_OK) st = check_axis(job, hc_field_rank(in));
  if (st != HC_OK) return st;
  const uint32_t rank = hc_field_rank(in), axis = (uint32_t)hc_job_int(job, "axis");
  const int64_t *shape = hc_field_shape(in);
  const int64_t n = shape[axis];
  int64_t index = hc_job_given(job, "index") ? hc_job_int(job, "index") : n / 2;
  if (index < 0) index += n;
  if (index < 0 || index >= n)
    return hc_error(HC_ERR_PARAM, "slice: index=%lld: axis %u of input 'in' has %lld points (valid %lld..%lld)",
                    (long long)hc_job_int(job, "index"), axis, (long long)n, (long long)-n, (long long)n - 1);
  int64_t oshape[HC_MAX_DIMS];
  double h[HC_MAX_DIMS], org[HC_MAX_DIMS];
  size_t outer = 1, inner = hc_dtype_size(hc_field_dtype(in)) / 4;
  for (uint32_t d = 0, k = 0; d < rank; d++) {
    if (d < axis) outer *= (size_t)shape[d];
    if (d > axis) inner *= (size_t)shape[d];
    if (d == axis) continue;
    oshape[k] = shape[d];
    h[k] = hc_field_spacing(in)[d];
    org[k] = hc_field_origin(in)[d];
    k++;
  }
  hc_device_t *dev = hc_job_device(job);
  st = hc_field_create(dev, hc_field_dtype(in), rank - 1, oshape, &out);
  if (st != HC_OK) return st;
  hc_field_set_spacing(out, h);
  hc_field_set_origin(out, org);
  const long total = (long)(outer * inner), inner_l = (long)inner, n_l = (long)n, index_l = (long)index;
  hc_arg_t args[6] = {HC_ARG_VAL(total),
                      HC_ARG_BUF(hc_field_buffer(in)),
                      HC_ARG_BUF(hc_field_buffer(out)),
                      HC_ARG_VAL(inner_l),
                      HC_ARG_VAL(n_l),
                      HC_ARG_VAL(index_l)};
  hc_kernel_desc_t kd = {sizeof kd, "glue_slice", slice_kernels_src, NULL, slice_host};
  st = glue_launch(job, &kd, total, 6, args, 2.0 * (double)hc_field_bytes(out));
  if (st == HC_OK) {
    hc_job_add_metric(job, "coordinate", hc_field_origin(in)[axis] + (double)index * hc_field_spacing(in)[axis], "");
    hc_job_add_metric(job, "index", (double)index, "");
  }
  if (st == HC_OK && hc_job_verify_requested(job)) {
    /* A copy: every output value must equal its source bit for bit. */
    size_t es = hc_dtype_size(hc_field_dtype(in)), bad = 0;
    char *a = malloc(hc_field_bytes(in) ? hc_field_bytes(in) : 1),
         *b = malloc(hc_field_bytes(out) ? hc_field_bytes(out) : 1);
    st = a && b ? hc_field_read(in, a) : hc_error(HC_ERR_NO_MEMORY, "slice: out of host memory");
    if (st == HC_OK) st = hc_field_read(out, b);
    size_t ib = inner * 4;
    for (size_t o = 0; st == HC_OK && o < outer; o++)
      bad += memcmp(b + o * ib, a + (o * (size_t)n + (size_t)index) * ib, ib) != 0;
    if (st == HC_OK)
      hc_job_set_verified(job, bad == 0,
                          "%zu of %zu rows differ from the input plane (exact copy expected; %zu-byte values)", bad,
                          outer, es);
    free(a);
    free(b);
  }
  if (st != HC_OK) {
    hc_field_destroy(out);
    return st;
  }
  return hc_job_set_output(job, "out", out);
}

static const hc_workload_ops_t slice_ops = {
    .size = sizeof(hc_workload_ops_t),
    .languages = GLUE_LANGUAGES,
    HC_WORKLOAD_PARAMS(params),
    HC_WORKLOAD_PORTS(inputs, outputs),
    .check = slice_check,
    .describe_output = slice_describe,
    .run = slice_run,
};

HC_PLUGIN_DESCRIPTOR = {HC_ABI_MAJOR,
                        HC_ABI_MINOR,
                        HC_PLUGIN_WORKLOAD,
                        0,
                        "slice",
                        "1.0",
                        "glue: the plane of a field at one index along one axis (rank r -> r-1)",
                        &slice_ops};
