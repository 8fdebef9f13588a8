#!/usr/bin/env bash
# Call 2 at the commit in .gpu/commit: ncu of sgemm's launches at 1024^3,
# 8192x8192x256 and 4096^3, criterion and cuBLAS at those shapes, steps 12
# and 14 at 16384^3 under nvidia-smi's clocks and throttle reasons, then
# the A/B of 4f0a599 against this build.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
source scripts/gpu/lib.sh
BUDGET=570
machine_head >"$OUT/machine.txt" 2>&1; head -4 "$OUT/machine.txt"
for s in 1024x1024x1024 8192x8192x256 4096x4096x4096; do
  timeout "$(limit 60)" ncu --clock-control none --kernel-name regex:'^gemm_' --launch-count 6 \
    --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size,launch__registers_per_thread \
    --csv --print-units base "$B/bench-gemm" --bench "^gemm_shapes/$s\$" --profile-time 1 >"$OUT/ncu-$s.csv" 2>&1
  note "ncu $s: $(status $?)"
done
export CRITERION_HOME=/tmp/crit
timeout "$(limit 90)" "$B/bench-gemm" --bench '^gemm_shapes/(1024x1024x1024|8192x8192x256|4096x4096x4096)$' >"$OUT/bench.log" 2>&1
note "bench: $(status $?)"
OUT=/tmp/run timeout "$(limit 60)" python3 scripts/gpu/peers gemm-shapes "$OUT/bench.log" >>"$OUT/bench.log" 2>&1
note "cuBLAS: $(status $?)"
grep -E "time:|torch" "$OUT/bench.log"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active --format=csv -lms 250 >"$OUT/smi.csv" 2>&1 &
smi=$!
timeout "$(limit 120)" "$B/example-gemm_tensor_cores" 16384 10 "" wgmma_tma,wgmma_direct,wgmma_direct,wgmma_tma >"$OUT/tc16k.log" 2>&1
note "16384^3 steps 12, 14, 14, 12: $(status $?)"
kill $smi
grep -E "TIMING|TFLOP" "$OUT/tc16k.log"
OPS=gemm PASSES=2 timeout "$(limit 240)" bash scripts/gpu/ab.sh >"$OUT/ab.log" 2>&1
note "ab: $(status $?)"
cat "$OUT/ab.txt"
rm -rf "$OUT/ab" "$OUT/ab.log"
ls -l "$OUT"
