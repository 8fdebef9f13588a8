#!/usr/bin/env python3
"""One-off: writes docs/measurements/2026-11-28-h200-transpose-cols/run.json
(docs/contributing.md, "Evidence: run files and pages") from the logs that
scripts/gpu/run.sh brought back into that folder, so that
docs/templates/transpose.md reads figures, not logs.

    python3 scripts/docs/convert/transpose.py [docs/measurements/<run> ..]

It stores what was measured, as measured: the report's medians (ms, with the
bytes and flops they moved), criterion's medians, PyTorch's figures, ncu's
metrics per profiled launch in base units, the sanitizer's verdicts and the
test binaries' counts. Nothing derived from other figures (rates, shares)
and not the emulator's counters (pages run the emulator themselves)."""
import json, pathlib, re, sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from common import commit_of, ncu_launches  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[3]
DEFAULT = ["docs/measurements/2026-11-28-h200-transpose-cols"]
FILES = ["report.json", "criterion_medians.json", "torch_peers.json", "ncu.txt", "tests.log",
         "tests-first-call.log", "sanitizer.log"]


def timing(source, op, kernel, shape, ms, **known):
    """A run file's timing: the median `ms`, and the fields that are known (bytes, flops, reps, ...)."""
    return {"source": source, "op": op, "kernel": kernel, "shape": shape, "statistic": known.pop("statistic", "median"),
            "ms": ms, **{k: v for k, v in known.items() if v is not None}}


def report_timings(report):
    """One `report` timing per report.json row, every op."""
    return [timing("report", r["op"], r["kernel"], r["shape"], r["median_ms"], reps=r["reps"], bytes=r["bytes"],
                   flops=r["flops"], warmup_ms=report["warmup_ms"]) for r in report["rows"]]


def criterion_timings(crit):
    """One `criterion` timing per bench id `<group>/<kernel>`; the shape is the
    group's (`transpose_8192x8192` and `transpose_4096x4096_launches` alike)."""
    out = []
    for bench, v in crit.items():
        group, kernel = bench.split("/")
        shape = re.fullmatch(r"transpose_(\d+x\d+)(_\w+)?", group).group(1)
        out.append(timing("criterion", "transpose", kernel, shape, v["median_ns"] / 1e6, bytes=v["bytes"], group=group))
    return out


def pytorch_timings(peers):
    """torch_peers.json (scripts/gpu/peers/report.py) as timings. The file
    holds rates for most figures: their ms is the rate's own formula inverted
    (bytes / (GB/s x 1e6), flops / (TFLOP/s x 1e9)) with the bytes and flops
    that report.py divides by."""
    out, n28, n26 = [], 1 << 28, 1 << 26

    def rate(key, op, kernel, shape, bytes=None, flops=None):
        ms = bytes / (peers[key] * 1e6) if flops is None else flops / (peers[key] * 1e9)
        out.append(timing("pytorch", op, kernel, shape, ms, bytes=bytes, flops=flops, key=key))

    def time(key, op, kernel, shape, scale=1.0, **known):
        out.append(timing("pytorch", op, kernel, shape, peers[key] * scale, key=key, **known))

    for key in peers:
        if key in ("gpu", "sms"):
            continue
        if key == "copy_GBs":
            rate(key, "copy", "copy_", "1 GiB", bytes=2 * 4 * n28)
        elif m := re.fullmatch(r"torch_transpose_(\d+)_GBs", key):
            n = int(m.group(1))
            rate(key, "transpose", "copy_(a.t())", f"{n}x{n}", bytes=2 * 4 * n * n)
        elif m := re.fullmatch(r"torch_softmax_(\d+)x(\d+)_GBs", key):
            r, c = int(m.group(1)), int(m.group(2))
            rate(key, "softmax", "softmax", f"{r}x{c}", bytes=2 * 4 * r * c)
        elif m := re.fullmatch(r"torch_(s|tf32)gemm_(\d+)_TFLOPs", key):
            n = int(m.group(2))
            rate(key, "gemm", f"{m.group(1)}gemm", f"{n}^3", flops=2 * n ** 3)
        elif m := re.fullmatch(r"(h2d|d2h)_(pinned|pageable)_GBs", key):
            rate(key, "transfer", f"{m.group(1)}_{m.group(2)}", "2^26", bytes=4 * n26)
        elif m := re.fullmatch(r"torch_nested_sin_(unfused|compiled)_ms", key):
            time(key, "nested_sin", m.group(1), "2^28", bytes=2 * 4 * n28)
        elif key == "torch_nested_sin_1k_us":
            time(key, "nested_sin", "unfused", "2^10", 1e-3)
        elif key == "torch_loop_transpose_4096_ms":
            time(key, "transpose", "python loop r[i, :] = a[:, i]", "4096x4096", bytes=2 * 4 * 4096 * 4096)
        elif m := re.fullmatch(r"pipeline_(seq|streams)_ms", key):
            # host clock, one run of 16 uploads, squarings and downloads of 2048^2 (report.py's pipeline)
            time(key, "pipeline", m.group(1), "16x2048^2", statistic="host clock, one run")
        elif key == "torch_launch_us":
            # host clock, 10,000 calls of z.add_(1) from a synchronize to a synchronize, per call
            time(key, "launch", "add_", "1", 1e-3, statistic="host clock, mean of 10000")
        else:
            raise SystemExit(f"torch_peers.json: no rule for {key}")
    return out


def base(v):
    """ncu's figure in base units: whole where it is whole (bytes from Mbyte, counts)."""
    return int(round(v)) if abs(v - round(v)) < 1e-6 * max(1.0, abs(v)) else v


def ncu_entries(text):
    """One entry per profiled launch, labelled `launch <i>` among the kernel's launches in order."""
    seen, out = {}, []
    for kernel, metrics in ncu_launches(text):
        seen[kernel] = seen.get(kernel, 0) + 1
        out.append({"kernel": kernel, "label": f"launch {seen[kernel]}",
                    "metrics": {k: base(v) for k, v in metrics.items() if "__" in k}})
    return out


def sections(text):
    """A log's `### <title>` sections: [(title, body)]."""
    parts = re.split(r"^### (.*)$", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def tests(text, log):
    """Passed and failed tests per test binary of a tests log (its sanitizer sections left out)."""
    out = []
    for title, body in sections(text):
        if title.split()[0] in ("memcheck", "racecheck", "synccheck", "initcheck"):
            continue
        results = re.findall(r"^test result: \w+\. (\d+) passed; (\d+) failed", body, re.M)
        out.append({"binary": title.split("/")[-1], "passed": sum(int(p) for p, _ in results),
                    "failed": sum(int(f) for _, f in results), "log": log})
    return out


def sanitizer(text):
    """compute-sanitizer's verdict per tool and binary: its summary line's error count."""
    out = []
    for title, body in sections(text):
        tool, binary = title.split()
        summary = [l for l in body.splitlines() if re.match(r"=+ \w+ SUMMARY:", l)][-1].strip()
        errors = int(re.search(r"(\d+) errors", summary).group(1))
        out.append({"tool": tool, "binary": binary.split("/")[-1], "errors": errors, "summary": summary})
    return out


def gpu(report, machine):
    """The GPU as report.json names it, with the driver (nvidia-smi's line under
    `name, driver_version, ...`) and CUDA (nvcc's `release <x.y>`) of the log's head."""
    smi = re.search(r"^name, driver_version.*\n(.*)$", machine, re.M).group(1).split(", ")
    if smi[0] != report["gpu"]:
        raise SystemExit(f"tests.log's nvidia-smi names {smi[0]}, report.json {report['gpu']}")
    cuda = re.search(r"^Cuda compilation tools, release ([\d.]+),", machine, re.M).group(1)
    return {"name": report["gpu"], "sm_count": report["sm_count"], "driver": smi[1], "cuda": cuda,
            "ptx_arch": report["ptx_arch"]}


def convert(folder):
    read = lambda name: (folder / name).read_text()
    report = json.loads(read("report.json"))
    machine = read("tests.log").split("\n###", 1)[0]
    date = re.match(r"\d{4}-\d\d-\d\d", folder.name).group(0)
    present = [f for f in FILES if (folder / f).is_file()]
    run = {
        "schema": 1,
        "made_by": f"converted by scripts/docs/convert/transpose.py from this folder's logs ({', '.join(present)}), "
                   "written by scripts/gpu/run.sh (the report binary's report.json, scripts/gpu/criterion_medians.py "
                   "over cargo bench --bench transpose, scripts/gpu/peers report's torch_peers.json, ncu, the test "
                   "binaries and compute-sanitizer); PyTorch's rates (GB/s, TFLOP/s) are stored as the ms their "
                   "formula in scripts/gpu/peers/report.py inverts to, with its bytes (2 x 4 x elements for copies, "
                   "transposes and softmax; 4 x 2^26 for host-device copies) or flops (2 N^3)",
        "commit": commit_of(machine),
        "date": date,
        "gpu": gpu(report, machine),
        "roofs": report["roofs"],
        "timings": report_timings(report) + criterion_timings(json.loads(read("criterion_medians.json")))
        + pytorch_timings(json.loads(read("torch_peers.json"))),
        "ncu": ncu_entries(read("ncu.txt")),
        "ptxas": {},
        "sanitizer": sanitizer(read("sanitizer.log")),
        "tests": (tests(read("tests-first-call.log"), "tests-first-call.log")
                  if (folder / "tests-first-call.log").is_file() else []) + tests(read("tests.log"), "tests.log"),
        "values": {},
    }
    (folder / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    print(f"{folder.relative_to(ROOT)}/run.json: {len(run['timings'])} timings, {len(run['ncu'])} ncu launches, "
          f"{len(run['tests'])} test binaries")


for arg in sys.argv[1:] or DEFAULT:
    convert((ROOT / arg).resolve() if not pathlib.Path(arg).is_absolute() else pathlib.Path(arg))
