#!/usr/bin/env bash
# Tuning probe for the H100 (kernel durations with Nsight Compute where present).
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/gpu-out}; mkdir -p "$out"
mkdir -p /tmp/icd && cp /etc/OpenCL/vendors/*.icd /tmp/icd/ 2>/dev/null
echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd HC_OPENCL_PLATFORM=NVIDIA HC_CACHE_DIR=/tmp/hc-cache
H=build/bin/hcrun
m() { python3 -c "import json,sys; d=json.load(sys.stdin); print(' '.join('%s=%.4g'%(k,v['value']) for k,v in d.get('metrics',{}).items() if k in sys.argv[1].split(',')), d.get('error',''))" "$1"; }
{
which ncu nsys; ls /usr/local/cuda*/bin 2>/dev/null | grep -i -E "ncu|nsys" 
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "NCU=$NCU"
echo "== jacobi 512^3 f32 march depth x block"
for blk in 4x128 2x128 8x64 2x256 1x256; do for d in 1 2 3 4; do
  echo -n "cuda $blk d$d: "; $H --json --repeat=2 --device=cuda:0 --workload=jacobi dim=3 n=512 iters=200 block=$blk depth=$d | m glups
done; done
echo "== simpson f64 512^3 groups"
for g in 1320 2640 5280 10560; do echo -n "cuda g$g: "; $H --json --repeat=3 --device=cuda:0 --workload=simpson func=gauss n=512x512x512 dtype=f64 groups=$g | m bandwidth_gbs; done
echo "== bpm 2048^2 c64 tile (x-lines) and group (y-lines)"
B="--device=cuda:0 --workload=bpm dim=3 n=2048 dtype=c64 steps=100 Lz=1 save_every=100"
for t in 8x64 16x32 32x16 32x8 64x8 16x16 32x32; do echo -n "tile $t: "; $H --json --repeat=2 $B tile=$t | m adi_step_s; done
for g in 128 256 512 1024; do echo -n "group $g: "; $H --json --repeat=2 $B group=$g | m adi_step_s; done
echo "== grid copy/lapsum 256^3 iters"
for e in copy sum lap lapsum jacobi; do echo -n "cuda $e: "; $H --json --device=cuda:0 --workload=gridexpr expr=$e n=256 iters=20 | m time_per_assign,time_mean,bandwidth_gbs; done
if [ -n "$NCU" ]; then
  echo "== ncu grid copy"
  $NCU --kernel-name regex:hcg --launch-skip 2 --launch-count 1 --section SpeedOfLight --section LaunchStats $H --device=cuda:0 --workload=gridexpr expr=copy n=256 iters=5 2>&1 | grep -v "^==PROF" | tail -40
  echo "== ncu bpm adi 2048 c64"
  $NCU --kernel-name regex:bpm_adi --launch-skip 2 --launch-count 2 --section SpeedOfLight --section LaunchStats --section Occupancy $H --device=cuda:0 --workload=bpm dim=3 n=2048 dtype=c64 steps=6 Lz=0.06 save_every=6 2>&1 | grep -v "^==PROF" | tail -90
  echo "== ncu jacobi march"
  $NCU --kernel-name regex:jacobi_march --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis $H --device=cuda:0 --workload=jacobi dim=3 n=512 iters=10 block=4x128 2>&1 | grep -v "^==PROF" | tail -60
fi
} 2>&1 | tee "$out/probe.txt"
