#!/usr/bin/env bash
# The run docs/gemm.md is generated from, in one device call on the GPU machine
# (no Rust there): scripts/gpu/build.sh first, here; then
#   run(command="bash scripts/gpu/gemm.sh", carry=[".gpu"])
# and, here, with $OUT's run.json in docs/measurements/<date>-<gpu>-gemm, named
# in docs/templates/gemm.md's front matter:
#   python3 scripts/docs/pages.py gemm
#
# Writes into $OUT (the device call returns at most eight files):
#   machine.txt            commit, GPU, driver, toolkit
#   tests.log              test-gemm: every step against f64 at odd shapes and at 4096^3
#   ptxas.txt              ptxas -v of the GEMM kernels in the module an H100 or H200 loads
#   tc.log                 examples/gemm_tensor_cores at 4096^3 and 8192^3 (CUDA-event
#                          medians of steps 7-16, outputs dumped), then
#                          `scripts/gpu/peers gemm-tc`'s lines: cuBLAS SGEMM and TF32
#                          through PyTorch, and every dumped output's error against
#                          the f64 product on the same inputs
#   bench.log              criterion's gemm groups (every step at 4096^3 and 8192^3,
#                          sgemm off the tile), then PyTorch at the off-tile shapes
#   run.json               the run file (scripts/gpu/runfile.py): every figure above, and ncu's
#                          of every step once at 4096^3, then cuBLAS SGEMM's kernel
#   sanitizer.log          compute-sanitizer memcheck, then racecheck, over the GEMM GPU tests
# Time on an H100: about 7 minutes (tests 1, tensor-core timings and errors 1,
# bench 2, ncu 1/2, sanitizers 2). Each part has a timeout so that a hang cannot pass 9 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh
note() { echo "== [${SECONDS}s] $*"; }

{
    echo "commit $(cat .gpu/commit 2>/dev/null)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.current.memory --format=csv
    nvcc --version | tail -2
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

timeout 150 "$B/test-gemm" >"$OUT/tests.log" 2>&1
note "tests: $(status $?); $(grep '^test result' "$OUT/tests.log")"
tests "$B/test-gemm" "$OUT/tests.log"

# The module an H100 loads: the newest of sm_90a and sm_90 in the bundle.
module=$(ls .gpu/sm_90a.ptx .gpu/sm_90.ptx 2>/dev/null | head -1)
arch=$(basename "$module" .ptx)
echo "### $arch" >"$OUT/ptxas.txt"
ptxas -arch="$arch" -v "$module" -o /dev/null 2>&1 | grep -A3 "entry function 'gemm_" >>"$OUT/ptxas.txt"

mkdir -p /tmp/dump
timeout 180 "$B/example-gemm_tensor_cores" 4096,8192 30 /tmp/dump >"$OUT/tc.log" 2>&1
note "tensor-core timings: $(status $?)"
timeout 200 python3 scripts/gpu/peers gemm-tc --out "$RUN" /tmp/dump >>"$OUT/tc.log" 2>&1
note "cuBLAS and errors: $(status $?)"
rm -rf /tmp/dump

CRITERION_HOME=/tmp/criterion timeout 300 "$B/bench-gemm" --bench >"$OUT/bench.log" 2>&1
note "bench: $(status $?)"
OUT=$RUN timeout 90 python3 scripts/gpu/peers gemm-shapes "$OUT/bench.log" >/tmp/torch_shapes.txt 2>&1
cat /tmp/torch_shapes.txt >>"$OUT/bench.log"

SECTIONS=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy
    --section SchedulerStats --section WarpStateStats)
# Requests, sectors and wavefronts: what the emulator's counters model
# (`--emulate --counters`), for the page's emulator-against-ncu table.
METRICS=dram__bytes.sum,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,sm__inst_executed_pipe_fma.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
# Stall reasons: every per-issue stall ratio this ncu knows for the GPU
# (the names differ between ncu versions, so they are asked for, not listed).
STALLS=$(ncu --query-metrics 2>/dev/null | grep -o '^smsp__average_warps_issue_stalled_[a-z_]*_per_issue_active' | sort -u |
    sed 's/$/.ratio/' | paste -sd, -)
METRICS=$METRICS${STALLS:+,$STALLS}
timeout 150 ncu --clock-control none --kernel-name regex:'^gemm_' "${SECTIONS[@]}" --metrics "$METRICS" \
    --csv --print-units base "$B/test-gemm" every_variant_on_the_gpu_at_4096_spot_checked >"$RUN/ncu.csv" 2>&1
note "ncu: $(status $?)"
timeout 90 ncu --clock-control none --kernel-name regex:'gemm|xmma|sm90' --launch-skip 2 --launch-count 1 "${SECTIONS[@]}" \
    --metrics "$METRICS" --csv --print-units base python3 -c '
import torch
torch.backends.cuda.matmul.allow_tf32 = False
a, b = (torch.rand(4096, 4096, device="cuda") for _ in range(2))
for _ in range(3):
    a @ b
torch.cuda.synchronize()' >"$RUN/ncu-cublas.csv" 2>&1
note "ncu cuBLAS: $(status $?)"
SANITIZER_TIMEOUT=150 sanitize "$B/test-gemm"
runfile "bash scripts/gpu/gemm.sh" --criterion /tmp/criterion --ptxas "$OUT/ptxas.txt"
grep -E "TFLOP|error|sgemm" "$OUT/tc.log" "$OUT/bench.log" | tail -30
