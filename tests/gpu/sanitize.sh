#!/usr/bin/env bash
# GPU-side checks of every workload's CUDA kernels on the GPU machine:
# compute-sanitizer memcheck and racecheck over small runs of each workload
# (and one pipeline) on cuda:0, and memcheck over split runs whose cuda:0
# part overlaps its halo exchange. Run from the repository root after
# tests/gpu/run_gpu.sh has set up the machine, or alone:
#   bash tests/gpu/sanitize.sh            # logs to $OUT (or ./gpu-out)
# Exit status: 0 when every run is clean, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ ! -x "$cs" ]; then
  echo "skipped: compute-sanitizer not found"
  exit 0
fi
export HC_CACHE_DIR=${HC_CACHE_DIR:-/tmp/hc-cache}
# Each line: a workload and small parameters that still reach every kernel
# its default path uses (tiles, reductions, multi-step loops; gridexpr at
# n=32 runs the grid module's vector kernels, at n=33 its one-cell ones;
# bpm's 3-D runs without Hadley's walls hand the half-steps' right-hand
# sides on, with x-line chunks that tile the rows exactly or not).
runs=(
  "simpson n=33x35x37 func=sinprod variant=fused"
  "simpson n=33x35x37 func=sinprod variant=devicereduce"
  "simpson n=33x35x37 func=sinprod variant=precomputed"
  "jacobi dim=2 n=67x45 iters=50 variant=naive"
  "jacobi dim=2 n=67x45 iters=50 variant=tiled"
  "jacobi dim=3 n=35 tol=1e-3 check=10 variant=tiled"
  "jacobi dim=3 n=37x45x29 iters=20 f_mode=stored block=2x16 rows=3"
  "nbody n=1000 steps=3 integrator=boris B=0,0,1"
  "nbody n=777 steps=2 integrator=euler dtype=f64"
  "bpm dim=2 n=301 steps=50 solver=direct"
  "bpm dim=2 n=301 steps=20 solver=richardson"
  "bpm dim=3 n=65x63 steps=4 bc=transparent"
  "bpm dim=3 n=64x48 steps=5 save_every=2 launch=gauss tilt=2,-3"
  "bpm dim=3 n=65x63 steps=4 save_every=3"
  "multigrid dim=3 n=33 cycles=2"
  "gridexpr dim=3 n=33 iters=2"
  "gridexpr dim=3 n=32 iters=2"
  "gridexpr dim=3 n=32 iters=2 expr=jacobi dtype=f64"
)
# The cuda backend counts a kernel's parameters by asking cuFuncGetParamInfo
# for indices until the driver answers CUDA_ERROR_INVALID_VALUE (the API has
# no count query); memcheck would report each such answer. Memory errors
# are still reported. HC_SANITIZE_API_ERRORS=1 reports API errors too.
api="--report-api-errors no"
[ "${HC_SANITIZE_API_ERRORS:-0}" = 1 ] && api=""
fail=0
total=0
for tool in ${HC_SANITIZE_TOOLS:-memcheck racecheck}; do
  for r in "${runs[@]}"; do
    set -- $r
    w=$1
    shift
    total=$((total + 1))
    log="$out/sanitize-$tool.log"
    echo "=== $tool: $w $*" >>"$log"
    "$cs" --tool "$tool" --error-exitcode 99 --print-limit 20 $api \
      build/bin/hcrun --device=cuda:0 --workload="$w" "$@" >>"$log" 2>&1
    rc=$?
    summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n 1)
    printf '%-10s %-9s %-55s rc=%-3d %s\n' "$tool" "$w" "$*" "$rc" "$summary"
    [ "$rc" -eq 0 ] || fail=$((fail + 1))
  done
done
# Split runs whose halo exchange overlaps the interior (HC_SPLIT_OVERLAP):
# every sweep kernel over row ranges on cuda:0's part, beside a cpu part.
splits=(
  "jacobi dim=3 n=41 iters=12"
  "jacobi dim=3 n=37x45x29 iters=12 block=8x8x2 f_mode=stored"
  "jacobi dim=2 n=67x45 iters=12 variant=naive"
  "jacobi dim=2 n=67x45 iters=12 variant=tiled dtype=f64"
)
for r in "${splits[@]}"; do
  set -- $r
  w=$1
  shift
  total=$((total + 1))
  echo "=== memcheck split: $w $*" >>"$out/sanitize-memcheck.log"
  HC_SPLIT_OVERLAP=on "$cs" --tool memcheck --error-exitcode 99 --print-limit 20 $api \
    build/bin/hcrun --device=cuda:0,cpu:0 --split=0.6,0.4 --workload="$w" "$@" >>"$out/sanitize-memcheck.log" 2>&1
  rc=$?
  printf '%-10s %-9s %-55s rc=%-3d\n' memcheck "$w" "split, overlapped: $*" "$rc"
  [ "$rc" -eq 0 ] || fail=$((fail + 1))
done
pipe="jacobi dim=3 n=33 tol=1e-4 iters=2000 @cuda:0 | simpson"
"$cs" --tool memcheck --error-exitcode 99 $api build/bin/hcrun --pipeline "$pipe" >>"$out/sanitize-memcheck.log" 2>&1
rc=$?
total=$((total + 1))
printf '%-10s %-9s %-55s rc=%-3d\n' memcheck pipeline "$pipe" "$rc"
[ "$rc" -eq 0 ] || fail=$((fail + 1))
echo "compute-sanitizer: $((total - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
