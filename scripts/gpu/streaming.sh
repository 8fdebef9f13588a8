#!/usr/bin/env bash
# Issue 24's figures for the streaming kernels in one device call per GPU:
# scripts/gpu/nested_sin.sh (its eight files: tests with the ACCURACY lines
# of every nested sine, ptxas -v, criterion, the end-to-end table, PyTorch
# with torch.compile, the sanitizers, ncu with stall reasons), then the
# report's roofs (cuMemcpyDtoD, the FMA probe, the specified DRAM bandwidth),
# copy kernel and transposes at 8192^2 and 16384^2 (2^28 floats) and every
# nested sine at 2^28, with PyTorch's figures of the same call merged in.
# Everything is packed into $OUT/run.tgz (one file back; unpack it into
# docs/measurements/<date>-<gpu>-nested_sin-poly).
#
#   scripts/gpu/build.sh        # here; then copy .gpu and scripts into a
#                               # carried folder and, there:
#   run(command="cd <folder> && bash scripts/gpu/streaming.sh", carry=[<folder>])
set -uo pipefail
cd "$(dirname "$0")/../.."
FINAL=${OUT:-$PWD/gpu-out}
RUN=/tmp/streaming-run
rm -rf "$RUN" && mkdir -p "$RUN"
OUT=$RUN bash scripts/gpu/nested_sin.sh
echo "== report"
timeout 240 .gpu/bin/bin-coalesce --ops transpose,nested_sin --shapes 8192,16384 --reps 50 \
    --peers "$RUN/torch_peers.json" --out "$RUN/report" >"$RUN/report.txt" 2>&1
echo "report: exit $?"
cat "$RUN/report.txt"
mkdir -p "$FINAL"
tar -czf "$FINAL/run.tgz" -C "$RUN" .
ls -l "$FINAL"
