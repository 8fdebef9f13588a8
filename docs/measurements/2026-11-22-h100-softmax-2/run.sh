#!/usr/bin/env bash
# The one device call of issue 6 (softmax), run from the bundle folder
# (.gpu-softmax/, made by build.sh): GPU tests, the criterion bench,
# PyTorch in the same call, compute-sanitizer memcheck and racecheck on the
# GPU tests, ncu DRAM counters. At most 8 files land in $OUT.
#
#   run(command="cd .gpu-softmax && bash run.sh", carry=[".gpu-softmax"])
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
B=bin
S="$OUT/summary.txt"
note() { echo "== [${SECONDS}s] $*" | tee -a "$S"; }
status() { [[ $1 == 0 ]] && echo ok || echo "FAILED (exit $1)"; }

{
    echo "commit $(cat commit)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm --format=csv
    nvcc --version | tail -2
} >"$S" 2>&1
cat "$S"

# 1. Every test (GPU ones find the GPU here); --nocapture keeps the accuracy lines.
timeout 100 "$B/test-softmax" --nocapture >"$OUT/tests.log" 2>&1
note "tests: $(status $?); $(grep -E '^test result' "$OUT/tests.log" | tail -1)"

# 2. The criterion bench on GPU time; medians to JSON.
CRITERION_HOME=/tmp/criterion timeout 110 "$B/bench-softmax" --bench --noplot >"$OUT/bench.log" 2>&1
note "bench: $(status $?)"
python3 criterion_medians.py /tmp/criterion >"$OUT/criterion_medians.json" 2>>"$OUT/bench.log"

# 3. PyTorch, same call.
OUT="$OUT" PYTHONUNBUFFERED=1 timeout 90 python3 torch_softmax.py >"$OUT/torch.log" 2>&1
note "torch: $(status $?)"

# 4. compute-sanitizer on the GPU tests (benchmark shapes skipped).
for tool in memcheck racecheck; do
    echo "### $tool" >>"$OUT/sanitizer.log"
    COALESCE_SANITIZER=1 timeout 60 compute-sanitizer --tool "$tool" --error-exitcode 99 \
        $([[ $tool == racecheck ]] && echo --racecheck-report all) \
        "$B/test-softmax" gpu --test-threads=1 >>"$OUT/sanitizer.log" 2>&1
    rc=$?
    note "compute-sanitizer $tool: $(status $rc); $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer.log" | tail -1)"
done

# 5. ncu: DRAM bytes, L2 hit rate, occupancy, one launch per strategy and shape.
ncu --clock-control none --kernel-name regex:softmax \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__block_size,launch__grid_size \
    timeout 60 "$B/test-softmax" gpu_ncu_probe --ignored --nocapture >"$OUT/ncu.txt" 2>&1
note "ncu: $(status $?)"

echo
grep -E 'accuracy:|NOT TIMED' "$OUT/tests.log" "$OUT/bench.log"
grep -E '^softmax_|thrpt' "$OUT/bench.log" | cut -c1-110
cat "$OUT/torch.log"
exit 0
