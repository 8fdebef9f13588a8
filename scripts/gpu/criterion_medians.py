#!/usr/bin/env python3
"""Criterion's median per benchmark, as JSON: criterion_medians.py CRITERION_DIR > OUT.json

CRITERION_DIR is criterion's output folder (CRITERION_HOME on the GPU machine,
shipped back as criterion.tgz). For each benchmark: the median time per
iteration in ns (criterion's bootstrap estimate of the median) and, where the
group set Throughput::Bytes, decimal GB/s at that median."""
import json, pathlib, sys

root = pathlib.Path(sys.argv[1])
out = {}
for est in sorted(root.glob("**/new/estimates.json")):
    bench = json.loads((est.parent / "benchmark.json").read_text())
    median_ns = json.loads(est.read_text())["median"]["point_estimate"]
    row = {"median_ns": median_ns}
    tp = bench.get("throughput") or {}
    b = tp.get("Bytes") or tp.get("BytesDecimal")
    if b:
        row["bytes"] = b
        row["gb_per_s"] = b / median_ns
    out[bench["full_id"]] = row
json.dump(out, sys.stdout, indent=1)
print()
