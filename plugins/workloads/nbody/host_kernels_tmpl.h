/* nbody host kernels for one precision: included by host_kernels.c with
 * NB_T (float/double), NB_SFX(name) (name_f32/_f64), NB_RSQRT and NB_SQRT.
 * Arguments and layout as in kernels.hcl; args[i] points at argument i. */

/* Lanes: one 64-byte vector of NB_T, kept as separate partial sums so the
 * compiler vectorises the j loop without reassociating anything. */
#define NB_VL ((int)(64 / sizeof(NB_T)))
#define NB_JB ((int)(4096 / sizeof(NB_T))) /* j block as SoA: 4 arrays, 16 KiB */
#define NB_IB 128                          /* i bodies per sweep over the j blocks */

/* Adds the field at (xi, yi, zi) of the SoA bodies [0, len) (len a multiple
 * of NB_VL) to out[0..3]; guard and pot are constants after inlining. */
static inline __attribute__((always_inline)) void NB_SFX(field_one)(NB_T xi, NB_T yi, NB_T zi, const NB_T *restrict xs,
                                                                    const NB_T *restrict ys, const NB_T *restrict zs,
                                                                    const NB_T *restrict qs, int64_t len, NB_T eps2,
                                                                    int guard, int pot, double *out) {
  NB_T ax[NB_VL], ay[NB_VL], az[NB_VL], ap[NB_VL];
  for (int l = 0; l < NB_VL; l++) ax[l] = ay[l] = az[l] = ap[l] = 0;
  for (int64_t j = 0; j < len; j += NB_VL) {
    for (int l = 0; l < NB_VL; l++) {
      const NB_T dx = xi - xs[j + l], dy = yi - ys[j + l], dz = zi - zs[j + l];
      const NB_T d2 = dx * dx + (dy * dy + (dz * dz + eps2));
      NB_T inv = NB_RSQRT(d2);
      if (guard) inv = d2 > eps2 ? inv : (NB_T)0;
      const NB_T qinv = qs[j + l] * inv;
      const NB_T s = qinv * inv * inv;
      ax[l] += s * dx;
      ay[l] += s * dy;
      az[l] += s * dz;
      if (pot) ap[l] += qinv;
    }
  }
  double sx = 0, sy = 0, sz = 0, sp = 0;
  for (int l = 0; l < NB_VL; l++) sx += ax[l], sy += ay[l], sz += az[l], sp += ap[l];
  out[0] += sx;
  out[1] += sy;
  out[2] += sz;
  out[3] += sp;
}

/* Bodies [lo, hi) against bodies [j0, j1): j blocks staged as SoA in L1,
 * each swept by NB_IB bodies i; block sums gathered in double. */
NB_CLONES static void NB_SFX(field_rows)(const NB_T *restrict pos, NB_T *restrict out, int64_t lo, int64_t hi,
                                         int64_t j0, int64_t j1, NB_T eps2, int guard, int pot) {
  NB_T xs[NB_JB] __attribute__((aligned(64))), ys[NB_JB] __attribute__((aligned(64)));
  NB_T zs[NB_JB] __attribute__((aligned(64))), qs[NB_JB] __attribute__((aligned(64)));
  double acc[NB_IB][4];
#if NB_HAVE_AVX512
  const int avx512 = nb_avx512_usable();
#endif
  for (int64_t ib = lo; ib < hi; ib += NB_IB) {
    const int64_t ie = ib + NB_IB < hi ? ib + NB_IB : hi;
    memset(acc, 0, sizeof acc);
    for (int64_t jb = j0; jb < j1; jb += NB_JB) {
      const int64_t len = jb + NB_JB < j1 ? NB_JB : j1 - jb;
      for (int64_t j = 0; j < len; j++) {
        const NB_T *p = pos + 4 * (jb + j);
        xs[j] = p[0], ys[j] = p[1], zs[j] = p[2], qs[j] = p[3];
      }
      for (int64_t i = ib; i < ie; i++) {
        const NB_T *p = pos + 4 * i;
        double *a = acc[i - ib];
#if NB_HAVE_AVX512
        if (avx512) {
          NB_SFX(nb_avx512_field)(p[0], p[1], p[2], xs, ys, zs, qs, len, eps2, guard, pot, a);
          continue;
        }
#endif
        /* Four specialisations, so neither flag costs anything per pair. */
        if (guard && pot)
          NB_SFX(field_one)(p[0], p[1], p[2], xs, ys, zs, qs, len, eps2, 1, 1, a);
        else if (guard)
          NB_SFX(field_one)(p[0], p[1], p[2], xs, ys, zs, qs, len, eps2, 1, 0, a);
        else if (pot)
          NB_SFX(field_one)(p[0], p[1], p[2], xs, ys, zs, qs, len, eps2, 0, 1, a);
        else
          NB_SFX(field_one)(p[0], p[1], p[2], xs, ys, zs, qs, len, eps2, 0, 0, a);
      }
    }
    for (int64_t i = ib; i < ie; i++)
      for (int c = 0; c < 4; c++) out[4 * i + c] = (NB_T)acc[i - ib][c];
  }
}

/* nbody_field(n, npad, slice_len, eps2, flags, pos, field, i_off): the
 * group's bodies i_off + [lo, hi) against the slice group_id[1]. */
static void NB_SFX(field)(const hc_host_group_t *g, void *const *args) {
  const int64_t npad = *(const int64_t *)args[1], slice_len = *(const int64_t *)args[2];
  const NB_T eps2 = *(const NB_T *)args[3];
  const int flags = *(const int32_t *)args[4];
  const int64_t slice = (int64_t)g->group_id[1];
  const int64_t off = *(const int64_t *)args[7];
  const int64_t j0 = slice * slice_len, j1 = j0 + slice_len < npad ? j0 + slice_len : npad;
  NB_SFX(field_rows)
  ((const NB_T *)args[5], (NB_T *)args[6] + 4 * slice * npad, off + (int64_t)g->lo[0], off + (int64_t)g->hi[0], j0, j1,
   eps2, !!(flags & NB_FLAG_GUARD), !!(flags & NB_FLAG_POT));
}

/* The same sum as a plain serial double loop, as a programmer writes it
 * first (variant=serial-reference, the benchmarks' baseline). */
static void NB_SFX(field_serial)(const hc_host_group_t *g, void *const *args) {
  const int64_t n = *(const int64_t *)args[0], npad = *(const int64_t *)args[1];
  const NB_T eps2 = *(const NB_T *)args[3];
  const int flags = *(const int32_t *)args[4];
  const int guard = !!(flags & NB_FLAG_GUARD), pot = !!(flags & NB_FLAG_POT);
  const NB_T *pos = args[5];
  NB_T *field = args[6];
  const int64_t off = *(const int64_t *)args[7];
  for (int64_t i = off + (int64_t)g->lo[0]; i < off + (int64_t)g->hi[0] && i < npad; i++) {
    NB_T ax = 0, ay = 0, az = 0, ph = 0;
    for (int64_t j = 0; j < n && i < n; j++) {
      const NB_T dx = pos[4 * i] - pos[4 * j], dy = pos[4 * i + 1] - pos[4 * j + 1],
                 dz = pos[4 * i + 2] - pos[4 * j + 2];
      const NB_T d2 = dx * dx + dy * dy + dz * dz + eps2;
      if (guard && !(d2 > eps2)) continue;
      const NB_T inv = 1 / NB_SQRT(d2);
      const NB_T s = pos[4 * j + 3] * inv * inv * inv;
      ax += s * dx;
      ay += s * dy;
      az += s * dz;
      if (pot) ph += pos[4 * j + 3] * inv;
    }
    field[4 * i] = ax, field[4 * i + 1] = ay, field[4 * i + 2] = az, field[4 * i + 3] = ph;
  }
}

/* nbody_update(npad, nslices, dt, kc, bx, by, bz, eps2, boris, commit, diag,
 * pos, vel, field, partial, i_lo, i_hi): see kernels.hcl; the group's
 * bodies are i_lo + [lo, hi). */
static void NB_SFX(update)(const hc_host_group_t *g, void *const *args) {
  const int64_t npad = *(const int64_t *)args[0];
  const int nslices = *(const int32_t *)args[1];
  const NB_T dt = *(const NB_T *)args[2], kc = *(const NB_T *)args[3];
  const NB_T bx = *(const NB_T *)args[4], by = *(const NB_T *)args[5], bz = *(const NB_T *)args[6];
  const NB_T eps2 = *(const NB_T *)args[7];
  const int boris = *(const int32_t *)args[8], commit = *(const int32_t *)args[9], diag = *(const int32_t *)args[10];
  NB_T *pos = args[11], *vel = args[12];
  const NB_T *field = args[13];
  double *partial = args[14];
  const size_t i_lo = (size_t) * (const int64_t *)args[15], i_hi = (size_t) * (const int64_t *)args[16];
  /* The self term of the potential, as the field loop computed it. */
  const NB_T self_inv = (diag && !nb_guard(eps2, sizeof(NB_T) == 8)) ? NB_RSQRT(eps2) : 0;
  double ke = 0, pe = 0, mom[3] = {0, 0, 0};
  for (size_t i = i_lo + g->lo[0]; i < i_lo + g->hi[0] && i < i_hi; i++) {
    NB_T *p = pos + 4 * i, *v = vel + 4 * i;
    NB_T e[4] = {0, 0, 0, 0};
    for (int s = 0; s < nslices; s++)
      for (int c = 0; c < 4; c++) e[c] += field[4 * ((size_t)s * (size_t)npad + i) + c];
    const NB_T qm = p[3] / v[3];
    const NB_T a[3] = {qm * kc * e[0], qm * kc * e[1], qm * kc * e[2]};
    NB_T nv[3];
    if (boris) {
      const NB_T h = (NB_T)0.5 * dt;
      const NB_T w[3] = {v[0] + a[0] * h, v[1] + a[1] * h, v[2] + a[2] * h};
      const NB_T t[3] = {qm * bx * h, qm * by * h, qm * bz * h};
      const NB_T sc = (NB_T)2 / ((NB_T)1 + (t[0] * t[0] + t[1] * t[1] + t[2] * t[2]));
      const NB_T u[3] = {w[0] + (w[1] * t[2] - w[2] * t[1]), w[1] + (w[2] * t[0] - w[0] * t[2]),
                         w[2] + (w[0] * t[1] - w[1] * t[0])};
      nv[0] = w[0] + sc * (u[1] * t[2] - u[2] * t[1]) + a[0] * h;
      nv[1] = w[1] + sc * (u[2] * t[0] - u[0] * t[2]) + a[1] * h;
      nv[2] = w[2] + sc * (u[0] * t[1] - u[1] * t[0]) + a[2] * h;
    } else {
      nv[0] = v[0] + (a[0] + qm * (v[1] * bz - v[2] * by)) * dt;
      nv[1] = v[1] + (a[1] + qm * (v[2] * bx - v[0] * bz)) * dt;
      nv[2] = v[2] + (a[2] + qm * (v[0] * by - v[1] * bx)) * dt;
    }
    if (diag) {
      const NB_T v2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
      ke += boris ? (double)((NB_T)0.25 * v[3] * (v2 + (nv[0] * nv[0] + nv[1] * nv[1] + nv[2] * nv[2])))
                  : (double)((NB_T)0.5 * v[3] * v2);
      pe += (double)((NB_T)0.5 * kc * p[3] * (e[3] - p[3] * self_inv));
      for (int c = 0; c < 3; c++) mom[c] += (double)(v[3] * (boris ? (NB_T)0.5 * (v[c] + nv[c]) : v[c]));
    }
    if (commit)
      for (int c = 0; c < 3; c++) p[c] += nv[c] * dt, v[c] = nv[c];
  }
  if (diag) {
    double *out = partial + NB_DIAG * g->group_id[0];
    out[NB_KE] = ke, out[NB_PE] = pe, out[NB_PX] = mom[0], out[NB_PY] = mom[1], out[NB_PZ] = mom[2];
  }
}

/* nbody_reduce(ngroups, step, partial, trace). */
static void NB_SFX(reduce)(const hc_host_group_t *g, void *const *args) {
  const int ngroups = *(const int32_t *)args[0];
  const int64_t step = *(const int64_t *)args[1];
  const double *partial = args[2];
  double *trace = args[3];
  for (size_t c = g->lo[0]; c < g->hi[0] && c < NB_DIAG; c++) {
    double s = 0;
    for (int k = 0; k < ngroups; k++) s += partial[k * NB_DIAG + c];
    trace[step * NB_DIAG + (int64_t)c] = s;
  }
}

/* nbody_accel(n, npad, nslices, kc, bx, by, bz, pos, vel, field, out). */
static void NB_SFX(accel)(const hc_host_group_t *g, void *const *args) {
  const int64_t n = *(const int64_t *)args[0], npad = *(const int64_t *)args[1];
  const int nslices = *(const int32_t *)args[2];
  const NB_T kc = *(const NB_T *)args[3];
  const NB_T bx = *(const NB_T *)args[4], by = *(const NB_T *)args[5], bz = *(const NB_T *)args[6];
  const NB_T *pos = args[7], *vel = args[8], *field = args[9];
  NB_T *out = args[10];
  for (size_t i = g->lo[0]; i < g->hi[0] && (int64_t)i < n; i++) {
    const NB_T *p = pos + 4 * i, *v = vel + 4 * i;
    NB_T e[3] = {0, 0, 0};
    for (int s = 0; s < nslices; s++)
      for (int c = 0; c < 3; c++) e[c] += field[4 * ((size_t)s * (size_t)npad + i) + c];
    const NB_T qm = p[3] / v[3];
    out[3 * i + 0] = qm * (kc * e[0] + (v[1] * bz - v[2] * by));
    out[3 * i + 1] = qm * (kc * e[1] + (v[2] * bx - v[0] * bz));
    out[3 * i + 2] = qm * (kc * e[2] + (v[0] * by - v[1] * bx));
  }
}

/* nbody_unpack(n, in, out). */
static void NB_SFX(unpack)(const hc_host_group_t *g, void *const *args) {
  const int64_t n = *(const int64_t *)args[0];
  const NB_T *in = args[1];
  NB_T *out = args[2];
  for (size_t i = g->lo[0]; i < g->hi[0] && (int64_t)i < n; i++)
    for (int c = 0; c < 3; c++) out[3 * i + c] = in[4 * i + c];
}

#undef NB_VL
#undef NB_JB
#undef NB_IB
