#!/usr/bin/env bash
# Build here, run there. Step 1 of 2, on the CPU machine (which has Rust):
# builds the report binary, every test binary and every bench binary in
# release mode, and consumer/ (a dependent, on stable Rust), strips them,
# and copies them with the PTX and the PyTorch peers (scripts/gpu/peers) into
# .gpu/ (git-ignored), which the device call carries.
#
#   scripts/gpu/build.sh          # then, on the GPU machine:
#   bash scripts/gpu/run.sh       # with carry [".gpu"]; logs land in $OUT
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ -f .cuda/env ]] || bash .ci/setup
# shellcheck disable=SC1091
source .cuda/env

rm -rf .gpu && mkdir -p .gpu/bin
executables() { # cargo's JSON messages -> paths of the built executables
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        t = m["target"]; kind = t["kind"][0]
        if kind not in ("test", "bench") and m["profile"]["test"]:
            kind = "test"  # unit tests of a lib/bin: a test harness too
        print(kind, t["name"] + ("-unit" if kind == "test" and t["kind"][0] != "test" else ""), m["executable"])'
}
{
    cargo build --release --bins --message-format=json
    cargo test --release --workspace --no-run --message-format=json
    cargo bench --no-run --message-format=json
    cargo build --release --examples --message-format=json
    # consumer/: its own workspace and toolchain (stable), its own target dir.
    (cd consumer && CARGO_TARGET_DIR=$PWD/target cargo build --release --message-format=json)
} 2>/dev/null | executables | sort -u | while read -r kind name exe; do
    cp "$exe" ".gpu/bin/$kind-$name"
    strip --strip-all ".gpu/bin/$kind-$name"
    echo "$kind $name" >>.gpu/manifest
done
cp -r scripts/gpu/peers .gpu/ && rm -rf .gpu/peers/__pycache__
# The PTX the binaries embed: the builds above refresh ptx/ when kernels/
# changed. kernels.ptx is the sm_90 module, by the name docs/ uses.
cp ptx/*.ptx .gpu/ && cp ptx/sm_90.ptx .gpu/kernels.ptx
git describe --always --dirty --abbrev=7 >.gpu/commit 2>/dev/null || true   # -dirty: built with uncommitted changes
# The binaries together pass the 64 MiB a device call may carry, and each
# embeds the same PTX bundle (about 8 MB): xz's 64 MiB window (-9) stores it
# once, about 7 MB in all where gzip's 32 KiB window keeps every copy (52 MB).
# lib.sh unpacks them (Python's tarfile: the GPU machine need not have xz).
rm -f .gpu/bin.tgz && tar -C .gpu -cf - bin | xz -9 -T0 >.gpu/bin.txz && rm -rf .gpu/bin
du -sh .gpu
cat .gpu/manifest
