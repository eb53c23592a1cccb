/* nbody: AVX-512 versions of the host field sum (host_avx512.c), used when
 * the CPU has AVX-512F; the portable loop of host_kernels_tmpl.h otherwise.
 * Arguments as field_one there: bodies [0, len) of the SoA block (len a
 * multiple of 16, arrays 64-byte aligned) added to out[0..3]. */
#ifndef NBODY_HOST_AVX512_H
#define NBODY_HOST_AVX512_H

#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define NB_HAVE_AVX512 1
void nb_avx512_field_f32(float xi, float yi, float zi, const float *xs, const float *ys, const float *zs,
                         const float *qs, int64_t len, float eps2, int guard, int pot, double *out);
void nb_avx512_field_f64(double xi, double yi, double zi, const double *xs, const double *ys, const double *zs,
                         const double *qs, int64_t len, double eps2, int guard, int pot, double *out);
/* 1 when this CPU runs them. */
int nb_avx512_usable(void);
#else
#define NB_HAVE_AVX512 0
#endif

#endif
