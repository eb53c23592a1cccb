/* What the 2-D and 3-D host kernels share, written once for both
 * precisions: host_kernels.c includes this file first, with R (real), C
 * (complex), RF (the libm suffix: f or empty) and SUF (name suffix)
 * defined, then host2d_impl.h and host3d_impl.h. */
#define BPM_CAT_(a, b) a##b
#define BPM_CAT(a, b) BPM_CAT_(a, b)
#define FN(name) BPM_CAT(name, SUF)
#define RE(z) BPM_CAT(creal, RF)(z)
#define IM(z) BPM_CAT(cimag, RF)(z)

/* Hadley's transparent wall: the ratio of the field at the wall to its
 * inner neighbour; one with a negative imaginary part is replaced by its
 * modulus (Hadley's restriction to outgoing waves); 0 when the neighbour
 * is 0. */
static C FN(tbc_eta_)(C edge, C inner) {
  R m2 = RE(inner) * RE(inner) + IM(inner) * IM(inner);
  if (!(m2 > 0)) return 0;
  C r = edge / inner;
  return IM(r) < 0 ? BPM_CAT(cabs, RF)(r) : r;
}

/* Hadley's rank-2 correction: y solved with the plain walls; the walls'
 * extrapolation adds dL e0 e0^T + dR en en^T to the matrix. With z0, z1
 * the plain solves of e0, en (their end values z00, z0n, z10, z1n), the
 * solution is x = y - z0 s0 - z1 s1 with these s0, s1. */
static void FN(tbc_s_)(C dL, C dR, C z00, C z10, C z0n, C z1n, C y0, C yn, C *s0, C *s1) {
  C a11 = 1 + dL * z00, a12 = dL * z10, a21 = dR * z0n, a22 = 1 + dR * z1n;
  C r1 = dL * y0, r2 = dR * yn, det = a11 * a22 - a12 * a21;
  *s0 = (r1 * a22 - a12 * r2) / det;
  *s1 = (a11 * r2 - a21 * r1) / det;
}
