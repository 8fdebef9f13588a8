#!/usr/bin/env python3
"""Writes docs/softmax.md from GPU runs' files and the registry.

    python3 scripts/docs/softmax.py docs/measurements/<run> [<counters run>] > docs/softmax.md
    python3 scripts/docs/softmax.py <run> <counters run> [<run on another GPU> <its report run> ..] > docs/softmax.md

The page is written from the first run (and the counters run after it).
Further arguments come in pairs, one pair per further GPU, in the order the
"Every GPU" section gives them: that GPU's softmax run folder (the same
files as the first), then its report run folder (scripts/gpu/run.sh's, as
docs/transpose.md reads), whose report.json names the same GPU and gives
its DRAM spec where the report has the figure; the counters run is the
first GPU's report run in that sense. With no pair the page has no such
section.

The steps (order, names, files, ideas, floats per thread) come from
docs/registry.json; the page has one section per strategy (a step number),
listing every kernel of it. The run folder holds the eight files of one
device call of scripts/gpu/softmax.sh (it says how each is made):
summary.txt (commit, nvidia-smi, nvcc, and one `== [Ns] part: status` line
per part of the call), tests.log (tests/softmax/ on the GPU with
--nocapture: the `accuracy:` lines, `(dispatch)` marking the kernel the
dispatch picks), bench.log (criterion's output of benches/softmax.rs),
criterion_medians.json (scripts/gpu/criterion_medians.py over criterion's
folder), torch_softmax.json (scripts/gpu/peers softmax), ncu.txt (ncu over
the `gpu_ncu_probe` test, which names each launch's shape), sanitizer.log
(compute-sanitizer memcheck and racecheck over the GPU tests) and ptxas.txt
(`ptxas -v` of the PTX that ran). The emulator's counters.json (`cargo
emulate --counters --counters-json`, no GPU) comes from the second folder
when given (one emulator run that docs/transpose.md's folder holds for both
pages), else from the run folder. Every number in the page comes from those
files; the constants below are the kernels' and the H100's."""
import json, math, pathlib, re, sys, types
from common import NO_FRAME, ROOT, counters_table, emulator_counters, far_apart, page, pictures, ptxas, not_measured, steps
from common import commit_of, dispatch_picks, dram_spec, gpu_name, gpu_table, l2_mb, run_link, share

args = [pathlib.Path(a) for a in sys.argv[1:]]
if len(args) > 2 and len(args) % 2:
    raise SystemExit("softmax.py: after <run> <counters run>, give each further GPU as a pair: <its run> <its report run>")
run = args[0]
counted = args[1] if len(args) > 1 else run
others = list(zip(args[2::2], args[3::2]))
STEPS = steps("softmax", run)
read = lambda name: (run / name).read_text()


def load(folder):
    """One softmax run folder's figures: criterion's medians, PyTorch's
    (torch_softmax.json), tests.log, the shapes (PyTorch's order, then any
    the bench adds) and the kernel the dispatch picks at each (the tests'
    `(dispatch)` accuracy lines)."""
    m = types.SimpleNamespace(folder=folder, crit=json.loads((folder / "criterion_medians.json").read_text()),
                              torch=json.loads((folder / "torch_softmax.json").read_text()),
                              tests=(folder / "tests.log").read_text())
    m.shapes = [(int(a), int(b)) for a, b in re.findall(r"^torch_softmax_(\d+)x(\d+)_ms$", "\n".join(m.torch), re.M)]
    for k in m.crit:
        x = re.match(r"softmax_(\d+)x(\d+)/", k)
        if x and (int(x.group(1)), int(x.group(2))) not in m.shapes:
            m.shapes.append((int(x.group(1)), int(x.group(2))))
    m.dispatch = dispatch_picks(m.tests)
    return m


FIRST = load(run)
crit, torch, tests, SHAPES, DISPATCH = FIRST.crit, FIRST.torch, FIRST.tests, FIRST.shapes, FIRST.dispatch
summary, bench_log, ncu_txt, ptxas_txt = (read(f) for f in ("summary.txt", "bench.log", "ncu.txt", "ptxas.txt"))
sanitizer = read("sanitizer.log")
commit = commit_of(summary)

# The kernels' constants (kernels/src/softmax/mod.rs) and the H100's.
WARP, MAX_BLOCK_THREADS = 32, 1024
ONLINE_FLOATS, STASH_MAX_COLS = 16, 57_344
# The dispatch's block size and where it turns from a block to a cluster: the kernels' own constants.
MOD_RS = (ROOT / "kernels/src/softmax/mod.rs").read_text()
BLOCK_TARGET_THREADS, CLUSTER_MIN_COLS = (int(re.search(rf"pub const {name}: u32 = (\d+);", MOD_RS).group(1))
                                          for name in ("BLOCK_TARGET_THREADS", "CLUSTER_MIN_COLS"))
L2_MB, SM_SHARED_KB = l2_mb(gpu_name(run)), 228


# ---- the registry: steps grouped by strategy (step number), in step order --
def cluster(step):
    """(floats, blocks, threads) of a step launched in clusters, else None."""
    m = re.search(r"floats: (\d+), stash: \w+, cluster: (\d+), threads: (\d+)", step["geometry"])
    return tuple(map(int, m.groups())) if m and int(m.group(2)) > 1 else None


def floats(step):
    m = re.search(r"floats: (\d+)", step["geometry"])
    return int(m.group(1)) if m else ONLINE_FLOATS


def strategy(step):
    return re.sub(r"(?<!^)([A-Z])", r" \1", re.search(r"strategy: (\w+)", step["geometry"]).group(1)).lower()


def step_key(label):
    m = re.match(r"(\d+)(.*)", label)
    return int(m.group(1)), m.group(2)


GROUPS = {}
for s in STEPS:
    GROUPS.setdefault(s["step"], []).append(s)
GROUPS = dict(sorted(GROUPS.items(), key=lambda kv: step_key(kv[0])))


def title(label):
    ks = GROUPS[label]
    return ks[0]["name"] if len(ks) == 1 else strategy(ks[0])


# Which row lengths each strategy takes (Strategy::for_cols, Strategy::kernel), from the kernels'
# constants and each step's floats per thread.
def reach(label):
    ks = GROUPS[label]
    kind = strategy(ks[0])
    if kind == "warp per row":
        return [WARP * floats(k) for k in ks]
    if kind == "block per row":
        return [BLOCK_TARGET_THREADS * floats(k) for k in ks[:-1]] + [MAX_BLOCK_THREADS * floats(ks[-1])]
    if kind == "cluster":
        return [f * b * t for f, b, t in map(cluster, ks)]
    return [STASH_MAX_COLS] if "stash" in ks[0]["name"] else [None]


# ---- a run's figures at a shape (the first run's unless another is given) -
sh = lambda s: f"{s[0]}x{s[1]}"
c = lambda s, name, m=FIRST: m.crit.get(f"softmax_{sh(s)}/{name}")
torch_gbs = lambda s, m=FIRST: m.torch[f"torch_softmax_{sh(s)}_GBs"]
pct = lambda x, roof: 100 * x / roof
roof = lambda s, m=FIRST: c(s, "roof_cuMemcpyDtoD", m)["gb_per_s"]


def g(s, k):
    v = c(s, k)
    return f"{v['gb_per_s']:,.0f} GB/s ({pct(v['gb_per_s'], roof(s)):.1f}% of `cuMemcpyDtoD`)" if v else "-"


samples = sorted({int(x) for x in re.findall(r"Collecting (\d+) samples", bench_log)})
launches = [int(x) for x in re.findall(r"Collecting \d+ samples in estimated [\d.]+ \w+ \((\d+) iterations\)", bench_log)]
ptx_arch = re.search(r"for '(sm_\d+a?)'", ptxas_txt).group(1)

# ---- ncu.txt: counters per launch, in launch order, with the probe's shapes -
UNIT = {"byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1, "Gbyte": 1e3, "ns": 1e-3, "us": 1, "ms": 1e3}  # to MB and us
ncu, cur = [], None
for line in ncu_txt.splitlines():
    m = re.match(r"^  (softmax_\w+) \((\d+), 1, 1\)x\((\d+), 1, 1\)", line)
    if m:
        cur = {"kernel": m.group(1).removeprefix("softmax_"), "grid": int(m.group(2)), "block": int(m.group(3))}
        ncu.append(cur)
        continue
    m = re.match(r"^\s+([a-z0-9_]+__\S+)\s+(\S+)?\s+([\d,.]+)$", line)
    if m and cur is not None:
        cur[m.group(1)] = float(m.group(3).replace(",", "")) * UNIT.get(m.group(2) or "", 1)
probe_shapes = [(int(a), int(b)) for a, b in re.findall(r"ncu probe: \w+ on (\d+)x(\d+)", ncu_txt)]
assert len(probe_shapes) == len(ncu), "ncu.txt: one `ncu probe:` line per profiled launch"
for k, s in zip(ncu, probe_shapes):
    k["shape"] = s


def n(kernel, s):
    return next((k for k in ncu if k["kernel"] == kernel and k["shape"] == s), None)


# ---- ptxas.txt: registers and stack per kernel ------------------------------
regs, frames = ptxas(ptxas_txt)
no_spills = all(frames[s["entry"]] == NO_FRAME for s in STEPS)
r = lambda name: regs[next(s["entry"] for s in STEPS if s["name"] == name)]

acc = [(m.group(1), m.group(2), float(m.group(3)), float(m.group(4)))
       for m in re.finditer(r"accuracy: (\w+) (\d+x\d+) max_ulp_near_max ([\d.]+) max_row_sum_err ([\d.e+-]+)", tests)]

P, w = page("softmax.py", "Softmax: numerically stable, one read and one write, at the bandwidth roof",
            run, *([counted] if counted != run or others else []), *[f for pair in others for f in pair])
w(f"GPU: **{torch['gpu']}** ({torch['sms']} SMs), PTX for {ptx_arch}, commit `{commit}`, one device call. "
  f"Our times are criterion medians of CUDA-event GPU time (`cargo bench --bench softmax`: {'/'.join(map(str, samples))} "
  f"samples of back-to-back launches, {min(launches):,}-{max(launches):,} launches per case); GB/s counts bytes read + "
  f"written, 2 x 4 x rows x cols, in decimal units; every case moves at least "
  f"{min(c(s, 'dispatch')['bytes'] for s in SHAPES) / 1e6:,.0f} MB, past the {L2_MB} MB L2. The roof is `cuMemcpyDtoD` "
  "of the same bytes in the same criterion group; our own copy kernel is shown beside it. "
  f"PyTorch {torch['torch']} is `torch.softmax(a, dim=-1)` timed in the same device call by "
  "`scripts/gpu/peers softmax` (median of CUDA-event timings after warm-up).\n")
w("Reproduce:\n")
w("```sh\n"
  "scripts/gpu/build.sh                  # here: release binaries and the PTX -> .gpu/\n"
  "bash scripts/gpu/softmax.sh           # on the GPU machine, .gpu/ carried: its eight files land in $OUT\n"
  + ("python3 scripts/docs/softmax.py <run> <report run> [<run> <report run> of each other GPU] > docs/softmax.md\n"
     if others else "python3 scripts/docs/softmax.py <run> > docs/softmax.md   # here, with $OUT's files in <run>\n")
  + "```\n")

def now(cols):
    """The kernel the dispatch picks today for rows of `cols` columns (`Kernel::for_cols`), from the reaches above."""
    for label, lo_ok in (("1", True), ("2", cols < CLUSTER_MIN_COLS), ("4", cols >= CLUSTER_MIN_COLS)):
        tops = reach(label)
        if lo_ok and cols <= tops[-1]:
            return next(k["name"] for k, top in zip(GROUPS[label], tops) if cols <= top)
    return "online"


# The headline's picks are the tests' `(dispatch)` lines of the run's build: they must be today's.
stale = [s for s in SHAPES if now(s[1]) != DISPATCH[s]]
if stale:
    raise SystemExit(f"softmax.py: {run}'s dispatch picked another kernel than today's at {stale}: rerun")

# ---- headline ---------------------------------------------------------------
w("## At the benchmark shapes\n")
w("`softmax::softmax` picks the kernel by row length (the dispatch, below).\n")
w("| shape | kernel the dispatch picks | GB/s | % of `cuMemcpyDtoD` | % of our copy kernel | PyTorch | vs PyTorch |")
w("| --- | --- | --- | --- | --- | --- | --- |")
for s in SHAPES:
    d, ck, t = c(s, "dispatch")["gb_per_s"], c(s, "roof_copy_kernel")["gb_per_s"], torch_gbs(s)
    w(f"| {sh(s)} | `{DISPATCH[s]}` | {d:,.0f} | {pct(d, roof(s)):.1f}% | {pct(d, ck):.1f}% | {t:,.0f} GB/s | {d / t:.2f}x |")
copy_pcts = [pct(c(s, "roof_copy_kernel")["gb_per_s"], roof(s)) for s in SHAPES]
# A run before the copy kernel became one vector a thread shows it well below the driver's copy.
old_copy = max(copy_pcts) < 95
w(f"\nRatios and percentages compare figures taken in the same device call. Our copy kernel reaches "
  f"{min(copy_pcts):.0f}-{max(copy_pcts):.0f}% of `cuMemcpyDtoD` in this run"
  + (", where it was a 16-byte grid-stride loop over one resident wave of blocks, not yet one vector a thread as it "
     "is now (what that changed: " if old_copy else ", as one 16-byte vector a thread (what that layout changed: ")
  + "[the probes](measurements/2026-11-28-copy-order)). `cuMemcpyDtoD` is the roof, and the percentages are of it. "
  f"PyTorch's own device copy (1 GiB) in the same call: {torch['copy_GBs']:,.0f} GB/s.\n")


# ---- every GPU: the first run and each further pair --------------------------
def build(folder):
    """The commit a softmax run's binaries were built from (its summary.txt)."""
    return commit_of((folder / "summary.txt").read_text())


def gpu_figures(folder, report_run):
    """One GPU's softmax run (load) with its name, checked against its report
    run's, and the DRAM spec from that report (None where it lacks one)."""
    m = load(folder)
    m.gpu, m.report, m.spec = gpu_name(folder), report_run, dram_spec(report_run)
    if gpu_name(report_run) != m.gpu:
        raise SystemExit(f"softmax.py: {folder} ran on {m.gpu}, its report run {report_run} on {gpu_name(report_run)}")
    return m


def timed(s, m, us, gb_per_s):
    """A median (us) at shape s of GPU m, with its share of that GPU's `cuMemcpyDtoD` in the same group."""
    return f"{us:.1f} us, {share(gb_per_s, roof(s, m), m.spec)}"


EVERY_ROWS = ["`cuMemcpyDtoD`", "`softmax::softmax`", "PyTorch `torch.softmax`"]


def gpu_cells(s, m):
    """GPU m's cells of EVERY_ROWS at shape s; `-` where its run has no figure."""
    d, k, t = c(s, "roof_cuMemcpyDtoD", m), c(s, "dispatch", m), m.torch.get(f"torch_softmax_{sh(s)}_ms")
    if not d:
        return ["-"] * len(EVERY_ROWS)
    picked = f"`{m.dispatch[s]}`: " if s in m.dispatch else ""
    return [timed(s, m, d["median_ns"] / 1e3, d["gb_per_s"]),
            picked + timed(s, m, k["median_ns"] / 1e3, k["gb_per_s"]) if k else "-",
            timed(s, m, t * 1e3, torch_gbs(s, m)) if t else "-"]


def dispatch_pct(m):
    """The dispatch's share of m's `cuMemcpyDtoD` at each shape m measured, in %."""
    return [pct(c(s, "dispatch", m)["gb_per_s"], roof(s, m)) for s in m.shapes if c(s, "dispatch", m)]


def vs_torch(m):
    """The dispatch's speed over PyTorch's at each shape m has both."""
    return [c(s, "dispatch", m)["gb_per_s"] / torch_gbs(s, m) for s in m.shapes
            if c(s, "dispatch", m) and f"torch_softmax_{sh(s)}_GBs" in m.torch]


if others:
    GPUS = [gpu_figures(f, r_) for f, r_ in [(run, counted)] + others]
    every = [s for g_ in GPUS for s in g_.shapes]
    every = [s for i, s in enumerate(every) if s not in every[:i]]
    w("## Every GPU\n")
    w("Each GPU's figures come from one device call (its run folders: "
      + ", ".join(f"{run_link(g_.folder)} with the report's {run_link(g_.report)}" for g_ in GPUS)
      + "), PyTorch in the same call. Cells: the median (criterion's, PyTorch's CUDA events), GB/s, % of that GPU's "
      "`cuMemcpyDtoD` of the same bytes, and % of its DRAM spec where its report has the figure; the dispatch's cell "
      "names the kernel it picks there. `-`: that run has no figure at that shape.\n")
    gpu_table(w, ["shape", "what"], [g_.gpu for g_ in GPUS])
    for s in every:
        cells = [gpu_cells(s, g_) for g_ in GPUS]
        for i, label in enumerate(EVERY_ROWS):
            if any(cs[i] != "-" for cs in cells):
                w(f"| {sh(s)} | {label} | " + " | ".join(cs[i] for cs in cells) + " |")
    w("")
    first = GPUS[0]
    for g_ in GPUS[1:]:
        mine, theirs = dispatch_pct(g_), dispatch_pct(first)
        moved = [(s, g_.dispatch[s], first.dispatch[s]) for s in every
                 if s in g_.dispatch and s in first.dispatch and g_.dispatch[s] != first.dispatch[s]]
        w(f"On the {g_.gpu} the dispatch reaches {min(mine):.1f}-{max(mine):.1f}% of its `cuMemcpyDtoD` at the "
          f"{len(mine)} shapes of its run (the {first.gpu}: {min(theirs):.1f}-{max(theirs):.1f}% at {len(theirs)})"
          + (f" and runs {min(vs_torch(g_)):.2f}-{max(vs_torch(g_)):.2f}x PyTorch's `torch.softmax` "
             f"({min(vs_torch(first)):.2f}-{max(vs_torch(first)):.2f}x)" if vs_torch(g_) and vs_torch(first) else "")
          + ". " + (f"It picks the same kernel as on the {first.gpu} at every shape both runs tested." if not moved else
                    "Its run's dispatch picked " + "; ".join(f"`{a}` at {sh(s)} (the {first.gpu}'s run: `{b}`)"
                                                           for s, a, b in moved)
                    + f": the builds differ (commits `{build(g_.folder)}` and `{build(first.folder)}`), and "
                    "the dispatch's thresholds with them.")
          + "\n")

# ---- every row length: the sweep (benches/softmax.rs, softmax_len_<cols>) ---
def sweep(m):
    """m's sweep: {cols: (rows, {kernel: % of the same bytes' cuMemcpyDtoD}, the dispatch's kernel, its %)}."""
    groups = {}
    for k, v in m.crit.items():
        x = re.match(r"softmax_len_(\d+)/(.+)", k)
        if x:
            groups.setdefault(int(x.group(1)), {})[x.group(2)] = v
    out = {}
    for cols, got in sorted(groups.items()):
        r = got.pop("roof_cuMemcpyDtoD")
        picked = next(n for n in got if n.startswith("dispatch_"))
        out[cols] = (r["bytes"] // 8 // cols,
                     {n: pct(v["gb_per_s"], r["gb_per_s"]) for n, v in got.items() if n != picked},
                     picked.removeprefix("dispatch_"), pct(got[picked]["gb_per_s"], r["gb_per_s"]))
    return out


SWEPT = sweep(FIRST)
if SWEPT:
    w("## Every row length\n")
    mib = sorted({round(r * c_ * 4 / 2**20) for c_, (r, *_) in SWEPT.items()})
    clustered = min(c_ for c_, (r, got, picked, _) in SWEPT.items() if any("cluster" in n for n in [*got, picked]))
    w(f"`cargo bench --bench softmax -- softmax_len` on the {gpu_name(run)}, same call: at each row length about "
      f"2^26 floats ({'-'.join(map(str, [mib[0], mib[-1]] if len(mib) > 1 else mib))} MiB in, as much out), "
      "`softmax::softmax` and every kernel of the strategies it chooses between that takes the length (clusters from "
      f"{clustered} columns), criterion's median against `cuMemcpyDtoD` of the same bytes in the same group.\n")
    # Where the run's dispatch took another kernel than today's, today's is timed by name in the same group.
    moved = {c_: (picked, mine) for c_, (r, got, picked, mine) in SWEPT.items() if now(c_) != picked}
    for c_, (picked, mine) in moved.items():
        rows, got, _, _ = SWEPT[c_]
        k = now(c_)
        SWEPT[c_] = (rows, {**{n: v for n, v in got.items() if n != k}, picked: mine}, k, got[k])
    w("| columns | rows | the dispatch picks | % of `cuMemcpyDtoD` | the fastest kernel timed | % | the others |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    for cols, (rows, got, picked, mine) in SWEPT.items():
        best = max(got, key=got.get)
        rest = ", ".join(f"`{n}` {v:.1f}" for n, v in sorted(got.items(), key=lambda kv: -kv[1]) if n not in (best, picked))
        w(f"| {cols} | {rows} | `{picked}`{'*' if cols in moved else ''} | {mine:.1f}% | `{best}` | {got[best]:.1f}% | "
          f"{rest or '-'} |")
    if moved:
        ran = sorted({p for p, _ in moved.values()})
        gain = [SWEPT[c_][3] - m for c_, (_, m) in moved.items()]
        w(f"\n\\* `CLUSTER_MIN_COLS` ({CLUSTER_MIN_COLS}) gives these rows to a cluster; this run's build (commit "
          f"`{build(run)}`) gave them to {', '.join(f'`{p}`' for p in ran)}, "
          f"{', '.join(f'{m:.1f}%' for _, m in moved.values())}. The figure shown is the kernel the dispatch picks, "
          f"launched by name in the same group ({min(gain):+.1f} to {max(gain):+.1f} points); the dispatch only "
          "chooses the launch.")
    short = {c_: v for c_, v in SWEPT.items() if c_ <= 32768}
    behind = [(c_, got[max(got, key=got.get)] - mine, max(got, key=got.get)) for c_, (r, got, picked, mine) in short.items()]
    far = [(c_, d, b) for c_, d, b in behind if d > 1.0]
    w(f"\nFrom {min(short)} to {max(short)} columns the dispatch reaches "
      f"{min(v[3] for v in short.values()):.1f}-{max(v[3] for v in short.values()):.1f}% of the copy of the same bytes"
      + (f"; beyond, {', '.join(f'{v[3]:.1f}% at {c_}' for c_, v in SWEPT.items() if c_ > 32768)}" if len(short) < len(SWEPT) else "")
      + ". Where a kernel it did not pick ran more than a point faster: "
      + ("; ".join(f"`{b}` at {c_} columns, {d:.1f} points" for c_, d, b in far) if far else "nowhere")
      + f". The dispatch gives a row to a cluster from {CLUSTER_MIN_COLS} columns (`CLUSTER_MIN_COLS`); shorter rows "
      "to a warp or a block, as the table of strategies below says.\n")

# ---- every kernel -----------------------------------------------------------
benched = [s["name"] for s in STEPS if any(c(x, s["name"]) for x in SHAPES)]
unbenched = [s["name"] for s in STEPS if s["name"] not in benched]
w("## Every kernel at every shape\n")
w("GB/s, and % of `cuMemcpyDtoD` in the same group; `dispatch` is `softmax::softmax`. "
  "`-`: the kernel does not take that row length, or the bench does not run it there."
  + (f" Not in the bench: {', '.join(f'`{k}`' for k in unbenched)} (the tests run them: accuracy, below)." if unbenched else "")
  + "\n")
w("| kernel | " + " | ".join(sh(s) for s in SHAPES) + " |")
w("|" + " --- |" * (len(SHAPES) + 1))
for k in ["roof_cuMemcpyDtoD", "roof_copy_kernel", "dispatch"] + benched:
    cells = ["-" if not c(s, k) else f"{c(s, k)['gb_per_s']:,.0f} ({pct(c(s, k)['gb_per_s'], roof(s)):.1f}%)" for s in SHAPES]
    w(f"| {k if k.startswith('roof') or k == 'dispatch' else f'`{k}`'} | " + " | ".join(cells) + " |")
w("| PyTorch `torch.softmax` | " + " | ".join(f"{torch_gbs(s):,.0f} ({pct(torch_gbs(s), roof(s)):.1f}%)" for s in SHAPES) + " |")
w("")
w("| median time (us) | " + " | ".join(sh(s) for s in SHAPES) + " |")
w("|" + " --- |" * (len(SHAPES) + 1))
for k in ["roof_cuMemcpyDtoD", "dispatch"]:
    w(f"| {k} | " + " | ".join(f"{c(s, k)['median_ns'] / 1e3:.1f}" for s in SHAPES) + " |")
w("| PyTorch | " + " | ".join(f"{torch[f'torch_softmax_{sh(s)}_ms'] * 1e3:.1f}" for s in SHAPES) + " |")
w("")

# ---- the strategies ---------------------------------------------------------


# The dispatch's order of reach; the stash (3b) is what GPUs without clusters
# take where the cluster kernels would, so its range is that part of theirs.
lo, RANGE = 1, {}
for label in sorted((l for l in GROUPS if l != "3b"), key=lambda l: (reach(l)[-1] is None, reach(l)[-1] or 0)):
    top = reach(label)[-1]
    RANGE[label] = f"{lo}-{top}" if top else f"{lo}- (or, without clusters, past {reach('2')[-1]})"
    lo = (top or 0) + 1
RANGE["3b"] = f"{reach('2')[-1] + 1}-{STASH_MAX_COLS} without clusters (and shared memory allowing)"
# Clusters take rows from CLUSTER_MIN_COLS, shorter than a block's reach; without them blocks keep their reach.
RANGE["2"] = f"{reach('1')[-1] + 1}-{CLUSTER_MIN_COLS - 1} (without clusters, to {reach('2')[-1]})"
RANGE["4"] = f"{CLUSTER_MIN_COLS}-{reach('4')[-1]}"


def picks(label):
    ks, tops = GROUPS[label], reach(label)
    if strategy(ks[0]) == "cluster":
        return ", ".join(f"`{k['name']}` up to {t}" for k, t in zip(ks, tops)) + " (the smaller cluster that fits)"
    if len(ks) == 1:
        return f"`{ks[0]['name']}` ({floats(ks[0])} floats per thread per chunk, up to {MAX_BLOCK_THREADS} threads)"
    return ", ".join(f"`{k['name']}` up to {t}" for k, t in zip(ks, tops)) + " (the smallest register budget that fits)"


# What each strategy is for, keyed by step number.
FOR = {
    "1": "the row fits one warp's registers; two 5-shuffle reductions, no barrier, no shared memory",
    "2": f"the row fits one block's registers ({reach('2')[-1]} floats = {reach('2')[-1] * 4 // 1024} KiB, half an SM's "
         "register file); each warp reduces its part, one barrier merges the warps' (max, sum) pairs",
    "3": "the row does not fit on chip: one pass keeps a running max and a rescaled sum, a second pass re-reads the row "
         "backwards and writes",
    "3b": f"the row no longer fits registers but fits the 227 KiB of shared memory a block may opt in to on an H100 "
          f"(4 bytes per column): copied there once with `cp.async`, then both passes read it there",
    "4": "the row fits the registers of a cluster of 4 or 8 blocks (Hopper: `sm_90a`): each block reduces its slice as step 2, "
         "and the blocks trade their (max, sum) pairs with `st.async` into each other's shared memory, counted on an "
         "mbarrier",
}
w("## The strategies, one idea per step\n")
w("Every kernel computes `exp(x - max)` as `2^((x - max) * log2 e)` with one `ex2.approx.ftz.f32`, on `x - max` rounded "
  "once, so nothing overflows whatever the magnitudes; divides once per row (`1 / sum`, IEEE) and multiplies. Each thread "
  "holds its floats as *slots* of four (a float4 group; consecutive threads take consecutive groups), moved with 16-byte "
  "`ld/st.global.v4` when both buffers are 16-byte aligned and `cols % 4 == 0`, else with four 4-byte accesses; the last "
  "`cols % 4` floats of a row are a separate 1-3 float tail. The dispatch (`Kernel::for_cols`):\n")
w("| columns | step | kernels | registers (`ptxas -v`) | why |")
w("| --- | --- | --- | --- | --- |")
for label in sorted(GROUPS, key=lambda l: (int(RANGE[l].split("-")[0]), l)):
    w(f"| {RANGE[label]} | {label}. {title(label)} | {picks(label)} | "
      f"{', '.join(str(r(k['name'])) for k in GROUPS[label])} | {FOR[label]} |")
w(f"\n`ptxas -v`: {'0 bytes of stack and spills for every kernel' if no_spills else 'stack or spills: see ptxas.txt'}. "
  f"A block of {MAX_BLOCK_THREADS} threads may use at most {65536 // MAX_BLOCK_THREADS} registers per thread (65536 per "
  f"SM); `block32` uses {r('block32')}, and a test (`kernels_launched_with_1024_threads_fit_the_register_file`) keeps "
  "every kernel launched with that many threads within it.\n")


def figures(k):
    """What this run measured for kernel k: where the dispatch picks it, else that it is benched, else the tests."""
    picked = [s for s in SHAPES if DISPATCH.get(s) == k]
    if picked:
        out = "The dispatch's pick at " + ", ".join(f"{sh(s)}: **{g(s, k)}**" for s in picked)
    elif any(c(s, k) for s in SHAPES):
        out = "Benched at " + ", ".join(sh(s) for s in SHAPES if c(s, k)) + ", the dispatch's pick at none of them"
    else:
        out = "Not in the bench; the tests check it at " + ", ".join(sorted({a[1] for a in acc if a[0] == k}))
    return f"{out}. {r(k)} registers."


def kernel_line(step):
    file = step["file"].removeprefix("kernels/src/")
    return f"- `{step['name']}` ([`{file}`](../{step['file']})): {step['idea']}. {figures(step['name'])}"


shortest = min(SHAPES, key=lambda s: s[1])
longest = max(SHAPES, key=lambda s: s[1])


# The CUDA C probe of long rows (docs/measurements/2026-11-28-h200-softmax-long-rows):
# {(rows, cols): {(name, threads, float4 a thread): % of the same bytes' DtoD}}, and its GPU.
LONG_ROWS = ROOT / "docs/measurements/2026-11-28-h200-softmax-long-rows"
def long_calls(text):
    """One call's results file: {(rows, cols): {(name, threads, float4 a thread): %}}."""
    calls, at = {}, None
    for line in text.splitlines():
        x = re.match(r"(\d+)x(\d+) dtod", line)
        if x:
            at = calls.setdefault((int(x.group(1)), int(x.group(2))), {})
        x = re.match(r"\s+V=(\d+) (\w+)\s+T=\s*(\d+) .* ([\d.]+)% of dtod", line)
        if x:
            at[(x.group(2), int(x.group(3)), int(x.group(1)))] = float(x.group(4))
    return calls


long_txt = {f: (LONG_ROWS / f).read_text() for f in ("results.txt", "results_ca.txt")}
long_gpu = long_txt["results.txt"].splitlines()[0].split(",")[0]
long_rows, long_ca = long_calls(long_txt["results.txt"]), long_calls(long_txt["results_ca.txt"])

# The probe behind step 4's exchange (docs/measurements/2026-11-25-softmax-cluster-probe): on its first GPU, at
# 1024x50000 with clusters of 4 blocks of 512 threads, the cluster-wide barrier (M=0) against st.async (M=3).
EXCHANGE = (ROOT / "docs/measurements/2026-11-25-softmax-cluster-probe/results.txt").read_text()
exchange_txt = EXCHANGE.split("\n512x100000")[0]
exchange_gpu = re.search(r"\n\n(NVIDIA [^\n]+)\n1024x50000", EXCHANGE).group(1)
barrier_pct, st_async_pct = (float(re.search(rf"reg  C=4 T=512  V=7  M={m} .*?([\d.]+)%", exchange_txt).group(1))
                             for m in (0, 3))

# How many blocks a cluster (docs/measurements/2026-11-29-h200-softmax-cluster-sizes): per shape, each
# variant's % of the copy of the same bytes, keyed by its name (`c4x512`: clusters of 4, at most 512 threads).
SIZES_DIR = "measurements/2026-11-29-h200-softmax-cluster-sizes"
sizes_txt = (ROOT / "docs" / SIZES_DIR / "results.txt").read_text()
sizes_gpu = sizes_txt.splitlines()[0].split(",")[0]
SIZES = {}
for block in re.split(r"\n(?=\d+x\d+ dtod)", sizes_txt)[1:]:
    shape = tuple(map(int, re.match(r"(\d+)x(\d+)", block).groups()))
    SIZES[shape] = {m.group(1): float(m.group(2)) for m in re.finditer(r"V=7 (c\d+x\d+) .*?([\d.]+)% of dtod", block)}


def long_range(calls, shape, name):
    got = [v for (k, _, _), v in calls[shape].items() if k == name or k.startswith(name) and k[len(name):].isdigit()]
    return f"{min(got):.1f}-{max(got):.1f}%"

stashed = max((s for s in SHAPES if s[1] <= STASH_MAX_COLS), key=lambda s: s[1])  # the longest row the stash holds
reg_top = max((s for s in SHAPES if s[1] <= reach("2")[-1]), key=lambda s: s[1])  # the longest row the registers hold
mid = max((s for s in SHAPES if DISPATCH[s] in [k["name"] for k in GROUPS["2"]] and s != reg_top), key=lambda s: s[1])


def spread(s, ks):
    v = [c(s, k["name"])["gb_per_s"] for k in ks if c(s, k["name"])]
    return max(v) / min(v) - 1


def bytes_per_warp(step):
    return WARP * floats(step) * 4


WHY = {
    "1": lambda: f"A lane loads all its float4 groups at once ({bytes_per_warp(GROUPS['1'][-1]) // 1024} KB in flight per "
    f"warp for `{GROUPS['1'][-1]['name']}`), the warp reduces max and sum by butterfly shuffles, and every warp is independent "
    "of every other, so an SM overlaps one warp's arithmetic with others' loads.\n\n"
    f"Why not a block for short rows: at {sh(shortest)} `block8` gets {g(shortest, 'block8')} and `online` "
    f"{g(shortest, 'online')}. With {shortest[1]} columns their block is one warp of {WARP} threads per row, "
    f"{shortest[0]:,} blocks: an SM holds at most 32 blocks, so 32 warps, where the warp kernels' 128-thread blocks (4 rows "
    "each) fill 64; and each block pays a barrier and a shared-memory round for "
    f"{4 * shortest[1]} bytes of row. (Our reading of the geometry; the probe collects no counters at this shape.)",
    "2": lambda: f"At {sh(mid)}: " + ", ".join(f"`{k['name']}` {g(mid, k['name'])}" for k in GROUPS["2"] if c(mid, k["name"]))
    + (": the register budget hardly matters at this length" if spread(mid, GROUPS["2"]) < 0.01 else "")
    + f". At {sh(reg_top)} `block32` ({n('block32', reg_top)['block']:.0f} threads of {floats(GROUPS['2'][-1])} floats: one row "
    f"per SM at a time) gets {g(reg_top, 'block32')}. Instead of two block reductions (two barriers), each warp reduces its "
    "part to a state (m_w, s_w), its max and its sum of exp(x - m_w), while the values sit in registers; one barrier "
    "publishes the pairs, and every warp merges them with shuffles by the rule of online softmax, "
    "`S = sum_w s_w exp(m_w - M)`, then writes `exp(x - m_w) * exp(m_w - M) / S`.",
    "3": lambda: f"Each thread updates its state once per chunk of {ONLINE_FLOATS} floats (four float4 loads in flight), so "
    f"the rescale costs one `exp` per {ONLINE_FLOATS} elements. At {sh(longest)} it gets {g(longest, 'online')}; on the rows "
    "the block kernels hold in registers: " + ", ".join(f"{g(s, 'online')} at {sh(s)}" for s in SHAPES
                                                        if DISPATCH[s] in [k["name"] for k in GROUPS["2"]])
    + ". Why it reads the row only about once from DRAM, and where it does not: the next section.",
    "3b": lambda: f"At {sh(reg_top)}, where `block32` holds the row in registers, it gets {g(reg_top, 'online_stash')} "
    f"(`block32`: {g(reg_top, 'block32')}). "
    "The row is copied to shared memory once with `cp.async` (global to shared without registers, 16 bytes per copy, all of "
    "a thread's copies in flight before it waits), and both passes read it there, so DRAM sees each element once "
    f"(ncu at {sh(stashed)}: {n('online_stash', stashed)['dram__bytes_read.sum']:,.0f} MB read for "
    f"{4 * stashed[0] * stashed[1] / 1e6:,.0f} MB of input). One block per SM (a {stashed[1]}-column row takes "
    f"{4 * stashed[1] / 1e3:.0f} KB of the SM's {SM_SHARED_KB}), so each SM alternates between reading a row and writing it.",
    "4": lambda: f"At {sh(stashed)} `cluster8x256` gets {g(stashed, 'cluster8x256')} against `online_stash`'s "
    f"{g(stashed, 'online_stash')}; at {sh(longest)} `cluster8x512` gets {g(longest, 'cluster8x512')} against "
    f"`online`'s {g(longest, 'online')}. A block holds a slice of {n('cluster8x256', stashed)['block']:.0f} threads of "
    f"{floats(GROUPS['4'][0])} floats at {stashed[1]} columns ({r('cluster8x256')} registers a thread: "
    f"{65536 // (r('cluster8x256') * n('cluster8x256', stashed)['block']):.0f} blocks an SM), so while one block reduces, "
    "the others on its SM still load: step 3b's one block per SM could not overlap the two. The blocks of a row trade "
    "their pairs through each other's shared memory (`st.async`, 8 bytes each, counted on the receiver's mbarrier). In "
    f"a CUDA C probe on an {exchange_gpu} at 1024x50000, with clusters of 4 blocks of 512 threads, a cluster-wide "
    f"barrier there instead ran {barrier_pct:.1f}% of the copy of the same bytes where `st.async` ran {st_async_pct:.1f}% "
    "([the probe](measurements/2026-11-25-softmax-cluster-probe/results.txt); "
    "`kernels/src/softmax/04_cluster.rs` says why). "
    f"ncu at {sh(longest)}: {n('cluster8x512', longest)['dram__bytes_read.sum']:,.0f} MB read for "
    f"{4 * longest[0] * longest[1] / 1e6:,.0f} MB of input, against `online`'s "
    f"{n('online', longest)['dram__bytes_read.sum']:,.0f} MB. "
    f"Rows of {longest[1]} columns stay short of the copy on an {long_gpu}. A CUDA C probe there "
    f"([`2026-11-28-h200-softmax-long-rows`](measurements/2026-11-28-h200-softmax-long-rows/README.md)) put step 4's "
    f"shape at {long_rows[longest][('reg', 448, 7)]:.1f}% of the copy of the same bytes at {sh(longest)}, and neither "
    f"persistent clusters that copy the next row's slices into shared memory while this row trades its pairs (by "
    f"bulk copy {long_range(long_rows, longest, 'pipe')}; by `cp.async`, in a second call where step 4 ran "
    f"{long_ca[longest][('reg', 448, 7)]:.1f}%, {long_range(long_ca, longest, 'pca')}) nor slices split between "
    f"registers and shared memory, so that more blocks fit an SM ({long_range(long_rows, longest, 'hyb')}), beat it. "
    f"How many blocks a cluster: as few as keep each block within {cluster(GROUPS['4'][0])[2]} "
    f"threads. In a third CUDA C probe on an {sizes_gpu} ([cluster sizes]({SIZES_DIR}/README.md)) clusters of 4 ran "
    f"{SIZES[(3640, 18432)]['c4x512']:.1f}% of the copy of the same bytes at 3640x18432, where clusters of 8 ran "
    f"{SIZES[(3640, 18432)]['c8x256']:.1f}%, and 16 blocks (a non-portable cluster size) lost at every length: "
    f"{SIZES[(512, 100000)]['c16x256']:.1f}% at 512x100000 against 8 blocks' {SIZES[(512, 100000)]['c8x512']:.1f}%, "
    "since the GPU places fewer large clusters at once."
    + ("" if 18432 not in (SWEPT or {}) else
       f" In this run's sweep of row lengths (above), `{SWEPT[18432][2]}` runs {SWEPT[18432][3]:.1f}% at 18432 columns, "
       f"where `cluster8x256` runs {SWEPT[18432][1]['cluster8x256']:.1f}%."),
}
for label, ks in GROUPS.items():
    w(f"### {label}. {title(label)}\n")
    for k in ks:
        w(kernel_line(k))
    w("\n" + WHY[label]() + "\n")
not_measured(w, "softmax")

# ---- counters.json: the emulator's counters beside ncu's --------------------
emu = emulator_counters(counted / "counters.json")
w("## The emulator's counters beside ncu's\n")
w(f"`cargo run --release -- --emulate --counters` ([`counters.json`](measurements/{counted.name}/counters.json)) counts every "
  "access of the kernels the `ncu` probe launches, at the probe's row lengths on a few rows (per-request figures do not "
  "depend on the number of rows). Each cell reads *emulator / ncu*; a pair more than 10% apart is starred and explained "
  "below.\n")
rows, uncounted = [], []
for k in ncu:
    e = next((v for key, v in emu.items() if key[:2] == ("softmax", k["kernel"]) and v["shape"].endswith(f"x{k['shape'][1]}")),
             None)
    if e is None:
        uncounted.append(f"`{k['kernel']}` at `{k['shape'][0]}x{k['shape'][1]}`")
        continue
    rows.append((f"{k['kernel']}` at `{k['shape'][0]}x{k['shape'][1]}", e, k))
apart = counters_table(w, emu, rows)
w("")
if uncounted:
    w(f"Not in this counters run (it predates them): {', '.join(uncounted)}.\n")
copies = sorted({(round(v["totals"]["cp.async ld"]["per_request"], 2), round(v["totals"]["cp.async st"]["per_request"], 2))
                 for v in emu.values() if "cp.async ld" in v["totals"]})
w(f"The stash's `cp.async` copies are in the global load column on both sides (`ncu` counts the global side of "
  "`LDGSTS` among global loads: `online_stash` reads its whole row by `cp.async`, and `ncu` still shows its global load "
  "requests). Their shared side is not a shared store for `ncu`; the emulator counts it apart, "
  + ", ".join(f"{s_:.0f} wavefronts a request" for _, s_ in copies) + " (16 bytes a lane, 512 contiguous bytes a warp).\n")
# Per row, for the starred launches: shared-load requests and wavefronts,
# the emulator's (on its rows) against ncu's (on the probe's).
per_row = []
for label, e, k in rows:
    if not any(x[0] == label and x[1].startswith("shared ld") for x in apart):
        continue
    t, erows = e["totals"]["shared ld"], int(e["shape"].split("x")[0])
    per_row.append((label, t["requests"] / erows, t["transactions"] / erows,
                    k["smsp__inst_executed_op_shared_ld.sum"] / k["shape"][0],
                    k["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] / k["shape"][0]))
def shared_ld_why():
    """Why the starred shared-load launches differ: per row, the wavefronts
    (the totals) agree and the requests do not (the counters table's measure,
    `far_apart`); the wording of the requests'
    ratio (ncu's instructions over the emulator's accesses) comes from it."""
    wf_apart = [lb for lb, er, ew, nr, nw in per_row if far_apart(ew, nw)]
    req_agree = [lb for lb, er, ew, nr, nw in per_row if not far_apart(er, nr)]
    if wf_apart or req_agree:
        raise SystemExit(f"softmax.py: the shared-load explanation no longer holds: wavefronts per row apart for "
                         f"{wf_apart}, requests per row agree for {req_agree}")
    ratios = [nr / er for lb, er, ew, nr, nw in per_row]
    lo, hi = min(ratios), max(ratios)
    # 1.25-1.42 is near enough to 4/3 to say "about a third more"; outside it the page gives the ratios.
    more = ("about a third more shared-load instructions than" if 1.25 <= lo and hi <= 1.42
            else f"{lo:.2f}x" + (f" to {hi:.2f}x" if f"{hi:.2f}" != f"{lo:.2f}" else "") + " the shared-load instructions of")
    average = "lower" if lo > 1 else "higher" if hi < 1 else "different"
    return ("the wavefronts agree, the requests do not. Per row, "
            + "; ".join(f"`{lb}`: {er:.0f} requests and {ew:.0f} wavefronts on the emulator, {nr:.0f} instructions and "
                        f"{nw:.0f} wavefronts in `ncu`" for lb, er, ew, nr, nw in per_row)
            + f". The GPU executes {more} the source's accesses for the same wavefronts, so its per-request average is "
            f"{average}; which instructions those are (`ncu`'s per-line source view would tell) was not measured here. The "
            "emulator counts the accesses the source makes, the stash's 16-byte reads at 4 wavefronts a warp, and the "
            "totals agree.")


APART_WHY = {"shared ld wavefronts / request": shared_ld_why} if per_row else {}
for title in sorted({a[1] for a in apart}):
    who = ", ".join(sorted({f"`{a[0]}`" for a in apart if a[1] == title}))
    w(f"- **{title}** ({who}): {APART_WHY[title]() if title in APART_WHY else 'not explained'}")
w("")
w("The register path (a block per row, `block8`) and the shared-memory stash (`online_stash`) at 1024 columns, "
  "as the emulator draws their requests ([`learn.md`](learn.md) explains how to read them):\n")
for kernel in ("block8", "online_stash"):
    w(pictures("softmax", kernel))

w("## Why online softmax wins on long rows\n")
top_rows = torch["sms"] * reach("2")[-1] * 4 / 1e6
w("The textbook safe softmax reads a row three times: once for the max, once for the sum of `exp(x - max)` (which needs the "
  "max), once more to write. That is what PyTorch's `cunn_SoftMaxForward` (`aten/src/ATen/native/cuda/SoftMax.cu`) does for "
  "rows too long for the 48 KB of shared memory it allows itself (rows up to 1024 take its warp-per-row kernel, rows that fit "
  "48 KB are read once into shared memory): 3 reads and a write per element. Online softmax (Milakov & Gimelshein, 2018) keeps "
  "a running max `m` and a sum `s` of `exp(x - m)`, rescaled by `exp(m_old - m_new)` whenever the max grows, so one read yields "
  "both reductions; states merge by the same rule, so threads, warps and the block combine theirs. Then one more pass re-reads "
  "and writes: 2 reads and a write.\n")
w(f"And the second read mostly does not reach DRAM. A block of {MAX_BLOCK_THREADS} threads per row means the GPU works on "
  f"only {torch['sms']} rows at a time (one per SM; {top_rows:.0f} MB of {reach('2')[-1]}-column rows, against the {L2_MB} MB "
  "L2), pass 2 walks the row backwards so it meets the most recently read data first, and the last chunk is still in "
  "registers. `ncu` (`gpu_ncu_probe`, one launch each):\n")
w("| kernel | shape | DRAM read MB | input MB (one read) | DRAM write MB | time (us) |")
w("| --- | --- | --- | --- | --- | --- |")
for k in ncu:
    s = k["shape"]
    w(f"| `{k['kernel']}` | {sh(s)} | {k['dram__bytes_read.sum']:,.1f} | {4 * s[0] * s[1] / 1e6:,.1f} "
      f"| {k['dram__bytes_write.sum']:,.1f} | {k['gpu__time_duration.sum']:,.1f} |")
w("\nDRAM writes come out below the output size because dirty lines still in L2 when a single launch ends are written back "
  "later; in the back-to-back criterion runs that cost lands in the next launch and is counted.\n")
for k in ncu:
    if k["kernel"] != "online":
        continue
    s, chunk = k["shape"], ONLINE_FLOATS * k["block"]
    chunks = math.ceil(s[1] / chunk)
    if chunks < 2:
        continue
    inp = 4 * s[0] * s[1] / 1e6
    reread = 4 * s[0] * (chunks - 1) * chunk / 1e6  # every chunk but the last, which stays in registers
    extra = k["dram__bytes_read.sum"] - inp
    dram = (k["dram__bytes_read.sum"] + k["dram__bytes_write.sum"]) / k["gpu__time_duration.sum"]
    online = c(s, "online")["gb_per_s"]
    w(f"- At {sh(s)} (rows of {chunks} chunks of {chunk} floats), `online` re-reads {chunks - 1} chunk"
      f"{'s' if chunks > 2 else ''} per row ({reread:,.0f} MB in all); DRAM saw {extra:,.0f} MB beyond one read of the "
      f"input, so L2 served {100 * (1 - extra / reread):.0f}% of the re-read. DRAM moved "
      f"{dram:.2f} TB/s in that launch (MB per us), {pct(dram * 1e3, roof(s)):.0f}% of the copy's rate"
      + (", so the re-reads that miss L2 are what separate" if pct(dram * 1e3, roof(s)) >= 90 else ", for")
      + f" its {online:,.0f} GB/s ({pct(online, roof(s)):.0f}% of the copy)"
      + (" from the roof" if pct(dram * 1e3, roof(s)) >= 90 else "")
      + f". That is {online / torch_gbs(s):.2f}x PyTorch's three-read kernel ({torch_gbs(s):,.0f} GB/s).")
    b = n("block32", s)
    if b:
        w(f"- Holding the row on chip is better still where it fits: at {sh(s)} `block32` reads "
          f"{b['dram__bytes_read.sum']:,.0f} MB (the input, once) and gets {c(s, 'block32')['gb_per_s']:,.0f} GB/s, which is "
          f"why the dispatch keeps a row on chip wherever it fits: in one block's registers, or a cluster's from "
          f"{CLUSTER_MIN_COLS} columns.")
    st = n("online_stash", s)
    if st and DISPATCH[s] == "online_stash":
        gs = c(s, "online_stash")["gb_per_s"]
        w(f"- So at {sh(s)} the dispatch takes `online_stash`: DRAM read {st['dram__bytes_read.sum']:,.0f} MB for "
          f"{inp:,.0f} MB of input (once), and it runs at {gs:,.0f} GB/s ({pct(gs, roof(s)):.1f}% of the copy), "
          f"{gs / torch_gbs(s):.2f}x PyTorch.")
w("")

# ---- accuracy ---------------------------------------------------------------
w("## Accuracy against float64\n")
w("Every GPU test compares every element with a float64 softmax (`tests/softmax/reference.rs`), within "
  "`|want| * 2^-23 * (16 + 2|x - max|) + 1e-37`: relative, and growing with `|x - max|` because `x - max` and the scaling by "
  "`log2 e` are rounded in f32 (outputs far below the row's largest are tiny, and their relative error is larger); `1e-37` "
  "covers results `ex2.approx.ftz` flushes to 0. Every row that is not NaN must sum to 1 within 1e-6 (summed in f64). "
  "At the benchmark shapes (logits uniform in [-8, 8]):\n")
w("| kernel | shape | max error within 1 of the row max (ulp) | max abs(row sum - 1) |")
w("| --- | --- | --- | --- |")
for k, s, u, e in acc:
    w(f"| `{k}` | {s} | {u:.2f} | {e:.2e} |")
w(f"\nWorst case: {max(a[2] for a in acc):.2f} ulp near the max, rows summing to 1 within {max(a[3] for a in acc):.1e}.\n")

# ---- special values ---------------------------------------------------------
w("## Special values: what PyTorch does, and so what we do\n")
w("`torch.softmax` on the GPU, in the same device call (`torch_softmax.json`); our kernels give the same, checked by the "
  "hard-case tests on the emulator and the GPU (a causal mask, random half `-inf`, all `-inf`, +-1e30 and small values, all "
  "1e30, a constant row, one NaN, one +inf, `-inf` last):\n")
w("| row | `torch.softmax` |")
w("| --- | --- |")
for label, v in torch["semantics"].items():
    w(f"| `[{', '.join(v['input'])}]` ({label}) | `[{', '.join(v['output'])}]` |")
w("\nSo: `-inf` entries get 0 (a mask); a row of only `-inf` is NaN (0/0: we use 0 instead of a `-inf` max as the exponent base, "
  "so a warp or chunk holding only masked entries adds 0, and the row's sum is 0); a NaN anywhere makes the whole row NaN (it "
  "enters the sum; `max` skips NaN); a `+inf` makes the row NaN (`inf - inf`); +-1e30 are handled by subtracting the max.\n")

# ---- checks -----------------------------------------------------------------
w("## Checks in the same device call\n")
w("```")
for l in summary.splitlines():
    if l.startswith("== "):
        w(re.sub(r"^== \[\d+s\] ", "", l))
for tool in ("memcheck", "racecheck"):
    part = sanitizer.split(f"### {tool}", 1)[1].split("### ", 1)[0]
    w(f"{tool} over the GPU tests: " + next(l for l in part.splitlines() if l.startswith("test result")))
w("```\n")
w("The sanitizers ran the GPU tests at their odd shapes, hard cases and misaligned buffers (the benchmark shapes are skipped "
  "under them). Emulator tests (`cargo test`, no GPU needed) run every kernel at the odd row lengths it takes, misaligned "
  "buffers, rows of several online chunks and the hard cases, and check the dispatch on both sides of every threshold and "
  "the launch geometry for every row length.\n")

w("## Machine\n")
w("```")
w(summary.split("== ")[0].strip())
w(f"torch {torch['torch']} (CUDA {torch['cuda']})")
w("```")
print("\n".join(P))
