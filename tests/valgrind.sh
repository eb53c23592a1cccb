#!/usr/bin/env bash
# valgrind memcheck over hc: every test program (the conformance program on
# the cpu, opencl and serial backends), hcrun running every workload and a
# few pipelines on cpu:0 and opencl:0 with small parameters (hcrun itself is
# otherwise only run natively, as a child of the tests), hcrun's error exits,
# and hc-plugin-scanner on every plugin. Any valgrind error or definite leak,
# any failed test, an unexpected exit status or a timeout fails the run.
#
#   bash tests/valgrind.sh                  after `scons test` (CI): uses build/
#   VG_BUILD=build-vg bash tests/valgrind.sh
#
#   VG_BUILD    build directory (default build; built with scons first, a
#               no-op when `scons test` has just built it)
#   VG_JOBS     valgrind processes at a time (default: the number of cores;
#               each one is serial under valgrind)
#   VG_SKIP     names of jobs to leave out, space-separated (e.g. test_nbody)
#   VG_TIMEOUT  seconds per job (default 900)
#   VG_WARM=1   run the tests natively first (tests/run.py), to fill the
#               kernel caches when `scons test` has not just run
#
# Kernel caches: HC_CACHE_DIR (default BUILD/test-cache, as tests/run.py)
# and PoCL's own cache are expected warm from the native test run; with cold
# caches every OpenCL kernel is compiled by LLVM under valgrind (minutes).
# PoCL's cache is keyed by the CPU and kernel library it compiles for, and
# valgrind hides AVX-512: on such a machine set POCL_LLVM_CPU_NAME=haswell
# and POCL_KERNELLIB_NAME=avx2 for the native run and this one (.ci/run
# does), or every kernel is compiled again here.
# Suppressions: tests/valgrind.supp (third-party code only). Logs:
# BUILD/valgrind/<job>.log. Last line: 'valgrind: N passed, N failed'.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$PWD
B=${VG_BUILD:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
jobs_max=${VG_JOBS:-$(nproc 2>/dev/null || echo 2)}
limit=${VG_TIMEOUT:-900}
skip=" ${VG_SKIP:-} "
ms() { echo $(($(date +%s%N) / 1000000)); }
secs() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); }
t_start=$(ms)

command -v valgrind >/dev/null || { echo "valgrind: not installed" >&2; echo "valgrind: 0 passed, 1 failed"; exit 1; }

logs=$B/valgrind
mkdir -p "$B"
echo "valgrind: building $(basename "$B") (scons -Q -j2 builddir=${VG_BUILD:-build})"
if ! scons -Q -j2 builddir="${VG_BUILD:-build}" >"$B/valgrind-build.log" 2>&1; then
  tail -40 "$B/valgrind-build.log"
  echo "valgrind: build failed"
  echo "valgrind: 0 passed, 1 failed"
  exit 1
fi
rm -rf "$logs"
mkdir -p "$logs/out" "$logs/result"

export B top
export HC_CACHE_DIR=${HC_CACHE_DIR:-$B/test-cache}
export VG_SUPP=$top/tests/valgrind.supp
# vg CMD...: CMD under memcheck; exit 99 on any error or definite leak.
vg() {
  valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --show-leak-kinds=definite --num-callers=30 --suppressions="$VG_SUPP" "$@"
}
hcrun() { vg "$B/bin/hcrun" "$@"; }
export -f vg hcrun

# ------------------------------------------------------------- the jobs
# job NAME EXPECTED_EXIT SHELL-SNIPPET (run by bash with vg/hcrun defined)
names=() expect=() cmds=()
job() {
  case $skip in *" $1 "*) echo "valgrind: skipped $1 (VG_SKIP)"; return ;; esac
  names+=("$1") expect+=("$2") cmds+=("$3")
}

# Test programs, the slowest first so that the parallel jobs finish together.
tdir=$B/bin/tests
slow=$(echo test_nbody test_glue_nvrtc test_grid_multigrid test_cuda test_faults test_jacobi test_bpm test_grid_errors \
  test_conformance_opencl test_cache test_grid_ops test_simpson test_pipeline_examples test_glue)
progs=()
for p in $slow; do [ -x "$tdir/$p" ] && progs+=("$p"); done
for f in "$tdir"/test_*; do
  [ -x "$f" ] || continue
  p=$(basename "$f")
  case " $slow " in *" $p "*) ;; *) progs+=("$p") ;; esac
done
for p in "${progs[@]}"; do
  if [ "$p" = test_conformance ]; then
    job "test_conformance[opencl]" 0 "vg \"\$B/bin/tests/test_conformance\" --backend=opencl"
    job "test_conformance[cpu]" 0 "vg \"\$B/bin/tests/test_conformance\" --backend=cpu"
    # the test backend lives outside the plugin directory
    job "test_conformance[serial]" 0 \
      "HC_PLUGIN_PATH=\"\$B/test-plugins\" vg \"\$B/bin/tests/test_conformance\" --backend=serial"
  else
    job "$p" 0 "vg \"\$B/bin/tests/$p\""
  fi
done

# hcrun: every workload on every device here, small sizes, with --verify,
# --output (.npy, PNG and CSV writers) and --json.
devs=cpu:0
if "$B/bin/hcrun" --list 2>/dev/null | grep -q '^ *opencl:0 '; then
  devs="$devs opencl:0"
else
  echo "valgrind: no opencl:0 device: the opencl runs of hcrun are left out"
fi
for d in $devs; do
  o="\$B/valgrind/out/${d%%:*}"
  job "hcrun[simpson@$d]" 0 "hcrun --device=$d --workload=simpson func=sinprod n=17x13x9 --verify"
  job "hcrun[jacobi@$d]" 0 "hcrun --device=$d --workload=jacobi dim=3 n=17 dtype=f64 iters=400 tol=1e-4 check=50 \
residual=true --verify --output=\"$o-jacobi\""
  job "hcrun[nbody@$d]" 0 "hcrun --device=$d --workload=nbody n=96 steps=3 B=0,0,1 diagnostics=true --verify"
  job "hcrun[bpm-2d@$d]" 0 "hcrun --device=$d --workload=bpm n=63 Lz=2 bc=transparent launch=gauss tilt=5 \
save_every=10 --verify --output=\"$o-bpm\""
  job "hcrun[bpm-3d@$d]" 0 "hcrun --device=$d --workload=bpm dim=3 n=20x16 Lz=1 bc=transparent launch=gauss \
tilt=3,-3 dtype=c128 --verify"
  job "hcrun[multigrid@$d]" 0 "hcrun --device=$d --workload=multigrid dim=3 n=17 cycles=3 tol=0 --verify"
  job "hcrun[gridexpr@$d]" 0 "hcrun --device=$d --workload=gridexpr expr=lapsum n=17 iters=2 --verify"
  job "hcrun[pipeline-glue@$d]" 0 "hcrun --json --pipeline 'bpm dim=3 n=20x16 Lz=1 dtype=c64 launch=gauss @$d \
| convert to=c128 | abs2 | scale factor=0.5 | slice axis=0 | reduce op=l2'"
done
# across devices (moves between cpu:0 and opencl:0), from a pipeline file
last=${devs##* }
cat >"$logs/out/cross.pipe" <<EOF
# every hand-over crosses devices when there are two
jacobi dim=3 n=9 f=sin dtype=f64 tol=1e-6 iters=5000 @cpu:0
simpson @$last
scale 1.u>in factor=2 @$last
convert to=f32
reduce op=max @cpu:0
EOF
job "hcrun[pipeline-file]" 0 "hcrun --pipeline-file=\"\$B/valgrind/out/cross.pipe\" --output=\"\$B/valgrind/out/cross\""
# error exits: the paths that give up half-way
printf 'not a npy file' >"$logs/out/bad.npy"
job "hcrun[--list]" 0 "hcrun --list"
job "hcrun[bad-parameter]" 2 "hcrun --workload=jacobi n=abc"
job "hcrun[bad-pipeline]" 2 "hcrun --pipeline 'jacobi dim=2 n=9 | bpm'"
job "hcrun[bad-input@$last]" 2 "hcrun --device=$last --workload=simpson input=\"\$B/valgrind/out/bad.npy\""
job "hcrun[too-big@$last]" 4 "hcrun --device=$last --workload=nbody n=2000M steps=1"
# the plugin scanner on every plugin (run natively by the tests)
job "hc-plugin-scanner[all plugins]" 0 \
  'for p in "$B"/lib/hc/plugins/*.so "$B"/test-plugins/*.so; do vg "$B/lib/hc/hc-plugin-scanner" "$p" || exit $?; done'

# ------------------------------------------------------------- running
run_one() { # index
  local i=$1 name=${names[$1]} log t0 rc verdict
  log=$logs/$(printf '%s' "${names[$1]}" | tr -c 'A-Za-z0-9_.@-' '_').log
  t0=$(ms)
  timeout -k 20 "$limit" bash -c "${cmds[$i]}" >"$log" 2>&1 </dev/null
  rc=$?
  if [ $rc -eq "${expect[$i]}" ] && ! grep -Eq '^==[0-9]+== ERROR SUMMARY: [1-9]' "$log"; then
    verdict=ok
  elif [ $rc -eq 99 ] || grep -Eq '^==[0-9]+== ERROR SUMMARY: [1-9]' "$log"; then
    verdict="FAILED (valgrind errors)"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    verdict="FAILED (timeout ${limit}s)"
  else
    verdict="FAILED (exit $rc, want ${expect[$i]})"
  fi
  printf '%-40s %-26s %7ss\n' "$name" "$verdict" "$(secs $(($(ms) - t0)))"
  if [ "$verdict" != ok ]; then
    {
      echo "---- $name: $log ----"
      grep -E '^==[0-9]+==' "$log" | grep -Ev 'Memcheck, a memory|Copyright \(C\)|Using Valgrind|Command:|^==[0-9]+== *$' | head -120
      grep -Ev '^==[0-9]+==' "$log" | tail -15
      echo "----"
    } >"$logs/result/$i.detail"
    echo failed >"$logs/result/$i"
  else
    echo ok >"$logs/result/$i"
  fi
}

if [ "${VG_WARM:-0}" = 1 ]; then
  t0=$(ms)
  python3 tests/run.py --build "$B" >"$logs/warm-up.log" 2>&1
  rc=$?
  echo "valgrind: kernel caches warmed by the native tests in $(secs $(($(ms) - t0)))s (exit $rc)"
fi
# hcrun's jobs once natively first: a kernel or work-group size that the
# native tests never built would otherwise be compiled by PoCL's LLVM under
# valgrind (minutes each). Their exit status is checked under valgrind.
t0=$(ms) n=0
for i in "${!names[@]}"; do
  case ${names[$i]} in hcrun\[*) ;; *) continue ;; esac
  timeout -k 20 "$limit" bash -c "vg() { \"\$@\"; }; ${cmds[$i]}" >>"$logs/warm-up.log" 2>&1 </dev/null
  n=$((n + 1))
done
echo "valgrind: kernel caches warmed by $n native hcrun runs in $(secs $(($(ms) - t0)))s"
echo "valgrind: ${#names[@]} jobs, $jobs_max at a time, logs in $logs"
running=0
for i in "${!names[@]}"; do
  if [ $running -ge "$jobs_max" ]; then
    wait -n
    running=$((running - 1))
  fi
  run_one "$i" &
  running=$((running + 1))
done
wait

passed=0 failed=0
for i in "${!names[@]}"; do
  if [ "$(cat "$logs/result/$i" 2>/dev/null)" = ok ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    [ -f "$logs/result/$i.detail" ] && cat "$logs/result/$i.detail"
  fi
done
echo "valgrind: total time $(secs $(($(ms) - t_start)))s"
echo "valgrind: $passed passed, $failed failed"
[ $failed -eq 0 ]
