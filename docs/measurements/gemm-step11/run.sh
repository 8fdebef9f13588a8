#!/usr/bin/env bash
# The tensor-core GEMM device call (docs/gemm.md, steps 9-11), in two halves:
#
#   bash scripts/gpu/tensor_cores.sh pack DIR   # here: build the release gemm test binary and
#                                               # examples/gemm_tensor_cores, strip them, pack them with
#                                               # ptx/sm_90a.ptx into DIR/bin.tgz, copy this script and
#                                               # torch_gemm_tc.py into DIR
#   bash DIR/tensor_cores.sh                    # on the GPU machine (carry DIR): logs land in $OUT
#
# The device half writes env.log (GPU, ptxas -v and SASS counts of the sm_90a GEMM kernels),
# bench.log, torch.log and torch_gemm_tc.json (cuBLAS in the same call, errors against f64),
# tests.log, sanitizer.log (memcheck and racecheck over the GPU tests at small shapes) and
# ncu_<step>.log. SKIP_SAN=1, SKIP_NCU=1, STEPS=, NCU_STEPS=, TESTS=, REPS= trim it.
set -uo pipefail
cd "$(dirname "$0")"

if [[ ${1:-} == pack ]]; then
    dir=$(realpath -m "${2:?usage: tensor_cores.sh pack DIR}")
    cd ../..
    # shellcheck disable=SC1091
    source .cuda/env
    mkdir -p "$dir" /tmp/tc-pack && rm -rf /tmp/tc-pack/*
    exe() { python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable"): print(m["executable"])'; }
    cp "$(cargo test --release -p coalesce --test gemm --no-run --message-format=json 2>/dev/null | exe | tail -1)" /tmp/tc-pack/test-gemm
    cp "$(cargo build --release --example gemm_tensor_cores --message-format=json 2>/dev/null | exe | tail -1)" /tmp/tc-pack/gemm_tensor_cores
    strip --strip-all /tmp/tc-pack/test-gemm /tmp/tc-pack/gemm_tensor_cores
    cp ptx/sm_90a.ptx /tmp/tc-pack/
    tar -C /tmp/tc-pack -czf "$dir/bin.tgz" .
    cp scripts/gpu/tensor_cores.sh scripts/gpu/torch_gemm_tc.py "$dir/"
    git rev-parse --short HEAD >"$dir/commit"
    ls -la "$dir"
    exit 0
fi

OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/tc /tmp/dump
tar -C /tmp/tc -xzf bin.tgz
cp torch_gemm_tc.py /tmp/tc/
cp commit "$OUT/" 2>/dev/null
cd /tmp/tc
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; nvcc --version | tail -1; } >"$OUT/env.log" 2>&1
cat "$OUT/env.log"
ptxas -arch=sm_90a -v sm_90a.ptx -o /tmp/k.cubin 2>&1 | grep -A3 "gemm_wgmma\|gemm_tf32'" | grep -v "Compile time" >>"$OUT/env.log"
for f in $(cuobjdump -sass /tmp/k.cubin 2>/dev/null | grep -oE "Function : gemm_wgmma\w*" | cut -d' ' -f3); do
    echo "SASS $f:" >>"$OUT/env.log"
    cuobjdump -sass /tmp/k.cubin 2>/dev/null | awk -v f="$f" '$0 ~ "Function : "f"$"{p=1;next} p&&/Function : /{p=0} p' \
        | grep -oE "HGMMA[.A-Z0-9x]*|WARPGROUP[.A-Z]*|STS[.0-9A-Z]*|LDG[.A-Z0-9]*|BAR[.A-Z]*" | sort | uniq -c >>"$OUT/env.log"
done
echo "== bench"; timeout 120 ./gemm_tensor_cores 4096,8192 "${REPS:-30}" /tmp/dump "${STEPS:-double_buffered,tf32,wgmma,wgmma_3xtf32,wgmma_promoted}" 2>&1 | tee "$OUT/bench.log"
echo "== torch"; PYTHONUNBUFFERED=1 timeout 120 python3 torch_gemm_tc.py /tmp/dump 2>&1 | tee "$OUT/torch.log"
rm -rf /tmp/dump
echo "== tests"; timeout 150 ./test-gemm "${TESTS:-gpu}" --test-threads=8 >"$OUT/tests.log" 2>&1; echo "tests rc $?"
grep -E "^test |test result|gpu wgmma|wgmma on" "$OUT/tests.log" | tail -40
if [[ -z ${SKIP_SAN:-} ]]; then
    : >"$OUT/sanitizer.log"
    for tool in memcheck racecheck; do
        echo "== $tool"
        COALESCE_SANITIZER=1 timeout 100 compute-sanitizer --tool "$tool" --error-exitcode 99 \
            $([[ $tool == racecheck ]] && echo --racecheck-report all) ./test-gemm gpu --test-threads=1 >>"$OUT/sanitizer.log" 2>&1
        echo "$tool rc $?" | tee -a "$OUT/sanitizer.log"
    done
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|test result" "$OUT/sanitizer.log" | sort | uniq -c | head
fi
if [[ -z ${SKIP_NCU:-} ]]; then
    for k in ${NCU_STEPS:-wgmma wgmma_3xtf32 wgmma_promoted}; do
        echo "== ncu $k"; timeout 60 ncu --kernel-name regex:gemm_wgmma --launch-skip 1 --launch-count 1 --section SpeedOfLight --section WarpStateStats \
            --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
            ./gemm_tensor_cores 4096 1 "" "$k" >"$OUT/ncu_$k.log" 2>&1; echo "ncu rc $?"
        grep -E "gmma|bank|wavefronts|Throughput|Stall|Warp Cycles|Duration|Issued" "$OUT/ncu_$k.log" | head -24
    done
fi
