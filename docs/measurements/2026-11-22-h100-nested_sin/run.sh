#!/usr/bin/env bash
# Issue 4 (nested sin), one device call: GPU tests (accuracy figures printed),
# the criterion bench, the end-to-end table, PyTorch's figures, ncu counters,
# and compute-sanitizer memcheck + racecheck, in that order (most important
# first), inside ~225 s. Logs to $OUT (8 files).
#   run(command="cd .gpu-nested_sin && bash run.sh", carry=[".gpu-nested_sin"], timeout_s=240)
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
START=$SECONDS
BUDGET=${BUDGET:-225}
left() { echo $((BUDGET - (SECONDS - START))); }
B=bin
summary=()
note() { summary+=("[$((SECONDS - START))s] $*"); echo "== $*"; }

{
    echo "commit $(cat commit)"
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc)"
    nvcc --version 2>/dev/null | tail -1
} >"$OUT/tests.log" 2>&1

# 1. Tests (GPU ones find the GPU here); --nocapture shows the accuracy lines.
timeout 75 "$B/test-nested_sin" --test-threads=1 --nocapture >>"$OUT/tests.log" 2>&1
note "tests: exit $?; $(grep -E '^test result' "$OUT/tests.log" | tail -1)"

# 2. Criterion bench on GPU time; medians as JSON.
CRITERION_HOME=/tmp/criterion timeout 80 "$B/bench-nested_sin" --bench --warm-up-time 0.2 --measurement-time 1 >"$OUT/bench.log" 2>&1
note "bench: exit $?"
python3 criterion_medians.py /tmp/criterion >"$OUT/criterion_medians.json" 2>>"$OUT/bench.log"

# 3. End to end: pinned H2D + kernel + D2H against all CPU cores.
timeout 50 "$B/example-nested_sin_end_to_end" --budget-ms 300 --json "$OUT/end_to_end.json" >"$OUT/end_to_end.txt" 2>&1
note "end to end: exit $?"

# 4. PyTorch, same call.
echo -e "\n### PyTorch (torch_nested_sin.py), same call" >>"$OUT/bench.log"
PYTHONUNBUFFERED=1 OUT="$OUT" timeout $(( $(left) > 90 ? 80 : $(left) - 10 )) python3 torch_nested_sin.py >>"$OUT/bench.log" 2>&1
note "torch: exit $?"

# 5. ncu: instructions and DRAM bytes per kernel at 2^28 (clock control off).
if (( $(left) > 40 )); then
    timeout 35 ncu --clock-control none --kernel-name regex:'nested_sin|sin_f32|copy_f32' \
        --metrics gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,launch__occupancy_limit_registers \
        "$B/example-nested_sin_end_to_end" --profile >"$OUT/ncu.txt" 2>&1
    note "ncu: exit $?"
else
    note "ncu: skipped ($(left) s left)"
fi

# 6. compute-sanitizer on the GPU tests (COALESCE_SANITIZER=1: small cases only).
for tool in memcheck racecheck; do
    t=$(left)
    if (( t < 20 )); then note "compute-sanitizer $tool: skipped ($t s left)"; continue; fi
    [[ $tool == memcheck ]] && t=$(( t * 6 / 10 ))
    echo "### $tool" >>"$OUT/sanitizer.log"
    COALESCE_SANITIZER=1 timeout "$t" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        $([[ $tool == racecheck ]] && echo --racecheck-report all) \
        "$B/test-nested_sin" gpu --test-threads=1 >>"$OUT/sanitizer.log" 2>&1
    rc=$?
    note "compute-sanitizer $tool: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer.log" | tail -1)"
done

echo
echo "================ summary ================"
printf '%s\n' "${summary[@]}" | tee -a "$OUT/tests.log"
grep -E '^ACCURACY' "$OUT/tests.log" | cut -c1-220
cat "$OUT/end_to_end.txt"
grep -E 'time:|thrpt:' -B1 "$OUT/bench.log" | grep -vE '^--' | cut -c1-110
sed -n '/### PyTorch/,$p' "$OUT/bench.log"
exit 0
