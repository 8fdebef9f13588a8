#!/usr/bin/env python3
"""Checks scripts/gpu/runfile.py without a GPU: from a folder of the inputs
the GPU scripts leave (the report's report.json, criterion's files, a peers
JSON, ncu's CSV, the verdicts' JSON lines, a test's VALUE lines), it must
write a run file that scripts/docs/pages.py reads (schema 1) with each
figure where the pages look for it.

    python3 scripts/gpu/test_runfile.py      # exits 1 on a mismatch (scripts/docs/check.sh runs it)
"""
import json, math, pathlib, subprocess, sys, tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "docs"))
import pages  # noqa: E402

REPORT = {"gpu": "NVIDIA H200", "sm_count": 132, "ptx_arch": "sm_90a", "warmup_ms": 500.0,
          "roofs": {"copy_gb_per_s": 4200.0, "fma_tflop_per_s": 62.5, "tf32_tflop_per_s": 476.0,
                    "dram_spec_gb_per_s": 4814.3},
          "rows": [{"op": "transpose", "kernel": "vec4_cols", "shape": "8192x8192", "median_ms": 0.133, "reps": 50,
                    "bytes": 536870912, "flops": 0}]}
NCU = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
       '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
       '"0","1","t","h","softmax_warp32","1","7","(256, 1, 1)","(8192, 1, 1)","0","9.0","m","dram__bytes_read.sum",'
       '"byte","268,435,456"\n')


def write(folder):
    (folder / "report").mkdir()
    (folder / "report" / "report.json").write_text(json.dumps(REPORT))
    bench = folder / "criterion" / "softmax_65536x1024" / "warp32" / "new"
    bench.mkdir(parents=True)
    (bench / "benchmark.json").write_text(json.dumps(
        {"group_id": "softmax_65536x1024", "function_id": "warp32", "throughput": {"Bytes": 536870912}}))
    (bench / "estimates.json").write_text(json.dumps({"median": {"point_estimate": 131200.0}}))
    (bench / "sample.json").write_text(json.dumps({"iters": [63.0, 126.0, 189.0], "times": [1.0, 2.0, 3.0]}))
    (folder / "torch_softmax.json").write_text(json.dumps({
        "values": {"torch": {"version": "2.11.0"}},
        "timings": [{"source": "pytorch", "op": "softmax", "kernel": "torch.softmax", "shape": "65536x1024",
                     "statistic": "median", "ms": 0.1436, "bytes": 536870912}]}))
    # The same file in the second folder (a copy) counts once.
    (folder / "out").mkdir()
    (folder / "out" / "torch_softmax.json").write_text((folder / "torch_softmax.json").read_text())
    (folder / "ncu.csv").write_text("==PROF== Connected\n" + NCU)
    (folder / "ncu-labels.txt").write_text("warp32 on 65536x1024\n")
    (folder / "sanitizer.jsonl").write_text(json.dumps(
        {"tool": "memcheck", "binary": "test-softmax", "errors": 0, "summary": "ERROR SUMMARY: 0 errors"}) + "\n")
    (folder / "tests.jsonl").write_text(json.dumps({"binary": "test-softmax", "passed": 17, "failed": 0}) + "\n")
    (folder / "tests.log").write_text(
        'VALUE[] accuracy {"kernel": "warp32", "shape": "65536x1024", "max_ulp_near_max": 2.66}\n'
        'VALUE{} dispatch 65536x1024 "warp32"\n')


def main():
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp) / "2099-01-01-test"
        folder.mkdir()
        write(folder)
        subprocess.run([sys.executable, str(ROOT / "scripts/gpu/runfile.py"), "--to", str(folder / "run.json"),
                        "--made-by", "scripts/gpu/test_runfile.py", "--criterion", str(folder / "criterion"),
                        str(folder), str(folder / "out")], check=True, stdout=subprocess.DEVNULL)
        pages.RUNS = pathlib.Path(tmp)
        run = pages.Run(folder.name)  # the schema check
        crit = run.t("warp32", "65536x1024", "criterion", "softmax")
        checks = {
            "the report's timing and roof":
                math.isclose(run.t("vec4_cols", "8192x8192").pct, 100 * 536870912 / 0.133e6 / 4200),
            "criterion's median, samples and launches":
                math.isclose(crit.ms, 0.1312) and (crit.samples, crit.reps) == (3, 378),
            "PyTorch's timing": run.t("torch.softmax", "65536x1024", "pytorch").ms == 0.1436,
            "ncu's metric, labelled": run.ncu("softmax_warp32", "warp32 on 65536x1024")["dram__bytes_read.sum"]
            == 268435456,
            "the verdicts": (run.sanitizer[0]["errors"], run.tests[0]["passed"]) == (0, 17),
            "the values": (run.value("torch")["version"], run.value("dispatch"), run.value("accuracy")[0]["kernel"])
            == ("2.11.0", {"65536x1024": "warp32"}, "warp32"),
        }
    bad = [name for name, ok in checks.items() if not ok]
    for name in bad:
        print(f"scripts/gpu/runfile.py: {name} not where the pages read it", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
