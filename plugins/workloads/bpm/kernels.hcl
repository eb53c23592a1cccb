/* bpm kernels in hc's portable dialect (OpenCL C and CUDA C from one text).
 *
 * Build options (prefixed: a bare -DT would clash with names in NVRTC's
 * own headers):
 *   -DBPM_F64         complex double (c128); else complex float (c64)
 *   -DBPM_T=<n>       threads per line (bpm_march2d, bpm_rich2d, bpm_adi_fast,
 *                     bpm_power3d)
 *   -DBPM_CHUNK=<m>   most unknowns one thread holds (bpm_march2d, bpm_adi_fast)
 *   -DBPM_GLOBAL_LINE=1  bpm_march2d keeps the line in global memory
 *   -DBPM_LINE=<n>    row length staged in local memory (bpm_adi_fast);
 *                     -DBPM_STAGED=0 when a row does not fit
 *   -DBPM_W=<n>, -DBPM_C=<n>  columns per work-group and chunks per column
 *                     (bpm_adi_slow); -DBPM_XCHUNK=<m> rows per chunk
 *   -DBPM_NX, _NY, _TBC, _PERCOL, _RUNI, -DBPM_IDX=int  the 3-D run's values
 *                     (bpm_adi_slow, bpm_adi_fast; see BPM_RUN_ARGS)
 * Tuning, through HC_KERNEL_OPTIONS: -DBPM_XSUB=<s>, -DBPM_YSUB=<s>  sub-chains
 *                     of a thread's chunk (bpm_adi_slow, bpm_adi_fast)
 *
 * The line solvers use Thomas' factors precomputed on the host (the matrix
 * does not change along z): the forward sweep d'_k = inv_k (b_k - lo d'_k-1)
 * and the back substitution x_k = d'_k - cp_k x_k+1 are first-order linear
 * recurrences, i.e. compositions of affine maps. Each thread composes the
 * maps of its chunk, a Kogge-Stone scan in local memory composes the chunks,
 * and each thread applies the result to its chunk: O(n) work, 2 log2(BPM_T)
 * barriers per solve, and the same arithmetic as Thomas (it is stable where
 * Thomas is: the Crank-Nicolson matrix is diagonally dominant). */

#ifdef BPM_F64
typedef double real_t;
typedef double2 cplx_t;
#define CMK(a, b) hc_double2((a), (b))
#define CMUL hc_cmul
#define CADD hc_cadd
#define CSUB hc_csub
#define CDIV hc_cdiv
#define CABS2 hc_cabs2
#else
typedef float real_t;
typedef float2 cplx_t;
#define CMK(a, b) hc_float2((a), (b))
#define CMUL hc_cmulf
#define CADD hc_caddf
#define CSUB hc_csubf
#define CDIV hc_cdivf
#define CABS2 hc_cabs2f
#endif

#ifndef BPM_T
#define BPM_T 64
#endif
#ifndef BPM_CHUNK
#define BPM_CHUNK 1
#endif
#ifndef BPM_LINE
#define BPM_LINE 1
#endif
#ifndef BPM_W
#define BPM_W 1
#endif
#ifndef BPM_C
#define BPM_C 1
#endif

/* a*b + c, complex */
HC_INLINE cplx_t cfma(cplx_t a, cplx_t b, cplx_t c) {
  return CMK(a.x * b.x - a.y * b.y + c.x, a.x * b.y + a.y * b.x + c.y);
}

/* Hadley's transparent wall: ghost = edge * eta, eta = edge/inner with a
 * negative phase (an incoming wave) clipped to 0; 0 when inner vanishes. */
HC_INLINE cplx_t tbc_eta(cplx_t edge, cplx_t inner) {
  real_t m2 = CABS2(inner);
  if (!(m2 > 0)) return CMK(0, 0);
  cplx_t r = CDIV(edge, inner);
  if (r.y < 0) r = CMK(sqrt(CABS2(r)), 0);
  return r;
}

/* Solves the 2x2 system of Hadley's rank-2 correction (see host2d_impl.h):
 * returns s0 in .s0 and s1 in .s1 of the pair. */
HC_INLINE void tbc_coeffs(cplx_t dL, cplx_t dR, cplx_t z00, cplx_t z10, cplx_t z0n, cplx_t z1n, cplx_t y0, cplx_t yn,
                          cplx_t *s0, cplx_t *s1) {
  cplx_t a11 = cfma(dL, z00, CMK(1, 0)), a12 = CMUL(dL, z10), a21 = CMUL(dR, z0n), a22 = cfma(dR, z1n, CMK(1, 0));
  cplx_t r1 = CMUL(dL, y0), r2 = CMUL(dR, yn);
  cplx_t det = CSUB(CMUL(a11, a22), CMUL(a12, a21));
  *s0 = CDIV(CSUB(CMUL(r1, a22), CMUL(a12, r2)), det);
  *s1 = CDIV(CSUB(CMUL(a11, r2), CMUL(a21, r1)), det);
}

/* Kogge-Stone scan of affine maps x -> A x + B over the NT entries of a
 * line, entry index ID, in local arrays SA[2][..], SB[2][..] addressed by
 * IDX(buffer, entry). DIR +1 composes from entry 0 up (forward sweep), -1
 * from the last entry down (back substitution). On exit PIN names the
 * buffer with the inclusive results. One barrier per round. */
#define BPM_SCAN(SA, SB, IDX, NT, ID, A, B, DIR, PIN)                                  \
  {                                                                                    \
    PIN = 0;                                                                           \
    SA[IDX(0, ID)] = A;                                                                \
    SB[IDX(0, ID)] = B;                                                                \
    HC_BARRIER();                                                                      \
    for (int off_ = 1; off_ < (NT); off_ <<= 1) {                                      \
      cplx_t a_ = SA[IDX(PIN, ID)], b_ = SB[IDX(PIN, ID)];                             \
      int u_ = (DIR) > 0 ? (ID) - off_ : (ID) + off_;                                  \
      if (u_ >= 0 && u_ < (NT)) {                                                      \
        b_ = cfma(a_, SB[IDX(PIN, u_)], b_);                                           \
        a_ = CMUL(a_, SA[IDX(PIN, u_)]);                                               \
      }                                                                                \
      SA[IDX(1 - PIN, ID)] = a_;                                                       \
      SB[IDX(1 - PIN, ID)] = b_;                                                       \
      PIN = 1 - PIN;                                                                   \
      HC_BARRIER();                                                                    \
    }                                                                                  \
  }

/* ------------------------------------------------------------------ 2-D */

#define IDX1(p, i) ((p) * BPM_T + (i))

/* Where bpm_march2d keeps a thread's chunk of the line: in private arrays
 * of BPM_CHUNK (registers, fully unrolled loops), or with
 * -DBPM_GLOBAL_LINE=1 in global memory, the field E itself and a scratch
 * line D, with loops over the chunk's actual length. The private form is
 * the fast one for short lines; its compile time and private footprint grow
 * with BPM_CHUNK, so long lines take the global form (march2d.c). */
#ifndef BPM_GLOBAL_LINE
#define BPM_GLOBAL_LINE 0
#endif
#if BPM_GLOBAL_LINE
#define LINE_E(k) E[k0 + (k)]
#define LINE_D(k) D[k0 + (k)]
/* every item loops over m (bodies guarded by k < cnt): with a count that
 * varied per item, PoCL's work-group function crashed on Hadley's walls */
#define BPM_KN m
#define KNEXT(k) ((k) + 1)
#define KPREV(k) ((k) - 1)
#else
#define LINE_E(k) e[k]
#define LINE_D(k) d[k]
#define BPM_KN BPM_CHUNK
/* clamped: a private array's index must be in range even where unused */
#define KNEXT(k) ((k) + 1 < BPM_CHUNK ? (k) + 1 : (k))
#define KPREV(k) ((k) > 0 ? (k) - 1 : 0)
#endif

/* The direct 2-D march: one work-group of BPM_T threads holds the line (BPM_CHUNK
 * unknowns per thread, in registers) and makes `steps` theta-steps, then
 * writes E and its |E|^2 as row `row` of the intensity map. coef = [r | inv
 * | cp]: the explicit diagonal and Thomas' factors; zc = [z0 | z1] for
 * Hadley's walls (tbc = 1). lo, be: the implicit and explicit off-diagonals. */
HC_KERNEL void bpm_march2d(const int n, const int steps, const int tbc, const real_t lo_r, const real_t lo_i,
                           const real_t be_r, const real_t be_i, HC_GLOBAL const cplx_t *coef,
                           HC_GLOBAL const cplx_t *zc, HC_GLOBAL cplx_t *E, HC_GLOBAL real_t *inten,
                           const long row, HC_GLOBAL cplx_t *D) {
  HC_LOCAL cplx_t sFa[2 * BPM_T], sFb[2 * BPM_T]; /* forward scan */
  HC_LOCAL cplx_t sBa[2 * BPM_T], sBb[2 * BPM_T]; /* backward scan */
  HC_LOCAL cplx_t sEdge[2 * BPM_T];           /* first and last value of each chunk */
  HC_LOCAL cplx_t sW[6];                  /* nodes 0, 1, n-2, n-1; then y0, yn */
  const int t = (int)hc_local_id(0);
  const int m = (n + BPM_T - 1) / BPM_T;
  const int k0 = t * m;
  const int cnt = hc_max(0, hc_min(m, n - k0));
  const cplx_t lo = CMK(lo_r, lo_i), nlo = CMK(-lo_r, -lo_i), be = CMK(be_r, be_i);
  HC_GLOBAL const cplx_t *r = coef;
  HC_GLOBAL const cplx_t *inv = coef + n;
  HC_GLOBAL const cplx_t *cp = coef + 2 * n;
#if !BPM_GLOBAL_LINE
  cplx_t e[BPM_CHUNK], d[BPM_CHUNK];
  for (int k = 0; k < BPM_KN; k++) LINE_E(k) = k < cnt ? E[k0 + k] : CMK(0, 0);
  (void)D;
#endif
  for (int s = 0; s < steps; s++) {
    /* neighbours across chunks, and the wall nodes for Hadley's factor */
    if (cnt > 0) {
      sEdge[t] = LINE_E(0);
      for (int k = 0; k < BPM_KN; k++)
        if (k == cnt - 1) sEdge[BPM_T + t] = LINE_E(k);
    }
    for (int k = 0; k < BPM_KN; k++) {
      int gi = k0 + k;
      if (k < cnt) {
        if (gi == 0) sW[0] = LINE_E(k);
        if (gi == 1) sW[1] = LINE_E(k);
        if (gi == n - 2) sW[2] = LINE_E(k);
        if (gi == n - 1) sW[3] = LINE_E(k);
      }
    }
    HC_BARRIER();
    cplx_t etaL = CMK(0, 0), etaR = CMK(0, 0);
    if (tbc) {
      etaL = tbc_eta(sW[0], sW[1]);
      etaR = tbc_eta(sW[3], sW[2]);
    }
    const cplx_t left = t > 0 ? sEdge[BPM_T + t - 1] : CMUL(etaL, sW[0]);
    const cplx_t right = (k0 + cnt < n) ? sEdge[t + 1] : CMUL(etaR, sW[3]);
    /* RHS and the forward maps d'_k = A_k d'_k-1 + B_k, composed */
    cplx_t A = CMK(1, 0), B = CMK(0, 0);
    for (int k = 0; k < BPM_KN; k++) {
      if (k < cnt) {
        int gi = k0 + k;
        cplx_t em = k > 0 ? LINE_E(KPREV(k)) : left;
        cplx_t ep = k + 1 < cnt ? LINE_E(KNEXT(k)) : right;
        cplx_t rhs = cfma(r[gi], LINE_E(k), CMUL(be, CADD(em, ep)));
        cplx_t iv = inv[gi];
        cplx_t Ak = CMUL(nlo, iv);
        LINE_D(k) = CMUL(iv, rhs); /* B_k */
        B = cfma(Ak, B, LINE_D(k));
        A = CMUL(Ak, A);
      }
    }
    int pin;
    BPM_SCAN(sFa, sFb, IDX1, BPM_T, t, A, B, 1, pin);
    cplx_t prev = t > 0 ? sFb[IDX1(pin, t - 1)] : CMK(0, 0);
    for (int k = 0; k < BPM_KN; k++) {
      if (k < cnt) {
        cplx_t Ak = CMUL(nlo, inv[k0 + k]);
        prev = cfma(Ak, prev, LINE_D(k));
        LINE_D(k) = prev; /* d'_k */
      }
    }
    /* back substitution x_k = -cp_k x_k+1 + d'_k, composed from the end */
    cplx_t P = CMK(1, 0), Q = CMK(0, 0);
    for (int k = BPM_KN - 1; k >= 0; k--) {
      if (k < cnt) {
        cplx_t c = cp[k0 + k];
        cplx_t Pk = CMK(-c.x, -c.y);
        Q = cfma(Pk, Q, LINE_D(k));
        P = CMUL(Pk, P);
      }
    }
    BPM_SCAN(sBa, sBb, IDX1, BPM_T, t, P, Q, -1, pin);
    cplx_t next = t + 1 < BPM_T ? sBb[IDX1(pin, t + 1)] : CMK(0, 0);
    for (int k = BPM_KN - 1; k >= 0; k--) {
      if (k < cnt) {
        cplx_t c = cp[k0 + k];
        next = CSUB(LINE_D(k), CMUL(c, next));
        LINE_E(k) = next;
      }
    }
    if (tbc) {
      for (int k = 0; k < BPM_KN; k++) {
        if (k < cnt && k0 + k == 0) sW[4] = LINE_E(k);
        if (k < cnt && k0 + k == n - 1) sW[5] = LINE_E(k);
      }
      HC_BARRIER();
      cplx_t s0, s1;
      tbc_coeffs(CMUL(lo, etaL), CMUL(lo, etaR), zc[0], zc[n], zc[n - 1], zc[2 * n - 1], sW[4], sW[5], &s0, &s1);
      for (int k = 0; k < BPM_KN; k++)
        if (k < cnt) LINE_E(k) = CSUB(LINE_E(k), CADD(CMUL(zc[k0 + k], s0), CMUL(zc[n + k0 + k], s1)));
    }
  }
  for (int k = 0; k < BPM_KN; k++) {
    if (k < cnt) {
#if !BPM_GLOBAL_LINE
      E[k0 + k] = LINE_E(k);
#endif
      inten[row * n + k0 + k] = CABS2(LINE_E(k));
    }
  }
}

/* Sum over the work-group of one value per thread, in local memory S[BPM_T]:
 * every thread gets the total. */
#define BPM_GROUP_SUM(S, ID, V, OUT)                                                   \
  {                                                                                    \
    S[ID] = V;                                                                         \
    HC_BARRIER();                                                                      \
    for (int h_ = BPM_T / 2; h_ > 0; h_ >>= 1) {                                           \
      if ((ID) < h_) S[ID] += S[(ID) + h_];                                            \
      HC_BARRIER();                                                                    \
    }                                                                                  \
    OUT = S[0];                                                                        \
    HC_BARRIER();                                                                      \
  }

/* Row i of a band matrix stored by diagonals as the paper stores it: band
 * = [Adiag (n) | upper bands 1..q | lower bands 1..p], band m (upper or
 * lower) starting at (m-1) n - m (m-1)/2 of its part; times x. */
HC_INLINE cplx_t band_row(HC_GLOBAL const cplx_t *band, int n, int p, int q, int i, HC_GLOBAL const cplx_t *x) {
  HC_GLOBAL const cplx_t *bd = band + n;
  HC_GLOBAL const cplx_t *cd = bd + ((long)q * n - (long)q * (q + 1) / 2);
  cplx_t z = CMUL(band[i], x[i]);
  for (int m = 1; m <= q; m++)
    if (i + m < n) z = cfma(bd[(long)(m - 1) * n - (long)m * (m - 1) / 2 + i], x[i + m], z);
  for (int h = 1; h <= p; h++)
    if (i - h >= 0) z = cfma(cd[(long)(h - 1) * n - (long)h * (h - 1) / 2 + i - h], x[i - h], z);
  return z;
}

/* The paper's one-parameter iteration, one work-group per line: the RHS
 * b = R E and the sweeps x <- x + tau (b - M x) are products with band
 * matrices stored by diagonals (rband = R, band = M, lower/upper widths p,
 * q), row by row; Hadley's walls add lo eta (M) and be eta (R) to the
 * corner rows. The iterates are double-buffered in global memory (E and
 * scratch[n..2n)), b is scratch[0..n); the residual norm is formed every
 * 8th sweep. BPM_T must be a power of two here (the sums). */
HC_KERNEL void bpm_rich2d(const int n, const int steps, const int tbc, const real_t lo_r, const real_t lo_i,
                          const real_t be_r, const real_t be_i, HC_GLOBAL const cplx_t *rband,
                          HC_GLOBAL const cplx_t *band, const int p, const int q, const real_t tau_r,
                          const real_t tau_i, const int iters, const real_t tol, HC_GLOBAL cplx_t *E,
                          HC_GLOBAL cplx_t *scratch, HC_GLOBAL long *stats, HC_GLOBAL real_t *inten,
                          const long row) {
  HC_LOCAL real_t sSum[BPM_T];
  const int t = (int)hc_local_id(0);
  const cplx_t lo = CMK(lo_r, lo_i), be = CMK(be_r, be_i), tau = CMK(tau_r, tau_i);
  HC_GLOBAL cplx_t *b = scratch;
  HC_GLOBAL cplx_t *xs = scratch + n;
  HC_GLOBAL long *st = stats + 4 * row;
  long it_sum = 0, it_max = 0, missed = 0;
  int diverged = 0;
  for (int s = 0; s < steps && !diverged; s++) {
    cplx_t etaL = CMK(0, 0), etaR = CMK(0, 0);
    if (tbc) {
      etaL = tbc_eta(E[0], E[1]);
      etaR = tbc_eta(E[n - 1], E[n - 2]);
    }
    real_t bn = 0;
    for (int i = t; i < n; i += BPM_T) {
      cplx_t bi = band_row(rband, n, p, q, i, E);
      if (i == 0) bi = cfma(CMUL(be, etaL), E[0], bi);
      if (i == n - 1) bi = cfma(CMUL(be, etaR), E[n - 1], bi);
      b[i] = bi;
      bn += CABS2(bi);
    }
    real_t bn2;
    BPM_GROUP_SUM(sSum, t, bn, bn2);
    const cplx_t cL = CMUL(lo, etaL), cR = CMUL(lo, etaR);
    HC_GLOBAL cplx_t *x = E;
    HC_GLOBAL cplx_t *y = xs;
    int it = 0, done = 0;
    while (it < iters && !done) {
      real_t rn = 0;
      for (int i = t; i < n; i += BPM_T) {
        cplx_t z = band_row(band, n, p, q, i, x);
        if (i == 0) z = cfma(cL, x[0], z);
        if (i == n - 1) z = cfma(cR, x[n - 1], z);
        cplx_t res = CSUB(b[i], z);
        y[i] = cfma(tau, res, x[i]);
        rn += CABS2(res);
      }
      HC_BARRIER_GLOBAL();
      HC_GLOBAL cplx_t *tmp = x;
      x = y;
      y = tmp;
      it++;
      if ((it & 7) == 0 || it == iters) {
        real_t rn2;
        BPM_GROUP_SUM(sSum, t, rn, rn2);
        if (rn2 <= tol * tol * bn2) done = 1;
        else if (!(rn2 <= (real_t)1e12 * bn2)) diverged = s + 1, done = 1; /* the step (1-based) */
      }
    }
    if (x != E) {
      for (int i = t; i < n; i += BPM_T) E[i] = x[i];
      HC_BARRIER_GLOBAL();
    }
    it_sum += it;
    it_max = it > it_max ? it : it_max;
    if (!done || diverged) missed++;
  }
  if (t == 0) {
    st[0] += it_sum;
    st[1] = it_max > st[1] ? it_max : st[1];
    st[2] += missed;
    st[3] = diverged;
  }
  for (int i = t; i < n; i += BPM_T) inten[row * n + i] = CABS2(E[i]);
}

/* ------------------------------------------------------------------ 3-D */

/* Peaceman-Rachford ADI on an nx x ny field (x slow, y fast). A half-step
 * solves one axis implicitly, the other explicitly:
 *   bpm_adi_slow: (I - theta hz Ax) E* = (I + (1-theta) hz Ay) E   (x-lines)
 *   bpm_adi_fast: (I - theta hz Ay) E' = (I + (1-theta) hz Ax) E*  (y-lines)
 * Shared arguments: lo (the implicit off-diagonal), be (the explicit one),
 * rr (the explicit diagonal: rr[0] when runi, else per node), fac = [inv |
 * cp] and zc = [z0 | z1] (Hadley's walls): per node when percol (lines
 * differ), else one line. Each half-step takes its walls' factors from its
 * own input, as the host reference does. */

/* BPM_FWD=1 (device kernels, conductor or absorbing walls, y-lines staged):
 * each half-step hands the next its right-hand side instead of the field.
 * The x-lines hold a column's solution in registers, so they form the
 * y-lines' explicit part along x there (neighbours in the same thread, a
 * chunk's ends through local memory); the y-lines hold a row in local
 * memory, so they form the x-lines' explicit part along y there. Each
 * half-step then reads one value per node where it read three (the node
 * and its two neighbours on other lines, through L1/L2), and still moves
 * the same bytes to and from memory. The x-lines of the first step read the
 * field (in_rhs = 0); the y-lines also write the field where it is wanted
 * (emit: before the power is taken and at the end). Arguments rro, bo: the
 * other half-step's explicit diagonal and off-diagonal. */
#ifndef BPM_FWD
#define BPM_FWD 0
#endif

/* The run's arguments nx, ny, tbc, percol, runi, or their build-time
 * values where adi3d.c gives them (-DBPM_NX=...): the compiler then folds
 * the index arithmetic and drops the branches of the other walls and
 * media. Indices are BPM_IDX (int where every index of the run fits). */
#ifndef BPM_NX
#define BPM_NX -1
#endif
#ifndef BPM_NY
#define BPM_NY -1
#endif
#ifndef BPM_TBC
#define BPM_TBC -1
#endif
#ifndef BPM_PERCOL
#define BPM_PERCOL -1
#endif
#ifndef BPM_RUNI
#define BPM_RUNI -1
#endif
#ifndef BPM_IDX
#define BPM_IDX long
#endif
typedef BPM_IDX bidx_t;
#define BPM_ARG(M, a) ((M) >= 0 ? (M) : (a))
#define BPM_RUN_ARGS                                                                                          \
  const int nx = BPM_ARG(BPM_NX, nx_), ny = BPM_ARG(BPM_NY, ny_), tbc = BPM_ARG(BPM_TBC, tbc_),               \
            percol = BPM_ARG(BPM_PERCOL, percol_), runi = BPM_ARG(BPM_RUNI, runi_)

/* A thread's chunk of N values d[0..N) of a line (cnt of them real) goes
 * through four sweeps: compose the forward maps (d <- inv d on the way),
 * apply them from the chunk's carry X, compose the back substitution, apply
 * it from the carry Y. Each sweep runs as S interleaved sub-chains of
 * BPM_SUBL(N, S) values, independent dependency chains the compiler overlaps
 * (one chain left a thread waiting on each load of a factor: a profiler
 * shows it as long-scoreboard stalls in bpm_adi_slow); the sub-chains' maps are combined for the scans, and the
 * carries split back to them. INV(k), CPK(k): the factors of value k;
 * sa, sb, sp, sq: the callers' arrays of S maps; the caller's `cnt` and
 * `nlo` (-lo) are used as they stand. */
#define BPM_SUBL(N, S) (((N) + (S) - 1) / (S))
#define BPM_SUB_LOOP(N, S, K_OF_Q, ...) /* ...: the body, commas and all */                 \
  BPM_UNROLL                                                                                \
  for (int q_ = 0; q_ < BPM_SUBL(N, S); q_++) {                                             \
    BPM_UNROLL                                                                              \
    for (int s_ = 0; s_ < (S); s_++) {                                                      \
      const int k = s_ * BPM_SUBL(N, S) + (K_OF_Q);                                         \
      if (k < (N) && k < cnt) __VA_ARGS__                                                   \
    }                                                                                       \
  }
#define BPM_FWD_COMPOSE(N, S, d, INV, sa, sb, A, B)                                         \
  {                                                                                         \
    for (int s_ = 0; s_ < (S); s_++) sa[s_] = CMK(1, 0), sb[s_] = CMK(0, 0);                \
    BPM_SUB_LOOP(N, S, q_, {                                                                \
      const cplx_t iv_ = INV(k), a_ = CMUL(nlo, iv_);                                       \
      d[k] = CMUL(iv_, d[k]);                                                               \
      sb[s_] = cfma(a_, sb[s_], d[k]);                                                      \
      sa[s_] = CMUL(a_, sa[s_]);                                                            \
    })                                                                                      \
    A = sa[0], B = sb[0];                                                                   \
    for (int s_ = 1; s_ < (S); s_++) B = cfma(sa[s_], B, sb[s_]), A = CMUL(sa[s_], A);      \
  }
#define BPM_FWD_APPLY(N, S, d, INV, sa, sb, X)                                              \
  {                                                                                         \
    cplx_t x_ = X;                                                                          \
    for (int s_ = 0; s_ < (S); s_++) {                                                      \
      const cplx_t in_ = x_;                                                                \
      x_ = cfma(sa[s_], x_, sb[s_]);                                                        \
      sb[s_] = in_; /* from here on: the sub-chain's running value */                       \
    }                                                                                       \
    BPM_SUB_LOOP(N, S, q_, {                                                                \
      sb[s_] = cfma(CMUL(nlo, INV(k)), sb[s_], d[k]);                                       \
      d[k] = sb[s_];                                                                        \
    })                                                                                      \
  }
#define BPM_BWD_COMPOSE(N, S, d, CPK, sp, sq, P, Q)                                         \
  {                                                                                         \
    for (int s_ = 0; s_ < (S); s_++) sp[s_] = CMK(1, 0), sq[s_] = CMK(0, 0);                \
    BPM_SUB_LOOP(N, S, BPM_SUBL(N, S) - 1 - q_, {                                           \
      const cplx_t c_ = CPK(k), m_ = CMK(-c_.x, -c_.y);                                     \
      sq[s_] = cfma(m_, sq[s_], d[k]);                                                      \
      sp[s_] = CMUL(m_, sp[s_]);                                                            \
    })                                                                                      \
    P = sp[(S) - 1], Q = sq[(S) - 1];                                                       \
    for (int s_ = (S) - 2; s_ >= 0; s_--) Q = cfma(sp[s_], Q, sq[s_]), P = CMUL(sp[s_], P); \
  }
#define BPM_BWD_APPLY(N, S, d, CPK, sp, sq, Y)                                              \
  {                                                                                         \
    cplx_t y_ = Y;                                                                          \
    for (int s_ = (S) - 1; s_ >= 0; s_--) {                                                 \
      const cplx_t in_ = y_;                                                                \
      y_ = cfma(sp[s_], y_, sq[s_]);                                                        \
      sq[s_] = in_;                                                                         \
    }                                                                                       \
    BPM_SUB_LOOP(N, S, BPM_SUBL(N, S) - 1 - q_, {                                           \
      sq[s_] = CSUB(d[k], CMUL(CPK(k), sq[s_]));                                            \
      d[k] = sq[s_];                                                                        \
    })                                                                                      \
  }

/* The explicit part at node (i, j) along the other axis: rhs = r e +
 * be (em + ep), with Hadley's ghost (or 0) past the walls. */
HC_INLINE cplx_t adi_rhs(cplx_t r, cplx_t be, cplx_t e, cplx_t em, cplx_t ep, int has_m, int has_p, int tbc) {
  if (!has_m) em = tbc ? CMUL(tbc_eta(e, ep), e) : CMK(0, 0);
  if (!has_p) ep = tbc ? CMUL(tbc_eta(e, em), e) : CMK(0, 0);
  return cfma(r, e, CMUL(be, CADD(em, ep)));
}

/* RHS of the slow (x-line) half-step: explicit along y, within row i. */
HC_INLINE cplx_t rhs_slow(HC_GLOBAL const cplx_t *E, HC_GLOBAL const cplx_t *rr, int runi, cplx_t be, int ny, bidx_t i,
                          bidx_t j, int tbc) {
  bidx_t o = i * ny + j;
  /* neighbours by index, not by a guarded load: a load the compiler
   * evaluates ahead of its guard stays inside the field */
  cplx_t e = E[o], em = E[j > 0 ? o - 1 : o], ep = E[j + 1 < ny ? o + 1 : o];
  return adi_rhs(runi ? rr[0] : rr[o], be, e, em, ep, j > 0, j + 1 < ny, tbc);
}

/* Lines along x (the slow axis, stride ny): a work-group holds BPM_W
 * neighbouring columns (coalesced rows of BPM_W values), each split into
 * BPM_C chunks of BPM_XCHUNK rows; a thread holds its chunk's RHS in
 * registers from one pass of loads (all independent of the recurrence, so
 * they are in flight together), solves it there and writes it once: the
 * field is read and written once per half-step. Launch: global
 * (ceil(ny/BPM_W) BPM_W, BPM_C), local (BPM_W, BPM_C). */
#ifndef BPM_XCHUNK
#define BPM_XCHUNK 1
#endif
/* Sub-chains of a chunk (BPM_SUB_LOOP): per-device tuning values. On CUDA
 * 2 were the fastest, on NVIDIA's OpenCL 1 (and 4 much slower with
 * Hadley's walls). Re-measure with HC_KERNEL_OPTIONS=-DBPM_XSUB=N and
 * tests/gpu/probe.sh bpm. */
#ifndef BPM_XSUB
#if defined(HC_CUDA)
#define BPM_XSUB 2
#else
#define BPM_XSUB 1
#endif
#endif
/* d[] stays in registers only if every loop over it is unrolled (nvcc
 * left the 32-row chunk on the stack without the hint). OpenCL GPUs get
 * the hint too (-DBPM_PRAGMA_UNROLL=1); PoCL 3's compiler corrupts its
 * heap on it, so CPU devices go without. */
#ifndef BPM_PRAGMA_UNROLL
#define BPM_PRAGMA_UNROLL 0
#endif
#if defined(HC_CUDA) || BPM_PRAGMA_UNROLL
#define BPM_UNROLL _Pragma("unroll")
#else
#define BPM_UNROLL
#endif
/* The group shape is fixed: declared, so that the compiler fits its
 * registers to it (and so that NVIDIA's OpenCL, which reports 256 items at
 * most for every kernel, takes larger groups: plugins/opencl). */
#define IDXS(p, cc) ((((p) * BPM_C) + (cc)) * BPM_W + jj)
HC_KERNEL void HC_GROUP_SHAPE(BPM_W, BPM_C, 1) bpm_adi_slow(const int nx_, const int ny_, const int tbc_, const int percol_, const int runi_,
                            const real_t lo_r, const real_t lo_i, const real_t be_r, const real_t be_i,
                            HC_GLOBAL const cplx_t *rr, HC_GLOBAL const cplx_t *fac, HC_GLOBAL const cplx_t *zc,
                            HC_GLOBAL const cplx_t *E, HC_GLOBAL cplx_t *Eout, const int in_rhs,
                            HC_GLOBAL const cplx_t *rro, const real_t bo_r, const real_t bo_i) {
  HC_LOCAL cplx_t sA[2 * BPM_C * BPM_W], sB[2 * BPM_C * BPM_W];
  HC_LOCAL cplx_t sW[6 * BPM_W];
  BPM_RUN_ARGS;
  const int jj = (int)hc_local_id(0), c = (int)hc_local_id(1);
  const bidx_t j = (bidx_t)hc_group_id(0) * BPM_W + jj;
  const int act = j < ny;
  const int k0 = c * BPM_XCHUNK;
  const int cnt = act ? hc_max(0, hc_min(BPM_XCHUNK, nx - k0)) : 0;
  const bidx_t S = percol ? (bidx_t)nx * ny : (bidx_t)nx;
  const cplx_t lo = CMK(lo_r, lo_i), nlo = CMK(-lo_r, -lo_i), be = CMK(be_r, be_i);
  HC_GLOBAL const cplx_t *inv = fac;
  HC_GLOBAL const cplx_t *cp = fac + S;
  if (tbc && c == 0 && act) {
    sW[jj] = E[j];
    sW[BPM_W + jj] = E[ny + j];
    sW[2 * BPM_W + jj] = E[(bidx_t)(nx - 2) * ny + j];
    sW[3 * BPM_W + jj] = E[(bidx_t)(nx - 1) * ny + j];
  } else if (tbc && c == 0) {
    /* columns past ny: defined values, since a compiler may evaluate the
     * walls' tbc_eta below for every column before applying `act` (PoCL
     * does: valgrind saw branches on never-written local memory) */
    for (int w = 0; w < 6; w++) sW[w * BPM_W + jj] = CMK(0, 0);
  }
  /* clamped row and column: past the field, loads stay inside it. Every
   * row index below is clamped too, though a `k < cnt` guard skips the
   * rows past nx: PoCL evaluates guarded loads for every work-item of a
   * group (valgrind saw reads past fac's end at the last chunk). */
  const bidx_t jc = act ? j : ny - 1;
#define XROW(i) (percol ? (i) * ny + jc : (i))
/* row k of the chunk, clamped into the field, unless the build's chunks
 * tile the rows exactly: then every row index is a base and a constant
 * offset, and no clamped index takes a register */
#if BPM_NX > 0 && BPM_NX == BPM_C * BPM_XCHUNK
#define SLOW_ROW(k) (k0 + (k))
#else
#define SLOW_ROW(k) hc_min(k0 + (k), nx - 1)
#endif
  cplx_t d[BPM_XCHUNK];
  /* one loop or the other, not a test per row: the rows' loads must stay
   * independent of each other and in flight together */
  if (BPM_FWD && in_rhs) {
    BPM_UNROLL
    for (int k = 0; k < BPM_XCHUNK; k++) d[k] = k < cnt ? E[(bidx_t)SLOW_ROW(k) * ny + jc] : CMK(0, 0);
  } else {
    BPM_UNROLL
    for (int k = 0; k < BPM_XCHUNK; k++)
      d[k] = k < cnt ? rhs_slow(E, rr, runi, be, ny, SLOW_ROW(k), jc, tbc) : CMK(0, 0);
  }
  /* rows clamped where the chunks do not tile them (see SLOW_ROW) */
#define SLOW_INV(k) inv[XROW(SLOW_ROW(k))]
#define SLOW_CP(k) cp[XROW(SLOW_ROW(k))]
  cplx_t A, B, P, Q, sub_a[BPM_XSUB], sub_b[BPM_XSUB]; /* the sub-chains' maps */
  BPM_FWD_COMPOSE(BPM_XCHUNK, BPM_XSUB, d, SLOW_INV, sub_a, sub_b, A, B);
  int pin;
  BPM_SCAN(sA, sB, IDXS, BPM_C, c, A, B, 1, pin);
  const cplx_t X = c > 0 ? sB[IDXS(pin, c - 1)] : CMK(0, 0);
  HC_BARRIER();
  BPM_FWD_APPLY(BPM_XCHUNK, BPM_XSUB, d, SLOW_INV, sub_a, sub_b, X); /* d = d' */
  BPM_BWD_COMPOSE(BPM_XCHUNK, BPM_XSUB, d, SLOW_CP, sub_a, sub_b, P, Q);
  BPM_SCAN(sA, sB, IDXS, BPM_C, c, P, Q, -1, pin);
  const cplx_t Y = c + 1 < BPM_C ? sB[IDXS(pin, c + 1)] : CMK(0, 0);
  BPM_BWD_APPLY(BPM_XCHUNK, BPM_XSUB, d, SLOW_CP, sub_a, sub_b, Y); /* d = x */
#undef SLOW_INV
#undef SLOW_CP
  /* Hadley's walls only: the last row's pick is an index the compiler may
   * make dynamic, which moves d[] out of registers */
  if (tbc) {
    BPM_UNROLL
    for (int k = 0; k < BPM_XCHUNK; k++)
      if (k < cnt && k0 + k == nx - 1) sW[5 * BPM_W + jj] = d[k];
    if (c == 0 && act) sW[4 * BPM_W + jj] = d[0]; /* x at row 0 */
    HC_BARRIER();
    if (act) {
      cplx_t etaL = tbc_eta(sW[jj], sW[BPM_W + jj]), etaR = tbc_eta(sW[3 * BPM_W + jj], sW[2 * BPM_W + jj]);
      bidx_t b0 = XROW(0), bn = XROW(nx - 1); /* with jc: PoCL loads them for every column */
      cplx_t s0, s1;
      tbc_coeffs(CMUL(lo, etaL), CMUL(lo, etaR), zc[b0], zc[S + b0], zc[bn], zc[S + bn], sW[4 * BPM_W + jj],
                 sW[5 * BPM_W + jj], &s0, &s1);
      BPM_UNROLL
      for (int k = 0; k < BPM_XCHUNK; k++) {
        /* clamped, as in bpm_adi_fast: loads a compiler may hoist stay in bounds */
        const bidx_t ci = XROW(SLOW_ROW(k));
        if (k < cnt) d[k] = CSUB(d[k], CADD(CMUL(zc[ci], s0), CMUL(zc[S + ci], s1)));
      }
    }
  }
#if BPM_FWD
  /* the y-lines' right-hand side; rows k0 - 1 and k0 + cnt are the
   * neighbouring chunks' ends (0 past the walls; d[k] is 0 for k >= cnt).
   * A chunk's last row is read only where the next chunk has rows, so
   * where it is full: d[BPM_XCHUNK - 1], a fixed index (selecting d[cnt -
   * 1] moved d[] to local memory on CUDA, and the step was slower). */
  HC_BARRIER(); /* every thread has read its carry from the last scan */
  sA[IDXS(0, c)] = d[0];
  sB[IDXS(0, c)] = d[BPM_XCHUNK - 1];
  HC_BARRIER();
  const cplx_t up = c > 0 ? sB[IDXS(0, c - 1)] : CMK(0, 0);
  const cplx_t dn = c + 1 < BPM_C && k0 + cnt < nx ? sA[IDXS(0, c + 1)] : CMK(0, 0);
  const cplx_t bo = CMK(bo_r, bo_i);
  BPM_UNROLL /* the index guards inside d[...] keep a loop that is not unrolled (PoCL) in bounds */
  for (int k = 0; k < BPM_XCHUNK; k++)
    if (k < cnt) {
      const bidx_t o = (bidx_t)(k0 + k) * ny + j;
      const cplx_t em = k > 0 ? d[k > 0 ? k - 1 : 0] : up, ep = k + 1 < BPM_XCHUNK ? d[k + 1 < BPM_XCHUNK ? k + 1 : k] : dn;
      Eout[o] = cfma(runi ? rro[0] : rro[o], d[k], CMUL(bo, CADD(em, ep)));
    }
#else
  BPM_UNROLL
  for (int k = 0; k < BPM_XCHUNK; k++)
    if (k < cnt) Eout[(bidx_t)(k0 + k) * ny + j] = d[k];
#endif
}
#undef XROW
#undef SLOW_ROW

/* RHS of the fast (y-line) half-step: explicit along x, within column j. */
HC_INLINE cplx_t rhs_fast(HC_GLOBAL const cplx_t *E, HC_GLOBAL const cplx_t *rr, int runi, cplx_t be, int nx, int ny,
                          bidx_t i, bidx_t j, int tbc) {
  bidx_t o = i * ny + j;
  cplx_t e = E[o], em = E[i > 0 ? o - ny : o], ep = E[i + 1 < nx ? o + ny : o]; /* as in rhs_slow */
  return adi_rhs(runi ? rr[0] : rr[o], be, e, em, ep, i > 0, i + 1 < nx, tbc);
}

/* Lines along y (the fast axis): one work-group of BPM_T threads per row. The
 * RHS is built with coalesced reads into local memory (BPM_LINE values, one
 * pad per BPM_CHUNK against bank conflicts), each thread solves its BPM_CHUNK
 * values in registers, and the row goes back out coalesced. BPM_STAGED=0
 * (a row too long for local memory) reads and writes the chunks directly.
 * The factors fac = [inv | cp] and zc = [z0 | z1] are stored thread-major
 * (YCO: element k of thread t at k BPM_T + t, a line padded to BPM_T
 * BPM_CHUNK with zeros), so that a warp's loads of them are coalesced.
 * Launch: global nx BPM_T, local BPM_T. */
#ifndef BPM_STAGED
#define BPM_STAGED 1
#endif
#if BPM_FWD && (BPM_TBC != 0 || !BPM_STAGED)
#error "BPM_FWD needs -DBPM_TBC=0 and staged y-lines"
#endif
/* Sub-chains of a chunk, as BPM_XSUB: per-device tuning values. Without
 * BPM_FWD 4 were the fastest on both GPU backends (8 no better, 2 slower);
 * fitting the registers to more groups per multiprocessor
 * (__launch_bounds__) made a CUDA step slower. With BPM_FWD (the row's RHS
 * read once, not built from three rows) 2 were a little faster on both.
 * Re-measure with HC_KERNEL_OPTIONS=-DBPM_YSUB=N and tests/gpu/probe.sh
 * bpm, in alternating rounds. */
#ifndef BPM_YSUB
#if BPM_FWD
#define BPM_YSUB 2
#else
#define BPM_YSUB 4
#endif
#endif
#define PADJ(j) ((j) + (j) / BPM_CHUNK)
#define YCO(k) ((k) * BPM_T + t)
HC_KERNEL void bpm_adi_fast(const int nx_, const int ny_, const int tbc_, const int percol_, const int runi_,
                            const real_t lo_r, const real_t lo_i, const real_t be_r, const real_t be_i,
                            HC_GLOBAL const cplx_t *rr, HC_GLOBAL const cplx_t *fac, HC_GLOBAL const cplx_t *zc,
                            HC_GLOBAL const cplx_t *E, HC_GLOBAL cplx_t *Eout, const int emit,
                            HC_GLOBAL const cplx_t *rro, const real_t bo_r, const real_t bo_i, HC_GLOBAL cplx_t *Eemit) {
#if BPM_STAGED
  HC_LOCAL cplx_t sd[BPM_LINE + BPM_LINE / BPM_CHUNK + 1];
#endif
  HC_LOCAL cplx_t sA[2 * BPM_T], sB[2 * BPM_T];
  HC_LOCAL cplx_t sW[6];
  BPM_RUN_ARGS;
  const int t = (int)hc_local_id(0);
  const bidx_t i = (bidx_t)hc_group_id(0);
  const int m = (ny + BPM_T - 1) / BPM_T, k0 = t * m;
  const int cnt = hc_max(0, hc_min(m, ny - k0));
  const bidx_t L = (bidx_t)BPM_T * BPM_CHUNK, S = percol ? (bidx_t)nx * L : L, cb = percol ? i * L : 0;
  const cplx_t lo = CMK(lo_r, lo_i), nlo = CMK(-lo_r, -lo_i), be = CMK(be_r, be_i);
  HC_GLOBAL const cplx_t *inv = fac + cb;
  HC_GLOBAL const cplx_t *cp = fac + S + cb;
  HC_GLOBAL cplx_t *out = Eout + i * ny;
  if (tbc && t == 0) {
    sW[0] = E[i * ny];
    sW[1] = E[i * ny + 1];
    sW[2] = E[i * ny + ny - 2];
    sW[3] = E[i * ny + ny - 1];
  }
  cplx_t d[BPM_CHUNK];
#if BPM_STAGED
  for (bidx_t j = t; j < ny; j += BPM_T) sd[PADJ(j)] = BPM_FWD ? E[i * ny + j] : rhs_fast(E, rr, runi, be, nx, ny, i, j, tbc);
  HC_BARRIER();
  for (int k = 0; k < BPM_CHUNK; k++) d[k] = k < cnt ? sd[PADJ(hc_min(k0 + k, ny - 1))] : CMK(0, 0);
#else
  for (int k = 0; k < BPM_CHUNK; k++) d[k] = k < cnt ? rhs_fast(E, rr, runi, be, nx, ny, i, hc_min(k0 + k, ny - 1), tbc) : CMK(0, 0);
#endif
#define FAST_INV(k) inv[YCO(k)]
#define FAST_CP(k) cp[YCO(k)]
  cplx_t A, B, P, Q, sub_a[BPM_YSUB], sub_b[BPM_YSUB]; /* the sub-chains' maps */
  BPM_FWD_COMPOSE(BPM_CHUNK, BPM_YSUB, d, FAST_INV, sub_a, sub_b, A, B);
  int pin;
  BPM_SCAN(sA, sB, IDX1, BPM_T, t, A, B, 1, pin);
  const cplx_t X = t > 0 ? sB[IDX1(pin, t - 1)] : CMK(0, 0);
  HC_BARRIER();
  BPM_FWD_APPLY(BPM_CHUNK, BPM_YSUB, d, FAST_INV, sub_a, sub_b, X);
  BPM_BWD_COMPOSE(BPM_CHUNK, BPM_YSUB, d, FAST_CP, sub_a, sub_b, P, Q);
  BPM_SCAN(sA, sB, IDX1, BPM_T, t, P, Q, -1, pin);
  const cplx_t Y = t + 1 < BPM_T ? sB[IDX1(pin, t + 1)] : CMK(0, 0);
  BPM_BWD_APPLY(BPM_CHUNK, BPM_YSUB, d, FAST_CP, sub_a, sub_b, Y);
#undef FAST_INV
#undef FAST_CP
  if (tbc) { /* as in bpm_adi_slow */
    for (int k = 0; k < BPM_CHUNK; k++)
      if (k < cnt && k0 + k == ny - 1) sW[5] = d[k];
    if (t == 0) sW[4] = d[0];
    HC_BARRIER();
    cplx_t etaL = tbc_eta(sW[0], sW[1]), etaR = tbc_eta(sW[3], sW[2]);
    HC_GLOBAL const cplx_t *z0 = zc + cb;
    HC_GLOBAL const cplx_t *z1 = zc + S + cb;
    cplx_t s0, s1;
    const bidx_t last = ((ny - 1) % BPM_CHUNK) * BPM_T + (ny - 1) / BPM_CHUNK; /* where j = ny - 1 is */
    tbc_coeffs(CMUL(lo, etaL), CMUL(lo, etaR), z0[0], z1[0], z0[last], z1[last], sW[4], sW[5], &s0, &s1);
    for (int k = 0; k < BPM_CHUNK; k++) /* padded lines: a load hoisted above k < cnt stays in bounds */
      if (k < cnt) d[k] = CSUB(d[k], CADD(CMUL(z0[YCO(k)], s0), CMUL(z1[YCO(k)], s1)));
  }
#if BPM_STAGED
  for (int k = 0; k < BPM_CHUNK; k++)
    if (k < cnt) sd[PADJ(k0 + k)] = d[k];
  HC_BARRIER();
#if BPM_FWD
  /* the x-lines' right-hand side (and the field where it is wanted) */
  const cplx_t bo = CMK(bo_r, bo_i);
  for (bidx_t j = t; j < ny; j += BPM_T) {
    const cplx_t v = sd[PADJ(j)];
    const cplx_t em = j > 0 ? sd[PADJ(j > 0 ? j - 1 : 0)] : CMK(0, 0);
    const cplx_t ep = j + 1 < ny ? sd[PADJ(j + 1 < ny ? j + 1 : j)] : CMK(0, 0);
    if (emit) Eemit[i * ny + j] = v;
    out[j] = cfma(runi ? rro[0] : rro[i * ny + j], v, CMUL(bo, CADD(em, ep)));
  }
#else
  for (bidx_t j = t; j < ny; j += BPM_T) out[j] = sd[PADJ(j)];
#endif
#else
  for (int k = 0; k < BPM_CHUNK; k++)
    if (k < cnt) out[k0 + k] = d[k];
#endif
}

/* Power of a 3-D field by rows: partial[(save nx + i) 2 + {0, 1}] = the
 * window's and the core's sum of |E|^2 over row i (one work-group of BPM_T
 * threads per row, BPM_T a power of two). */
HC_KERNEL void bpm_power3d(const int nx, const int ny, HC_GLOBAL const cplx_t *E, HC_GLOBAL const real_t *mask,
                           HC_GLOBAL real_t *partial, const long save) {
  HC_LOCAL real_t s1[BPM_T], s2[BPM_T];
  const int t = (int)hc_local_id(0);
  const long i = hc_group_id(0);
  real_t a = 0, b = 0;
  for (long j = t; j < ny; j += BPM_T) {
    real_t v = CABS2(E[i * ny + j]);
    a += v;
    b += mask[i * ny + j] * v;
  }
  s1[t] = a;
  s2[t] = b;
  HC_BARRIER();
  for (int h = BPM_T / 2; h > 0; h >>= 1) {
    if (t < h) {
      s1[t] += s1[t + h];
      s2[t] += s2[t + h];
    }
    HC_BARRIER();
  }
  if (t == 0) {
    partial[(save * nx + i) * 2] = s1[0];
    partial[(save * nx + i) * 2 + 1] = s2[0];
  }
}
