#!/usr/bin/env bash
# The run docs/softmax.md is generated from, in one device call on the GPU
# machine (no Rust there). Next session, with an H200 lent:
#   1. here: bash scripts/gpu/build.sh   (release binaries and the PTX -> .gpu/; commit first: a -dirty build must not fill a page)
#   2. run(command="ONLY_ON=H200 bash scripts/gpu/softmax.sh", carry=[".gpu"], timeout_s=600)   (nvidia-h200; about 7 minutes)
#   3. here: mkdir docs/measurements/<date>-h200-softmax; copy $OUT's run.json into it (files_at/run.json)
#      and write its README.md (what ran: this script at the commit in run.json; anything odd);
#      then python3 scripts/docs/pages.py --dry docs/measurements/<date>-h200-softmax/run.json softmax
#      must list nothing missing
#   4. docs/templates/softmax.md's front matter: `H200: <date>-h200-softmax`; python3 scripts/docs/pages.py softmax
#      (a claim the new figures contradict names itself: fix the prose, not the figure)
#   5. git rm -r docs/measurements/2026-11-29-h200-softmax, and mend what names it (python3 scripts/docs/runs.py
#      lists it: name it `... at commit <sha>`); bash scripts/docs/check.sh
#
# Writes into $OUT (the device call returns at most eight files) the logs to
# read and the run file the page is filled from:
#   summary.txt            the machine (lib.sh's machine_head); then one `== [Ns] part: status` line per part
#   tests.log              test-softmax --nocapture: every test, with the `accuracy:` and VALUE lines
#   ptxas.txt              ptxas -v of the sm_90a module (every kernel's registers and stack)
#   bench.log              criterion's softmax groups (benches/softmax.rs)
#   torch_softmax.json     scripts/gpu/peers softmax: torch.softmax at the bench's shapes
#   sanitizer.log          compute-sanitizer memcheck, then racecheck, over the GPU tests
#   run.json               the run file (scripts/gpu/runfile.py): every figure above, the report's
#                          machine (SMs, module, roofs: `--ops softmax`) and ncu's over the
#                          gpu_ncu_probe test (one launch per kernel and shape) too
# PyTorch's table and a summary go to the console.
#
# Time on an H200: about 400 s (tests 31 s, the report 15 s, bench 325 s with
# its sweep of row lengths, torch 11 s, memcheck and racecheck 6 s, ncu 8 s
# for 18 launches). Each part has a time limit (scripts/gpu/lib.sh's
# `limit`: its own, and the call's BUDGET), so a hang shows as that part's
# timeout and the run file is written in any case.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh
own_criterion softmax
# The progress lines go to summary.txt too, under the machine.
note() { echo "== [${SECONDS}s] $*" | tee -a "$OUT/summary.txt"; }
machine_head >"$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"

# Every test, GPU tests included, cargo test's parallel threads; --nocapture
# keeps the accuracy: lines (one per kernel and benchmark shape).
timeout "$(limit 90)" "$B/test-softmax" --nocapture >"$OUT/tests.log" 2>&1
note "tests: $(status $?); $(grep '^test result' "$OUT/tests.log" | tail -1)"
tests "$B/test-softmax" "$OUT/tests.log"

# The machine as the report sees it (SMs, the module it loads, the roofs),
# with its softmax rows: the run file's `gpu` and `roofs`.
timeout "$(limit 60)" "$B/bin-coalesce" --ops softmax --out "$RUN/report" >>"$OUT/summary.txt" 2>&1
note "report (--ops softmax): $(status $?)"

# Registers and stack of every kernel, as the H100 compiles the PTX that ran.
ptxas -arch=sm_90a -v .gpu/sm_90a.ptx -o /dev/null >"$OUT/ptxas.txt" 2>&1
echo "ptxas: exit $?; $(grep -c 'entry function' "$OUT/ptxas.txt") entries"

CRITERION_HOME=$CRIT timeout "$(limit 420)" "$B/bench-softmax" --bench >"$OUT/bench.log" 2>&1
note "bench: $(status $?)"

# PyTorch in the same call: writes $OUT/torch_softmax.json, prints its table.
timeout "$(limit 90)" python3 scripts/gpu/peers softmax 2>&1
note "torch: $(status $?)"

# The GPU tests (their names hold "gpu") under each tool, at the odd shapes:
# COALESCE_SANITIZER=1 skips the benchmark shapes.
sanitize "$B/test-softmax"

# DRAM bytes per launch: the probe launches each strategy's pick and the
# online kernel once per shape and prints `ncu probe: <kernel> on <shape>`
# before each (the page pairs them in order). Clock control off: leave the
# GPU as found.
# Requests, sectors and wavefronts: what the emulator's counters model
# (`--emulate --counters`), for the page's emulator-against-ncu table.
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,launch__block_size,launch__grid_size,launch__registers_per_thread,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
# As CSV for the run file, each launch labelled with the shape of the
# probe's `ncu probe: <kernel> on <shape>` line, in order.
timeout "$(limit 60)" ncu --clock-control none --kernel-name regex:'^softmax_' --metrics "$METRICS" --csv --print-units base \
    "$B/test-softmax" gpu_ncu_probe --ignored --nocapture >"$RUN/ncu.csv" 2>&1
note "ncu: $(status $?); $(grep -c 'ncu probe: ' "$RUN/ncu.csv") launches"
grep -o 'ncu probe: .*' "$RUN/ncu.csv" | sed 's/^ncu probe: .* on //' >"$RUN/ncu-labels.txt"
runfile "bash scripts/gpu/softmax.sh" --criterion "$CRIT" --ptxas "$OUT/ptxas.txt"

echo
grep -E '^softmax_|thrpt: +\[[0-9]' "$OUT/bench.log" | cut -c1-100   # GB/s per case
ls -l "$OUT"
exit 0
