/* The conformance suite's kernels, each written once: the portable-dialect
 * source (one program, so a device compiles it once) and a host-language
 * equivalent, so the same test runs on source and host backends. */
#ifndef HC_CONFORMANCE_KERNELS_H
#define HC_CONFORMANCE_KERNELS_H

#include <stdint.h>

#include <hc/hc.h>

/* Values the index kernel writes: unique per (x, y, z) for x, y < 1024,
 * never 0 and never the sentinel or the "bad" marker. */
static inline uint32_t conf_index_value(uint32_t x, uint32_t y, uint32_t z) {
  return 1u + x + y * 1024u + z * 1048576u;
}
#define CONF_BAD 0xBADBADu /* the kernel saw inconsistent built-ins */
#define CONF_SENTINEL 0xDEADBEEFu

static const char conf_source[] =
    /* Every item in range writes its value, after checking that the
     * index built-ins agree with each other (and with the requested group
     * size, when one was given: lx/ly/lz nonzero). */
    "HC_KERNEL void conf_index(HC_GLOBAL uint *out, int nx, int ny, int nz, int lx, int ly, int lz) {\n"
    "  long x = hc_global_id(0), y = hc_global_id(1), z = hc_global_id(2);\n"
    "  if (x >= nx || y >= ny || z >= nz) return;\n"
    "  int ok = 1;\n"
    "  ok = ok && hc_group_id(0) * hc_local_size(0) + hc_local_id(0) == x;\n"
    "  ok = ok && hc_group_id(1) * hc_local_size(1) + hc_local_id(1) == y;\n"
    "  ok = ok && hc_group_id(2) * hc_local_size(2) + hc_local_id(2) == z;\n"
    "  ok = ok && hc_global_size(0) == hc_num_groups(0) * hc_local_size(0) && hc_global_size(0) >= nx;\n"
    "  ok = ok && hc_global_size(1) == hc_num_groups(1) * hc_local_size(1) && hc_global_size(1) >= ny;\n"
    "  ok = ok && hc_global_size(2) == hc_num_groups(2) * hc_local_size(2) && hc_global_size(2) >= nz;\n"
    "  ok = ok && (lx == 0 || (hc_local_size(0) == lx && hc_local_size(1) == ly && hc_local_size(2) == lz));\n"
    "  out[(z * ny + y) * nx + x] = ok ? 1u + (uint)x + (uint)y * 1024u + (uint)z * 1048576u : 0xBADBADu;\n"
    "}\n"
    /* Work-group sums through local memory and barriers (power-of-two
     * groups of at most 256 items). */
    "HC_KERNEL void conf_group_sum(HC_GLOBAL const uint *in, HC_GLOBAL uint *partial, int n) {\n"
    "  HC_LOCAL uint tmp[256];\n"
    "  long lid = hc_local_id(0), i = hc_global_id(0);\n"
    "  tmp[lid] = i < n ? in[i] : 0u;\n"
    "  HC_BARRIER();\n"
    "  for (long s = hc_local_size(0) / 2; s > 0; s /= 2) {\n"
    "    if (lid < s) tmp[lid] += tmp[lid + s];\n"
    "    HC_BARRIER();\n"
    "  }\n"
    "  if (lid == 0) partial[hc_group_id(0)] = tmp[0];\n"
    "}\n"
    "HC_KERNEL void conf_increment(HC_GLOBAL uint *out, int n) {\n"
    "  long i = hc_global_id(0);\n"
    "  if (i < n) out[i] += 1u;\n"
    "}\n"
    "HC_KERNEL void conf_scalars(HC_GLOBAL long *out, int a, uint b, long c, ulong d, float f) {\n"
    "  if (hc_global_id(0) != 0) return;\n"
    "  out[0] = a; out[1] = (long)b; out[2] = c; out[3] = (long)(d >> 1); out[4] = (long)(f * 4.0f);\n"
    "}\n"
    "HC_KERNEL void conf_axpy_f(HC_GLOBAL float *y, HC_GLOBAL const float *x, float a, int n) {\n"
    "  long i = hc_global_id(0);\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "#ifdef HC_HAS_FP64\n"
    "HC_KERNEL void conf_axpy_d(HC_GLOBAL double *y, HC_GLOBAL const double *x, double a, int n) {\n"
    "  long i = hc_global_id(0);\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "#endif\n"
    /* Enough arithmetic per item to make a measurable device time. */
    "HC_KERNEL void conf_busy(HC_GLOBAL float *out, int n, int iters) {\n"
    "  long i = hc_global_id(0);\n"
    "  if (i >= n) return;\n"
    "  float v = (float)i * 1e-6f;\n"
    "  for (int k = 0; k < iters; k++) v = v * 0.999f + 0.5f;\n"
    "  out[i] = v;\n"
    "}\n";

/* ---- host equivalents: one call per work-group, items lo..hi ---- */

#define CONF_ARG(T, a, i) (*(const T *)(a)[i])

static void conf_host_index(const hc_host_group_t *g, void *const *a) {
  uint32_t *out = a[0];
  int32_t nx = CONF_ARG(int32_t, a, 1), ny = CONF_ARG(int32_t, a, 2), nz = CONF_ARG(int32_t, a, 3);
  int32_t lx = CONF_ARG(int32_t, a, 4);
  size_t lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
  int ok = 1;
  for (uint32_t d = 0; d < g->dims && d < 3; d++) {
    lo[d] = g->lo[d];
    hi[d] = g->hi[d];
    ok = ok && hi[d] <= g->global[d] && lo[d] <= hi[d];
  }
  /* A requested group size bounds each group's extent. */
  ok = ok && (lx == 0 || hi[0] - lo[0] <= (size_t)lx);
  for (size_t z = lo[2]; z < hi[2]; z++)
    for (size_t y = lo[1]; y < hi[1]; y++)
      for (size_t x = lo[0]; x < hi[0]; x++)
        if ((long)x < nx && (long)y < ny && (long)z < nz)
          out[(z * (size_t)ny + y) * (size_t)nx + x] =
              ok ? conf_index_value((uint32_t)x, (uint32_t)y, (uint32_t)z) : CONF_BAD;
}

static void conf_host_group_sum(const hc_host_group_t *g, void *const *a) {
  const uint32_t *in = a[0];
  uint32_t *partial = a[1];
  int32_t n = CONF_ARG(int32_t, a, 2);
  uint32_t s = 0;
  for (size_t i = g->lo[0]; i < g->hi[0]; i++)
    if ((long)i < n) s += in[i];
  partial[g->group_id[0]] = s;
}

static void conf_host_increment(const hc_host_group_t *g, void *const *a) {
  uint32_t *out = a[0];
  int32_t n = CONF_ARG(int32_t, a, 1);
  for (size_t i = g->lo[0]; i < g->hi[0]; i++)
    if ((long)i < n) out[i] += 1u;
}

static void conf_host_scalars(const hc_host_group_t *g, void *const *a) {
  int64_t *out = a[0];
  if (g->lo[0] != 0) return;
  out[0] = CONF_ARG(int32_t, a, 1);
  out[1] = (int64_t)CONF_ARG(uint32_t, a, 2);
  out[2] = CONF_ARG(int64_t, a, 3);
  out[3] = (int64_t)(CONF_ARG(uint64_t, a, 4) >> 1);
  out[4] = (int64_t)(CONF_ARG(float, a, 5) * 4.0f);
}

static void conf_host_axpy_f(const hc_host_group_t *g, void *const *a) {
  float *y = a[0];
  const float *x = a[1];
  float s = CONF_ARG(float, a, 2);
  int32_t n = CONF_ARG(int32_t, a, 3);
  for (size_t i = g->lo[0]; i < g->hi[0]; i++)
    if ((long)i < n) y[i] = s * x[i] + y[i];
}

static void conf_host_axpy_d(const hc_host_group_t *g, void *const *a) {
  double *y = a[0];
  const double *x = a[1];
  double s = CONF_ARG(double, a, 2);
  int32_t n = CONF_ARG(int32_t, a, 3);
  for (size_t i = g->lo[0]; i < g->hi[0]; i++)
    if ((long)i < n) y[i] = s * x[i] + y[i];
}

static void conf_host_busy(const hc_host_group_t *g, void *const *a) {
  float *out = a[0];
  int32_t n = CONF_ARG(int32_t, a, 1), iters = CONF_ARG(int32_t, a, 2);
  for (size_t i = g->lo[0]; i < g->hi[0]; i++) {
    if ((long)i >= n) continue;
    float v = (float)i * 1e-6f;
    for (int k = 0; k < iters; k++) v = v * 0.999f + 0.5f;
    out[i] = v;
  }
}

#endif
