# Sourced by the GPU scripts (run.sh, softmax.sh, nested_sin.sh, gemm.sh),
# from the repository root: $OUT made, the binaries that build.sh packed
# unpacked into $B, Python unbuffered (its lines interleave with ours); status
# lines, the sanitizer pass over one test binary's GPU tests, and the run
# file: each part's verdict goes into $RUN as a JSON line, and `runfile`
# writes $OUT/run.json from $RUN and $OUT (scripts/gpu/runfile.py).

export OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
B=.gpu/bin
[[ -d $B || ! -f .gpu/bin.tgz ]] || tar -C .gpu -xzf .gpu/bin.tgz
export PYTHONUNBUFFERED=1
RUN=/tmp/run   # the run file's structured inputs (JSON lines, ncu's CSV)
rm -rf "$RUN" && mkdir -p "$RUN"

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
        verdict "$tool" "$1" "$rc" /tmp/sanitizer-$tool.log
        note "compute-sanitizer $tool: $(status $rc); $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/sanitizer-$tool.log | tail -1)"
    done
}

# verdict TOOL BINARY EXIT_CODE LOG: one sanitizer.jsonl line, the tool's
# error count from its summary line (an exit code other than 0 with no
# count reads as one error).
verdict() {
    python3 - "$@" >>"$RUN/sanitizer.jsonl" <<'PY'
import json, pathlib, re, sys
tool, binary, rc, log = sys.argv[1], pathlib.Path(sys.argv[2]).name, int(sys.argv[3]), pathlib.Path(sys.argv[4])
summary = ([l for l in log.read_text(errors="replace").splitlines() if re.search("(ERROR|RACECHECK) SUMMARY", l)] or [""])[-1]
m = re.search(r"(\d+) errors?", summary)
print(json.dumps({"tool": tool, "binary": binary, "errors": int(m[1]) if m else int(rc != 0), "summary": summary.strip()}))
PY
}

# tests BINARY LOG: one tests.jsonl line, the counts of the binary's last
# libtest summary (`test result: ...`) in LOG; none found reads as a failure.
tests() {
    python3 - "$@" >>"$RUN/tests.jsonl" <<'PY'
import json, pathlib, re, sys
binary, log = pathlib.Path(sys.argv[1]).name, pathlib.Path(sys.argv[2]).read_text(errors="replace")
found = re.findall(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored; \d+ measured; (\d+) filtered out; "
                   r"finished in ([\d.]+)s", log)
passed, failed, ignored, filtered, seconds = found[-1] if found else (0, 1, 0, 0, 0)
print(json.dumps({"binary": binary, "passed": int(passed), "failed": int(failed), "ignored": int(ignored),
                  "filtered_out": int(filtered), "seconds": float(seconds)}))
PY
}

# runfile MADE_BY [runfile.py options]: $OUT/run.json from $RUN and $OUT.
runfile() {
    local made_by=$1
    shift
    python3 scripts/gpu/runfile.py --to "$OUT/run.json" --made-by "$made_by" "$@" "$RUN" "$OUT"
}
