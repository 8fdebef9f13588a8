#!/usr/bin/env bash
# One device call for the scaled step 16: tests, sanitizers, ptxas, accuracy
# classes beside cuBLAS, and a same-run A/B of the timings (base = 589e8ef).
set -uo pipefail
source scripts/gpu/lib.sh
[[ -d .gpu/bin ]] || tar -C .gpu -xzf .gpu/bin.tgz
gunzip -c .gpu/base-tc.gz > /tmp/base-tc && chmod +x /tmp/base-tc
note() { echo "== [${SECONDS}s] $*"; }
{ echo "commit $(cat .gpu/commit)"; nvidia-smi --query-gpu=name,driver_version --format=csv; } > "$OUT/machine.txt"
module=.gpu/sm_90a.ptx
ptxas -arch=sm_90a -v "$module" -o /dev/null 2>&1 | grep -A3 "entry function 'gemm_\(maxima\|pack\|wgmma_split_a_3xtf32\|wgmma_direct_3xtf32\)'" > "$OUT/ptxas.txt"
timeout 200 "$B/test-gemm" > "$OUT/tests.log" 2>&1; note "tests: $(status $?); $(grep '^test result' "$OUT/tests.log")"
mkdir -p /tmp/sp
timeout 150 "$B/example-gemm_specials" /tmp/sp > "$OUT/specials.txt" 2>&1; note "specials: $(status $?)"
timeout 120 python3 .gpu/peers gemm-specials /tmp/sp >> "$OUT/specials.txt" 2>&1; note "cublas specials: $(status $?)"
rm -rf /tmp/sp
for pass in 1 2; do
  for which in base new; do
    bin=$B/example-gemm_tensor_cores; [[ $which == base ]] && bin=/tmp/base-tc
    echo "### $which $pass" >> "$OUT/ab.log"
    timeout 120 "$bin" 4096,8192,16384 20 "" wgmma_split_a_3xtf32,wgmma_direct >> "$OUT/ab.log" 2>&1
  done
done
note "ab: done"
timeout 120 python3 .gpu/peers gemm-tc --out /tmp >> "$OUT/ab.log" 2>&1; note "cublas tc: $(status $?)"
SANITIZER_TIMEOUT=150 sanitize "$B/test-gemm"
grep -E "TFLOP|cuBLAS" "$OUT/ab.log" | tail -40
cat "$OUT/specials.txt" | cut -c1-200
