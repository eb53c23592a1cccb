"""Hand-written variants of the generated 7-point Laplacian (h = Δf on the
interior of a 256^3 f32 field), timed with CuPy on the GPU machine; the
experiment behind core/grid/grid_vector.c.

    python3 tests/gpu/stencil_variants.py [n [variant,...]]

Variants: one cell per item with the rows starting at the box (as the
generated kernels did) or at the row start (aligned), four cells per item
with 16-byte loads and stores (vector), and the same with the rows of all
of an item's planes loaded first (preload); preload with the x-halo from
warp shuffles (shuffle) or streaming stores (stcs); preload with the items
that straddle the box's edge merging the destination's old values into
16-byte stores (merge; loaded first: mergefirst, at the store: mergelate),
the same alternating the planes' order between launches (snake), and
writing computed values outside the box (whole: a ceiling, wrong at the
edges); merge as persistent groups (persist); marching items (march);
2.5-D tiles in shared memory, marching (tile) or loaded at once (stage).
Each is checked against a CuPy reference and reported in GB/s (one read
and one write of the box) beside a 16-byte copy kernel of the same field
and of 1 GiB, measured in the same run. The second argument picks
variants by name."""
import sys
import cupy as cp
import numpy as np

N = int(sys.argv[1]) if len(sys.argv) > 1 else 256
ONLY = sys.argv[2].split(',') if len(sys.argv) > 2 else None  # variant names to run
f = cp.random.rand(N, N, N, dtype=cp.float32)
h = cp.zeros_like(f)
ref = cp.zeros_like(f)
ref[1:-1, 1:-1, 1:-1] = (-6 * f[1:-1, 1:-1, 1:-1] + f[:-2, 1:-1, 1:-1] + f[2:, 1:-1, 1:-1] + f[1:-1, :-2, 1:-1]
                         + f[1:-1, 2:, 1:-1] + f[1:-1, 1:-1, :-2] + f[1:-1, 1:-1, 2:])
HDR = r'''
#define LAP(c,zm,zp,ym,yp,xm,xp) (p0*(c) + p1*((zm)+(zp)+(ym)+(yp)+(xm)+(xp)))
#define EL(v,j) ((j)==0?(v).x:(j)==1?(v).y:(j)==2?(v).z:(v).w)
#define ARGS float* __restrict__ D, const float* __restrict__ F, float p0, float p1, int n0, int n1, int n2
/* four cells of a row from their rows' values; the store: 16 bytes where all four are in the box */
__device__ __forceinline__ void lap4(float *D, int o, float4 c, float4 zm, float4 zp, float4 ym, float4 yp, float l,
                                     float r, float p0, float p1, int x4, int lo2, int c2) {
  float y[4];
#pragma unroll
  for (int u = 0; u < 4; u++)
    y[u] = LAP(EL(c, u), EL(zm, u), EL(zp, u), EL(ym, u), EL(yp, u), u == 0 ? l : EL(c, u - 1), u == 3 ? r : EL(c, u + 1));
  if (x4 >= lo2 && x4 + 4 <= lo2 + c2) *(float4 *)(D + o) = make_float4(y[0], y[1], y[2], y[3]);
  else for (int u = 0; u < 4; u++) if (x4 + u >= lo2 && x4 + u < lo2 + c2) D[o + u] = y[u];
}
'''
# one cell per item, Z planes; AL: items start at the row start (stores aligned)
SCALAR = HDR + r'''
extern "C" __global__ void k(ARGS) {
  const int lo2 = 1, c0 = n0 - 2, c1 = n1 - 2, c2 = n2 - 2, a2 = AL ? 0 : lo2;
  const int x = blockIdx.x * blockDim.x + threadIdx.x, t1 = blockIdx.y * blockDim.y + threadIdx.y;
  if (t1 >= c1 || x >= (AL ? n2 : c2)) return;
  const int i2 = a2 + x;
  if (AL && (i2 < lo2 || i2 >= lo2 + c2)) return;
#pragma unroll
  for (int z = 0; z < ZC; z++) {
    const int t0 = blockIdx.z * ZC + z;
    if (t0 >= c0) break;
    const int o = ((1 + t0) * n1 + 1 + t1) * n2 + i2;
    D[o] = LAP(F[o], F[o - n1 * n2], F[o + n1 * n2], F[o - n2], F[o + n2], F[o - 1], F[o + 1]);
  }
}'''
VECTOR = HDR + r'''
extern "C" __global__ void k(ARGS) {
  const int lo2 = 1, c0 = n0 - 2, c1 = n1 - 2, c2 = n2 - 2, s = n1 * n2;
  const int t1 = blockIdx.y * blockDim.y + threadIdx.y, x4 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (t1 >= c1 || x4 >= n2) return;
#pragma unroll
  for (int z = 0; z < ZC; z++) {
    const int t0 = blockIdx.z * ZC + z;
    if (t0 >= c0) break;
    const int o = ((1 + t0) * n1 + 1 + t1) * n2 + x4;
    const float4 c = *(const float4 *)(F + o), zm = *(const float4 *)(F + o - s), zp = *(const float4 *)(F + o + s),
                 ym = *(const float4 *)(F + o - n2), yp = *(const float4 *)(F + o + n2);
    const float l = x4 > 0 ? F[o - 1] : 0.f, r = x4 + 4 < n2 ? F[o + 4] : 0.f;
    lap4(D, o, c, zm, zp, ym, yp, l, r, p0, p1, x4, lo2, c2);
  }
}'''
PRELOAD = HDR + r'''
extern "C" __global__ void k(ARGS) {
  const int lo2 = 1, c0 = n0 - 2, c1 = n1 - 2, c2 = n2 - 2, s = n1 * n2;
  const int t1 = blockIdx.y * blockDim.y + threadIdx.y, x4 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (t1 >= c1 || x4 >= n2) return;
  const int z0 = blockIdx.z * ZC, zn = min(ZC, c0 - z0), ob = ((1 + z0) * n1 + 1 + t1) * n2 + x4;
  float4 c[ZC + 2], ym[ZC], yp[ZC];
  float l[ZC], r[ZC];
#pragma unroll
  for (int z = -1; z <= ZC; z++) c[z + 1] = *(const float4 *)(F + ob + min(z, zn) * s);
#pragma unroll
  for (int z = 0; z < ZC; z++) {
    const int o = ob + min(z, zn - 1) * s;
    ym[z] = *(const float4 *)(F + o - n2);
    yp[z] = *(const float4 *)(F + o + n2);
    l[z] = x4 > 0 ? F[o - 1] : 0.f;
    r[z] = x4 + 4 < n2 ? F[o + 4] : 0.f;
  }
#pragma unroll
  for (int z = 0; z < ZC; z++)
    if (z < zn) lap4(D, ob + z * s, c[z + 1], c[z], c[z + 2], ym[z], yp[z], l[z], r[z], p0, p1, x4, lo2, c2);
}'''
# preload, the x-halo taken from the neighbouring lanes (warp shuffles;
# lanes at a warp's ends load it) and/or streaming stores (__stcs)
SHFL = PRELOAD.replace(
    "    l[z] = x4 > 0 ? F[o - 1] : 0.f;\n    r[z] = x4 + 4 < n2 ? F[o + 4] : 0.f;\n", "").replace(
    "#pragma unroll\n  for (int z = 0; z < ZC; z++)\n    if (z < zn) lap4(",
    """  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int z = 0; z < ZC; z++) {
    float lw = __shfl_up_sync(0xffffffffu, c[z + 1].w, 1), rx = __shfl_down_sync(0xffffffffu, c[z + 1].x, 1);
    const int o = ob + min(z, zn - 1) * s;
    if (lane == 0 || threadIdx.x == 0) lw = x4 > 0 ? F[o - 1] : 0.f;
    if (lane == 31 || threadIdx.x == blockDim.x - 1) rx = x4 + 4 < n2 ? F[o + 4] : 0.f;
    l[z] = lw; r[z] = rx;
  }
#pragma unroll
  for (int z = 0; z < ZC; z++)
    if (z < zn) lap4(""")
STCS = PRELOAD.replace("*(float4 *)(D + o) = make_float4(y[0], y[1], y[2], y[3]);",
                       "__stcs((float4 *)(D + o), make_float4(y[0], y[1], y[2], y[3]));")
# marching: an item takes ZC planes, the centre column in registers
# (zm, c, zp), the next plane's rows loaded while this one is computed
MARCH = HDR + r'''
extern "C" __global__ void k(ARGS) {
  const int lo2 = 1, c0 = n0 - 2, c1 = n1 - 2, c2 = n2 - 2, s = n1 * n2;
  const int t1 = blockIdx.y * blockDim.y + threadIdx.y, x4 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (t1 >= c1 || x4 >= n2) return;
  const int z0 = blockIdx.z * ZC, ze = min(z0 + ZC, c0);
  int o = ((1 + z0) * n1 + 1 + t1) * n2 + x4;
  float4 zm = *(const float4 *)(F + o - s), c = *(const float4 *)(F + o), zp = *(const float4 *)(F + o + s);
  float4 ym = *(const float4 *)(F + o - n2), yp = *(const float4 *)(F + o + n2);
  float l = x4 > 0 ? F[o - 1] : 0.f, r = x4 + 4 < n2 ? F[o + 4] : 0.f;
  for (int z = z0; z < ze; z++, o += s) {
    const int on = z + 1 < ze ? o + s : o;  /* the next plane's rows, or this one's again at the end */
    const float4 zn = *(const float4 *)(F + on + s), ymn = *(const float4 *)(F + on - n2), ypn = *(const float4 *)(F + on + n2);
    const float ln = x4 > 0 ? F[on - 1] : 0.f, rn = x4 + 4 < n2 ? F[on + 4] : 0.f;
    lap4(D, o, c, zm, zp, ym, yp, l, r, p0, p1, x4, lo2, c2);
    zm = c; c = zp; zp = zn; ym = ymn; yp = ypn; l = ln; r = rn;
  }
}'''

# preload, and the item's cells outside the box (the row's first and last
# item) stored too, so that every store covers whole 32-byte sectors:
# "merge" loads the destination's old values with the item's other loads
# and writes them back unchanged; "whole" writes the computed values there
# (wrong at the edges: the ceiling of the idea, not a kernel)
MERGE = PRELOAD.replace("float l[ZC], r[ZC];", """float l[ZC], r[ZC];
  float4 old[ZC];
  const bool part = x4 < lo2 || x4 + 4 > lo2 + c2;
#pragma unroll
  for (int z = 0; z < ZC; z++) old[z] = part ? *(const float4 *)(D + ob + min(z, zn - 1) * s) : make_float4(0, 0, 0, 0);""").replace(
    "if (z < zn) lap4(D, ob + z * s, c[z + 1], c[z], c[z + 2], ym[z], yp[z], l[z], r[z], p0, p1, x4, lo2, c2);",
    """if (z < zn) {
      float y[4];
      for (int u = 0; u < 4; u++)
        y[u] = x4 + u >= lo2 && x4 + u < lo2 + c2 ? LAP(EL(c[z + 1], u), EL(c[z], u), EL(c[z + 2], u), EL(ym[z], u), EL(yp[z], u),
                   u == 0 ? l[z] : EL(c[z + 1], u - 1), u == 3 ? r[z] : EL(c[z + 1], u + 1)) : EL(old[z], u);
      *(float4 *)(D + ob + z * s) = make_float4(y[0], y[1], y[2], y[3]);
    }""")
WHOLE = PRELOAD.replace("if (x4 >= lo2 && x4 + 4 <= lo2 + c2) *(float4 *)", "if (1) *(float4 *)")
# merge with the old values loaded before the field's rows ("mergefirst")
# or just before the store ("mergelate")
MERGE_FIRST = MERGE.replace("""#pragma unroll
  for (int z = -1; z <= ZC; z++) c[z + 1]""", """float4 old[ZC];
  const bool part = x4 < lo2 || x4 + 4 > lo2 + c2;
#pragma unroll
  for (int z = 0; z < ZC; z++) old[z] = part ? *(const float4 *)(D + ob + min(z, zn - 1) * s) : make_float4(0, 0, 0, 0);
#pragma unroll
  for (int z = -1; z <= ZC; z++) c[z + 1]""", 1)
MERGE_FIRST = MERGE_FIRST[:MERGE_FIRST.rindex("float4 old[ZC];")] + MERGE_FIRST[MERGE_FIRST.rindex("float4 old[ZC];"):].replace(
    "float4 old[ZC];\n  const bool part = x4 < lo2 || x4 + 4 > lo2 + c2;\n#pragma unroll\n  for (int z = 0; z < ZC; z++) old[z] = part ? *(const float4 *)(D + ob + min(z, zn - 1) * s) : make_float4(0, 0, 0, 0);", "", 1)
MERGE_LATE = MERGE.replace(": EL(old[z], u);", ": EL(*(const float4 *)(D + ob + z * s), u);").replace(
    "old[z] = part ? *(const float4 *)(D + ob + min(z, zn - 1) * s) : make_float4(0, 0, 0, 0);", "(void)part;")
# merge, persistent: PB groups an SM, each looping over the tiles in the
# launch order (no block launches past the first, one short tail)
PERSIST = MERGE.replace("""  const int t1 = blockIdx.y * blockDim.y + threadIdx.y, x4 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (t1 >= c1 || x4 >= n2) return;
""", """  const int gx = (n2 / 4 + blockDim.x - 1) / blockDim.x, gy = (c1 + blockDim.y - 1) / blockDim.y, gz = (c0 + ZC - 1) / ZC;
  for (int tile = blockIdx.x; tile < gx * gy * gz; tile += gridDim.x) {
  const int bxi = tile % gx, byi = tile / gx % gy, bzi = tile / (gx * gy);
  const int t1 = byi * blockDim.y + threadIdx.y, x4 = (bxi * blockDim.x + threadIdx.x) * 4;
  if (t1 >= c1 || x4 >= n2) continue;
""").replace("const int z0 = blockIdx.z * ZC", "const int z0 = bzi * ZC")
PERSIST = PERSIST[:PERSIST.rindex("}")] + "}\n}"
# merge, the planes' order reversed on every other launch ("snake"): a
# launch starts on the planes the previous one touched last, which are
# still in L2
SNAKE = MERGE.replace("#define ARGS float*", "#define ARGS int rev, float*").replace(
    "const int z0 = blockIdx.z * ZC", "const int z0 = (rev ? gridDim.z - 1 - blockIdx.z : blockIdx.z) * ZC")
# 2.5-D tiles: a group of 32 x BY items (a warp per row of 128 cells)
# marches through ZC planes; an item keeps its column's planes z-1, z, z+1
# in registers, the group's plane (with a halo row above and below) is
# staged in shared memory, double-buffered (one barrier a plane), and the
# next plane's loads are issued before this plane is computed
TILE = HDR + r"""
extern "C" __global__ void __launch_bounds__(32 * BY) k(ARGS) {
  __shared__ float4 T[2][BY + 2][32];
  const int lo2 = 1, c0 = n0 - 2, c1 = n1 - 2, c2 = n2 - 2, s = n1 * n2;
  const int tx = threadIdx.x, ty = threadIdx.y, x4 = (blockIdx.x * 32 + tx) * 4;
  const int t1 = blockIdx.y * BY + ty, r1 = min(1 + t1, n1 - 1);
  const int z0 = blockIdx.z * ZC, ze = min(z0 + ZC, c0);
  /* the halo rows: above the group's first (item row 0), below its last */
  const int rh = ty == 0 ? blockIdx.y * BY : min(blockIdx.y * BY + BY + 1, n1 - 1);
  const bool halo = ty == 0 || ty == BY - 1, edge = tx == 0 || tx == 31;
  const int oe = tx == 0 ? (x4 > 0 ? -1 : 0) : (x4 + 4 < n2 ? 4 : 3);
  int o = ((1 + z0) * n1 + r1) * n2 + x4, oh = ((1 + z0) * n1 + rh) * n2 + x4;
  float4 zm = *(const float4 *)(F + o - s), c = *(const float4 *)(F + o), zp = *(const float4 *)(F + o + s);
  float4 hv = halo ? *(const float4 *)(F + oh) : c;
  float ev = edge ? F[o + oe] : 0.f;
  int b = 0;
  for (int z = z0; z < ze; z++, b ^= 1) {
    const int adv = z + 1 < ze ? s : 0;
    /* the next plane's loads, in flight while this one is computed */
    const float4 zn = *(const float4 *)(F + o + adv + s);
    const float4 hn = halo ? *(const float4 *)(F + oh + adv) : c;
    const float en = edge ? F[o + adv + oe] : 0.f;
    T[b][ty + 1][tx] = c;
    if (ty == 0) T[b][0][tx] = hv;
    if (ty == BY - 1) T[b][BY + 1][tx] = hv;
    __syncthreads();
    const float4 ym = T[b][ty][tx], yp = T[b][ty + 2][tx];
    const float l = tx > 0 ? T[b][ty + 1][tx - 1].w : (x4 > 0 ? ev : 0.f);
    const float r = tx < 31 ? T[b][ty + 1][tx + 1].x : (x4 + 4 < n2 ? ev : 0.f);
    if (t1 < c1) lap4(D, o, c, zm, zp, ym, yp, l, r, p0, p1, x4, lo2, c2);
    zm = c; c = zp; zp = zn; hv = hn; ev = en; o += adv; oh += adv;
  }
}"""
# staged: an item loads its column's ZC + 2 rows first (as preload), the
# group's ZC planes (with a halo row above and below) go to shared memory,
# one barrier, and the neighbours across rows and along the row come from
# there: a row is fetched from L2 once per group instead of once per item
# that reads it
STAGE = HDR + r"""
extern "C" __global__ void __launch_bounds__(32 * BY) k(ARGS) {
  __shared__ float4 T[ZC][BY + 2][32];
  const int lo2 = 1, c0 = n0 - 2, c1 = n1 - 2, c2 = n2 - 2, s = n1 * n2;
  const int tx = threadIdx.x, ty = threadIdx.y, x4 = (blockIdx.x * 32 + tx) * 4;
  const int t1 = blockIdx.y * BY + ty, r1 = min(1 + t1, n1 - 1);
  const int z0 = blockIdx.z * ZC, zn = min(ZC, c0 - z0);
  const int rh = ty == 0 ? blockIdx.y * BY : min(blockIdx.y * BY + BY + 1, n1 - 1);
  const bool halo = ty == 0 || ty == BY - 1, edge = tx == 0 || tx == 31;
  const int oe = tx == 0 ? (x4 > 0 ? -1 : 0) : (x4 + 4 < n2 ? 4 : 3);
  const int ob = ((1 + z0) * n1 + r1) * n2 + x4, obh = ((1 + z0) * n1 + rh) * n2 + x4;
  float4 c[ZC + 2], hv[ZC];
  float e[ZC];
#pragma unroll
  for (int z = -1; z <= ZC; z++) c[z + 1] = *(const float4 *)(F + ob + min(z, zn) * s);
#pragma unroll
  for (int z = 0; z < ZC; z++) {
    hv[z] = halo ? *(const float4 *)(F + obh + min(z, zn - 1) * s) : c[z + 1];
    e[z] = edge ? F[ob + min(z, zn - 1) * s + oe] : 0.f;
  }
#pragma unroll
  for (int z = 0; z < ZC; z++) {
    T[z][ty + 1][tx] = c[z + 1];
    if (ty == 0) T[z][0][tx] = hv[z];
    if (ty == BY - 1) T[z][BY + 1][tx] = hv[z];
  }
  __syncthreads();
  if (t1 >= c1) return;
#pragma unroll
  for (int z = 0; z < ZC; z++) {
    const float l = tx > 0 ? ((const float *)&T[z][ty + 1][tx - 1])[3] : (x4 > 0 ? e[z] : 0.f);
    const float r = tx < 31 ? ((const float *)&T[z][ty + 1][tx + 1])[0] : (x4 + 4 < n2 ? e[z] : 0.f);
    if (z < zn) lap4(D, ob + z * s, c[z + 1], c[z], c[z + 2], T[z][ty][tx], T[z][ty + 2][tx], l, r, p0, p1, x4, lo2, c2);
  }
}"""
COPY4 = r'''extern "C" __global__ void k(float4 *__restrict__ D, const float4 *__restrict__ F, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) D[i] = F[i]; }'''


def best_time(fn, reps=20, rounds=5):
    fn()
    cp.cuda.Device().synchronize()
    best = 1e9
    for _ in range(rounds):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        b.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(a, b) / reps * 1e-3)
    return best


nn = N ** 3
c4 = cp.RawKernel(COPY4, 'k')
copy_bw = 2 * nn * 4 / best_time(lambda: c4((nn // 4 // 256,), (256,), (h, f, cp.uint64(nn // 4))))
big = cp.empty(2 ** 28, dtype=cp.float32)
big_out = cp.empty_like(big)
big_bw = 2 * big.size * 4 / best_time(lambda: c4((big.size // 4 // 256,), (256,), (big_out, big, cp.uint64(big.size // 4))))
del big, big_out
print(f"copy (16-byte, same field): {copy_bw / 1e9:.0f} GB/s; of 1 GiB: {big_bw / 1e9:.0f} GB/s", flush=True)
box_bytes = 2 * (N - 2) ** 3 * 4
p0, p1 = np.float32(-6), np.float32(1)


def run(name, src, bx, by, zc, cells, launched, blocks=None):
    if ONLY and name not in ONLY:
        return
    kk = cp.RawKernel(src.replace('ZC', str(zc)).replace('BY', str(by)), 'k')
    grid = ((launched // cells + bx - 1) // bx, (N - 2 + by - 1) // by, (N - 2 + zc - 1) // zc)
    if blocks:
        grid = (blocks, 1, 1)
    fn = lambda: kk(grid, (bx, by, 1), (h, f, p0, p1, np.int32(N), np.int32(N), np.int32(N)))
    if name == "snake":
        flip = [0]

        def fn():
            flip[0] ^= 1
            kk(grid, (bx, by, 1), (np.int32(flip[0]), h, f, p0, p1, np.int32(N), np.int32(N), np.int32(N)))
    h.fill(0)
    fn()
    cp.cuda.Device().synchronize()
    err = float(cp.abs(h - ref).max())
    t = best_time(fn)
    print(f"{name:8s} {bx}x{by}x{zc}{f' {grid[0]} groups' if blocks else ''}: {t * 1e6:6.1f} us {box_bytes / t / 1e9:5.0f} GB/s "
          f"({box_bytes / t / copy_bw:.2f} of the copy, {box_bytes / t / big_bw:.2f} of 1 GiB's) max error {err:.1e}", flush=True)


for bx, by in [(128, 2), (64, 4)]:
    for zc in [2, 4]:
        run("box", SCALAR.replace('AL', '0'), bx, by, zc, 1, N - 2)
        run("aligned", SCALAR.replace('AL', '1'), bx, by, zc, 1, N)
for bx, by in [(32, 4), (32, 8), (64, 4)]:
    for zc in [2, 4, 8]:
        run("vector", VECTOR, bx, by, zc, 4, N)
        run("preload", PRELOAD, bx, by, zc, 4, N)
        run("shuffle", SHFL, bx, by, zc, 4, N)
        run("stcs", STCS, bx, by, zc, 4, N)
        run("merge", MERGE, bx, by, zc, 4, N)
        run("snake", SNAKE, bx, by, zc, 4, N)
        run("mergefirst", MERGE_FIRST, bx, by, zc, 4, N)
        run("mergelate", MERGE_LATE, bx, by, zc, 4, N)
sms = cp.cuda.Device().attributes['MultiProcessorCount']
for bx, by in [(32, 4), (32, 8)]:
    for zc in [2, 4]:
        for per_sm in [4, 6, 8, 12, 16]:
            run("persist", PERSIST, bx, by, zc, 4, N, per_sm * sms)
for bx, by in [(32, 4), (32, 8), (64, 4)]:
    for zc in [2, 4, 8]:
        run("whole", WHOLE.replace("ZC", str(zc)), bx, by, zc, 4, N)
for by in [2, 4, 8]:
    for zc in [1, 2, 4]:
        run("stage", STAGE, 32, by, zc, 4, N)
for bx, by in [(32, 4), (32, 8), (64, 4), (16, 8)]:
    for zc in [8, 16, 32, 64]:
        run("march", MARCH, bx, by, zc, 4, N)
for by in [2, 4, 8, 16]:
    for zc in [4, 8, 16, 32, 64]:
        run("tile", TILE, 32, by, zc, 4, N)
