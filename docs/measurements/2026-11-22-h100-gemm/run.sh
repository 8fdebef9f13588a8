#!/usr/bin/env bash
# GEMM (issue 5) device run 2: the committed ladder. Tests, cuBLAS through
# PyTorch, criterion bench, compute-sanitizer, ncu (ours and cuBLAS's), all
# in one call, each step capped so the whole stays under 240 s.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
B=$PWD/bin
LOG=$OUT/run.log
note() { echo "== [$SECONDS s] $*" | tee -a "$LOG"; }
left() { echo $((230 - SECONDS)); }
cap() { local want=$1; local l; l=$(left); (( l < want )) && echo "$l" || echo "$want"; }
{
    echo "commit $(cat commit 2>/dev/null)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv
    nvcc --version | tail -2
    ptxas --version | tail -1
} >>"$LOG" 2>&1
cat "$LOG"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,utilization.gpu --format=csv -lms 500 >"$OUT/smi.csv" 2>&1 &
SMI=$!

note "tests"
timeout "$(cap 60)" "$B/test-gemm" --test-threads=1 --nocapture >"$OUT/tests.log" 2>&1
note "test-gemm exit $?: $(grep -E '^test result' "$OUT/tests.log" | tail -1)"
echo "### test-ptx (ptxas -v of this machine)" >>"$OUT/tests.log"
timeout "$(cap 30)" "$B/test-ptx" --test-threads=1 --nocapture >>"$OUT/tests.log" 2>&1
note "test-ptx exit $?: $(grep -E '^test result' "$OUT/tests.log" | tail -1)"

note "torch"
OUT="$OUT" timeout "$(cap 40)" python3 torch_gemm.py >>"$LOG" 2>&1
note "torch exit $?"

note "bench"
CRITERION_HOME=/tmp/criterion timeout "$(cap 95)" "$B/bench-gemm" --bench >"$OUT/bench.log" 2>&1
note "bench exit $?"
[[ -d /tmp/criterion ]] && tar -czf "$OUT/criterion.tgz" -C /tmp criterion
grep -E '^gemm_|time:|thrpt:' "$OUT/bench.log" | tee -a "$LOG"

for tool in memcheck racecheck; do
    note "sanitizer $tool"
    echo "### $tool" >>"$OUT/tests.log"
    COALESCE_SANITIZER=1 timeout "$(cap 30)" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        $([[ $tool == racecheck ]] && echo --racecheck-report all) \
        "$B/test-gemm" gpu --test-threads=1 >>"$OUT/tests.log" 2>&1
    note "sanitizer $tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/tests.log" | tail -1)"
done
kill $SMI 2>/dev/null

# ncu: every step once at 4096^3 (the spot-check test launches each once).
note "ncu ours"
timeout "$(cap 40)" ncu --clock-control none -k regex:gemm_ -c 8 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section SchedulerStats --section LaunchStats \
    --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes.sum,lts__t_bytes.sum \
    "$B/test-gemm" every_variant_on_the_gpu_at_4096_spot_checked --exact >"$OUT/ncu.txt" 2>&1
note "ncu ours exit $?"
if grep -qiE "metric.*(not found|invalid|failed)|failed to find metric" "$OUT/ncu.txt"; then
    note "ncu ours: retry with the metrics of run 1 only"
    timeout "$(cap 35)" ncu --clock-control none -k regex:gemm_ -c 8 \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy \
        --section SchedulerStats --section LaunchStats \
        --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second \
        "$B/test-gemm" every_variant_on_the_gpu_at_4096_spot_checked --exact >>"$OUT/ncu.txt" 2>&1
    note "ncu ours retry exit $?"
fi

note "ncu cuBLAS"
timeout "$(cap 45)" ncu --clock-control none -k regex:'gemm|xmma' -c 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section SchedulerStats --section LaunchStats \
    --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second \
    python3 -c "
import torch
torch.backends.cuda.matmul.allow_tf32 = False
a = torch.rand(4096, 4096, device='cuda'); b = torch.rand(4096, 4096, device='cuda')
torch.mm(a, b); torch.cuda.synchronize()" >"$OUT/ncu_cublas.txt" 2>&1
note "ncu cuBLAS exit $?"
note "done"
