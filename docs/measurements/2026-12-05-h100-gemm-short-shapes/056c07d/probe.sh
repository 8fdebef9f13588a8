#!/usr/bin/env bash
# One device call at the commit in .gpu/commit: the GEMM tests, ncu of
# sgemm's launches at 1024^3, 8192x8192x256 and 4096^3, criterion and
# cuBLAS at those shapes, memcheck, the A/B of c5fe3bd against this
# build, then racecheck.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
source scripts/gpu/lib.sh
BUDGET=570
machine_head >"$OUT/machine.txt" 2>&1; head -4 "$OUT/machine.txt"
timeout "$(limit 120)" "$B/test-gemm" >"$OUT/tests.log" 2>&1
note "tests: $(status $?); $(grep '^test result' "$OUT/tests.log")"
for s in 1024x1024x1024 8192x8192x256 4096x4096x4096; do
  timeout "$(limit 60)" ncu --clock-control none --kernel-name regex:'^gemm_' --launch-count 5 \
    --metrics gpu__time_duration.sum,dram__bytes.sum,sm__inst_issued.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread \
    --csv --print-units base "$B/bench-gemm" --bench "^gemm_shapes/$s\$" --profile-time 1 >"$OUT/ncu-$s.csv" 2>&1
  note "ncu $s: $(status $?)"
done
export CRITERION_HOME=/tmp/crit
timeout "$(limit 90)" "$B/bench-gemm" --bench '^gemm_shapes/(1024x1024x1024|8192x8192x256|4096x4096x4096)$' >"$OUT/bench.log" 2>&1
note "bench: $(status $?)"
OUT=/tmp/run timeout "$(limit 60)" python3 scripts/gpu/peers gemm-shapes "$OUT/bench.log" >>"$OUT/bench.log" 2>&1
note "cuBLAS: $(status $?)"
grep -E "time:|torch" "$OUT/bench.log"
: >"$OUT/sanitizer.log"
SANITIZER_TIMEOUT=60 sanitize_with memcheck "$B/test-gemm"
OPS=gemm PASSES=2 timeout "$(limit 240)" bash scripts/gpu/ab.sh >"$OUT/ab.log" 2>&1
note "ab: $(status $?)"
SANITIZER_TIMEOUT=150 sanitize_with racecheck "$B/test-gemm"
grep -E "split_a|ozaki|range" "$OUT/ab.txt"
rm -rf "$OUT/ab" "$OUT/ab.log"
ls -l "$OUT"
