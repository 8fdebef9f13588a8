# Sourced by the per-page GPU scripts (softmax.sh, nested_sin.sh, gemm.sh),
# from the repository root: $OUT made, the binaries that build.sh packed
# unpacked into $B, Python unbuffered (its lines interleave with ours); status
# lines, and the sanitizer pass over one test binary's GPU tests.

export OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
B=.gpu/bin
[[ -d $B || ! -f .gpu/bin.tgz ]] || tar -C .gpu -xzf .gpu/bin.tgz
export PYTHONUNBUFFERED=1

status() { [[ $1 == 0 ]] && echo ok || echo "FAILED (exit $1)"; }

# sanitize TEST_BINARY: compute-sanitizer memcheck, then racecheck, over the
# binary's GPU tests (names holding "gpu") at the odd shapes
# (COALESCE_SANITIZER=1 leaves out the large cases); appends each log to
# $OUT/sanitizer.log and notes its summary line.
sanitize() {
    : >"$OUT/sanitizer.log"
    for tool in memcheck racecheck; do
        COALESCE_SANITIZER=1 timeout "${SANITIZER_TIMEOUT:-60}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
            $([[ $tool == racecheck ]] && echo --racecheck-report all) \
            "$1" gpu --test-threads=1 >/tmp/sanitizer-$tool.log 2>&1
        rc=$?
        { echo "### $tool"; cat /tmp/sanitizer-$tool.log; } >>"$OUT/sanitizer.log"
        note "compute-sanitizer $tool: $(status $rc); $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/sanitizer-$tool.log | tail -1)"
    done
}
