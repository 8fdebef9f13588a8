#!/usr/bin/env bash
# Same-run timings of two builds of the report: the commit before a change
# that moved kernels' PTX (BASE, a stripped `coalesce` report binary built
# from that commit, default .gpu/base-coalesce) and this one (.gpu), in
# alternating passes, so that a change to GPU code is shown not to slow any
# kernel down. scripts/gpu/ab.py compares the medians.
#
#   here:  git worktree add /tmp/base <commit>; (cd /tmp/base && cargo build --release --bin coalesce)
#          strip -o .gpu/base-coalesce /tmp/base/target/release/coalesce   (after scripts/gpu/build.sh)
#   there: run(command="bash scripts/gpu/ab.sh", carry=[".gpu"])
#
# Writes $OUT/ab/{base,new}-{1,2}/report.json and $OUT/ab.txt (ab.py's table).
# OPS (default gemm,softmax,nested_sin), PASSES (default 2), REPS (default 30).
set -uo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh
BASE=${BASE:-.gpu/base-coalesce}
mkdir -p "$OUT/ab"
for pass in $(seq 1 "${PASSES:-2}"); do
    for which in base new; do
        bin=$B/bin-coalesce
        [[ $which == base ]] && bin=$BASE
        timeout 240 "$bin" --ops "${OPS:-gemm,softmax,nested_sin}" --shapes 8192 --reps "${REPS:-30}" \
            --out "$OUT/ab/$which-$pass" >"$OUT/ab/$which-$pass.txt" 2>&1 || echo "$which pass $pass: exit $?"
    done
done
python3 scripts/gpu/ab.py "$OUT/ab" | tee "$OUT/ab.txt"
