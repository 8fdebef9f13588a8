"""What the page generators share: the registry, ptxas -v reports, and the
ladder's step sections."""
import json, pathlib, re

ROOT = pathlib.Path(__file__).resolve().parents[2]
REGISTRY = json.loads((ROOT / "docs/registry.json").read_text())
NO_FRAME = "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"


UNMEASURED = {}


def steps(op, run=None):
    """The op's steps from docs/registry.json, in teaching order. With a run
    folder, only those it measured (a bench in criterion_medians.json named
    for the step, or for it and a suffix; or its `.entry` in the run's
    `ptxas -v` report); the rest wait in UNMEASURED[op] for `not_measured`,
    so that a new step has a page before it has a run."""
    every = next(o["steps"] for o in REGISTRY if o["op"] == op)
    if run is None:
        return every
    benches = {k.split("/")[-1] for k in json.loads((run / "criterion_medians.json").read_text())}
    built = (run / "ptxas.txt").read_text() if (run / "ptxas.txt").exists() else ""
    measured = lambda s: any(b == s["name"] or b.startswith(s["name"] + "_") for b in benches) \
        or f"'{s['entry']}'" in built
    UNMEASURED[op] = [s for s in every if not measured(s)]
    return [s for s in every if measured(s)]


def not_measured(w, op):
    """A section for each step of `op` that the page's run did not measure."""
    for s in UNMEASURED.get(op, []):
        file = s["file"].removeprefix("kernels/src/")
        w(f"### {s['step']}. {s['name']}\n")
        w(f"`{s['name']}` ([`{file}`](../{s['file']})): {s['idea']}. **Not measured**: the run this page "
          "comes from has no figures for it yet.\n")
        w(pictures(op, s["name"]))


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


def step_sections(w, steps, measured, why, op=None):
    """One `### <step>. <name>` section per step: the registry's file and
    idea, `measured(name)` in bold, then `why[name]()`, then the step's
    pictures (`pictures(op, name)`) when `op` is given."""
    for s in steps:
        file = s["file"].removeprefix("kernels/src/")
        w(f"### {s['step']}. {s['name']}\n")
        w(f"`{s['name']}` ([`{file}`](../{s['file']})): {s['idea']}. **{measured(s['name'])}.** {why[s['name']]()}\n")
        if op:
            w(pictures(op, s["name"]))


PICTURES = pathlib.Path(__file__).resolve().parents[2] / "docs" / "pictures"


def pictures(op, kernel):
    """Markdown for the emulator's pictures of `kernel` in docs/pictures/<op>/
    (`--emulate --pictures docs/pictures`): its summary, and one warp's
    request at each of its lines, folded. Empty when it has none."""
    folder = PICTURES / op
    summary = folder / f"{kernel}.svg"
    if not summary.exists():
        return ""
    lines = sorted(folder.glob(f"{kernel}-*.svg"))
    out = [f"![{op} {kernel}: requests at each line, counted by the emulator](pictures/{op}/{summary.name})\n",
           "<details><summary>One warp's request at each line, drawn from the emulator's trace</summary>\n"]
    out += [f"![{op} {kernel}: {p.stem.removeprefix(kernel + '-')}](pictures/{op}/{p.name})\n" for p in lines]
    out.append("</details>\n")
    return "\n".join(out)


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


# ---- the emulator's counters beside ncu's ------------------------------------

# (column title, the emulator's op name in counters.json, ncu's transactions
# and requests metrics): ncu counts global requests and sectors at L1, and
# shared-memory wavefronts per shared instruction executed.
COUNTER_COLUMNS = [
    ("global ld sectors / request", "global ld",
     "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
    ("global st sectors / request", "global st",
     "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
    ("shared st wavefronts / request", "shared st",
     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "smsp__inst_executed_op_shared_st.sum"),
    ("shared ld wavefronts / request", "shared ld",
     "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "smsp__inst_executed_op_shared_ld.sum"),
]


def emulator_counters(path):
    """counters.json (`--emulate --counters --counters-json`) ->
    {(op, kernel, shape): {"shape": .., "totals": {access: tally}}}; with
    one shape per kernel, (op, kernel, None) finds it too."""
    data = json.loads(pathlib.Path(path).read_text())
    out = {(k["op"], k["kernel"], k["shape"]): k for k in data["kernels"]}
    for k in data["kernels"]:
        if sum(1 for o, n, _ in out if (o, n) == (k["op"], k["kernel"])) == 1:
            out[(k["op"], k["kernel"], None)] = k
    return out


def counters_table(w, emu, rows):
    """The emulator-against-ncu table: `rows` is [(label, emulator entry of
    emulator_counters(), ncu's metrics of the launch)]. Each cell reads
    `emulator / ncu`; a pair more than 10% apart is marked, and the marked
    cells are returned as [(label, column, emulator, ncu)] for the page to
    explain."""
    w("| kernel | emulator shape | " + " | ".join(c[0] for c in COUNTER_COLUMNS) + " |")
    w("|" + " --- |" * (len(COUNTER_COLUMNS) + 2))
    apart = []
    for label, e, n in rows:
        cells = []
        for title, access, tx, req in COUNTER_COLUMNS:
            # ncu's global loads include cp.async's global side (LDGSTS).
            parts = [e["totals"][a] for a in ([access] + (["cp.async ld"] if access == "global ld" else []))
                     if a in e["totals"]]
            mine = sum(t["transactions"] for t in parts) / sum(t["requests"] for t in parts) if parts else None
            theirs = n[tx] / n[req] if n.get(req) else None
            if mine is None and theirs is None:
                cells.append("-")
                continue
            fmt = lambda x: "-" if x is None else f"{x:.2f}"
            far = mine is None or theirs is None or abs(mine - theirs) > 0.1 * max(mine, theirs)
            if far:
                apart.append((label, title, mine, theirs))
            cells.append(f"{fmt(mine)} / {fmt(theirs)}" + (" **\\***" if far else ""))
        w(f"| `{label}` | {e['shape']} | " + " | ".join(cells) + " |")
    return apart
