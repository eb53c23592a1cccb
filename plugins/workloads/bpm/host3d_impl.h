/* 3-D host kernels (ADI half-steps and the power by rows), written once
 * for both precisions: host_kernels.c includes this file after
 * host_common_impl.h, with R, C, RF and SUF defined. Argument lists match
 * kernels.hcl, but for the arguments after Eout, which only the device
 * kernels' BPM_FWD reads (adi3d.c never runs the host in that mode). Both
 * half-steps run the recurrence across a block of lines
 * at once, so the inner loops walk contiguous memory (and vectorise): the
 * slow half-step directly (its lines are columns), the fast one through a
 * transposed block of rows. */

/* Explicit part at (i, j) with the neighbours em, ep along the other axis
 * (has_m/has_p: inside the window; else Hadley's ghost or 0). */
static inline C FN(rhs3_)(C r, C be, C e, C em, C ep, int has_m, int has_p, int tbc) {
  if (!has_m) em = tbc ? FN(tbc_eta_)(e, ep) * e : 0;
  if (!has_p) ep = tbc ? FN(tbc_eta_)(e, em) * e : 0;
  return r * e + be * (em + ep);
}

/* x-lines (columns j in [lo, hi)): forward sweep row by row into Eout,
 * then back substitution row by row. The inner loops run over contiguous
 * j with the branches hoisted (uniform or per-node coefficients, first
 * row, the two edge columns), so the compiler vectorises them. */
static void FN(bpm_adi_slow_)(const hc_host_group_t *g, void *const *args) {
  const int nx = *(const int *)args[0], ny = *(const int *)args[1], tbc = *(const int *)args[2];
  const int percol = *(const int *)args[3], runi = *(const int *)args[4];
  const C lo = *(const R *)args[5] + I * *(const R *)args[6], be = *(const R *)args[7] + I * *(const R *)args[8];
  const C *rr = args[9], *fac = args[10], *zc = args[11];
  const C *E = args[12];
  C *Eout = args[13];
  const size_t S = percol ? (size_t)nx * ny : (size_t)nx;
  const C *inv = fac, *cp = fac + S;
  const long j0 = (long)g->lo[0], j1 = (long)g->hi[0];
  const long a = j0 > 0 ? j0 : 1, b = j1 < ny - 1 ? j1 : ny - 1; /* interior columns of the block */
  for (long i = 0; i < nx; i++) {
    const C *restrict er = E + i * ny;
    C *restrict out = Eout + i * ny;
    const C *restrict prev = i > 0 ? Eout + (i - 1) * ny : out; /* not read when i == 0 */
    const C *restrict rrow = rr + (runi ? 0 : i * ny);
    const C *restrict irow = inv + (percol ? i * ny : 0);
    const C r0 = rr[0], iv = inv[percol ? 0 : i];
    if (!runi || percol) {
      for (long j = a; j < b; j++) {
        C d = (runi ? r0 : rrow[j]) * er[j] + be * (er[j - 1] + er[j + 1]);
        if (i > 0) d -= lo * prev[j];
        out[j] = d * (percol ? irow[j] : iv);
      }
    } else if (i > 0) {
      for (long j = a; j < b; j++) out[j] = (r0 * er[j] + be * (er[j - 1] + er[j + 1]) - lo * prev[j]) * iv;
    } else {
      for (long j = a; j < b; j++) out[j] = (r0 * er[j] + be * (er[j - 1] + er[j + 1])) * iv;
    }
    for (int q = 0; q < 2; q++) { /* the edge columns, with the walls' ghosts */
      const long j = q ? ny - 1 : 0;
      if (j < j0 || j >= j1) continue;
      C r = runi ? r0 : rrow[j];
      C d = FN(rhs3_)(r, be, er[j], j > 0 ? er[j - 1] : er[j], j + 1 < ny ? er[j + 1] : er[j], j > 0, j + 1 < ny, tbc);
      if (i > 0) d -= lo * prev[j];
      out[j] = d * (percol ? irow[j] : iv);
    }
  }
  for (long i = nx - 2; i >= 0; i--) {
    C *restrict out = Eout + i * ny;
    const C *restrict next = out + ny;
    if (percol) {
      const C *restrict crow = cp + i * ny;
      for (long j = j0; j < j1; j++) out[j] -= crow[j] * next[j];
    } else {
      const C c1 = cp[i];
      for (long j = j0; j < j1; j++) out[j] -= c1 * next[j];
    }
  }
  if (tbc)
    for (long j = j0; j < j1; j++) {
      size_t b0 = percol ? (size_t)j : 0, bn = percol ? (size_t)((nx - 1) * ny + j) : (size_t)(nx - 1);
      C etaL = FN(tbc_eta_)(E[j], E[ny + j]), etaR = FN(tbc_eta_)(E[(nx - 1) * ny + j], E[(nx - 2) * ny + j]);
      C s0, s1;
      FN(tbc_s_)
      (lo * etaL, lo * etaR, zc[b0], zc[S + b0], zc[bn], zc[S + bn], Eout[j], Eout[(nx - 1) * ny + j], &s0, &s1);
      for (long i = 0; i < nx; i++) {
        size_t ci = percol ? (size_t)(i * ny + j) : (size_t)i;
        Eout[i * ny + j] -= zc[ci] * s0 + zc[S + ci] * s1;
      }
    }
}

/* y-lines (rows i in [lo, hi)), BPM_HOST_ROWS at a time through a
 * transposed scratch block D[j][r], so the recurrence along j runs across
 * the rows of the block. */
#ifndef BPM_HOST_ROWS
#define BPM_HOST_ROWS 8
#endif
static void FN(bpm_adi_fast_)(const hc_host_group_t *g, void *const *args) {
  const int nx = *(const int *)args[0], ny = *(const int *)args[1], tbc = *(const int *)args[2];
  const int percol = *(const int *)args[3], runi = *(const int *)args[4];
  const C lo = *(const R *)args[5] + I * *(const R *)args[6], be = *(const R *)args[7] + I * *(const R *)args[8];
  const C *rr = args[9], *fac = args[10], *zc = args[11];
  const C *E = args[12];
  C *Eout = args[13];
  const size_t S = percol ? (size_t)nx * ny : (size_t)ny;
  enum { NR = BPM_HOST_ROWS };
  /* calloc: the rows of a short last block are computed (whole-block
   * loops vectorise) on zeros and never written out */
  C *D = calloc((size_t)ny * NR, sizeof *D);
  if (!D) return; /* cannot happen in practice; the result would show it */
  for (long i0 = (long)g->lo[0]; i0 < (long)g->hi[0]; i0 += NR) {
    const int nr = (int)((long)g->hi[0] - i0 < NR ? (long)g->hi[0] - i0 : NR);
    for (int r = 0; r < nr; r++) {
      const long i = i0 + r;
      const C *er = E + i * ny, *em = i > 0 ? er - ny : NULL, *ep = i + 1 < nx ? er + ny : NULL;
      for (long j = 0; j < ny; j++) {
        C rc = runi ? rr[0] : rr[i * ny + j];
        C d = em && ep ? rc * er[j] + be * (em[j] + ep[j])
                       : FN(rhs3_)(rc, be, er[j], em ? em[j] : er[j], ep ? ep[j] : er[j], em != NULL, ep != NULL, tbc);
        D[j * NR + r] = d;
      }
    }
    /* forward and back substitution across the block's rows: the inner
     * loops over r are independent recurrences, side by side */
    for (long j = 0; j < ny; j++) {
      C *restrict dj = D + j * NR;
      const C *restrict dp = j > 0 ? dj - NR : dj;
      if (percol) {
        for (int r = 0; r < nr; r++) {
          C d = j > 0 ? dj[r] - lo * dp[r] : dj[r];
          dj[r] = d * fac[(size_t)(i0 + r) * ny + j];
        }
      } else if (j > 0) {
        const C iv = fac[j];
        for (int r = 0; r < NR; r++) dj[r] = (dj[r] - lo * dp[r]) * iv;
      } else {
        for (int r = 0; r < NR; r++) dj[r] *= fac[0];
      }
    }
    for (long j = ny - 2; j >= 0; j--) {
      C *restrict dj = D + j * NR;
      const C *restrict dn = dj + NR;
      if (percol) {
        for (int r = 0; r < nr; r++) dj[r] -= fac[S + (size_t)(i0 + r) * ny + j] * dn[r];
      } else {
        const C c1 = fac[S + j];
        for (int r = 0; r < NR; r++) dj[r] -= c1 * dn[r];
      }
    }
    for (int r = 0; r < nr; r++) {
      const long i = i0 + r;
      if (tbc) {
        const C *er = E + i * ny;
        size_t cb = percol ? (size_t)(i * ny) : 0;
        C etaL = FN(tbc_eta_)(er[0], er[1]), etaR = FN(tbc_eta_)(er[ny - 1], er[ny - 2]);
        C s0, s1;
        FN(tbc_s_)
        (lo * etaL, lo * etaR, zc[cb], zc[S + cb], zc[cb + ny - 1], zc[S + cb + ny - 1], D[r],
         D[(size_t)(ny - 1) * NR + r], &s0, &s1);
        for (long j = 0; j < ny; j++) D[j * NR + r] -= zc[cb + j] * s0 + zc[S + cb + j] * s1;
      }
      C *out = Eout + i * ny;
      for (long j = 0; j < ny; j++) out[j] = D[j * NR + r];
    }
  }
  free(D);
}

/* partial[(save nx + i) 2 + {0, 1}]: the row's window and core power. */
static void FN(bpm_power3d_)(const hc_host_group_t *g, void *const *args) {
  const int ny = *(const int *)args[1];
  const int nx = *(const int *)args[0];
  const C *E = args[2];
  const R *mask = args[3];
  R *partial = args[4];
  const long save = *(const long *)args[5];
  for (long i = (long)g->lo[0]; i < (long)g->hi[0]; i++) {
    double a = 0, b = 0;
    for (long j = 0; j < ny; j++) {
      C e = E[i * ny + j];
      double v = (double)(RE(e) * RE(e) + IM(e) * IM(e));
      a += v;
      b += (double)mask[i * ny + j] * v;
    }
    partial[(save * nx + i) * 2] = (R)a;
    partial[(save * nx + i) * 2 + 1] = (R)b;
  }
}
