/* The cpu backend's 2-D kernels (host language), both precisions. */
#include <complex.h>
#include <string.h>

#include "host.h"

#define R float
#define C float complex
#define RF f
#define SUF f32
#include "host2d_impl.h"
#undef R
#undef C
#undef RF
#undef SUF

#define R double
#define C double complex
#define RF
#define SUF f64
#include "host2d_impl.h"
#undef R
#undef C
#undef RF
#undef SUF

const bpm_host_kernels_t bpm_host2d[2] = {
    {.march2d = bpm_march2d_f32, .rich2d = bpm_rich2d_f32},
    {.march2d = bpm_march2d_f64, .rich2d = bpm_rich2d_f64},
};
