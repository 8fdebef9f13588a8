#!/usr/bin/env bash
# Focused device run for the TF32 roof (branch h-roof).
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/out}
tar -C .gpu -xzf .gpu/bin.tgz
B=.gpu/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
for t in ptx registry runtime; do echo "### test-$t"; "$B/test-$t" 2>&1 | grep -E "tf32|FAILED|panicked|^test result"; done
echo "### memcheck"; COALESCE_SANITIZER=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 99 "$B/test-runtime" tf32_peak --test-threads=1 2>&1 | tail -6
echo "### cuBLAS via torch"; timeout 120 python3 - <<'PY' 2>&1 | tail -8
import json, os, torch
res = {}
for n in (4096, 8192):
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for _ in range(5): a @ b
        ms = []
        for _ in range(20):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); a @ b; e.record(); e.synchronize(); ms.append(s.elapsed_time(e))
        ms.sort(); m = ms[len(ms) // 2]
        res[f"torch_{'tf32' if tf32 else 's'}gemm_{n}_TFLOPs"] = 2 * n**3 / m / 1e9
print(torch.__version__, json.dumps(res))
json.dump(res, open(os.path.join(os.environ.get("OUT", "."), "torch_peers.json"), "w"))
PY
peers=(); [[ -f $OUT/torch_peers.json ]] && peers=(--peers "$OUT/torch_peers.json")
for i in 1 2; do echo "### report $i"; timeout 150 "$B/bin-coalesce" --ops gemm --reps 30 --out "$OUT/report$i" "${peers[@]}" 2>&1 | grep -v "^\s*$"; done
