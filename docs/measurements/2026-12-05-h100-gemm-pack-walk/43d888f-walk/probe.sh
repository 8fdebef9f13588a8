#!/usr/bin/env bash
# One call at the commit in .gpu/commit (step 16 walks tiles): the GEMM
# tests, criterion's step 16 (the base build's bench-gemm, .gpu/base-bench-gemm,
# at 532d04d, alternating with this build's, two rounds each), memcheck over
# the GEMM GPU tests, racecheck over the walking, split-K and sgemm ones.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
source scripts/gpu/lib.sh
BUDGET=330
machine_head >"$OUT/machine.txt" 2>&1; head -4 "$OUT/machine.txt"
timeout "$(limit 90)" "$B/test-gemm" >"$OUT/tests.log" 2>&1
note "tests: $(status $?); $(grep '^test result' "$OUT/tests.log")"
pat='^(gemm_(4096|8192)/wgmma_split_a_3xtf32|gemm_split_a_3xtf32_shapes/(8192x8192x256|1024x1024x1024|4096x4096x4096|2048x2048x8192))$'
for round in 1 2; do
  for which in base new; do
    bin=$B/bench-gemm; [[ $which == base ]] && bin=.gpu/base-bench-gemm
    CRITERION_HOME=/tmp/crit-$which-$round timeout "$(limit 60)" "$bin" --bench "$pat" >"$OUT/bench-$which-$round.log" 2>&1
    note "bench $which $round: $(status $?)"
  done
done
for f in "$OUT"/bench-*.log; do echo "== $f"; grep -E "^gemm|time:" "$f" | paste - - | awk '{print $1, $5, $6}'; done
: >"$OUT/sanitizer.log"
SANITIZER_TIMEOUT=40 sanitize_with memcheck "$B/test-gemm"
echo "### racecheck (walk, split_k, sgemm_runs)" >>"$OUT/sanitizer.log"
COALESCE_SANITIZER=1 timeout "$(limit 90)" compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 99 \
  "$B/test-gemm" walking_blocks_match_the_reference_on_the_gpu split_k_products_match_the_reference_on_the_gpu \
  sgemm_runs_the_version_its_module_picks_on_the_gpu --test-threads=1 >>"$OUT/sanitizer.log" 2>&1
note "racecheck: $(status $?); $(grep -E 'RACECHECK SUMMARY|test result' "$OUT/sanitizer.log" | tail -2 | paste -sd' ')"
ls -l "$OUT"
