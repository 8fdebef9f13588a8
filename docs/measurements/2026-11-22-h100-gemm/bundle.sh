#!/usr/bin/env bash
# How this run's bundle was made (on the CPU machine, from the repository root):
# release test and bench binaries of the GEMM op, stripped, plus run.sh and
# torch_gemm.py from this folder, into .gpu-gemm/ (git-ignored). Then, with
# the device tool: run(command="cd .gpu-gemm && bash run.sh", carry=[".gpu-gemm"]).
set -euo pipefail
source .cuda/env
D=.gpu-gemm; rm -rf "$D"; mkdir -p "$D/bin"
exe() { python3 -c '
import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"][0] in ("test", "bench"):
        print(m["target"]["kind"][0], m["target"]["name"], m["executable"])'; }
{ cargo test --release --test gemm --test ptx --no-run --message-format=json
  cargo bench --bench gemm --no-run --message-format=json; } 2>/dev/null | exe | while read -r kind name path; do
    cp "$path" "$D/bin/$kind-$name"; strip --strip-debug "$D/bin/$kind-$name"
done
cp docs/measurements/2026-11-22-h100-gemm/{run.sh,torch_gemm.py} "$D/"
cp target/release/build/coalesce-*/out/kernels.ptx "$D/" 2>/dev/null || true
git rev-parse --short HEAD >"$D/commit"
ls -la "$D/bin"
