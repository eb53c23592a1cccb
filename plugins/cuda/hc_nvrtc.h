/* NVRTC, resolved at run time, and the one function that turns portable
 * kernel source into a device image.
 *
 * Self-contained on purpose: it needs neither nvrtc.h nor a GPU, so the
 * unit test compiles this same file into itself and exercises the real
 * compile path of the plugin on a machine without a device (CI). The
 * prototypes below are checked against nvrtc.h where the toolkit headers
 * are available (HC_NVRTC_CHECK_TYPES, set by the plugin's build). */
#ifndef HC_CUDA_NVRTC_H
#define HC_CUDA_NVRTC_H

#include <stddef.h>

#include <hc/plugin.h>

#ifdef HC_NVRTC_CHECK_TYPES
/* The plugin's build: the toolkit's own types, so that hc_nvrtc.c can check
 * every prototype below against nvrtc.h. */
#include <nvrtc.h>
typedef nvrtcProgram hc_nvrtc_prog_t;
typedef nvrtcResult hc_nvrtc_result_t;
#else
typedef struct _nvrtcProgram *hc_nvrtc_prog_t; /* nvrtcProgram */
typedef int hc_nvrtc_result_t;                 /* nvrtcResult (an enum) */
#endif

/* X(return type, name, parameters). O: optional (NVRTC 11.2+ for archs). */
#define HC_NVRTC_FUNCS(X, O)                                                                        \
  X(const char *, nvrtcGetErrorString, (hc_nvrtc_result_t))                                         \
  X(hc_nvrtc_result_t, nvrtcVersion, (int *, int *))                                                \
  X(hc_nvrtc_result_t, nvrtcCreateProgram,                                                          \
    (hc_nvrtc_prog_t *, const char *, const char *, int, const char *const *, const char *const *)) \
  X(hc_nvrtc_result_t, nvrtcDestroyProgram, (hc_nvrtc_prog_t *))                                    \
  X(hc_nvrtc_result_t, nvrtcCompileProgram, (hc_nvrtc_prog_t, int, const char *const *))            \
  X(hc_nvrtc_result_t, nvrtcGetProgramLogSize, (hc_nvrtc_prog_t, size_t *))                         \
  X(hc_nvrtc_result_t, nvrtcGetProgramLog, (hc_nvrtc_prog_t, char *))                               \
  X(hc_nvrtc_result_t, nvrtcGetCUBINSize, (hc_nvrtc_prog_t, size_t *))                              \
  X(hc_nvrtc_result_t, nvrtcGetCUBIN, (hc_nvrtc_prog_t, char *))                                    \
  X(hc_nvrtc_result_t, nvrtcGetPTXSize, (hc_nvrtc_prog_t, size_t *))                                \
  X(hc_nvrtc_result_t, nvrtcGetPTX, (hc_nvrtc_prog_t, char *))                                      \
  O(hc_nvrtc_result_t, nvrtcGetNumSupportedArchs, (int *))                                          \
  O(hc_nvrtc_result_t, nvrtcGetSupportedArchs, (int *))

typedef struct hc_nvrtc {
  void *lib;
  char path[512];   /* the library that was loaded */
  int major, minor; /* nvrtcVersion */
  int narchs;       /* 0: unknown (then sm_<cc> is tried as is) */
  int archs[64];    /* supported sm numbers, ascending (75, 80, ...) */
#define HC_NVRTC_MEMBER_(ret, name, args) ret(*name) args;
  HC_NVRTC_FUNCS(HC_NVRTC_MEMBER_, HC_NVRTC_MEMBER_)
#undef HC_NVRTC_MEMBER_
} hc_nvrtc_t;

/* Loads NVRTC: $HC_NVRTC (a path) if set, else libnvrtc.so.13,
 * libnvrtc.so.12, libnvrtc.so, then $HC_CUDA_PATH/lib64/libnvrtc.so. With
 * max_major > 0 a library newer than that (its cubins would not load on an
 * older driver) is used only when nothing else is found. Returns 0, or -1
 * with why filled ("NVRTC not found (tried ...)"). Never unloaded: NVRTC
 * keeps per-thread state that must outlive the plugin's threads. */
int hc_nvrtc_load(hc_nvrtc_t *n, int max_major, char *why, size_t why_size);

/* Compiles full kernel source (the dialect prelude already prepended) for
 * compute capability cc (90 for sm_90), passing options through (split at
 * blanks; quotes group; -D and -U become #define and #undef lines ahead of
 * the source, see take_defines). Without fast math: accuracy tests need IEEE
 * division and square roots (a workload may pass -use_fast_math itself).
 * On success *image (malloc'd; caller frees) is a CUBIN for sm_<cc>, or,
 * when this NVRTC predates the device, PTX for the newest architecture it
 * knows (*is_ptx = 1; the driver compiles it at load). *log (optional;
 * malloc'd) receives the compiler's messages. On failure: HC_ERR_BUILD with
 * the NVRTC log in the last-error message. */
hc_status_t hc_nvrtc_compile(const hc_nvrtc_t *n, int cc, const char *source, const char *options, void **image,
                             size_t *size, int *is_ptx, char **log);

#endif
