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
m() { python3 -c "import json,sys; d=json.load(sys.stdin); print(' '.join('%s=%.4g'%(k,v['value']) for k,v in d.get('metrics',{}).items() if k in sys.argv[1].split(',')), d.get('error',''))" "$1"; }
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)

probe_jacobi() {
  echo "== jacobi 512^3 f32 march depth x block"
  for blk in 4x128 2x128 8x64 2x256 1x256; do for d in 1 2 3 4; do
    echo -n "cuda $blk d$d: "; $H --json --repeat=2 --device=cuda:0 --workload=jacobi dim=3 n=512 iters=200 block=$blk depth=$d | m glups
  done; done
}

probe_bpm() {
  echo "== bpm 2048^2 c64 ADI step: defaults, x-line tiles (WxC), y-line threads"
  for dev in cuda:0 opencl:0; do
    B="--device=$dev --workload=bpm dim=3 n=2048 dtype=c64 steps=100 Lz=1 save_every=100"
    echo -n "$dev default: "; $H --json --repeat=3 $B | m adi_step_s
  done
  B="--device=cuda:0 --workload=bpm dim=3 n=2048 dtype=c64 steps=100 Lz=1 save_every=100"
  for t in 4x128 16x32 8x32 32x16; do echo -n "cuda tile $t: "; $H --json --repeat=2 $B tile=$t | m adi_step_s; done
  for g in 64 256; do echo -n "cuda group $g: "; $H --json --repeat=2 $B group=$g | m adi_step_s; done
  for n in 512 1024; do echo -n "cuda n=$n: "; $H --json --repeat=2 --device=cuda:0 --workload=bpm dim=3 n=$n dtype=c64 steps=100 Lz=1 save_every=100 | m adi_step_s; done
  echo -n "cuda c128 2048: "; $H --json --repeat=2 --device=cuda:0 --workload=bpm dim=3 n=2048 dtype=c128 steps=50 Lz=1 save_every=50 | m adi_step_s
}

probe_simpson() {
  echo "== simpson fused >= 1 GiB: loads in flight (SIMPSON_UNROLL) x occupancy (SIMPSON_MIN_ITEMS)"
  for o in "" "-DSIMPSON_MIN_ITEMS=0" "-DSIMPSON_UNROLL=4 -DSIMPSON_MIN_ITEMS=0" "-DSIMPSON_UNROLL=4 -DSIMPSON_MIN_ITEMS=1024"; do
    for dev in cuda:0 opencl:0; do
      for c in "dtype=f64 n=512x512x512" "dtype=f32 n=647x647x647"; do
        echo -n "$dev [$o] $c: "
        HC_KERNEL_OPTIONS="$o" $H --json --repeat=3 --device=$dev --workload=simpson func=gauss $c | m bandwidth_gbs,bandwidth_fraction
      done
    done
  done
}

probe_grid() {
  echo "== grid 256^3 f32: one assignment alone (batch=1) and 8 back to back"
  for dev in cuda:0 opencl:0; do for e in copy sum axpy lap lapsum jacobi; do for b in 1 8; do
    echo -n "$dev $e batch=$b: "; $H --json --device=$dev --workload=gridexpr expr=$e n=256 iters=5 batch=$b | m time_per_assign,bandwidth_gbs,staged_per_assign
  done; done; done
}

probe_cpu() {
  echo "== cpu backend: ceilings and jacobi 256^3 f32 blocks (rows x planes x columns)"
  build/bin/hc-ceilings --device=cpu 2>&1 | tail -8
  for blk in "" block=4x254 block=32x32x254 block=64x32x254; do
    echo -n "cpu jacobi [$blk]: "; $H --json --repeat=3 --device=cpu --workload=jacobi dim=3 n=256 iters=40 $blk | m glups,bandwidth_gbs
  done
}

probe_ncu() {
  [ -n "$NCU" ] || { echo "no ncu"; return; }
  echo "== ncu bpm adi 2048 c64"
  $NCU --kernel-name regex:bpm_adi --launch-skip 2 --launch-count 2 --section SpeedOfLight --section LaunchStats --section Occupancy $H --device=cuda:0 --workload=bpm dim=3 n=2048 dtype=c64 steps=6 Lz=0.06 save_every=6 2>&1 | grep -v "^==PROF" | tail -90
  echo "== ncu grid lap"
  $NCU --kernel-name regex:hcg --launch-skip 2 --launch-count 1 --section SpeedOfLight --section LaunchStats --section MemoryWorkloadAnalysis $H --device=cuda:0 --workload=gridexpr expr=lap n=256 iters=2 batch=1 2>&1 | grep -v "^==PROF" | tail -60
}

{
  echo "NCU=$NCU sections=$sections"
  for s in jacobi bpm simpson grid cpu ncu; do
    if want $s; then t0=$(date +%s); probe_$s; echo "-- $s: $(( $(date +%s) - t0 )) s"; fi
  done
} 2>&1 | tee "$out/probe.txt"
