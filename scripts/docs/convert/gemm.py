#!/usr/bin/env python3
"""One-off: writes run.json (docs/contributing.md's schema 1) into each H200
run folder that docs/gemm.md reads, from the logs those folders hold.

    python3 scripts/docs/convert/gemm.py

Raw figures only: times in ms with their flops (rates are the pages'),
ncu's metrics by metric name in base units, ptxas's registers and frames,
sanitizer verdicts and test counts, and what the examples printed (errors
against the f64 product, the special-value tables) under `values`. Timings
that one file holds several of (alternating builds, probes, passes) carry
the fields that tell them apart: `variant`, `build`, `version`, `pass`,
`block`. No emulator counter is stored: the pages read those live."""
import json, pathlib, re, sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts" / "docs"))
from common import commit_of  # noqa: E402

RUNS = ROOT / "docs" / "measurements"
ME = "scripts/docs/convert/gemm.py"
GEMM_SCRIPTS = "scripts/gpu/gemm.sh, examples/gemm_tensor_cores.rs, scripts/gpu/peers gemm-tc and gemm-shapes"


def cube(n):
    return f"{n}x{n}x{n}"


def flops(shape):
    m, n, k = map(int, shape.split("x"))
    return 2 * m * n * k


def timing(source, kernel, shape, ms, op="gemm", statistic="median", **extra):
    row = {"source": source, "op": op, "kernel": kernel, "shape": shape, "statistic": statistic, "ms": ms,
           "flops": flops(shape)}
    row.update({k: v for k, v in extra.items() if v is not None})
    return row


# ---- logs ----------------------------------------------------------------------

EX = re.compile(r"^\s*(\w+) (\d+)\^3: median ([\d.]+) ms \(min [\d.]+, max [\d.]+, (\d+) reps\)", re.M)
CUBLAS = re.compile(r"^cuBLAS (\w+)\s+(\d+)\^3: median ([\d.]+) ms \(min [\d.]+, max [\d.]+, (\d+) reps\)", re.M)
ERROR = re.compile(r"^error (\w+)\s+(\d+)\^3: max\|err\| \S+ \(/\S+ = ([\d.e+-]+)\), \|\|err\|\|/\|\|ref\|\| ([\d.e+-]+), "
                   r"NaN (\d+)", re.M)


def tc_log(text, source="gemm_tensor_cores", cublas="cublas", **extra):
    """examples/gemm_tensor_cores's timings, then scripts/gpu/peers gemm-tc's cuBLAS timings and errors."""
    rows = [timing(source, m[1], cube(int(m[2])), float(m[3]), reps=int(m[4]), **extra) for m in EX.finditer(text)]
    rows += [timing(cublas, m[1], cube(int(m[2])), float(m[3]), reps=int(m[4]), **extra) for m in CUBLAS.finditer(text)]
    errors = {}
    for m in ERROR.finditer(text):
        errors.setdefault(m[1], {})[cube(int(m[2]))] = {"max_over_max_c": float(m[3]), "frobenius": float(m[4]),
                                                         "nan": int(m[5])}
    return rows, errors


def blocks(text, source, key):
    """A log of `== <name> ...` blocks of examples/gemm_tensor_cores: one timing per line, its block's
    first word under `key`, and its pass (the how-manieth block of that name)."""
    rows, seen = [], {}
    for block in re.split(r"^== ", text, flags=re.M)[1:]:
        head = block.splitlines()[0]
        name = "nofin" if "no non-finite" in head else head.split()[0]
        if head.startswith("base step 13"):
            name = "base step 13"
        n = seen[name] = seen.get(name, -1) + 1
        rows += [timing(source, m[1], cube(int(m[2])), float(m[3]), reps=int(m[4]), **{key: name, "pass": n})
                 for m in EX.finditer(block)]
    return rows


UNIT = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}


def criterion_log(text, **extra):
    """criterion's point estimates (`time: [lo est hi]`, the mean) of every `group/MxNxK`, with their sample counts."""
    samples = {m[1]: int(m[2]) for m in re.finditer(r"Benchmarking (\S+): Collecting (\d+) samples", text)}
    rows = []
    for m in re.finditer(r"^(\w+)/(\d+x\d+x\d+)\s+time:\s+\[\S+ \S+ ([\d.]+) (\S+)", text, re.M):
        group, shape = m[1], m[2]
        rows.append(timing("criterion", kernel_of(group), shape, float(m[3]) * UNIT[m[4]], op="gemm_shapes", statistic="mean",
                           group=group, samples=samples.get(f"{group}/{shape}"), **extra))
    return rows


def kernel_of(group):
    """benches/gemm.rs's groups: `gemm_shapes` times gemm::sgemm, `gemm_<step>_shapes` one step alone."""
    if group == "gemm_shapes":
        return "sgemm"
    return "wgmma_" + group.removeprefix("gemm_").removesuffix("_shapes")


def criterion_medians(path):
    """scripts/gpu/criterion_medians.py's file: criterion's median per benchmark."""
    rows = []
    for key, v in json.loads(path.read_text()).items():
        group, name = key.split("/")
        if m := re.fullmatch(r"gemm_(\d+)", group):
            rows.append(timing("criterion", name, cube(int(m[1])), v["median_ns"] / 1e6, group=group))
        else:
            rows.append(timing("criterion", kernel_of(group), name, v["median_ns"] / 1e6, op="gemm_shapes", group=group))
    return rows


def torch_shapes(text, **extra):
    """scripts/gpu/peers gemm-shapes: `torch.mm` (TF32 off, cuBLAS SGEMM) at each shape."""
    return [timing("cublas", "sgemm", m[1], float(m[2]), op="gemm_shapes", **extra)
            for m in re.finditer(r"^torch sgemm (\d+x\d+x\d+): ([\d.]+) ms", text, re.M)]


def tests(text, binary, **extra):
    """cargo test's last `test result:` line."""
    m = list(re.finditer(r"test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured; "
                         r"(\d+) filtered out; finished in ([\d.]+)s", text))[-1]
    return {"binary": binary, "passed": int(m[2]), "failed": int(m[3]), "ignored": int(m[4]), "measured": int(m[5]),
            "filtered_out": int(m[6]), "seconds": float(m[7]), **extra}


def sanitizer(text, binary, **extra):
    """compute-sanitizer's summaries: memcheck's `ERROR SUMMARY`, racecheck's `RACECHECK SUMMARY`."""
    out = []
    for tool, pattern in (("memcheck", r"ERROR SUMMARY: (\d+) errors"),
                          ("racecheck", r"RACECHECK SUMMARY: (\d+) hazards displayed \((\d+) errors, \d+ warnings\)")):
        m = re.search(r"=+ (" + pattern + r".*)$", text, re.M)
        out.append({"tool": tool, "binary": binary, "errors": int(m[3] if tool == "racecheck" else m[2]),
                    "hazards": int(m[2]) if tool == "racecheck" else None, "summary": m[1].strip(), **extra})
        if tool == "memcheck":
            out[-1].pop("hazards")
    return out


def ptxas(text):
    out, name = {}, None
    for line in text.splitlines():
        if m := re.search(r"entry function '(\w+)'", line):
            name = m[1]
        elif name and (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)):
            out.setdefault(name, {}).update(stack=int(m[1]), spill_stores=int(m[2]), spill_loads=int(m[3]))
        elif name and (m := re.search(r"Used (\d+) registers", line)):
            out.setdefault(name, {})["registers"] = int(m[1])
    return out


# ncu's section rows that the page reads, by the metric each shows (ncu's own sections define them so).
SECTION_METRICS = {"Duration": "gpu__time_duration.sum", "Issue Slots Busy": "sm__inst_issued.avg.pct_of_peak_sustained_active",
                   "Warp Cycles Per Issued Instruction": "smsp__average_warp_latency_per_inst_issued.ratio",
                   "L2 Cache Throughput": "lts__throughput.avg.pct_of_peak_sustained_elapsed"}
BASE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12, "ns": 1, "us": 1e3, "usecond": 1e3,
        "ms": 1e6, "msecond": 1e6, "s": 1e9, "hz": 1, "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9}


def ncu(text):
    """ncu's printed report -> one entry per launch: the command line's metrics and SECTION_METRICS, base units
    (bytes, ns, Hz). Kernels launched more than once are labelled by the step kernel they serve."""
    launches = []
    for line in text.splitlines():
        if m := re.match(r"^  ([A-Za-z_0-9]+) \(\d+, \d+, \d+\)x", line):
            launches.append({"kernel": m[1], "label": None, "metrics": {}})
            continue
        if not launches:
            continue
        metrics = launches[-1]["metrics"]
        if m := re.match(r"^\s+([a-z0-9_]+__\S+)\s+(\S+\s+)?([\d,.]+)$", line):
            metrics[m[1]] = float(m[3].replace(",", "")) * BASE.get((m[2] or "").strip(), 1)
        elif (m := re.match(r"^\s{4}(\S.*?)\s{2,}(\S+\s+)?([\d,.]+)$", line)) and m[1].strip() in SECTION_METRICS:
            metrics.setdefault(SECTION_METRICS[m[1].strip()], float(m[3].replace(",", "")) * BASE.get((m[2] or "").strip(), 1))
    steps = [l["kernel"] for l in launches]
    for i, l in enumerate(launches):
        if steps.count(l["kernel"]) > 1:
            if l["kernel"] == "gemm_fixup":
                l["label"] = "after " + next(k for k in reversed(steps[:i]) if k not in ("gemm_pack", "gemm_fixup"))
            else:
                served = next(k for k in steps[i:] if k not in ("gemm_pack", "gemm_fixup"))
                same = [j for j in range(len(steps)) if steps[j] == l["kernel"]
                        and next(k for k in steps[j:] if k not in ("gemm_pack", "gemm_fixup")) == served]
                l["label"] = f"before {served}" + (f" ({same.index(i) + 1} of {len(same)})" if len(same) > 1 else "")
    return launches


def machine(text):
    """machine.txt: `commit <sha>`, nvidia-smi's CSV header and line, nvcc's version lines."""
    lines = text.strip().splitlines()
    head = [h.strip() for h in lines[1].split(",")]
    vals = [v.strip() for v in lines[2].split(",")]
    smi = dict(zip(head, vals))
    nvcc = re.search(r"release ([\d.]+), (V\S+)", text)
    build = re.search(r"^Build (\S+)", text, re.M)
    return {"name": smi["name"], "driver": smi["driver_version"], "cuda": nvcc[1] if nvcc else None,
            "nvidia_smi": {k: v for k, v in smi.items() if k not in ("name", "driver_version")},
            "nvcc": nvcc[2] if nvcc else None, "nvcc_build": build[1] if build else None}


def gpu(name, sm_count, driver, cuda, ptx_arch=None, **more):
    return {"name": name, "sm_count": sm_count, "driver": driver, "cuda": cuda, "ptx_arch": ptx_arch, **more}


def sms(text):
    return int(re.search(r"benchmarking on .+? \((\d+) SMs\)", text)[1])


def write(folder, made_by_files, made_by_scripts, commit, gpu_, roofs=None, timings=(), ncu_=(), ptxas_=None,
          sanitizer_=(), tests_=(), values=None):
    run = {"schema": 1,
           "made_by": f"converted by {ME} from this folder's logs ({', '.join(made_by_files)}), written by {made_by_scripts}",
           "commit": commit, "date": folder.name[:10], "gpu": gpu_, "roofs": roofs or {}, "timings": list(timings),
           "ncu": list(ncu_), "ptxas": ptxas_ or {}, "sanitizer": list(sanitizer_), "tests": list(tests_),
           "values": values or {}}
    (folder / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    print(f"{folder.relative_to(ROOT)}/run.json: {len(run['timings'])} timings, {len(run['ncu'])} ncu launches")


# ---- the folders ---------------------------------------------------------------


def main_run():
    """The ladder's call (scripts/gpu/gemm.sh), and step 16's probes of an earlier call."""
    f = RUNS / "2026-11-29-h200-gemm"
    rd = lambda n: (f / n).read_text()
    m = machine(rd("machine.txt"))
    tc_text = rd("tc.log")
    tc_rows, errors = tc_log(tc_text)
    arch = re.search(r'module Some\("(\w+)"\)', tc_text)[1]
    assert rd("ptxas.txt").splitlines()[0] == f"### {arch}"
    torch = re.search(r"torch (\S+)", tc_text)[1]
    timings = (criterion_medians(f / "criterion_medians.json") + torch_shapes(rd("bench.log")) + tc_rows
               + blocks(rd("probes.txt"), "probes", "variant"))
    write(f, ["machine.txt", "criterion_medians.json", "bench.log", "tc.log", "ncu.txt", "ptxas.txt", "tests.log",
              "sanitizer.log", "probes.txt"], GEMM_SCRIPTS + " and scripts/gpu/criterion_medians.py",
          commit_of(rd("machine.txt")),
          gpu(m["name"], sms(rd("bench.log")), m["driver"], m["cuda"], arch, pytorch=torch, nvidia_smi=m["nvidia_smi"],
              nvcc=m["nvcc"], nvcc_build=m["nvcc_build"]),
          timings=timings, ncu_=ncu(rd("ncu.txt")), ptxas_=ptxas(rd("ptxas.txt")),
          sanitizer_=sanitizer(rd("sanitizer.log"), "test-gemm"), tests_=[tests(rd("tests.log"), "test-gemm")],
          values={"errors": errors})


def specials_cells(text):
    """specials.txt: examples/gemm_specials's table (fixed-width columns), then peers gemm-specials' cuBLAS
    column, joined by input: each output's NaN/+inf/-inf/finite counts, `off` and largest error."""
    lines = text.splitlines()
    cublas_at = next(i for i, l in enumerate(lines) if l.startswith("input") and "cuBLAS" in l)
    rows = [l for l in lines[3:cublas_at] if l.strip()]
    peers = {l[:44].strip(): l[44:].strip() for l in lines[cublas_at + 1:] if l.strip()}

    def cell(s):
        m = re.fullmatch(r"(\d+)/(\d+)/(\d+)/(\d+)(?: off (\d+) err (\S+))?", s.strip())
        out = {"nan": int(m[1]), "pos_inf": int(m[2]), "neg_inf": int(m[3]), "finite": int(m[4])}
        if m[5] is not None:
            out.update(off=int(m[5]), err=float(m[6]))
        return out
    out = []
    for l in rows:
        name, rest = l[:44].strip(), l[44:]
        out.append({"input": name, "reference": cell(rest[:21]), "sgemm": cell(rest[21:66]),
                    "double_buffered": cell(rest[66:]), "cublas_sgemm": cell(peers[name])})
    sgemm = re.search(r"sgemm runs (\w+)", lines[0])[1]
    shape = re.search(r"\((\d+x\d+x\d+)\)", lines[0])[1]
    return {"shape": shape, "sgemm_runs": sgemm, "rows": out}


def specials_run():
    f = RUNS / "2026-11-29-h200-gemm-specials"
    rd = lambda n: (f / n).read_text()
    lines = rd("machine.txt").splitlines()
    head = [h.strip() for h in lines[1].split(",")]
    smi = dict(zip(head, [v.strip() for v in lines[2].split(",")]))
    log = rd("log.txt")
    tests_ = [tests(l, f"test-gemm {name}") for name in ("special", "split_k")
              for l in log.splitlines() if l.startswith(f"test gemm {name} ")]
    rn = rd("rn-machine.txt").splitlines()[0].split()[-1]
    write(f, ["machine.txt", "specials.txt", "ab.log", "log.txt", "sanitizer.log", "rn-machine.txt",
              "rn-specials.txt", "rn-ab.log"],
          "examples/gemm_specials.rs, scripts/gpu/peers gemm-specials, examples/gemm_tensor_cores.rs and the GPU tests; "
          f"the second call's files (rn-*) are of commit {rn}",
          lines[0].strip(), gpu(smi["name"], None, smi["driver_version"], re.search(r"release ([\d.]+)", rd("machine.txt"))[1]),
          timings=blocks(rd("ab.log"), "ab", "build") + [dict(r, call=rn) for r in blocks(rd("rn-ab.log"), "rn-ab", "build")],
          sanitizer_=sanitizer(rd("sanitizer.log"), "test-gemm special_values_give_fp32_results_on_the_gpu"),
          tests_=tests_,
          values={"specials": specials_cells(rd("specials.txt")),
                  "rn_specials": dict(specials_cells(rd("rn-specials.txt")), commit=rn)})


def direct_run():
    f = RUNS / "2026-11-28-h200-gemm-direct-3xtf32"
    rd = lambda n: (f / n).read_text()
    first, first_err = tc_log(rd("tc-first-build.log"), source="gemm_tensor_cores first build",
                              cublas="cublas first build")
    later, _ = tc_log(rd("tc.log"))
    probes = []
    for call, part in enumerate(re.split(r"^## call \d+$", rd("probes.txt"), flags=re.M)[1:], 1):
        probes += [dict(r, call=call) for r in blocks(part, "probes", "variant")]
    head = re.search(r"NVIDIA (\S+) \(driver ([\d.]+), CUDA ([\d.]+)\)", rd("probes.txt"))
    write(f, ["tc-first-build.log", "tc.log", "probes.txt"], "examples/gemm_tensor_cores.rs and scripts/gpu/peers gemm-tc",
          "unrecorded: the logs name no build commit (README.md: ef00f93's code, step 15 a first build in "
          "tc-first-build.log)",
          gpu(f"NVIDIA {head[1]}", None, head[2], head[3], re.search(r'module Some\("(\w+)"\)', rd("tc.log"))[1]),
          timings=first + later + probes, values={"errors_first_build": first_err})


def report_run():
    f = RUNS / "2026-11-28-h200-report"
    rd = lambda n: (f / n).read_text()
    report = json.loads(rd("report.json"))
    # README.md: every kernel timed after at least 500 ms of the same work (the report's --warmup-ms).
    rows = [{"source": "report", "op": r["op"], "kernel": r["kernel"], "shape": r["shape"], "statistic": "median",
             "ms": r["median_ms"], "reps": r["reps"], "bytes": r["bytes"], "flops": r["flops"], "warmup_ms": 500}
            for r in report["rows"]]
    tc_rows, errors = tc_log(rd("tc.log"))
    bench = rd("bench.log")
    m = machine(rd("tests.log"))
    write(f, ["report.json", "tc.log", "bench.log", "tests.log"],
          "the report binary (scripts/gpu/run.sh), criterion's gemm_shapes, examples/gemm_tensor_cores.rs and "
          "scripts/gpu/peers gemm-tc and gemm-shapes", commit_of(rd("tests.log")),
          gpu(report["gpu"], report["sm_count"], m["driver"], m["cuda"], report["ptx_arch"]), roofs=report["roofs"],
          timings=rows + tc_rows + criterion_log(bench) + torch_shapes(bench), values={"errors": errors})


def shapes_run():
    f = RUNS / "2026-11-29-h200-gemm-shapes"
    rd = lambda n: (f / n).read_text()
    m = machine(rd("machine.txt") + "\n")
    write(f, ["machine.txt", "criterion_medians.json", "bench.log", "tests.log", "sanitizer.log"],
          "criterion (bench-gemm --bench _shapes, scripts/gpu/criterion_medians.py), scripts/gpu/peers gemm-shapes and "
          "the GPU tests", commit_of(rd("machine.txt")), gpu(m["name"], sms(rd("bench.log")), m["driver"], None),
          timings=criterion_medians(f / "criterion_medians.json") + torch_shapes(rd("bench.log")),
          sanitizer_=sanitizer(rd("sanitizer.log"), "test-gemm split_k_products_match_the_reference_on_the_gpu"),
          tests_=[tests(rd("tests.log"), "test-gemm")])


def walk_run():
    """Five versions of step 15 with walking blocks, each against main before it: `version` names the call
    (first, counters, splitter, copies, final), `build` base or walk, `pass` the alternating run."""
    f = RUNS / "2026-11-28-h200-gemm-walk"
    rd = lambda n: (f / n).read_text()
    timings = criterion_log(rd("ab-base.log"), version="first", build="base", **{"pass": 0})
    timings += criterion_log(rd("ab-walk.log"), version="first", build="walk", **{"pass": 0})
    files = ["ab-base.log", "ab-walk.log"]
    for sub in ("counters", "splitter", "copies", "final"):
        for p in sorted((f / sub).glob("ab-*-*.log")):
            _, build, n = p.stem.split("-")
            timings += criterion_log(p.read_text(), version=sub, build=build, **{"pass": int(n)})
        files.append(f"{sub}/ab-*.log")
        if (f / sub / "torch.log").exists():
            timings += torch_shapes((f / sub / "torch.log").read_text(), version=sub)
            files.append(f"{sub}/torch.log")
    smi = rd("final/machine.txt").split(",")
    named = {re.search(r"benchmarking on (.+?) \(", p.read_text())[1]
             for p in [f / "ab-base.log", f / "ab-walk.log", *f.glob("*/ab-*.log")]}
    assert named == {smi[0].strip()}, f"the walk's logs name {named}"
    tests_ = [tests(rd("tests.log"), "test-gemm", version="first"),
              tests(rd("tests-counters.log"), "test-gemm", version="counters"),
              tests(rd("copies/tests.log"), "test-gemm", version="copies"),
              tests(rd("final/tests.log"), "test-gemm", version="final")]
    san = (sanitizer(rd("sanitizer.log"), "test-gemm walking_blocks_match_the_reference_on_the_gpu", version="first")
           + sanitizer(rd("copies/sanitizer.log"), "test-gemm (walking and split-K GPU tests)", version="copies")
           + sanitizer(rd("final/sanitizer.log"), "test-gemm walking_blocks_match_the_reference_on_the_gpu", version="final"))
    write(f, files + ["tests.log", "tests-counters.log", "copies/tests.log", "final/tests.log", "sanitizer.log",
                      "copies/sanitizer.log", "final/sanitizer.log", "final/machine.txt"],
          "criterion (bench-gemm, gemm_shapes and gemm_direct_3xtf32_shapes), scripts/gpu/peers gemm-shapes and the GPU "
          "tests",
          "unrecorded: README.md: the base builds are 9316d96, the walk builds its patched versions (walk.patch, "
          "walk-counters.patch, then uncommitted trees)",
          gpu(smi[0].strip(), sms(rd("final/ab-walk-0.log")), smi[1].strip(), None),
          timings=timings, sanitizer_=san, tests_=tests_)


if __name__ == "__main__":
    main_run()
    specials_run()
    direct_run()
    report_run()
    shapes_run()
    walk_run()
