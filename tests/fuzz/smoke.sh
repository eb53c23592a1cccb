#!/usr/bin/env bash
# The fuzz smoke CI runs: builds the targets (build.sh), runs each for
# FUZZ_SECONDS (default 30) from its committed seed corpus, and fails on any
# crash, sanitizer report, leak, timeout or broken property. Prints per
# target the executions, the coverage (libFuzzer's "cov": instrumented edges
# reached) and the corpus size.
#
#   tests/fuzz/smoke.sh [TARGET...]                 all targets by default
#   FUZZ_SECONDS=600 tests/fuzz/smoke.sh fuzz_npy   a longer run
#   FUZZ_BUILD=build-fuzz (default)                 where to build and work
#
# New inputs go to FUZZ_BUILD/fuzz/work/<target> (kept between runs, never
# into the committed corpus); a crashing input is written to
# FUZZ_BUILD/fuzz/artifacts/ and the command to replay it is printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${FUZZ_SECONDS:-30}
out=${FUZZ_BUILD:-build-fuzz}
tests/fuzz/build.sh "$out" >"$out.fuzz-build.log" 2>&1 || {
  cat "$out.fuzz-build.log"
  echo "fuzz: build failed" >&2
  exit 1
}
rm -f "$out.fuzz-build.log"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$src" .c)"); done
fi

failed=()
printf '%-18s %10s %8s %8s %6s  %s\n' target executions exec/s cov corpus result
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  bin="$out/fuzz/$t"
  work="$out/fuzz/work/$name"
  art="$out/fuzz/artifacts"
  log="$out/fuzz/$name.log"
  mkdir -p "$work" "$art"
  args=(-max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048
        -artifact_prefix="$art/$name-" -max_len=4096)
  [ -f "tests/fuzz/$name.dict" ] && args+=(-dict="tests/fuzz/$name.dict")
  seeds=()
  [ -d "tests/fuzz/corpus/$name" ] && seeds=("tests/fuzz/corpus/$name")
  rc=0
  "$bin" "${args[@]}" "$work" "${seeds[@]}" >"$log" 2>&1 || rc=$?
  # (|| true: a run that died before printing its stats is reported below)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1 || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  corp=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  if [ $rc -eq 0 ]; then
    result=ok
  else
    result="FAILED (exit $rc)"
    failed+=("$t")
  fi
  printf '%-18s %10s %8s %8s %6s  %s\n' "$t" "${execs:--}" "${rate:--}" "${cov:--}" "${corp:--}" "$result"
  if [ $rc -ne 0 ]; then
    echo "---- $log (last 60 lines) ----"
    tail -60 "$log"
    crash=$(ls -t "$art/$name-"* 2>/dev/null | head -1 || true)
    [ -n "$crash" ] && echo "replay: $bin $crash"
    echo "----"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz smoke: failed: ${failed[*]}"
  exit 1
fi
echo "fuzz smoke: ${#targets[@]} targets, ${secs} s each, no crash"
