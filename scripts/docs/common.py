"""What the page generators share: the registry, ptxas -v reports, and the
ladder's step sections."""
import json, pathlib, re

ROOT = pathlib.Path(__file__).resolve().parents[2]
REGISTRY = json.loads((ROOT / "docs/registry.json").read_text())
NO_FRAME = "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"


def steps(op):
    """The op's steps from docs/registry.json, in teaching order."""
    return next(o["steps"] for o in REGISTRY if o["op"] == op)


def ptxas(text):
    """`ptxas -v` output -> ({entry: registers}, {entry: stack/spill line})."""
    regs, frames, name = {}, {}, None
    for line in text.splitlines():
        m = re.search(r"entry function '(\w+)'", line)
        if m:
            name = m.group(1)
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            regs[name] = int(m.group(1))
        if "stack frame" in line and name:
            frames[name] = line.strip()
    return regs, frames


def step_sections(w, steps, measured, why):
    """One `### <step>. <name>` section per step: the registry's file and
    idea, `measured(name)` in bold, then `why[name]()`."""
    for s in steps:
        file = s["file"].removeprefix("kernels/src/")
        w(f"### {s['step']}. {s['name']}\n")
        w(f"`{s['name']}` ([`{file}`](../{s['file']})): {s['idea']}. **{measured(s['name'])}.** {why[s['name']]()}\n")


def parse_ncu(text):
    """ncu's report -> {kernel: {metric or section row: value}} for the first
    launch of each kernel; bytes in bytes, times in microseconds."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^  ([A-Za-z_0-9]+) \(\d+, \d+, \d+\)x", line)
        if m:
            cur = m.group(1) if m.group(1) not in out else None
            if cur:
                out[cur] = {}
            continue
        if not cur:
            continue
        m = re.match(r"^\s+([a-z0-9_]+__\S+)\s+(\S+\s+)?([\d,.]+)$", line)
        if m:
            unit = (m.group(2) or "").strip()
            scale = {"Gbyte": 1e9, "Mbyte": 1e6, "Kbyte": 1e3}.get(unit, 1)
            out[cur][m.group(1)] = float(m.group(3).replace(",", "")) * scale
            continue
        m = re.match(r"^\s{4}(\S.*?)\s{2,}(\S+\s+)?([\d,.]+)$", line)
        if m:
            # Times in microseconds, whatever unit ncu chose.
            scale = {"s": 1e6, "ms": 1e3, "us": 1, "ns": 1e-3}.get((m.group(2) or "").strip(), 1)
            out[cur].setdefault(m.group(1).strip(), float(m.group(3).replace(",", "")) * scale)
    return out
