#!/usr/bin/env bash
# The run docs/gemm.md is generated from, on the GPU machine (scripts/gpu/build.sh
# first, here; then run(command="bash scripts/gpu/gemm.sh", carry=[".gpu"])).
# Writes into $OUT:
#   machine.txt           commit, GPU, driver, toolkit
#   tests.log             test-gemm (every step against f64 at odd shapes and 4096^3)
#   ptxas.txt             ptxas -v of the GEMM kernels in the module an H100 loads
#   torch_gemm.json       cuBLAS SGEMM and TF32 through PyTorch (scripts/gpu/torch_gemm.py)
#   bench.log             criterion's gemm groups, then PyTorch at the off-tile shapes
#   criterion_medians.json (scripts/gpu/criterion_medians.py)
#   ncu.txt               every step once at 4096^3; then cuBLAS SGEMM's kernel
#   smi.csv               SM clock and utilisation, sampled through the benches
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
B=.gpu/bin
[[ -d $B || ! -f .gpu/bin.tgz ]] || tar -C .gpu -xzf .gpu/bin.tgz
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/scripts/gpu${PYTHONPATH:+:$PYTHONPATH}

{
    echo "commit $(cat .gpu/commit 2>/dev/null)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.current.memory --format=csv
    nvcc --version | tail -2
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

nvidia-smi --query-gpu=timestamp,clocks.current.sm,power.draw,utilization.gpu --format=csv -lms 500 >"$OUT/smi.csv" &
smi=$!

"$B/test-gemm" >"$OUT/tests.log" 2>&1
echo "== tests: exit $?; $(grep '^test result' "$OUT/tests.log")"

# The module an H100 loads: the newest of sm_90a and sm_90 in the bundle.
module=$(ls .gpu/sm_90a.ptx .gpu/sm_90.ptx 2>/dev/null | head -1)
arch=$(basename "$module" .ptx)
echo "### $arch" >"$OUT/ptxas.txt"
ptxas -arch="$arch" -v "$module" -o /dev/null 2>&1 | grep -A3 "entry function 'gemm_" >>"$OUT/ptxas.txt"

timeout 300 python3 scripts/gpu/torch_gemm.py >"$OUT/torch.log" 2>&1
echo "== torch: exit $?"

CRITERION_HOME=/tmp/criterion "$B/bench-gemm" --bench >"$OUT/bench.log" 2>&1
echo "== bench: exit $?"
python3 scripts/gpu/torch_gemm_shapes.py >>"$OUT/bench.log" 2>&1
python3 scripts/gpu/criterion_medians.py /tmp/criterion >"$OUT/criterion_medians.json"
kill "$smi"

SECTIONS=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy
    --section SchedulerStats --section WarpStateStats)
METRICS=dram__bytes.sum,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,sm__inst_executed_pipe_fma.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
ncu --clock-control none --kernel-name regex:'^gemm_' "${SECTIONS[@]}" --metrics "$METRICS" \
    "$B/test-gemm" every_variant_on_the_gpu_at_4096_spot_checked >"$OUT/ncu.txt" 2>&1
echo "== ncu: exit $?"
ncu --clock-control none --kernel-name regex:'gemm|xmma|sm90' --launch-skip 2 --launch-count 1 "${SECTIONS[@]}" \
    --metrics "$METRICS" python3 -c '
import torch
torch.backends.cuda.matmul.allow_tf32 = False
a, b = (torch.rand(4096, 4096, device="cuda") for _ in range(2))
for _ in range(3):
    a @ b
torch.cuda.synchronize()' >>"$OUT/ncu.txt" 2>&1
echo "== ncu cuBLAS: exit $?"
grep -E "TFLOP|sgemm" "$OUT/torch.log" "$OUT/bench.log" | tail -20
