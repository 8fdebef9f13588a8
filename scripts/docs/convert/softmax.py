#!/usr/bin/env python3
"""One-off: writes run.json (docs/contributing.md's schema) into the softmax
page's H200 run folder from the logs scripts/gpu/softmax.sh left there.

    python3 scripts/docs/convert/softmax.py [docs/measurements/2026-11-29-h200-softmax]

It stores what the logs measured, nothing derived from it: criterion's
medians (ms, with the bytes, and the samples and launches of bench.log),
PyTorch's times (ms from its GB/s and the bytes peers/softmax.py counted),
ncu's metrics in base units (bytes, ns, counts) by launch, labelled with the
shape the probe names, ptxas -v per entry, the sanitizers' and the tests'
verdicts, and under `values` the tests' accuracy lines, the dispatch's
picks, PyTorch's answers on special values and versions, and the
nvidia-smi line. The emulator's counters are not stored (pages read them
live)."""
import json, pathlib, re, sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
FILES = ["summary.txt", "tests.log", "bench.log", "criterion_medians.json", "torch_softmax.json", "ncu.txt",
         "sanitizer.log", "ptxas.txt"]
BINARY = "test-softmax"


def criterion(folder):
    """criterion_medians.json with bench.log's samples and launches (iterations) per benchmark."""
    medians = json.loads((folder / "criterion_medians.json").read_text())
    log = (folder / "bench.log").read_text()
    # criterion prints a count of 10,000 launches or more rounded ("14k"): kept as `reps_approx`, `reps` null.
    runs = {m[1]: (int(m[2]), m[3]) for m in
            re.finditer(r"^Benchmarking (\S+): Collecting (\d+) samples in estimated [\d.]+ \w+ \((\d+k?) iterations\)", log, re.M)}
    out = []
    for name, v in medians.items():
        group, kernel = name.split("/")
        if m := re.fullmatch(r"softmax_(\d+x\d+)", group):
            op, shape = "softmax", m[1]
        elif m := re.fullmatch(r"softmax_len_(\d+)", group):
            op, shape = "softmax_len", m[1]
        else:
            raise SystemExit(f"criterion group {group}: neither softmax_RxC nor softmax_len_C")
        samples, reps = runs[name]
        exact = not reps.endswith("k")
        out.append({"source": "criterion", "op": op, "kernel": kernel, "shape": shape, "group": group,
                    "statistic": "median", "ms": v["median_ns"] / 1e6, "bytes": v["bytes"],
                    "reps": int(reps) if exact else None, "samples": samples}
                   | ({} if exact else {"reps_approx": int(reps[:-1]) * 1000}))
    return out


def pytorch(torch):
    """PyTorch's medians: peers/softmax.py stored GB/s = bytes / ms / 1e6 with its ms; ms is taken back from
    its own `_ms` where stored (the softmaxes), else from GB/s and the bytes it counted (the 1 GiB copy)."""
    out = []
    copy_bytes = 2 * (1 << 28) * 4
    out.append({"source": "pytorch", "op": "copy", "kernel": "copy", "shape": str(1 << 28), "statistic": "median",
                "ms": copy_bytes / torch["copy_GBs"] / 1e6, "bytes": copy_bytes})
    for key, ms in torch.items():
        if m := re.fullmatch(r"torch_softmax_(\d+)x(\d+)_ms", key):
            rows, cols = int(m[1]), int(m[2])
            out.append({"source": "pytorch", "op": "softmax", "kernel": "torch.softmax", "shape": f"{rows}x{cols}",
                        "statistic": "median", "ms": ms, "bytes": 2 * rows * cols * 4})
    return out


UNIT = {"": 1, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def ncu(text):
    """ncu.txt: one entry per launch, in launch order, labelled with the shape its `ncu probe:` line names;
    bytes in bytes, times in ns, the rest as ncu prints them (counts, %)."""
    shapes = re.findall(r"^ncu probe: (\w+) on (\d+x\d+)", text, re.M)
    out = []
    for line in text.splitlines():
        if m := re.match(r"^  (softmax_\w+) \(\d+, 1, 1\)x\(\d+, 1, 1\)", line):
            out.append({"kernel": m[1].removeprefix("softmax_"), "label": None, "metrics": {}})
        elif (m := re.match(r"^\s+([a-z0-9_]+__\S+)\s+(\S+)?\s+([\d,.]+)$", line)) and out:
            unit = m[2] or ""
            scale = UNIT.get(unit, 1)  # sector, inst, register/thread, %: counts and shares as printed
            out[-1]["metrics"][m[1]] = round(float(m[3].replace(",", "")) * scale, 6)
    if [k for k, _ in shapes] != [n["kernel"] for n in out]:
        raise SystemExit("ncu.txt: the probe's lines and the profiled launches differ")
    for n, (_, shape) in zip(out, shapes):
        n["label"] = shape
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


RESULT = r"test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored; \d+ measured; (\d+) filtered out; finished in ([\d.]+)s"


def result(text):
    m = re.search(RESULT, text)
    return {"passed": int(m[2]), "failed": int(m[3]), "ignored": int(m[4]), "filtered_out": int(m[5]),
            "seconds": float(m[6])}


def sanitizer(text):
    """One verdict per tool over the test binary's GPU tests, with the test result it ran to."""
    out = []
    for tool, part in re.findall(r"^### (\w+)\n(.*?)(?=^### |\Z)", text, re.M | re.S):
        summary = [l for l in part.splitlines() if re.search(r"ERROR SUMMARY|RACECHECK SUMMARY", l)][-1]
        errors = int(re.search(r"\((\d+) errors" if "RACECHECK" in summary else r"(\d+) errors", summary)[1])
        out.append({"tool": tool, "binary": BINARY, "errors": errors, "summary": summary.strip(), **result(part)})
    return out


def main():
    folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs/measurements/2026-11-29-h200-softmax")
    read = lambda name: (folder / name).read_text()
    summary, tests, torch, ptx = read("summary.txt"), read("tests.log"), json.loads(read("torch_softmax.json")), read("ptxas.txt")
    smi = re.search(r"^name, .*\n(.*)$", summary, re.M)[1].split(", ")
    nvcc = re.search(r"^Cuda compilation tools, release ([\d.]+), (\S+)\nBuild (\S+)", summary, re.M)
    accuracy = [{"kernel": m[1], "shape": m[2], "max_ulp_near_max": float(m[3]), "max_row_sum_err": float(m[4])}
                for m in re.finditer(r"^accuracy: (\w+) (\d+x\d+) max_ulp_near_max ([\d.]+) max_row_sum_err ([\d.e+-]+)",
                                     tests, re.M)]
    dispatch = {m[2]: m[1] for m in re.finditer(r"^accuracy: (\w+) (\d+x\d+) .*\(dispatch\)$", tests, re.M)}
    run = {
        "schema": 1,
        "made_by": f"converted by scripts/docs/convert/softmax.py from this folder's logs ({', '.join(FILES)}), "
                   "written by scripts/gpu/softmax.sh (with scripts/gpu/criterion_medians.py and scripts/gpu/peers softmax)",
        "commit": re.search(r"^commit (\S+)", summary, re.M)[1],
        "date": re.match(r"\d{4}-\d\d-\d\d", folder.name)[0],
        "gpu": {"name": smi[0], "sm_count": torch["sms"], "driver": smi[1], "cuda": nvcc[1],
                "ptx_arch": re.search(r"for '(sm_\w+)'", ptx)[1]},
        # No report ran in this device call: the percentages are of cuMemcpyDtoD timed in each criterion group.
        "roofs": {"copy_gb_per_s": None, "fma_tflop_per_s": None, "tf32_tflop_per_s": None, "dram_spec_gb_per_s": None},
        "timings": criterion(folder) + pytorch(torch),
        "ncu": ncu(read("ncu.txt")),
        "ptxas": ptxas(ptx),
        "sanitizer": sanitizer(read("sanitizer.log")),
        "tests": [{"binary": BINARY, **result(tests)}],
        "values": {
            "accuracy": accuracy,
            "dispatch": dispatch,
            "torch": {"version": torch["torch"], "cuda": torch["cuda"], "gpu": torch["gpu"]},
            "torch_special_values": [{"case": k, **v} for k, v in torch["semantics"].items()],
            "nvidia_smi": {"memory_total_mib": int(smi[2].split()[0]), "sm_clock_mhz": int(smi[3].split()[0]),
                           "memory_clock_mhz": int(smi[4].split()[0]), "max_sm_clock_mhz": int(smi[5].split()[0])},
            "nvcc": {"version": nvcc[2], "build": nvcc[3]},
        },
    }
    (folder / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    print(f"{folder / 'run.json'}: {len(run['timings'])} timings, {len(run['ncu'])} ncu launches, "
          f"{len(run['ptxas'])} ptxas entries, {len(accuracy)} accuracy lines")


if __name__ == "__main__":
    main()
