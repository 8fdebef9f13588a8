#!/usr/bin/env bash
# Builds what the nested-sin device run needs into .gpu-nested_sin/ (git-ignored):
# the release test, bench and example binaries, this folder's run.sh and
# torch_nested_sin.py, and criterion_medians.py. Then, on the GPU machine:
#   run(command="cd .gpu-nested_sin && bash run.sh", carry=[".gpu-nested_sin"], timeout_s=240)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
source .cuda/env
here=docs/measurements/2026-11-22-h100-nested_sin
B=.gpu-nested_sin
rm -rf "$B" && mkdir -p "$B/bin"
pick() { # cargo JSON -> the executable of target `nested_sin` of kind $1
    python3 -c 'import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "nested_sin" and sys.argv[1] in m["target"]["kind"]:
        print(m["executable"])' "$1"
}
cp "$(cargo test --release --test nested_sin --no-run --message-format=json 2>/dev/null | pick test)" "$B/bin/test-nested_sin"
cp "$(cargo bench --bench nested_sin --no-run --message-format=json 2>/dev/null | pick bench)" "$B/bin/bench-nested_sin"
cargo build --release --example nested_sin_end_to_end
cp target/release/examples/nested_sin_end_to_end "$B/bin/example-nested_sin_end_to_end"
strip --strip-debug "$B"/bin/*
cp "$here/run.sh" "$here/torch_nested_sin.py" scripts/gpu/criterion_medians.py "$B/"
git rev-parse --short HEAD >"$B/commit"
du -sh "$B"
