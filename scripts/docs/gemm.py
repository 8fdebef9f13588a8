#!/usr/bin/env python3
"""Writes docs/gemm.md from one GPU run's files and the registry.

    python3 scripts/docs/gemm.py docs/measurements/<run> > docs/gemm.md

The steps (order, names, files, ideas, the module they need) come from
docs/registry.json. The run folder holds what scripts/gpu/gemm.sh wrote:
machine.txt, tests.log, sanitizer.log, ptxas.txt, tc.log (the tensor-core steps beside
cuBLAS SGEMM and TF32, and every error against the f64 product, as
examples/gemm_tensor_cores.rs and scripts/gpu/peers gemm-tc print them),
bench.log and criterion_medians.json (criterion over every step
and the off-tile shapes, PyTorch at those shapes), ncu.txt. Every number in
the page comes from those files.
"""
import json, pathlib, re, sys
from statistics import median
from common import COUNTER_COLUMNS, NO_FRAME, ROOT, commit_of, counters_table, emulator_counters, ncu_launches, page, parse_ncu, ptxas, step_sections, not_measured, steps

run = pathlib.Path(sys.argv[1])
# The special-value run (examples/gemm_specials.rs, scripts/gpu/peers gemm-specials,
# the same-run A/B of scripts/gpu/ab.sh and the GPU tests): specials.txt, ab.txt, log.txt, machine.txt.
specials = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else None
# An H200 run of the no-pass steps (steps 12-15 beside cuBLAS in one call, and
# step 15's probes): README.md, tc-first-build.log, tc.log, probes.txt.
h200 = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else None
# Step 15's splitter on the H100 with its shared loads, or its stores, taken out: probes.txt.
h100_probes = pathlib.Path(sys.argv[4]) if len(sys.argv) > 4 else None
# The H100 run of split K (step 15's K in runs where C has too few tiles): gemm.log (tests and sanitizers),
# gemm_bench.log (criterion's gemm_shapes), gemm_torch.txt (PyTorch at the same shapes, same call).
split_run = pathlib.Path(sys.argv[5]) if len(sys.argv) > 5 else None
# Other GPUs' runs of the same shapes, one each: a report run's bench.log (criterion's gemm_shapes, then
# scripts/gpu/peers gemm-shapes), as scripts/gpu/run.sh with BENCHES=gemm BENCH_FILTER=gemm_shapes writes it.
shape_runs = [pathlib.Path(a) for a in sys.argv[6:]]
# A folder among those with ab-base.log is not a shape run but step 15 with blocks that walk tiles,
# timed against the build before (ab-base.log, ab-walk.log; bench-base.log, bench-walk.log) with its tests.
walk_runs = [f for f in shape_runs if (f / "ab-base.log").exists()]
shape_runs = [f for f in shape_runs if f not in walk_runs]
# A folder among them with criterion_medians.json is a later call of the off-tile groups alone (bench.log with
# scripts/gpu/peers gemm-shapes' lines, criterion_medians.json, machine.txt, tests.log, sanitizer.log): the
# off-tile table comes from it rather than from the run.
tile_runs = [f for f in shape_runs if (f / "criterion_medians.json").exists()]
shape_runs = [f for f in shape_runs if f not in tile_runs]
STEPS = steps("gemm", run)
read = lambda name: (run / name).read_text()
machine = read("machine.txt").strip()
commit = commit_of(machine)
gpu_name = machine.splitlines()[2].split(",")[0]
crit = json.loads(read("criterion_medians.json"))
tests, bench_log, tc_log = read("tests.log"), read("bench.log"), read("tc.log")

# ---- tc.log: cuBLAS in the same call, and every dumped output's error ----------
tc = {"torch": re.search(r"torch (\S+)", tc_log).group(1)}
for m in re.finditer(r"^cuBLAS (\w+)\s+(\d+)\^3: median ([\d.]+) ms .* ([\d.]+) TFLOP/s$", tc_log, re.M):
    tc[f"{m.group(1)}_{m.group(2)}"] = {"median_ms": float(m.group(3)), "TFLOPs": float(m.group(4))}
for m in re.finditer(r"^error (\w+)\s+(\d+)\^3: .*= ([\d.e+-]+)\), \|\|err\|\|/\|\|ref\|\| ([\d.e+-]+)", tc_log, re.M):
    tc[f"err_{m.group(1)}_{m.group(2)}"] = {"max_rel_to_max": float(m.group(3)), "fro_rel": float(m.group(4))}
# examples/gemm_tensor_cores.rs's own timings: medians of CUDA-event timings (`N reps`) after
# warm-up, as cuBLAS's above are taken (criterion's runs keep the GPU busy for seconds).
for m in re.finditer(r"^\s*(\w+) (\d+)\^3: median ([\d.]+) ms .* ([\d.]+) TFLOP/s;", tc_log, re.M):
    tc[f"ex_{m.group(1)}_{m.group(2)}"] = {"median_ms": float(m.group(3)), "TFLOPs": float(m.group(4))}
# How many timings each of those medians is of (`N reps`): one figure, or their range.
def span(ns):
    """Sorted counts as the page states them: the one figure, or `first to last`."""
    return f"{ns[0]}" if len(ns) == 1 else f"{ns[0]} to {ns[-1]}"


EX_REPS = span(sorted({int(r) for r in re.findall(r"^\s*\w+ \d+\^3: median [\d.]+ ms \(.*?, (\d+) reps\) [\d.]+ TFLOP/s;",
                                                  tc_log, re.M)}))


def tc_figures(text):
    """A tc.log's timings (`ex_<step>_<n>`, `cuBLAS <which> <n>`) as TFLOP/s,
    and its errors (`err_<name>_<n>`, largest over max |C|)."""
    out = {}
    for m in re.finditer(r"^(?:cuBLAS )?\s*(\w+)\s+(\d+)\^3: median ([\d.]+) ms .* ([\d.]+) TFLOP/s", text, re.M):
        out[f"{m.group(1)}_{m.group(2)}"] = float(m.group(4))
    for m in re.finditer(r"^error (\w+)\s+(\d+)\^3: .*= ([\d.e+-]+)\)", text, re.M):
        out[f"err_{m.group(1)}_{m.group(2)}"] = float(m.group(3))
    return out


regs, frames = ptxas(read("ptxas.txt"))

module = read("ptxas.txt").splitlines()[0].removeprefix("### ")
SIZES = (4096, 8192)
# What gemm::sgemm launches (Variant::sgemm_for): with the module, step 16 at every shape; step 7 with
# the other modules. Steps 13 and 15 are the other FP32-accurate TMA steps the off-tile table times.
step_named = lambda name: next(s["name"] for s in STEPS if s["name"] == name and s["needs"] in (None, module))
SGEMM, SGEMM_DIRECT, STEP13 = (step_named(n) for n in ("wgmma_split_a_3xtf32", "wgmma_direct_3xtf32", "wgmma_tma_3xtf32"))
sgemm_at = lambda m, n, k: SGEMM
SGEMM_ELSEWHERE = next(s["name"] for s in STEPS if s["step"] == "7")


def kind(s):
    """What a step is compared with: cuBLAS TF32 for the registry's
    `Precision::Tf32` steps, cuBLAS SGEMM (FP32-accurate) for the others."""
    return "tf32" if "precision: Tf32," in s["geometry"] else "sgemm"


def tflops(size, name):
    return 2 * size**3 / crit[f"gemm_{size}/{name}"]["median_ns"] / 1e3


def cublas(size, which):
    return tc[f"{which}_{size}"]["TFLOPs"]


def err(name, size):
    return tc.get(f"err_{name}_{size}", {}).get("max_rel_to_max")


ncu = parse_ncu(read("ncu.txt"))
cublas_kernel = next((k for k in ncu if not k.startswith("gemm_")), None)


def nc(kernel, key, nd=0):
    v = ncu.get(kernel, {}).get(key)
    return "-" if v is None else f"{v:,.{nd}f}"


def conflicts(kernel):
    c = ncu.get(kernel, {})
    req, wf = c.get("smsp__inst_executed_op_shared_ld.sum"), c.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
    return "-" if not req else f"{wf / req:.2f}"


# ---- the off-tile shapes: ours (criterion) and PyTorch's (same call) ----------
tile_run = tile_runs[-1] if tile_runs else run
tile_crit = json.loads((tile_run / "criterion_medians.json").read_text())
tile_log = (tile_run / "bench.log").read_text()
tile_commit = commit_of((tile_run / "machine.txt").read_text())
torch_shapes = {tuple(map(int, m.groups()[:3])): float(m.group(5))
                for m in re.finditer(r"torch sgemm (\d+)x(\d+)x(\d+): ([\d.]+) ms ([\d.]+) TFLOP/s", tile_log)}
# The FP32-accurate TMA steps, each alone at the shapes (benches/gemm.rs: group `gemm_<step>_shapes`), in
# ladder order: those the off-tile run has a group of.
shape_group = lambda name: f"gemm_{name.removeprefix('wgmma_')}_shapes"
SHAPE_STEPS = tuple(s["name"] for s in STEPS if any(k.startswith(shape_group(s["name"]) + "/") for k in tile_crit))
shape_rows = []
for key in tile_crit:
    m = re.match(r"gemm_shapes/(\d+)x(\d+)x(\d+)$", key)
    if m:
        s = tuple(map(int, m.groups()))
        ours = [2 * s[0] * s[1] * s[2] / tile_crit[f"{shape_group(n)}/{s[0]}x{s[1]}x{s[2]}"]["median_ns"] / 1e3
                for n in SHAPE_STEPS]
        shape_rows.append((s, ours, torch_shapes[s]))
order = [tuple(map(int, t)) for t in re.findall(r"gemm_shapes/(\d+)x(\d+)x(\d+)", tile_log)]
shape_rows.sort(key=lambda r: order.index(r[0]))

P, w = page("gemm.py", "GEMM: a ladder from naive to cuBLAS-class FP32, then the tensor cores, measured",
            run, *([specials] if specials else []), *([h200] if h200 else []), *([h100_probes] if h100_probes else []),
            *([split_run] if split_run else []), *shape_runs, *walk_runs, *tile_runs)
w(f"GPU: **{gpu_name}**, module `{module}`, commit `{commit}`, one device call. `C = A B` in f32, row-major; "
  "TFLOP/s count 2 M N K. Our times are criterion medians of CUDA-event GPU time (`cargo bench --bench gemm`); "
  f"cuBLAS is `torch.mm` (PyTorch {tc['torch']}) in the same call, with TF32 off (SGEMM) and on (TF32), "
  "median of CUDA-event timings after warm-up (`scripts/gpu/peers gemm-tc`, in `tc.log`).\n")
w("Reproduce:\n")
w("```sh\nscripts/gpu/build.sh                        # here: release binaries -> .gpu/\n"
  "bash scripts/gpu/gemm.sh                    # on the GPU machine, .gpu/ carried; files land in $OUT\n"
  "python3 scripts/docs/gemm.py <run> > docs/gemm.md\n```\n")

w("## The ladder\n")
w("| step | kernel | module | " + " | ".join(f"{n}^3 TFLOP/s | vs cuBLAS" for n in SIZES)
  + " | largest error / max abs C (8192^3) | registers |")
w("|" + " --- |" * (3 + 2 * len(SIZES) + 2))
for s in STEPS:
    cells = []
    for n in SIZES:
        t = tflops(n, s["name"])
        cells += [f"{t:.1f}", f"{t / cublas(n, kind(s)):.2f}x {'TF32' if kind(s) == 'tf32' else 'SGEMM'}"]
    e = err(s["name"], 8192)
    spill = "" if frames.get(s["entry"]) == NO_FRAME else " (spills)"
    w(f"| {s['step']} | `{s['name']}` | {s['needs'] or 'all'} | " + " | ".join(cells)
      + f" | {'-' if e is None else f'{e:.2e}'} | {regs.get(s['entry'], '-')}{spill} |")
w("| | cuBLAS SGEMM | | " + " | ".join(f"{cublas(n, 'sgemm'):.1f} | 1.00x" for n in SIZES)
  + f" | {err('cublas_sgemm', 8192):.2e} | |")
w("| | cuBLAS TF32 | | " + " | ".join(f"{cublas(n, 'tf32'):.1f} | 1.00x" for n in SIZES)
  + f" | {err('cublas_tf32', 8192):.2e} | |")
no_spills = all(frames.get(s["entry"]) == NO_FRAME for s in STEPS)
w(f"\nFP32-accurate steps are compared with cuBLAS SGEMM, TF32 steps with cuBLAS TF32. The error is the largest "
  "|C - C_f64| over the largest |C_f64|, on the same uniform [-1, 1) inputs for every row (`tc.log`; steps 1-6 are "
  f"not dumped). Registers from `ptxas -v` for the module the {gpu_name} loads; "
  f"{'no kernel has a stack frame or spills' if no_spills else 'see ptxas.txt for spills'}. "
  f"`gemm::sgemm` launches `{SGEMM}` with the `{module}` module (at every shape: below) and "
  f"`{SGEMM_ELSEWHERE}` with the others: the fastest FP32-accurate step each has.\n")
w("## Accuracy at both sizes\n")
dumped = sorted({k[4:].rsplit("_", 1)[0] for k in tc if k.startswith("err_")},
                key=lambda n: (n.startswith("cublas"), [s["name"] for s in STEPS].index(n) if not n.startswith("cublas") else 0, n))
w("| output | " + " | ".join(f"{n}^3: max / max abs C | {n}^3: Frobenius" for n in SIZES) + " |")
w("|" + " --- |" * (1 + 2 * len(SIZES)))
for name in dumped:
    cells = []
    for n in SIZES:
        e = tc.get(f"err_{name}_{n}")
        cells += ["-", "-"] if not e else [f"{e['max_rel_to_max']:.2e}", f"{e['fro_rel']:.2e}"]
    w(f"| `{name}` | " + " | ".join(cells) + " |")
# The one 3xTF32 step without promotion: its error drifts with K.
for name in ["wgmma_3xtf32"]:
    r = [err(name, n) / err("cublas_sgemm", n) for n in SIZES]
    grow = tc[f"err_{name}_8192"]["fro_rel"] / tc[f"err_{name}_4096"]["fro_rel"]
    grow_s = tc["err_cublas_sgemm_8192"]["fro_rel"] / tc["err_cublas_sgemm_4096"]["fro_rel"]
    w(f"\n`{name}`'s largest error is {r[0]:.1f}x and {r[1]:.1f}x cuBLAS SGEMM's. Its Frobenius error grows "
      f"{grow:.2f}x from K = 4096 to 8192, SGEMM's {grow_s:.2f}x: an error linear in K, a bias, where rounding to "
      "nearest gives sqrt(K). The split is exact to 2^-22 per product (`tests/gemm/tensor_cores.rs` checks it); what adds a bias "
      "is the tensor cores' f32 accumulation, which truncates each step's sum. The emulator truncates too and shows "
      "the same drift (`tensor_core_truncation_drifts_with_k_unless_promoted_on_the_emulator`).")
w("")

w("## What the counters say (ncu, each kernel once at 4096^3)\n")
w("| kernel | duration (us) | FMA pipe % | tensor pipe % | issue slots busy % | warp cycles per issued instruction | "
  "shared wavefronts per load | DRAM GB | L2 GB |")
w("|" + " --- |" * 9)
for k in [s["entry"] for s in STEPS if s["entry"] in ncu] + ([cublas_kernel] if cublas_kernel else []):
    label = f"`{k}`" if k.startswith("gemm_") else "cuBLAS SGEMM"
    w(f"| {label} | {nc(k, 'Duration')} | {nc(k, 'sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active', 1)} | "
      f"{nc(k, 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active', 1)} | {nc(k, 'Issue Slots Busy', 1)} | "
      f"{nc(k, 'Warp Cycles Per Issued Instruction', 1)} | {conflicts(k)} | "
      f"{ncu.get(k, {}).get('dram__bytes.sum', 0) / 1e9:.2f} | {ncu.get(k, {}).get('lts__t_bytes.sum', 0) / 1e9:.1f} |")
w("")

STALL = "smsp__average_warps_issue_stalled_"


def stalls(kernel, top=3):
    """The kernel's largest stall reasons: warps stalled per issued
    instruction, by reason, as ncu's Warp State Statistics reads them."""
    c = ncu.get(kernel, {})
    r = sorted(((v, k[len(STALL):].removesuffix("_per_issue_active.ratio")) for k, v in c.items() if k.startswith(STALL)),
               reverse=True)
    return ", ".join(f"{name.replace('_', ' ')} {v:.1f}" for v, name in r[:top] if v >= 0.05)


stalled = [k for k in [s["entry"] for s in STEPS if s["entry"] in ncu] + ([cublas_kernel] if cublas_kernel else [])
           if stalls(k)]
if stalled:
    w("### Why warps wait (ncu stall reasons, the same launches)\n")
    w("Each kernel's three largest stall reasons, in warps stalled per issued instruction (ncu's "
      "`smsp__average_warps_issue_stalled_*_per_issue_active`; their sum is about the cycles per issued instruction "
      "above).\n")
    w("| kernel | largest stall reasons |")
    w("| --- | --- |")
    for k in stalled:
        w(f"| {f'`{k}`' if k.startswith('gemm_') else 'cuBLAS SGEMM'} | {stalls(k)} |")
    w("")

# ---- counters.json: the emulator's counters beside ncu's --------------------
emu = emulator_counters(run / "counters.json")
ncu_steps = [s for s in STEPS if s["entry"] in ncu and ("gemm", s["name"], None) in emu]
eshape = emu[("gemm", ncu_steps[0]["name"], None)]["shape"]
w("### The same counters from the CPU emulator\n")
w(f"`cargo run --release -- --emulate --counters` ([`counters.json`](measurements/{run.name}/counters.json)) counts every "
  f"access of each step at {eshape} (`C = A B`), whose blocks are all whole tiles like the GPU's at 4096^3. Each cell "
  "reads *emulator / ncu*; a pair more than 10% apart is starred and explained below. The `wgmma` steps have no shared "
  "loads but step 14's fragments of `B`: the tensor cores read their operands from shared memory without the "
  "load/store unit (the emulator checks those reads for races and unwritten words, and does not count them).\n")
apart = counters_table(w, emu, [(s["entry"], emu[("gemm", s["name"], None)], ncu[s["entry"]]) for s in ncu_steps])
w("")
mnk_emu = 1
for x in eshape.split("x"):
    mnk_emu *= int(x)


def per_mnk(name, access, metric):
    """Requests per 1000 multiply-adds: the emulator's and ncu's (4096^3)."""
    t = emu[("gemm", name, None)]["totals"].get(access)
    return (1e3 * t["requests"] / mnk_emu if t else 0.0), 1e3 * ncu[f"gemm_{name}"].get(metric, 0) / 4096 ** 3


merged = [(n, *per_mnk(n, "shared ld", "smsp__inst_executed_op_shared_ld.sum")) for n in ("smem_tiled", "blocktile_1d", "blocktile_2d")]


def fig(values):
    """Figures the page states as one: the whole number all are within 0.05 of, else their range."""
    values = list(values)
    whole = round(values[0])
    if all(abs(v - whole) < 0.05 for v in values):
        return f"{whole}"
    lo, hi = f"{min(values):.2f}", f"{max(values):.2f}"
    return lo if lo == hi else f"{lo} to {hi}"


def emu_lines(name, access, nbytes=None):
    """counters.json's lines of step `name` with `access`, of `nbytes`-byte accesses (any width with None)."""
    return [l for l in emu[("gemm", name, None)]["lines"] if l["access"] == access and nbytes in (None, l["bytes"])]


def emu_per_request(name, access, nbytes=None, least=False):
    """The emulator's wavefronts (or sectors) a request over those lines; with `least`, checked to be
    the least their bytes take (`ideal`), as the page says."""
    lines = [l["tally"] for l in emu_lines(name, access, nbytes)]
    assert lines, f"counters.json has no {nbytes}-byte {access} of {name}"
    tx, req = sum(t["transactions"] for t in lines), sum(t["requests"] for t in lines)
    assert not least or tx == sum(t["ideal"] for t in lines), f"{name}'s {nbytes}-byte {access}: not the least the bytes take"
    return tx / req


def ncu_per_request(kernel, title):
    """ncu's sectors or wavefronts a request for the counters table's column `title`."""
    tx, req = next((c[2], c[3]) for c in COUNTER_COLUMNS if c[0] == title)
    return ncu[kernel][tx] / ncu[kernel][req]


# The epilogue's global loads of C in the TMA steps (ncu only: the emulator's C = A B reads no C), beside their stores.
c_readers = [a[0] for a in apart if a[1] == "global ld sectors / request"]
c_ld = fig(ncu_per_request(k, "global ld sectors / request") for k in c_readers) if c_readers else "-"
c_st = fig(ncu_per_request(k, "global st sectors / request") for k in c_readers) if c_readers else "-"
# Steps 9-11 stage their operands with whole 16-byte shared stores of distinct addresses.
stagers = [s for s in STEPS if s["step"] in ("9", "10", "11")]
assert all(l["bytes"] == 16 for s in stagers for l in emu_lines(s["name"], "shared st")), "steps 9-11's shared stores are not all 16-byte"
stage_model = fig(emu_per_request(s["name"], "shared st") for s in stagers)
stage_gpu = fig(ncu_per_request(s["entry"], "shared st wavefronts / request") for s in stagers)
# Step 14's fragment loads of B, and step 15's splitter (16-byte loads and stores) and fragment loads, by the model.
frag_bytes = {l["bytes"] for l in emu_lines("wgmma_direct", "shared ld")}
assert len(frag_bytes) == 1, f"step 14's shared loads are of {frag_bytes} bytes"
frag_bytes = frag_bytes.pop()
frag_model = fig([emu_per_request("wgmma_direct", "shared ld", frag_bytes, least=True)])
split_ld_model = fig([emu_per_request("wgmma_direct_3xtf32", "shared ld", 16, least=True)])
split_frag_model = fig([emu_per_request("wgmma_direct_3xtf32", "shared ld", 8, least=True)])
split_st_model = fig([emu_per_request("wgmma_direct_3xtf32", "shared st", 16)])
# The probe of step 14's fragment loads alone (one warp, nothing else in the banks): results.txt's rows,
# a row's description over one or more lines, then requests, wavefronts, per request, bank conflicts.
LD64 = "docs/measurements/2026-11-28-h100-ld64-probe"
ld64_text = (ROOT / LD64 / "results.txt").read_text()
ld64_body = re.search(r"^pattern\s+requests\s+wavefronts\s+per request\s+bank conflicts\n(.*?)(?:\n\n|\Z)",
                      ld64_text, re.M | re.S).group(1)
ld64_rows = []
for line in ld64_body.splitlines():
    if re.match(r"^\d+ ", line):
        ld64_rows.append(line)
    else:
        ld64_rows[-1] += " " + line.strip()
ld64_rows = [re.match(r"^\d+ (.*?)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)$", r).groups() for r in ld64_rows]
ld64_gpu = re.search(r"^NVIDIA (\S+)", ld64_text, re.M).group(1)
ld64_own = fig(float(r[3]) for r in ld64_rows if r[0].startswith("step 14's fragment load"))
ld64_broken = fig(float(r[3]) for r in ld64_rows if int(r[4]) > 0)
assert ld64_own == frag_model, f"{LD64}: step 14's loads alone take {ld64_own} wavefronts, the model {frag_model}; the page says they agree"
APART_WHY = {
    "global ld sectors / request": "the TMA steps load no operand through the load/store unit (the TMA does), so the "
    "only global loads left are the epilogue's reads of `C`: `ncu` profiles the 4096^3 test, whose product has "
    "`beta = 1`, and the emulator's count is of `C = A B` (`beta = 0`), which never reads `C`. Those reads (a warp's 32 "
    "lanes over 8 rows, four floats a row 8 bytes apart) take " + c_ld + " sectors each, "
    + ("as the stores do." if c_st == c_ld else f"where the stores take {c_st}."),
    "shared st wavefronts / request": "shared memory and the L1 cache are one set of data banks: `ncu` also counts the "
    "wavefronts a store loses to the cache's own traffic there (these steps read `A` and `B` through L1), which a model of "
    "the access pattern leaves out; the transposes show the same few percent (`docs/transpose.md`).",
    "shared ld wavefronts / request": "two things the emulator does not see. (1) ptxas merges the source's consecutive "
    "4-byte shared loads into 8- and 16-byte ones, so the GPU makes fewer, wider requests than the kernel's code asks for: "
    + ", ".join(f"`{n}` {e:.1f} load requests per 1000 multiply-adds in the source, {g:.1f} on the GPU" for n, e, g in merged)
    + "; the emulator counts at the source's (PTX's) granularity. (2) At steps 5-7 the requests agree ("
    + ", ".join(f"`{n}` {e:.2f} and {g:.2f}" for n, e, g in
                [(n, *per_mnk(n, "shared ld", "smsp__inst_executed_op_shared_ld.sum")) for n in ("vectorized", "warptile", "double_buffered")])
    + " per 1000 multiply-adds) but the GPU's take fewer wavefronts: these are 16-byte fragment loads in which several "
    "lanes read the same address, and the model charges each of a request's four 8-lane phases at least one wavefront, "
    "where the hardware serves lanes that share addresses across phases together (the model's doc, "
    "`kernels/src/emu/cost.rs`, says it leaves this out). Whole 16-byte loads and stores with distinct addresses cost "
    + (f"the model's {stage_model} on the GPU too" if stage_gpu == stage_model else f"{stage_gpu} on the GPU, the model's {stage_model}")
    + f" (steps {stagers[0]['step']}-{stagers[-1]['step']}'s stores; the softmax stash's loads, `docs/softmax.md`).",
}
# Step 14's fragment loads disagree the other way (the GPU takes more): a bullet of their own.
OWN_WHY = {
    ("shared ld wavefronts / request", "gemm_wgmma_direct"): lambda: (
        f"its fragments' {frag_bytes}-byte loads, the same requests in both ("
        + " and ".join(f"{x:.2f}" for x in per_mnk("wgmma_direct", "shared ld", "smsp__inst_executed_op_shared_ld.sum"))
        + " per 1000 multiply-adds), and here the GPU takes more wavefronts than the model. Each 16-lane half of a "
        f"request reads every bank once (`pair_of`), which the model serves in {frag_model} wavefronts, the least "
        f"{32 * frag_bytes} bytes take; "
        f"`ncu` reports {nc('gemm_wgmma_direct', 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum')} bank "
        f"conflicts for the kernel, yet {conflicts('gemm_wgmma_direct')} wavefronts a request. The same addresses "
        f"alone, one warp and nothing else in the banks, take the model's {ld64_own} on the {ld64_gpu}, and patterns that break a "
        f"half-warp's banks take {ld64_broken} (`{LD64}`): the model's half-warps are the "
        "hardware's, and what the loads lose in the kernel is to the other traffic in the same banks, the TMA's "
        "writes and `wgmma`'s operand reads, which a model of the access pattern leaves out (as for the shared "
        "stores above)."),
    ("shared ld wavefronts / request", "gemm_wgmma_direct_3xtf32"): lambda: (
        f"the splitter's 16-byte loads of consecutive chunks ({split_ld_model} wavefronts, the least {32 * 16} bytes take) "
        f"and the consumers' 8-byte fragment loads (step 14's addresses, {split_frag_model}), the same requests in both ("
        + " and ".join(f"{x:.2f}" for x in per_mnk("wgmma_direct_3xtf32", "shared ld", "smsp__inst_executed_op_shared_ld.sum"))
        + " per 1000 multiply-adds). As for step 14, the emulator counts what the addresses take alone and the GPU "
        "serves them beside the TMA's writes and the tensor cores' operand reads in the same banks; no probe has "
        "measured these addresses alone."),
    ("shared ld wavefronts / request", "gemm_wgmma_split_a_3xtf32"): lambda: (
        f"step 15's consumers and their 8-byte fragment loads (step 14's addresses, {split_frag_model} wavefronts by "
        "the model, the least 256 bytes take), the only shared loads left with no splitter ("
        + " and ".join(f"{x:.2f}" for x in per_mnk("wgmma_split_a_3xtf32", "shared ld", "smsp__inst_executed_op_shared_ld.sum"))
        + " per 1000 multiply-adds): as for step 14, what the GPU adds is the TMA's writes and the tensor cores' "
        "operand reads in the same banks."),
    ("shared st wavefronts / request", "gemm_wgmma_direct_3xtf32"): lambda: (
        f"the splitter's 16-byte stores of `A_lo`, consecutive chunks, {split_st_model} wavefronts each by the model: the GPU's "
        f"{ncu['gemm_wgmma_direct_3xtf32']['l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum'] / ncu['gemm_wgmma_direct_3xtf32']['smsp__inst_executed_op_shared_st.sum']:.2f} "
        "is, by the same reading as its loads, the traffic they meet in the banks (the TMA's writes, the tensor cores' "
        "reads); not measured apart. The probes in step 15's section put the splitter's loads and stores, together, "
        "at the step's largest cost."),
}
for title in sorted({a[1] for a in apart}):
    who = ", ".join(f"`{a[0]}`" for a in apart if a[1] == title and (title, a[0]) not in OWN_WHY)
    if who:
        w(f"- **{title}** ({who}): {APART_WHY.get(title, 'not explained')}")
    for a in apart:
        if a[1] == title and (title, a[0]) in OWN_WHY:
            w(f"- **{title}** (`{a[0]}`): {OWN_WHY[(title, a[0])]()}")
w("")

w("## Off the tile\n")
where = ("in the run above" if tile_run == run else
         f"in one later call ([{tile_run.name}](measurements/{tile_run.name}), commit `{tile_commit}`)")
w("The FP32-accurate TMA steps against cuBLAS SGEMM at the same shape, " + where + " (criterion, each step alone: "
  + ", ".join(f"group `{shape_group(n)}`" for n in SHAPE_STEPS) + "). The operand passes pad rows to 128 bytes, so "
  "odd `N` and `K` take their usual path; step 15 copies an operand first only where its rows are not 16-byte "
  "aligned. Steps 15 and 16 split `K` where `C` has too few tiles for the SMs (1024^2, below). Times include the "
  f"passes and the workspace's stream-ordered allocation. `gemm::sgemm` takes, from these figures, `{SGEMM}` at "
  f"every shape (`Variant::sgemm_for`; `{SGEMM_ELSEWHERE}` with the other modules):\n")
w("| M x N x K | " + " | ".join(f"`{n}` (TFLOP/s)" for n in SHAPE_STEPS)
  + " | cuBLAS SGEMM (TFLOP/s) | `sgemm` takes | ratio |")
w("|" + " --- |" * (len(SHAPE_STEPS) + 4))
for s, ours, theirs in shape_rows:
    pick = sgemm_at(*s)
    mine = ours[SHAPE_STEPS.index(pick)]
    w(f"| {s[0]}x{s[1]}x{s[2]} | " + " | ".join(f"{t:.1f}" for t in ours)
      + f" | {theirs:.1f} | `{pick}` | {mine / theirs:.2f}x |")
w("")
if tile_run != run:
    tile_tests = re.search(r"test result: ok\. (\d+) passed; (\d+) failed", (tile_run / "tests.log").read_text())
    tile_san = re.findall(r"(\d+) (errors|hazards) displayed|ERROR SUMMARY: (\d+) errors",
                          (tile_run / "sanitizer.log").read_text())
    memcheck = next(m[2] for m in tile_san if m[2])
    racecheck = next(m[0] for m in tile_san if m[1] == "hazards")
    w(f"In that call the GEMM GPU tests of split K (both steps), special values, `sgemm`, CUDA graphs and the "
      f"`wgmma` steps' edges ran {tile_tests.group(1)} passed, {tile_tests.group(2)} failed, and compute-sanitizer over "
      f"the split-K GPU test found {memcheck} errors (memcheck) and {racecheck} hazards (racecheck).\n")


def criterion_us(text, group):
    """criterion's point estimates of `group`'s shapes (`MxNxK`), in us."""
    unit = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3}
    return {m.group(1): float(m.group(2)) * unit[m.group(3)]
            for m in re.finditer(rf"{group}/(\d+x\d+x\d+)\s+time:\s+\[\S+ \S+ ([\d.]+) (\S+)", text)}


def shapes_of(bench, torch_txt):
    """criterion's gemm_shapes point estimates and PyTorch's SGEMM at the same shapes (us), and the GPU's name."""
    ours = {tuple(map(int, s.split("x"))): us for s, us in criterion_us(bench, "gemm_shapes").items()}
    theirs = {tuple(map(int, m.group(1, 2, 3))): float(m.group(4)) * 1e3
              for m in re.finditer(r"torch sgemm (\d+)x(\d+)x(\d+): ([\d.]+) ms", torch_txt)}
    return ours, theirs, benchmarked_on(bench)[0]


def benchmarked_on(log):
    """A criterion log's GPU and SM count: its `benchmarking on <gpu> (<n> SMs)` line."""
    m = re.search(r"benchmarking on (.+?) \((\d+) SMs\)", log)
    return m.group(1), int(m.group(2))


def bench_facts(bench):
    """A criterion log's SM count (its `benchmarking on` line) and the sample counts of its gemm_shapes."""
    return (benchmarked_on(bench)[1],
            sorted({int(n) for n in re.findall(r"Benchmarking gemm_shapes/\S+: Collecting (\d+) samples", bench)}))


# Step 15's tile of C, from the registry's geometry.
DX3_TILE = tuple(map(int, re.search(r"tile: \((\d+), (\d+)\)",
                                    next(s["geometry"] for s in STEPS if s["name"] == "wgmma_direct_3xtf32")).groups()))


def split_k_section(folder):
    """`gemm::sgemm` with split K against cuBLAS SGEMM, one later device call per GPU (criterion's point estimates)."""
    bench, torch_txt, log = ((folder / f).read_text() for f in ("gemm_bench.log", "gemm_torch.txt", "gemm.log"))
    runs = [(folder, *shapes_of(bench, torch_txt))]
    facts = [bench_facts(bench)]
    for other in shape_runs:
        text = (other / "bench.log").read_text()
        runs.append((other, *shapes_of(text, text)))
        facts.append(bench_facts(text))
    table = [x for x in dict.fromkeys(order) if all(x in ours and x in theirs for _, ours, theirs, _ in runs)]
    # The example of too few tiles: the table's shape with the fewest, on the first run's GPU.
    tiles = lambda sh: -(-sh[0] // DX3_TILE[0]) * -(-sh[1] // DX3_TILE[1])
    few = min(table, key=tiles)
    sms = facts[0][0]
    assert tiles(few) < sms, f"{few}: {tiles(few)} tiles, no fewer than the {sms} SMs the split-K sentence says"
    few_c = f"{few[0]}^2" if few[0] == few[1] else f"{few[0]}x{few[1]}"
    sms_s = f"{sms} SMs" if len({f[0] for f in facts}) == 1 else f"the {runs[0][3]}'s {sms} SMs"
    samples_s = ("the mean of " + span(facts[0][1]) + " samples" if len({tuple(f[1]) for f in facts}) == 1 else
                 "the mean of " + ", ".join(f"{span(f[1])} samples on the {r[3]}" for f, r in zip(facts, runs)))
    tests = re.search(r"test result: (ok|FAILED)\. (\d+) passed; (\d+) failed", log)
    san = {t: re.search(rf"{t} rc \d+ .*?(\d+) (errors|hazards)", log) for t in ("memcheck", "racecheck")}
    w("### Split K\n")
    w(f"Where `C` has too few {DX3_TILE[0]} x {DX3_TILE[1]} tiles to give every SM a block ({few_c} has {tiles(few)} for "
      f"{sms_s}), steps 15 and 16 cut each "
      "tile's `K` into runs, one block a run, and `sum_splits` (entry `gemm_sum_splits`) adds the runs' products in order into `C` "
      "([`gemm/split_k.rs`](../kernels/src/gemm/split_k.rs): as many runs as keep one block per SM, at most 8, each at "
      "least 8 tiles of 32 deep; none where the tiles reach half the SMs). Below, `gemm::sgemm` at the off-tile "
      "shapes as it was when step 15 first split (it ran steps 13 and 15 then, before step 16), cuBLAS SGEMM in the "
      "same later call, one call per GPU ("
      + ", ".join(f"[{f.name}](measurements/{f.name})" for f, *_ in runs) + "; criterion's point estimate, "
      f"{samples_s}, where the table above has medians). Cells: `gemm::sgemm` / cuBLAS SGEMM in TFLOP/s, "
      "and their ratio:\n")
    w("| M x N x K | " + " | ".join(gpu for *_, gpu in runs) + " |")
    w("| --- |" + " --- |" * len(runs))
    for sh in table:
        f = 2 * sh[0] * sh[1] * sh[2] / 1e6
        w(f"| {sh[0]}x{sh[1]}x{sh[2]} | " + " | ".join(
            f"{f / ours[sh]:.1f} / {f / theirs[sh]:.1f}, {theirs[sh] / ours[sh]:.2f}x" for _, ours, theirs, _ in runs)
          + " |")
    w("")
    if tests:
        w(f"In the {runs[0][3]}'s call the GEMM tests ran {tests.group(2)} passed, {tests.group(3)} failed (split shapes of 2, 3 and 8 "
          "runs, every epilogue, special values in a split product), and compute-sanitizer over the split and `sgemm` "
          "GPU tests found " + ", ".join(f"{m.group(1)} {m.group(2)} ({t})" for t, m in san.items() if m) + ".\n")


if split_run:
    split_k_section(split_run)


def count_word(n):
    """A small count as a word, to begin a sentence with."""
    words = "Zero One Two Three Four Five Six Seven Eight Nine Ten".split()
    return words[n] if n < len(words) else f"{n}"


def walk_section(folder):
    """Step 15 with blocks that walk tiles: each version against main before it, in one device call each."""
    rd = lambda name: (folder / name).read_text()
    group = "gemm_direct_3xtf32_shapes"
    root = pathlib.Path(__file__).resolve().parents[2]
    limit = int(re.search(r"pub const DX3_WALK_PASSES: u32 = (\d+);",
                          (root / "kernels/src/gemm/15_wgmma_direct_3xtf32.rs").read_text()).group(1))
    gpu_shapes = [tuple(map(int, t)) for t in re.findall(r"\((\d+), (\d+), (\d+)\)", re.search(
        r"const GPU_SHAPES: [^=]*= \[(.*?)\];", (root / "tests/gemm/walk.rs").read_text()).group(1))]
    tiles_of = lambda m, n: -(-m // 128) * -(-n // 128)
    walked = sorted(tiles_of(m, n) for m, n, _ in gpu_shapes)
    runs_of = lambda sub: sorted((folder / sub).glob("ab-walk-*.log"))

    def ab(sub, group=group):
        """Median over a call's alternating runs (`ab-{base,walk}-N.log`) of each shape's point estimate, in us."""
        runs = {v: [criterion_us(f.read_text(), group) for f in sorted((folder / sub).glob(f"ab-{v}-*.log"))]
                for v in ("base", "walk")}
        return {v: {s: median([r[s] for r in rs]) for s in rs[0]} for v, rs in runs.items()}

    first = {"base": criterion_us(rd("ab-base.log"), group), "walk": criterion_us(rd("ab-walk.log"), group)}
    subs = ("counters", "splitter", "copies", "final")
    versions = {"first": first, **{sub: ab(sub) for sub in subs}}
    change = lambda v, s: versions[v]["walk"][s] / versions[v]["base"][s] - 1
    shapes = list(first["base"])
    dims = lambda s: tuple(map(int, s.split("x")))
    passes = lambda s: -(-dims(s)[2] // 32)
    sms = benchmarked_on(rd("final/ab-walk-0.log"))[1]
    # The GPU every version was timed on, as its criterion logs name it.
    logs = [folder / "ab-base.log", folder / "ab-walk.log", *(f for sub in subs for f in sorted((folder / sub).glob("ab-*.log")))]
    walk_gpus = sorted({benchmarked_on(f.read_text())[0].removeprefix("NVIDIA ") for f in logs})
    walks = [s for s in shapes if passes(s) <= limit and tiles_of(*dims(s)[:2]) > sms]
    split = next(s for s in shapes if 2 * tiles_of(*dims(s)[:2]) <= sms)
    shallow, deep = min(shapes, key=passes), [s for s in shapes if passes(s) > limit and s != split]
    tests = re.search(r"test result: ok\. (\d+) passed; (\d+) failed", rd("final/tests.log"))
    memcheck = re.search(r"ERROR SUMMARY: (\d+) errors", rd("final/sanitizer.log")).group(1)
    racecheck = re.search(r"RACECHECK SUMMARY: (\d+) hazards", rd("final/sanitizer.log")).group(1)
    w("### Blocks that walk tiles\n")
    w(f"Where `C` has more tiles than the GPU has SMs and a tile few passes over `K` ({shallow}: "
      f"{tiles_of(*dims(shallow)[:2])} tiles of {passes(shallow)} passes), step 15 launches one block an SM, and each "
      "block walks its tiles `i, i + G, ..` in the grouped order, its passes one sequence with each stage's phases "
      "running on from tile to tile: the copies and the split of a tile's first stages overlap the last tile's "
      f"products and its store ([{folder.name}](measurements/{folder.name})). {count_word(len(versions))} versions, each timed against main "
      f"before it in one call on the {' and the '.join(walk_gpus)}, step 15 alone (criterion's point estimates; from `counters/` on, the median "
      f"of {len(runs_of('counters'))} runs of each build, alternating):\n")
    w("| M x N x K | passes a tile | first (`walk.patch`) | " + " | ".join(f"`{sub}/`" for sub in subs) + " |")
    w("| --- | --- |" + " --- |" * len(versions))
    for s in shapes:
        w(f"| {s} | {passes(s)} | " + " | ".join(f"{change(v, s):+.1%}" for v in versions) + " |")
    w("")
    w(f"- **first** (`walk.patch`): at {split} `K` is split and the grid is the same in both builds, yet it costs "
      f"{change('first', split):+.1%} there: the cost is in the kernel, not in the walk.")
    w("- **`counters/`** (`walk-counters.patch`): the copying thread counts its tile and pass instead of dividing the "
      f"pass index ({change('counters', split):+.1%} at {split}).")
    w("- **`splitter/`**: the splitters too count the tile's first row, which the marks of a non-finite `A` name. They "
      "divided the pass index in each of their eight unrolled chunks' non-finite branches: never taken, but eight "
      "copies of a 64-bit division in the loop of the warpgroup that bounds the step "
      f"({change('splitter', split):+.1%} at {split}).")
    w("- **`copies/`**: a block of one tile runs a second copy of the code, with no walk in it (`tiles_of::<C, "
      f"false>`): {change('copies', split):+.1%} at {split}. Walking gains {-change('copies', shallow):.1%} where a "
      f"tile has {passes(shallow)} passes and costs " + " and ".join(
          f"{change('copies', s):+.1%} where it has {passes(s)}" for s in deep) + ".")
    w(f"- **`final/`**: blocks walk only where a tile has at most {limit} passes (`DX3_WALK_PASSES`); elsewhere step "
      "15 launches one block a tile, as before.\n")
    f = ab("final", "gemm_shapes")
    torch = {m.group(1): float(m.group(2)) * 1e3 for m in re.finditer(r"torch sgemm (\S+): ([\d.]+) ms", rd("final/torch.log"))}
    w(f"`gemm::sgemm` in the final call (step 15 at these shapes then; criterion, median of {len(runs_of('final'))} "
      "runs of each build; cuBLAS SGEMM through PyTorch, same call):\n")
    w("| M x N x K | before (us) | after (us) | cuBLAS SGEMM (us) | speed-up over cuBLAS SGEMM, before / after |")
    w("| --- | --- | --- | --- | --- |")
    for s in shapes:
        b, a_ = f["base"][s], f["walk"][s]
        w(f"| {s} | {b:.1f} | {a_:.1f} | {torch[s]:.1f} | {torch[s] / b:.2f}x / {torch[s] / a_:.2f}x |")
    w("")
    w(f"With the final build the GEMM tests ran {tests.group(1)} passed, {tests.group(2)} failed on the GPU (walking "
      f"blocks at {walked[0]} to {walked[-1]} tiles, special values among them), and compute-sanitizer over the walking "
      f"GPU test found {memcheck} errors (memcheck) and {racecheck} hazards (racecheck). The off-tile table above is "
      f"of a later build: its step 15 walks at {', '.join(walks)}, and its `gemm::sgemm` runs step 16, which does not "
      "walk.\n")


for f in walk_runs:
    walk_section(f)

tc_sgemm = {n: cublas(n, "sgemm") for n in SIZES}
WHY = {
    "naive": lambda: f"Two global loads per FMA: {ncu['gemm_naive']['lts__t_bytes.sum'] / 1e9:.1f} GB pass through L2 "
    "for 0.2 GB of matrices.",
    "smem_tiled": lambda: "Each global element is read once per tile instead of once per thread; the shared loads "
    f"({conflicts('gemm_smem_tiled')} wavefronts each) now bound it.",
    "blocktile_1d": lambda: "One `B` value in a register feeds 8 FMAs.",
    "blocktile_2d": lambda: f"16 shared values feed 64 FMAs; {regs.get('gemm_blocktile_2d')} registers.",
    "vectorized": lambda: f"4x fewer global load instructions; {regs.get('gemm_vectorized')} registers.",
    "warptile": lambda: f"{conflicts('gemm_warptile')} shared wavefronts per 16-byte load instruction, against "
    f"{conflicts('gemm_vectorized')} in step 5: the lanes of a warp read fragments that share banks only when they "
    "share addresses (a broadcast).",
    "double_buffered": lambda: f"FMA pipe {nc('gemm_double_buffered', 'sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active', 1)}% "
    f"active, {regs.get('gemm_double_buffered')} registers: one block per SM, close to the FP32 roof where cuBLAS is "
    f"({tflops(4096, 'double_buffered') / tc_sgemm[4096]:.2f}x and {tflops(8192, 'double_buffered') / tc_sgemm[8192]:.2f}x "
    "cuBLAS SGEMM).",
    "tf32": lambda: f"Tensor cores through `mma.sync`: tensor pipe {nc('gemm_tf32', 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active', 1)}% "
    "active; each warp waits on its own shared-memory fragment loads.",
    "wgmma": lambda: f"The tensor cores read both operands from shared memory: {tflops(8192, 'wgmma') / tflops(8192, 'tf32'):.1f}x step 8 at "
    f"8192^3, {tflops(8192, 'wgmma') / cublas(8192, 'tf32'):.2f}x cuBLAS TF32. Tensor pipe "
    f"{nc('gemm_wgmma', 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active', 1)}% active: the same threads "
    "load the next tiles and issue the MMAs, so global latency stalls the tensor cores; TMA and a producer warp are next.",
    "wgmma_3xtf32": lambda: f"Three `wgmma` products per term: {tflops(8192, 'wgmma_3xtf32') / tc_sgemm[8192]:.2f}x "
    f"cuBLAS SGEMM at 8192^3, with {err('wgmma_3xtf32', 8192) / err('cublas_sgemm', 8192):.1f}x its largest error "
    "(above): fast, not FP32-accurate on the GPU, where the accumulator over all of K drifts.",
}
WHY["wgmma_promoted"] = lambda: (
    f"The accuracy is fixed: largest error {err('wgmma_promoted', 4096) / err('cublas_sgemm', 4096):.2f}x and "
    f"{err('wgmma_promoted', 8192) / err('cublas_sgemm', 8192):.2f}x cuBLAS SGEMM's at 4096^3 and 8192^3, Frobenius "
    f"error {tc['err_wgmma_promoted_8192']['fro_rel'] / tc['err_wgmma_promoted_4096']['fro_rel']:.2f}x from K = 4096 "
    f"to 8192. The speed is {tflops(4096, 'wgmma_promoted') / cublas(4096, 'sgemm'):.2f}x and "
    f"{tflops(8192, 'wgmma_promoted') / cublas(8192, 'sgemm'):.2f}x cuBLAS SGEMM, "
    f"{tflops(8192, 'wgmma_promoted') / tflops(8192, 'wgmma_3xtf32'):.2f}x step 10 at 8192^3: two register sets of "
    "`m64n256` do not fit 255 registers, so the tile is 128x128, with 4/3 of the shared-memory stores and global "
    "loads per product of a 128x256 one, and the tensor cores drain at every tile.")
pack = ncu.get("gemm_pack", {})
WHY["wgmma_tma"] = lambda: (
    f"{tflops(4096, 'wgmma_tma') / cublas(4096, 'tf32'):.2f}x and {tflops(8192, 'wgmma_tma') / cublas(8192, 'tf32'):.2f}x "
    f"cuBLAS TF32 at 4096^3 and 8192^3, {tflops(8192, 'wgmma_tma') / tflops(8192, 'wgmma'):.1f}x step 9, with the same "
    f"error as cuBLAS TF32 ({err('wgmma_tma', 8192) / err('cublas_tf32', 8192):.2f}x its largest at 8192^3). Tensor pipe "
    f"{nc('gemm_wgmma_tma', 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active', 1)}% active over "
    f"{nc('gemm_wgmma_tma', 'Duration')} us at 4096^3. The two operand passes (`pack`, entry `gemm_pack`, "
    f"`kernels/src/gemm/pack.rs`: {nc('gemm_pack', 'Duration')} us and {pack.get('dram__bytes.sum', 0) / 1e9:.2f} GB "
    "of DRAM traffic each at 4096^3, as `ncu.txt` lists them) are part of every call and of its time: at 4096^3 they "
    "are the larger part of the gap to cuBLAS, at 8192^3 half as large a share.")
# The size ncu profiles (scripts/gpu/gemm.sh: the 4096^3 spot-check test), and
# step 13's tile of C, from the registry's geometry.
NCU_SIZE = 4096
TX3_TILE = tuple(map(int, re.search(r"tile: \((\d+), (\d+)\)",
                                    next(s["geometry"] for s in STEPS if s["name"] == "wgmma_tma_3xtf32")).groups()))
WHY["wgmma_tma_3xtf32"] = lambda: (
    f"FP32-accurate at {tflops(4096, 'wgmma_tma_3xtf32') / cublas(4096, 'sgemm'):.2f}x and "
    f"{tflops(8192, 'wgmma_tma_3xtf32') / cublas(8192, 'sgemm'):.2f}x cuBLAS SGEMM's speed, with "
    f"{err('wgmma_tma_3xtf32', 4096) / err('cublas_sgemm', 4096):.2f}x and "
    f"{err('wgmma_tma_3xtf32', 8192) / err('cublas_sgemm', 8192):.2f}x its largest error (step 11's arithmetic, the same "
    f"bits); {tflops(8192, 'wgmma_tma_3xtf32') / tflops(8192, 'wgmma_promoted'):.2f}x step 11 at 8192^3. Tensor pipe "
    f"{nc('gemm_wgmma_tma_3xtf32', 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active', 1)}% active, "
    f"and L2 at {nc('gemm_wgmma_tma_3xtf32', 'L2 Cache Throughput', 1)}% of its peak throughput: "
    f"{ncu['gemm_wgmma_tma_3xtf32']['lts__t_bytes.sum'] / 1e9:.2f} GB cross L2 at {NCU_SIZE}^3 "
    f"({ncu['gemm_wgmma_tma']['lts__t_bytes.sum'] / 1e9:.2f} GB for step 12), since each block reads the "
    f"{TX3_TILE[0]}-row panels of four halves, not two: each half of `A` is read {NCU_SIZE // TX3_TILE[1]} times "
    f"over, once per block of its tile row, and each half of `B^T` {NCU_SIZE // TX3_TILE[0]} times, once per block "
    "of its tile column. "
    "Faster than cuBLAS SGEMM and more accurate, it was what `gemm::sgemm` launched at the 4096-class shapes until "
    "step 16.")
ex = lambda name, size: tc[f"ex_{name}_{size}"]["TFLOPs"]
# Step 14's group height, same-run A/B (group.txt: base step 12's groups of 16 tile rows, new groups of 8; only
# step 14's PTX differs, so the other rows' new / base time is the run's noise).
DIRECT_AB = "docs/measurements/2026-11-28-h100-gemm-direct-ab"
group_ab = {(m.group(1), m.group(2), m.group(3)): float(m.group(4)) for m in re.finditer(
    r"^(\w+)\s+(\w+)\s+(.+?)\s+[\d.]+ ms\s+[\d.]+ ms\s+([\d.]+)$", (ROOT / DIRECT_AB / "group.txt").read_text(), re.M)}
group_direct = {int(k[2].removesuffix("^3")): v for k, v in group_ab.items() if k[:2] == ("gemm", "wgmma_direct")}
group_noise = [v for k, v in group_ab.items() if k[:2] != ("gemm", "wgmma_direct")]
group_sizes = sorted(group_direct)
group_past = [n for n in group_sizes if group_direct[n] < min(group_noise)]
group_claim = ("measured slower" if len(group_past) == len(group_sizes) else
               "measured slower at " + " and ".join(f"{n}^3" for n in group_past) + " only" if group_past else
               "not measured slower")
GROUP_16 = (
    f"step 12's 16 {group_claim}: groups of 8 take " + " and ".join(f"{group_direct[n]:.3f}x" for n in group_sizes)
    + " its time at " + " and ".join(f"{n}^3" for n in group_sizes)
    + f", where the rows whose PTX both builds share moved {min(group_noise):.3f}x to {max(group_noise):.3f}x: "
    f"`{DIRECT_AB}/group.txt`")
WHY["wgmma_direct"] = lambda: (
    f"{tflops(4096, 'wgmma_direct') / cublas(4096, 'tf32'):.2f}x and "
    f"{tflops(8192, 'wgmma_direct') / cublas(8192, 'tf32'):.2f}x cuBLAS TF32 at 4096^3 and 8192^3 by criterion, whose "
    f"runs keep the GPU busy for seconds; timed as cuBLAS is (`tc.log`: medians of {EX_REPS} CUDA-event timings after "
    f"warm-up), {ex('wgmma_direct', 4096):.1f} and {ex('wgmma_direct', 8192):.1f} TFLOP/s, "
    f"{ex('wgmma_direct', 4096) / cublas(4096, 'tf32'):.2f}x and {ex('wgmma_direct', 8192) / cublas(8192, 'tf32'):.2f}x "
    f"cuBLAS TF32, where step 12 makes {ex('wgmma_tma', 4096):.1f} and {ex('wgmma_tma', 8192):.1f}. Its largest error "
    f"is cuBLAS TF32's ({err('wgmma_direct', 4096) / err('cublas_tf32', 4096):.2f}x and "
    f"{err('wgmma_direct', 8192) / err('cublas_tf32', 8192):.2f}x at 4096^3 and 8192^3): both round to nearest even. "
    f"Tensor pipe {nc('gemm_wgmma_direct', 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active', 1)}% active "
    f"over {nc('gemm_wgmma_direct', 'Duration')} us at {NCU_SIZE}^3, with no operand pass before it; "
    f"{ncu['gemm_wgmma_direct']['dram__bytes.sum'] / 1e9:.2f} GB of DRAM traffic. The columns each lane takes "
    f"(`pair_of`) put each 16-lane half of a fragment load on all 32 banks, which the emulator counts as {frag_model} wavefronts a "
    f"request; the {gpu_name} takes {conflicts('gemm_wgmma_direct')} (below: the other traffic in its banks). The tiles go in groups of 8 tile rows "
    f"({GROUP_16}).")
if h200:
    h2 = tc_figures((h200 / "tc-first-build.log").read_text())
    h2_final = tc_figures((h200 / "tc.log").read_text())
    h2_gpu = re.search(r"^NVIDIA (H200[^(]*?) \(", (h200 / "tc.log").read_text(), re.M).group(1).strip()
def read_probes(path, step="wgmma_direct_3xtf32"):
    """probes.txt: each variant's TFLOP/s of `step` (the step probed) by size, the mean of its blocks."""
    out = {}
    for block in re.split(r"^== ", path.read_text(), flags=re.M)[1:]:
        name = block.split()[0]
        for m in re.finditer(rf"^{step} (\d+)\^3: median [\d.]+ ms .* ([\d.]+) TFLOP/s", block, re.M):
            out.setdefault((name, int(m.group(1))), []).append(float(m.group(2)))
    return lambda name, n: sum(out[(name, n)]) / len(out[(name, n)])


if h200:
    probe = read_probes(h200 / "probes.txt")
    step14 = WHY["wgmma_direct"]
    WHY["wgmma_direct"] = lambda: step14() + (
        f" On an NVIDIA {h2_gpu} (`docs/measurements/{h200.name}`, `tc-first-build.log`, one call), timed as cuBLAS is: "
        f"{h2['wgmma_direct_4096']:.1f} and {h2['wgmma_direct_8192']:.1f} TFLOP/s, "
        f"{h2['wgmma_direct_4096'] / h2['tf32_4096']:.2f}x and {h2['wgmma_direct_8192'] / h2['tf32_8192']:.2f}x cuBLAS "
        f"TF32, with {h2['err_wgmma_direct_4096'] / h2['err_cublas_tf32_4096']:.2f}x and "
        f"{h2['err_wgmma_direct_8192'] / h2['err_cublas_tf32_8192']:.2f}x its largest error.")
# A shape run with a tc.log of its own (steps 12-15 and cuBLAS timed after at least
# 500 ms of the same work, the GPU at its power limit's clock): step 14 against cuBLAS TF32 there.
for other in shape_runs:
    if not (other / "tc.log").exists():
        continue
    sus_log = (other / "tc.log").read_text()
    sus, sus_gpu = tc_figures(sus_log), re.search(r"^NVIDIA (\S+)", sus_log, re.M).group(1)
    step14_before = WHY["wgmma_direct"]
    WHY["wgmma_direct"] = lambda sus=sus, sus_gpu=sus_gpu, other=other, before=step14_before: before() + (
        f" Timed at the clock a tensor-core GEMM holds at the power limit (each kernel warmed up long enough to reach "
        f"it: `docs/measurements/2026-11-28-h200-gemm-sustained` shows why), on the {sus_gpu} of `docs/measurements/{other.name}` (`tc.log`): "
        f"{sus['wgmma_direct_4096']:.1f} and {sus['wgmma_direct_8192']:.1f} TFLOP/s, "
        f"{sus['wgmma_direct_4096'] / sus['tf32_4096']:.2f}x and {sus['wgmma_direct_8192'] / sus['tf32_8192']:.2f}x "
        f"cuBLAS TF32 ({sus['tf32_4096']:.1f} and {sus['tf32_8192']:.1f}), with "
        f"{sus['err_wgmma_direct_4096'] / sus['err_cublas_tf32_4096']:.2f}x and "
        f"{sus['err_wgmma_direct_8192'] / sus['err_cublas_tf32_8192']:.2f}x its largest error.")
h1probe = read_probes(h100_probes / "probes.txt") if h100_probes else None
WHY["wgmma_direct_3xtf32"] = lambda: (
    f"Timed as cuBLAS is (`tc.log`), {ex('wgmma_direct_3xtf32', 4096):.1f} and {ex('wgmma_direct_3xtf32', 8192):.1f} "
    f"TFLOP/s at 4096^3 and 8192^3, {ex('wgmma_direct_3xtf32', 4096) / cublas(4096, 'sgemm'):.2f}x and "
    f"{ex('wgmma_direct_3xtf32', 8192) / cublas(8192, 'sgemm'):.2f}x cuBLAS SGEMM, where step 13 makes "
    f"{ex('wgmma_tma_3xtf32', 4096):.1f} and {ex('wgmma_tma_3xtf32', 8192):.1f} "
    f"({ex('wgmma_direct_3xtf32', 4096) / ex('wgmma_tma_3xtf32', 4096):.2f}x and "
    f"{ex('wgmma_direct_3xtf32', 8192) / ex('wgmma_tma_3xtf32', 8192):.2f}x step 13). Its largest error is "
    f"{err('wgmma_direct_3xtf32', 4096) / err('cublas_sgemm', 4096):.2f}x and "
    f"{err('wgmma_direct_3xtf32', 8192) / err('cublas_sgemm', 8192):.2f}x cuBLAS SGEMM's (step 13's "
    f"{err('wgmma_tma_3xtf32', 4096) / err('cublas_sgemm', 4096):.2f}x and "
    f"{err('wgmma_tma_3xtf32', 8192) / err('cublas_sgemm', 8192):.2f}x): truncated high halves leave a split exact to "
    "2^-19 of a product where step 13's is to 3 * 2^-22, and the promoted sums keep it far below FP32's summation error. "
    f"No operand pass, and half of step 13's L2 traffic: {ncu['gemm_wgmma_direct_3xtf32']['lts__t_bytes.sum'] / 1e9:.2f} "
    f"GB at {NCU_SIZE}^3 against {ncu['gemm_wgmma_tma_3xtf32']['lts__t_bytes.sum'] / 1e9:.2f}; yet the product alone is "
    f"slower: tensor pipe {nc('gemm_wgmma_direct_3xtf32', 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active', 1)}% "
    f"active over {nc('gemm_wgmma_direct_3xtf32', 'Duration')} us, step 13's "
    f"{nc('gemm_wgmma_tma_3xtf32', 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active', 1)}% over "
    f"{nc('gemm_wgmma_tma_3xtf32', 'Duration')} us. So it beats step 13 only where the pass weighs most (off the "
    "tile, above), and step 16 beats it everywhere."
    + ("" if not h200 else
       f" What it costs, measured on an NVIDIA {h2_gpu} by taking one part out at a time (`docs/measurements/{h200.name}/"
       f"probes.txt`, wrong results on purpose, medians at 4096^3 and 8192^3): the whole step "
       f"{probe('base', 4096):.1f} and {probe('base', 8192):.1f} TFLOP/s; without the splitter's work "
       f"{probe('nosplit', 4096):.1f} and {probe('nosplit', 8192):.1f}; with the splitter only copying `A` into `A_lo` "
       f"(its loads and stores, no arithmetic) {probe('copyonly', 4096):.1f} and {probe('copyonly', 8192):.1f}; "
       f"without `B`'s low half {probe('nobsplit', 4096):.1f} and {probe('nobsplit', 8192):.1f}. The splitter's "
       "shared-memory traffic (16 KiB read and 16 KiB written a stage, beside the TMA's writes and the tensor cores' "
       "operand reads) is the cost, not its arithmetic. "
       f"On the {h2_gpu}, in the call of that folder's `tc.log`, step 15 makes "
       f"{h2_final['wgmma_direct_3xtf32_4096']:.1f} and {h2_final['wgmma_direct_3xtf32_8192']:.1f} TFLOP/s, step 13 "
       f"{h2_final['wgmma_tma_3xtf32_4096']:.1f} and {h2_final['wgmma_tma_3xtf32_8192']:.1f}. "
       + ("" if not h100_probes else
          f"On the H100 (`docs/measurements/{h100_probes.name}/probes.txt`, one call), the splitter's loads weigh more "
          f"than its stores: without the loads (its stores of `A_lo` kept) {h1probe('storeonly', 4096):.1f} and "
          f"{h1probe('storeonly', 8192):.1f} TFLOP/s, "
          f"{h1probe('storeonly', 4096) / cublas(4096, 'sgemm'):.2f}x and {h1probe('storeonly', 8192) / cublas(8192, 'sgemm'):.2f}x "
          f"this page's cuBLAS SGEMM (timed in another call); without the stores {h1probe('loadonly', 4096):.1f} and "
          f"{h1probe('loadonly', 8192):.1f}; the whole step {h1probe('base', 4096):.1f} and {h1probe('base', 8192):.1f}. "
          "The next step takes `A_lo` out of the block: step 16.")
       + 
       ""))
# Step 16's probes, in the primary run's folder: step 15 with one change per binary, wrong results on purpose.
probe16 = read_probes(run / "probes.txt") if (run / "probes.txt").exists() else None
# The operand pass before step 16's product: ncu's launch of `gemm_pack` right before it.
launches = ncu_launches(read("ncu.txt"))
pack16 = next((launches[i - 1][1] for i, (k, _) in enumerate(launches)
               if k == "gemm_wgmma_split_a_3xtf32" and i > 0 and launches[i - 1][0] == "gemm_pack"), None)
tensor = lambda k: nc(k, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 1)
WHY["wgmma_split_a_3xtf32"] = lambda: (
    f"Timed as cuBLAS is (`tc.log`), {ex(SGEMM, 4096):.1f} and {ex(SGEMM, 8192):.1f} TFLOP/s at 4096^3 and "
    f"8192^3, {ex(SGEMM, 4096) / cublas(4096, 'sgemm'):.2f}x and {ex(SGEMM, 8192) / cublas(8192, 'sgemm'):.2f}x "
    f"cuBLAS SGEMM: {ex(SGEMM, 4096) / ex(STEP13, 4096):.2f}x and {ex(SGEMM, 8192) / ex(STEP13, 8192):.2f}x step 13, "
    f"{ex(SGEMM, 4096) / ex(SGEMM_DIRECT, 4096):.2f}x and {ex(SGEMM, 8192) / ex(SGEMM_DIRECT, 8192):.2f}x step 15. "
    f"Its largest error is {err(SGEMM, 4096) / err('cublas_sgemm', 4096):.2f}x and "
    f"{err(SGEMM, 8192) / err('cublas_sgemm', 8192):.2f}x cuBLAS SGEMM's. Tensor pipe {tensor('gemm_' + SGEMM)}% "
    f"active over {nc('gemm_' + SGEMM, 'Duration')} us at {NCU_SIZE}^3, step 13's {tensor('gemm_' + STEP13)}% over "
    f"{nc('gemm_' + STEP13, 'Duration')} and step 15's {tensor('gemm_' + SGEMM_DIRECT)}% over "
    f"{nc('gemm_' + SGEMM_DIRECT, 'Duration')}; {ncu['gemm_' + SGEMM]['lts__t_bytes.sum'] / 1e9:.2f} GB cross L2, "
    f"between step 15's {ncu['gemm_' + SGEMM_DIRECT]['lts__t_bytes.sum'] / 1e9:.2f} and step 13's "
    f"{ncu['gemm_' + STEP13]['lts__t_bytes.sum'] / 1e9:.2f} (three tiles a stage: step 15's two and `A_lo`)"
    + ("" if not pack16 else
       f"; the pass over `A` before it takes {pack16['Duration']:.0f} us and "
       f"{pack16['dram__bytes.sum'] / 1e9:.2f} GB of DRAM traffic")
    + ". " + ("" if not probe16 else
              f"Predicted by a probe before it was written (`docs/measurements/{run.name}/probes.txt`, one call, "
              "step 15 with one change per binary, results wrong on purpose): with the TMA copying `A` a second time "
              f"into the `A_lo` slot and the splitter idle, {probe16('tmalo', 4096):.1f} and {probe16('tmalo', 8192):.1f} "
              f"TFLOP/s where step 15 made {probe16('base', 4096):.1f} and {probe16('base', 8192):.1f}; with no `A_lo` at "
              f"all {probe16('nosplit', 4096):.1f} and {probe16('nosplit', 8192):.1f}: a third tile a stage through the "
              "TMA costs far less than the splitter's 32 KiB through the threads. The splitter reading `A` from L2 "
              f"instead of the stage (16-byte global loads, each chunk split and stored before the next is loaded) "
              f"fell to {probe16('gload', 4096):.1f} and {probe16('gload', 8192):.1f}. ")
    + "What `gemm::sgemm` launches with the sm_90a module, at every shape (off the tile, above).")
# Step 15's "step 16 beats it everywhere": at every off-tile shape and both ladder sizes.
assert all(r[1][SHAPE_STEPS.index(SGEMM)] > r[1][SHAPE_STEPS.index(SGEMM_DIRECT)] for r in shape_rows) and all(
    tflops(n, SGEMM) > tflops(n, SGEMM_DIRECT) for n in SIZES), "step 16 is not ahead of step 15 everywhere"
for s in STEPS:
    WHY.setdefault(s["name"], lambda: "")
w("## The ladder, one idea per step\n")
step_sections(w, STEPS, lambda name: f"{tflops(4096, name):.1f} TFLOP/s at 4096^3, {tflops(8192, name):.1f} at 8192^3", WHY,
              op="gemm")
not_measured(w, "gemm")

results = re.findall(r"^test result: (.*)$", tests, re.M)
spots = re.findall(r"gpu\s+(\w+) 4096x4096x4096 spot: max error / bound ([\d.e+-]+)", tests)
if specials:
    sp = (specials / "specials.txt").read_text().splitlines()
    sp_machine = (specials / "machine.txt").read_text().splitlines()
    sgemm_step = re.search(r"sgemm runs (\w+)", sp[0]).group(1)

    def ab_log(name):
        """examples/gemm_tensor_cores of two or three builds in turn (`== <build> ...` sections): the median over the
        passes of each (build, step, size)'s time, and the number of passes."""
        runs, build = {}, None
        for l in (specials / name).read_text().splitlines():
            if l.startswith("== "):
                build = "nofin" if "no non-finite" in l else l.split()[1]
            elif m := re.match(r"\s*(\w+) (\d+)\^3: median ([\d.]+) ms", l):
                runs.setdefault((build, m.group(1), int(m.group(2))), []).append(float(m.group(3)))
        return {key: median(v) for key, v in runs.items()}, len(runs[("new", sgemm_step, 4096)])
    ab, ab_passes = ab_log("ab.log")
    rn_ab, rn_passes = ab_log("rn-ab.log")
    # "x and y": build `num`'s time over build `den`'s for `step`, at 4096^3 and 8192^3.
    ratios = lambda t, num, den, step: " and ".join(f"{t[(num, step, n)] / t[(den, step, n)]:.3f}" for n in (4096, 8192))
    cublas_at = next(i for i, l in enumerate(sp) if l.startswith("input") and "cuBLAS" in l)
    rows = [l for l in sp[3:cublas_at] if l.strip()]
    peers = {l[:44].strip(): l[44:].strip() for l in sp[cublas_at + 1:] if l.strip()}
    sub_scale = re.search(r"x (2\^\d+) column", next(l for l in rows if l.startswith("subnormal"))).group(1)
    # A cell's largest error, and the same in the file's short form.
    sub_err = lambda cell: float(re.search(r"err (\S+)", cell).group(1))
    sci = lambda x: re.sub(r"e([+-])0*(\d)", r"e\1\2", f"{x:.1e}").replace("e+", "e")

    def errs(lines, start):
        """The largest errors of the row of `lines` that starts so: `sgemm`'s, step 7's and cuBLAS SGEMM's (this
        run's)."""
        row = next(l for l in lines if l.startswith(start))
        return sub_err(row[44:][21:66]), sub_err(row[44:][66:]), sub_err(peers[row[:44].strip()])
    sub_ours, sub_db, sub_cublas = errs(rows, "subnormal")
    w("## Special values, subnormals and empty products\n")
    w("`gemm::sgemm` has FP32 semantics on every path: for any inputs, the non-finite pattern of `C` is an FP32 FMA "
      "GEMM's. Step 7 computes with FP32 FMAs. Step 13's split cannot hold a non-finite `x`: `inf - tf32(inf)` is NaN, "
      "and a NaN whose payload lies only in the low 13 bits reads as inf to the tensor cores. So its operand pass "
      "(`gemm_pack` with `PACK_SPLIT`) writes zero halves for every non-finite input and marks its row of `A` or column of "
      "`B` in `1 + M + N` words of the workspace (zeroed by a memset in stream order). After the product, `fixup` "
      "(entry `gemm_fixup`, [`gemm/fixup.rs`](../kernels/src/gemm/fixup.rs)) recomputes exactly the marked rows and "
      "columns of `C` with FP32 FMAs from `A` and `B`: in FP32 every element there is non-finite (a term `inf * b` is "
      "`±inf` or NaN, a NaN term is NaN, and no FMA makes a non-finite sum finite), so `alpha * dot` is FP32's, sign of "
      "inf and NaN alike. The product already wrote `alpha * acc + beta * C0` there with `acc` finite, which is non-finite "
      "exactly where `beta * C0` is: the fix-up adds it in those places (`+inf + -inf` is NaN, as in FP32) and reads "
      "nothing where `beta == 0`. With no mark, each fix-up block reads one word and exits: no host synchronisation, and "
      "a CUDA graph capture takes the memset and the fix-up as two nodes more. Steps 15 and 16 (`gemm::sgemm` runs "
      "step 16) mark the same words: step 15's splitter marks the rows of `A` and step 16's pass does (the pass is "
      "step 13's), and both steps' consumers zero a non-finite `b` and mark its column of `B`; the same fix-up "
      "follows. The GEMM tests check every one of these steps against FP32's non-finite pattern on the emulator and "
      f"on the GPU (`tests/gemm/specials.rs`); the table below is of `{sgemm_step}`'s run.\n")
    w("- **Overflow:** the split rounds the big half to nearest, except where that passes `FLT_MAX` (`|x|` within half "
      "a TF32 ulp of it), where it truncates (as CUTLASS truncates every big half): every finite input splits into finite "
      "halves, with `|hi| <= |x|` there. Sums and products that overflow in FP32 overflow here too, except within "
      "rounding of `FLT_MAX`, where FP32 GEMMs of different summation orders differ as well; in a marked row or "
      "column, an overflow of the finite terms' `alpha * acc + beta * C0` counts as a non-finite `beta * C0`.")
    w("- **An inf or NaN `alpha`:** every element of `C` is then inf or NaN in FP32, and the fix-up cannot tell `beta * "
      "C0` from the product's value, which is non-finite everywhere; steps 13, 15 and 16 hand such a product to step 7 "
      "(the host's plan, `fp32_for`). Split K scales the sum of the runs by `alpha`, not each run, so runs that "
      "overflow alone but not together give FP32's finite result (`tests/gemm/split_k.rs`).")
    w("- **Subnormals:** step 7 computes them as FP32 FMAs do (no flush to zero). In steps 13 and 15 a TF32 half keeps a "
      "subnormal's bits from `2^-136` up (below `2^-137` it splits into zeros), so an input under `2^-126` carries an "
      "absolute error up to `2^-137`, not a relative one, and a product of halves below `2^-126` may lose bits in the "
      "tensor cores. The tests bound it by `|alpha| sum_k (d(a) |b| + |a| d(b) + 4 * 2^-126)`, `d(x) = 2^-126` for "
      "`0 < |x| < 2^-115`, on top of the FP32-level bound. Measured below: a row of subnormals against a column scaled "
      f"by `{sub_scale}` has a largest error of {sci(sub_ours)} of `sum |a b|` where "
      + (f"cuBLAS SGEMM and step 7 keep {sci(sub_db)}" if sci(sub_db) == sci(sub_cublas)
         else f"cuBLAS SGEMM keeps {sci(sub_cublas)} and step 7 {sci(sub_db)}")
      + "; the tensor cores do not flush the subnormal halves (a flush would lose the whole row). That run is of step 16 "
      "before it scaled its operands. **Step 16 (`gemm::sgemm`) now scales them** ([`gemm/scale.rs`](../kernels/src/gemm/scale.rs)): "
      "`maxima` (entry `gemm_maxima`) finds each row of `A`'s and each column of `B`'s largest finite `|x|`, a row or column whose peak lies "
      "outside `[2^0, 2^46]` is scaled into it by an exact power of two (`A`'s rows by the split pass, `B`'s columns in the "
      "consumers' registers), and the epilogue multiplies each element back once, in f64. Subnormal rows, near-`FLT_MAX` "
      "rows and operands scaled by `1e-17` or `1e17` then split without losing bits, and the tests hold step 16 to the "
      "FP32-level bound with no subnormal slack. The error on each input class beside cuBLAS SGEMM, and the same-run "
      "timings against the build before, are in [2026-12-02-h200-gemm-scaling](measurements/2026-12-02-h200-gemm-scaling).")
    w("- **Teaching steps:** steps 10 and 11 keep the plain split of the threads' staging: an inf or NaN input turns "
      "its whole row or column into NaN, and `|x|` near `FLT_MAX` rounds to inf in `hi`. Step 12 (TF32) rounds inf to inf; "
      "it is not FP32 either. Steps 1-7 are FP32.")
    w("- **Empty products**, as in BLAS, for every launcher (`gemm::launch`, `sgemm`, the step launchers, "
      "`gemm::emu::*`): `M = 0` or `N = 0` does nothing; `K = 0` gives `C = beta * C` (`+0` where `beta == 0`, `C` "
      "not read; `C` untouched where `beta == 1`), launched as step 1 with `alpha = 0` and no terms.\n")
    w(f"On an {sp_machine[2].split(',')[0]} (commit `{sp_machine[0].split()[-1]}`), {sp[0].split('(')[1].split(')')[0]}, "
      "`examples/gemm_specials.rs` and `scripts/gpu/peers gemm-specials` in one call: each output as "
      "NaN/+inf/-inf/finite counts, `off` the elements whose pattern is not the FP32 FMA reference's, `err` the largest "
      "error of the finite ones over `sum |a b|` against the exact product:\n")
    w(f"| input | FP32 FMA reference | `{sgemm_step}` (`sgemm`) | `double_buffered` | cuBLAS SGEMM |")
    w("| --- | --- | --- | --- | --- |")
    for l in rows:
        name, rest = l[:44].strip(), l[44:]
        ref, ours, db = rest[:21].strip(), rest[21:66].strip(), rest[66:].strip()
        w(f"| {name} | {ref} | {ours} | {db} | {peers.get(name, '-')} |")
    w("")
    flt_ours, flt_db, flt_cublas = errs(rows, "FLT_MAX")
    uni_ours = errs(rows, "finite")[0]
    rn_rows = (specials / "rn-specials.txt").read_text().splitlines()
    rn_flt, rn_uni = errs(rn_rows, "FLT_MAX")[0], errs(rn_rows, "finite")[0]
    w(f"The finite-input cost, timed as the ladder is (`examples/gemm_tensor_cores`, medians of 20) in {ab_passes} "
      "alternating passes of two builds in the same call (`ab.log`): the shipped kernels against the same with every "
      "non-finite test and mark compiled out and no memset or fix-up launched (`nofin.patch`, wrong on special "
      f"values). New / `nofin` time at 4096^3 and 8192^3: `{sgemm_step}` (`sgemm`) {ratios(ab, 'new', 'nofin', sgemm_step)}; "
      f"step 13 {ratios(ab, 'new', 'nofin', 'wgmma_tma_3xtf32')}; step 15 {ratios(ab, 'new', 'nofin', 'wgmma_direct_3xtf32')}, whose "
      "splitter tests every `a` it splits, in the loop that bounds it. compute-sanitizer memcheck and racecheck over "
      "the special-value GPU test report no error (`sanitizer.log`).\n")
    w(f"Besides the subnormal row (above), one row passes cuBLAS SGEMM's error: `FLT_MAX`, {sci(flt_ours)} of "
      f"`sum |a b|` against cuBLAS SGEMM's "
      f"{sci(flt_cublas)} (step 7: {sci(flt_db)}). There one product dominates each output of its row and column, "
      "so what shows is the split's dropped `lo * lo`, not the summation: `B`'s high half is `b` truncated (the tensor "
      "cores read its top 19 bits), so its low half reaches `2^-10 |b|` where a split to nearest leaves `2^-11`. Split "
      f"to nearest in the consumers instead (`rn.patch`, a second call: `rn-specials.txt`, `rn-ab.log`), the row "
      f"measured {sci(rn_flt)}, but `{sgemm_step}` took {ratios(rn_ab, 'new', 'base', sgemm_step)} the time of the shipped "
      f"kernel at 4096^3 and 8192^3 ({rn_passes} alternating passes), and with that build's finiteness test taken out "
      f"still {ratios(rn_ab, 'nofin', 'base', sgemm_step)}; on the "
      f"uniform row it measured {sci(rn_uni)} against {sci(uni_ours)}. `sgemm` keeps the truncation: on outputs that one product "
      "dominates its error is up to `2^-21` of it (`Variant::error_bound` holds either way).\n")

w("## Checks in the same call\n")
w(f"- `test-gemm` (every step against f64 at odd shapes, edges, misaligned buffers, bad input, and 4096^3 "
  f"spot-checked): {results[-1] if results else 'no result line'}.")
sanitizer = [l.strip("= ").strip() for l in read("sanitizer.log").splitlines() if "SUMMARY" in l]
w("- compute-sanitizer over the GPU tests (odd shapes): memcheck `" + sanitizer[0] + "`, racecheck `" + sanitizer[-1] + "`.")
if spots:
    w("- Largest error over its bound at 4096^3 (20000 random elements): "
      + ", ".join(f"`{n}` {v}" for n, v in spots) + ".")
w("")
w("## Machine\n")
w("```\n" + machine + "\n```")
print("\n".join(P))
