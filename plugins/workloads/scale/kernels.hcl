/* scale: out[i] = factor * in[i] over the scalars of a field (a complex
 * field is scaled as 2n reals). -DREAL_T=float|double. */
HC_KERNEL void glue_scale(const long n, HC_GLOBAL const REAL_T *HC_RESTRICT in, HC_GLOBAL REAL_T *HC_RESTRICT out,
                          const REAL_T factor) {
  const long i = hc_global_id(0);
  if (i < n) out[i] = factor * in[i];
}
