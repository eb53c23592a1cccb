#!/usr/bin/env bash
# Alternating rounds of gridexpr at 256^3 f32 under HC_GRID_VECTOR shapes,
# both GPU backends (the knob behind HCG_VEC_* in core/grid/grid_internal.h):
#   bash tests/gpu/grid_shapes.sh "shape shape ..." "expr expr ..." [rounds]
# ("" in the shapes is the default). Output: one line a run, GB/s.
set -u  # HC_GRID_PLANE_ORDER and other variables pass through
cd "$(dirname "$0")/../.."
mkdir -p /tmp/icd && cp /etc/OpenCL/vendors/*.icd /tmp/icd/ 2>/dev/null
echo /usr/lib/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd HC_OPENCL_PLATFORM=NVIDIA HC_CACHE_DIR=/tmp/hc-cache
shapes=${1:-"" 32x4x4 32x4x2}; exprs=${2:-lap lapsum jacobi}; rounds=${3:-2}
for r in $(seq "$rounds"); do for e in $exprs; do for dev in cuda:0 opencl:0; do for shape in $shapes; do
  [ "$shape" = default ] && shape=""
  printf 'round %d %-8s %-7s [%s]: ' "$r" "$dev" "$e" "$shape"
  HC_GRID_VECTOR=$shape build/bin/hcrun --json --device=$dev --workload=gridexpr expr=$e n=256 iters=5 batch=8 2>&1 |
    python3 -c "import json,sys; d=json.load(sys.stdin); print('%.0f GB/s' % d['metrics']['bandwidth_gbs']['value'])" 2>&1 | tail -1
done; done; done; done
