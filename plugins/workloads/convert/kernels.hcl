/* convert: element type conversion. Build options:
 *   -DIN_R=float|double -DIN_CPLX=0|1 -DOUT_R=float|double -DOUT_CPLX=0|1
 * Complex fields are interleaved (re, im) scalars. real -> complex sets the
 * imaginary part to 0; complex -> real keeps the part `part` (0 real,
 * 1 imaginary), which the workload allows only when asked for. */
HC_KERNEL void glue_convert(const long n, HC_GLOBAL const IN_R *HC_RESTRICT in, HC_GLOBAL OUT_R *HC_RESTRICT out,
                            const int part) {
  const long i = hc_global_id(0);
  if (i >= n) return;
#if IN_CPLX && OUT_CPLX
  out[2 * i] = (OUT_R)in[2 * i];
  out[2 * i + 1] = (OUT_R)in[2 * i + 1];
#elif IN_CPLX
  out[i] = (OUT_R)in[2 * i + part];
#elif OUT_CPLX
  out[2 * i] = (OUT_R)in[i];
  out[2 * i + 1] = (OUT_R)0;
#else
  out[i] = (OUT_R)in[i];
#endif
}
