#!/usr/bin/env python3
"""Compares the report.json files that scripts/gpu/ab.sh wrote: for every
(op, kernel, size) row, the median of the new build's per-pass medians over
the base build's. Prints one line per row and the range of the ratios.

    python3 scripts/gpu/ab.py <ab folder>"""
import json, pathlib, statistics, sys

root = pathlib.Path(sys.argv[1])
runs = {"base": [], "new": []}
for d in sorted(root.iterdir()):
    if d.is_dir() and (d / "report.json").exists():
        runs[d.name.split("-")[0]].append(json.loads((d / "report.json").read_text()))


def medians(reports):
    by = {}
    for r in reports:
        for row in r["rows"]:
            by.setdefault((row["op"], row["kernel"], row["shape"]), []).append(row["median_ms"])
    return {k: statistics.median(v) for k, v in by.items()}


base, new = medians(runs["base"]), medians(runs["new"])
print(f"{len(runs['base'])} base and {len(runs['new'])} new passes; new / base time, median over passes")
ratios = []
for key in base:
    if key in new:
        r = new[key] / base[key]
        ratios.append(r)
        print(f"{key[0]:<11}{key[1]:<24}{key[2]:<14}{base[key]:>11.4f} ms{new[key]:>11.4f} ms{r:>8.3f}")
if ratios:
    print(f"range {min(ratios):.3f} .. {max(ratios):.3f} over {len(ratios)} rows")
