/* 2-D host kernels, written once for both precisions: host_kernels.c
 * includes this file after host_common_impl.h, with R (real), C (complex),
 * RF and SUF (name suffix) defined. Argument lists match kernels.hcl one
 * for one. */

/* Writes |E|^2 of the line as row `row` of the intensity map. */
static void FN(intensity_row_)(int n, const C *restrict e, R *restrict inten, long row) {
  R *out = inten + (size_t)row * (size_t)n;
  for (int i = 0; i < n; i++) out[i] = RE(e[i]) * RE(e[i]) + IM(e[i]) * IM(e[i]);
}

/* Hadley's rank-2 correction of a whole line in place (tbc_s_ says how):
 * x = y - z0 s0 - z1 s1, z0 and z1 precomputed. */
static void FN(tbc_correct_)(int n, C dL, C dR, const C *restrict z0, const C *restrict z1, C *restrict x) {
  C s0, s1;
  FN(tbc_s_)(dL, dR, z0[0], z1[0], z0[n - 1], z1[n - 1], x[0], x[n - 1], &s0, &s1);
  for (int i = 0; i < n; i++) x[i] -= z0[i] * s0 + z1[i] * s1;
}

/* The direct march: `steps` theta-steps of the line E in place, by Thomas
 * with the precomputed factors coef = [r | inv | cp] (r: the explicit
 * diagonal). One group, one thread: a line is a sequential recurrence. */
static void FN(bpm_march2d_)(const hc_host_group_t *g, void *const *args) {
  (void)g;
  const int n = *(const int *)args[0], steps = *(const int *)args[1], tbc = *(const int *)args[2];
  const C lo = *(const R *)args[3] + I * *(const R *)args[4];
  const C be = *(const R *)args[5] + I * *(const R *)args[6];
  const C *restrict r = args[7], *restrict inv = r + n, *restrict cp = r + 2 * n;
  const C *restrict z0 = args[8], *restrict z1 = z0 + n;
  C *restrict e = args[9];
  R *inten = args[10];
  const long row = *(const long *)args[11];
  for (int s = 0; s < steps; s++) {
    C etaL = 0, etaR = 0;
    if (tbc) etaL = FN(tbc_eta_)(e[0], e[1]), etaR = FN(tbc_eta_)(e[n - 1], e[n - 2]);
    /* Forward sweep in place: the RHS needs the old left neighbour, kept
     * in `em`, and the old right one, not yet overwritten. */
    C em = etaL * e[0], d = 0;
    for (int i = 0; i < n; i++) {
      C ei = e[i], ep = i + 1 < n ? e[i + 1] : etaR * ei;
      C rhs = r[i] * ei + be * (em + ep);
      d = (rhs - lo * d) * inv[i];
      e[i] = d;
      em = ei;
    }
    for (int i = n - 2; i >= 0; i--) e[i] -= cp[i] * e[i + 1];
    if (tbc) FN(tbc_correct_)(n, lo * etaL, lo * etaR, z0, z1, e);
  }
  FN(intensity_row_)(n, e, inten, row);
}

/* z = A x for A stored by diagonals as the paper stores it: band =
 * [Adiag (n) | upper bands 1..q | lower bands 1..p], band m starting at
 * (m-1) n - m (m-1)/2 of its part. The paper's vector form: z = Adiag .* x,
 * then each band's shifted element-wise product. */
static void FN(band_mul_)(int n, int p, int q, const C *restrict band, const C *restrict x, C *restrict z) {
  const C *bd = band + n, *cd = bd + ((size_t)q * n - (size_t)q * (q + 1) / 2);
  for (int i = 0; i < n; i++) z[i] = band[i] * x[i];
  for (int m = 1; m <= q; m++) {
    const C *restrict u = bd + ((size_t)(m - 1) * n - (size_t)m * (m - 1) / 2);
    for (int i = 0; i < n - m; i++) z[i] += u[i] * x[i + m];
  }
  for (int h = 1; h <= p; h++) {
    const C *restrict l = cd + ((size_t)(h - 1) * n - (size_t)h * (h - 1) / 2);
    for (int i = h; i < n; i++) z[i] += l[i - h] * x[i - h];
  }
}

/* The paper's one-parameter (Richardson) iteration x <- x + tau (b - M x),
 * b = R E, with M and R stored by diagonals (band, rband; widths p, q);
 * Hadley's walls add lo eta (M) and be eta (R) to the corner rows. stats
 * (per launch): sweeps summed, the most in one step, steps that missed
 * tol, and the step of this launch (1-based) where it diverged, else 0. */
static void FN(bpm_rich2d_)(const hc_host_group_t *g, void *const *args) {
  (void)g;
  const int n = *(const int *)args[0], steps = *(const int *)args[1], tbc = *(const int *)args[2];
  const C lo = *(const R *)args[3] + I * *(const R *)args[4];
  const C be = *(const R *)args[5] + I * *(const R *)args[6];
  const C *restrict rband = args[7];
  const C *restrict band = args[8];
  const int p = *(const int *)args[9], q = *(const int *)args[10];
  const C tau = *(const R *)args[11] + I * *(const R *)args[12];
  const int iters = *(const int *)args[13];
  const R tol = *(const R *)args[14];
  C *e = args[15];
  C *restrict b = args[16], *xn = b + n, *restrict z = b + 2 * n;
  int64_t *stats = (int64_t *)args[17] + 4 * *(const long *)args[19];
  R *inten = args[18];
  const long row = *(const long *)args[19];
  for (int s = 0; s < steps && !stats[3]; s++) {
    C etaL = 0, etaR = 0;
    if (tbc) etaL = FN(tbc_eta_)(e[0], e[1]), etaR = FN(tbc_eta_)(e[n - 1], e[n - 2]);
    FN(band_mul_)(n, p, q, rband, e, b);
    b[0] += be * etaL * e[0];
    b[n - 1] += be * etaR * e[n - 1];
    double bn2 = 0;
    for (int i = 0; i < n; i++) bn2 += BPM_CAT(creal, RF)(b[i] * BPM_CAT(conj, RF)(b[i]));
    const C cL = lo * etaL, cR = lo * etaR;
    C *x = e, *y = xn;
    int it = 0, done = 0;
    while (it < iters && !done) {
      FN(band_mul_)(n, p, q, band, x, z);
      z[0] += cL * x[0];
      z[n - 1] += cR * x[n - 1];
      double rn2 = 0;
      for (int i = 0; i < n; i++) {
        C res = b[i] - z[i];
        y[i] = x[i] + tau * res;
        rn2 += BPM_CAT(creal, RF)(res * BPM_CAT(conj, RF)(res));
      }
      C *t = x;
      x = y, y = t;
      it++;
      /* The device kernel's test, at the device kernel's cadence (every 8th
       * sweep and the last): tested after every sweep, a first guess whose
       * residual is already below tol stops after one sweep, which makes
       * the march an explicit scheme that blows up where the device's
       * converges. Both backends run the same iteration. */
      if ((it & 7) != 0 && it != iters) continue;
      if (rn2 <= (double)tol * (double)tol * bn2)
        done = 1;
      else if (!(rn2 <= 1e12 * bn2)) { /* diverging, or NaN: the step (1-based) that did */
        stats[3] = s + 1;
        break;
      }
    }
    if (x != e) memcpy(e, x, (size_t)n * sizeof *e);
    stats[0] += it;
    if (it > stats[1]) stats[1] = it;
    if (!done) stats[2]++;
  }
  FN(intensity_row_)(n, e, inten, row);
}
