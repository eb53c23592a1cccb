/* simpson — composite Simpson integration of a sampled 1-, 2- or 3-D field
 * (seed 000). Declarations shared by the workload's source files. */
#ifndef SIMPSON_H
#define SIMPSON_H

#include <hc/plugin.h>

/* The four ways to integrate. X(ENUM, "name", "help"). */
#define SIMPSON_VARIANT_LIST(X)                                                                           \
  X(PRECOMPUTED, "precomputed", "paper's algorithm 1: weight array, products on the device, host sum")    \
  X(ONTHEFLY, "onthefly", "paper's algorithm 2: weights from indices, products on the device, host sum")  \
  X(DEVICEREDUCE, "devicereduce", "paper's algorithm 3: weights from indices, reduced by one work-group") \
  X(FUSED, "fused", "one pass, weights from indices, multi-group reduction in f64 (default)")

typedef enum {
#define SIMPSON_VARIANT_ENUM_(e, n, h) SIMPSON_##e,
  SIMPSON_VARIANT_LIST(SIMPSON_VARIANT_ENUM_)
#undef SIMPSON_VARIANT_ENUM_
      SIMPSON_VARIANT_COUNT_
} simpson_variant_t;

/* Built-in test functions on a box. X(ENUM, "name"). */
#define SIMPSON_FUNC_LIST(X) \
  X(ONE, "one")              \
  X(POLY, "poly")            \
  X(GAUSS, "gauss")          \
  X(SINPROD, "sinprod")

typedef enum {
#define SIMPSON_FUNC_ENUM_(e, n) SIMPSON_FUNC_##e,
  SIMPSON_FUNC_LIST(SIMPSON_FUNC_ENUM_)
#undef SIMPSON_FUNC_ENUM_
      SIMPSON_FUNC_COUNT_
} simpson_func_t;

typedef enum { SIMPSON_SRC_PORT, SIMPSON_SRC_FILE, SIMPSON_SRC_FUNC } simpson_source_t;

/* Largest extent of one axis (the kernels count positions in 32 bits). */
#define SIMPSON_MAX_EXTENT ((int64_t)1 << 30)
/* Largest field (2^40 samples: far beyond any device, far from overflow). */
#define SIMPSON_MAX_SAMPLES ((int64_t)1 << 40)

/* A run, resolved from the parameters and the input, before anything is
 * allocated. User axes d = 0..rank-1 (C order, axis 0 slowest); the
 * kernels see the field padded to 3-D with leading axes of extent 1. */
typedef struct {
  simpson_variant_t variant;
  simpson_source_t source;
  simpson_func_t func;
  const char *path; /* input= (SRC_FILE), owned by the job */
  hc_dtype_t dtype;
  uint32_t rank;       /* 1..3 */
  int64_t shape[3];    /* user axes */
  double h[3];         /* spacing per user axis */
  double lo[3], hi[3]; /* box per user axis (SRC_FUNC) */
  int nx, ny, nz;      /* padded 3-D extents */
  int64_t n;           /* samples */
  int64_t groups;      /* groups= (0: automatic) */
  int isa;             /* host sums' SIMD instructions (isa=, simpson_isa) */
  /* A split run's slab: samples [row0, row0 + shape[0]) of the grows
   * samples of axis 0; a built-in function is sampled at the whole box's
   * coordinates (lo, hi are the whole box's). Whole runs: row0 = 0. */
  int64_t row0, grows;
} simpson_config_t;

/* config.c: every check of the parameters and of the input's header, done
 * before any allocation; HC_ERR_PARAM with a message naming the parameter. */
hc_status_t simpson_config_resolve(hc_job_t *job, simpson_config_t *cfg);
const char *simpson_variant_name(simpson_variant_t v);
const char *simpson_func_name(simpson_func_t f);

/* input.c: reads input= into a new field on dev; *transfer_s is the upload
 * time. When host_data is not NULL it receives the host copy of the samples
 * (the caller frees it), for verification. */
hc_status_t simpson_load_file(hc_device_t *dev, const simpson_config_t *cfg, hc_field_t **out, double *transfer_s,
                              void **host_data);
/* Peeks at a .npy header: dtype, rank, shape, without reading the data. */
hc_status_t simpson_npy_peek(const char *path, hc_dtype_t *dtype, uint32_t *rank, int64_t *shape);
/* Spacing from "<path>.grid" when present (the core's side file); returns
 * 1 and fills h[0..rank-1] when it holds positive spacings. */
int simpson_grid_spacing(const char *path, uint32_t rank, double *h);

/* testfunc.c: built-in functions. */
/* Fills host memory (cfg->n samples of cfg->dtype) with the function. */
hc_status_t simpson_func_fill(const simpson_config_t *cfg, void *data);
/* The exact integral over the box. */
double simpson_func_exact(const simpson_config_t *cfg);
/* A bound of the rule's error for the function (Peano-kernel bounds with
 * derivative bounds of the function, summed over the axes). */
double simpson_func_error_bound(const simpson_config_t *cfg);

/* reference.c: the float64 host reference, nested 1-D rules written the
 * way SciPy's simpson() computes them (independent of simpson_w12). */
typedef struct {
  double value; /* the nested-rule integral */
  double scale; /* the same rule with |weights| on |f|: sum |w f|, for tolerances */
} simpson_reference_t;
hc_status_t simpson_reference(const simpson_config_t *cfg, const void *data, simpson_reference_t *out);

/* host_kernels.c: the host-language kernels (cpu backend) and host sums. */
void simpson_fused_host_f32(const hc_host_group_t *g, void *const *args);
void simpson_fused_host_f64(const hc_host_group_t *g, void *const *args);
void simpson_precomputed_host_f32(const hc_host_group_t *g, void *const *args);
void simpson_precomputed_host_f64(const hc_host_group_t *g, void *const *args);
void simpson_onthefly_host_f32(const hc_host_group_t *g, void *const *args);
void simpson_onthefly_host_f64(const hc_host_group_t *g, void *const *args);
/* host_sums.c: sums of x[m] over even and over odd m < n, in f64 with
 * the SIMD instructions isa (SSE2, AVX2 or AVX-512). simpson_isa gives the
 * widest the CPU has up to the isa= parameter's cap ("sse2", "avx2",
 * "avx512" or "auto": no cap). */
enum { SIMPSON_ISA_SSE2, SIMPSON_ISA_AVX2, SIMPSON_ISA_AVX512 };
int simpson_isa(const char *cap);
const char *simpson_isa_name(int isa);
void simpson_parity_sums_f32(int isa, const float *x, size_t n, double *even, double *odd);
void simpson_parity_sums_f64(int isa, const double *x, size_t n, double *even, double *odd);
/* Sum of n values in f64, blocked so the rounding error stays small. */
double simpson_host_sum(int isa, hc_dtype_t dtype, const void *x, size_t n);
/* The weight array of algorithm 1 (twelfths^3, exact in f32 and f64). */
void simpson_weight_array(const simpson_config_t *cfg, void *a);

/* variants.c: runs the configured variant on the field (already on the
 * device). Gives the integral, the compute time (data resident -> integral
 * on the host), the device time and the bytes the device moved. */
typedef struct {
  double integral;
  double compute_s;
  double device_s;
  double traffic_bytes; /* device memory traffic and transfers of the variant */
  uint64_t groups;      /* partial sums (fused), or work-groups */
  double tolerance;     /* relative to sum |w f|, against the f64 reference */
} simpson_result_t;
hc_status_t simpson_run_variant(hc_job_t *job, const simpson_config_t *cfg, hc_field_t *field, simpson_result_t *res);

/* verify.c: checks res against the f64 reference (and the exact integral
 * for func=) and records the verdict on the job. host_data: the samples on
 * the host, or NULL (then they are read from the field). */
hc_status_t simpson_verify(hc_job_t *job, const simpson_config_t *cfg, const simpson_config_t *whole, hc_field_t *field,
                           const void *host_data, const simpson_result_t *res);

/* Scale from weights in twelfths^3 to the integral: prod_d h_d / 12 over
 * the user axes, times 1/144 per padding axis (whose weight is 12). */
double simpson_scale(const simpson_config_t *cfg);

#endif
