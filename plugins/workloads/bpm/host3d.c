/* The cpu backend's 3-D kernels (host language), both precisions. */
#include <complex.h>
#include <stdlib.h>

#include "host.h"

#define R float
#define C float complex
#define RF f
#define SUF f32
#include "host3d_impl.h"
#undef R
#undef C
#undef RF
#undef SUF

#define R double
#define C double complex
#define RF
#define SUF f64
#include "host3d_impl.h"
#undef R
#undef C
#undef RF
#undef SUF

const bpm_host_kernels_t bpm_host3d[2] = {
    {.adi_slow = bpm_adi_slow_f32, .adi_fast = bpm_adi_fast_f32, .power3d = bpm_power3d_f32},
    {.adi_slow = bpm_adi_slow_f64, .adi_fast = bpm_adi_fast_f64, .power3d = bpm_power3d_f64},
};
