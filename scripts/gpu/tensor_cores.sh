#!/usr/bin/env bash
# The tensor-core GEMM device call (docs/gemm.md, steps 9-10). Here: build the release
# gemm test binary and examples/gemm_tensor_cores, strip them, pack them with ptx/sm_90a.ptx
# into <dir>/bin.tgz, and copy this script and scripts/gpu/torch_gemm_tc.py into <dir>; on the GPU machine:
# `bash <dir>/tensor_cores.sh` (SKIP_SAN=1, SKIP_NCU=1, STEPS=, TESTS=, REPS= trim it). Logs land in $OUT.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/tc /tmp/dump
tar -C /tmp/tc -xzf bin.tgz
cp torch_gemm_tc.py /tmp/tc/
cd /tmp/tc
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; nvcc --version | tail -1; } >"$OUT/env.log" 2>&1
cat "$OUT/env.log"
ptxas -arch=sm_90a -v sm_90a.ptx -o /tmp/k.cubin 2>&1 | grep -A3 "gemm_wgmma\|gemm_tf32'" | grep -v "Compile time" >>"$OUT/env.log"
cuobjdump -sass /tmp/k.cubin 2>/dev/null | awk '/Function : gemm_wgmma/{f=1} f&&/Function : /&&!/gemm_wgmma/{f=0} f' | grep -oE "HGMMA[.A-Z0-9x]*|WARPGROUP[.A-Z]*|STS[.0-9A-Z]*|LDG[.A-Z0-9]*" | sort | uniq -c >>"$OUT/env.log"
echo "== bench"; timeout 120 ./gemm_tensor_cores 4096,8192 ${REPS:-30} /tmp/dump ${STEPS:-double_buffered,tf32,wgmma,wgmma_3xtf32} 2>&1 | tee "$OUT/bench.log"
echo "== torch"; PYTHONUNBUFFERED=1 timeout 120 python3 torch_gemm_tc.py /tmp/dump 2>&1 | tee "$OUT/torch.log"
rm -rf /tmp/dump
echo "== tests"; timeout 150 ./test-gemm ${TESTS:-gpu} --test-threads=8 >"$OUT/tests.log" 2>&1; echo "tests rc $?"
grep -E "^test |test result|gpu wgmma|wgmma on" "$OUT/tests.log" | tail -40
if [[ -z ${SKIP_SAN:-} ]]; then
  echo "== memcheck"; COALESCE_SANITIZER=1 timeout 90 compute-sanitizer --tool memcheck ./test-gemm wgmma_at_every_kind_of_edge_on_the_gpu >"$OUT/sanitizer.log" 2>&1; echo "memcheck rc $?" | tee -a "$OUT/sanitizer.log"
  echo "== racecheck"; COALESCE_SANITIZER=1 timeout 100 compute-sanitizer --tool racecheck --racecheck-report all ./test-gemm wgmma_at_every_kind_of_edge_on_the_gpu >>"$OUT/sanitizer.log" 2>&1; echo "racecheck rc $?" | tee -a "$OUT/sanitizer.log"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|rc " "$OUT/sanitizer.log" | sort | uniq -c | head
fi
if [[ -z ${SKIP_NCU:-} ]]; then
  for k in wgmma wgmma_3xtf32; do
  echo "== ncu $k"; timeout 60 ncu --kernel-name regex:gemm_wgmma --launch-skip 1 --launch-count 1 --section SpeedOfLight --section WarpStateStats \
    --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
    ./gemm_tensor_cores 4096 1 "" $k >"$OUT/ncu_$k.log" 2>&1; echo "ncu rc $?"
  grep -E "gmma|bank|wavefronts|Throughput|Stall|Warp Cycles|Duration|Issued" "$OUT/ncu_$k.log" | head -24
  done
fi
