#!/usr/bin/env bash
# Build here, run there. Step 2 of 2, on the GPU machine (no Rust, no network):
# runs every test binary (GPU tests included), compute-sanitizer memcheck and
# racecheck over every kernel, ncu counters of the transpose kernels, the
# main report, and PyTorch's figures, all in one call. Logs go to $OUT
# (at most 8 files come back), and the run file, $OUT/run.json, holds every
# figure (scripts/gpu/runfile.py); the summary is printed last.
#
#   device run: scripts/gpu/build.sh here, then
#   run(command="bash scripts/gpu/run.sh", carry=[".gpu"])
# SKIP (comma-separated: tests, stress, sanitizer, report, consumer, examples, bench, ncu, torch)
# leaves parts out of a run; EXAMPLES=04_launch_overhead runs one example,
# TESTS=runtime one test binary (tests and sanitizer), BENCHES=gemm one bench
# binary and BENCH_FILTER=gemm_shapes one group of it, REPORT_OPS=transpose
# the report's ops (all of them by default). Every part has a time limit
# within the call's (scripts/gpu/lib.sh's `limit`), so the run file is
# written in any case; all the parts at once take more than one call.
#
# docs/transpose.md's run, in one device call. Next session, with an H200 lent:
#   1. here: bash scripts/gpu/build.sh   (commit first: a -dirty build must not fill a page)
#   2. run(command="ONLY_ON=H200 SKIP=tests,stress,sanitizer,consumer,examples BENCHES=transpose REPORT_OPS=transpose bash scripts/gpu/run.sh",
#          carry=[".gpu"], timeout_s=600)   (nvidia-h200, alone in its call: about 6 minutes: PyTorch's peers 2.5, the report
#          at four shapes 1, criterion's 42 transposes 2, ncu 0.5)
#   3. here: mkdir docs/measurements/<date>-h200-transpose; copy $OUT's run.json into it (files_at/run.json)
#      and write its README.md (what ran: this command at the commit in run.json; anything odd);
#      then python3 scripts/docs/pages.py --dry docs/measurements/<date>-h200-transpose/run.json transpose
#      must list nothing missing
#   4. docs/templates/transpose.md's front matter: `H200: <date>-h200-transpose`; python3 scripts/docs/pages.py transpose
#      (a claim the new figures contradict names itself: fix the prose, not the figure)
#   5. git rm -r docs/measurements/2026-11-28-h200-transpose-cols, and mend what names it (python3
#      scripts/docs/runs.py lists it: name it `... at commit <sha>`); bash scripts/docs/check.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh   # $OUT, $B, $RUN, and the run file's verdicts
CRIT=/tmp/criterion        # criterion's files (CRITERION_HOME), this call's alone, in extras.tgz
rm -rf "$CRIT" /tmp/extras && mkdir -p /tmp/extras
summary=()
note() { summary+=("$*"); echo "== $*"; }
want() { [[ ",${SKIP:-}," != *",$1,"* ]]; }

{
    echo "commit $(cat .gpu/commit 2>/dev/null)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
    nvcc --version | tail -2
} >"$OUT/tests.log" 2>&1
cat "$OUT/tests.log"

# 1. Tests: every test binary, GPU tests included (they find the GPU here),
#    with cargo test's default of parallel test threads.
rc_all=0
want tests && for t in "$B"/test-${TESTS:-*}; do
    echo "### $t" >>"$OUT/tests.log"
    timeout "$(limit 300)" "$t" >/tmp/test.log 2>&1
    rc=$?; rc_all=$((rc_all | rc))
    cat /tmp/test.log >>"$OUT/tests.log"
    tests "$t" /tmp/test.log
    grep -E '^test result' "$OUT/tests.log" | tail -1 | sed "s#^#$(basename "$t"): #"
done
want tests && note "tests: $(status $rc_all); $(grep -c '^test .* ok$' "$OUT/tests.log") ok, $(grep -c '^test .* FAILED$' "$OUT/tests.log") failed"

# 1b. Concurrency: the nested_sin test binary STRESS_RUNS times (default 50)
#     with 16 test threads, five processes at a time, so tests race each
#     other inside a process and processes race on the GPU. The 8-thread
#     stress test (tests/threads.rs) runs in step 1 and under the sanitizers.
if want stress && [[ -x $B/test-nested_sin ]]; then
    runs=${STRESS_RUNS:-50}
    mkdir -p /tmp/stress
    for ((i = 1; i <= runs; i++)); do
        ( "$B/test-nested_sin" --test-threads=16 >"/tmp/stress/$i.log" 2>&1; echo $? >"/tmp/stress/$i.rc" ) &
        (( i % 5 == 0 )) && wait
    done
    wait
    passed=$(grep -lx 0 /tmp/stress/*.rc | wc -l)
    for f in /tmp/stress/*.rc; do
        [[ $(cat "$f") == 0 ]] || { echo "### failed run ${f%.rc}"; cat "${f%.rc}.log"; } >>"$OUT/tests.log"
    done
    note "nested_sin --test-threads=16: $passed of $runs runs passed"
fi
if want stress && [[ -x $B/test-threads ]]; then
    start=$SECONDS
    "$B/test-threads" gpu_every_op --nocapture >>"$OUT/tests.log" 2>&1
    rc=$?
    note "stress test alone: $(status $rc) in $((SECONDS - start)) s; $(grep -E '^[0-9]+ threads x' "$OUT/tests.log" | tail -1)"
fi

# 2. compute-sanitizer over every kernel, at the odd shapes (large cases
#    and deliberate driver errors off). GPU tests are named *gpu*.
want sanitizer && for tool in memcheck racecheck; do
    for t in "$B"/test-${TESTS:-*}; do
        "$t" --list 2>/dev/null | grep -q 'gpu' || continue
        # racecheck loses track of launches from several host threads at
        # once and then hangs, with any kernel (CUDA 13.0, measured in
        # docs/measurements/2026-11-25-h100-racecheck-threads-probe at commit f58f145), so it
        # skips the 8-thread stress test, which memcheck runs with 200
        # iterations a thread; every kernel it launches is racechecked by
        # its own op's tests.
        skip=()
        [[ $tool == racecheck ]] && skip=(--skip gpu_every_op_from_eight_threads_matches_one_thread)
        COALESCE_STRESS_ITERATIONS=200 SANITIZER_TIMEOUT=${SANITIZER_TIMEOUT:-300} \
            sanitize_with "$tool" "$t" ${skip[@]+"${skip[@]}"}
    done
done

# 3. The main report (the README's first command), with PyTorch's figures
#    from this same call merged in (torch first, so --peers can use them).
if want torch && [[ -f .gpu/peers/__main__.py ]]; then
    PYTHONUNBUFFERED=1 OUT="$RUN" timeout "$(limit 300)" python3 .gpu/peers report >"$OUT/torch.txt" 2>&1
    note "torch peers: $(status $?)"
fi
if want report && [[ -x $B/bin-coalesce ]]; then
    peers=(); [[ -f $RUN/torch_peers.json ]] && peers=(--peers "$RUN/torch_peers.json")
    timeout "$(limit 400)" "$B/bin-coalesce" --ops "${REPORT_OPS:-transpose,nested_sin,softmax,gemm}" \
        --shapes 8192,16384,4096,8192x2048 --reps 50 --out "$OUT/report" ${peers[@]+"${peers[@]}"} 2>&1 | tee "$OUT/report.txt"
    note "report: $(status "${PIPESTATUS[0]}")"
    [[ -f $OUT/torch.txt ]] && { echo -e "\n### PyTorch (scripts/gpu/peers report), same call"; cat "$OUT/torch.txt"; } >>"$OUT/report.txt"
    rm -f "$OUT/torch.txt"
fi

# 3a. consumer/, a dependent built on stable Rust: vec4 on the GPU, checked
#     exactly against the CPU.
if want consumer && [[ -x $B/bin-coalesce-consumer ]]; then
    echo -e "\n### consumer (bin-coalesce-consumer)" >>"$OUT/report.txt"
    timeout "$(limit 300)" "$B/bin-coalesce-consumer" >>"$OUT/report.txt" 2>&1
    note "consumer: $(status $?)"
fi

# 3b. The lessons (examples), appended to the report.
want examples && for e in "$B"/example-${EXAMPLES:-*}; do
    [[ -x $e ]] || continue
    echo -e "\n### $(basename "$e")" >>"$OUT/report.txt"
    timeout "$(limit 300)" "$e" >>"$OUT/report.txt" 2>&1
    rc=$? # before any other substitution: $(basename ..) would reset $?
    note "$(basename "$e"): $(status $rc)"
    # PyTorch's launch cost beside ours, in the same call.
    [[ $e == *04_launch_overhead ]] && python3 scripts/gpu/peers launch >>"$OUT/report.txt" 2>&1
done

# 3c. Criterion benches on GPU time (CUDA events); criterion's files in /tmp.
want bench && for b in "$B"/bench-${BENCHES:-*}; do
    [[ -x $b ]] || continue
    echo "### $b" >>"$OUT/bench.log"
    CRITERION_HOME=$CRIT timeout "$(limit 400)" "$b" --bench ${BENCH_FILTER:+"$BENCH_FILTER"} >>"$OUT/bench.log" 2>&1
    rc=$?
    note "bench $(basename "$b"): $(status $rc)"
    # PyTorch at the same awkward GEMM shapes, in the same call.
    log=$OUT/bench.log
    [[ $b == *bench-gemm ]] && OUT=$RUN python3 scripts/gpu/peers gemm-shapes "$log" >/tmp/torch_shapes.txt 2>&1 && cat /tmp/torch_shapes.txt >>"$log"
done

# 4. ncu counters of the transpose kernels: shared-memory bank conflicts and
#    global sectors per request (clock control off: leave the GPU as found).
#    Each kernel runs several times (validated, then timed: the report's
#    fewest reps, 5); runfile.py labels them `launch <n>`, and the page
#    reads the first.
if want ncu && command -v ncu >/dev/null && [[ -x $B/bin-coalesce ]]; then
    timeout "$(limit 120)" ncu --clock-control none --kernel-name regex:'transpose|copy_f32' \
        --metrics smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,dram__bytes.sum \
        --csv --print-units base \
        "$B/bin-coalesce" --ops transpose --shapes 8192 --reps 5 --warmup 0 --warmup-ms 0 --out /tmp/ncu-report >"$RUN/ncu.csv" 2>&1
    note "ncu: $(status $?)"
fi

# 5. The run file: every figure above, by name ($OUT/run.json).
ptxas -arch=sm_90a -v .gpu/sm_90a.ptx -o /dev/null >"$RUN/ptxas.txt" 2>&1
runfile "bash scripts/gpu/run.sh" --criterion "$CRIT" --ptxas "$RUN/ptxas.txt"

echo
echo "================ summary ================"
printf '%s\n' "${summary[@]}"
[[ -f $OUT/report.txt ]] && cat "$OUT/report.txt"
grep -E 'thrpt' -B2 "$OUT/bench.log" 2>/dev/null | grep -E '^[a-z]|thrpt' | cut -c1-100
[[ -d $CRIT ]] && mv "$CRIT" /tmp/extras/
tar -czf "$OUT/extras.tgz" -C /tmp extras   # criterion's files
exit 0
