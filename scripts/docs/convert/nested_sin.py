#!/usr/bin/env python3
"""One-off: writes the run files (docs/contributing.md, "Evidence: run files
and pages") of docs/nested_sin.md from the logs in its two run folders, so
that docs/templates/nested_sin.md reads figures, not logs.

    python3 scripts/docs/convert/nested_sin.py

- docs/measurements/2026-11-28-h200-nested_sin-bounds: scripts/gpu/streaming.sh's
  device call (scripts/gpu/nested_sin.sh's eight files, report.txt and
  report/report.json), with bounds.txt and walk.txt, the A/Bs of the report's
  rows run before it in the same call (its README says how);
- docs/measurements/2026-11-28-cpu-poly-bounds: the CPU's output of the ignored
  exhaustive test of `poly`'s bound (no GPU): a run file whose `gpu` says so.

It stores what was measured, as measured: medians in ms with the bytes they
moved, ncu's metrics per launch in base units (times in ns, bytes in bytes),
ptxas's registers, stack and spills, the sanitizer's verdicts, the test
binaries' counts, and the figures the tests and the example printed under
`values`. Nothing derived (rates, shares) and not the emulator's counters."""
import json, pathlib, re

ROOT = pathlib.Path(__file__).resolve().parents[3]
RUNS = ROOT / "docs" / "measurements"
H200, CPU = RUNS / "2026-11-28-h200-nested_sin-bounds", RUNS / "2026-11-28-cpu-poly-bounds"
N = 1 << 28


def timing(source, op, kernel, shape, ms, **known):
    """A run file's timing: the median `ms` and the fields that are known."""
    return {"source": source, "op": op, "kernel": kernel, "shape": shape, "statistic": "median", "ms": ms,
            **{k: v for k, v in known.items() if v is not None}}


def report_timings(report):
    return [timing("report", r["op"], r["kernel"], r["shape"], r["median_ms"], reps=r["reps"], bytes=r["bytes"],
                   flops=r["flops"], warmup_ms=report.get("warmup_ms")) for r in report["rows"]]


def ab_timings(text, report):
    """bounds.txt and walk.txt: blocks `### <what>: <build> (round <k>)` of the
    report's rows (median of 50 each, the README says), one source per block:
    `bounds: new, round 1`, `walk: 8 a thread, round 2`. Bytes and flops are
    the report's for the same row."""
    size = {(r["op"], r["kernel"], r["shape"]): r for r in report["rows"]}
    out, source = [], None
    for line in text.splitlines():
        if m := re.match(r"### (launch bounds|vectors a thread): (\S+) \(round (\d)\)", line):
            what, build = ("bounds", m[2]) if m[1] == "launch bounds" else ("walk", f"{m[2]} a thread")
            source = f"{what}: {build}, round {m[3]}"
        elif m := re.match(r"(\w+)\s+(\S+(?: kernel| bulk)?)\s+(1 GiB|2\^28|\d+x256 thr)\s+([\d.]+)\s", line):
            r = size[(m[1], m[2], m[3])]
            out.append(timing(source, m[1], m[2], m[3], float(m[4]), reps=50, bytes=r["bytes"], flops=r["flops"]))
    return out


def criterion_timings(crit, bench_log):
    """criterion_medians.json, one timing per bench `<group>/<function>`: the
    2^28 and 1024 groups as op nested_sin and their shape, the host-clock group
    by its own name (as scripts/gpu/runfile.py names groups it cannot split);
    reps: criterion's samples (bench.log's `Collecting N samples`)."""
    samples = dict(re.findall(r"^Benchmarking (\S+): Collecting (\d+) samples", bench_log, re.M))
    out = []
    for bench, v in crit.items():
        group, kernel = bench.split("/")
        op, shape = {"nested_sin_2_28": ("nested_sin", "2^28"), "nested_sin_1024": ("nested_sin", "1024"),
                     "nested_sin_1024_end_to_end": (group, "1024")}[group]
        out.append(timing("criterion", op, kernel, shape, v["median_ns"] / 1e6, reps=int(samples[bench]),
                          bytes=v.get("bytes"), group=group))
    return out


def criterion_means(bench_log):
    """bench.log's `time: [low mean high]` per bench (criterion's mean and its
    95% interval), in ms."""
    unit = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}
    out = {}
    for m in re.finditer(r"^(nested_sin\S+/\w+)\s+time:\s+\[([\d.]+) (\S+) ([\d.]+) (\S+) ([\d.]+) (\S+)\]", bench_log, re.M):
        low, mean, high = (float(f"{float(m[i]) * unit[m[i + 1]]:.12g}") for i in (2, 4, 6))
        out[m[1]] = {"mean_ms": mean, "low_ms": low, "high_ms": high}
    return out


def pytorch_timings(t):
    """torch_peers.json (scripts/gpu/peers nested-sin): its times; the host
    clock's (`_wall_`) as op `nested_sin_host_clock`."""
    us = lambda key: t[key] / 1e3
    return [timing("pytorch", "copy", "copy_", "2^28", t["copy_ms"], bytes=8 * N),
            timing("pytorch", "nested_sin", "unfused", "2^28", t["torch_nested_sin_unfused_ms"], bytes=8 * N),
            timing("pytorch", "nested_sin", "compiled", "2^28", t["torch_nested_sin_compiled_ms"], bytes=8 * N),
            timing("pytorch", "nested_sin", "unfused", "1024", us("torch_nested_sin_1k_us")),
            timing("pytorch", "nested_sin", "graph", "1024", us("torch_nested_sin_1k_graph_us")),
            timing("pytorch", "nested_sin_host_clock", "unfused", "1024", us("torch_nested_sin_1k_wall_us")),
            timing("pytorch", "nested_sin_host_clock", "graph", "1024", us("torch_nested_sin_1k_graph_wall_us"))]


def end_to_end_timings(e2e):
    """examples/nested_sin_end_to_end.rs --json: per size, the GPU's H2D, kernel,
    D2H and their total (host clock) and the CPU's four `f32::sin`; bytes: the
    4 bytes an element each copy moves, 8 (read + write) the kernel's."""
    out = []
    for r in e2e["rows"]:
        shape, n = f"2^{r['log2']}", r["elements"]
        out += [timing("end_to_end", "nested_sin", "h2d", shape, r["h2d_ms"], reps=r["gpu_reps"], bytes=4 * n),
                timing("end_to_end", "nested_sin", e2e["kernel"], shape, r["kernel_ms"], reps=r["gpu_reps"], bytes=8 * n),
                timing("end_to_end", "nested_sin", "d2h", shape, r["d2h_ms"], reps=r["gpu_reps"], bytes=4 * n),
                timing("end_to_end", "nested_sin", "gpu_total", shape, r["gpu_total_ms"], reps=r["gpu_reps"]),
                timing("end_to_end", "nested_sin", "cpu", shape, r["cpu_ms"], reps=r["cpu_reps"])]
    return out


UNIT = {"": 1, "%": 1, "inst": 1, "block": 1, "register/thread": 1, "Gbyte": 1e9, "Mbyte": 1e6, "Kbyte": 1e3,
        "byte": 1, "ns": 1, "us": 1e3, "ms": 1e6}


def ncu_entries(text):
    """ncu.txt: one entry per launch, metrics in base units (times in ns); a
    kernel launched more than once is labelled `launch <i>`."""
    out = []
    for block in re.split(r"^  (?=\w+ \(\d+, \d+, \d+\)x)", text, flags=re.M)[1:]:
        metrics = {}
        for m in re.finditer(r"^    (\w+__\S+)\s+(\S+)?\s+([\d,.]+)$", block, re.M):
            v = float(m[3].replace(",", "")) * UNIT[m[2] or ""]
            metrics[m[1]] = int(round(v)) if abs(v - round(v)) < 1e-6 * max(1, abs(v)) else round(v, 6)
        out.append({"kernel": block.split()[0], "label": None, "metrics": metrics})
    for kernel in {e["kernel"] for e in out}:
        same = [e for e in out if e["kernel"] == kernel]
        for i, e in enumerate(same if len(same) > 1 else []):
            e["label"] = f"launch {i + 1}"
    return out


def ptxas(text):
    out, name = {}, None
    for line in text.splitlines():
        if m := re.search(r"entry function '(\w+)'", line):
            name = m[1]
        elif m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line):
            out.setdefault(name, {}).update(stack=int(m[1]), spill_stores=int(m[2]), spill_loads=int(m[3]))
        elif m := re.search(r"Used (\d+) registers", line):
            out.setdefault(name, {})["registers"] = int(m[1])
    return {k: {f: v[f] for f in ("registers", "stack", "spill_stores", "spill_loads")} for k, v in out.items()}


def sanitizer(text):
    """sanitizer.log: `### <tool>` over the GPU tests of tests/nested_sin."""
    out = []
    for tool, body in re.findall(r"^### (\w+)\n(.*?)(?=^### |\Z)", text, re.M | re.S):
        summary = next(l.strip("= ").strip() for l in body.splitlines() if "SUMMARY" in l)
        out.append({"tool": tool, "binary": "nested_sin", "errors": int(re.search(r"(\d+) errors", summary)[1]),
                    "summary": summary})
    return out


def accuracy_worst(tests):
    """The ACCURACY lines' worst input per version: x, what it returned, f64's four sines."""
    return {m[1]: {"x": float(m[2]), "got": float(m[3]), "f64": float(m[4])}
            for m in re.finditer(r"^ACCURACY (\w+): max [\d.]+ ulp at x = (\S+) \(got (\S+), f64 (\S+)\)", tests, re.M)}


def machine(head):
    """tests.log's head (scripts/gpu/nested_sin.sh): the stamp's date line,
    nvidia-smi's fields as printed, the CPU line, nvcc's build line."""
    lines = head.strip().splitlines()
    smi = lines.index(next(l for l in lines if l.startswith("name, ")))
    return {"started": lines[1], "nvidia_smi": dict(zip(lines[smi].split(", "), lines[smi + 1].split(", "))),
            "cpu": lines[smi + 2].removeprefix("cpu:").strip(), "nvcc": lines[smi + 3]}


def convert_h200(folder):
    read = lambda name: (folder / name).read_text()
    tests_log, bench_log = read("tests.log"), read("bench.log")
    head = tests_log.split("\n\n", 1)[0]
    report = json.loads(read("report/report.json"))
    peers, e2e = json.loads(read("torch_peers.json")), json.loads(read("end_to_end.json"))
    m = machine(head)
    validate = dict(re.findall(r"^validate: (\w+) differs from unfused (?:by at most|in) (\S+)", bench_log, re.M))
    result = re.findall(r"^test result: \w+\. (\d+) passed; (\d+) failed", tests_log, re.M)[-1]
    files = ["tests.log", "criterion_medians.json", "bench.log", "torch_peers.json", "end_to_end.json", "ncu.txt",
             "sanitizer.log", "ptxas.txt", "report/report.json", "bounds.txt", "walk.txt"]
    run = {
        "schema": 1,
        "made_by": "converted by scripts/docs/convert/nested_sin.py from this folder's logs (" + ", ".join(files)
        + "), written by scripts/gpu/streaming.sh (scripts/gpu/nested_sin.sh: tests/nested_sin --nocapture, "
        "scripts/gpu/criterion_medians.py over cargo bench --bench nested_sin, scripts/gpu/peers nested-sin, "
        "examples/nested_sin_end_to_end.rs --json, ncu over its --profile, compute-sanitizer, ptxas -v; then the "
        "report binary) and, for bounds.txt and walk.txt, .probe/ns_ab.sh of that session in the same call",
        "commit": next(l.split()[1] for l in head.splitlines() if l.startswith("commit ")),
        "date": folder.name[:10],
        "gpu": {"name": report["gpu"], "sm_count": report["sm_count"], "driver": m["nvidia_smi"]["driver_version"],
                "cuda": re.search(r"cuda_([\d.]+)\.r", m["nvcc"])[1], "ptx_arch": report["ptx_arch"]},
        "roofs": report["roofs"],
        "timings": report_timings(report) + criterion_timings(json.loads(read("criterion_medians.json")), bench_log)
        + pytorch_timings(peers) + end_to_end_timings(e2e) + ab_timings(read("bounds.txt"), report)
        + ab_timings(read("walk.txt"), report),
        "ncu": ncu_entries(read("ncu.txt")),
        "ptxas": ptxas(read("ptxas.txt")),
        "sanitizer": sanitizer(read("sanitizer.log")),
        "tests": [{"binary": "nested_sin", "passed": int(result[0]), "failed": int(result[1])}],
        "values": {
            "accuracy": json.loads(next(l.split(" ", 1)[1] for l in tests_log.splitlines()
                                        if l.startswith("ACCURACY_JSON "))),
            "accuracy_worst": accuracy_worst(tests_log),
            "criterion_mean": criterion_means(bench_log),
            "bench_validate": {"fast_max_abs_diff_from_unfused": float(validate["fast"]),
                               "poly_elements_differing_from_unfused": int(validate["poly"])},
            "pytorch": {"version": peers["torch"], "compile_s": peers["compile_s"],
                        "compiled_bit_equal_to_eager": peers["compiled_bit_equal_to_eager"]},
            "end_to_end": {"cpu": e2e["cpu"], "cpu_threads": e2e["cpu_threads"], "kernel": e2e["kernel"]},
            "machine": m,
        },
    }
    return run


def convert_cpu(folder):
    """test.log: `sin3_minimax_within_its_bounds_exhaustive` on a CPU, its line of bounds and its result."""
    log = (folder / "test.log").read_text()
    m = re.search(r"^sin3_minimax over every (\d+)th f32 of \[0, 1\]: ([\d.]+) ulp at x = (\S+); nested, first sine "
                  r"within ([\d.]+) ulp: ([\d.]+) ulp at s = (\S+) \(within CUDA's documented ([\d.]+) ulp: ([\d.]+) "
                  r"ulp at s = (\S+)\)$", log, re.M)
    result = re.search(r"^test result: \w+\. (\d+) passed; (\d+) failed", log, re.M)
    number = lambda s: int(s) if s.isdigit() else float(s)
    return {
        "schema": 1,
        "made_by": "converted by scripts/docs/convert/nested_sin.py from this folder's logs (test.log), written by "
        "cargo test --release -p coalesce-kernels --lib -- --ignored --nocapture --exact "
        "nested_sin::math::minimax::tests::sin3_minimax_within_its_bounds_exhaustive (its README says where)",
        "commit": re.match(r"commit (\w+);", log)[1],
        "date": folder.name[:10],
        "gpu": {"name": "CPU (no GPU)", "sm_count": None, "driver": None, "cuda": None, "ptx_arch": None},
        "roofs": {"copy_gb_per_s": None, "fma_tflop_per_s": None, "tf32_tflop_per_s": None, "dram_spec_gb_per_s": None},
        "timings": [], "ncu": [], "ptxas": {}, "sanitizer": [],
        "tests": [{"binary": "coalesce-kernels lib (sin3_minimax_within_its_bounds_exhaustive, --ignored)",
                   "passed": int(result[1]), "failed": int(result[2])}],
        "values": {"sin3_minimax_bounds": {
            "every_nth_f32": int(m[1]), "inner_ulp": float(m[2]), "inner_worst_x": float(m[3]),
            "first_sine_ulp": number(m[4]), "nested_ulp": float(m[5]), "nested_worst_s": float(m[6]),
            "cuda_sinf_ulp": number(m[7]), "nested_cuda_ulp": float(m[8]), "nested_cuda_worst_s": float(m[9])}},
    }


for folder, run in ((H200, convert_h200(H200)), (CPU, convert_cpu(CPU))):
    (folder / "run.json").write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n")
    print(f"{folder.relative_to(ROOT)}/run.json: {len(run['timings'])} timings, {len(run['ncu'])} ncu launches, "
          f"{len(run['tests'])} test binaries, values {', '.join(run['values'])}")
