/* The host-language kernels of the cpu backend, by precision ([0] c64,
 * [1] c128). Each matches the kernel of the same name in kernels.hcl,
 * argument for argument. */
#ifndef BPM_HOST_H
#define BPM_HOST_H

#include <hc/hc.h>

typedef struct {
  hc_host_kernel_fn march2d, rich2d;             /* 2-D line march */
  hc_host_kernel_fn adi_slow, adi_fast, power3d; /* 3-D ADI */
} bpm_host_kernels_t;

extern const bpm_host_kernels_t bpm_host[2]; /* host_kernels.c */

#endif
