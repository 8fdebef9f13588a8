#!/usr/bin/env bash
# Builds the softmax test and bench binaries here (release, stripped) and
# bundles them with run.sh, torch_softmax.py and criterion_medians.py into
# BUNDLE (default: .gpu-softmax/ at the repository root), which the device
# call carries:
#
#   docs/measurements/2026-11-22-h100-softmax/build.sh [BUNDLE]
#   run(command="cd .gpu-softmax && bash run.sh", carry=[".gpu-softmax"])
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
bundle=${1:-$root/.gpu-softmax}
cd "$root"
# shellcheck disable=SC1091
source .cuda/env
exe() { # cargo's JSON messages -> the executable of target $1
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$1" | tail -1
}
test_bin=$(cargo test --release --test softmax --no-run --message-format=json 2>/dev/null | exe softmax)
bench_bin=$(cargo bench --bench softmax --no-run --message-format=json 2>/dev/null | exe softmax)
rm -rf "$bundle" && mkdir -p "$bundle/bin"
cp "$test_bin" "$bundle/bin/test-softmax"
cp "$bench_bin" "$bundle/bin/bench-softmax"
strip --strip-debug "$bundle"/bin/*
cp "$here/run.sh" "$here/torch_softmax.py" scripts/gpu/criterion_medians.py "$bundle/"
git rev-parse --short HEAD >"$bundle/commit"
git status --porcelain --untracked-files=no | grep -q . && echo "dirty" >>"$bundle/commit"
cp target/release/build/coalesce-*/out/kernels.ptx "$bundle/" 2>/dev/null || true
du -sh "$bundle"
ls -la "$bundle" "$bundle/bin"
