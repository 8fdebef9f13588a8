#!/usr/bin/env bash
# The run docs/gemm.md is generated from, in one device call on the GPU
# machine (no Rust there). Next session, with an H200 lent:
#   1. here: bash scripts/gpu/build.sh   (release binaries and the PTX -> .gpu/; commit first: a -dirty build must not fill a page)
#   2. run(command="ONLY_ON=H200 bash scripts/gpu/gemm.sh", carry=[".gpu"], timeout_s=600)   (nvidia-h200; about 9 minutes;
#      a call for nvidia-h200 may be given an H100: the reply's `device` says which, and an H100's figures
#      do not fill this page; a warm machine serves the next call, so give_back an H100 before asking again)
#   3. here: mkdir docs/measurements/<date>-h200-gemm; copy $OUT's run.json into it (files_at/run.json)
#      and write its README.md (what ran: this script at the commit in run.json; anything odd, such as a part
#      that ran out of time: `== [Ns] part: FAILED (exit 124)` in the output);
#      then python3 scripts/docs/pages.py --dry docs/measurements/<date>-h200-gemm/run.json gemm
#      must list nothing missing
#   4. docs/templates/gemm.md's front matter: `H200: <date>-h200-gemm`; python3 scripts/docs/pages.py gemm
#      (a claim the new figures contradict names itself: fix the prose, not the figure)
#   5. git rm -r the folder it replaces, and mend what names it (python3 scripts/docs/runs.py lists it:
#      name it `... at commit <sha>`); bash scripts/docs/check.sh
#
# Writes into $OUT (the device call returns at most eight files):
#   machine.txt            the machine (lib.sh's machine_head); then the report's table (`--ops transpose
#                          --shapes 256`: its SMs, module and roofs are the run file's `gpu` and `roofs`)
#   tests.log              test-gemm: every step against f64 at odd shapes and at 4096^3
#   ptxas.txt              ptxas -v of the GEMM kernels in the module an H100 or H200 loads
#   tc.log                 examples/gemm_tensor_cores at 4096^3 and 8192^3 (CUDA-event
#                          medians of steps 7-16, outputs dumped; a TIMING line each), at 16384^3
#                          (steps 12, 14, 15 and 16, not dumped), then
#                          `scripts/gpu/peers gemm-tc`'s lines: cuBLAS SGEMM and TF32
#                          through PyTorch, and every dumped output's error against
#                          the f64 product on the same inputs (torch_gemm_tc.json's `errors`)
#   bench.log              criterion's gemm groups (every step at 4096^3 and 8192^3,
#                          sgemm and steps 13, 15 and 16 off the tile), then PyTorch at the off-tile shapes
#   specials.txt           examples/gemm_specials (sgemm and step 7 on special values and
#                          the input classes of FP32 accuracy), then `scripts/gpu/peers
#                          gemm-specials`: cuBLAS SGEMM on the same inputs (the run file's `specials`)
#   sanitizer.log          compute-sanitizer memcheck, then racecheck, over the GEMM GPU tests
#   run.json               the run file (scripts/gpu/runfile.py): every figure above, and ncu's
#                          of every step once at 4096^3, then cuBLAS SGEMM's kernel
# Time: about 9 minutes of the call's 10. The parts on an H200 at 2068c91 and on an H100 at
# 7e7c92b (2026-12-05, with step 17): tests 55 s, the machine 6, tensor-core timings 58 and 31-39
# at 16384^3, cuBLAS and errors 15, bench 209-217 (its 8192^3 group then at 2 s a step, now 1:
# about 17 s less), cuBLAS off the tile 10, specials 19 and 6, ncu 22 and 8, memcheck 9, racecheck
# over 82 (73 at b74d7a5). Each part has a
# time limit (scripts/gpu/lib.sh's `limit`: its own, and the call's BUDGET), so a hang shows
# as that part's timeout and the run file is written in any case.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh
own_criterion gemm
machine_head >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

timeout "$(limit 150)" "$B/test-gemm" >"$OUT/tests.log" 2>&1
note "tests: $(status $?); $(grep '^test result' "$OUT/tests.log")"
tests "$B/test-gemm" "$OUT/tests.log"

# The machine as the report sees it (SMs, the module it loads, the roofs),
# at its smallest: the transposes at 256^2.
timeout "$(limit 60)" "$B/bin-coalesce" --ops transpose --shapes 256 --out "$RUN/report" >>"$OUT/machine.txt" 2>&1
note "report (the machine): $(status $?)"

# The module an H100 loads: the newest of sm_90a and sm_90 in the bundle.
module=.gpu/sm_90a.ptx
[[ -f $module ]] || module=.gpu/sm_90.ptx
arch=$(basename "$module" .ptx)
echo "### $arch" >"$OUT/ptxas.txt"
ptxas -arch="$arch" -v "$module" -o /dev/null 2>&1 | grep -A3 "entry function 'gemm_" >>"$OUT/ptxas.txt"

mkdir -p /tmp/dump
timeout "$(limit 180)" "$B/example-gemm_tensor_cores" 4096,8192 30 /tmp/dump >"$OUT/tc.log" 2>&1
note "tensor-core timings: $(status $?)"
# 16384^3: the TMA steps only (TF32, 3xTF32 and Ozaki), no dump (1 GiB an output); cuBLAS's peers time it below.
timeout "$(limit 90)" "$B/example-gemm_tensor_cores" 16384 10 "" \
    wgmma_tma,wgmma_direct,wgmma_direct_3xtf32,wgmma_split_a_3xtf32,wgmma_ozaki >>"$OUT/tc.log" 2>&1
note "tensor-core timings at 16384^3: $(status $?)"
timeout "$(limit 200)" python3 scripts/gpu/peers gemm-tc --out "$RUN" /tmp/dump >>"$OUT/tc.log" 2>&1
note "cuBLAS and errors: $(status $?)"
rm -rf /tmp/dump

CRITERION_HOME=$CRIT timeout "$(limit 300)" "$B/bench-gemm" --bench >"$OUT/bench.log" 2>&1
note "bench: $(status $?)"
log=$OUT/bench.log
OUT=$RUN timeout "$(limit 90)" python3 scripts/gpu/peers gemm-shapes "$log" >/tmp/torch_shapes.txt 2>&1
note "cuBLAS off the tile: $(status $?)"
cat /tmp/torch_shapes.txt >>"$OUT/bench.log"

# Special values: our outputs and the FP32 FMA reference's (VALUE lines),
# then cuBLAS SGEMM on the same inputs, which writes the run file's
# `specials` from both ($RUN/torch_gemm_specials.json).
mkdir -p /tmp/specials
timeout "$(limit 120)" "$B/example-gemm_specials" /tmp/specials >"$OUT/specials.txt" 2>&1
note "special values: $(status $?)"
timeout "$(limit 90)" python3 scripts/gpu/peers gemm-specials --out "$RUN" /tmp/specials "$OUT/specials.txt" >/tmp/torch_specials.txt 2>&1
note "cuBLAS on special values: $(status $?)"
cat /tmp/torch_specials.txt >>"$OUT/specials.txt"
rm -rf /tmp/specials

SECTIONS=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy
    --section SchedulerStats --section WarpStateStats)
# Requests, sectors and wavefronts: what the emulator's counters model
# (`--emulate --counters`), for the page's emulator-against-ncu table; and by
# their metric names the figures the sections show under their own labels
# (duration, issue slots, cycles per issued instruction, L2 throughput).
METRICS=gpu__time_duration.sum,sm__inst_issued.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_per_inst_issued.ratio,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,sm__inst_executed_pipe_fma.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
# Stall reasons: every per-issue stall ratio this ncu knows for the GPU
# (the names differ between ncu versions, so they are asked for, not listed).
STALLS=$(ncu --query-metrics 2>/dev/null | grep -o '^smsp__average_warps_issue_stalled_[a-z_]*_per_issue_active' | sort -u |
    sed 's/$/.ratio/' | paste -sd, -)
METRICS=$METRICS${STALLS:+,$STALLS}
# Each step's launches in order: runfile.py labels a kernel launched more
# than once `launch <n>`; the page takes step 16's operand pass as the last
# gemm_pack before its product.
timeout "$(limit 150)" ncu --clock-control none --kernel-name regex:'^gemm_' "${SECTIONS[@]}" --metrics "$METRICS" \
    --csv --print-units base "$B/test-gemm" every_variant_on_the_gpu_at_4096_spot_checked >"$RUN/ncu.csv" 2>&1
note "ncu: $(status $?)"
timeout "$(limit 90)" ncu --clock-control none --kernel-name regex:'gemm|xmma|sm90' --launch-skip 2 --launch-count 1 "${SECTIONS[@]}" \
    --metrics "$METRICS" --csv --print-units base python3 -c '
import torch
torch.backends.cuda.matmul.allow_tf32 = False
a, b = (torch.rand(4096, 4096, device="cuda") for _ in range(2))
for _ in range(3):
    a @ b
torch.cuda.synchronize()' >"$RUN/ncu-cublas.csv" 2>&1
note "ncu cuBLAS: $(status $?)"
SANITIZER_TIMEOUT=150 sanitize "$B/test-gemm"
runfile "bash scripts/gpu/gemm.sh" --criterion "$CRIT" --ptxas "$OUT/ptxas.txt" --log "$OUT/tc.log"
grep -E "TFLOP|error|sgemm" "$OUT/tc.log" "$OUT/bench.log" | tail -30
ls -l "$OUT"
exit 0
