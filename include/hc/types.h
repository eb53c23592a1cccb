/* hc — basic types shared by the embedding API and the plugin API.
 * Every struct that crosses the plugin boundary begins with its own size so
 * that it can grow by appending members (ABI rule, see plugin.h). */
#ifndef HC_TYPES_H
#define HC_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HC_MAX_DIMS 4 /* fields have at most 4 axes */
#define HC_NAME_MAX 128

/* Element types of fields. X(ENUM_SUFFIX, "name", element bytes,
 * numpy descr, is_complex). The one list used for names, sizes and .npy. */
#define HC_DTYPE_LIST(X)     \
  X(F32, "f32", 4, "<f4", 0) \
  X(F64, "f64", 8, "<f8", 0) \
  X(C64, "c64", 8, "<c8", 1) \
  X(C128, "c128", 16, "<c16", 1)

typedef enum hc_dtype {
  HC_DTYPE_NONE = 0,
#define HC_DTYPE_ENUM_(e, n, b, d, c) HC_##e,
  HC_DTYPE_LIST(HC_DTYPE_ENUM_)
#undef HC_DTYPE_ENUM_
      HC_DTYPE_COUNT_
} hc_dtype_t;

/* Bit for a dtype in a set of accepted dtypes (port specs). */
#define HC_DTYPE_BIT(d) (1u << (unsigned)(d))
#define HC_DTYPES_REAL (HC_DTYPE_BIT(HC_F32) | HC_DTYPE_BIT(HC_F64))
#define HC_DTYPES_COMPLEX (HC_DTYPE_BIT(HC_C64) | HC_DTYPE_BIT(HC_C128))
#define HC_DTYPES_ANY (HC_DTYPES_REAL | HC_DTYPES_COMPLEX)

const char *hc_dtype_name(hc_dtype_t dtype); /* "f32", or "?" */
size_t hc_dtype_size(hc_dtype_t dtype);      /* bytes, 0 if unknown */
int hc_dtype_is_complex(hc_dtype_t dtype);
hc_dtype_t hc_dtype_from_name(const char *name); /* HC_DTYPE_NONE if unknown */
hc_dtype_t hc_dtype_real_part(hc_dtype_t dtype); /* c64->f32, f64->f64 */

/* Kernel languages. X(ENUM_SUFFIX, "name"). */
#define HC_LANGUAGE_LIST(X) \
  X(HOST, "host")           \
  X(OPENCL_C, "opencl-c")   \
  X(CUDA_C, "cuda-c")

typedef enum hc_language {
#define HC_LANG_ENUM_(e, n) HC_LANG_##e,
  HC_LANGUAGE_LIST(HC_LANG_ENUM_)
#undef HC_LANG_ENUM_
      HC_LANG_COUNT_
} hc_language_t;
#define HC_LANG_BIT(l) (1u << (unsigned)(l))
const char *hc_language_name(hc_language_t lang);

/* Device types. */
#define HC_DEVICE_TYPE_LIST(X)  \
  X(CPU, "cpu")                 \
  X(GPU, "gpu")                 \
  X(ACCELERATOR, "accelerator") \
  X(OTHER, "other")

typedef enum hc_device_type {
#define HC_DEVTYPE_ENUM_(e, n) HC_DEVICE_##e,
  HC_DEVICE_TYPE_LIST(HC_DEVTYPE_ENUM_)
#undef HC_DEVTYPE_ENUM_
      HC_DEVICE_TYPE_COUNT_
} hc_device_type_t;
const char *hc_device_type_name(hc_device_type_t type);

/* Capability record of one device. Filled by the backend; fields it does not
 * know stay 0 (or ""). Append-only: new members go at the end. */
typedef struct hc_device_info {
  uint32_t size; /* sizeof(hc_device_info_t) of the writer */
  hc_device_type_t type;
  char name[HC_NAME_MAX]; /* "NVIDIA H100 80GB HBM3" */
  char vendor[64];
  char platform[HC_NAME_MAX]; /* OpenCL platform, "CUDA", "host" */
  char driver[64];            /* driver version string */
  char arch[32];              /* "sm_90", "skylake-avx512", ... */
  uint32_t languages;         /* HC_LANG_BIT set the device accepts */
  uint32_t compute_units;     /* cores, SMs, CUs */
  uint32_t clock_mhz;
  uint32_t fp64; /* 1 if float64 kernels are supported */
  uint32_t max_work_group_size;
  uint32_t preferred_group_multiple; /* warp / SIMD width */
  uint64_t global_mem_bytes;
  uint64_t max_alloc_bytes; /* largest single buffer */
  uint64_t local_mem_bytes; /* per work-group (shared memory) */
  uint64_t l1_cache_bytes;
  uint64_t l2_cache_bytes;
  uint64_t l3_cache_bytes;
  uint32_t cc_major, cc_minor; /* CUDA compute capability */
  double peak_fp32_gflops;     /* datasheet-style peak, 0 if unknown */
  double peak_fp64_gflops;
  double peak_bandwidth_gbs; /* memory bandwidth, GB/s (1e9) */
} hc_device_info_t;

/* Parameter types of workload schemas. X(ENUM_SUFFIX, "name", ranged):
 * ranged types are checked against a spec's [min, max] (every extent of a
 * shape, every component of a vector); the others ignore it. */
#define HC_PARAM_TYPE_LIST(X) \
  X(INT, "int", 1)            \
  X(FLOAT, "float", 1)        \
  X(BOOL, "bool", 0)          \
  X(STRING, "string", 0)      \
  X(ENUM, "enum", 0)          \
  X(SHAPE, "shape", 1)        \
  X(VEC, "vector", 1)

typedef enum hc_param_type {
#define HC_PTYPE_ENUM_(e, n, ranged) HC_PARAM_##e,
  HC_PARAM_TYPE_LIST(HC_PTYPE_ENUM_)
#undef HC_PTYPE_ENUM_
      HC_PARAM_TYPE_COUNT_
} hc_param_type_t;
const char *hc_param_type_name(hc_param_type_t type);
/* 1 when values of the type are checked against a spec's [min, max]. */
int hc_param_type_ranged(hc_param_type_t type);

/* A shape value ("256x256x256"): rank and extents. */
typedef struct hc_shape {
  uint32_t rank;
  int64_t dims[HC_MAX_DIMS];
} hc_shape_t;

/* A vector value ("1,0,0.5"): up to 4 doubles. */
typedef struct hc_vec {
  uint32_t count;
  double v[HC_MAX_DIMS];
} hc_vec_t;

#ifdef __cplusplus
}
#endif
#endif
