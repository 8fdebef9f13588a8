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
