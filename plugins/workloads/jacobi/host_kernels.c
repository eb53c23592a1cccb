/* jacobi — the host-language kernels for the cpu backend: host_kernels.inc
 * instantiated per element type and right-hand-side storage. */
#include <math.h>
#include <string.h>

#include "jacobi.h"

/* The sweeps compiled for AVX-512, AVX2 and the build's baseline (SSE2 on
 * plain x86-64), chosen when the plugin loads: the two-sweep pass is
 * bound by arithmetic on few cores once it halves the memory traffic. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HOST_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HOST_CLONES
#endif


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
