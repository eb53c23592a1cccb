/* nbody: host-language kernels (the cpu backend), one set per precision.
 * host_kernels_tmpl.h is included twice, with NB_T float and double. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "host_avx512.h"
#include "nbody.h"

/* The portable field loop, cloned for AVX2+FMA at run time (x86-64, GCC
 * or clang): the default build targets baseline x86-64 (SSE2, no fma).
 * AVX-512 CPUs take host_avx512.c instead. */
#if defined(__x86_64__) && defined(__GNUC__)
#define NB_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define NB_CLONES
#endif

/* Newton–Raphson reciprocal square roots from the bit-level first guess
 * (3.4 % off; each step squares the error): plain C the compiler
 * vectorises, with no sqrt/div unit in the loop. Three steps give float
 * accuracy (~1 ulp), four give double accuracy. On x86-64 hosts this was
 * no slower than vsqrtps+vdivps in f32 and faster than vsqrtpd+vdivpd in
 * f64, whose divide unit is not pipelined. */
static inline float nb_rsqrt_f32(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  u = 0x5f375a86u - (u >> 1);
  float y;
  memcpy(&y, &u, sizeof y);
  const float h = 0.5f * x;
  for (int k = 0; k < 3; k++) y = y * (1.5f - h * y * y);
  return y;
}

static inline double nb_rsqrt_f64(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  u = 0x5fe6eb50c7b537a9ull - (u >> 1);
  double y;
  memcpy(&y, &u, sizeof y);
  const double h = 0.5 * x;
  for (int k = 0; k < 4; k++) y = y * (1.5 - h * y * y);
  return y;
}

#define NB_T float
#define NB_SFX(name) name##_f32
#define NB_RSQRT nb_rsqrt_f32
#define NB_SQRT sqrtf
#include "host_kernels_tmpl.h"
#undef NB_T
#undef NB_SFX
#undef NB_RSQRT
#undef NB_SQRT

#define NB_T double
#define NB_SFX(name) name##_f64
#define NB_RSQRT nb_rsqrt_f64
#define NB_SQRT sqrt
#include "host_kernels_tmpl.h"
#undef NB_T
#undef NB_SFX
#undef NB_RSQRT
#undef NB_SQRT

const nb_host_fns_t nb_host_f32 = {field_f32, field_serial_f32, update_f32, reduce_f32, accel_f32, unpack_f32};
const nb_host_fns_t nb_host_f64 = {field_f64, field_serial_f64, update_f64, reduce_f64, accel_f64, unpack_f64};
