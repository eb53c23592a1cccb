/* reduce: sum, min, max or L2 norm of n scalars, accumulated in double.
 * Build options: -DELEM_T=float|double -DOP=0 (sum) | 1 (min) | 2 (max) |
 * 3 (l2: sqrt of the sum of squares; a complex field is reduced as its 2n
 * interleaved scalars, since |z|^2 = re^2 + im^2) -DBLOCK=<group size, a
 * power of two>.
 *
 * Two passes, both on the device: every group strides over the data with
 * one double accumulator per item, reduces its items in local memory and
 * writes one partial; then one group reduces the partials and writes the
 * rank-0 result, so the value stays on the device for the next stage. */
#if OP == 3
#define VALUE(v) ((double)(v) * (double)(v))
#else
#define VALUE(v) ((double)(v))
#endif
/* min and max keep a NaN (fmin/fmax would drop it and report a finite
 * extreme of data that has none). */
#if OP == 1
#define COMBINE(a, b) (isnan(a) ? (a) : isnan(b) ? (b) : hc_fmin((a), (b)))
#elif OP == 2
#define COMBINE(a, b) (isnan(a) ? (a) : isnan(b) ? (b) : hc_fmax((a), (b)))
#else
#define COMBINE(a, b) ((a) + (b))
#endif

/* Tree reduction of s[0..BLOCK) into s[0]. */
#define GROUP_REDUCE(s, lid)                                                   \
  for (long w = BLOCK / 2; w > 0; w >>= 1) {                                   \
    if ((lid) < w) s[lid] = COMBINE(s[lid], s[(lid) + w]);                     \
    HC_BARRIER();                                                              \
  }

/* chunk == 0: every item strides over the data by the grid size, so
 * neighbouring items read neighbouring elements (coalesced on GPUs).
 * chunk > 0: every item reads its own contiguous chunk (CPU-like OpenCL
 * devices run a group's items one after another: striding would touch a new
 * cache line at every element). */
HC_KERNEL void glue_reduce_partial(const long n, HC_GLOBAL const ELEM_T *HC_RESTRICT x,
                                   HC_GLOBAL double *HC_RESTRICT partial, const int op, const long chunk) {
  HC_LOCAL double s[BLOCK];
  const long lid = hc_local_id(0);
  /* min and max start from x[0], which every group may read (n >= 1 for
   * them): no infinity literal needed in either dialect. */
#if OP == 1 || OP == 2
  double acc = VALUE(x[0]);
#else
  double acc = 0.0;
#endif
  if (chunk > 0) {
    const long lo = hc_global_id(0) * chunk, hi = lo + chunk < n ? lo + chunk : n;
    for (long i = lo; i < hi; i++) acc = COMBINE(acc, VALUE(x[i]));
  } else {
    const long stride = hc_global_size(0);
    for (long i = hc_global_id(0); i < n; i += stride) acc = COMBINE(acc, VALUE(x[i]));
  }
  s[lid] = acc;
  HC_BARRIER();
  GROUP_REDUCE(s, lid)
  if (lid == 0) partial[hc_group_id(0)] = s[0];
}

HC_KERNEL void glue_reduce_final(const long m, HC_GLOBAL const double *HC_RESTRICT partial,
                                 HC_GLOBAL double *HC_RESTRICT out, const int op) {
  HC_LOCAL double s[BLOCK];
  const long lid = hc_local_id(0);
#if OP == 1 || OP == 2
  double acc = partial[0];
#else
  double acc = 0.0;
#endif
  for (long i = lid; i < m; i += BLOCK) acc = COMBINE(acc, partial[i]);
  s[lid] = acc;
  HC_BARRIER();
  GROUP_REDUCE(s, lid)
#if OP == 3
  if (lid == 0) out[0] = sqrt(s[0]);
#else
  if (lid == 0) out[0] = s[0];
#endif
}
