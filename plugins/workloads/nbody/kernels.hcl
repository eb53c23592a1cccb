/* nbody kernels in the portable dialect (docs/dialect.md): one text for
 * opencl-c and cuda-c. host_kernels.c holds the host-language versions,
 * with the same arguments. Build options (set by sim.c):
 *   NB_F64       1: double precision, else float
 *   NB_WG        work-group size of nbody_field = bodies per shared tile
 *   NB_BPT       bodies per work-item in nbody_field (register blocking)
 *   NB_UNROLL    unroll factor of the loop over a tile
 *   NB_GUARD     1: skip pairs with |r|^2 + eps^2 <= eps^2 (eps tiny or 0;
 *                this skips j == i), 0: the self term is 0 by itself
 *   NB_POT       1: also accumulate the potential sum q_j / sqrt(|r|^2+eps^2)
 *   NB_FAST      1: f32 uses the hardware approximate reciprocal sqrt
 *   NB_UWG       work-group size of nbody_update (a power of two)
 *   NB_DIAG_F64  1: diagnostics accumulate in double
 *
 * Layout: pos[i] = (x, y, z, q), vel[i] = (vx, vy, vz, m), npad bodies,
 * the ones past n with q = 0, m = 1 at rest (they feel and exert nothing),
 * so no loop needs a bounds check. field[s*npad + i] = (Ex, Ey, Ez, phi):
 * the sum over slice s of q_j r_ij / (|r_ij|^2+eps^2)^{3/2}, without k. */

#if NB_F64 && defined(HC_CUDA)
/* CUDA 13 deprecates double4 (for double4_16a/_32a, which older CUDA
 * lacks): the same 32-byte aligned layout, spelled out. */
typedef double nb_real;
struct __align__(32) nb_double4_ {
  double x, y, z, w;
};
typedef struct nb_double4_ nb_real4;
#elif NB_F64
typedef double nb_real;
typedef double4 nb_real4;
#else
typedef float nb_real;
typedef float4 nb_real4;
#endif
#if NB_DIAG_F64
typedef double nb_dreal;
#else
typedef float nb_dreal;
#endif

#define NB_DIAG 5 /* kinetic, potential energy, momentum x, y, z */

/* Unroll pragmas with a macro argument. */
#define NB_PRAGMA_(x) _Pragma(#x)
#define NB_PRAGMA_UNROLL(n) NB_PRAGMA_(unroll n)

/* A fixed group size lets the compilers size registers for it. */
#if defined(HC_CUDA)
#define NB_BOUNDS(n) __launch_bounds__(n)
#elif defined(HC_OPENCL)
#define NB_BOUNDS(n) __attribute__((reqd_work_group_size(n, 1, 1)))
#else
#define NB_BOUNDS(n)
#endif

/* NVIDIA's OpenCL honours unroll pragmas once this is on. */
#if defined(HC_OPENCL) && defined(cl_nv_pragma_unroll)
#pragma OPENCL EXTENSION cl_nv_pragma_unroll : enable
#define NB_NV_PTX 1 /* NVIDIA's OpenCL takes inline PTX, as CUDA does */
#define NB_ASM __asm__ /* the spelling OpenCL C front ends accept */
#elif defined(HC_CUDA)
#define NB_NV_PTX 1
#define NB_ASM asm /* NVRTC knows only this one */
#endif

/* Reciprocal square root. Without -ftz (and neither CUDA nor OpenCL here
 * is built with it), rsqrtf / native_rsqrt wrap MUFU.RSQ in a denormal
 * fix-up: 3 more instructions per interaction on 12. |r|^2 + eps^2 is
 * never denormal in soft mode, so the bare approximate instruction (2 ulp)
 * serves. Elsewhere: native_rsqrt (OpenCL) or the dialect's hc_rsqrt. */
#if !NB_F64 && NB_FAST && defined(NB_NV_PTX)
HC_INLINE float nb_rsqrt(float x) {
  float y;
  NB_ASM("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
#elif !NB_F64 && NB_FAST && defined(HC_OPENCL)
#define nb_rsqrt(x) native_rsqrt(x)
#elif NB_F64
/* CUDA's rsqrt(double) compiles to the bare rsqrt.approx.f64: one Newton
 * step (3 more fp64 operations) makes it accurate to the last bits, so
 * the f64 field meets 1e-12 on every device. */
HC_INLINE double nb_rsqrt(double x) {
  const double y = hc_rsqrt(x);
  return y * (1.5 - 0.5 * x * y * y);
}
#else
#define nb_rsqrt(x) hc_rsqrt(x)
#endif

/* The field of the bodies i_off + [0, global size * NB_BPT) from the
 * bodies of slice hc_group_id(1) (i_off: 0, or a multiple of NB_WG*NB_BPT
 * where a split run's part computes its slice of the bodies). A group of
 * NB_WG items owns NB_WG*NB_BPT bodies (item l: bodies l, l+NB_WG, ...); bodies j pass through local memory NB_WG at a time and
 * every item reads each one as a broadcast. 20 flops per interaction in the
 * paper's count; 12 FP32 instructions and one rsqrt here. All pairs: no
 * Newton's-third-law sharing, so every body's sum is independent. */
HC_KERNEL NB_BOUNDS(NB_WG) void nbody_field(const long n, const long npad, const long slice_len, const nb_real eps2,
                                            const int with_pot, HC_GLOBAL const nb_real4 *HC_RESTRICT pos,
                                            HC_GLOBAL nb_real4 *HC_RESTRICT field, const long i_off) {
  HC_LOCAL nb_real4 tile[NB_WG];
  const int lid = (int)hc_local_id(0);
  const long i0 = i_off + hc_group_id(0) * (NB_WG * NB_BPT) + lid;
  const long j0 = hc_group_id(1) * slice_len;
  const long j1 = j0 + slice_len < npad ? j0 + slice_len : npad;
  nb_real xi[NB_BPT], yi[NB_BPT], zi[NB_BPT], ax[NB_BPT], ay[NB_BPT], az[NB_BPT], ph[NB_BPT];
#pragma unroll
  for (int b = 0; b < NB_BPT; b++) {
    const nb_real4 p = pos[i0 + b * NB_WG];
    xi[b] = p.x;
    yi[b] = p.y;
    zi[b] = p.z;
    ax[b] = ay[b] = az[b] = ph[b] = (nb_real)0;
  }
  for (long jt = j0; jt < j1; jt += NB_WG) {
    tile[lid] = pos[jt + lid];
    HC_BARRIER();
    NB_PRAGMA_UNROLL(NB_UNROLL)
    for (int j = 0; j < NB_WG; j++) {
      const nb_real4 pj = tile[j];
#pragma unroll
      for (int b = 0; b < NB_BPT; b++) {
        const nb_real rx = xi[b] - pj.x, ry = yi[b] - pj.y, rz = zi[b] - pj.z;
        const nb_real d2 = rx * rx + (ry * ry + (rz * rz + eps2)); /* three fma */
        nb_real inv = nb_rsqrt(d2);
#if NB_GUARD
        inv = d2 > eps2 ? inv : (nb_real)0;
#endif
        const nb_real qinv = pj.w * inv;
        const nb_real s = qinv * inv * inv;
        ax[b] += s * rx;
        ay[b] += s * ry;
        az[b] += s * rz;
#if NB_POT
        ph[b] += qinv;
#endif
      }
    }
    HC_BARRIER();
  }
  HC_GLOBAL nb_real4 *out = field + hc_group_id(1) * npad;
#pragma unroll
  for (int b = 0; b < NB_BPT; b++) {
    nb_real4 f;
    f.x = ax[b];
    f.y = ay[b];
    f.z = az[b];
    f.w = ph[b];
    out[i0 + b * NB_WG] = f;
  }
}

/* One time step for the bodies [i_lo, i_hi) (grid-stride; [0, npad) on
 * one device, a part's slice in a split run), from the field of the
 * current positions: Euler (the paper's: v += a dt, x += v dt) or Boris
 * (half electric kick, rotation about B, half kick; x += v dt). With diag,
 * the group's sums of the energies and momentum of the state before the
 * step go to partial[group]; with commit == 0 nothing is stored (the final
 * diagnostics). */
HC_KERNEL NB_BOUNDS(NB_UWG) void nbody_update(const long npad, const int nslices, const nb_real dt,
                                              const nb_real kc, const nb_real bx, const nb_real by,
                                              const nb_real bz, const nb_real eps2, const int boris,
                                              const int commit, const int diag, HC_GLOBAL nb_real4 *HC_RESTRICT pos,
                                              HC_GLOBAL nb_real4 *HC_RESTRICT vel,
                                              HC_GLOBAL const nb_real4 *HC_RESTRICT field,
                                              HC_GLOBAL nb_dreal *HC_RESTRICT partial, const long i_lo,
                                              const long i_hi) {
  HC_LOCAL nb_dreal red[NB_DIAG * NB_UWG];
  nb_dreal ke = 0, pe = 0, mx = 0, my = 0, mz = 0;
  for (long i = i_lo + hc_global_id(0); i < i_hi; i += hc_global_size(0)) {
    const nb_real4 p = pos[i], v = vel[i];
    nb_real ex = 0, ey = 0, ez = 0, ph = 0;
    for (int s = 0; s < nslices; s++) {
      const nb_real4 f = field[s * npad + i];
      ex += f.x;
      ey += f.y;
      ez += f.z;
      ph += f.w;
    }
    const nb_real qm = p.w / v.w;
    const nb_real ax = qm * kc * ex, ay = qm * kc * ey, az = qm * kc * ez;
    nb_real nx, ny, nz;
    if (boris) {
      const nb_real h = (nb_real)0.5 * dt;
      const nb_real wx = v.x + ax * h, wy = v.y + ay * h, wz = v.z + az * h;
      const nb_real tx = qm * bx * h, ty = qm * by * h, tz = qm * bz * h;
      const nb_real sc = (nb_real)2 / ((nb_real)1 + (tx * tx + ty * ty + tz * tz));
      const nb_real ux = wx + (wy * tz - wz * ty), uy = wy + (wz * tx - wx * tz), uz = wz + (wx * ty - wy * tx);
      nx = wx + sc * (uy * tz - uz * ty) + ax * h;
      ny = wy + sc * (uz * tx - ux * tz) + ay * h;
      nz = wz + sc * (ux * ty - uy * tx) + az * h;
    } else {
      nx = v.x + (ax + qm * (v.y * bz - v.z * by)) * dt;
      ny = v.y + (ay + qm * (v.z * bx - v.x * bz)) * dt;
      nz = v.z + (az + qm * (v.x * by - v.y * bx)) * dt;
    }
    if (diag) {
      const nb_real v2 = v.x * v.x + v.y * v.y + v.z * v.z;
      const nb_real self = NB_GUARD ? (nb_real)0 : p.w * nb_rsqrt(eps2);
      ke += boris ? (nb_dreal)((nb_real)0.25 * v.w * (v2 + (nx * nx + ny * ny + nz * nz)))
                  : (nb_dreal)((nb_real)0.5 * v.w * v2);
      pe += (nb_dreal)((nb_real)0.5 * kc * p.w * (ph - self));
      const nb_real c = boris ? (nb_real)0.5 : (nb_real)1;
      mx += (nb_dreal)(v.w * (boris ? c * (v.x + nx) : v.x));
      my += (nb_dreal)(v.w * (boris ? c * (v.y + ny) : v.y));
      mz += (nb_dreal)(v.w * (boris ? c * (v.z + nz) : v.z));
    }
    if (commit) {
      nb_real4 np = p, nv = v;
      np.x = p.x + nx * dt;
      np.y = p.y + ny * dt;
      np.z = p.z + nz * dt;
      nv.x = nx;
      nv.y = ny;
      nv.z = nz;
      pos[i] = np;
      vel[i] = nv;
    }
  }
  if (diag) { /* uniform: every item reaches the barriers */
    const int lid = (int)hc_local_id(0);
    red[0 * NB_UWG + lid] = ke;
    red[1 * NB_UWG + lid] = pe;
    red[2 * NB_UWG + lid] = mx;
    red[3 * NB_UWG + lid] = my;
    red[4 * NB_UWG + lid] = mz;
    HC_BARRIER();
    for (int w = NB_UWG / 2; w > 0; w >>= 1) {
      if (lid < w)
        for (int c = 0; c < NB_DIAG; c++) red[c * NB_UWG + lid] += red[c * NB_UWG + lid + w];
      HC_BARRIER();
    }
    if (lid == 0)
      for (int c = 0; c < NB_DIAG; c++) partial[hc_group_id(0) * NB_DIAG + c] = red[c * NB_UWG];
  }
}

/* trace[step] = the sum of the groups' partial records, in group order. */
HC_KERNEL void nbody_reduce(const int ngroups, const long step, HC_GLOBAL const nb_dreal *HC_RESTRICT partial,
                            HC_GLOBAL nb_dreal *HC_RESTRICT trace) {
  const long c = hc_global_id(0);
  if (c >= NB_DIAG) return;
  nb_dreal s = 0;
  for (int g = 0; g < ngroups; g++) s += partial[g * NB_DIAG + c];
  trace[step * NB_DIAG + c] = s;
}

/* out (n x 3) = the full acceleration (q/m) (k E + v x B). */
HC_KERNEL void nbody_accel(const long n, const long npad, const int nslices, const nb_real kc, const nb_real bx,
                           const nb_real by, const nb_real bz, HC_GLOBAL const nb_real4 *HC_RESTRICT pos,
                           HC_GLOBAL const nb_real4 *HC_RESTRICT vel, HC_GLOBAL const nb_real4 *HC_RESTRICT field,
                           HC_GLOBAL nb_real *HC_RESTRICT out) {
  const long i = hc_global_id(0);
  if (i >= n) return;
  const nb_real4 p = pos[i], v = vel[i];
  nb_real ex = 0, ey = 0, ez = 0;
  for (int s = 0; s < nslices; s++) {
    const nb_real4 f = field[s * npad + i];
    ex += f.x;
    ey += f.y;
    ez += f.z;
  }
  const nb_real qm = p.w / v.w;
  out[3 * i + 0] = qm * (kc * ex + (v.y * bz - v.z * by));
  out[3 * i + 1] = qm * (kc * ey + (v.z * bx - v.x * bz));
  out[3 * i + 2] = qm * (kc * ez + (v.x * by - v.y * bx));
}

/* out (n x 3) = the first three components of in (npad x 4). */
HC_KERNEL void nbody_unpack(const long n, HC_GLOBAL const nb_real4 *HC_RESTRICT in, HC_GLOBAL nb_real *HC_RESTRICT out) {
  const long i = hc_global_id(0);
  if (i >= n) return;
  const nb_real4 p = in[i];
  out[3 * i + 0] = p.x;
  out[3 * i + 1] = p.y;
  out[3 * i + 2] = p.z;
}
