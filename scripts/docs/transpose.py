#!/usr/bin/env python3
"""Writes docs/transpose.md from GPU runs' files and the registry.

    python3 scripts/docs/transpose.py docs/measurements/<run> [<run on another GPU> ..] > docs/transpose.md

The page is written from the first run; each further run (another GPU's
scripts/gpu/run.sh, the same files) adds its column to the "Every GPU"
section: its report.json (the GPU's name, its `cuMemcpyDtoD` roof, its
DRAM spec where the report has it) and torch_peers.json. With no further
run the page has no such section.

The steps (order, names, files, ideas) come from docs/registry.json. The run
folder holds what scripts/gpu/run.sh brought back: report.json (median of N
CUDA-event timings per kernel and shape), criterion_medians.json
(scripts/gpu/criterion_medians.py over criterion.tgz), ncu.txt (counters at
8192x8192), torch_peers.json (PyTorch, same call), tests.log (the machine up
to its first `###` line: commit, nvidia-smi, nvcc; then every test binary's
output) and counters.json (the emulator's counters, which docs/softmax.md
reads from here too). Every number in the page comes from those files."""
import json, pathlib, re, sys
from common import counters_table, emulator_counters, page, parse_ncu, pictures, step_sections, not_measured, steps
from common import commit_of, dram_spec, gpu_name, gpu_table, l2_mb, report_json, run_link, share

run = pathlib.Path(sys.argv[1])
others = [pathlib.Path(a) for a in sys.argv[2:]]
STEPS = steps("transpose", run)
crit = json.loads((run / "criterion_medians.json").read_text())
machine = (run / "tests.log").read_text().split("\n###", 1)[0].strip()  # the lines before the first test binary's
commit = commit_of(machine)
NAMES = [s["name"] for s in STEPS]

# ---- report.json: median GB/s per (kernel, shape) --------------------------
def measured(folder):
    """One run folder's report.json, its shapes of the copy and transpose
    kernels in the report's order, its rows of them by (kernel, shape), and
    its PyTorch peers (torch_peers.json)."""
    report, shapes, by = report_json(folder), [], {}
    for r in report["rows"]:
        if r["op"] not in ("transpose", "copy"):
            continue
        s = tuple(int(x) for x in r["shape"].split("x"))
        if s not in shapes:
            shapes.append(s)
        by[(r["kernel"], s)] = r
    return report, shapes, by, json.loads((folder / "torch_peers.json").read_text())


report, shapes, by, torch = measured(run)


def torch_gbs(s, torch=torch):
    return torch.get(f"torch_transpose_{s[0]}_GBs") if s[0] == s[1] else None


ncu = parse_ncu((run / "ncu.txt").read_text())


def counters(kernel):
    c = ncu[kernel]
    ld_req = c["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
    st_req = c["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"]
    sh_ld = c["smsp__inst_executed_op_shared_ld.sum"]
    wf = c["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
    return {
        "ld_sectors": c["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] / ld_req,
        "st_sectors": c["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"] / st_req,
        "dram_mb": c["dram__bytes.sum"] / 1e6,
        "smem_wavefronts": wf / sh_ld if sh_ld else None,
    }


def f(x, nd=0):
    return "-" if x is None else f"{x:,.{nd}f}"


def entry(name):
    return next(s["entry"] for s in STEPS if s["name"] == name)


def cnt(name, key, nd=1):
    return f(counters(entry(name))[key], nd)


BIG = (8192, 8192)
# A change in a step's share of the copy within this many points is noise (for
# order_gain and against_padding alike).
NOISE_POINTS = 1.0
# A warp's 32 scalar floats, contiguous, span this many 32-byte sectors: a
# request that moves no more is fully coalesced.
COALESCED_SECTORS = 32 * 4 // 32


def gbs(k, s=BIG):
    r = by[(k, s)]
    return f"{r['gb_per_s']:,.0f} GB/s ({r['percent_of_roof']:.1f}% of the copy)"


ideal_mb = 2 * 4 * BIG[0] * BIG[1] / 1e6
L2_MB = l2_mb(report["gpu"])
smallest_mb = min(2 * 4 * r * c for r, c in shapes) / 1e6
assert smallest_mb > L2_MB, f"transpose: the smallest shape moves {smallest_mb:.0f} MB, not past the {L2_MB} MB L2"
P, w = page("transpose.py", "Transpose: memory coalescing and bank conflicts, measured", run, *others)
w(f"GPU: **{report['gpu']}** ({report['sm_count']} SMs), PTX for {report['ptx_arch']}, commit `{commit}`. "
  "Times are medians of CUDA-event timings after warm-up; GB/s counts bytes read + written "
  f"(2 x 4 x rows x cols) in decimal units; every shape is past the {L2_MB} MB L2, so these are DRAM figures. "
  "PyTorch is `b.copy_(a.t())` from scripts/gpu/peers report, run in the same device call.\n")
w("Reproduce:\n")
w("```sh\nscripts/gpu/build.sh                     # here: release binaries -> .gpu/\n"
  "bash scripts/gpu/run.sh                  # on the GPU machine, .gpu/ carried; files land in $OUT\n"
  "python3 scripts/gpu/criterion_medians.py <criterion dir from criterion.tgz> > <run>/criterion_medians.json\n"
  f"python3 scripts/docs/transpose.py <run>{' <run on each other GPU>' if others else ''} > docs/transpose.md\n```\n")

reps = {r["reps"] for (k, s), r in by.items()}
w(f"## Bandwidth (main report, median of {'/'.join(map(str, sorted(reps)))} runs)\n")
w("| step | kernel | " + " | ".join(f"{r}x{c}" for r, c in shapes) + " |")
w("|" + " --- |" * (len(shapes) + 2))
for st in [{"step": "-", "name": "copy kernel"}] + STEPS:
    k, cells = st["name"], []
    for s in shapes:
        r = by[(k, s)]
        t = torch_gbs(s)
        x = f", {r['gb_per_s'] / t:.2f}x PyTorch" if t and k != "copy kernel" else ""
        cells.append(f"{r['gb_per_s']:,.0f} GB/s ({r['percent_of_roof']:.1f}%{x})")
    w(f"| {st['step']} | `{k}` | " + " | ".join(cells) + " |")
tl = " | ".join(f"{torch_gbs(s):,.0f} GB/s" if torch_gbs(s) else "-" for s in shapes)
w(f"| | PyTorch `b.copy_(a.t())` | {tl} |")
w(f"\nPercentages are of `cuMemcpyDtoD` of 1 GiB ({report['roofs']['copy_gb_per_s']:,.0f} GB/s), timed the same way "
  "in the same run.\n")


# ---- every GPU: the first run and each further one ---------------------------
def gpu_figures(folder):
    """One run folder's figures for the "Every GPU" table: its GPU's name,
    its report's rows and shapes, its PyTorch peers, its `cuMemcpyDtoD` of 1
    GiB and its DRAM spec (GB/s; None where the report lacks it)."""
    rep, shp, rows, peers = measured(folder)
    return {"folder": folder, "gpu": gpu_name(folder), "shapes": shp, "by": rows, "torch": peers,
            "roof": rep["roofs"]["copy_gb_per_s"], "spec": dram_spec(folder)}


def of_roof(g, k, s):
    """Kernel k's share of its GPU's `cuMemcpyDtoD` at shape s, in %."""
    return 100 * g["by"][(k, s)]["gb_per_s"] / g["roof"]


if others:
    GPUS = [gpu_figures(f) for f in [run] + others]
    shared = [s for s in shapes if all(s in g["shapes"] for g in GPUS)]
    if not shared:
        raise SystemExit("transpose.py: the runs share no shape")
    w("## Every GPU\n")
    w("Each GPU's figures come from one device call (its run folder: " + ", ".join(run_link(g["folder"]) for g in GPUS)
      + "), PyTorch in the same call, at the shapes every run measured. Cells: GB/s (the report's median), % of that "
      "GPU's `cuMemcpyDtoD` of 1 GiB, and % of its DRAM spec where the run's report has the figure.\n")
    gpu_table(w, ["shape", "kernel"], [g["gpu"] for g in GPUS])
    w("| 1 GiB | `cuMemcpyDtoD` (the roof) | " + " | ".join(share(g["roof"], g["roof"], g["spec"]) for g in GPUS) + " |")
    for s in shared:
        for k, label in [("copy kernel", "our copy kernel")] + [(n, f"`{n}`") for n in NAMES]:
            w(f"| {s[0]}x{s[1]} | {label} | " + " | ".join(
                share(g["by"][(k, s)]["gb_per_s"], g["roof"], g["spec"]) if (k, s) in g["by"] else "-" for g in GPUS) + " |")
        if any(torch_gbs(s, g["torch"]) for g in GPUS):
            w(f"| {s[0]}x{s[1]} | PyTorch `b.copy_(a.t())` | " + " | ".join(
                share(torch_gbs(s, g["torch"]), g["roof"], g["spec"]) if torch_gbs(s, g["torch"]) else "-" for g in GPUS)
              + " |")
    w("")
    first, big = GPUS[0], max(shared, key=lambda s: s[0] * s[1])
    for g in GPUS[1:]:
        both = [(k, s) for s in shared for k in NAMES if (k, s) in g["by"] and (k, s) in first["by"]]
        best = max((k for k, s in both if s == big), key=lambda k: g["by"][(k, big)]["gb_per_s"])
        lacks = [k for k in NAMES if (k, big) not in g["by"]]
        apart = max(both, key=lambda ks: abs(of_roof(g, *ks) - of_roof(first, *ks)))
        t = torch_gbs(big, g["torch"])
        w(f"On the {g['gpu']} `cuMemcpyDtoD` moves {g['roof']:,.0f} GB/s, {g['roof'] / first['roof']:.2f}x the "
          f"{first['gpu']}'s" + (f" ({100 * g['roof'] / g['spec']:.1f}% of its DRAM spec)" if g["spec"] else "")
          + f". At {big[0]}x{big[1]} `{best}` is its fastest step"
          + (f" of those its run has (it predates {', '.join(f'`{k}`' for k in lacks)})" if lacks else "")
          + f", at {of_roof(g, best, big):.1f}% of that copy "
          f"(the {first['gpu']}: {of_roof(first, best, big):.1f}%)"
          + (f", {g['by'][(best, big)]['gb_per_s'] / t:.2f}x PyTorch" if t else "")
          + f"; `{NAMES[0]}` reaches {of_roof(g, NAMES[0], big):.1f}% ({of_roof(first, NAMES[0], big):.1f}%). Each "
          f"step's share of its GPU's copy is within {abs(of_roof(g, *apart) - of_roof(first, *apart)):.1f} points of "
          f"the {first['gpu']}'s (the widest gap: `{apart[0]}` at {apart[1][0]}x{apart[1][1]}).\n")

w("## Criterion (`cargo bench --bench transpose`, GPU time from CUDA events, median)\n")
groups = sorted({k.split("/")[0] for k in crit if k.startswith("transpose_") and "launches" not in k},
                key=lambda g: [int(x) for x in re.findall(r"\d+", g)])
w("| kernel | " + " | ".join(g.removeprefix("transpose_") for g in groups) + " |")
w("|" + " --- |" * (len(groups) + 1))
for k in ["roof_cuMemcpyDtoD", "roof_copy_kernel"] + NAMES:
    cells = []
    for g in groups:
        v, roof = crit[f"{g}/{k}"], crit[f"{g}/roof_cuMemcpyDtoD"]
        cells.append(f"{v['gb_per_s']:,.0f} GB/s ({100 * v['gb_per_s'] / roof['gb_per_s']:.1f}%)")
    w(f"| {k} | " + " | ".join(cells) + " |")
w("")

w(f"## What the counters say (ncu at {BIG[0]}x{BIG[1]}, first launch of each kernel)\n")
w(f"| kernel | global load sectors / request | global store sectors / request | shared load wavefronts / request | DRAM MB moved (ideal {ideal_mb:.0f}) |")
w("| --- | --- | --- | --- | --- |")
for k in ["copy_f32"] + [s["entry"] for s in STEPS]:
    c = counters(k)
    w(f"| `{k}` | {c['ld_sectors']:.1f} | {c['st_sectors']:.1f} | {f(c['smem_wavefronts'], 2)} | {f(c['dram_mb'])} |")
w("\nA warp's 32 scalar floats span 4 sectors of 32 bytes when contiguous and 32 sectors when strided; "
  "a 16-byte-per-lane access spans 16. One shared-memory wavefront per request is conflict-free; n means an n-way conflict.\n")

# ---- counters.json: the emulator's counters beside ncu's --------------------
emu = emulator_counters(run / "counters.json")
w("### The same counters from the CPU emulator\n")
w(f"`cargo run --release -- --emulate --counters` ([`counters.json`](measurements/{run.name}/counters.json)) counts every "
  "access of the same kernels on the CPU, at a small shape whose blocks are all interior like the GPU's. Each cell reads "
  "*emulator / ncu*; a pair more than 10% apart would be starred.\n")
apart = counters_table(w, emu, [("copy_f32", emu[("copy", "copy", None)], ncu["copy_f32"])]
                       + [(s["entry"], emu[("transpose", s["name"], None)], ncu[s["entry"]]) for s in STEPS])
assert not apart, f"transpose: emulator and ncu more than 10% apart: {apart}"
w("\nThe copy kernel's requests, as the emulator draws them (each step's are under its section below; "
  "[`learn.md`](learn.md) explains how to read them):\n")
w(pictures("copy", "copy"))
above = [ncu[s["entry"]][tx] / ncu[s["entry"]][req] / emu[("transpose", s["name"], None)]["totals"][acc]["per_request"]
         for s in STEPS for acc, tx, req in [
             ("shared ld", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "smsp__inst_executed_op_shared_ld.sum"),
             ("shared st", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "smsp__inst_executed_op_shared_st.sum")]
         if acc in emu[("transpose", s["name"], None)]["totals"]]
# Global sectors per request, the emulator's against ncu's, for every kernel of the table.
sectors = [(k, acc, e["totals"][acc]["per_request"], ncu[k][tx] / ncu[k][req])
           for k, e in [("copy_f32", emu[("copy", "copy", None)])] + [(s["entry"], emu[("transpose", s["name"], None)])
                                                                     for s in STEPS]
           for acc, tx, req in [
               ("global ld", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
               ("global st", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")]
           if acc in e["totals"]]
if all(f"{a:.2f}" == f"{b:.2f}" for _, _, a, b in sectors):
    same_sectors = "Sectors per request are the same to the second decimal."
else:
    k_, acc_, a_, b_ = max(sectors, key=lambda x: abs(x[2] - x[3]))
    same_sectors = (f"Sectors per request differ by up to {abs(a_ - b_):.2f} (`{k_}`'s {acc_}: {a_:.2f} on the emulator, "
                    f"{b_:.2f} in `ncu`).")
w(f"\n{same_sectors} `ncu`'s shared-memory wavefronts per request run "
  f"{100 * (min(above) - 1):.0f}% to {100 * (max(above) - 1):.0f}% above the model's: shared memory and the L1 cache are "
  "one set of data banks, and `ncu` also counts the wavefronts a request loses to the cache's own traffic there, which a "
  "model of the access pattern leaves out.\n")

# What each step shows, from this run's counters; the step's idea is the registry's.
WHY = {
    "naive": lambda: f"Threads run along input rows, so each warp reads {cnt('naive', 'ld_sectors', 0)} sectors "
    f"{coalesced('naive', 'ld_sectors')} but writes "
    f"{cnt('naive', 'st_sectors', 0)} sectors per request, each carrying one useful float. L1 does not keep stores, so "
    "every partial write travels to L2, which must merge sectors it never saw whole: DRAM traffic is "
    f"{cnt('naive', 'dram_mb')} MB against {ideal_mb:.0f} ideal.",
    "naive_cols": lambda: f"The mirror image: loads are strided ({cnt('naive_cols', 'ld_sectors', 0)} sectors per request) "
    "and stores coalesce. The strided loads fetch whole sectors into L1, where the block's neighbouring warps, reading "
    f"the next columns of the same rows, find their floats: DRAM traffic is {cnt('naive_cols', 'dram_mb')} MB, "
    f"{near_ideal('naive_cols')}, "
    f"and the step is {by[('naive_cols', BIG)]['gb_per_s'] / by[('naive', BIG)]['gb_per_s']:.1f}x step 1. "
    "Leave the loads uncoalesced, never the stores.",
    "tiled": lambda: f"{global_sides('tiled')}, but reading a tile column hits one bank: "
    f"{cnt('tiled', 'smem_wavefronts')} wavefronts per shared load request, a {ways('tiled')}-way conflict. The "
    f"shared-memory pipe, not DRAM, is the bottleneck: {than_step2('tiled')} despite perfect global coalescing.",
    "padded": lambda: f"One token of the layout (`T + 1`) puts consecutive tile rows one bank apart: "
    f"{cnt('padded', 'smem_wavefronts', 2)} wavefronts per request. Everything else is step 3.",
    "swizzled": lambda: f"The same fix without the padding column: {cnt('swizzled', 'smem_wavefronts', 2)} wavefronts per "
    f"request. {against_padding('swizzled')}; it matters where padding would break 16-byte alignment or waste a large "
    "tile's space.",
    "wide": lambda: f"Four times the bytes in flight per thread: {gbs('wide', (16384, 16384))} at 16384x16384. The "
    f"counters are step 4's ({cnt('wide', 'smem_wavefronts', 2)} wavefronts per request); what changes is latency hidden.",
    "vec4": lambda: f"A quarter of the global requests ({cnt('vec4', 'ld_sectors', 0)} sectors each, 16 bytes per lane). "
    f"Each thread reads 4 floats down a tile column from 65-float rows: {cnt('vec4', 'smem_wavefronts', 2)} wavefronts "
    f"per shared request, a {ways('vec4')}-way conflict that shared bandwidth absorbs.",
    "vec4_cols": lambda: f"Step 7's counters, request for request ({cnt('vec4_cols', 'ld_sectors', 0)} sectors, "
    f"{cnt('vec4_cols', 'smem_wavefronts', 2)} wavefronts, {cnt('vec4_cols', 'dram_mb')} MB of DRAM against step 7's "
    f"{cnt('vec4', 'dram_mb')}): the same bytes, in another order. Neither `ncu`'s per-request counters nor the "
    "emulator's tell the two apart: they count requests, not which parts of memory the blocks resident at once touch "
    f"together; only the clock does. {order_gain()}",
}


def coalesced(name, key):
    """"(coalesced)" where the step's requests move no more sectors than a
    warp's contiguous floats span; else the run contradicts the page."""
    x = counters(entry(name))[key]
    assert x <= COALESCED_SECTORS + 0.05, f"transpose: `{name}` {key} {x:.2f}, not coalesced ({COALESCED_SECTORS})"
    return "(coalesced)"


def global_sides(name):
    """The step's global sectors per request, loads and stores, in words."""
    ld, st = (cnt(name, k, 0) for k in ("ld_sectors", "st_sectors"))
    for key in ("ld_sectors", "st_sectors"):  # "perfect global coalescing" follows in the step's text
        coalesced(name, key)
    return (f"Both global sides now move {ld} sectors per request" if ld == st
            else f"Global loads now move {ld} sectors per request and stores {st}")


def ways(name):
    """The step's bank-conflict degree of its shared loads: the emulator's
    wavefronts per request (the access pattern's own), which ncu's measured
    figure must round to."""
    model = emu[("transpose", name, None)]["totals"]["shared ld"]["per_request"]
    measured_wf = counters(entry(name))["smem_wavefronts"]
    assert model == int(model) and round(measured_wf) == model, \
        f"transpose: `{name}` shared loads: emulator {model} wavefronts per request, ncu {measured_wf:.2f}"
    return f"{model:.0f}"


def near_ideal(name, within=0.05):
    """"the ideal" where the step's DRAM traffic is within 5% of the ideal
    bytes (ncu counts a launch's writes still in L2 at its end later, so a
    figure can fall below); else the ideal's figure beside it."""
    mb = counters(entry(name))["dram_mb"]
    return "the ideal" if abs(mb - ideal_mb) <= within * ideal_mb else f"against {ideal_mb:.0f} ideal"


def than_step2(name):
    """The step's speed against step 2's at the big shape, in words."""
    a, b = by[(name, BIG)]["gb_per_s"], by[("naive_cols", BIG)]["gb_per_s"]
    return "slower than step 2" if a < b else f"only {a / b:.2f}x step 2 ({a:,.0f} against {b:,.0f} GB/s)"


def against_padding(name):
    """The step's speed against `padded` at the big shape: "Same speed" within
    NOISE_POINTS of the copy, else the figures."""
    a, b = by[(name, BIG)], by[("padded", BIG)]
    if abs(a["percent_of_roof"] - b["percent_of_roof"]) <= NOISE_POINTS:
        return "Same speed as padding here"
    return (f"{'Faster' if a['gb_per_s'] > b['gb_per_s'] else 'Slower'} than padding here ({a['gb_per_s']:,.0f} "
            f"against {b['gb_per_s']:,.0f} GB/s)")


def order_gain():
    """Step 8 against step 7 at every shape of the report, in points of the copy."""
    gains = [(s, by[("vec4_cols", s)]["percent_of_roof"] - by[("vec4", s)]["percent_of_roof"]) for s in shapes]
    cells = ", ".join(f"{g:+.1f} points at {s[0]}x{s[1]}" for s, g in gains)
    # The lesson holds where the gain is past noise (a point) at the largest shape.
    big = max(shapes, key=lambda s: s[0] * s[1])
    lesson = dict(gains)[big] > NOISE_POINTS
    return (f"Writing the output in order instead of reading the input in order changes its share of the copy by {cells}"
            + (": as in step 2, the side that wants order is the stores." if lesson else "."))


# Variant::BEST, named by the bench that launches it (`one_kernel_<name>`).
pz = {k.split("/")[1]: v for k, v in crit.items() if "launches" in k}
BEST = next((k.removeprefix("one_kernel_") for k in pz if k.startswith("one_kernel_")), None)
if BEST is None:
    raise SystemExit(f"transpose.py: {run}/criterion_medians.json has no `one_kernel_<name>` in its launches group "
                     "(a bench from before it named Variant::BEST): run benches/transpose.rs again")
_best_why = WHY[BEST]
WHY[BEST] = lambda: _best_why() + " This is `Variant::BEST`, used by `MatrixView::contiguous`."

w("## The ladder, one idea per step\n")
step_sections(w, STEPS, gbs, WHY, op="transpose")
not_measured(w, "transpose")

one, per = pz[f"one_kernel_{BEST}"], pz["one_launch_per_column"]
w("## One launch per column\n")
w(f"A 4096x4096 transpose done as 4096 launches of a column-copy kernel (`copy::transpose_by_column_copies`) "
  f"took **{per['median_ns'] / 1e6:.2f} ms** of GPU time; one `{BEST}` kernel took **{one['median_ns'] / 1e3:.1f} us**: "
  f"{per['median_ns'] / one['median_ns']:,.0f}x. Each launch does 16 KB of strided work, so the GPU spends the time "
  "waiting for launches and draining tiny grids. PyTorch's Python loop of `r[i, :] = a[:, i]` in the same call: "
  f"{torch['torch_loop_transpose_4096_ms']:.1f} ms.\n")

w("## Machine\n")
w("```\n" + machine + "\n```")
print("\n".join(P))
