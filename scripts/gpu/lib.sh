# shellcheck shell=bash
# Sourced by the GPU scripts (run.sh, softmax.sh, nested_sin.sh, gemm.sh),
# from the repository root: $OUT made, the binaries that build.sh packed
# unpacked into $B, Python unbuffered (its lines interleave with ours); status
# lines, each part's time limit within the call's, the sanitizer pass over
# one test binary's GPU tests, and the run file: each part's verdict goes
# into $RUN as a JSON line, and `runfile` writes $OUT/run.json from $RUN and
# $OUT (scripts/gpu/runfile.py).

export OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
B=${B:-.gpu/bin}
[[ -d $B || ! -f .gpu/bin.txz ]] || python3 -c 'import tarfile; tarfile.open(".gpu/bin.txz").extractall(".gpu")'
export PYTHONUNBUFFERED=1
RUN=${RUN:-/tmp/run}   # the run file's structured inputs (JSON lines, ncu's CSV)
rm -rf "$RUN" && mkdir -p "$RUN"

status() { [[ $1 == 0 ]] && echo ok || echo "FAILED (exit $1)"; }

# ONLY_ON=H200: stop at once (exit 3) where the GPU's name lacks it, so that
# a page's run that is given another card costs the call its start only
# (a call for nvidia-h200 may run on an H100, whose figures fill no page).
if [[ -n ${ONLY_ON:-} ]]; then
    gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1 | head -1)
    [[ $gpu_name == *"$ONLY_ON"* ]] || { echo "not an $ONLY_ON but '$gpu_name': nothing run"; exit 3; }
fi

# limit SECONDS: the part's time limit, SECONDS or what is left of the
# call's BUDGET (seconds, 590 by default: a device call runs 600) less 8
# for the run file and the summary (2 s on an H100 in 2026-12), whichever
# is less (at least 1): a part that hangs times out, and the run file is
# written in any case.
BUDGET=${BUDGET:-590}
limit() {
    local left=$((BUDGET - 8 - SECONDS))
    echo $(($1 < left ? $1 : (left > 1 ? left : 1)))
}

# sanitize_with TOOL TEST_BINARY [ARG...]: compute-sanitizer TOOL (racecheck
# reporting every hazard) over the binary's GPU tests (named *gpu*) at the
# odd shapes (COALESCE_SANITIZER=1 leaves out the large cases), one thread
# at a time, ARGs after the filter; its log goes to
# $OUT/sanitizer.log under a `### TOOL BINARY` line, its verdict to the run
# file, and its summary line to the notes. Time limit: SANITIZER_TIMEOUT
# (default 60 s) within the call's.
sanitize_with() {
    local tool=$1 t=$2 opts=() rc
    shift 2
    [[ $tool == racecheck ]] && opts=(--racecheck-report all)
    echo "### $tool $t" >>"$OUT/sanitizer.log"
    COALESCE_SANITIZER=1 timeout "$(limit "${SANITIZER_TIMEOUT:-60}")" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        ${opts[@]+"${opts[@]}"} "$t" gpu --test-threads=1 "$@" >/tmp/sanitizer-$tool.log 2>&1
    rc=$?
    cat /tmp/sanitizer-$tool.log >>"$OUT/sanitizer.log"
    verdict "$tool" "$t" "$rc" /tmp/sanitizer-$tool.log
    note "compute-sanitizer $tool $(basename "$t"): $(status $rc); $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/sanitizer-$tool.log | tail -1)"
}

# sanitize TEST_BINARY: memcheck, then racecheck (sanitize_with), over the
# binary's GPU tests, into a new $OUT/sanitizer.log.
sanitize() {
    : >"$OUT/sanitizer.log"
    for tool in memcheck racecheck; do
        sanitize_with "$tool" "$1"
    done
}

# verdict TOOL BINARY EXIT_CODE LOG: one sanitizer.jsonl line, the tool's
# error count from its summary line (an exit code other than 0 with no
# count reads as one error; racecheck's hazards too), and the counts of the
# tests it ran (libtest's summary in LOG, as `tests` reads it).
verdict() {
    python3 - "$@" >>"$RUN/sanitizer.jsonl" <<'PY'
import json, pathlib, re, sys
tool, binary, rc, log = sys.argv[1], pathlib.Path(sys.argv[2]).name, int(sys.argv[3]), pathlib.Path(sys.argv[4])
text = log.read_text(errors="replace")
summary = ([l for l in text.splitlines() if re.search("(ERROR|RACECHECK) SUMMARY", l)] or [""])[-1]
m, h = re.search(r"(\d+) errors?", summary), re.search(r"(\d+) hazards?", summary)
out = {"tool": tool, "binary": binary, "errors": int(m[1]) if m else int(rc != 0), "summary": summary.strip()}
if tool == "racecheck":
    out["hazards"] = int(h[1]) if h else out["errors"]
sys.path.insert(0, "scripts/gpu")
from runfile import libtest  # noqa: E402
print(json.dumps({**out, **libtest(text, missing_fails=False)}))
PY
}

# tests BINARY LOG: one tests.jsonl line, the counts of the binary's last
# libtest summary (`test result: ...`) in LOG; none found reads as a failure.
tests() {
    python3 - "$@" >>"$RUN/tests.jsonl" <<'PY'
import json, pathlib, sys
sys.path.insert(0, "scripts/gpu")
from runfile import libtest  # noqa: E402
binary, log = pathlib.Path(sys.argv[1]).name, pathlib.Path(sys.argv[2]).read_text(errors="replace")
print(json.dumps({"binary": binary, **libtest(log)}))
PY
}

# own_criterion NAME: this script's criterion folder, $CRIT, emptied: the
# medians of this call only.
own_criterion() {
    CRIT=/tmp/criterion-$1
    rm -rf "$CRIT"
}

# note WHAT: a part's progress line, seconds into the call first.
note() { echo "== [${SECONDS}s] $*"; }

# The machine, six lines at the head of a script's log (what `machine`
# reads): the build's commit, the date, nvidia-smi's header and row, the
# CPU, the toolkit's build.
machine_head() {
    echo "commit $(cat .gpu/commit 2>/dev/null)"
    date
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.current.sm,clocks.max.sm,clocks.current.memory,power.limit --format=csv
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc)"
    nvcc --version | tail -1
}

# machine HEAD: a `VALUE machine` line of the run file (`started`,
# `nvidia_smi` by its CSV header, `cpu`, `nvcc`) from HEAD's first six lines:
# the commit, `date`, nvidia-smi's --format=csv header and row, `cpu: ...`
# and the last line of `nvcc --version` (scripts/gpu/nested_sin.sh).
machine() {
    python3 - "$1" <<'PY'
import json, sys
commit, started, head, row, cpu, nvcc = open(sys.argv[1]).read().splitlines()[:6]
print("VALUE machine", json.dumps({"started": started, "nvidia_smi": dict(zip(head.split(", "), row.split(", "))),
                                    "cpu": cpu.removeprefix("cpu:").strip(), "nvcc": nvcc}))
PY
}

# runfile MADE_BY [runfile.py options]: $OUT/run.json from $RUN and $OUT.
runfile() {
    local made_by=$1
    shift
    python3 scripts/gpu/runfile.py --to "$OUT/run.json" --made-by "$made_by" "$@" "$RUN" "$OUT"
}
