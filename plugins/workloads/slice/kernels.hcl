/* slice: copies the plane at `index` along one axis. The field is seen as
 * [outer][n_axis][inner] 32-bit words (so one kernel serves every dtype):
 * out[o][w] = in[o][index][w]. One item per output word, so stores are
 * contiguous and so are loads whenever the plane has more than one word per
 * row (every axis but the last). */
HC_KERNEL void glue_slice(const long total, HC_GLOBAL const uint *HC_RESTRICT in, HC_GLOBAL uint *HC_RESTRICT out,
                          const long inner, const long n_axis, const long index) {
  const long i = hc_global_id(0);
  if (i >= total) return;
  const long o = i / inner;
  const long w = i - o * inner;
  out[i] = in[(o * n_axis + index) * inner + w];
}
