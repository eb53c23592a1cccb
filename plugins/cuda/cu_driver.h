/* The CUDA driver API, resolved at run time.
 *
 * The plugin never links libcuda: a machine without the NVIDIA driver must
 * still load it (and report "no CUDA driver found"). cuda.h gives the types;
 * this table gives the entry points, dlsym'd from libcuda.so.1.
 *
 * The list names the API as programs write it (cuMemAlloc, cuMemcpyHtoDAsync)
 * and lets cuda.h's own #defines pick the versioned symbol (cuMemAlloc_v2,
 * cuMemcpyHtoDAsync_v2, cuEventElapsedTime_v2, ...), so the table always binds
 * the ABI that the prototypes in cuda.h describe. */
#ifndef HC_CUDA_CU_DRIVER_H
#define HC_CUDA_CU_DRIVER_H

#include <cuda.h>
#include <stddef.h>

#include <hc/plugin.h>

/* X(name): required. O(name): optional (NULL when the driver is older);
 * F(name, "older symbol"): required, with a same-signature fallback. */
#define HC_CU_FUNCS(X, O, F)                                            \
  X(cuInit)                                                             \
  X(cuDriverGetVersion)                                                 \
  X(cuGetErrorName)                                                     \
  X(cuGetErrorString)                                                   \
  X(cuDeviceGetCount)                                                   \
  X(cuDeviceGet)                                                        \
  X(cuDeviceGetName)                                                    \
  X(cuDeviceGetAttribute)                                               \
  X(cuDeviceTotalMem)                                                   \
  X(cuDeviceCanAccessPeer)                                              \
  X(cuDevicePrimaryCtxRetain)                                           \
  X(cuDevicePrimaryCtxRelease)                                          \
  X(cuCtxSetCurrent)                                                    \
  X(cuCtxGetCurrent)                                                    \
  X(cuCtxSynchronize)                                                   \
  X(cuCtxEnablePeerAccess)                                              \
  X(cuStreamCreate)                                                     \
  X(cuStreamDestroy)                                                    \
  X(cuStreamSynchronize)                                                \
  X(cuEventCreate)                                                      \
  X(cuEventDestroy)                                                     \
  X(cuEventRecord)                                                      \
  X(cuEventQuery)                                                       \
  X(cuEventSynchronize)                                                 \
  F(cuEventElapsedTime, "cuEventElapsedTime")                           \
  X(cuMemAlloc)                                                         \
  X(cuMemFree)                                                          \
  X(cuMemGetInfo)                                                       \
  X(cuMemHostAlloc)                                                     \
  X(cuMemFreeHost)                                                      \
  X(cuMemHostRegister)                                                  \
  X(cuMemHostUnregister)                                                \
  X(cuPointerGetAttribute)                                              \
  X(cuMemcpyHtoD)                                                       \
  X(cuMemcpyDtoH)                                                       \
  X(cuMemcpyDtoD)                                                       \
  X(cuMemcpyHtoDAsync)                                                  \
  X(cuMemcpyDtoHAsync)                                                  \
  X(cuMemcpyDtoDAsync)                                                  \
  X(cuMemcpyPeerAsync)                                                  \
  X(cuMemsetD8Async)                                                    \
  X(cuMemsetD16Async)                                                   \
  X(cuMemsetD32Async)                                                   \
  X(cuMemsetD2D32Async)                                                 \
  X(cuModuleLoadData)                                                   \
  X(cuModuleUnload)                                                     \
  X(cuModuleGetFunction)                                                \
  X(cuFuncGetAttribute)                                                 \
  X(cuLaunchKernel)                                                     \
  O(cuFuncGetParamInfo)         /* 12.4: argument checks at launch */   \
  O(cuFuncGetName)              /* 12.3: names in "kernel not found" */ \
  O(cuModuleGetFunctionCount)   /* 12.4 */                              \
  O(cuModuleEnumerateFunctions) /* 12.4 */

/* Expands the argument first, so cuMemAlloc becomes "cuMemAlloc_v2". */
#define HC_CU_STR_(x) #x
#define HC_CU_STR(x) HC_CU_STR_(x)

typedef struct hc_cu_api {
  void *lib;      /* dlopen handle of libcuda */
  char path[512]; /* what was opened (HC_CUDA_DRIVER, default libcuda.so.1) */
#define HC_CU_MEMBER_(name) __typeof__(name) *name;
#define HC_CU_MEMBER_F_(name, old) HC_CU_MEMBER_(name)
  HC_CU_FUNCS(HC_CU_MEMBER_, HC_CU_MEMBER_, HC_CU_MEMBER_F_)
#undef HC_CU_MEMBER_
#undef HC_CU_MEMBER_F_
} hc_cu_api_t;

/* Loads the driver: $HC_CUDA_DRIVER if set (a path; tests point it at the
 * toolkit's stub library), else libcuda.so.1 (the configuration table's
 * default); api->path names it. Returns 0 on success; on
 * failure fills why ("libcuda.so.1: cannot open shared object file") and
 * returns -1 (not loadable) or -2 (loaded, but a required entry is missing:
 * the driver is too old). The handle is never closed: unloading libcuda
 * while its worker threads run is unsafe, and a reload reuses it. */
int hc_cu_load(hc_cu_api_t *api, char *why, size_t why_size);

/* "CUDA_ERROR_OUT_OF_MEMORY: out of memory" (or the number, when the driver
 * cannot name it). */
void hc_cu_describe(const hc_cu_api_t *api, CUresult r, char *out, size_t n);

/* Sets the last error to "<what>: <CUresult name>: <CUresult string>" and
 * returns status; CUDA_ERROR_OUT_OF_MEMORY always maps to
 * HC_ERR_DEVICE_MEMORY. */
hc_status_t hc_cu_fail(const hc_cu_api_t *api, hc_status_t status, CUresult r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
