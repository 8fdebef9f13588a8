#!/usr/bin/env python3
"""Writes docs/gemm.md from the GPU runs' files.

    python3 scripts/docs/gemm.py docs/measurements/<run> docs/measurements/<sweep run> [<shapes run> [<tc run> <tc run before>]] > docs/gemm.md

<run> is what one device call over the ladder brought back:
criterion_medians.json (scripts/gpu/criterion_medians.py over criterion.tgz),
torch_gemm.json (cuBLAS through PyTorch, scripts/gpu/torch_gemm.py, same device call), ncu.txt (every
step once at 4096^3), ncu_cublas.txt, ptxas.txt, smi.csv, machine.txt.
ptxas.txt and machine.txt are cut from the run's logs:
    awk '/### test-ptx/,/^test result/' tests.log | grep -E "ptxas|bytes stack|Used" > ptxas.txt
    awk '/^commit/,/^== \[/' run.log | grep -v "^==" > machine.txt
<sweep run> is the first run: tune.log (CUDA-event medians of the ladder and
of 16 step-7 geometries, plus the driver's register counts) and the sweep's
sources. <shapes run> (optional) holds benches/gemm.rs's `gemm_shapes` group
with scripts/gpu/torch_gemm_shapes.py beside it, before and after step 7's
edge rework (before-bench.log; after-bench.log is the final run's bench, with
the interior build; rework-bench.log the call before it), and the ncu files
that found the problem (before-ncu.txt, before-stall-top.txt).
<tc run> and <tc run before> (optional) are device calls of the tensor-core
steps (.gpu-tc/run.sh, kept as run.sh in the first such folder):
bench.log (examples/gemm_tensor_cores.rs), torch.log and torch_gemm_tc.json
(scripts/gpu/torch_gemm_tc.py: cuBLAS TF32 and SGEMM, errors against f64),
env.log (ptxas -v, SASS instruction counts), ncu_<step>.log, tests.log; the
second is the call before the last fix, for its ncu figures.
Every number in the page comes from those files."""
import json, pathlib, re, sys

run, sweep = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
shapes_run = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else None
tc_run = pathlib.Path(sys.argv[4]) if len(sys.argv) > 4 else None
tc_before = pathlib.Path(sys.argv[5]) if len(sys.argv) > 5 else None
crit = json.loads((run / "criterion_medians.json").read_text())
torch = json.loads((run / "torch_gemm.json").read_text())
machine = (run / "machine.txt").read_text().strip()
commit = next((l.split()[1] for l in machine.splitlines() if l.startswith("commit ")), "?")

FP32 = ["naive", "smem_tiled", "blocktile_1d", "blocktile_2d", "vectorized", "warptile", "double_buffered"]
FILES = {"naive": "01_naive.rs", "smem_tiled": "02_smem_tiled.rs", "blocktile_1d": "03_blocktile_1d.rs",
         "blocktile_2d": "04_blocktile_2d.rs", "vectorized": "05_vectorized.rs", "warptile": "06_warptile.rs",
         "double_buffered": "07_double_buffered.rs", "tf32": "08_tf32.rs"}
FIXES = {
    "naive": "the baseline: one thread per element of C, two global loads per FMA (B coalesced, A broadcast)",
    "smem_tiled": "32x32 tiles staged in shared memory: each global element is loaded once per tile, not once per thread",
    "blocktile_1d": "8 outputs per thread down a column: one B value in a register feeds 8 FMAs",
    "blocktile_2d": "an 8x8 outer product per thread: 16 shared values feed 64 FMAs (ptxas merges them into 4 16-byte loads)",
    "vectorized": "16-byte global loads, A tile stored transposed, 16-byte shared loads in the source: 122 registers instead of 168, two blocks per SM",
    "warptile": "lanes own 4x4 fragments interleaved over a warp tile: conflict-free, broadcast 16-byte shared loads",
    "double_buffered": "two shared buffers, the next tile's global loads in flight during this tile's FMAs, one barrier per tile; "
                       "a measured 128x256 tile with 8x16 outputs per thread",
    "tf32": "tensor cores: TF32 mma.sync.m16n8k8, f32 accumulation (inputs rounded to 10 mantissa bits)",
}
# Block tile (BM, BN) per step, for the L2-level intensity BM*BN / (2 (BM + BN)).
TILES = {"naive": None, "smem_tiled": (32, 32), "blocktile_1d": (64, 64), "blocktile_2d": (128, 128),
         "vectorized": (128, 128), "warptile": (128, 128), "double_buffered": (128, 256), "tf32": (128, 128)}
FMA_PEAK = 61.7  # TFLOP/s: DESIGN.md's FMA microbenchmark on this H100 (8 independent chains per thread)
DRAM_ROOF = 2.98  # TB/s: cuMemcpyDtoD, README / docs/transpose.md


def tflops(size, name):
    r = crit.get(f"gemm_{size}/{name}")
    return None if not r else 2 * size**3 / r["median_ns"] / 1e3


def cublas(size):
    return torch[f"sgemm_{size}_TFLOPs"]


# ---- ncu: first launch of each kernel ---------------------------------------
def parse_ncu(path):
    out, cur = {}, None
    for line in path.read_text().splitlines():
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
            v = float(m.group(3).replace(",", ""))
            v *= {"Gbyte": 1e9, "Mbyte": 1e6, "Kbyte": 1e3, "byte": 1}.get(unit, 1)
            out[cur][m.group(1)] = v
            continue
        m = re.match(r"^\s{4}(\S.*?)\s{2,}(\S+)?\s+([\d,.]+)$", line)
        if m:
            out[cur][m.group(1).strip()] = float(m.group(3).replace(",", ""))
    return out


ncu = parse_ncu(run / "ncu.txt")
ncu_cublas = parse_ncu(run / "ncu_cublas.txt")
cublas_kernel = next(iter(ncu_cublas), None)


def nc(kernel, key):
    return ncu.get(kernel, {}).get(key) if kernel != "cublas" else ncu_cublas.get(cublas_kernel, {}).get(key)


# ---- ptxas -v (this machine's CUDA 13 ptxas, from tests/ptx.rs) --------------
regs, spills = {}, {}
cur = None
for line in (run / "ptxas.txt").read_text().splitlines():
    m = re.search(r"Compiling entry function '([a-z_0-9]+)'", line)
    if m:
        cur = m.group(1)
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and cur:
        spills[cur] = m.groups()
    m = re.search(r"Used (\d+) registers", line)
    if m and cur:
        regs[cur] = int(m.group(1))

# ---- clocks while the GPU was busy -------------------------------------------
clocks = []
for line in (run / "smi.csv").read_text().splitlines()[1:]:
    f = [x.strip() for x in line.split(",")]
    if len(f) >= 5 and f[4].endswith("%") and int(f[4].split()[0]) > 50:
        clocks.append(int(f[1].split()[0]))

# ---- sweep (run 1) -----------------------------------------------------------
sweep_rows, sweep_attr = {}, {}
for line in (sweep / "tune.log").read_text().splitlines():
    if line.startswith("TUNE "):
        r = json.loads(line[5:])
        if r["kind"] == "attr":
            sweep_attr[r["kernel"]] = r
        else:
            sweep_rows[(r["kernel"], r["size"])] = r
sweep_torch = json.loads((sweep / "torch_gemm.json").read_text())
geoms = {}
for m in re.finditer(r'\("(gemm_tune_\w+)", WarpTiling \{ bm: (\d+), bn: (\d+), bk: (\d+), wm: (\d+), wn: (\d+), '
                     r'mi: (\d+), ni: (\d+), a_pad: \d+ \}, (true|false)\)', (sweep / "sweep_tune.rs.txt").read_text()):
    geoms[m.group(1)] = tuple(int(x) for x in m.groups()[1:8]) + (m.group(9) == "true",)


def f(x, nd=1, unit=""):
    return "-" if x is None else f"{x:,.{nd}f}{unit}"


P = []
w = P.append
w("# GEMM: a ladder from naive to cuBLAS-class FP32, measured\n")
runs = [str(x) for x in (run, sweep, shapes_run, tc_run, tc_before) if x]
w(f"<!-- Generated by scripts/docs/gemm.py from {', '.join(runs[:-1])} and {runs[-1]}; do not edit by hand. -->\n")
w(f"GPU: **{torch['gpu']}** ({torch['sms']} SMs), PTX for sm_90 compiled by rustc's NVPTX backend, commit `{commit}`. "
  "`C = alpha * A * B + beta * C`, f32, row-major, M = N = K, alpha = 1, beta = 0. "
  "TFLOP/s counts 2MNK floating-point operations in decimal units. "
  "Our times are criterion medians of CUDA-event GPU time (`cargo bench --bench gemm`, 10 flat samples); "
  f"cuBLAS is `torch.mm` with TF32 off (PyTorch {torch['torch']}, median of "
  f"{torch['sgemm_4096_reps']}/{torch['sgemm_8192_reps']} CUDA-event timings), in the same device call. "
  f"SM clock while the GPU was busy: {min(clocks)}-{max(clocks)} MHz (nvidia-smi, {len(clocks)} samples); "
  "clocks were left as found.\n")
w("Reproduce (the device runs carry release binaries built here by scripts/gpu/build.sh):\n")
w("```sh\ncargo test --release --test gemm            # emulator always, GPU when present\n"
  "cargo bench --bench gemm                     # on a GPU: criterion, GPU time\n"
  "OUT=<run> python3 scripts/gpu/torch_gemm.py  # cuBLAS, in the same device call\n"
  "python3 scripts/gpu/criterion_medians.py <criterion dir> > <run>/criterion_medians.json\n"
  "python3 scripts/docs/gemm.py <run> <sweep run> [<shapes run>] > docs/gemm.md\n```\n")

w("## The ladder (FP32, FMA units only)\n")
w("| step | kernel | 4096^3 TFLOP/s | % of cuBLAS | 8192^3 TFLOP/s | % of cuBLAS | % of FP32 peak | regs | what it fixes |")
w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for i, k in enumerate(FP32, 1):
    t4, t8 = tflops(4096, k), tflops(8192, k)
    w(f"| {i} | [`{k}`](../kernels/src/gemm/{FILES[k]}) | {f(t4, 2)} | {100 * t4 / cublas(4096):.1f}% | {f(t8, 2)} | "
      f"{100 * t8 / cublas(8192):.1f}% | {100 * t4 / FMA_PEAK:.0f}% | {regs.get('gemm_' + k, '-')} | {FIXES[k]} |")
w(f"| | **cuBLAS** `torch.mm` | **{cublas(4096):.2f}** | 100% | **{cublas(8192):.2f}** | 100% | "
  f"{100 * cublas(4096) / FMA_PEAK:.0f}% | {f(nc('cublas', 'Registers Per Thread'), 0)} | "
  f"`{torch['cublas_kernels_4096'][0] if torch.get('cublas_kernels_4096') else '?'}` |")
best4, best8 = tflops(4096, "double_buffered"), tflops(8192, "double_buffered")
w(f"\n**Best FP32 step (7, `double_buffered`): {best4:.2f} TFLOP/s at 4096^3 = {100 * best4 / cublas(4096):.1f}% of cuBLAS, "
  f"{best8:.2f} TFLOP/s at 8192^3 = {100 * best8 / cublas(8192):.1f}% of cuBLAS** (target: 90%). "
  f"% of FP32 peak is against {FMA_PEAK} TFLOP/s, the FMA throughput DESIGN.md measured on this GPU; "
  f"the datasheet rate at the {max(clocks)} MHz seen here is 132 x 128 x 2 x {max(clocks) / 1000:.2f} GHz = "
  f"{132 * 128 * 2 * max(clocks) / 1e6:.1f} TFLOP/s. Registers are `ptxas -v` (CUDA 13, sm_90) on the device; "
  "every kernel has 0 bytes of stack and 0 spills (tests/ptx.rs).\n")
ncu_db = nc("gemm_double_buffered", "Duration")
ncu_cb = nc("cublas", "Duration")
if ncu_db and ncu_cb:
    mn = torch["sgemm_4096_min_ms"]
    w(f"The ratio depends on how cuBLAS is timed. Against `torch.mm`'s fastest of {torch['sgemm_4096_reps']} calls "
      f"({mn:.3f} ms) step 7 is at {100 * mn * 1e6 / crit['gemm_4096/double_buffered']['median_ns']:.1f}% at 4096^3. "
      f"In single launches profiled by ncu (first launch of each, no clock control) cuBLAS's kernel took {ncu_cb:.2f} ms and "
      f"step 7 {ncu_db:.2f} ms: {100 * ncu_cb / ncu_db:.1f}% of cuBLAS by that measure. Every way, above the 90% target.\n")

t4, t8 = tflops(4096, "tf32"), tflops(8192, "tf32")
w("## Step 8, tensor cores (TF32, reported apart)\n")
w("| step | kernel | 4096^3 TFLOP/s | % of cuBLAS TF32 | 8192^3 TFLOP/s | % of cuBLAS TF32 | regs | what it does |")
w("| --- | --- | --- | --- | --- | --- | --- | --- |")
w(f"| 8 | [`tf32`](../kernels/src/gemm/08_tf32.rs) | {f(t4, 2)} | {100 * t4 / torch['tf32gemm_4096_TFLOPs']:.1f}% | {f(t8, 2)} | "
  f"{100 * t8 / torch['tf32gemm_8192_TFLOPs']:.1f}% | {regs.get('gemm_tf32', '-')} | {FIXES['tf32']} |")
w(f"| | cuBLAS TF32 `torch.mm` | {torch['tf32gemm_4096_TFLOPs']:.1f} | 100% | {torch['tf32gemm_8192_TFLOPs']:.1f} | 100% | | |")
w(f"\nCorrect (tested against the TF32 bound of tests/gemm.rs) but slow: {t4:.1f} TFLOP/s is below our own FP32 step 7. "
  f"ncu: tensor pipe active {f(nc('gemm_tf32', 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active'))}% of peak, "
  f"issue slots busy {f(nc('gemm_tf32', 'Issue Slots Busy'))}%, no eligible warp {f(nc('gemm_tf32', 'No Eligible'))}% of cycles, "
  f"{f(nc('gemm_tf32', 'Warp Cycles Per Issued Instruction'))} cycles between a warp's instructions, "
  f"{f(nc('gemm_tf32', 'Achieved Occupancy'))}% occupancy (one 256-thread block of {regs.get('gemm_tf32', '?')} registers per SM), "
  f"SM clock {f(nc('gemm_tf32', 'SM Frequency'), 2)} GHz. The kernel is latency-bound: each warp waits on scalar shared loads "
  "(24 per 16 `mma.sync`, each MMA accumulating into the tile it updated one `k` step before), with only 8 warps per SM "
  "to hide the latency; the transposed A staging also has 4-way shared store conflicts. cuBLAS reaches its "
  "figure with Hopper's `wgmma` (warpgroup MMA fed from shared memory by the TMA), which `mma.sync` cannot match; closing "
  "that gap is a different ladder.\n")

w("## Roofline position (4096^3, ncu)\n")
w(f"The FP32 roof is {FMA_PEAK} TFLOP/s; the DRAM roof {DRAM_ROOF} TB/s (device-to-device copy), so the ridge sits at "
  f"{FMA_PEAK / DRAM_ROOF:.1f} FLOP/byte. A 4096^3 GEMM does 2 x 4096^3 = 137 GFLOP on 201 MB of distinct data "
  "(683 FLOP/byte at best): every step is far right of the ridge in DRAM terms. What binds the early steps is the "
  "next level in: L2 and L1/shared-memory traffic. Intensities below are FLOP per byte at each level, measured by ncu "
  "(`dram__bytes.sum`, `lts__t_bytes.sum`) and, for shared memory, per load instruction.\n")
w("| step | kernel | TFLOP/s | % of FP32 peak | FLOP/DRAM byte | FLOP/L2 byte | block tile FLOP/byte | FMAs per shared load | bound by (our reading of the counters) |")
w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
BOUND = {"naive": "L1/L2 (2 loads per FMA)", "smem_tiled": "shared-memory loads (1.25 per FMA)",
         "blocktile_1d": "shared loads and issue (A: one value per FMA)",
         "blocktile_2d": "latency: one block per SM (168 registers) waits out its own loads and barriers",
         "vectorized": "latency: two blocks per SM; B bank conflicts", "warptile": "latency: loads not overlapped with FMAs",
         "double_buffered": "FMA issue (the FP32 roof)", "tf32": "latency (see above)"}
for i, k in enumerate(FP32 + ["tf32"], 1):
    kern = "gemm_" + k
    fl = 2 * 4096**3
    d, l2 = nc(kern, "dram__bytes.sum"), nc(kern, "lts__t_bytes.sum")
    sh = nc(kern, "smsp__inst_executed_op_shared_ld.sum")
    fma = nc(kern, "sm__inst_executed_pipe_fma.sum")
    tile = TILES[k]
    ai_tile = None if not tile else tile[0] * tile[1] / (2 * (tile[0] + tile[1]))
    per_ld = f"{4096**3 / 32 / sh:.1f}" if sh and k != "tf32" else "-"
    t = tflops(4096, k)
    pk = "-" if k == "tf32" else f"{100 * t / FMA_PEAK:.0f}%"
    w(f"| {i} | {k} | {f(t, 2)} | {pk} | {f(fl / d if d else None, 0)} | {f(fl / l2 if l2 else None, 1)} | "
      f"{f(ai_tile, 1)} | {per_ld} | {BOUND[k]} |")
w("\n*Block tile FLOP/byte* is `BM*BN / (2 (BM + BN))`, the intensity of one block's global loads; the L2 column measures "
  "it (L2 also serves misses of L1 and writes of C). *FMAs per shared load* is the warp-level FFMAs of the product "
  "(4096^3 / 32) per warp-level shared load instruction executed (ncu); ptxas merges adjacent scalar shared loads of "
  "the unrolled loops into 16-byte ones, so steps 2-4 execute fewer load instructions than their PTX has.\n")

w("## What the counters say (ncu, 4096^3, first launch of each kernel)\n")
w("| kernel | FMA pipe active | issue slots busy | no eligible warp | cycles between issues | occupancy | regs | "
  "shared ld wavefronts / request | shared ld bank conflicts / request | shared st bank conflicts | instructions (G) |")
w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for k in ["gemm_" + v for v in FP32 + ["tf32"]] + ["cublas"]:
    req = nc(k, "smsp__inst_executed_op_shared_ld.sum")
    wf = nc(k, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
    cf = nc(k, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
    name = k if k != "cublas" else "cuBLAS " + (cublas_kernel or "?")[:40] + "..."
    w(f"| {name} | {f(nc(k, 'sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active'))}% | {f(nc(k, 'Issue Slots Busy'))}% | "
      f"{f(nc(k, 'No Eligible'))}% | {f(nc(k, 'Warp Cycles Per Issued Instruction'), 2)} | {f(nc(k, 'Achieved Occupancy'))}% | "
      f"{f(nc(k, 'Registers Per Thread'), 0)} | {f(wf / req if req else None, 2)} | {f(cf / req if req else None, 2)} | "
      f"{f(nc(k, 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum'), 0)} | {f(nc(k, 'smsp__inst_executed.sum') / 1e9, 2)} |")
w("\n(cuBLAS's row has no FMA-pipe figure: its profile collected only the portable metrics.) "
  "Step 7 and cuBLAS's kernel are the same shape: 256 threads, ~250 registers, one block per SM (12.5% occupancy), "
  "3.3 shared wavefronts per 16-byte load request, no load bank conflicts, and almost the same instruction count. "
  "The remaining difference is issue density (87% against 81% of issue slots busy): cuBLAS's kernel keeps three stages "
  "of tiles in shared memory (`stage3` in its name, 67.6 KB per block) where step 7 stages one tile through registers.\n")

w("## The ladder, one idea per step\n")
def line(k, i):
    t4, t8 = tflops(4096, k), tflops(8192, k)
    return f"**{i}. {k}** ([`{FILES[k]}`](../kernels/src/gemm/{FILES[k]})): {t4:.2f} TFLOP/s at 4096^3, {t8:.2f} at 8192^3."
w(line("naive", 1) + " One thread per output, `k` loop over global memory. The 32 lanes of a warp share a row of A "
  "(one broadcast load) and read 32 consecutive floats of B (coalesced). Each FMA still needs two load instructions, and "
  f"ncu shows {f(nc('gemm_naive', 'lts__t_bytes.sum') / 1e9, 1)} GB through L2 for 0.2 GB of matrices; "
  f"{f(nc('gemm_naive', 'No Eligible'))}% of cycles have no warp ready to issue.\n")
w(line("smem_tiled", 2) + " The classic teaching kernel: 32x32 tiles of A and B in shared memory, 1024 threads. "
  f"L2 traffic falls to {f(nc('gemm_smem_tiled', 'lts__t_bytes.sum') / 1e9, 1)} GB, but now every FMA needs two shared "
  f"values ({f(nc('gemm_smem_tiled', 'smsp__inst_executed_op_shared_ld.sum') / 1e9, 2)} G shared load instructions for "
  "2.15 G warp FMAs; ptxas turns the A row reads into 16-byte loads): the shared-memory pipe, not DRAM, is the limit.\n")
w(line("blocktile_1d", 3) + " 512 threads, 64x64 tile, 8 outputs per thread in a column: the B value is loaded once into "
  "a register and used 8 times. Shared load instructions fall "
  f"{nc('gemm_smem_tiled', 'smsp__inst_executed_op_shared_ld.sum') / nc('gemm_blocktile_1d', 'smsp__inst_executed_op_shared_ld.sum'):.1f}x.\n")
w(line("blocktile_2d", 4) + " 256 threads, 128x128 tile, an 8x8 outer product per thread: 16 shared values per 64 FMAs. "
  "The PTX has 16 scalar shared loads per `k`; with the `k` loop unrolled, ptxas merges each thread's 8 adjacent A values "
  "(a row of the A tile across all 8 `k`) and 8 B values into `LDS.128` (32 per tile in the SASS, as in steps 5 and 6). "
  f"ncu shows {f(nc('gemm_blocktile_2d', 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum') / nc('gemm_blocktile_2d', 'smsp__inst_executed_op_shared_ld.sum'), 1)} "
  "extra wavefronts (bank conflicts) per shared load request: the two thread rows of a warp read A rows that share banks, "
  f"and B reads are 32 bytes apart. The limit is elsewhere: scalar global loads and {regs.get('gemm_blocktile_2d')} registers, "
  f"so one block per SM ({f(nc('gemm_blocktile_2d', 'Achieved Occupancy'))}% occupancy) that idles at its barriers.\n")
w(line("vectorized", 5) + " The same geometry with 16-byte accesses written out: `ld.global.v4` (a quarter of the global "
  "load instructions and their address arithmetic), the A tile stored transposed so a thread's 8 A values for one `k` are "
  "two `ld.shared.v4`. The shared-load counts equal step 4's (ptxas had merged those); what changes is registers: "
  f"{regs.get('gemm_vectorized')} instead of {regs.get('gemm_blocktile_2d')}, so two blocks share an SM "
  f"({f(nc('gemm_vectorized', 'Achieved Occupancy'))}% occupancy) and one computes while the other waits. The B reads still "
  "conflict: a warp's 16 column groups are 32 bytes apart.\n")
w(line("warptile", 6) + " Threads own 4x4 fragments interleaved across a warp's 64x32 tile (lanes 8 x 4), so a warp's "
  "16-byte loads are adjacent: broadcast and conflict-free "
  f"({f(nc('gemm_warptile', 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum') / nc('gemm_warptile', 'smsp__inst_executed_op_shared_ld.sum'), 3)} "
  "conflicts per request). What is left: load, barrier, compute, barrier; while a block waits for its tile, only "
  "the other block on the SM computes.\n")
s6 = sweep_rows.get(("gemm_warptile", 4096), {}).get("tflops")
s_t1 = sweep_rows.get(("gemm_tune_t1", 4096), {}).get("tflops")
w(line("double_buffered", 7) + " Two shared buffers: each thread issues the global loads of tile t+1 before computing tile "
  "t and stores them after, with one barrier per tile. The same loop at step 6's geometry measured "
  f"{f(s_t1, 2)} TFLOP/s against step 6's {f(s6, 2)} in the sweep run (+{100 * (s_t1 / s6 - 1):.0f}%). With loads "
  "overlapped, fatter threads win: 128x256 block tile, 8 warps of 64x64, 8x16 outputs per thread (128 accumulators, "
  f"{regs.get('gemm_double_buffered')} registers, one block per SM), 6 shared loads per 128 FMAs. "
  f"FMA pipe {f(nc('gemm_double_buffered', 'sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active'))}% active, "
  f"issue slots {f(nc('gemm_double_buffered', 'Issue Slots Busy'))}% busy: close to the FP32 roof, where cuBLAS is.\n")
w(line("tf32", 8) + " Reported apart; see above.\n")

w("## Choosing step 7's geometry (sweep run)\n")
w("Sixteen geometries of the step-7 loop were compiled into one PTX module (sources kept beside the run's files, "
  "`sweep_*.rs.txt`) and timed in one device call (CUDA-event medians of 30 runs at 4096^3, 15 at 8192^3; "
  f"cuBLAS in that call: {sweep_torch['sgemm_4096_TFLOPs']:.2f} / {sweep_torch['sgemm_8192_TFLOPs']:.2f} TFLOP/s). "
  "*Pipelined* variants move the barrier before a tile's last `k` and read the next tile's first fragments early; "
  "they did not help. Registers are the driver's (`cuFuncGetAttribute`).\n")
w("| variant | block tile | warp tile | outputs per thread | threads | regs | blocks/SM | 4096^3 TFLOP/s | 8192^3 TFLOP/s |")
w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
order = sorted(geoms, key=lambda n: -sweep_rows.get((n, 4096), {}).get("tflops", 0))
for n in ["gemm_warptile", "gemm_double_buffered"] + order:
    a = sweep_attr.get(n, {})
    r4, r8 = sweep_rows.get((n, 4096), {}), sweep_rows.get((n, 8192), {})
    if n in geoms:
        bm, bn, bk, wm, wn, mi, ni, pipe = geoms[n]
        desc = f"{n.removeprefix('gemm_tune_')}{' (pipelined)' if pipe else ''}"
        geo = (f"{bm}x{bn}x{bk}", f"{wm}x{wn}", f"{4 * mi}x{4 * ni}")
    elif n == "gemm_warptile":
        desc, geo = "step 6 (reference)", ("128x128x8", "64x32", "8x8")
    else:
        desc, geo = "step 7 of that run", ("128x128x16", "64x32", "8x8")
    chosen = " **(chosen)**" if n in geoms and geoms[n][:7] == (128, 256, 8, 64, 64, 2, 4) and not geoms[n][7] else ""
    w(f"| {desc}{chosen} | {geo[0]} | {geo[1]} | {geo[2]} | {a.get('threads', '-')} | {a.get('regs', '-')} | "
      f"{a.get('blocks_per_sm', '-')} | {f(r4.get('tflops'), 2)} | {f(r8.get('tflops'), 2)} |")
w("\nThe winner has cuBLAS's own shape (its kernel here is `..._tilesize256x128x8_stage3_warpsize4x2x1_ffma`, "
  "the transpose of ours). Configurations with 128 accumulators per thread and 8 warps per SM lead; 64 accumulators "
  "with one 256-thread block per SM (167 registers) trail, whatever the tile.\n")


def parse_shapes(path):
    """criterion's gemm_shapes medians (TFLOP/s) and PyTorch's lines, from one bench.log."""
    ours, torch_s, name = {}, {}, None
    for l in path.read_text().splitlines():
        if m := re.match(r"^gemm_shapes/(\S+)$", l.strip()):
            name = m.group(1)
        elif name and (m := re.search(r"thrpt:\s+\[\s*\S+ \S+\s+(\S+) (\S+)", l)):
            scale = {"Gelem/s": 1e-3, "Telem/s": 1.0}[m.group(2)]
            ours[name], name = float(m.group(1)) * scale, None
        elif m := re.match(r"torch sgemm (\S+): \S+ ms (\S+) TFLOP/s", l):
            torch_s[m.group(1)] = float(m.group(2))
    return ours, torch_s


if shapes_run:
    b_ours, b_torch = parse_shapes(shapes_run / "before-bench.log")
    a_ours, a_torch = parse_shapes(shapes_run / "after-bench.log")
    w("## Shapes that are not multiples of the tile\n")
    w("Step 7's tile is 128x256x8 and its fast path needs rows 16 bytes aligned (`K` and `N` multiples of 4). "
      "Blocks at the border of `C`, and every block when `K` or `N` is not a multiple of 4, take the edge path. "
      "`sgemm` (step 7) and cuBLAS through PyTorch (TF32 off, `scripts/gpu/torch_gemm_shapes.py`) at shapes around "
      "4096, criterion medians of 10 samples (benches/gemm.rs, group `gemm_shapes`), TFLOP/s; before and after are "
      "two device calls, each on a freshly started H100, cuBLAS measured in each:\n")
    w("| M x N x K | before: step 7 | cuBLAS | ratio | after: step 7 | cuBLAS | ratio |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    for shape in a_ours:
        bo, bt, ao, at = b_ours.get(shape), b_torch.get(shape), a_ours.get(shape), a_torch.get(shape)
        ratio = lambda x, y: f"{x / y:.2f}x" if x and y else "-"
        w(f"| {shape} | {f(bo)} | {f(bt)} | {ratio(bo, bt)} | **{f(ao)}** | {f(at)} | **{ratio(ao, at)}** |")
    stall = (shapes_run / "before-stall-top.txt").read_text().splitlines()
    total = int(re.search(r"Total samples: (\d+)", stall[1]).group(1))
    top = [l.split() for l in stall[4:6]]
    long_sb = sum(int(t[-1]) for t in top)
    w(f"\n**What was wrong.** ncu at 4095^3 (`before-stall-top.txt`): two instructions of the edge loop held "
      f"{100 * long_sb / total:.0f}% of all warp-stall samples, all of them long scoreboard (waiting on global loads): "
      f"`{' '.join(top[0][1:-2])}` and `{' '.join(top[1][1:-2])}`. The edge loop chose per tile, at run time, between a "
      "16-byte load and four checked scalar loads; ptxas merged the two paths' last loads into one register and had the "
      "first FMA of the tile wait for all of them. Removing the choice was not enough: with a branch and a predicate "
      "per element, ptxas then scheduled the twelve loads after most of the tile's FMAs (`sass-load-positions.txt`), "
      "so their latency was exposed either way.\n")
    w("**The fix** (`07_double_buffered.rs`, `tiles.rs`): an edge block takes the `K` residue in its *first* tile "
      "(checked element by element, once), so every later tile is whole in `K`. Rows past `M` and columns past `N` "
      "need no zeros, since they only feed elements of `C` that are never stored, so the later tiles load "
      "unconditionally from addresses clamped inside the matrix: one address per row and immediate offsets, no "
      "predicate alive across the FMAs. The one vector that crosses `N` reads the row's last four floats and is "
      "shifted back into place with selects when staged. In the SASS the edge loop's loads now come before "
      "the FMAs, as in the interior loop. `N < 4` (narrower than one vector) keeps checked loads.\n")
    w("**The interior, kept at cuBLAS's speed.** The reworked kernel's interior loop has the same instructions as "
      "before, but ptxas, compiling it beside the new edge loops (238 registers instead of 245), scheduled it "
      "differently: 5% slower at 4096^3 in an A/B device call (2.835 ms against 2.669). Compiled alone it was worse "
      "(205 registers, its loads moved after the FMAs: 3.392 ms). So grids whose every block is interior "
      "(`all_interior`: M, N, K multiples of the tile, aligned buffers) launch `gemm_double_buffered_interior`, "
      "built from step 7's first loop kept verbatim (`07_double_buffered_v1.rs`, 2.704 ms in that call), and "
      "every other grid the reworked kernel (`interior-ab/` beside this run: `abc.txt`, `ab.txt`).\n")
    w("**What remains:** the edge loop reads with 4-byte loads (four times the L1 wavefronts of 16-byte ones, "
      "competing with the tile's shared-memory reads), and 4097 needs a fifth wave of 128x256 blocks (561 blocks on "
      "132 SMs) where cuBLAS picks another tile. A variant with 16-byte clamped loads for aligned edges (4000^3) "
      "made ptxas move even the interior loop's loads after the FMAs (240 registers). A step with `cp.async` "
      "(global to shared memory without registers, zero-filling copies at the edges, three stages) was written, "
      "passed the tests and the sanitizers, and measured slower at every shape (39.8 TFLOP/s at 4096^3; "
      "docs/measurements/2026-11-22-h100-gemm-async-copy/): `A`'s transposed tile takes one 4-byte copy per "
      "element. It was not kept.\n")

if tc_run:
    tc = json.loads((tc_run / "torch_gemm_tc.json").read_text())
    bench = {}
    for m in re.finditer(r"^\s*(\w+) (\d+)\^3: median ([\d.]+) ms \(min ([\d.]+), max ([\d.]+), (\d+) reps\) ([\d.]+) TFLOP/s",
                         (tc_run / "bench.log").read_text(), re.M):
        bench[(m.group(1), int(m.group(2)))] = (float(m.group(3)), int(m.group(6)), float(m.group(7)))
    before = {}
    if tc_before:
        for m in re.finditer(r"^\s*(\w+) (\d+)\^3: median [\d.]+ ms .*? ([\d.]+) TFLOP/s", (tc_before / "bench.log").read_text(), re.M):
            before[(m.group(1), int(m.group(2)))] = float(m.group(3))
    env = (tc_run / "env.log").read_text()
    tc_regs = dict(re.findall(r"Compiling entry function '(\w+)'.*?\n.*?\n.*?Used (\d+) registers", env, re.S))
    gpu_line = next(l for l in env.splitlines() if "H100" in l or "NVIDIA" in l)

    def ncu_val(path, key):
        m = re.search(re.escape(key) + r"\s+\S*\s+([\d,.]+)\s*$", path.read_text(), re.M)
        return float(m.group(1).replace(",", "")) if m else None

    def stall(path):
        m = re.search(r"spends ([\d.]+) cycles being stalled waiting for a scoreboard dependency\s+(?:on\s+)?a? ?L1TEX.*?"
                      r"about ([\d.]+)% of the total average of ([\d.]+) cycles", path.read_text(), re.S)
        return m.groups() if m else ("?", "?", "?")

    w("## Steps 9-10: Hopper's tensor cores (`wgmma`, `sm_90a` only)\n")
    w(f"A separate device call ({tc_run.name}; GPU `{gpu_line.split(',')[0]}`, driver {gpu_line.split(',')[1].strip()}): "
      "`examples/gemm_tensor_cores.rs` times our steps (CUDA-event medians after 5 warm-up launches; each output first "
      "poisoned with NaN, checked written, and 4096 sampled elements checked against f64 within the step's bound), "
      "then `scripts/gpu/torch_gemm_tc.py` times cuBLAS through `torch.mm` with TF32 allowed and with it off "
      f"(PyTorch {tc['torch']}, medians after 10 warm-ups) in the same call. M = N = K, uniform inputs in [-1, 1). "
      "Steps 9 and 10 exist only in the `sm_90a` module (`ptx/sm_90a.ptx`), which the host loads on compute "
      "capability 9.0; elsewhere their launchers return `Error::ArchitectureRequired`.\n")
    w("| step | kernel | 4096^3 TFLOP/s | vs cuBLAS | 8192^3 TFLOP/s | vs cuBLAS | regs | compared with |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = [("7", "double_buffered", "sgemm"), ("8", "tf32", "tf32"), ("9", "wgmma", "tf32"), ("10", "wgmma_3xtf32", "sgemm")]
    for step, k, peer in rows:
        t4, t8 = bench[(k, 4096)][2], bench[(k, 8192)][2]
        p4, p8 = tc[f"{peer}_4096"]["TFLOPs"], tc[f"{peer}_8192"]["TFLOPs"]
        w(f"| {step} | [`{k}`](../kernels/src/gemm/{FILES.get(k, {'wgmma': '09_wgmma.rs', 'wgmma_3xtf32': '10_wgmma_3xtf32.rs'}.get(k))}) "
          f"| {t4:.1f} | {t4 / p4:.2f}x | {t8:.1f} | {t8 / p8:.2f}x | {tc_regs.get('gemm_' + k, '-')} | "
          f"cuBLAS {'TF32' if peer == 'tf32' else 'SGEMM'} |")
    for peer, name in (("tf32", "TF32 (`allow_tf32 = True`)"), ("sgemm", "SGEMM (TF32 off)")):
        w(f"| | cuBLAS {name} | {tc[peer + '_4096']['TFLOPs']:.1f} | | {tc[peer + '_8192']['TFLOPs']:.1f} | | | |")
    reps = sorted({v[1] for v in bench.values()})
    w(f"\nOur medians are of {'/'.join(map(str, reps))} launches; cuBLAS's of {tc['sgemm_4096']['reps']} (4096^3) and "
      f"{tc['sgemm_8192']['reps']} (8192^3). Registers from `ptxas -arch=sm_90a -v` (CUDA 13 on the GPU machine), "
      "0 bytes of stack and spills for both.\n")
    w("**Accuracy** on the same inputs, against the f64 product on the GPU (`torch_gemm_tc.json`): the largest error "
      "relative to the largest `|C|`, and `||err||_F / ||ref||_F`:\n")
    w("| output | 4096^3 max | 4096^3 Frobenius | 8192^3 max | 8192^3 Frobenius |")
    w("| --- | --- | --- | --- | --- |")
    for name in ("cublas_sgemm", "double_buffered", "wgmma_3xtf32", "cublas_tf32", "tf32", "wgmma"):
        e4, e8 = tc.get(f"err_{name}_4096"), tc.get(f"err_{name}_8192")
        if e4 and e8:
            w(f"| {name} | {e4['max_rel_to_max']:.2e} | {e4['fro_rel']:.2e} | {e8['max_rel_to_max']:.2e} | {e8['fro_rel']:.2e} |")
    x4, s4 = tc["err_wgmma_3xtf32_4096"]["max_rel_to_max"], tc["err_cublas_sgemm_4096"]["max_rel_to_max"]
    x8, s8 = tc["err_wgmma_3xtf32_8192"]["max_rel_to_max"], tc["err_cublas_sgemm_8192"]["max_rel_to_max"]
    f4, f8 = tc["err_wgmma_3xtf32_4096"]["fro_rel"], tc["err_wgmma_3xtf32_8192"]["fro_rel"]
    g4, g8 = tc["err_cublas_sgemm_4096"]["fro_rel"], tc["err_cublas_sgemm_8192"]["fro_rel"]
    nb, nw = tc_run / "ncu_wgmma.log", tc_before / "ncu_wgmma.log" if tc_before else None
    w("\n**Step 9, `wgmma`.** Each of two warpgroups issues `wgmma.mma_async.m64n256k8` on K-major, 128-byte-swizzled "
      "tiles that the threads load, round to TF32, transpose (`B`) and store; three buffers, one barrier per 32-deep "
      f"tile. {bench[('wgmma', 4096)][2]:.1f} and {bench[('wgmma', 8192)][2]:.1f} TFLOP/s: "
      f"{bench[('wgmma', 4096)][2] / bench[('tf32', 4096)][2]:.1f}x step 8, "
      f"{100 * bench[('wgmma', 4096)][2] / tc['tf32_4096']['TFLOPs']:.0f}% and "
      f"{100 * bench[('wgmma', 8192)][2] / tc['tf32_8192']['TFLOPs']:.0f}% of cuBLAS TF32, short of the 70% "
      "aimed at. ")
    if nw:
        w(f"The call before ({tc_before.name}) ran every block's loads through a bounds branch each: "
          f"{before[('wgmma', 4096)]:.1f} TFLOP/s, ncu {ncu_val(nw, 'Warp Cycles Per Issued Instruction'):.1f} cycles "
          f"between a warp's instructions, {stall(nw)[1]}% of them stalled on long scoreboard (global loads), "
          f"L1/TEX throughput {ncu_val(nw, 'L1/TEX Cache Throughput'):.0f}%: each load sat in its own basic block and "
          "was waited for where the paths joined. Interior blocks now run a copy of the loop with twelve unconditional "
          "16-byte loads ahead of the `wgmma`s. ")
    w(f"Now (4096^3, ncu): {ncu_val(nb, 'Warp Cycles Per Issued Instruction'):.1f} cycles between a warp's instructions, "
      f"{stall(nb)[1]}% still long scoreboard, L1/TEX (shared memory included) throughput "
      f"{ncu_val(nb, 'L1/TEX Cache Throughput'):.0f}%, shared-store bank conflicts "
      f"{ncu_val(nb, 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum'):.0f} of "
      f"{ncu_val(nb, 'l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum'):,.0f} wavefronts. The threads are both "
      "producers and consumers: a tile's loads fly only during the previous tile's products, and every operand "
      "crosses the registers and the shared-store path. That is what the next steps of the ladder remove: TMA "
      "copies (`cp.async.bulk.tensor`) into an mbarrier pipeline, and a producer warp apart from the consumer "
      "warpgroups.\n")
    w(f"**Step 10, 3xTF32.** Each input is split into `hi = tf32(x)` and `lo = tf32(x - hi)` while staged, and each "
      "8-deep step issues `a_lo b_hi`, `a_hi b_lo`, `a_hi b_hi` into one accumulator. "
      f"{bench[('wgmma_3xtf32', 4096)][2]:.1f} and {bench[('wgmma_3xtf32', 8192)][2]:.1f} TFLOP/s: "
      f"{bench[('wgmma_3xtf32', 4096)][2] / tc['sgemm_4096']['TFLOPs']:.2f}x and "
      f"{bench[('wgmma_3xtf32', 8192)][2] / tc['sgemm_8192']['TFLOPs']:.2f}x cuBLAS SGEMM (the aim: 1.5x). But its "
      f"largest error is {x4 / s4:.1f}x and {x8 / s8:.1f}x SGEMM's (the aim: at most 2x), and it grows with `K` as `K` "
      f"does (Frobenius {f4:.2e} to {f8:.2e} from 4096 to 8192, where SGEMM's grows as the square root: {g4:.2e} to "
      f"{g8:.2e}): a systematic error of the accumulation, not of the split, whose products are exact. The tensor "
      "cores truncate each 8-deep step's sum into the f32 accumulator, which here runs over all of `K`, so the "
      "truncations lean one way and add up. The CPU emulator now truncates too, and shows the same drift "
      "(`tensor_core_truncation_drifts_with_k_unless_promoted_on_the_emulator` in tests/gemm.rs). Step 11, "
      "`wgmma_promoted`, adds each 32-deep tile's partial sum into a second set of f32 registers instead (128 more "
      "registers at N = 256 per warpgroup, so N = 128).\n")

w("## Correctness\n")
w("tests/gemm.rs checks every step against a float64 reference on odd shapes (1x1x1, 17x33x65, 70x45x130, 132x260x68 on "
  "the CPU emulator and the GPU; 1000x3000x777, 4097x4095x513 and 1024^3 on the GPU; 20000 random elements of 4096^3), "
  "with NaN-poisoned C for beta = 0 (C must not be read), alpha/beta updates, alpha = 0, and buffers misaligned by one "
  "float. Step 7's three ways of loading a block are tested on shapes made for them (`N < 4`, every `K` residue, "
  "vectors crossing `N` at the end of `B`, blocks past `M` and `N`; 300x3x1000 up to 513x4095x1025 on the GPU). The bound per element is `gamma_{K+3} (|alpha| sum_k |a_ik b_kj| + |beta c0|)` with `gamma_n = n u / (1 - n u)`, "
  "u = 2^-24 (Higham's dot-product bound; it grows with K); for TF32, `(2^-10 + 2^-22 + 2 gamma_{K+3})` times the same. "
  "Observed worst ratios of error to bound on the GPU are in the run's tests.log (about 1e-3 for FP32 at 4096^3). "
  "compute-sanitizer memcheck and racecheck report 0 errors and 0 hazards on the GPU tests (small shapes).\n")
if tc_run:
    w("Steps 9 and 10 are tested the same way, plus shapes made for their 128x256x32 tiles (`K = 1`, `N < 4`, "
      "`K` below, at and past a tile, blocks just past `M` and `N`) on the emulator, whose `wgmma` reads shared "
      "memory through the kernels' own descriptors and swizzle, and on the GPU (C poisoned, up to 2048x2048x8192); "
      "3xTF32 against `(3 * 2^-22 (1 + 2^-20) + 2 gamma_{3K+3})` times the same sum. A launch of a `sm_90a` step "
      "with another module loaded returns `Error::ArchitectureRequired` (tested on the H100 with the sm_90 module "
      "forced). compute-sanitizer memcheck and racecheck: 0 errors, 0 hazards on the step 9 and 10 GPU test in "
      f"the first call ({tc_before.name if tc_before else '-'}), before the interior loop and step 10's 16-byte "
      "stores; the last call did not repeat them.\n")

w("## Machine\n")
w("```\n" + machine + "\n```")
print("\n".join(P))
