#!/usr/bin/env python3
"""Writes docs/gemm.md from one GPU run's files and the registry.

    python3 scripts/docs/gemm.py docs/measurements/<run> [docs/measurements/<tc run>] > docs/gemm.md

The steps (order, names, files, ideas, the module they need) come from
docs/registry.json. The run folder holds what scripts/gpu/gemm.sh wrote:
machine.txt, tests.log, ptxas.txt, tc.log (the tensor-core steps beside
cuBLAS SGEMM and TF32, and every error against the f64 product, as
examples/gemm_tensor_cores.rs and scripts/gpu/torch_gemm_tc.py print them),
bench.log and criterion_medians.json (criterion over every step
and the off-tile shapes, PyTorch at those shapes), ncu.txt. Every number in
the page comes from those files.

<tc run> (optional) is a later tensor-core call for steps the run predates
(docs/measurements/gemm-step11: step 11): its bench.log
(examples/gemm_tensor_cores.rs), torch_gemm_tc.json (cuBLAS SGEMM and TF32 in
that call, every dumped output's error against f64) and env.log (ptxas -v).
A step missing from <run> takes its figures, and its cuBLAS ratios, from
there, marked as such."""
import json, pathlib, re, sys
from common import NO_FRAME, parse_ncu, ptxas, step_sections, steps

run = pathlib.Path(sys.argv[1])
later = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else None
STEPS = steps("gemm")
read = lambda name: (run / name).read_text()
machine = read("machine.txt").strip()
commit = next(l.split()[1] for l in machine.splitlines() if l.startswith("commit "))
gpu_name = machine.splitlines()[2].split(",")[0]
crit = json.loads(read("criterion_medians.json"))
tests, bench_log, tc_log = read("tests.log"), read("bench.log"), read("tc.log")

# ---- tc.log: cuBLAS in the same call, and every dumped output's error ----------
tc = {"torch": re.search(r"torch (\S+)", tc_log).group(1)}
for m in re.finditer(r"^cuBLAS (\w+)\s+(\d+)\^3: median ([\d.]+) ms .* ([\d.]+) TFLOP/s$", tc_log, re.M):
    tc[f"{m.group(1)}_{m.group(2)}"] = {"median_ms": float(m.group(3)), "TFLOPs": float(m.group(4))}
for m in re.finditer(r"^error (\w+)\s+(\d+)\^3: .*= ([\d.e+-]+)\), \|\|err\|\|/\|\|ref\|\| ([\d.e+-]+)", tc_log, re.M):
    tc[f"err_{m.group(1)}_{m.group(2)}"] = {"max_rel_to_max": float(m.group(3)), "fro_rel": float(m.group(4))}
regs, frames = ptxas(read("ptxas.txt"))

# ---- the later tensor-core call: steps this run predates, with its own cuBLAS ----
late_tf, late_tc = {}, {}
if later:
    for m in re.finditer(r"^\s*(\w+) (\d+)\^3: median ([\d.]+) ms .*?\) ([\d.]+) TFLOP/s", (later / "bench.log").read_text(), re.M):
        late_tf[(m.group(1), int(m.group(2)))] = float(m.group(4))
    late_tc = json.loads((later / "torch_gemm_tc.json").read_text())
    late_regs, late_frames = ptxas((later / "env.log").read_text())
    for entry, r in late_regs.items():
        regs.setdefault(entry, r)
        frames.setdefault(entry, late_frames.get(entry))
module = read("ptxas.txt").splitlines()[0].removeprefix("### ")
SIZES = (4096, 8192)


def kind(s):
    """What a step is compared with: cuBLAS SGEMM (FP32-accurate) or TF32."""
    return "tf32" if s["name"] in ("tf32", "wgmma") else "sgemm"


def in_run(name):
    """Whether the run measured this step (else the later call did)."""
    return f"gemm_4096/{name}" in crit


def tflops(size, name):
    if not in_run(name):
        return late_tf[(name, size)]
    return 2 * size**3 / crit[f"gemm_{size}/{name}"]["median_ns"] / 1e3


def cublas(size, which, name=None):
    """cuBLAS in the call that measured `name` (this run's by default)."""
    src = tc if name is None or in_run(name) else late_tc
    return src[f"{which}_{size}"]["TFLOPs"]


def err(name, size):
    src = tc if in_run(name) or name.startswith("cublas") else late_tc
    return src.get(f"err_{name}_{size}", {}).get("max_rel_to_max")


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
torch_shapes = {tuple(map(int, m.groups()[:3])): float(m.group(5))
                for m in re.finditer(r"torch sgemm (\d+)x(\d+)x(\d+): ([\d.]+) ms ([\d.]+) TFLOP/s", bench_log)}
shape_rows = []
for key, v in crit.items():
    m = re.match(r"gemm_shapes/(\d+)x(\d+)x(\d+)$", key)
    if m:
        s = tuple(map(int, m.groups()))
        shape_rows.append((s, 2 * s[0] * s[1] * s[2] / v["median_ns"] / 1e3, torch_shapes[s]))
order = [tuple(map(int, t)) for t in re.findall(r"gemm_shapes/(\d+)x(\d+)x(\d+)", bench_log)]
shape_rows.sort(key=lambda r: order.index(r[0]))

P = []
w = P.append
w("# GEMM: a ladder from naive to cuBLAS-class FP32, then the tensor cores, measured\n")
w(f"<!-- Generated by scripts/docs/gemm.py from {run}{f' and {later}' if later else ''}; do not edit by hand. -->\n")
w(f"GPU: **{gpu_name}**, module `{module}`, commit `{commit}`, one device call. `C = A B` in f32, row-major; "
  "TFLOP/s count 2 M N K. Our times are criterion medians of CUDA-event GPU time (`cargo bench --bench gemm`); "
  f"cuBLAS is `torch.mm` (PyTorch {tc['torch']}) in the same call, with TF32 off (SGEMM) and on (TF32), "
  "median of CUDA-event timings after warm-up (`scripts/gpu/torch_gemm_tc.py`, in `tc.log`).\n")
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
        cells += [f"{t:.1f}", f"{t / cublas(n, kind(s), s['name']):.2f}x {'TF32' if kind(s) == 'tf32' else 'SGEMM'}"]
    e = err(s["name"], 8192)
    spill = "" if frames.get(s["entry"]) == NO_FRAME else " (spills)"
    mark = "" if in_run(s["name"]) else " (b)"
    w(f"| {s['step']}{mark} | `{s['name']}` | {s['needs'] or 'all'} | " + " | ".join(cells)
      + f" | {'-' if e is None else f'{e:.2e}'} | {regs.get(s['entry'], '-')}{spill} |")
w("| | cuBLAS SGEMM | | " + " | ".join(f"{cublas(n, 'sgemm'):.1f} | 1.00x" for n in SIZES)
  + f" | {err('cublas_sgemm', 8192):.2e} | |")
w("| | cuBLAS TF32 | | " + " | ".join(f"{cublas(n, 'tf32'):.1f} | 1.00x" for n in SIZES)
  + f" | {err('cublas_tf32', 8192):.2e} | |")
no_spills = all(frames.get(s["entry"]) == NO_FRAME for s in STEPS)
w(f"\nFP32-accurate steps are compared with cuBLAS SGEMM, TF32 steps with cuBLAS TF32. The error is the largest "
  "|C - C_f64| over the largest |C_f64|, on the same uniform [-1, 1) inputs for every row (`tc.log`; steps 1-6 are "
  "not dumped). Registers from `ptxas -v` for the module the H100 loads; "
  f"{'no kernel has a stack frame or spills' if no_spills else 'see ptxas.txt for spills'}. "
  f"`gemm::sgemm` launches `{next(s['name'] for s in STEPS if s['step'] == '7')}`.\n")
late_steps = [s for s in STEPS if not in_run(s["name"])]
if late_steps:
    w(f"(b): not in this run; from a later device call ({later}, commit `{(later / 'README').read_text().split('commit ')[1].split()[0]}`): "
      "CUDA-event medians of 30 launches after 5 (`examples/gemm_tensor_cores.rs`), compared with cuBLAS and the f64 "
      f"product in that call (cuBLAS SGEMM {late_tc['sgemm_4096']['TFLOPs']:.1f} and {late_tc['sgemm_8192']['TFLOPs']:.1f} "
      "TFLOP/s there).\n")

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
x3 = [s["name"] for s in STEPS if "3xtf32" in s["name"]]
for name in x3:
    r = [err(name, n) / err("cublas_sgemm", n) for n in SIZES]
    grow = tc[f"err_{name}_8192"]["fro_rel"] / tc[f"err_{name}_4096"]["fro_rel"]
    grow_s = tc["err_cublas_sgemm_8192"]["fro_rel"] / tc["err_cublas_sgemm_4096"]["fro_rel"]
    w(f"\n`{name}`'s largest error is {r[0]:.1f}x and {r[1]:.1f}x cuBLAS SGEMM's. Its Frobenius error grows "
      f"{grow:.2f}x from K = 4096 to 8192, SGEMM's {grow_s:.2f}x: an error linear in K, a bias, where rounding to "
      "nearest gives sqrt(K). The split is exact to 2^-22 per product (`tests/gemm.rs` checks it); what adds a bias "
      "is the tensor cores' f32 accumulation, which truncates each step's sum. The emulator truncates too and shows "
      "the same drift (`tensor_core_truncation_drifts_with_k_unless_promoted_on_the_emulator`).")
if late_steps:
    w(f"\nIn the later call ({later}), on the same kind of inputs, beside that call's cuBLAS:\n")
    w("| output | " + " | ".join(f"{n}^3: max / max abs C | {n}^3: Frobenius" for n in SIZES) + " |")
    w("|" + " --- |" * (1 + 2 * len(SIZES)))
    for name in [s["name"] for s in late_steps] + ["wgmma_3xtf32", "cublas_sgemm", "double_buffered"]:
        cells = []
        for n in SIZES:
            e = late_tc.get(f"err_{name}_{n}")
            cells += ["-", "-"] if not e else [f"{e['max_rel_to_max']:.2e}", f"{e['fro_rel']:.2e}"]
        w(f"| `{name}` | " + " | ".join(cells) + " |")
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

w("## Off the tile\n")
w("`gemm::sgemm` (criterion `gemm_shapes`) against cuBLAS SGEMM at the same shape in the same call:\n")
w("| M x N x K | ours (TFLOP/s) | cuBLAS SGEMM (TFLOP/s) | ratio |")
w("| --- | --- | --- | --- |")
for s, ours, theirs in shape_rows:
    w(f"| {s[0]}x{s[1]}x{s[2]} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f}x |")
small = [r for r in shape_rows if r[0] == (1024, 1024, 1024)]
if small:
    blocks = (1024 // 128) * (1024 // 256)
    w(f"\nAt 1024^3 the 128x256 tile gives {blocks} blocks for 132 SMs: most of the GPU idles, and the ratio shows it.\n")

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
if any(s["name"] == "wgmma_promoted" for s in STEPS):
    def promoted():
        def late_err(name, n):
            return late_tc[f"err_{name}_{n}"]["max_rel_to_max"] if not in_run("wgmma_promoted") else err(name, n)
        r = [late_err("wgmma_promoted", n) / late_err("cublas_sgemm", n) for n in SIZES]
        x = [tflops(n, "wgmma_promoted") / cublas(n, "sgemm", "wgmma_promoted") for n in SIZES]
        src = late_tc if not in_run("wgmma_promoted") else tc
        grow = src["err_wgmma_promoted_8192"]["fro_rel"] / src["err_wgmma_promoted_4096"]["fro_rel"]
        same = not in_run("wgmma_promoted") and ("wgmma_3xtf32", 8192) in late_tf
        x3 = late_tf[("wgmma_3xtf32", 8192)] if same else tflops(8192, "wgmma_3xtf32")
        return (f"The accuracy is fixed: largest error {r[0]:.2f}x and {r[1]:.2f}x cuBLAS SGEMM's at 4096^3 and "
                f"8192^3, Frobenius error {grow:.2f}x from K = 4096 to 8192. The speed is {x[0]:.2f}x and {x[1]:.2f}x "
                f"cuBLAS SGEMM, {tflops(8192, 'wgmma_promoted') / x3:.2f}x step 10 at 8192^3 "
                f"({'in the same call' if same else 'each from its own call'}): two register sets of `m64n256` do "
                "not fit 255 registers, so the "
                "tile is 128x128, with 4/3 of the shared-memory stores and global loads per product of a 128x256 one, "
                "and the tensor cores drain at every tile. "
                + ("`gemm::sgemm` stays step 7: switching asks for 1.5x cuBLAS SGEMM at both sizes."
                   if min(x) < 1.5 else ""))
    WHY["wgmma_promoted"] = promoted

for s in STEPS:
    WHY.setdefault(s["name"], lambda: "")
w("## The ladder, one idea per step\n")
step_sections(w, STEPS, lambda name: f"{tflops(4096, name):.1f} TFLOP/s at 4096^3, {tflops(8192, name):.1f} at 8192^3"
              + ("" if in_run(name) else " (b)"), WHY)

results = re.findall(r"^test result: (.*)$", tests, re.M)
spots = re.findall(r"gpu\s+(\w+) 4096x4096x4096 spot: max error / bound ([\d.e+-]+)", tests)
w("## Checks in the same call\n")
w(f"- `test-gemm` (every step against f64 at odd shapes, edges, misaligned buffers, bad input, and 4096^3 "
  f"spot-checked): {results[-1] if results else 'no result line'}.")
if spots:
    w("- Largest error over its bound at 4096^3 (20000 random elements): "
      + ", ".join(f"`{n}` {v}" for n, v in spots) + ".")
w("")
w("## Machine\n")
w("```\n" + machine + "\n```")
print("\n".join(P))
