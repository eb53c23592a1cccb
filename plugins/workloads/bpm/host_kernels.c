/* The cpu backend's bpm kernels (host language), both precisions: the
 * shared wall helpers, the 2-D line march and the 3-D ADI, instantiated
 * once per precision. */
#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

#define R float
#define C float complex
#define RF f
#define SUF f32
#include "host_common_impl.h"
#include "host2d_impl.h"
#include "host3d_impl.h"
#undef FN
#undef RE
#undef IM
#undef R
#undef C
#undef RF
#undef SUF

#define R double
#define C double complex
#define RF
#define SUF f64
#include "host_common_impl.h"
#include "host2d_impl.h"
#include "host3d_impl.h"
#undef FN
#undef RE
#undef IM
#undef R
#undef C
#undef RF
#undef SUF

const bpm_host_kernels_t bpm_host[2] = {
    {.march2d = bpm_march2d_f32,
     .rich2d = bpm_rich2d_f32,
     .adi_slow = bpm_adi_slow_f32,
     .adi_fast = bpm_adi_fast_f32,
     .power3d = bpm_power3d_f32},
    {.march2d = bpm_march2d_f64,
     .rich2d = bpm_rich2d_f64,
     .adi_slow = bpm_adi_slow_f64,
     .adi_fast = bpm_adi_fast_f64,
     .power3d = bpm_power3d_f64},
};
