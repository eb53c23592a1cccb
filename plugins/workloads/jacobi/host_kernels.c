/* jacobi — the host-language kernels for the cpu backend: host_kernels.inc
 * instantiated per element type and right-hand-side storage. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "jacobi.h"

/* The sweeps compiled for AVX-512, AVX2 and the build's baseline (SSE2 on
 * plain x86-64), chosen when the plugin loads: the two-sweep pass is
 * bound by arithmetic on few cores once it halves the memory traffic.
 * Not under ThreadSanitizer: the clones' ifunc resolvers run while the
 * plugin is relocated, before TSan's runtime is up, and crash the loading
 * program (every TSan test exited 66 at dlopen); that build runs the
 * baseline. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define HOST_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HOST_CLONES
#endif

/* Non-temporal stores of n values (sweep2's output rows, on grids that
 * stream from memory): a store that misses the cache first reads its line,
 * so a pass that reads `in` and writes `out` moves the traffic of a plain
 * copy with read-for-ownership, well below a streamed copy (bench/'s
 * hc-ceilings measures both). Scalar movnti up to a 16-byte boundary and after the
 * last vector, so that every store of a row streams and whole lines leave
 * the write-combining buffers. Plain stores where SSE2 is missing. */
#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#define STREAM_LOOP(IT, VW, VSTORE, SSTORE)           \
  long k = 0;                                         \
  for (; k < n && ((uintptr_t)(dst + k) & 15); k++) { \
    IT v;                                             \
    memcpy(&v, src + k, sizeof v);                    \
    SSTORE;                                           \
  }                                                   \
  for (; k + VW <= n; k += VW) VSTORE;                \
  for (; k < n; k++) {                                \
    IT v;                                             \
    memcpy(&v, src + k, sizeof v);                    \
    SSTORE;                                           \
  }
static inline void stream_store_f32(float *restrict dst, const float *restrict src, long n) {
  STREAM_LOOP(int, 4, _mm_stream_ps(dst + k, _mm_loadu_ps(src + k)), _mm_stream_si32((int *)(dst + k), v))
}
static inline void stream_store_f64(double *restrict dst, const double *restrict src, long n) {
  STREAM_LOOP(long long, 2, _mm_stream_pd(dst + k, _mm_loadu_pd(src + k)), _mm_stream_si64((long long *)(dst + k), v))
}
/* Streaming stores are weakly ordered: fenced before a group ends, so that
 * the pool's completion publishes them. */
static inline void stream_fence(void) { _mm_sfence(); }
#else
static inline void stream_store_f32(float *restrict dst, const float *restrict src, long n) {
  memcpy(dst, src, (size_t)n * sizeof *dst);
}
static inline void stream_store_f64(double *restrict dst, const double *restrict src, long n) {
  memcpy(dst, src, (size_t)n * sizeof *dst);
}
static inline void stream_fence(void) {}
#endif
#define STREAM_STORE(d, s, n) _Generic((d), float * : stream_store_f32, double * : stream_store_f64)(d, s, n)

#define REAL float
#define F_STORED 0
#define SFX f32c
#include "host_kernels.inc"
#undef F_STORED
#undef SFX
#define F_STORED 1
#define SFX f32s
#include "host_kernels.inc"
#undef REAL
#undef F_STORED
#undef SFX

#define REAL double
#define F_STORED 0
#define SFX f64c
#include "host_kernels.inc"
#undef F_STORED
#undef SFX
#define F_STORED 1
#define SFX f64s
#include "host_kernels.inc"
#undef REAL
#undef F_STORED
#undef SFX

const jacobi_host_fns_t jacobi_host_fns[2][2] = {
    {{sweep_f32c, sweep2_f32c, residual_f32c, compare_f32c, fill_f32c, rfield_f32c},
     {sweep_f32s, sweep2_f32s, residual_f32s, compare_f32c, fill_f32c, rfield_f32s}},
    {{sweep_f64c, sweep2_f64c, residual_f64c, compare_f64c, fill_f64c, rfield_f64c},
     {sweep_f64s, sweep2_f64s, residual_f64s, compare_f64c, fill_f64c, rfield_f64s}},
};
