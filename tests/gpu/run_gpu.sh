#!/usr/bin/env bash
# Runs hc's tests and benchmarks on the GPU machine (NVIDIA H100, CUDA 13),
# from a build made here and carried there (docs/gpu-run.md says how):
#   bash tests/gpu/run_gpu.sh [tests|sanitize|bench|quickbench|all] [module,... | test,...]
# tests: every test program with NVIDIA's OpenCL as the OpenCL platform (the
# PoCL pass is what CI runs); sanitize: compute-sanitizer over every
# workload's CUDA kernels and the cuda/opencl overhead benchmarks.
# Logs and JSON go to $OUT (or ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
what=${1:-all}

# NVIDIA's OpenCL driver is installed there but not registered.
mkdir -p /tmp/icd && cp /etc/OpenCL/vendors/*.icd /tmp/icd/ 2>/dev/null
echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd
# CUnit is not installed there: unpack the Debian package carried in .deps.
if ls .deps/libcunit1_*.deb >/dev/null 2>&1; then
  dpkg -x .deps/libcunit1_*.deb /tmp/cu
  export LD_LIBRARY_PATH=/tmp/cu/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
fi
# Tests compiled here name the source tree by its path here.
src=/work/main
if [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
export HC_CACHE_DIR=/tmp/hc-cache
export HC_TEST_PYTHON=$(command -v python3)

build/bin/hcrun --list 2>&1 | tee "$out/list.txt"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > "$out/nvidia-smi.txt" 2>&1

if [ "$what" = tests ] || [ "$what" = all ]; then
  # NVIDIA's OpenCL as the only OpenCL platform (otherwise the first OpenCL
  # device there is PoCL's CPU device, which CI already covers).
  # tests [name,name...]: only the test programs whose names contain one of them
  if [ -n "${2:-}" ]; then
    for f in ${2//,/ }; do
      HC_OPENCL_PLATFORM=NVIDIA python3 tests/run.py --build build --filter "$f" 2>&1 | tee -a "$out/tests-nvidia-opencl.txt"
    done
  else
    HC_OPENCL_PLATFORM=NVIDIA python3 tests/run.py --build build 2>&1 | tee "$out/tests-nvidia-opencl.txt"
  fi
  # 32 hcrun processes whose grids (~4.6 GB each in f64, a few per run)
  # exhaust the GPU's memory together: each succeeds or fails cleanly.
  python3 tests/reliability/test_concurrent_hcrun.py --device=cuda:0 --n=24000 --procs=32 2>&1 |
    tee "$out/concurrent-hcrun.txt"
fi
if [ "$what" = sanitize ] || [ "$what" = all ]; then
  bash tests/gpu/sanitize.sh 2>&1 | tee "$out/sanitize.txt"
  build/bin/hc-bench-cuda-overhead --json="$out/cuda-overhead.json" 2>&1 | tee "$out/cuda-overhead.txt"
  HC_OPENCL_PLATFORM=NVIDIA build/bin/hc-bench-opencl-overhead --json="$out/opencl-overhead.json" 2>&1 |
    tee "$out/opencl-overhead.txt"
fi
if [ "$what" = bench ] || [ "$what" = all ] || [ "$what" = quickbench ]; then
  q=""
  [ "$what" = quickbench ] && q="--quick"
  # One bench/run per module: a device call that runs out of time still
  # brings back the modules it finished (bench/merge.py joins the runs).
  mods=${2:-$(cd bench/workloads && ls *.py | sed 's/\.py$//' | tr '\n' ' ')}
  # HC_GPU_BENCH_DEVICES: the devices (default: the GPU through CUDA and
  # NVIDIA's OpenCL alone). Given, every OpenCL platform stays: with PoCL
  # as opencl:0, cuda,cpu,opencl:1 is what the split modules compare.
  devs=${HC_GPU_BENCH_DEVICES:-cuda,opencl}
  platform=NVIDIA
  [ -n "${HC_GPU_BENCH_DEVICES:-}" ] && platform=
  # The device tool brings back at most 8 files: each module's JSON, report
  # and charts travel as one bench-<module>.tgz. HC_GPU_BUDGET_S (seconds
  # for all modules) stops a module before the call's limit would kill it
  # with everything unpacked.
  start=$SECONDS
  for m in ${mods//,/ }; do
    left=$(( ${HC_GPU_BUDGET_S:-100000} - (SECONDS - start) ))
    if [ "$left" -le 30 ]; then echo "[run_gpu] $m: no time left" | tee -a "$out/bench-skipped.txt"; continue; fi
    mkdir -p "$out/bench-$m"
    env PYTHONUNBUFFERED=1 ${platform:+HC_OPENCL_PLATFORM=$platform} timeout "$left" python3 bench/run --build build $q \
      --device="$devs" --only="$m" --out "$out/bench-$m" > "$out/bench-$m/log.txt" 2>&1
    echo "[run_gpu] $m: exit $? after $((SECONDS - start)) s" | tee -a "$out/bench-$m/log.txt"
    tail -3 "$out/bench-$m/log.txt"
    tar czf "$out/bench-$m.tgz" -C "$out" "bench-$m" && rm -rf "$out/bench-$m"
  done
fi
