/* abs2: out[i] = |in[i]|^2. Build options choose the types:
 *   -DIN_T=float2 -DOUT_T=float -DCPLX=1    c64  -> f32
 *   -DIN_T=double2 -DOUT_T=double -DCPLX=1  c128 -> f64
 *   -DIN_T=float -DOUT_T=float -DCPLX=0     f32  -> f32 (the square)
 * One item per element: coalesced loads and stores, memory-bound. */
HC_KERNEL void glue_abs2(const long n, HC_GLOBAL const IN_T *HC_RESTRICT in, HC_GLOBAL OUT_T *HC_RESTRICT out) {
  const long i = hc_global_id(0);
  if (i >= n) return;
#if CPLX
  const IN_T z = in[i];
  out[i] = z.x * z.x + z.y * z.y;
#else
  const IN_T x = in[i];
  out[i] = x * x;
#endif
}
