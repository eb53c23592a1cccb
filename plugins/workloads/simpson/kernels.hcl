/* simpson: kernels in the portable dialect (one text for opencl-c and cuda-c).
 *
 * Build options (the same string for both languages):
 *   -DREAL=float|double     sample type
 *   -DREALV=float4|double2  16-byte vector of REAL, -DVEC=4|2 its lanes
 *   -DSIMPSON_PAIR=1        f64: the fused kernel reads pairs of double2
 *   -DACC_F64=1|0           accumulate in double (1) or in compensated float
 *                           (0, for devices without fp64; f32 data only)
 *   -DBLOCK=256             work-group size of the reducing kernels (2^k)
 *   -DCONTIG=0|1            fused: grid-stride (GPUs) or contiguous runs (CPUs)
 *
 * The weight rule below is also compiled into the host code: host_kernels.c
 * includes this file with SIMPSON_RULE_ONLY defined, so the cpu backend and
 * the source kernels cannot disagree about a weight. */

/* Weight of sample k of n along one axis, in twelfths of the spacing:
 *   n == 1      12 (a padding axis of a 1-D or 2-D field: factor 1)
 *   n == 2      6, 6 (trapezoid)
 *   n odd       Simpson: 4, 16, 8, 16, ..., 8, 16, 4 (the paper's 1, 4, 2, 4, ..., 1 thirds)
 *   n even >= 4 Simpson on samples 0..n-2 plus Cartwright's correction for
 *               the last interval, h/12 (5 y[n-1] + 8 y[n-2] - y[n-3]):
 *               4, 16, 8, ..., 8, 15, 12, 5 (what SciPy >= 1.11 does).
 * Away from the ends the weights alternate 8, 16 by parity (simpson_axis
 * below gives the range); the fused kernel uses that to skip the ends. */
HC_INLINE int simpson_w12(int k, int n) {
  int w = (k & 1) ? 16 : 8;
  if (k == 0) w = 4;
  if (n & 1) {
    if (k == n - 1) w = 4;
  } else {
    if (k == n - 1) w = 5;
    else if (k == n - 2) w = 12;
    else if (k == n - 3) w = 15;
  }
  if (n == 2) w = 6;
  if (n == 1) w = 12;
  return w;
}

#ifndef SIMPSON_RULE_ONLY

#ifndef BLOCK
#define BLOCK 256
#endif

#if ACC_F64
typedef double acc_t;
#define ACC_DECL(s) acc_t s = 0
#define ACC_ADD(s, x) s += (x)
#define ACC_VALUE(s) (s)
#else
/* Kahan summation in float: the error stays near one float rounding of the
 * total instead of growing with the number of terms. */
typedef float acc_t;
#define ACC_DECL(s) acc_t s = 0, s##_c = 0
#define ACC_ADD(s, x)                                                          \
  do {                                                                         \
    acc_t y_ = (x) - s##_c;                                                    \
    acc_t t_ = s + y_;                                                         \
    s##_c = (t_ - s) - y_;                                                     \
    s = t_;                                                                    \
  } while (0)
#define ACC_VALUE(s) (s - s##_c)
#endif

/* -DSIMPSON_PAIR=1 (f64 data): a vector is two double2, 32 bytes and 4
 * lanes, so the fused kernel's index work per byte is that of f32's float4
 * (with double2 it is twice that). */
#ifndef SIMPSON_PAIR
#define SIMPSON_PAIR 0
#endif
#if SIMPSON_PAIR
typedef struct {
  double2 lo, hi;
} simpson_pair_t;
#undef REALV
#undef VEC
#define REALV simpson_pair_t
#define VEC 4
#define V_EVEN(v) ((acc_t)(v).lo.x + (acc_t)(v).hi.x)
#define V_ODD(v) ((acc_t)(v).lo.y + (acc_t)(v).hi.y)
#define V_LANES(a, v) a[0] = (v).lo.x, a[1] = (v).lo.y, a[2] = (v).hi.x, a[3] = (v).hi.y
#elif VEC == 4
#define V_EVEN(v) ((acc_t)(v).x + (acc_t)(v).z)
#define V_ODD(v) ((acc_t)(v).y + (acc_t)(v).w)
#define V_LANES(a, v) a[0] = (v).x, a[1] = (v).y, a[2] = (v).z, a[3] = (v).w
#elif VEC == 2
#define V_EVEN(v) ((acc_t)(v).x)
#define V_ODD(v) ((acc_t)(v).y)
#define V_LANES(a, v) a[0] = (v).x, a[1] = (v).y
#else
#error "VEC must be 2 or 4"
#endif

/* Weight product of sample (i, j, k), in twelfths^3. */
HC_INLINE int simpson_w3(int i, int j, int k, int nx, int ny, int nz) {
  return simpson_w12(i, nx) * simpson_w12(j, ny) * simpson_w12(k, nz);
}

/* Where an axis's weights follow one even/odd pattern: indices lo..lo+span
 * weigh `even` or `odd` by their parity (an empty range has lo = 2^31-1,
 * span = 0, which no index reaches). n = 1: every index, 12; n = 2: both,
 * 6; n odd: 1..n-2; n even >= 4: 1..n-4 (the last three are Cartwright's). */
typedef struct {
  uint lo, span;
  int even, odd;
} simpson_axis_t;

HC_INLINE simpson_axis_t simpson_axis(int n) {
  simpson_axis_t a;
  a.lo = 1u;
  a.even = 8;
  a.odd = 16;
  if (n == 1) {
    a.lo = 0u;
    a.span = 0u;
    a.even = a.odd = 12;
  } else if (n == 2) {
    a.lo = 0u;
    a.span = 1u;
    a.even = a.odd = 6;
  } else if (n & 1) {
    a.span = (uint)(n - 3);
  } else if (n >= 5) {
    a.span = (uint)(n - 5);
  } else {
    a.lo = 0x7fffffffu;
    a.span = 0u;
  }
  return a;
}

/* The same range shrunk so that all VEC lanes k..k+VEC-1 fit in it. */
HC_INLINE simpson_axis_t simpson_axis_vec(int n) {
  simpson_axis_t a = simpson_axis(n);
  if (a.span >= (uint)(VEC - 1)) a.span -= (uint)(VEC - 1);
  else {
    a.lo = 0x7fffffffu;
    a.span = 0u;
  }
  return a;
}

/* Weighted sum of the VEC samples that start at (i, j, k). The common case,
 * every index inside its axis's even/odd range, costs three range checks,
 * parity selects and two multiplies; the rest (row ends, end rows and
 * planes, vectors that wrap into the next row) walk the lanes one by one. */
HC_INLINE acc_t simpson_vec_value(REALV v, uint i, uint j, uint k, simpson_axis_t ax, simpson_axis_t ay,
                                  simpson_axis_t az, int nx, int ny, int nz) {
  if (i - ax.lo <= ax.span && j - ay.lo <= ay.span && k - az.lo <= az.span) {
    const int wr = ((i & 1u) ? ax.odd : ax.even) * ((j & 1u) ? ay.odd : ay.even);
    const int pe = (k & 1u) ? az.odd : az.even, po = (k & 1u) ? az.even : az.odd;
    return (acc_t)wr * (V_EVEN(v) * (acc_t)pe + V_ODD(v) * (acc_t)po);
  }
  REAL a[VEC];
  V_LANES(a, v);
  acc_t t = 0;
  for (int l = 0; l < VEC; l++) {
    uint kk = k + (uint)l, jj = j, ii = i;
    while (kk >= (uint)nz) {
      kk -= (uint)nz;
      if (++jj >= (uint)ny) {
        jj = 0;
        ii++;
      }
    }
    t += (acc_t)simpson_w3((int)ii, (int)jj, (int)kk, nx, ny, nz) * (acc_t)a[l];
  }
  return t;
}

/* Tree reduction of one value per work-item; item 0 gets the sum. */
#define SIMPSON_BLOCK_REDUCE(red, lid, value)                                  \
  red[lid] = (value);                                                          \
  HC_BARRIER();                                                                \
  for (int st_ = BLOCK / 2; st_ > 0; st_ >>= 1) {                              \
    if (lid < st_) red[lid] += red[lid + st_];                                 \
    HC_BARRIER();                                                              \
  }

/* The default: one pass over the data, weights from indices, one partial
 * sum per work-group (the host adds the few thousand partials).
 * Launch: global = groups * BLOCK, local = BLOCK. Each item reads 16-byte
 * vectors, two loads in flight per step, and keeps its position as a
 * mixed-radix counter (i, j, k) advanced by its step, so there is no 64-bit
 * division in the loop. GPUs: a grid-stride loop (neighbouring items read
 * neighbouring vectors: coalesced). -DCONTIG=1 (CPU devices, which run a
 * group's items one after another): each item reads one contiguous run. */
/* CUDA: ask for at most 48 registers (1280 items of an SM's 64 Ki
 * registers; nvcc 13 for sm_90 needs 67 unbounded and fits 48 without
 * spilling), so 5 groups of 256 stay resident, 40 KiB of loads in flight. */
#ifndef SIMPSON_MIN_ITEMS
#if SIMPSON_PAIR
#define SIMPSON_MIN_ITEMS 1024 /* 64 registers: at 48 the pair spills */
#else
#define SIMPSON_MIN_ITEMS 1280
#endif
#endif
/* HC_KERNEL_OPTIONS=-DSIMPSON_MIN_ITEMS=m tries other occupancies (m = 0
 * leaves the register count to the compiler). */
#if defined(HC_CUDA) && SIMPSON_MIN_ITEMS > 0
#define SIMPSON_FUSED_BOUNDS __launch_bounds__(BLOCK, (SIMPSON_MIN_ITEMS / BLOCK > 0 ? SIMPSON_MIN_ITEMS / BLOCK : 1))
#else
#define SIMPSON_FUSED_BOUNDS
#endif

HC_KERNEL void SIMPSON_FUSED_BOUNDS simpson_fused(HC_GLOBAL const REAL *HC_RESTRICT f, HC_GLOBAL acc_t *HC_RESTRICT partial,
                             const int nx, const int ny, const int nz, const long n) {
  HC_LOCAL acc_t red[BLOCK];
  const int lid = (int)hc_local_id(0);
  const long gid = hc_global_id(0);
  const long T = hc_global_size(0);
  const long nv = n / VEC;
  HC_GLOBAL const REALV *fv = (HC_GLOBAL const REALV *)f;
  ACC_DECL(s);
#if CONTIG
  const long per = (nv + T - 1) / T, step = 1;
  const long q0 = gid * per < nv ? gid * per : nv, q1 = q0 + per < nv ? q0 + per : nv;
#else
  const long step = T, q0 = gid, q1 = nv;
#endif
  const long e0 = q0 * VEC;
  const long r0 = e0 / nz;
  uint k = (uint)(e0 % nz), j = (uint)(r0 % ny), i = (uint)(r0 / ny);
  const long stride = step * VEC;
  const long sr = stride / nz;
  const uint sk = (uint)(stride % nz), sj = (uint)(sr % ny), si = (uint)(sr / ny);
#define SIMPSON_ADVANCE()                                                      \
  k += sk;                                                                     \
  j += sj;                                                                     \
  i += si;                                                                     \
  if (k >= (uint)nz) {                                                         \
    k -= (uint)nz;                                                             \
    j++;                                                                       \
  }                                                                            \
  if (j >= (uint)ny) {                                                         \
    j -= (uint)ny;                                                             \
    i++;                                                                       \
  }
  const simpson_axis_t ax = simpson_axis(nx), ay = simpson_axis(ny), az = simpson_axis_vec(nz);
  /* Two loads in flight, written out: NVIDIA's OpenCL compiler left a
   * loop over an array of loaded vectors rolled, far below the copy
   * bandwidth, and four in flight ran no faster on CUDA
   * (tests/gpu/probe.sh simpson re-measures it). */
  long q = q0;
  for (; q + step < q1; q += 2 * step) {
    const REALV v0 = fv[q];
    const REALV v1 = fv[q + step];
    ACC_ADD(s, simpson_vec_value(v0, i, j, k, ax, ay, az, nx, ny, nz));
    SIMPSON_ADVANCE();
    ACC_ADD(s, simpson_vec_value(v1, i, j, k, ax, ay, az, nx, ny, nz));
    SIMPSON_ADVANCE();
  }
  if (q < q1) ACC_ADD(s, simpson_vec_value(fv[q], i, j, k, ax, ay, az, nx, ny, nz));
#undef SIMPSON_ADVANCE
  /* The last n % VEC samples, which do not fill a vector. */
  if (gid == 0)
    for (long e = nv * VEC; e < n; e++) {
      const long r = e / nz;
      ACC_ADD(s, (acc_t)simpson_w3((int)(r / ny), (int)(r % ny), (int)(e % nz), nx, ny, nz) * (acc_t)f[e]);
    }
  SIMPSON_BLOCK_REDUCE(red, lid, ACC_VALUE(s))
  if (lid == 0) partial[hc_group_id(0)] = red[0];
}

/* The paper's algorithm 1: products with a precomputed weight array; the
 * host sums them. Launch: global = n. */
HC_KERNEL void simpson_products_precomputed(HC_GLOBAL const REAL *HC_RESTRICT f, HC_GLOBAL REAL *HC_RESTRICT out,
                                            HC_GLOBAL const REAL *HC_RESTRICT a, const long n) {
  const long e = hc_global_id(0);
  if (e < n) out[e] = f[e] * a[e];
}

/* The paper's algorithm 2: the same products with the weights computed from
 * the indices, as its kernel does (a division chain per sample). */
HC_KERNEL void simpson_products_onthefly(HC_GLOBAL const REAL *HC_RESTRICT f, HC_GLOBAL REAL *HC_RESTRICT out,
                                         const int nx, const int ny, const int nz, const long n) {
  const long e = hc_global_id(0);
  if (e >= n) return;
  const long r = e / nz;
  out[e] = (REAL)simpson_w3((int)(r / ny), (int)(r % ny), (int)(e % nz), nx, ny, nz) * f[e];
}

/* The paper's algorithm 3: weights from indices and the whole reduction in
 * ONE work-group (a strided loop, then a tree in local memory). Faithful,
 * and slow by design: one compute unit reads everything.
 * Launch: global = local = BLOCK. */
HC_KERNEL void simpson_devicereduce(HC_GLOBAL const REAL *HC_RESTRICT f, HC_GLOBAL acc_t *HC_RESTRICT out,
                                    const int nx, const int ny, const int nz, const long n) {
  HC_LOCAL acc_t red[BLOCK];
  const int lid = (int)hc_local_id(0);
  ACC_DECL(s);
  for (long e = lid; e < n; e += BLOCK) {
    const long r = e / nz;
    ACC_ADD(s, (acc_t)simpson_w3((int)(r / ny), (int)(r % ny), (int)(e % nz), nx, ny, nz) * (acc_t)f[e]);
  }
  SIMPSON_BLOCK_REDUCE(red, lid, ACC_VALUE(s))
  if (lid == 0) out[0] = red[0];
}

#endif /* SIMPSON_RULE_ONLY */
