#!/usr/bin/env bash
# Tuning probe for the H100: sweeps of the knobs that decide the workloads'
# figures, and Nsight Compute (ncu) on their kernels where it is present.
#   bash tests/gpu/probe.sh [section,...]     (default: every section)
# Sections: jacobi bpm simpson grid cpu ncu. Output: $OUT/probe.txt.
# Kernel variants are tried through HC_KERNEL_OPTIONS (docs/dialect.md),
# so the probe needs no rebuild.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/gpu-out}; mkdir -p "$out"
mkdir -p /tmp/icd && cp /etc/OpenCL/vendors/*.icd /tmp/icd/ 2>/dev/null
echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd HC_OPENCL_PLATFORM=NVIDIA HC_CACHE_DIR=/tmp/hc-cache
H=build/bin/hcrun
sections=${1:-jacobi,bpm,simpson,grid,cpu,ncu}
want() { [[ ",$sections," == *",$1,"* ]]; }
m() { python3 -c "import json,sys; d=json.load(sys.stdin); e=d.get('error',''); print(' '.join('%s=%.4g'%(k,v['value']) for k,v in d.get('metrics',{}).items() if k in sys.argv[1].split(',')), e.get('message', e) if isinstance(e, dict) else e)" "$1"; }
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)

# A run's metrics, or its error message when hcrun gives no JSON.
mrun() {
  local keys=$1 res err; shift
  err=$(mktemp)
  res=$("$H" --json "$@" 2>"$err")
  echo "$res" | m "$keys" 2>/dev/null || echo "failed: $(tail -1 "$err")"
  rm -f "$err"
}

probe_jacobi() {
  # Rolled and unrolled plane loop back to back (JACOBI_MARCH_UNROLL in kernels.hcl).
  echo "== jacobi 512^3 f32 march block 1x256: plane loop rolled [] or unrolled [-DJACOBI_MARCH_UNROLL=1]"
  for dev in cuda:0 opencl:0; do for rows in 4 8; do for d in 1 2; do for o in "" -DJACOBI_MARCH_UNROLL=1; do
    printf '%-8s rows=%d depth=%d [%s]: ' "$dev" "$rows" "$d" "$o"
    HC_KERNEL_OPTIONS="$o" mrun glups,bandwidth_gbs --repeat=2 --device="$dev" --workload=jacobi dim=3 n=512 iters=100 block=1x256 depth="$d" rows="$rows"
  done; done; done; done
}

probe_bpm() {
  echo "== bpm ADI step: c64 (uniform medium; a slab: per-node factors), c128, 512^2 .. 2048^2"
  for dev in cuda:0 opencl:0; do for n in 512 1024 2048; do for v in "dtype=c64" "dtype=c64 profile=slab" "dtype=c128"; do
    echo -n "$dev n=$n [$v]: "; mrun adi_step_s --repeat=3 --device=$dev $BPM n=$n $v
  done; done; done
  echo "== bpm 2048^2 c64: the half-steps' forwarded right-hand sides (kernels.hcl, BPM_FWD) against forward_rhs=off, alternating"
  for r in 1 2 3; do for dev in cuda:0 opencl:0; do for off in auto off; do
    echo -n "round $r $dev [forward_rhs=$off]: "; mrun adi_step_s --repeat=3 --device=$dev $BPM n=2048 dtype=c64 forward_rhs=$off
  done; done; done
  echo "== bpm 2048^2 c64: x-line tiles WxC (16 rows a chunk by default), y-line threads"
  for v in tile=8x64 tile=4x256 tile=16x64 group=128; do for dev in cuda:0 opencl:0; do
    echo -n "$dev [$v]: "; mrun adi_step_s --repeat=3 --device=$dev $BPM n=2048 dtype=c64 $v
  done; done
  if [ -n "$NCU" ]; then
    echo "== ncu bpm 2048^2 c64, default shapes, clocks as they run"
    $NCU --clock-control none --kernel-name regex:bpm_adi --launch-skip 2 --launch-count 2 --section SpeedOfLight \
      --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
      $H --device=cuda:0 --workload=bpm dim=3 n=2048 dtype=c64 steps=6 Lz=0.06 save_every=6 2>&1 |
      grep -E 'bpm_adi|Duration|Throughput|Registers Per|Achieved Occupancy|Block Size|L1/TEX Hit|L2 Hit|Warp Cycles'
  fi
}
BPM="--workload=bpm dim=3 steps=100 Lz=1 save_every=100"

probe_simpson() {
  echo "== copy ceiling (hc-ceilings) before the simpson runs"
  build/bin/hc-ceilings --device=cuda:0 2>&1 | grep -i copy
  echo "== simpson fused f64 512^3 on cuda:0: occupancy (SIMPSON_MIN_ITEMS) x vector (SIMPSON_PAIR) x groups="
  for o in "" "-DSIMPSON_MIN_ITEMS=1536" "-DSIMPSON_MIN_ITEMS=2048" "-DSIMPSON_MIN_ITEMS=0" "-DSIMPSON_PAIR=0 -DSIMPSON_MIN_ITEMS=2048"; do
    for g in "" groups=528 groups=1056 groups=5280; do
      echo -n "cuda:0 [$o] [$g]: "; HC_KERNEL_OPTIONS="$o" mrun bandwidth_gbs --repeat=5 --device=cuda:0 --workload=simpson func=gauss dtype=f64 n=512x512x512 $g
    done
  done
  echo "== simpson fused f32 647^3 and f64 512^3 on opencl:0, groups="
  for g in "" groups=1056 groups=5280; do for t in "dtype=f32 n=647x647x647" "dtype=f64 n=512x512x512"; do
    echo -n "opencl:0 [$t] [$g]: "; mrun bandwidth_gbs --repeat=5 --device=opencl:0 --workload=simpson func=gauss $t $g
  done; done
  echo "== copy ceiling after"
  build/bin/hc-ceilings --device=cuda:0 2>&1 | grep -i copy
}

probe_grid() {
  echo "== grid 256^3 f32: vector kernels in groups HC_GRID_VECTOR=BXxBYxZ ([]: the default; off: one cell per item); 8 assignments back to back"
  build/bin/hc-ceilings --device=cuda:0 2>&1 | grep -i copy
  for shape in off "" 64x4x4 32x8x4 32x4x2 64x4x2 16x8x4 32x4x8; do
    for dev in cuda:0 opencl:0; do for e in copy sum axpy lap lapsum jacobi; do
      echo -n "[$shape] $dev $e: "; HC_GRID_VECTOR=$shape mrun bandwidth_gbs,memcpy_gbs --device=$dev --workload=gridexpr expr=$e n=256 iters=5 batch=8
    done; done
  done
  build/bin/hc-ceilings --device=cuda:0 2>&1 | grep -i copy
  if [ -n "$NCU" ]; then
    echo "== ncu: generated copy and lap kernels against hc-ceilings' copy4"
    keys='hcg_kernel|copy4|Duration|Throughput|Registers Per|Achieved Occupancy|Block Size|Grid Size|Stall|L1/TEX Hit|L2 Hit|Warp Cycles|Issued Warp'
    for e in copy lap; do
      $NCU --clock-control none --kernel-name regex:hcg --launch-skip 2 --launch-count 1 --section SpeedOfLight --section LaunchStats \
        --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis $H --device=cuda:0 --workload=gridexpr expr=$e n=256 iters=2 batch=1 2>&1 | grep -E "$keys"
    done
    $NCU --clock-control none --kernel-name regex:copy4 --launch-skip 1 --launch-count 1 --section SpeedOfLight --section LaunchStats \
      --section Occupancy --section WarpStateStats build/bin/hc-ceilings --device=cuda:0 2>&1 | grep -E "$keys"
  fi
}

probe_cpu() {
  echo "== cpu backend: ceilings, then jacobi f32 with two sweeps per pass (the default where the arrays outgrow the L3) and one"
  build/bin/hc-ceilings --device=cpu 2>&1 | tail -8
  for size in "dim=3 n=512 iters=24" "dim=3 n=256 iters=40" "dim=2 n=8192 iters=40"; do for spp in "" sweeps_per_pass=1; do
    echo -n "cpu jacobi [$size] [$spp]: "; $H --json --repeat=3 --device=cpu --workload=jacobi $size $spp | m glups,bandwidth_gbs
  done; done
  build/bin/hc-ceilings --device=cpu 2>&1 | grep -i copy
}

probe_ncu() {
  [ -n "$NCU" ] || { echo "no ncu"; return; }
  keys='bpm_adi|hcg_kernel|jacobi_march|Duration|DRAM Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Block Size'
  echo "== ncu bpm adi 2048 c64 (default shapes)"
  $NCU --kernel-name regex:bpm_adi --launch-skip 2 --launch-count 2 --section SpeedOfLight --section LaunchStats --section Occupancy $H --device=cuda:0 --workload=bpm dim=3 n=2048 dtype=c64 steps=6 Lz=0.06 save_every=6 2>&1 | grep -E "$keys"
  echo "== ncu grid lap, lapsum"
  for e in lap lapsum; do
    $NCU --kernel-name regex:hcg --launch-skip 2 --launch-count 1 --section SpeedOfLight --section LaunchStats --section Occupancy $H --device=cuda:0 --workload=gridexpr expr=$e n=256 iters=2 batch=1 2>&1 | grep -E "$keys"
  done
  echo "== ncu jacobi march rows=1, 4 (default block)"
  for rows in 1 4; do
    $NCU --kernel-name regex:jacobi_march --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats $H --device=cuda:0 --workload=jacobi dim=3 n=512 iters=10 rows=$rows 2>&1 | grep -E "$keys"
  done
}

{
  echo "NCU=$NCU sections=$sections"
  for s in jacobi bpm simpson grid cpu ncu; do
    if want $s; then t0=$(date +%s); probe_$s; echo "-- $s: $(( $(date +%s) - t0 )) s"; fi
  done
} 2>&1 | tee "$out/probe.txt"
