#!/usr/bin/env python3
"""Writes docs/nested_sin.md from GPU runs' files and the registry.

    python3 scripts/docs/nested_sin.py docs/measurements/<run> [<run on another GPU> ..] > docs/nested_sin.md

The page is written from the first run; each further run (another GPU) adds
its column to the "Every GPU" section, read the same way.

The steps (order, names, entries, files, ideas, launches) come from
docs/registry.json. The run folder holds the eight files of one device call
of scripts/gpu/nested_sin.sh (it says how each is made): tests.log (the
machine, up to its first blank line: commit, date, nvidia-smi, CPU, nvcc;
then tests/nested_sin/ with --nocapture: the ACCURACY lines and
ACCURACY_JSON), criterion_medians.json (scripts/gpu/criterion_medians.py over
criterion's folder), bench.log (criterion's output of benches/nested_sin.rs),
torch_peers.json (scripts/gpu/peers nested-sin), end_to_end.json
(examples/nested_sin_end_to_end.rs --json), ncu.txt (ncu over that example's
--profile: each kernel once at 2^28), sanitizer.log (compute-sanitizer
memcheck and racecheck over the GPU tests) and ptxas.txt (`ptxas -v` of the
PTX that ran; read from the first run only: ptxas compiles offline, so the
same PTX gives every GPU's run the same file, and the others need none). Where the run folder also holds report/report.json and
report.txt (scripts/gpu/streaming.sh: the report binary in the same call),
the page gives each row's share of the GPU's specified DRAM bandwidth too.
One more folder, not named on the command line because no GPU ran it:
docs/measurements/2026-11-28-cpu-poly-bounds/test.log, the CPU's output of the
ignored exhaustive test of `poly`'s bound (sin3_minimax_within_its_bounds_exhaustive,
--nocapture), whose figures the Accuracy section quotes. Every number in the page
comes from those files."""
import json, math, pathlib, re, sys
from common import NO_FRAME, commit_of, dram_spec, gpu_table, l2_mb, page, run_link, share, step_sections, not_measured, steps
from common import ptxas as parse_ptxas

ROOT = pathlib.Path(__file__).resolve().parents[2]

run = pathlib.Path(sys.argv[1])
others = [pathlib.Path(a) for a in sys.argv[2:]]
STEPS = steps("nested_sin", run)
COPY = next(s for s in steps("copy") if s["name"] == "copy")
NAMES = [s["name"] for s in STEPS]
read = lambda name: (run / name).read_text()
crit = json.loads(read("criterion_medians.json"))
torch = json.loads(read("torch_peers.json"))
e2e = json.loads(read("end_to_end.json"))
tests = read("tests.log")
acc = json.loads(next(l.split(" ", 1)[1] for l in tests.splitlines() if l.startswith("ACCURACY_JSON ")))
machine = tests.split("\n\n", 1)[0].strip()  # the lines before the test output
commit = commit_of(machine)
date = run.name[:10]
ptxas_txt = read("ptxas.txt")
ptx_arch = re.search(r"for '(sm_\d+a?)'", ptxas_txt).group(1)

LARGE, N = "nested_sin_2_28", 1 << 28
L2_MB = l2_mb(e2e["gpu"])


def launches(step):
    return int(re.search(r"launches: (\d+)", step["geometry"]).group(1))


def ms(key):
    return crit[key]["median_ns"] / 1e6


def us(key):
    return crit[key]["median_ns"] / 1e3


def gbs(t_ms):
    return 8 * N / t_ms / 1e6


roof = ms(f"{LARGE}/roof_cuMemcpyDtoD")
copy_kernel = ms(f"{LARGE}/roof_copy_kernel")
t_eager, t_compiled = torch["torch_nested_sin_unfused_ms"], torch.get("torch_nested_sin_compiled_ms")


spec = dram_spec(run)
spec_pct = lambda t_ms: f" {gbs(t_ms) / spec * 100:.1f}% |" if spec else ""
samples = sorted({int(x) for x in re.findall(rf"{LARGE}/\w+: Collecting (\d+) samples", read("bench.log"))})

# ---- ncu.txt: counters per launch, in order --------------------------------
UNIT = {"ns": 1e-3, "us": 1, "ms": 1e3}  # times to us


def parse_ncu(text):
    launches, cur = [], None
    for line in text.splitlines():
        m = re.match(r"^  ([a-z_0-9]+) \((\d+), 1, 1\)x\((\d+), 1, 1\)", line)
        if m:
            cur = {"kernel": m.group(1), "grid": int(m.group(2)), "block": int(m.group(3))}
            launches.append(cur)
            continue
        m = re.match(r"^\s{4}(\S+)\s+(\S+)?\s+([\d,.]+)$", line)
        if cur is not None and m:
            val = float(m.group(3).replace(",", ""))
            if m.group(1) == "gpu__time_duration.sum":
                val *= UNIT[m.group(2)]
            cur[m.group(1)] = val
    return launches


ncu_launches = parse_ncu(read("ncu.txt"))
# Warps stalled per issued instruction, by reason (ncu's WarpStateStats
# metrics), where the run measured them.
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
STALLS = ["long_scoreboard", "wait", "not_selected", "short_scoreboard", "math_pipe_throttle", "dispatch_stall"]


def ncu_row(entry, launches=None):
    ls = [l for l in (ncu_launches if launches is None else launches) if l["kernel"] == entry]
    if not ls:
        return None
    first = ls[0]
    return {
        "stalls": {k: first[STALL.format(k)] for k in STALLS if STALL.format(k) in first},
        "launches": len(ls), "time_us": sum(l["gpu__time_duration.sum"] for l in ls),
        "inst_per_elem": sum(l["sm__inst_executed.sum"] for l in ls) / (N / 32),
        "issue": first["smsp__issue_active.avg.pct_of_peak_sustained_active"],
        "dram": first["dram__throughput.avg.pct_of_peak_sustained_elapsed"],
        "warps": first["sm__warps_active.avg.pct_of_peak_sustained_active"],
        "regs": int(first["launch__registers_per_thread"]), "grid": first["grid"],
        "blocks_per_sm": int(first["launch__occupancy_limit_registers"]),
    }


NCU = {s["name"]: ncu_row(s["entry"]) for s in STEPS}

# ---- ptxas.txt --------------------------------------------------------------
ptxas, frames = parse_ptxas(ptxas_txt)
no_spills = all(frames[s["entry"]] == NO_FRAME for s in STEPS)

# ---- tests.log: the ACCURACY line of each version (worst input, what it returned)
worst = {}
for m in re.finditer(r"^ACCURACY (\w+): max [\d.]+ ulp at x = (\S+) \(got (\S+), f64 (\S+)\)", tests, re.M):
    worst[m.group(1)] = {"x": float(m.group(2)), "got": float(m.group(3)), "f64": float(m.group(4))}
test_result = next(l.strip() for l in reversed(tests.splitlines()) if l.startswith("test result"))
# ---- the CPU's exhaustive test of `poly`'s bound (no GPU run holds it) --------
# POLY_BOUNDS/test.log: the output of `sin3_minimax_within_its_bounds_exhaustive`
# (kernels/src/nested_sin/math/minimax.rs, ignored by default) on a CPU, with
# --nocapture; its README says where and how long.
POLY_BOUNDS = ROOT / "docs/measurements/2026-11-28-cpu-poly-bounds"
poly_log = (POLY_BOUNDS / "test.log").read_text()
pm = re.search(r"sin3_minimax over every (\d+)th f32 of \[0, 1\]: ([\d.]+) ulp at x = \S+; nested, first sine within "
              r"([\d.]+) ulp: ([\d.]+) ulp at s = \S+ \(within CUDA's documented ([\d.]+) ulp: ([\d.]+) ulp at s = \S+\)$",
              poly_log, re.M)
assert pm and pm.group(1) == "1", f"{POLY_BOUNDS}/test.log: no exhaustive (every 1th f32) line of sin3_minimax"
assert re.search(r"^test result: ok\. 1 passed", poly_log, re.M), f"{POLY_BOUNDS}/test.log: the test did not pass"
poly_bounds = {"inner": float(pm.group(2)), "first_ulp": pm.group(3), "nested": float(pm.group(4)),
               "cuda_ulp": pm.group(5), "nested_cuda": float(pm.group(6))}
panics = [(m.group(1), m.group(2), " ".join(m.group(3).split()))
          for m in re.finditer(r"^thread '(\w+)' \(\d+\) panicked at (\S+):\n(.*?)\n(?:stack backtrace|note:)", tests,
                               re.M | re.S)]

out, w = page("nested_sin.py", "Nested sine: fusion, and the memory roof with the same bits", run, *others)
w(f"GPU: **{e2e['gpu']}** ({e2e['sms']} SMs), PTX for {ptx_arch}, commit `{commit}`, {date}. "
  f"Kernel times are criterion's median over {'/'.join(map(str, samples))} samples of CUDA-event GPU time "
  "(`benches/nested_sin.rs`); GB/s counts the 8 bytes per element a fused kernel must move (read + write), in decimal "
  f"units; 2^28 f32 is 1 GiB each way, far past the {L2_MB} MB L2. PyTorch figures come from "
  f"`scripts/gpu/peers nested-sin`, run in the same device call.\n")
w("Reproduce:\n")
w("```sh")
w("scripts/gpu/build.sh                     # here: release binaries and the PTX -> .gpu/")
w("bash scripts/gpu/nested_sin.sh           # on the GPU machine, .gpu/ carried: its eight files land in $OUT")
w("python3 scripts/docs/nested_sin.py <run> > docs/nested_sin.md   # here, with $OUT's files in <run>")
w("```\n")
w("On any machine with a GPU, `cargo bench --bench nested_sin`, `cargo run --release --example nested_sin_end_to_end` "
  "and `cargo test --release --test nested_sin -- --nocapture` give the bench, the end-to-end table and the accuracy "
  "figures alone.\n")

# ---- headline ---------------------------------------------------------------
w("## 2^28 elements\n")
w("| version | launches | median | GB/s | % of `cuMemcpyDtoD` |" + (" % of the DRAM spec |" if spec else "")
  + " vs four `torch.sin` | vs `torch.compile` |")
w("| --- | --- | --- | --- | --- |" + (" --- |" if spec else "") + " --- | --- |")
w(f"| `cuMemcpyDtoD` (the roof) | 1 | {roof:.4f} ms | {gbs(roof):,.0f} | 100.0% |{spec_pct(roof)} | |")
w(f"| our copy kernel | 1 | {copy_kernel:.4f} ms | {gbs(copy_kernel):,.0f} | {roof / copy_kernel * 100:.1f}% |"
  f"{spec_pct(copy_kernel)} | |")
for s in STEPS:
    t = ms(f"{LARGE}/{s['name']}")
    comp = f"{t_compiled / t:.2f}x" if t_compiled else "-"
    w(f"| `{s['name']}` | {launches(s)} | {t:.4f} ms | {gbs(t):,.0f} | {roof / t * 100:.1f}% |{spec_pct(t)} "
      f"{t_eager / t:.2f}x | {comp} |")
w(f"| PyTorch, four `torch.sin` | 4 | {t_eager:.4f} ms | {gbs(t_eager):,.0f} | {roof / t_eager * 100:.1f}% |"
  f"{spec_pct(t_eager)} 1.00x | |")
if t_compiled:
    w(f"| PyTorch, `torch.compile` | 1 | {t_compiled:.4f} ms | {gbs(t_compiled):,.0f} | {roof / t_compiled * 100:.1f}% |"
      f"{spec_pct(t_compiled)} | 1.00x |")
w("")
if spec:
    w(f"The DRAM spec is the bandwidth the GPU's memory clock and bus width give ({spec:,.0f} GB/s: 2 x clock x bus "
      f"bits / 8, as `cuDeviceGetAttribute` reports them; the report's `% DRAM` column): the hardware's roof. The "
      f"driver's own copy reaches {gbs(roof) / spec * 100:.1f}% of it.\n")
w(f"PyTorch's own copy of the same bytes in the same call: {torch['copy_ms']:.4f} ms ({torch['copy_GBs']:,.0f} GB/s). "
  f"`torch.compile` gives the same bits as four `torch.sin`: {torch.get('compiled_bit_equal_to_eager')}. "
  "The ratios in the last two columns are PyTorch's time over ours (higher is better for us).\n")

# ---- every GPU ----------------------------------------------------------------


def gpu_figures(folder):
    """One run folder's 2^28 figures: {row: ms}, the DtoD roof and DRAM spec (GB/s), ncu rows, max ulp, GPU name."""
    c = json.loads((folder / "criterion_medians.json").read_text())
    t = json.loads((folder / "torch_peers.json").read_text())
    a = json.loads(next(l.split(" ", 1)[1] for l in (folder / "tests.log").read_text().splitlines()
                        if l.startswith("ACCURACY_JSON ")))
    sp = dram_spec(folder)
    d = c[f"{LARGE}/roof_cuMemcpyDtoD"]["median_ns"] / 1e6
    times = {"`cuMemcpyDtoD`": d, "our copy kernel": c[f"{LARGE}/roof_copy_kernel"]["median_ns"] / 1e6}
    times.update({f"`{s['name']}`": c[f"{LARGE}/{s['name']}"]["median_ns"] / 1e6 for s in STEPS})
    if t.get("torch_nested_sin_compiled_ms"):
        times["PyTorch, `torch.compile`"] = t["torch_nested_sin_compiled_ms"]
    launches = parse_ncu((folder / "ncu.txt").read_text())
    ncu = {s["name"]: ncu_row(s["entry"], launches) for s in STEPS}
    gpu = json.loads((folder / "end_to_end.json").read_text())["gpu"]
    return {"gpu": gpu, "rows": times, "roof": gbs(d), "spec": sp, "ncu": ncu, "acc": a,
            "compiled": t.get("torch_nested_sin_compiled_ms"), "folder": folder}


GPUS = [gpu_figures(f) for f in [run] + others]
w("## Every GPU\n")
w("Each GPU's figures come from one device call (its run folder: " + ", ".join(
    run_link(g["folder"]) for g in GPUS) + "), PyTorch in the same call. Cells: "
  "median at 2^28, GB/s, % of that GPU's `cuMemcpyDtoD`, and % of its DRAM spec where the run has the report's "
  "figure.\n")
gpu_table(w, ["version"], [g["gpu"] for g in GPUS])
for label in GPUS[0]["rows"]:
    w(f"| {label} | " + " | ".join(f"{g['rows'][label]:.4f} ms, {share(gbs(g['rows'][label]), g['roof'], g['spec'])}"
                                   for g in GPUS) + " |")
if all(g["compiled"] for g in GPUS):
    w("| vs `torch.compile` (`fused_reduced` / `poly`) | " + " | ".join(
        f"{g['compiled'] / g['rows']['`fused_reduced`']:.2f}x / {g['compiled'] / g['rows']['`poly`']:.2f}x"
        for g in GPUS) + " |")
w("| max ulp against f64 (`fused_reduced` / `poly`) | " + " | ".join(
    f"{g['acc']['fused_reduced']['max_ulp']:.2f} / {g['acc']['poly']['max_ulp']:.2f}" for g in GPUS) + " |")
w("")
for g in GPUS[1:]:
    fr_, po_ = g["rows"]["`fused_reduced`"], g["rows"]["`poly`"]
    w(f"On the {g['gpu']} `fused_reduced` reaches {100 * gbs(fr_) / g['roof']:.1f}% of the copy with {g['ncu']['fused_reduced']['issue']:.0f}% of "
      f"the issue slots busy: the instructions bind, not DRAM. `poly` needs {g['ncu']['poly']['inst_per_elem'] / g['ncu']['fused_reduced']['inst_per_elem'] * 100:.0f}% "
      f"of its instructions and runs {fr_ / po_:.2f}x faster, at {100 * gbs(po_) / g['roof']:.1f}% of the copy.\n")
w("ncu, one launch of each at 2^28: instructions per element, issue slots busy, DRAM throughput (of its peak), and the "
  "leading stall reasons in warps stalled per issued instruction (long scoreboard: waiting on a load; wait: fixed "
  "latency; not selected: eligible, another warp issued).\n")
gpu_table(w, ["version"], [g["gpu"] for g in GPUS])
for name in ["fused", "fused_reduced", "fast", "poly"]:
    cells = []
    for g in GPUS:
        r = g["ncu"][name]
        st = ", ".join(f"{k.replace('_', ' ')} {v:.1f}" for k, v in list(r["stalls"].items())[:3])
        cells.append(f"{r['inst_per_elem']:.1f} inst/elem, issue {r['issue']:.0f}%, DRAM {r['dram']:.0f}%"
                     + (f"; stalls: {st}" if st else ""))
    w(f"| `{name}` | " + " | ".join(cells) + " |")
w("")

# ---- ncu --------------------------------------------------------------------
w("## Why fusing is not enough: instructions per element (ncu, one launch each)\n")
w("| version | kernel time | instructions / element | issue slots busy | DRAM throughput (of peak) | warps active | registers | grid (blocks/SM) |")
w("| --- | --- | --- | --- | --- | --- | --- | --- |")
for label, r in [("our copy kernel", ncu_row(COPY["entry"]))] + [(f"`{s['name']}`", NCU[s["name"]]) for s in STEPS]:
    if r is None:
        continue
    label += f" ({r['launches']} launches)" if r["launches"] > 1 else ""
    w(f"| {label} | {r['time_us']:.1f} us | {r['inst_per_elem']:.1f} | {r['issue']:.1f}% | {r['dram']:.1f}% | "
      f"{r['warps']:.1f}% | {r['regs']} | {r['grid']} ({r['blocks_per_sm']}) |")
w("")
fu, fr = NCU["fused"], NCU["fused_reduced"]
w(f"The fused kernel issues {fu['inst_per_elem']:.0f} instructions per element (four `__nv_sinf`, about "
  f"{fu['inst_per_elem'] / 4:.0f} each) and keeps {fu['issue']:.0f}% of the issue slots busy while DRAM runs at "
  f"{fu['dram']:.0f}% of its peak: it is instruction-bound. `fused_reduced` issues {fr['inst_per_elem']:.0f} "
  f"({fr['inst_per_elem'] / fu['inst_per_elem'] * 100:.0f}%), and DRAM rises to {fr['dram']:.0f}%, near the copy "
  f"kernel's {ncu_row(COPY['entry'])['dram']:.0f}%. Instructions per element are `sm__inst_executed` (warp instructions) "
  f"x 32 / 2^28. Grids are sized to the array: {N // 4 // (fr['grid'] * 256)} 16-byte vectors a thread.\n")
po = NCU["poly"]
w(f"`poly` issues {po['inst_per_elem']:.0f} instructions per element ({po['inst_per_elem'] / fr['inst_per_elem'] * 100:.0f}% "
  f"of `fused_reduced`'s) and keeps {po['issue']:.0f}% of the issue slots busy (`fused_reduced`: {fr['issue']:.0f}%); its "
  f"warps wait on loads ({po['stalls'].get('long_scoreboard', float('nan')):.1f} warps stalled on the long scoreboard per "
  f"issued instruction, against {fr['stalls'].get('long_scoreboard', float('nan')):.1f}), as a memory-bound kernel's "
  "should.\n")

# ---- accuracy ---------------------------------------------------------------
w(f"## Accuracy ({acc['inputs']:,} inputs on the GPU)\n")
w("Inputs: 2^24 uniform in [-1e4, 1e4] plus the special values (+-0, +-inf, NaN, subnormals, +-3.4e38, the f32 "
  "nearest k*pi for k up to 1e38 and its neighbours, libdevice's 105615 switch, the edges of our shortcuts). "
  "Reference: the f64 sine of the f32 input, four times, never rounded to f32. Two units: **ulp** = "
  "|got - ref| / ulp_f32(ref); **eps** = |got - ref| / (|ref| x 2^-23), the relative error. Just below a power "
  "of two an ulp is half an eps. The figures are the `ACCURACY_JSON` line of `gpu_accuracy_of_every_variant_against_f64`, "
  "which it prints before it asserts anything.\n")
w("| version | max ulp | max eps | max abs error | max ulp, \\|x\\| <= 100 pi | max abs, \\|x\\| <= 100 pi | elements differing from `unfused` |")
w("| --- | --- | --- | --- | --- | --- | --- |")
w(f"| one `sin` launch (libdevice `__nv_sinf`) | {acc['sin_max_ulp']:.3f} | | | | | |")
for v in NAMES:
    a = acc[v]
    w(f"| `{v}` | {a['max_ulp']:.3g} | {a['max_eps']:.3g} | {a['max_abs']:.3g} | {a['max_ulp_moderate']:.3g} | "
      f"{a['max_abs_moderate']:.3g} | {a['differ_from_unfused']:,} |")
w(f"| a correctly rounded sine, four launches | {acc['correctly_rounded4_max_ulp']:.3f} | {acc['correctly_rounded4_max_eps']:.3f} | | | | |")
w("")
fa, fw = acc["fast"], worst["fast"]
pa = acc["poly"]
w(f"- One `sin` is within {acc['sin_max_ulp']:.2f} ulp of f64 (CUDA documents 2 ulp for `sinf`). The host port of "
  f"`__nv_sinf` (`math::libdevice_sinf_port`) matched the GPU bit for bit on every input: "
  f"{acc['sin_port_bit_identical']}.")
same = [v for v in NAMES if v != "unfused" and acc[v]["differ_from_unfused"] == 0]
w(f"- {' and '.join(f'`{v}`' for v in same)} {'are' if len(same) > 1 else 'is'} bit-identical to the unfused four "
  "launches on every input: fusing and the shortcut cost no accuracy at all. The kernels' unit tests also hold an "
  "exhaustive comparison of the shortcut's functions with the port over every f32 of their ranges "
  "(`shortcuts_match_libdevice_bit_for_bit_exhaustive`, ignored by default: not part of this run).")
w(f"- Against f64 the four sines are {acc['fused_reduced']['max_eps']:.2f} eps, {acc['fused_reduced']['max_ulp']:.2f} ulp. "
  f"In ulp even the best four-launch result does worse than {math.ceil(acc['correctly_rounded4_max_ulp']) - 1}: "
  "a correctly rounded sine, rounded to f32 between launches, "
  f"reaches {acc['correctly_rounded4_max_ulp']:.2f} ulp, because an error carried into a result just below a power of two "
  "doubles when counted in that result's ulp (the worst case here, x = "
  f"{worst['fused_reduced']['x']:g}, ends at {worst['fused_reduced']['got']:.4f}). The tests bound the accurate versions "
  "in eps against f64, and in ulp against `unfused`.")
w(f"- `fast` (`sin.approx.f32`) has only an absolute error, and it grows with |x|: {fa['max_abs_moderate']:.2g} "
  f"for |x| <= 100 pi, {fa['max_abs']:.2g} over all inputs (the huge ones: no correct bits). Near the zeros of sine its "
  f"relative error has no bound ({fa['max_ulp']:.2g} ulp: at x = {fw['x']:g} it returns {fw['got']:.2g} where the four "
  f"sines give {fw['f64']:.2g}). Range of validity: moderate arguments (|x| up to a few hundred) where an absolute error "
  f"of about {fa['max_abs_moderate']:.0e} is acceptable.\n")

w(f"- `poly` keeps `__nv_sinf` for the first sine and computes the other three as one polynomial: its own bits "
  f"({pa['differ_from_unfused']:,} elements differ from `unfused`, at most {pa['max_ulp_from_unfused']} ulp apart), "
  f"{pa['max_ulp']:.2f} ulp and {pa['max_eps']:.2f} eps against f64 here, below the others' {acc['fused_reduced']['max_ulp']:.2f}: "
  "one rounding where three f32 sines round three times. Its bound is tested on the CPU for every f32 that the first "
  "sine can return (`sin3_minimax_within_its_bounds_exhaustive` in `nested_sin/math/minimax.rs`, ignored by default): the "
  f"polynomial is within {poly_bounds['inner']:.2f} ulp of sin(sin(sin(s))), and with a first sine within "
  f"{poly_bounds['first_ulp']} ulp the nested result is within {poly_bounds['nested']:.2f} ulp for every input "
  f"({poly_bounds['nested_cuda']:.2f} with CUDA's documented {poly_bounds['cuda_ulp']} ulp for `sinf`). Those two "
  "figures are that test's output on the CPU, not this run's.\n")

# ---- launch-bound -----------------------------------------------------------
S = "nested_sin_1024"
HOW = {  # the bench's cases at 1024 elements (benches/nested_sin.rs)
    "unfused_4_launches": "`unfused`: four launches",
    "unfused_graph": "`unfused`: the four launches as one CUDA graph (`graph::capture`)",
    "fused_reduced": "`fused_reduced`: one launch",
}
w("## 1024 elements: launch-bound\n")
w("| how | GPU time (CUDA events) | end to end (host clock: queue + synchronize) |")
w("| --- | --- | --- |")
for case, label in HOW.items():
    w(f"| {label} | {us(f'{S}/{case}'):.2f} us | {us(f'{S}_end_to_end/{case}'):.2f} us |")
w(f"| PyTorch, four `torch.sin` | {torch['torch_nested_sin_1k_us']:.2f} us | {torch['torch_nested_sin_1k_wall_us']:.2f} us |")
if "torch_nested_sin_1k_graph_us" in torch:
    w(f"| PyTorch, the four as a `torch.cuda.CUDAGraph` | {torch['torch_nested_sin_1k_graph_us']:.2f} us | {torch['torch_nested_sin_1k_graph_wall_us']:.2f} us |")
w("")
w("At this size the work is nothing and the launches are everything: four launches cost "
  f"{us(S + '/unfused_4_launches') / us(S + '/fused_reduced'):.1f}x one on the GPU timeline "
  f"({us(S + '_end_to_end/unfused_4_launches') / us(S + '_end_to_end/fused_reduced'):.1f}x end to end). A CUDA graph "
  "replays the same four kernels with one call and gets within "
  f"{(us(S + '_end_to_end/unfused_graph') / us(S + '_end_to_end/fused_reduced') - 1) * 100:.0f}% of the fused launch "
  "end to end, without fusing anything.\n")

# ---- end to end -------------------------------------------------------------
w("## With the transfers: GPU (pinned H2D + kernel + D2H) against every CPU core\n")
w(f"GPU side: `{e2e['kernel']}` in place between `cuMemcpyHtoDAsync` and `cuMemcpyDtoHAsync` from pinned memory, "
  f"host clock around the three plus `synchronize`, median. CPU side: `f32::sin` four times over the same array on "
  f"{e2e['cpu_threads']} threads (rayon; {e2e['cpu'].strip()}), median. `examples/nested_sin_end_to_end.rs`.\n")
w("| elements | MB | H2D ms | kernel ms | D2H ms | GPU total ms | transfers, % of GPU total | CPU ms | CPU / GPU | faster |")
w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in e2e["rows"]:
    share = (r["h2d_ms"] + r["d2h_ms"]) / r["gpu_total_ms"] * 100
    ratio = r["cpu_ms"] / r["gpu_total_ms"]
    w(f"| 2^{r['log2']} | {r['mbytes']:.2f} | {r['h2d_ms']:.4f} | {r['kernel_ms']:.4f} | {r['d2h_ms']:.4f} | "
      f"{r['gpu_total_ms']:.4f} | {share:.0f}% | {r['cpu_ms']:.3f} | {ratio:.1f}x | {'GPU' if ratio > 1 else 'CPU'} |")
w("")
big = e2e["rows"][-1]
h2d_gbs = big["mbytes"] / big["h2d_ms"]
cpu_rate = big["elements"] * 4 / (big["cpu_ms"] / 1e3) / 1e9
gpu_rate = big["elements"] / (big["gpu_total_ms"] / 1e3) / 1e9
per_core_ns = e2e["cpu_threads"] / gpu_rate  # ns per element per core at which the CPU would tie
gpu_wins = all(r["cpu_ms"] > r["gpu_total_ms"] for r in e2e["rows"])
w(f"The transfers are the GPU's cost: at 2^{big['log2']} the kernel takes {big['kernel_ms']:.2f} ms of "
  f"{big['gpu_total_ms']:.1f} ms, the copies the rest (about {h2d_gbs:.0f} GB/s each way). "
  + ("And still the GPU wins at every size measured, because the CPU is slower yet: " if gpu_wins else "The CPU: ")
  + f"{cpu_rate:.1f} G `sinf`/s on all cores, {cpu_rate / 4:.2f} G elements/s, against {gpu_rate:.1f} G elements/s "
  f"through the copies. An estimate from these figures, not a measurement: the CPU ties once an element costs it under "
  f"{per_core_ns:.1f} ns per core ({e2e['cpu_threads']} threads / {gpu_rate:.1f} G elements/s). One `sinf` (about "
  f"{e2e['cpu_threads'] / cpu_rate:.0f} ns) is still above that; an add or a scale likely falls below it (the CPU then "
  "bound by its own memory bandwidth; not measured here), and there the transfers would make the GPU lose. At the small "
  f"end (2^{e2e['rows'][0]['log2']}) both sides are dominated by fixed costs (launches and copy latencies; rayon's "
  "thread wake-ups).\n")

# ---- the walk ---------------------------------------------------------------


def parse_ab(text, label, value=int):
    """An A/B file of the report's rows, blocks headed `### <label>: <value> (round <k>)` (walk.txt: vectors a
    thread; bounds.txt: base or new): {(value, round): {row: % of DtoD}}."""
    out, key, roof_ms = {}, None, None
    for line in text.splitlines():
        m = re.match(rf"### {label}: (\S+) \(round (\d+)\)", line)
        if m:
            key, roof_ms = (value(m.group(1)), int(m.group(2))), None
            out[key] = {}
            continue
        m = re.match(r"(\S+)\s+(\S+)\s.*?\s([\d.]+)\s+[\d.]+ GB/s", line)
        if key is None or not m:
            continue
        op, name, t = m.group(1), m.group(2), float(m.group(3))
        if name == "cuMemcpyDtoD":
            roof_ms = t
        elif op == "nested_sin" and roof_ms:
            out[key][name] = roof_ms / t * 100
    return out


def walk_section(w):
    """How many vectors a thread: the same-call A/B each run folder's walk.txt holds, if any."""
    walks = [(g, parse_ab((g["folder"] / "walk.txt").read_text(), "vectors a thread")) for g in GPUS if (g["folder"] / "walk.txt").exists()]
    if not walks:
        return
    w("### How many vectors a thread\n")
    w("One vector a thread (a grid of 2^26 threads) keeps the bytes in flight in one window sweeping memory, in the "
      "order the block scheduler hands out blocks; the steps whose instructions weigh then pay a block's start and "
      "drain once per vector. A grid-stride loop over more vectors a thread pays them less often. Each run folder's "
      "`walk.txt` times the report's rows with " + ", ".join(
          f"{', '.join(str(v) for v in sorted({v for v, _ in walk}))} ({g['gpu']})" for g, walk in walks)
      + " vectors a thread (a build of the report binary for each, twice each, interleaved, in one device call; its "
      "folder's README says which): % of that call's `cuMemcpyDtoD`, round 1 / round 2.\n")
    ab_table(w, [(g, walk, sorted({v for v, _ in walk}), "{} a thread") for g, walk in walks])


def ab_table(w, runs):
    """One row per step, a column per (GPU, value) of each run's A/B ((gpu, parsed file, values, column title
    format)): round 1 / round 2."""
    w("| step | " + " | ".join(f"{g['gpu']}, {title.format(v)}" for g, _, vs, title in runs for v in vs) + " |")
    w("| --- |" + " --- |" * sum(len(vs) for _, _, vs, _ in runs))
    for name in [s["name"] for s in STEPS]:
        cells = []
        for _, ab, vs, _ in runs:
            for v in vs:
                r = [ab.get((v, k), {}).get(name) for k in (1, 2)]
                cells.append(" / ".join(f"{x:.1f}%" for x in r if x is not None) or "-")
        w(f"| `{name}` | " + " | ".join(cells) + " |")
    w("")


def bounds_section(w):
    """Registers for eight blocks a SM: the same-call A/B each run folder's bounds.txt holds, if any."""
    abs_ = [(g, parse_ab((g["folder"] / "bounds.txt").read_text(), "launch bounds", str)) for g in GPUS
            if (g["folder"] / "bounds.txt").exists()]
    if not abs_:
        return
    # The steps whose kernel asks for blocks a SM: `map_kernel!(... = map(f), blocks_per_sm(8))` in its file.
    bounded = [s for s in STEPS if "blocks_per_sm(8)" in (ROOT / s["file"]).read_text()]
    w("### Registers for eight blocks a SM\n")
    w("Each thread of these kernels keeps only a vector or so of loads in flight, so the bytes in flight are the warps "
      "an SM holds. " + " and ".join(f"`{s['name']}`" for s in bounded) + " declare `ThreadCtx::launch_bounds::<256, "
      "8>` (CUDA C's `__launch_bounds__(256, 8)`) in the modules for Hopper (`sm_90`, `sm_90a`; sm_80's ptxas would spill "
      "them): the build writes `.minnctapersm 8` into their entries and ptxas fits them in " + " and ".join(f"{ptxas[s['entry']]}" for s in bounded) + " registers, eight blocks of 256 threads a "
      "SM, with no spills. " + " ".join(
          f"ncu ({g['gpu']}, `{s['name']}`): warps active {g['ncu'][s['name']]['warps']:.0f}% of the SM's "
          f"maximum, DRAM at {g['ncu'][s['name']]['dram']:.0f}% of its peak." for g, _ in abs_ for s in bounded[-1:])
      + " Each run folder's `bounds.txt` times the build before the bounds (`base`) against this one (`new`), twice "
      "each, interleaved, in one device call: % of that call's `cuMemcpyDtoD`, round 1 / round 2.\n")
    # A GPU whose run was built before the bounds shows it in its registers.
    for g in GPUS:
        regs, _ = parse_ptxas((g["folder"] / "ptxas.txt").read_text())
        older = [s for s in bounded if regs.get(s["entry"]) != ptxas[s["entry"]]]
        if older:
            w(f"The {g['gpu']} run ({run_link(g['folder'])}) was built before the bounds: there "
              + " and ".join(f"`{s['name']}` had {regs.get(s['entry'])} registers" for s in older)
              + ", and its figures on this page are of that build.\n")
    ab_table(w, [(g, ab, ("base", "new"), "{}") for g, ab in abs_])


# ---- ladder -----------------------------------------------------------------
spread = re.search(rf"{LARGE}/fused_reduced\s*\n?\s*time:\s*\[([\d.]+) (\S+) ([\d.]+) \S+ ([\d.]+) \S+\]", read("bench.log"))


def measured(v):
    t = ms(f"{LARGE}/{v}")
    return f"{t:.4f} ms, {gbs(t):,.0f} GB/s ({roof / t * 100:.1f}% of `cuMemcpyDtoD`)"


# What each step shows in this run; the step's idea is the registry's.
WHY = {
    "unfused": lambda: f"Four launches, the last three in place: four reads and four writes of the array, "
    f"{launches(STEPS[0]) * 8 * N / 1e9:.2f} GB moved for a result that needs {8 * N / 1e9:.2f}. The ncu time is the "
    f"{NCU['unfused']['launches']} launches' sum; the first runs DRAM at {NCU['unfused']['dram']:.0f}% of its peak: "
    "memory-bound, on four times the bytes.",
    "fused": lambda: f"The same bits as `unfused` ({acc['fused']['differ_from_unfused']} elements differ). Fusion alone "
    f"leaves it short of the roof: {fu['inst_per_elem']:.0f} instructions per element, {fu['issue']:.0f}% of issue slots "
    "busy (ncu, above).",
    "fused_reduced": lambda: "On [-1, 1] libdevice's quadrant `j = rint(x * 2/pi)` is -1, 0 or 1: its float-to-int round trip, Payne-Hanek test and general quadrant logic become "
    "a few selects (`math::sin_unit`), and after three sines (|x| <= 0.7457 < pi/4) only its polynomial is left "
    "(`math::sin_quarter`). The same IEEE operations libdevice performs on those arguments, so the same bits "
    f"({acc['fused_reduced']['differ_from_unfused']} elements differ from `unfused`), with "
    f"{fr['inst_per_elem']:.0f} instructions per element instead of {fu['inst_per_elem']:.0f}."
    + (f" Criterion's *mean* was {spread.group(3)} {spread.group(2)} (95% interval {spread.group(1)}-{spread.group(4)} "
       f"{spread.group(2)}), {roof * 1000 / float(spread.group(3)) * 100:.1f}% of the roof: a few slow samples; the "
       "median is the figure here." if spread and spread.group(2) == "us" else ""),
    "poly": lambda: f"`math::sin3_minimax`: x + x^3 q(x^2), q of degree 7 with f32 coefficients from a Remez fit "
    f"(the comment in `nested_sin/math/minimax.rs` says how), 10 instructions where `fused_reduced` spends 37 on the three inner "
    f"sines: {po['inst_per_elem']:.0f} instructions per element instead of {fr['inst_per_elem']:.0f}. Its own bits, "
    f"{pa['max_ulp']:.2f} ulp against f64 (Accuracy, above).",
    "fast": lambda: f"At the roof too ({NCU['fast']['inst_per_elem']:.0f} instructions per element). The error "
    f"(Accuracy, above): {acc['fast']['max_abs_moderate']:.2g} absolute for |x| <= 100 pi, {acc['fast']['max_abs']:.2g} "
    "over all inputs, no bound on the relative error: not a drop-in for `sinf`.",
}

w("## The ladder, one idea per step\n")
step_sections(w, STEPS, measured, WHY)
not_measured(w, "nested_sin")
w("All of them share `nested_sin::map`: a grid-stride loop over 16-byte vectors (`ld.global.v4`/`st.global.v4`) on a "
  f"grid sized to the array ({N // 4 // (fr['grid'] * 256)} vectors a thread, `nested_sin::launch_dims`), a "
  "scalar head when the input and output start equally misaligned, a scalar tail for lengths not a multiple of 4, "
  "and an all-scalar walk when their misalignments differ. In place (`launch_in_place`) is allowed.\n")
walk_section(w)
bounds_section(w)
w(f"`ptxas -v` ({ptx_arch}): " + "; ".join(f"`{s['entry']}` {ptxas[s['entry']]} registers" for s in STEPS)
  + ("; 0 bytes of stack and spills for each." if no_spills else "; stack or spills: see ptxas.txt.") + "\n")

# ---- checks -----------------------------------------------------------------
w("## Checks in this run\n")
w("```")
w(f"tests: {test_result}")
clean = True
for tool in ("memcheck", "racecheck"):
    part = read("sanitizer.log").split(f"### {tool}", 1)[1].split("### ", 1)[0]
    lines = part.splitlines()
    found = next(l.strip("= ").strip() for l in lines if "SUMMARY" in l)
    clean = clean and bool(re.search(r": 0 (errors|hazards)", found))
    w(f"compute-sanitizer {tool} over the GPU tests: " + next(l.strip() for l in lines if l.startswith("test result"))
      + "; " + found)
w("```\n")
if panics:
    w("Failed, with the assertion each stopped at:\n")
    for test, where, msg in panics:
        w(f"- `{test}` ({where}): `{msg}`")
    w("\nThe failures are assertions on the results" + ("; the sanitizers found nothing in the kernels those tests "
      "launched." if clean else ".") + "\n")
w("## Machine\n")
w("```\n" + machine + "\n```")
print("\n".join(out))
