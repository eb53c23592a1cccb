/* jacobi — the host-language kernels for the cpu backend: host_kernels.inc
 * instantiated per element type and right-hand-side storage. */
#include <math.h>

#include "jacobi.h"


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
    {{sweep_f32c, residual_f32c, compare_f32c, fill_f32c, rfield_f32c},
     {sweep_f32s, residual_f32s, compare_f32c, fill_f32c, rfield_f32s}},
    {{sweep_f64c, residual_f64c, compare_f64c, fill_f64c, rfield_f64c},
     {sweep_f64s, residual_f64s, compare_f64c, fill_f64c, rfield_f64s}},
};
