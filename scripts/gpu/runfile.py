#!/usr/bin/env python3
"""Writes one device call's run file, `run.json` (docs/contributing.md's
schema), from the structured files its scripts left in a folder:

    python3 scripts/gpu/runfile.py --to RUN_JSON --made-by "bash scripts/gpu/run.sh" [--criterion DIR] [--ptxas FILE]
                                   [--log FILE ..] FOLDER ..

Read from the folders (scripts/gpu/lib.sh's $RUN and $OUT), each where present:
  report.json or report/report.json  the report binary's roofs and timings (--out)
  any *.json with a `timings` list   PyTorch's and cuBLAS's timings (scripts/gpu/peers); a file of one
                                     name counts once, from the first folder that has it
  ncu*.csv                           ncu --csv --print-units base: one `ncu` entry per launch, those of
                                     ncu.csv labelled from ncu-labels.txt (a line per launch, in order);
                                     an unlabelled kernel of several launches in one file: `launch <n>`
  sanitizer.jsonl, tests.jsonl       a line per tool and test binary (scripts/gpu/lib.sh)
  any *.json with a `values` object  named figures (PyTorch's version, an example's figures)
  tests.log (and each --log FILE)    `VALUE name json` (sets), `VALUE[] name json` (appends) and
                                     `VALUE{} name key json` (one entry) lines the tests or examples
                                     printed, and `TIMING json` lines, each one timing of the run file
and with --criterion, criterion's folder (CRITERION_HOME): one timing per
benchmark, its bootstrap median (TFLOP/s where its throughput is Elements:
benches/gemm.rs counts 2 M N K), and the value `criterion_mean`, each
benchmark's mean with its 95% interval; with --ptxas, `ptxas -v`'s registers,
stack and spills per entry. The GPU, its driver and CUDA come from nvidia-smi and
nvcc, the commit from .gpu/commit (build.sh)."""
import argparse, collections, csv, datetime, json, pathlib, re, subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]


def command(*args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""


def gpu(report, nvcc):
    """The run file's `gpu`: nvidia-smi's name and driver, the CUDA release
    of `nvcc --version` (`nvcc`), the report's SMs and PTX target."""
    smi = command("nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader").splitlines()
    name, driver = ([s.strip() for s in smi[0].split(",")] + [None])[:2] if smi else (None, None)
    cuda = re.search(r"release ([\d.]+)", nvcc)
    return {"name": name or (report or {}).get("gpu"), "sm_count": (report or {}).get("sm_count"), "driver": driver,
            "cuda": cuda.group(1) if cuda else None, "ptx_arch": (report or {}).get("ptx_arch")}


def machine(nvcc):
    """The machine's own figures for the pages' "Machine" blocks: nvidia-smi's
    memory and clocks, and the version and build of `nvcc --version`
    (`nvcc`); {} where neither runs."""
    out = {}
    smi = command("nvidia-smi", "--query-gpu=memory.total,clocks.current.sm,clocks.current.memory,clocks.max.sm",
                  "--format=csv,noheader,nounits").split(",")
    if len(smi) == 4:
        keys = ("memory_total_mib", "sm_clock_mhz", "memory_clock_mhz", "max_sm_clock_mhz")
        out["nvidia_smi"] = dict(zip(keys, (int(x) for x in smi)))
    found = re.search(r"release [\d.]+, (\S+)\nBuild (\S+)", nvcc)
    if found:
        out["nvcc"] = {"version": found[1], "build": found[2]}
    return out


def printed(log, out, timings):
    """The `VALUE` lines of a log into `out`, its `TIMING` lines onto `timings`, in order."""
    for line in log.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "TIMING":
            timings.append(json.loads(rest))
        elif kind == "VALUE":
            name, _, value = rest.partition(" ")
            out[name] = json.loads(value)
        elif kind == "VALUE[]":
            name, _, value = rest.partition(" ")
            out.setdefault(name, []).append(json.loads(value))
        elif kind == "VALUE{}":
            name, key, value = rest.split(" ", 2)
            out.setdefault(name, {})[key] = json.loads(value)


def libtest(log, missing_fails=True):
    """The counts of libtest's last summary (`test result: ...`) in a log
    (scripts/gpu/lib.sh's verdicts); none found reads as one failure, or
    without `missing_fails` as none."""
    found = re.findall(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured; (\d+) filtered "
                       r"out; finished in ([\d.]+)s", log)
    if not found and not missing_fails:
        return {}
    *counts, seconds = found[-1] if found else (0, 1, 0, 0, 0, 0)
    return {**dict(zip(("passed", "failed", "ignored", "measured", "filtered_out"), map(int, counts))),
            "seconds": float(seconds)}


def report_timings(report):
    return [{"source": "report", "op": r["op"], "kernel": r["kernel"], "shape": r["shape"], "statistic": "median",
             "ms": r["median_ms"], "reps": r["reps"], "bytes": r["bytes"], "flops": r["flops"],
             "warmup_ms": report.get("warmup_ms")} for r in report["rows"]]


# benches/*.rs's criterion groups: (pattern, its timings' op, shape and kernel
# from the match and the function id `f`), as the pages read them.
GROUPS = [
    (r"transpose_(\d+x\d+)(_\w+)?", lambda m, f: ("transpose", m[1], f)),
    (r"softmax_(\d+x\d+)", lambda m, f: ("softmax", m[1], f)),
    (r"softmax_len_(\d+)", lambda m, f: ("softmax_len", m[1], f)),
    (r"nested_sin_2_28", lambda m, f: ("nested_sin", "2^28", f)),
    (r"nested_sin_1024", lambda m, f: ("nested_sin", "1024", f)),
    (r"nested_sin_1024_end_to_end", lambda m, f: (m[0], "1024", f)),
    (r"gemm_(\d+)", lambda m, f: ("gemm", f"{m[1]}x{m[1]}x{m[1]}", f)),
    (r"gemm_shapes", lambda m, f: ("gemm_shapes", f, "sgemm")),
    (r"gemm_(\w+)_shapes", lambda m, f: ("gemm_shapes", f, f"wgmma_{m[1]}")),
]


def criterion_timings(folder, means):
    """criterion's `new/estimates.json` per benchmark, its bootstrap median
    (and into `means` its mean); a group of no known pattern keeps its name
    as the op."""
    out = []
    for est in sorted(pathlib.Path(folder).glob("**/new/estimates.json")):
        bench = json.loads((est.parent / "benchmark.json").read_text())
        group, f = bench["group_id"], bench.get("function_id") or bench.get("value_str") or ""
        op, shape, kernel = next((rule(m, f) for pattern, rule in GROUPS if (m := re.fullmatch(pattern, group))),
                                 (group, "", f))
        tp = bench.get("throughput") or {}
        # Samples, and the launches they timed in all.
        sample = est.parent / "sample.json"
        iters = json.loads(sample.read_text())["iters"] if sample.is_file() else []
        est = json.loads(est.read_text())
        mean = est["mean"]["confidence_interval"]
        means[f"{group}/{f}"] = {"mean_ms": est["mean"]["point_estimate"] / 1e6, "low_ms": mean["lower_bound"] / 1e6,
                                 "high_ms": mean["upper_bound"] / 1e6}
        out.append({"source": "criterion", "op": op, "kernel": kernel, "shape": shape, "group": group,
                    "statistic": "median", "ms": est["median"]["point_estimate"] / 1e6,
                    "bytes": tp.get("Bytes") or tp.get("BytesDecimal"), "flops": tp.get("Elements"),
                    "samples": len(iters) or None, "reps": int(sum(iters)) or None})
    return out


def ncu_launches(path, labels):
    """ncu's CSV (one row per metric) -> one entry per launch, in launch order."""
    launches = {}
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(line for line in f if line.startswith('"'))]
    head = rows[0] if rows else []
    for r in rows[1:]:
        r = dict(zip(head, r))
        entry = launches.setdefault(r["ID"], {"kernel": r["Kernel Name"].split("(")[0].strip(), "label": None,
                                              "metrics": {}})
        try:
            entry["metrics"][r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
        except ValueError:
            entry["metrics"][r["Metric Name"]] = r["Metric Value"]
    out = [launches[k] for k in sorted(launches, key=int)]
    for entry, label in zip(out, labels):
        entry["label"] = label or None
    counts = collections.Counter(e["kernel"] for e in out)
    seen = {}
    for entry in out:
        if entry["label"] is None and counts[entry["kernel"]] > 1:
            seen[entry["kernel"]] = seen.get(entry["kernel"], 0) + 1
            entry["label"] = f"launch {seen[entry['kernel']]}"
    return out


def ptxas(path):
    """`ptxas -v` -> {entry: registers, stack, spill stores, spill loads}."""
    out, name = {}, None
    for line in pathlib.Path(path).read_text().splitlines():
        if m := re.search(r"entry function '(\w+)'", line):
            name = m.group(1)
        elif name and (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)):
            out.setdefault(name, {}).update(stack=int(m[1]), spill_stores=int(m[2]), spill_loads=int(m[3]))
        elif name and (m := re.search(r"Used (\d+) registers", line)):
            out.setdefault(name, {})["registers"] = int(m[1])
    return out


def lines(path):
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()] if path.is_file() else []


def find(folders, *names):
    """The first of `names` (paths under a folder) in the first folder that has it."""
    return next((f / n for f in folders for n in names if (f / n).is_file()), None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", type=pathlib.Path, nargs="+")
    ap.add_argument("--to", type=pathlib.Path, required=True, help="the run file to write")
    ap.add_argument("--made-by", required=True, help="the command that made the device call's files")
    ap.add_argument("--criterion", help="criterion's folder (CRITERION_HOME)")
    ap.add_argument("--ptxas", help="`ptxas -v` of the PTX that ran")
    ap.add_argument("--log", type=pathlib.Path, action="append", default=[],
                    help="a log whose VALUE and TIMING lines count, besides tests.log")
    args = ap.parse_args()
    report = find(args.folders, "report.json", "report/report.json")
    report = json.loads(report.read_text()) if report else None
    timings = report_timings(report) if report else []
    nvcc = command("nvcc", "--version")
    values = machine(nvcc)
    jsons = {}
    for p in (p for f in args.folders for p in sorted(f.glob("*.json"))):
        jsons.setdefault(p.name, p)  # a file copied into two folders counts once
    for name, p in sorted(jsons.items()):
        data = json.loads(p.read_text()) if name not in ("run.json", "report.json") else {}
        if isinstance(data, dict) and isinstance(data.get("timings"), list):
            timings += data["timings"]
        if isinstance(data, dict) and isinstance(data.get("values"), dict):
            values.update(data["values"])
    if args.criterion:
        timings += criterion_timings(args.criterion, values.setdefault("criterion_mean", {}))
    labels, log = find(args.folders, "ncu-labels.txt"), find(args.folders, "tests.log")
    for path in ([log] if log else []) + args.log:
        printed(path.read_text(errors="replace"), values, timings)
    labels = labels.read_text().splitlines() if labels else []
    ncu = [launch for f in args.folders for p in sorted(f.glob("ncu*.csv"))
           for launch in ncu_launches(p, labels if p.name == "ncu.csv" else [])]
    commit = (ROOT / ".gpu" / "commit").read_text().strip() if (ROOT / ".gpu" / "commit").is_file() else "unknown"
    run = {"schema": 1, "made_by": args.made_by, "commit": commit, "date": datetime.date.today().isoformat(),
           "gpu": gpu(report, nvcc), "roofs": report["roofs"] if report else {}, "timings": timings,
           "ncu": ncu,
           "ptxas": ptxas(args.ptxas) if args.ptxas else {},
           "sanitizer": [l for f in args.folders for l in lines(f / "sanitizer.jsonl")],
           "tests": [l for f in args.folders for l in lines(f / "tests.jsonl")],
           "values": values}
    args.to.write_text(json.dumps(run, indent=1) + "\n")
    print(f"{args.to}: {len(timings)} timings, {len(run['ncu'])} ncu launches, "
          f"{len(run['sanitizer'])} sanitizer verdicts, {len(run['tests'])} test binaries")


if __name__ == "__main__":
    main()
