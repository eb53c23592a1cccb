/* jacobi — portable kernels (OpenCL C and CUDA C through the hc dialect).
 *
 * Build options select the program:
 *   -DREAL=float|double  element type
 *   -DDIM=2|3            grid dimension
 *   -DF_STORED=0|1       f read from a field (12 B/update in f32) or made
 *                        from per-axis tables (8 B/update)
 *   -DBX -DBY -DBZ       tile of the tiled and marching sweeps (JACOBI_BX fastest)
 *   -DSWEEP=1|2|3        only the naive, tiled or marching sweep (the tile
 *                        of one must not limit the others); default all
 *   -DDEPTH=1..4         planes the marching sweep loads ahead
 *   -DROWS=1..8          rows (y) of each work-item of the marching sweep
 *   -DMARCH_UNROLL=0|1   the marching sweep's plane loop unrolled (default: at JACOBI_ROWS=4)
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
 *   in, out, f, tab, n0, n1, n2, c0, c1, c2, cf, chunk, r0, r1
 * (chunk: planes per work-group of the marching kernel). A sweep updates
 * the rows [r0, r1) of the slowest axis (3-D: i, 2-D: j), [1, n - 1) for
 * all of them; the launch covers r1 - r0 rows on that axis. A split run
 * sweeps the rows next to its neighbours first and the rest while its halo
 * exchange runs. */
#ifndef JACOBI_REAL
#define JACOBI_REAL float
#endif
#ifndef JACOBI_DIM
#define JACOBI_DIM 2
#endif
#ifndef JACOBI_F_STORED
#define JACOBI_F_STORED 0
#endif
#ifndef JACOBI_BX
#define JACOBI_BX 32
#endif
#ifndef JACOBI_BY
#define JACOBI_BY 8
#endif
#ifndef JACOBI_BZ
#define JACOBI_BZ 1
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
#if JACOBI_F_STORED
#define JACOBI_RHS(c, i, j, k) (f[(c)])
#else
#define JACOBI_RHS(c, i, j, k) (tab[(i)] * tab[n0 + (j)] * tab[n0 + n1 + (k)])
#endif

#define JACOBI_SWEEP_ARGS                                                            \
  HC_GLOBAL const JACOBI_REAL *HC_RESTRICT in, HC_GLOBAL JACOBI_REAL *HC_RESTRICT out,      \
      HC_GLOBAL const JACOBI_REAL *HC_RESTRICT f,                                    \
      HC_GLOBAL const JACOBI_REAL *HC_RESTRICT tab, const int n0, const int n1,      \
      const int n2, const JACOBI_REAL c0, const JACOBI_REAL c1, const JACOBI_REAL c2,              \
      const JACOBI_REAL cf, const int chunk, const int r0, const int r1

#ifndef JACOBI_SWEEP
#define JACOBI_SWEEP 0
#endif

#if JACOBI_SWEEP == 0 || JACOBI_SWEEP == 1
/* naive: one work-item per interior point, every operand from global
 * memory (the paper's "global memory only" kernel). */
HC_KERNEL void jacobi_naive(JACOBI_SWEEP_ARGS) {
  const int k = (int)hc_global_id(0) + 1;
#if JACOBI_DIM == 2
  const int j = (int)hc_global_id(1) + r0;
  if (k >= n2 - 1 || j >= r1) return;
  const long c = (long)j * n2 + k;
  out[c] = c2 * (in[c - 1] + in[c + 1]) + c1 * (in[c - n2] + in[c + n2]) + cf * JACOBI_RHS(c, 0, j, k);
#else
  const int j = (int)hc_global_id(1) + 1;
  const int i = (int)hc_global_id(2) + r0;
  if (k >= n2 - 1 || j >= n1 - 1 || i >= r1) return;
  const long s1 = n2, s0 = (long)n1 * n2;
  const long c = (long)i * s0 + (long)j * s1 + k;
  out[c] = c2 * (in[c - 1] + in[c + 1]) + c1 * (in[c - s1] + in[c + s1]) + c0 * (in[c - s0] + in[c + s0]) +
           cf * JACOBI_RHS(c, i, j, k);
#endif
}

#endif

#if JACOBI_SWEEP == 0 || JACOBI_SWEEP == 2
/* tiled: the paper's shared-memory kernel. A work-group of JACOBI_BX x JACOBI_BY (x JACOBI_BZ)
 * items loads its tile plus a one-point halo into local memory, then
 * computes from there. Items just outside the interior (on the boundary)
 * load their own value, which is the halo of the last interior item; edge
 * items load the halo beyond the tile. Needs JACOBI_BX, JACOBI_BY (, JACOBI_BZ) >= 2. */
HC_KERNEL void jacobi_tiled(JACOBI_SWEEP_ARGS) {
  const int tx = (int)hc_local_id(0), ty = (int)hc_local_id(1);
  const int k = (int)hc_group_id(0) * JACOBI_BX + tx + 1;
#if JACOBI_DIM == 2
  const int j = (int)hc_group_id(1) * JACOBI_BY + ty + r0;
  HC_LOCAL JACOBI_REAL tile[JACOBI_BY + 2][JACOBI_BX + 2];
  const int inside = k <= n2 - 1 && j <= r1;
  const int active = k < n2 - 1 && j < r1;
  const long c = (long)j * n2 + k;
  if (inside) {
    tile[ty + 1][tx + 1] = in[c];
    if (tx == 0) tile[ty + 1][0] = in[c - 1];
    else if (tx == JACOBI_BX - 1 && k < n2 - 1) tile[ty + 1][JACOBI_BX + 1] = in[c + 1];
    if (ty == 0) tile[0][tx + 1] = in[c - n2];
    else if (ty == JACOBI_BY - 1 && j < r1) tile[JACOBI_BY + 1][tx + 1] = in[c + n2];
  }
  HC_BARRIER();
  if (active)
    out[c] = c2 * (tile[ty + 1][tx] + tile[ty + 1][tx + 2]) + c1 * (tile[ty][tx + 1] + tile[ty + 2][tx + 1]) +
             cf * JACOBI_RHS(c, 0, j, k);
#else
  HC_LOCAL JACOBI_REAL tile[JACOBI_BZ + 2][JACOBI_BY + 2][JACOBI_BX + 2];
  const int j = (int)hc_group_id(1) * JACOBI_BY + ty + 1;
  const int tz = (int)hc_local_id(2);
  const int i = (int)hc_group_id(2) * JACOBI_BZ + tz + r0;
  const int inside = k <= n2 - 1 && j <= n1 - 1 && i <= r1;
  const int active = k < n2 - 1 && j < n1 - 1 && i < r1;
  const long s1 = n2, s0 = (long)n1 * n2;
  const long c = (long)i * s0 + (long)j * s1 + k;
  if (inside) {
    tile[tz + 1][ty + 1][tx + 1] = in[c];
    if (tx == 0) tile[tz + 1][ty + 1][0] = in[c - 1];
    else if (tx == JACOBI_BX - 1 && k < n2 - 1) tile[tz + 1][ty + 1][JACOBI_BX + 1] = in[c + 1];
    if (ty == 0) tile[tz + 1][0][tx + 1] = in[c - s1];
    else if (ty == JACOBI_BY - 1 && j < n1 - 1) tile[tz + 1][JACOBI_BY + 1][tx + 1] = in[c + s1];
    if (tz == 0) tile[0][ty + 1][tx + 1] = in[c - s0];
    else if (tz == JACOBI_BZ - 1 && i < r1) tile[JACOBI_BZ + 1][ty + 1][tx + 1] = in[c + s0];
  }
  HC_BARRIER();
  if (active)
    out[c] = c2 * (tile[tz + 1][ty + 1][tx] + tile[tz + 1][ty + 1][tx + 2]) +
             c1 * (tile[tz + 1][ty][tx + 1] + tile[tz + 1][ty + 2][tx + 1]) +
             c0 * (tile[tz][ty + 1][tx + 1] + tile[tz + 2][ty + 1][tx + 1]) + cf * JACOBI_RHS(c, i, j, k);
#endif
}

#endif

#if JACOBI_SWEEP == 0 || JACOBI_SWEEP == 3
/* march (3-D, 2-D block): a work-group of JACOBI_BX x JACOBI_BY items marches a tile of
 * JACOBI_BX columns and JACOBI_BY*JACOBI_ROWS rows of the contiguous plane along the slowest
 * axis, over `chunk` planes. Each item owns one column and JACOBI_ROWS consecutive
 * rows of it (register blocking) and holds planes i-1 .. i+JACOBI_DEPTH of them in
 * registers: the z-neighbours and the y-neighbours inside its strip come
 * from there, and JACOBI_DEPTH planes of loads are in flight ahead of use, so every
 * value is read from global memory once per sweep. The x-neighbours, and
 * the y-neighbours of the strip's first and last rows, come from the tile in
 * local memory, double-buffered so that a plane costs one barrier. Per
 * point: one global load, one local store, two local loads, the update and
 * its store; per JACOBI_ROWS points: two more local loads, a barrier, and the
 * tile's halo (two rows, two columns), spread over the group's items.
 *
 * The x-neighbours go through local memory rather than warp shuffles:
 * shuffles need sub-group extensions in OpenCL and a fix-up load at every
 * warp edge, which costs about what they save, while local loads of
 * consecutive x are free of bank conflicts.
 *
 * Loads are clamped into the grid (row n1 - 1, column n2 - 1, plane i1):
 * a clamped value lands only in tile places and registers that no written
 * point reads, so no load has a condition. */
#ifndef JACOBI_DEPTH
#define JACOBI_DEPTH 2
#endif
#ifndef JACOBI_ROWS
#define JACOBI_ROWS 1
#endif
/* -DMARCH_UNROLL=1 unrolls the plane loop by the queue's length, JACOBI_DEPTH + 2,
 * so that the queue turns by renaming registers, where the rolled loop
 * moves about JACOBI_DEPTH + 1 values per point per plane (fewer instructions a
 * point in the SASS). It costs registers (see JACOBI_MARCH_BOUNDS). On a GPU it
 * was faster at JACOBI_ROWS=4 on both backends, slower at JACOBI_ROWS=8, and at JACOBI_ROWS=1
 * or 2 the instruction count does not drop. So it is the default at 4 rows
 * only (HC_KERNEL_OPTIONS=-DMARCH_UNROLL=0|1 overrides it;
 * tests/gpu/probe.sh jacobi re-measures it). */
#ifndef JACOBI_MARCH_UNROLL
#define JACOBI_MARCH_UNROLL (JACOBI_ROWS == 4)
#endif
#define JACOBI_M_TR (JACOBI_BY * JACOBI_ROWS)                                /* tile rows */
#define JACOBI_M_TW (JACOBI_BX + 2)                                   /* a tile row, halo included */
#define JACOBI_M_TP ((JACOBI_M_TR + 2) * JACOBI_M_TW)                        /* a tile plane, halo included */
#define JACOBI_M_NH (2 * JACOBI_BX + 2 * JACOBI_M_TR)                        /* halo points of a tile plane */
#define JACOBI_M_HS ((JACOBI_M_NH + JACOBI_BX * JACOBI_BY - 1) / (JACOBI_BX * JACOBI_BY))         /* halo points per item */
/* Loops over rows, planes and halo points unroll fully, so that their
 * arrays are registers. NVIDIA's OpenCL takes the pragma once this is on;
 * other compilers unroll such short loops by their own judgement. */
#if defined(HC_OPENCL) && defined(cl_nv_pragma_unroll)
#pragma OPENCL EXTENSION cl_nv_pragma_unroll : enable
#endif
#if defined(HC_CUDA) || defined(cl_nv_pragma_unroll) || defined(__clang__)
#define JACOBI_M_UNROLL _Pragma("unroll")
#else
#define JACOBI_M_UNROLL
#endif
/* The group size is fixed. On CUDA, ask for as many items per SM as the
 * one-row kernel ran with (all 2048 in f32: 32 registers; 1024 in f64),
 * divided by JACOBI_ROWS: an item of JACOBI_ROWS rows has JACOBI_ROWS times the loads in
 * flight, and its registers grow with JACOBI_ROWS. The unrolled loop takes 1.3
 * to 1.7 times the registers (the compiler hoists later planes' loads over
 * its body), which fits these bounds from 64 registers up (sm_90, block
 * 1x256, depths 1 and 2: f32 JACOBI_ROWS=4 106-126 of 128, no spills); at 32 (f32,
 * one row) it spilled, so it asks for at most 1024 items. */
#define JACOBI_MARCH_ITEMS_ ((sizeof(JACOBI_REAL) == 4 ? 2048 : 1024) / JACOBI_ROWS)
#define JACOBI_MARCH_BLOCKS_ ((JACOBI_MARCH_UNROLL && JACOBI_MARCH_ITEMS_ > 1024 ? 1024 : JACOBI_MARCH_ITEMS_) / (JACOBI_BX * JACOBI_BY))
#if defined(HC_CUDA) && JACOBI_DIM == 3
#define JACOBI_MARCH_BOUNDS __launch_bounds__(JACOBI_BX * JACOBI_BY, JACOBI_MARCH_BLOCKS_ > 32 ? 32 : JACOBI_MARCH_BLOCKS_ < 1 ? 1 : JACOBI_MARCH_BLOCKS_)
#elif defined(HC_OPENCL) && JACOBI_DIM == 3
#define JACOBI_MARCH_BOUNDS __attribute__((reqd_work_group_size(JACOBI_BX, JACOBI_BY, 1)))
#else
#define JACOBI_MARCH_BOUNDS
#endif

/* Halo point h of a tile plane (h < JACOBI_M_NH: the row above the tile, the row
 * below, the column left, the column right): its place in the tile plane
 * and its offset in a grid plane, clamped into the grid. The tile's first
 * point is (jt, kt). */
HC_INLINE void march_halo(int h, int jt, int kt, int n1, int n2, int *tile_at, int *grid_at) {
  int row, col;
  if (h < 2 * JACOBI_BX) {
    row = h < JACOBI_BX ? 0 : JACOBI_M_TR + 1;
    col = 1 + h % JACOBI_BX;
  } else {
    h -= 2 * JACOBI_BX;
    row = 1 + h % JACOBI_M_TR;
    col = h < JACOBI_M_TR ? 0 : JACOBI_BX + 1;
  }
  *tile_at = row * JACOBI_M_TW + col;
  *grid_at = hc_min(jt - 1 + row, n1 - 1) * n2 + hc_min(kt - 1 + col, n2 - 1);
}

/* The item's queue of planes is a ring, u[JACOBI_M_Q][JACOBI_ROWS]. JACOBI_MARCH_PLANE(i, q)
 * marches plane i with the ring turned by q: plane i - 1 + d is in
 * u[(q + d) % JACOBI_M_Q], and the plane loaded ahead (i + 1 + JACOBI_DEPTH) takes the
 * place of plane i - 1, u[q]. q must be a constant once loops are unrolled,
 * so that u stays in registers. It advances b, pu, ph, po (and pf) and
 * refills hv (and fr): one body for the rolled and the unrolled loop. */
#define JACOBI_M_Q (JACOBI_DEPTH + 2)
#define JACOBI_M_U(q, d) (((q) + (d)) % JACOBI_M_Q)
#if JACOBI_F_STORED
#define JACOBI_M_RHS_LOAD() JACOBI_M_UNROLL for (int r = 0; r < JACOBI_ROWS; r++) fr[r] = pf[at[r]]
#define JACOBI_M_RHS_G(i) cf
#define JACOBI_M_RHS_NEXT() pf += s0
#else
#define JACOBI_M_RHS_LOAD()
#define JACOBI_M_RHS_G(i) tab[(i)]
#define JACOBI_M_RHS_NEXT()
#endif
#define JACOBI_MARCH_PLANE(i, q)                                                     \
  do {                                                                        \
    JACOBI_M_UNROLL for (int r = 0; r < JACOBI_ROWS; r++)                                   \
      tile[b + t0 + r * JACOBI_M_TW] = u[JACOBI_M_U(q, 1)][r];                              \
    JACOBI_M_UNROLL for (int s = 0; s < JACOBI_M_HS; s++)                                   \
      if (s < JACOBI_M_HS - 1 || hlast) tile[b + htile[s]] = hv[s];                  \
    /* Loads for later planes, issued before the barrier: the queue's next    \
     * plane, the next plane's halo (and this plane's f). */                  \
    JACOBI_REAL un[JACOBI_ROWS];                                                            \
    JACOBI_M_UNROLL for (int r = 0; r < JACOBI_ROWS; r++) un[r] = pu[at[r]];                \
    ph += s0;                                                                 \
    JACOBI_M_UNROLL for (int s = 0; s < JACOBI_M_HS; s++) hv[s] = ph[hgrid[s]];             \
    JACOBI_M_RHS_LOAD();                                                             \
    const JACOBI_REAL g = JACOBI_M_RHS_G(i);                                                \
    HC_BARRIER();                                                             \
    JACOBI_M_UNROLL for (int r = 0; r < JACOBI_ROWS; r++) {                                 \
      const int t = b + t0 + r * JACOBI_M_TW;                                        \
      const JACOBI_REAL up = r > 0 ? u[JACOBI_M_U(q, 1)][r - 1] : tile[t - JACOBI_M_TW];           \
      const JACOBI_REAL down = r < JACOBI_ROWS - 1 ? u[JACOBI_M_U(q, 1)][r + 1] : tile[t + JACOBI_M_TW];  \
      const JACOBI_REAL v = c2 * (tile[t - 1] + tile[t + 1]) + c1 * (up + down) +    \
                     c0 * (u[JACOBI_M_U(q, 0)][r] + u[JACOBI_M_U(q, 2)][r]) + g * fr[r];    \
      if (r < nact) po[at[r]] = v;                                            \
    }                                                                         \
    JACOBI_M_UNROLL for (int r = 0; r < JACOBI_ROWS; r++) u[JACOBI_M_U(q, 0)][r] = un[r];          \
    b = JACOBI_M_TP - b;                                                             \
    if ((i) + 2 + JACOBI_DEPTH <= i1) pu += s0; /* else plane i1 again */            \
    po += s0;                                                                 \
    JACOBI_M_RHS_NEXT();                                                             \
  } while (0)

HC_KERNEL void JACOBI_MARCH_BOUNDS jacobi_march(JACOBI_SWEEP_ARGS) {
#if JACOBI_DIM == 3
  HC_LOCAL JACOBI_REAL tile[2 * JACOBI_M_TP];
  const int tx = (int)hc_local_id(0), ty = (int)hc_local_id(1);
  const int kt = (int)hc_group_id(0) * JACOBI_BX + 1, jt = (int)hc_group_id(1) * JACOBI_M_TR + 1;
  const int k = kt + tx, j = jt + ty * JACOBI_ROWS; /* the item's column and first row */
  const int i0 = (int)hc_group_id(2) * chunk + r0;
  const int i1 = hc_min(i0 + chunk, r1);
  const long s0 = (long)n1 * n2;
  /* The item's rows that are written: 0 .. nact - 1. */
  const int nact = k < n2 - 1 ? hc_min(hc_max(n1 - 1 - j, 0), JACOBI_ROWS) : 0;
  /* Offsets of the item's rows in a plane (clamped; 32 bits, the host
   * checks that a plane fits), and the tile place of its first row. */
  const int kc = hc_min(k, n2 - 1);
  int at[JACOBI_ROWS];
  JACOBI_M_UNROLL for (int r = 0; r < JACOBI_ROWS; r++) at[r] = hc_min(j + r, n1 - 1) * n2 + kc;
  const int t0 = (1 + ty * JACOBI_ROWS) * JACOBI_M_TW + 1 + tx;
  /* Planes: pu for the loads ahead (plane i + 1 + JACOBI_DEPTH), ph for the halo
   * (i + 1), po for the output (i). */
  HC_GLOBAL const JACOBI_REAL *HC_RESTRICT pu = in + (long)(i0 - 1) * s0;
  HC_GLOBAL const JACOBI_REAL *HC_RESTRICT ph = in + (long)i0 * s0;
  HC_GLOBAL JACOBI_REAL *HC_RESTRICT po = out + (long)i0 * s0;
#if JACOBI_F_STORED
  HC_GLOBAL const JACOBI_REAL *HC_RESTRICT pf = f + (long)i0 * s0;
#endif
  /* The item's share of the halo; only the last share can be short. */
  const int item = ty * JACOBI_BX + tx;
  const int hlast = item + (JACOBI_M_HS - 1) * JACOBI_BX * JACOBI_BY < JACOBI_M_NH;
  int htile[JACOBI_M_HS], hgrid[JACOBI_M_HS];
  JACOBI_REAL hv[JACOBI_M_HS];
  JACOBI_M_UNROLL for (int s = 0; s < JACOBI_M_HS; s++) {
    march_halo(hc_min(item + s * JACOBI_BX * JACOBI_BY, JACOBI_M_NH - 1), jt, kt, n1, n2, &htile[s], &hgrid[s]);
    hv[s] = ph[hgrid[s]];
  }
  /* The right-hand side of row r at plane i is g fr[r]: computed, g =
   * g0(i) and fr = cf g1 g2; stored, g = cf and fr = f, loaded per plane. */
  JACOBI_REAL fr[JACOBI_ROWS];
#if !JACOBI_F_STORED
  JACOBI_M_UNROLL for (int r = 0; r < JACOBI_ROWS; r++) fr[r] = cf * tab[n0 + hc_min(j + r, n1 - 1)] * tab[n0 + n1 + kc];
#endif
  /* u[d]: the item's rows at plane i - 1 + d; those past i1 are never used. */
  JACOBI_REAL u[JACOBI_M_Q][JACOBI_ROWS];
  JACOBI_M_UNROLL for (int d = 0; d < JACOBI_M_Q; d++) {
    JACOBI_M_UNROLL for (int r = 0; r < JACOBI_ROWS; r++) u[d][r] = pu[at[r]];
    if (i0 + d <= i1) pu += s0; /* else plane i1 again */
  }
  int b = 0; /* the tile buffer of this plane: 0 or JACOBI_M_TP */
  int i = i0;
#if JACOBI_MARCH_UNROLL
  /* JACOBI_M_Q planes a trip: the ring comes round to where it started. */
  for (; i + JACOBI_M_Q <= i1; i += JACOBI_M_Q)
    JACOBI_M_UNROLL for (int q = 0; q < JACOBI_M_Q; q++) JACOBI_MARCH_PLANE(i + q, q);
#endif
  /* One plane a trip (the default, or the unrolled loop's last planes):
   * the ring is turned back by moves, plane i + d to u[d]. */
  for (; i < i1; i++) {
    JACOBI_MARCH_PLANE(i, 0);
    JACOBI_M_UNROLL for (int r = 0; r < JACOBI_ROWS; r++) {
      const JACOBI_REAL ahead = u[0][r];
      JACOBI_M_UNROLL for (int d = 0; d < JACOBI_M_Q - 1; d++) u[d][r] = u[d + 1][r];
      u[JACOBI_M_Q - 1][r] = ahead;
    }
  }
#endif
}

#endif

/* ---------------------------------------------------------------- norms */

#define JACOBI_RED_X 64
#define JACOBI_RED_Y 4
#define JACOBI_RED_N (JACOBI_RED_X * JACOBI_RED_Y)

/* Interior rows (all but the fastest axis) as one index r: rows of length
 * n2 - 2 at (i, j) = (r / (n1 - 2) + 1, r % (n1 - 2) + 1) in 3-D. */
#if JACOBI_DIM == 3
#define JACOBI_INTERIOR_ROWS(n0, n1) ((long)((n0)-2) * ((n1)-2))
#define JACOBI_ROW_I(r, n1) ((int)((r) / ((n1)-2)) + 1)
#else
#define JACOBI_INTERIOR_ROWS(n0, n1) ((long)((n1)-2))
#define JACOBI_ROW_I(r, n1) 0
#endif
#define JACOBI_ROW_J(r, n1) ((int)((r) % ((n1)-2)) + 1)
/* The norms count the rows [own_lo, own_hi) of the slowest axis (3-D: i,
 * 2-D: j): a split part's own rows, not its ghost rows, which its
 * neighbours count (the whole interior in a whole run). */
#if JACOBI_DIM == 3
#define JACOBI_NOT_OWN(i, j) ((i) < own_lo || (i) >= own_hi)
#else
#define JACOBI_NOT_OWN(i, j) ((j) < own_lo || (j) >= own_hi)
#endif

/* Local-memory tree sum of JACOBI_RED_N values per array, ending in a barrier. */
#define JACOBI_TREE(t, BODY)                                                         \
  for (int s_ = JACOBI_RED_N / 2; s_ > 0; s_ >>= 1) {                                \
    HC_BARRIER();                                                             \
    if ((t) < s_) { BODY }                                                    \
  }

/* The residual r = f + Δ_h u at an interior point, in acc_t. */
#if JACOBI_DIM == 3
#define JACOBI_LAPLACE(u, c, s1, s0)                                                 \
  (w2 * ((acc_t)u[(c)-1] + (acc_t)u[(c) + 1] - 2 * (acc_t)u[(c)]) +           \
   w1 * ((acc_t)u[(c) - (s1)] + (acc_t)u[(c) + (s1)] - 2 * (acc_t)u[(c)]) +   \
   w0 * ((acc_t)u[(c) - (s0)] + (acc_t)u[(c) + (s0)] - 2 * (acc_t)u[(c)]))
#else
#define JACOBI_LAPLACE(u, c, s1, s0)                                                 \
  (w2 * ((acc_t)u[(c)-1] + (acc_t)u[(c) + 1] - 2 * (acc_t)u[(c)]) +           \
   w1 * ((acc_t)u[(c) - (s1)] + (acc_t)u[(c) + (s1)] - 2 * (acc_t)u[(c)]))
#endif

/* Per work-group partial sums of r² and f² over the interior (the relative
 * residual ||f + Δu|| / ||f||); the host adds the partials. Launch: local
 * (JACOBI_RED_X, JACOBI_RED_Y), global (JACOBI_RED_X-multiple >= n2 - 2, any JACOBI_RED_Y-multiple):
 * items stride over the rows. */
HC_KERNEL void residual_norms(HC_GLOBAL const JACOBI_REAL *HC_RESTRICT u, HC_GLOBAL const JACOBI_REAL *HC_RESTRICT f,
                              HC_GLOBAL const JACOBI_REAL *HC_RESTRICT tab, const int n0, const int n1, const int n2,
                              const JACOBI_REAL w0, const JACOBI_REAL w1, const JACOBI_REAL w2, HC_GLOBAL acc_t *HC_RESTRICT partial,
                              const int own_lo, const int own_hi) {
  HC_LOCAL acc_t sr[JACOBI_RED_N];
  HC_LOCAL acc_t sf[JACOBI_RED_N];
  const int t = (int)(hc_local_id(1) * JACOBI_RED_X + hc_local_id(0));
  const int k = (int)hc_global_id(0) + 1;
  const long s1 = n2, s0 = JACOBI_DIM == 3 ? (long)n1 * n2 : 0;
  const long rows = JACOBI_INTERIOR_ROWS(n0, n1);
  acc_t ar = 0, af = 0;
  if (k < n2 - 1)
    for (long r = hc_global_id(1); r < rows; r += hc_global_size(1)) {
      const int i = JACOBI_ROW_I(r, n1), j = JACOBI_ROW_J(r, n1);
      if (JACOBI_NOT_OWN(i, j)) continue;
      const long c = (long)i * s0 + (long)j * s1 + k;
      const acc_t fv = (acc_t)JACOBI_RHS(c, i, j, k);
      const acc_t rv = fv + JACOBI_LAPLACE(u, c, s1, s0);
      ar += rv * rv;
      af += fv * fv;
    }
  sr[t] = ar;
  sf[t] = af;
  JACOBI_TREE(t, sr[t] += sr[t + s_]; sf[t] += sf[t + s_];)
  if (t == 0) {
    const long g = hc_group_id(1) * hc_num_groups(0) + hc_group_id(0);
    partial[2 * g] = sr[0];
    partial[2 * g + 1] = sf[0];
  }
}

/* The residual as a field (interior points; the boundary is left alone). */
HC_KERNEL void residual_field(HC_GLOBAL const JACOBI_REAL *HC_RESTRICT u, HC_GLOBAL const JACOBI_REAL *HC_RESTRICT f,
                              HC_GLOBAL const JACOBI_REAL *HC_RESTRICT tab, const int n0, const int n1, const int n2,
                              const JACOBI_REAL w0, const JACOBI_REAL w1, const JACOBI_REAL w2, HC_GLOBAL JACOBI_REAL *HC_RESTRICT r) {
  const int k = (int)hc_global_id(0) + 1;
  const long row = hc_global_id(1);
  if (k >= n2 - 1 || row >= JACOBI_INTERIOR_ROWS(n0, n1)) return;
  const int i = JACOBI_ROW_I(row, n1), j = JACOBI_ROW_J(row, n1);
  const long s1 = n2, s0 = JACOBI_DIM == 3 ? (long)n1 * n2 : 0;
  const long c = (long)i * s0 + (long)j * s1 + k;
  r[c] = (JACOBI_REAL)((acc_t)JACOBI_RHS(c, i, j, k) + JACOBI_LAPLACE(u, c, s1, s0));
}

/* Comparison with a separable reference e = s1 Πa + s2 Πb (tab holds
 * [a0 | a1 | a2 | b0 | b1 | b2]): per work-group Σ(u - e)², max |u - e|,
 * Σ u·Πa and Σ (Πa)², over the interior. Same launch as residual_norms. */
HC_KERNEL void compare_norms(HC_GLOBAL const JACOBI_REAL *HC_RESTRICT u, HC_GLOBAL const JACOBI_REAL *HC_RESTRICT tab,
                             const int n0, const int n1, const int n2, const JACOBI_REAL s1v, const JACOBI_REAL s2v,
                             HC_GLOBAL acc_t *HC_RESTRICT partial, const int own_lo, const int own_hi) {
  HC_LOCAL acc_t se[JACOBI_RED_N];
  HC_LOCAL acc_t sm[JACOBI_RED_N];
  HC_LOCAL acc_t sp[JACOBI_RED_N];
  HC_LOCAL acc_t sq[JACOBI_RED_N];
  const int t = (int)(hc_local_id(1) * JACOBI_RED_X + hc_local_id(0));
  const int k = (int)hc_global_id(0) + 1;
  const long s1 = n2, s0 = JACOBI_DIM == 3 ? (long)n1 * n2 : 0;
  const long rows = JACOBI_INTERIOR_ROWS(n0, n1);
  const int nb = n0 + n1 + n2;
  acc_t ae = 0, am = 0, ap = 0, aq = 0;
  if (k < n2 - 1)
    for (long r = hc_global_id(1); r < rows; r += hc_global_size(1)) {
      const int i = JACOBI_ROW_I(r, n1), j = JACOBI_ROW_J(r, n1);
      if (JACOBI_NOT_OWN(i, j)) continue;
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
  JACOBI_TREE(t, se[t] += se[t + s_]; sm[t] = hc_fmax(sm[t], sm[t + s_]); sp[t] += sp[t + s_]; sq[t] += sq[t + s_];)
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
HC_KERNEL void fill_product(HC_GLOBAL JACOBI_REAL *HC_RESTRICT out, HC_GLOBAL const JACOBI_REAL *HC_RESTRICT tab, const int n0,
                            const int n1, const int n2, const JACOBI_REAL s) {
  const int k = (int)hc_global_id(0), j = (int)hc_global_id(1);
#if JACOBI_DIM == 3
  const int i = (int)hc_global_id(2);
#else
  const int i = 0;
#endif
  if (k >= n2 || j >= n1 || i >= n0) return;
  out[((long)i * n1 + j) * n2 + k] = s * tab[i] * tab[n0 + j] * tab[n0 + n1 + k];
}
