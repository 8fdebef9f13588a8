#!/usr/bin/env bash
# Fails when ptx/ (the PTX that coalesce ships, with its stamp) is not what
# kernels/src builds to: rebuilds it with COALESCE_PTX=build, which refreshes
# ptx/ in place, and compares with what was there before.
#
# CI runs this first: any other build of the tree, in the default mode,
# refreshes a stale ptx/ too, and the comparison would no longer see it.
# Needs the kernels' toolchain and libdevice (.ci/setup).
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(mktemp -d)
trap 'rm -rf -- "$before"' EXIT
if [[ -d ptx ]]; then cp -pr ptx/. "$before/"; fi
COALESCE_PTX=build cargo build -p coalesce
if ! diff -r -q "$before" ptx; then
    echo "error: ptx/ is stale: it differs from the PTX that kernels/src builds to (above)." >&2
    echo "       The build has just refreshed it: commit ptx/ with the kernel change." >&2
    exit 1
fi
echo "ptx/ matches kernels/src: $(sed -n 's/^sha256 //p' ptx/SOURCES.sha256)"
