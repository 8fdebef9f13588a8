#!/usr/bin/env bash
# The run docs/nested_sin.md is generated from, in one device call on the GPU
# machine (no Rust there). Next session, with an H200 lent:
#   1. here: bash scripts/gpu/build.sh   (release binaries and the PTX -> .gpu/; commit first: a -dirty build must not fill a page)
#   2. run(command="ONLY_ON=H200 bash scripts/gpu/nested_sin.sh", carry=[".gpu"], timeout_s=600)   (nvidia-h200; about 3 minutes)
#   3. here: mkdir docs/measurements/<date>-h200-nested_sin; copy $OUT's run.json into it (files_at/run.json)
#      and write its README.md (what ran: this script at the commit in run.json; anything odd);
#      then python3 scripts/docs/pages.py --dry docs/measurements/<date>-h200-nested_sin/run.json nested_sin
#      must list nothing missing
#   4. docs/templates/nested_sin.md's front matter: `H200: <date>-h200-nested_sin` (keep `CPU:
#      2026-11-28-cpu-poly-bounds`, the exhaustive bound test on a CPU); python3 scripts/docs/pages.py nested_sin
#      (a claim the new figures contradict names itself: fix the prose, not the figure)
#   5. git rm -r the folder it replaces, and mend what names it (python3
#      scripts/docs/runs.py lists it: name it `... at commit <sha>`); bash scripts/docs/check.sh
#
# Writes into $OUT (the device call returns at most eight files) the logs to
# read and the run file the page is filled from:
#   tests.log              the machine (commit, date, nvidia-smi, CPU, nvcc; also as a VALUE line), a blank
#                          line, then test-nested_sin --nocapture: every test, with the ACCURACY and VALUE lines
#   ptxas.txt              ptxas -v of the sm_90a module, the nested-sin kernels' entries
#   bench.log              criterion's nested_sin groups (benches/nested_sin.rs)
#   end_to_end.json        example-nested_sin_end_to_end --json (H2D + kernel + D2H vs every CPU core),
#                          with its figures as the run file's values and timings
#   torch_peers.json       scripts/gpu/peers nested-sin: four torch.sin, torch.compile, CUDA graph
#   sanitizer.log          compute-sanitizer memcheck, then racecheck, over the GPU tests
#   run.json               the run file (scripts/gpu/runfile.py): every figure above, the report's
#                          machine (SMs, module, roofs with the DRAM spec: `--ops nested_sin`) and
#                          ncu's over example-nested_sin_end_to_end --profile (each kernel once at 2^28) too
# The end-to-end table, PyTorch's lines and a status line per part go to the console.
#
# Time on an H100: about 115 s (tests 14 s, bench 41 s, end to end 12 s,
# torch 34 s with torch.compile, memcheck and racecheck 4 s, ncu 2 s for 8
# launches), and the report's roofs and nested sines about 15 s. Each part
# has a time limit (scripts/gpu/lib.sh's `limit`), so a hang shows as that
# part's timeout and the run file is written in any case.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh
own_criterion nested_sin

# The machine heads tests.log (the page's Machine section: everything before
# the first blank line), so that the eight files hold it; the same as the
# run file's value `machine`.
machine_head >/tmp/machine.txt 2>&1
cat /tmp/machine.txt
{ cat /tmp/machine.txt; echo; machine /tmp/machine.txt; } >"$OUT/tests.log"

# Every test, GPU tests included, cargo test's parallel threads; --nocapture
# keeps the ACCURACY lines (2^24 inputs against f64).
timeout "$(limit 90)" "$B/test-nested_sin" --nocapture >>"$OUT/tests.log" 2>&1
note "tests: $(status $?); $(grep '^test result' "$OUT/tests.log" | tail -1)"
tests "$B/test-nested_sin" "$OUT/tests.log"

# The machine as the report sees it (SMs, the module it loads, the roofs and
# the specified DRAM bandwidth), with its nested-sine rows at 2^28: the run
# file's `gpu` and `roofs`.
timeout "$(limit 60)" "$B/bin-coalesce" --ops nested_sin --out "$RUN/report" 2>&1 | tail -12
note "report (--ops nested_sin): $(status "${PIPESTATUS[0]}")"

# Registers and stack of the nested-sin kernels, as an H100 compiles the PTX that ran (sm_90a).
ptxas -arch=sm_90a -v .gpu/sm_90a.ptx -o /dev/null 2>&1 \
    | grep -A3 -E "Compiling entry function '(sin_f32|nested_sin_[a-z_]+)'" | grep -v '^--$' >"$OUT/ptxas.txt"
note "ptxas: $(grep -c 'entry function' "$OUT/ptxas.txt") entries"

CRITERION_HOME=$CRIT timeout "$(limit 120)" "$B/bench-nested_sin" --bench >"$OUT/bench.log" 2>&1
note "bench: $(status $?)"

timeout "$(limit 60)" "$B/example-nested_sin_end_to_end" --json "$OUT/end_to_end.json" 2>&1
note "end to end: $(status $?)"

# PyTorch in the same call: writes $OUT/torch_peers.json, prints its lines.
timeout "$(limit 100)" python3 scripts/gpu/peers nested-sin 2>&1
note "torch: $(status $?)"

# The GPU tests (their names hold "gpu") under each tool; COALESCE_SANITIZER=1
# takes 2^12 accuracy inputs instead of 2^24 and skips the large lengths.
sanitize "$B/test-nested_sin"

# Instructions, issue slots, stall reasons and DRAM per kernel: --profile launches the copy
# kernel, the four sin_f32 of unfused (runfile.py labels them `launch 1` to `launch 4`),
# and each fused version once at 2^28. Clock control off: leave the GPU as found.
METRICS=dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,launch__grid_size,launch__occupancy_limit_registers,launch__registers_per_thread,sm__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active
# Stall reasons: warps stalled per issued instruction, by reason (the
# WarpStateStats section's metrics). If this ncu lacks one, the run repeats
# without them rather than lose the rest.
STALLS=$(printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' long_scoreboard wait \
    math_pipe_throttle not_selected selected short_scoreboard lg_throttle dispatch_stall no_instruction mio_throttle drain)
NCU=(ncu --clock-control none --kernel-name regex:'^(copy_f32|sin_f32|nested_sin_)' --csv --print-units base)
timeout "$(limit 60)" "${NCU[@]}" --metrics "$STALLS$METRICS" "$B/example-nested_sin_end_to_end" --profile >"$RUN/ncu.csv" 2>&1 \
    || timeout "$(limit 60)" "${NCU[@]}" --metrics "$METRICS" "$B/example-nested_sin_end_to_end" --profile >"$RUN/ncu.csv" 2>&1
note "ncu: $(status $?)"
runfile "bash scripts/gpu/nested_sin.sh" --criterion "$CRIT" --ptxas "$OUT/ptxas.txt"

echo
grep -E '^ACCURACY [a-z_]+:|^test result' "$OUT/tests.log" | cut -c1-160
grep -E 'thrpt|time:' -B1 "$OUT/bench.log" | grep -E '^nested_sin|time:|thrpt' | cut -c1-100
ls -l "$OUT"
exit 0
