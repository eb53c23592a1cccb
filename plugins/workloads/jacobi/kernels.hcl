/* jacobi — portable kernels (OpenCL C and CUDA C through the hc dialect).
 *
 * Build options select the program:
 *   -DREAL=float|double  element type
 *   -DDIM=2|3            grid dimension
 *   -DF_STORED=0|1       f read from a field (12 B/update in f32) or made
 *                        from per-axis tables (8 B/update)
 *   -DBX -DBY -DBZ       tile of the tiled and marching sweeps (BX fastest)
 *   -DSWEEP=1|2|3        only the naive, tiled or marching sweep (the tile
 *                        of one must not limit the others); default all
 *   -DDEPTH=1..4         planes the marching sweep loads ahead
 *
 * Internal axes: 0 slowest ... 2 fastest (contiguous); a 2-D grid has
 * n0 = 1 and uses axes 1 and 2. Launch axis 0 is the fastest (axis 2 of the
 * array). Only interior points are written: the boundary keeps its values.
 *
 * The Jacobi update with per-axis weights c_d = w_d / (2 Σ w), w_d = 1/h_d²,
 * and cf = 1 / (2 Σ w):
 *   u'[c] = Σ_d c_d (u[c - s_d] + u[c + s_d]) + cf f[c]
 * which is the paper's (Σ neighbours + h² f) / 4 (or / 6) when h is equal.
 *
 * Every sweep kernel takes the same arguments (the host side launches them
 * through one helper):
 *   in, out, f, tab, n0, n1, n2, c0, c1, c2, cf, chunk
 * (chunk: planes per work-group of the marching kernel). */
#ifndef REAL
#define REAL float
#endif
#ifndef DIM
#define DIM 2
#endif
#ifndef F_STORED
#define F_STORED 0
#endif
#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef BZ
#define BZ 1
#endif

/* Reductions accumulate in double where the device has it. */
#ifdef HC_HAS_FP64
typedef double acc_t;
#else
typedef float acc_t;
#endif

/* The right-hand side at (i, j, k), linear index c. Computed: the built-in
 * f is a product A g0(x0) g1(x1) g2(x2) whose factors are in tab, A folded
 * into the first: tab = [A g0 | g1 | g2] (lengths n0, n1, n2). */
#if F_STORED
#define RHS(c, i, j, k) (f[(c)])
#else
#define RHS(c, i, j, k) (tab[(i)] * tab[n0 + (j)] * tab[n0 + n1 + (k)])
#endif

#define SWEEP_ARGS                                                            \
  HC_GLOBAL const REAL *HC_RESTRICT in, HC_GLOBAL REAL *HC_RESTRICT out,      \
      HC_GLOBAL const REAL *HC_RESTRICT f,                                    \
      HC_GLOBAL const REAL *HC_RESTRICT tab, const int n0, const int n1,      \
      const int n2, const REAL c0, const REAL c1, const REAL c2,              \
      const REAL cf, const int chunk

#ifndef SWEEP
#define SWEEP 0
#endif

#if SWEEP == 0 || SWEEP == 1
/* naive: one work-item per interior point, every operand from global
 * memory (the paper's "global memory only" kernel). */
HC_KERNEL void jacobi_naive(SWEEP_ARGS) {
  const int k = (int)hc_global_id(0) + 1;
  const int j = (int)hc_global_id(1) + 1;
#if DIM == 2
  if (k >= n2 - 1 || j >= n1 - 1) return;
  const long c = (long)j * n2 + k;
  out[c] = c2 * (in[c - 1] + in[c + 1]) + c1 * (in[c - n2] + in[c + n2]) + cf * RHS(c, 0, j, k);
#else
  const int i = (int)hc_global_id(2) + 1;
  if (k >= n2 - 1 || j >= n1 - 1 || i >= n0 - 1) return;
  const long s1 = n2, s0 = (long)n1 * n2;
  const long c = (long)i * s0 + (long)j * s1 + k;
  out[c] = c2 * (in[c - 1] + in[c + 1]) + c1 * (in[c - s1] + in[c + s1]) + c0 * (in[c - s0] + in[c + s0]) +
           cf * RHS(c, i, j, k);
#endif
}

#endif

#if SWEEP == 0 || SWEEP == 2
/* tiled: the paper's shared-memory kernel. A work-group of BX x BY (x BZ)
 * items loads its tile plus a one-point halo into local memory, then
 * computes from there. Items just outside the interior (on the boundary)
 * load their own value, which is the halo of the last interior item; edge
 * items load the halo beyond the tile. Needs BX, BY (, BZ) >= 2. */
HC_KERNEL void jacobi_tiled(SWEEP_ARGS) {
  const int tx = (int)hc_local_id(0), ty = (int)hc_local_id(1);
  const int k = (int)hc_group_id(0) * BX + tx + 1;
  const int j = (int)hc_group_id(1) * BY + ty + 1;
#if DIM == 2
  HC_LOCAL REAL tile[BY + 2][BX + 2];
  const int inside = k <= n2 - 1 && j <= n1 - 1;
  const int active = k < n2 - 1 && j < n1 - 1;
  const long c = (long)j * n2 + k;
  if (inside) {
    tile[ty + 1][tx + 1] = in[c];
    if (tx == 0) tile[ty + 1][0] = in[c - 1];
    else if (tx == BX - 1 && k < n2 - 1) tile[ty + 1][BX + 1] = in[c + 1];
    if (ty == 0) tile[0][tx + 1] = in[c - n2];
    else if (ty == BY - 1 && j < n1 - 1) tile[BY + 1][tx + 1] = in[c + n2];
  }
  HC_BARRIER();
  if (active)
    out[c] = c2 * (tile[ty + 1][tx] + tile[ty + 1][tx + 2]) + c1 * (tile[ty][tx + 1] + tile[ty + 2][tx + 1]) +
             cf * RHS(c, 0, j, k);
#else
  HC_LOCAL REAL tile[BZ + 2][BY + 2][BX + 2];
  const int tz = (int)hc_local_id(2);
  const int i = (int)hc_group_id(2) * BZ + tz + 1;
  const int inside = k <= n2 - 1 && j <= n1 - 1 && i <= n0 - 1;
  const int active = k < n2 - 1 && j < n1 - 1 && i < n0 - 1;
  const long s1 = n2, s0 = (long)n1 * n2;
  const long c = (long)i * s0 + (long)j * s1 + k;
  if (inside) {
    tile[tz + 1][ty + 1][tx + 1] = in[c];
    if (tx == 0) tile[tz + 1][ty + 1][0] = in[c - 1];
    else if (tx == BX - 1 && k < n2 - 1) tile[tz + 1][ty + 1][BX + 1] = in[c + 1];
    if (ty == 0) tile[tz + 1][0][tx + 1] = in[c - s1];
    else if (ty == BY - 1 && j < n1 - 1) tile[tz + 1][BY + 1][tx + 1] = in[c + s1];
    if (tz == 0) tile[0][ty + 1][tx + 1] = in[c - s0];
    else if (tz == BZ - 1 && i < n0 - 1) tile[BZ + 1][ty + 1][tx + 1] = in[c + s0];
  }
  HC_BARRIER();
  if (active)
    out[c] = c2 * (tile[tz + 1][ty + 1][tx] + tile[tz + 1][ty + 1][tx + 2]) +
             c1 * (tile[tz + 1][ty][tx + 1] + tile[tz + 1][ty + 2][tx + 1]) +
             c0 * (tile[tz][ty + 1][tx + 1] + tile[tz + 2][ty + 1][tx + 1]) + cf * RHS(c, i, j, k);
#endif
}

#endif

#if SWEEP == 0 || SWEEP == 3
/* march (3-D, tiled with a 2-D block): a BX x BY tile of the contiguous
 * plane in local memory, marching along the slowest axis over `chunk`
 * planes; the planes below and above live in registers, so every value is
 * read from global memory once per sweep (halos come from cache). The
 * tile is double-buffered (one barrier per plane), and each item keeps
 * DEPTH planes of its column in flight ahead of use (a register queue), so
 * that enough loads are outstanding to saturate memory. */
#ifndef DEPTH
#define DEPTH 2
#endif
/* The group size is fixed; on CUDA ask for full occupancy in f32 (32
 * registers, no spills at any DEPTH on sm_90), half in f64. */
#define MARCH_BLOCKS_ ((sizeof(REAL) == 4 ? 2048 : 1024) / (BX * BY))
#if defined(HC_CUDA) && DIM == 3
#define MARCH_BOUNDS __launch_bounds__(BX * BY, MARCH_BLOCKS_ > 32 ? 32 : MARCH_BLOCKS_)
#elif defined(HC_OPENCL) && DIM == 3
#define MARCH_BOUNDS __attribute__((reqd_work_group_size(BX, BY, 1)))
#else
#define MARCH_BOUNDS
#endif
HC_KERNEL void MARCH_BOUNDS jacobi_march(SWEEP_ARGS) {
#if DIM == 3
  HC_LOCAL REAL tile[2][BY + 2][BX + 2];
  const int tx = (int)hc_local_id(0), ty = (int)hc_local_id(1);
  const int k = (int)hc_group_id(0) * BX + tx + 1;
  const int j = (int)hc_group_id(1) * BY + ty + 1;
  const int i0 = (int)hc_group_id(2) * chunk + 1;
  const int i1 = hc_min(i0 + chunk, n0 - 1);
  const int inside = k <= n2 - 1 && j <= n1 - 1;
  const int active = k < n2 - 1 && j < n1 - 1;
  const long s0 = (long)n1 * n2;
  /* The halo this item loads besides its own value: x (left/right) and y
   * (top/bottom), as offsets; 0 for none. */
  const int hx = !inside ? 0 : tx == 0 ? -1 : (tx == BX - 1 && k < n2 - 1) ? 1 : 0;
  const int hy = !inside ? 0 : ty == 0 ? -n2 : (ty == BY - 1 && j < n1 - 1) ? n2 : 0;
  const int hyr = hy < 0 ? 0 : BY + 1; /* tile row of the y halo */
  const int hxc = hx < 0 ? 0 : BX + 1; /* tile column of the x halo */
#if F_STORED
  const REAL fjk = cf;
#else
  const REAL fjk = inside ? cf * tab[n0 + j] * tab[n0 + n1 + k] : (REAL)0;
#endif
  const long c0i = (long)i0 * s0 + (long)j * n2 + k;
  HC_GLOBAL const REAL *HC_RESTRICT pin = in + (inside ? c0i : 0);
  HC_GLOBAL REAL *HC_RESTRICT pout = out + (inside ? c0i : 0);
#if F_STORED
  HC_GLOBAL const REAL *HC_RESTRICT pf = f + (inside ? c0i : 0);
#endif
  /* Column queue: below (i-1), cur (i), q1 (i+1) .. qDEPTH (i+DEPTH). */
  REAL below = 0, cur = 0, q1 = 0, vx = 0, vy = 0;
#if DEPTH >= 2
  REAL q2 = 0;
#endif
#if DEPTH >= 3
  REAL q3 = 0;
#endif
#if DEPTH >= 4
  REAL q4 = 0;
#endif
  if (inside && i0 < i1) {
    below = pin[-s0];
    cur = pin[0];
    q1 = pin[s0];
#if DEPTH >= 2
    if (i0 + 2 <= i1) q2 = pin[2 * s0];
#endif
#if DEPTH >= 3
    if (i0 + 3 <= i1) q3 = pin[3 * s0];
#endif
#if DEPTH >= 4
    if (i0 + 4 <= i1) q4 = pin[4 * s0];
#endif
    if (hx) vx = pin[hx];
    if (hy) vy = pin[hy];
  }
  int b = 0;
  for (int i = i0; i < i1; i++) {
    tile[b][ty + 1][tx + 1] = cur;
    if (hx) tile[b][ty + 1][hxc] = vx;
    if (hy) tile[b][hyr][tx + 1] = vy;
    /* Loads for later planes, issued before this plane's barrier. */
    REAL nq = 0, nx = 0, ny = 0;
    if (inside) {
      if (i + 1 + DEPTH <= i1) nq = pin[(1 + DEPTH) * s0];
      if (i + 1 < i1) {
        if (hx) nx = pin[s0 + hx];
        if (hy) ny = pin[s0 + hy];
      }
    }
    HC_BARRIER();
    if (active) {
#if F_STORED
      const REAL rhs = pf[0];
#else
      const REAL rhs = tab[i];
#endif
      pout[0] = c2 * (tile[b][ty + 1][tx] + tile[b][ty + 1][tx + 2]) +
                c1 * (tile[b][ty][tx + 1] + tile[b][ty + 2][tx + 1]) + c0 * (below + q1) + fjk * rhs;
    }
    below = cur;
    cur = q1;
#if DEPTH == 1
    q1 = nq;
#elif DEPTH == 2
    q1 = q2;
    q2 = nq;
#elif DEPTH == 3
    q1 = q2;
    q2 = q3;
    q3 = nq;
#else
    q1 = q2;
    q2 = q3;
    q3 = q4;
    q4 = nq;
#endif
    vx = nx;
    vy = ny;
    b ^= 1;
    pin += s0;
    pout += s0;
#if F_STORED
    pf += s0;
#endif
  }
#endif
}

#endif

/* ---------------------------------------------------------------- norms */

#define RED_X 64
#define RED_Y 4
#define RED_N (RED_X * RED_Y)

/* Interior rows (all but the fastest axis) as one index r: rows of length
 * n2 - 2 at (i, j) = (r / (n1 - 2) + 1, r % (n1 - 2) + 1) in 3-D. */
#if DIM == 3
#define ROWS(n0, n1) ((long)((n0)-2) * ((n1)-2))
#define ROW_I(r, n1) ((int)((r) / ((n1)-2)) + 1)
#else
#define ROWS(n0, n1) ((long)((n1)-2))
#define ROW_I(r, n1) 0
#endif
#define ROW_J(r, n1) ((int)((r) % ((n1)-2)) + 1)

/* Local-memory tree sum of RED_N values per array, ending in a barrier. */
#define TREE(t, BODY)                                                         \
  for (int s_ = RED_N / 2; s_ > 0; s_ >>= 1) {                                \
    HC_BARRIER();                                                             \
    if ((t) < s_) { BODY }                                                    \
  }

/* The residual r = f + Δ_h u at an interior point, in acc_t. */
#if DIM == 3
#define LAPLACE(u, c, s1, s0)                                                 \
  (w2 * ((acc_t)u[(c)-1] + (acc_t)u[(c) + 1] - 2 * (acc_t)u[(c)]) +           \
   w1 * ((acc_t)u[(c) - (s1)] + (acc_t)u[(c) + (s1)] - 2 * (acc_t)u[(c)]) +   \
   w0 * ((acc_t)u[(c) - (s0)] + (acc_t)u[(c) + (s0)] - 2 * (acc_t)u[(c)]))
#else
#define LAPLACE(u, c, s1, s0)                                                 \
  (w2 * ((acc_t)u[(c)-1] + (acc_t)u[(c) + 1] - 2 * (acc_t)u[(c)]) +           \
   w1 * ((acc_t)u[(c) - (s1)] + (acc_t)u[(c) + (s1)] - 2 * (acc_t)u[(c)]))
#endif

/* Per work-group partial sums of r² and f² over the interior (the relative
 * residual ||f + Δu|| / ||f||); the host adds the partials. Launch: local
 * (RED_X, RED_Y), global (RED_X-multiple >= n2 - 2, any RED_Y-multiple):
 * items stride over the rows. */
HC_KERNEL void residual_norms(HC_GLOBAL const REAL *HC_RESTRICT u, HC_GLOBAL const REAL *HC_RESTRICT f,
                              HC_GLOBAL const REAL *HC_RESTRICT tab, const int n0, const int n1, const int n2,
                              const REAL w0, const REAL w1, const REAL w2, HC_GLOBAL acc_t *HC_RESTRICT partial) {
  HC_LOCAL acc_t sr[RED_N];
  HC_LOCAL acc_t sf[RED_N];
  const int t = (int)(hc_local_id(1) * RED_X + hc_local_id(0));
  const int k = (int)hc_global_id(0) + 1;
  const long s1 = n2, s0 = DIM == 3 ? (long)n1 * n2 : 0;
  const long rows = ROWS(n0, n1);
  acc_t ar = 0, af = 0;
  if (k < n2 - 1)
    for (long r = hc_global_id(1); r < rows; r += hc_global_size(1)) {
      const int i = ROW_I(r, n1), j = ROW_J(r, n1);
      const long c = (long)i * s0 + (long)j * s1 + k;
      const acc_t fv = (acc_t)RHS(c, i, j, k);
      const acc_t rv = fv + LAPLACE(u, c, s1, s0);
      ar += rv * rv;
      af += fv * fv;
    }
  sr[t] = ar;
  sf[t] = af;
  TREE(t, sr[t] += sr[t + s_]; sf[t] += sf[t + s_];)
  if (t == 0) {
    const long g = hc_group_id(1) * hc_num_groups(0) + hc_group_id(0);
    partial[2 * g] = sr[0];
    partial[2 * g + 1] = sf[0];
  }
}

/* The residual as a field (interior points; the boundary is left alone). */
HC_KERNEL void residual_field(HC_GLOBAL const REAL *HC_RESTRICT u, HC_GLOBAL const REAL *HC_RESTRICT f,
                              HC_GLOBAL const REAL *HC_RESTRICT tab, const int n0, const int n1, const int n2,
                              const REAL w0, const REAL w1, const REAL w2, HC_GLOBAL REAL *HC_RESTRICT r) {
  const int k = (int)hc_global_id(0) + 1;
  const long row = hc_global_id(1);
  if (k >= n2 - 1 || row >= ROWS(n0, n1)) return;
  const int i = ROW_I(row, n1), j = ROW_J(row, n1);
  const long s1 = n2, s0 = DIM == 3 ? (long)n1 * n2 : 0;
  const long c = (long)i * s0 + (long)j * s1 + k;
  r[c] = (REAL)((acc_t)RHS(c, i, j, k) + LAPLACE(u, c, s1, s0));
}

/* Comparison with a separable reference e = s1 Πa + s2 Πb (tab holds
 * [a0 | a1 | a2 | b0 | b1 | b2]): per work-group Σ(u - e)², max |u - e|,
 * Σ u·Πa and Σ (Πa)², over the interior. Same launch as residual_norms. */
HC_KERNEL void compare_norms(HC_GLOBAL const REAL *HC_RESTRICT u, HC_GLOBAL const REAL *HC_RESTRICT tab,
                             const int n0, const int n1, const int n2, const REAL s1v, const REAL s2v,
                             HC_GLOBAL acc_t *HC_RESTRICT partial) {
  HC_LOCAL acc_t se[RED_N];
  HC_LOCAL acc_t sm[RED_N];
  HC_LOCAL acc_t sp[RED_N];
  HC_LOCAL acc_t sq[RED_N];
  const int t = (int)(hc_local_id(1) * RED_X + hc_local_id(0));
  const int k = (int)hc_global_id(0) + 1;
  const long s1 = n2, s0 = DIM == 3 ? (long)n1 * n2 : 0;
  const long rows = ROWS(n0, n1);
  const int nb = n0 + n1 + n2;
  acc_t ae = 0, am = 0, ap = 0, aq = 0;
  if (k < n2 - 1)
    for (long r = hc_global_id(1); r < rows; r += hc_global_size(1)) {
      const int i = ROW_I(r, n1), j = ROW_J(r, n1);
      const long c = (long)i * s0 + (long)j * s1 + k;
      const acc_t p = (acc_t)tab[i] * tab[n0 + j] * tab[n0 + n1 + k];
      const acc_t q = (acc_t)tab[nb + i] * tab[nb + n0 + j] * tab[nb + n0 + n1 + k];
      const acc_t uv = u[c];
      const acc_t d = uv - ((acc_t)s1v * p + (acc_t)s2v * q);
      ae += d * d;
      am = hc_fmax(am, d < 0 ? -d : d);
      ap += uv * p;
      aq += p * p;
    }
  se[t] = ae;
  sm[t] = am;
  sp[t] = ap;
  sq[t] = aq;
  TREE(t, se[t] += se[t + s_]; sm[t] = hc_fmax(sm[t], sm[t + s_]); sp[t] += sp[t + s_]; sq[t] += sq[t + s_];)
  if (t == 0) {
    const long g = hc_group_id(1) * hc_num_groups(0) + hc_group_id(0);
    partial[4 * g] = se[0];
    partial[4 * g + 1] = sm[0];
    partial[4 * g + 2] = sp[0];
    partial[4 * g + 3] = sq[0];
  }
}

/* out = s Πa over the whole array (tab = [a0 | a1 | a2]): the built-in f
 * when it is stored, and the eigenvector start. Launch over (n2, n1[, n0]). */
HC_KERNEL void fill_product(HC_GLOBAL REAL *HC_RESTRICT out, HC_GLOBAL const REAL *HC_RESTRICT tab, const int n0,
                            const int n1, const int n2, const REAL s) {
  const int k = (int)hc_global_id(0), j = (int)hc_global_id(1);
#if DIM == 3
  const int i = (int)hc_global_id(2);
#else
  const int i = 0;
#endif
  if (k >= n2 || j >= n1 || i >= n0) return;
  out[((long)i * n1 + j) * n2 + k] = s * tab[i] * tab[n0 + j] * tab[n0 + n1 + k];
}
