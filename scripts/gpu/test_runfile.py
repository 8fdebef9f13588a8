#!/usr/bin/env python3
"""Checks the GPU scripts' run files without a GPU. For each page's script
(run.sh for transpose, softmax.sh, nested_sin.sh, gemm.sh) it writes what one
device call of it leaves, in the formats of the code that writes them (the
report's report.json, criterion's files, PyTorch's and the examples' JSON,
ncu --csv --print-units base with the script's own metrics, ptxas -v, VALUE
and TIMING lines, nvidia-smi and nvcc as stand-ins on PATH, and lib.sh's
verdicts, made by lib.sh), runs the script's own `runfile` line, and fills
the page dry (scripts/docs/pages.py --dry): the run file must hold every
figure the page looks up. A few figures are checked where the pages read them.

    python3 scripts/gpu/test_runfile.py [--counters FILE]   # exits 1 on a gap (scripts/docs/check.sh runs it)

Each benchmark group here times every step of its op (the real benches time
those that take the shape): the dry fill of a real run checks those."""
import argparse, json, math, os, pathlib, re, subprocess, sys, tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "docs"))
import pages  # noqa: E402

TB = "test result: ok. {} passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 12.50s\n"
NCU_HEAD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
FAKES = {"nvidia-smi": 'case "$*" in *nounits*) echo "143771, 1980, 3201, 1980";; *) echo "NVIDIA H200, 580.159.04";; esac',
         "nvcc": 'printf "nvcc: NVIDIA (R) Cuda compiler driver\\nCuda compilation tools, release 13.0, V13.0.88\\n'
                 'Build cuda_13.0.r13.0/compiler.36424714_0\\n"'}
SHARED = {}  # entry -> the shared-memory accesses the emulator counts of it (ncu counts none where it counts none)
SANITIZER = {"memcheck": "========= ERROR SUMMARY: 0 errors",
             "racecheck": "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"}


def dump(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def names(op, key="name"):
    return [s[key] for s in pages.steps(op)]


def report(folder, rows):
    """report.json as the report binary writes it (report/src/report/mod.rs's Report), `rows` (op, kernel, shape)."""
    rows = [("roof", "cuMemcpyDtoD", "1 GiB")] + rows
    dump(folder / "report" / "report.json", {
        "gpu": "NVIDIA H200", "sm_count": 132, "ptx_arch": "sm_90a", "emulated": False, "warmup_ms": 500.0,
        "warmup_reps": 5, "peers_file": None, "roofs": {"copy_gb_per_s": 4200.0, "fma_tflop_per_s": 62.5,
                                                        "tf32_tflop_per_s": 476.0, "dram_spec_gb_per_s": 4814.3},
        "rows": [{"op": op, "kernel": k, "shape": s, "bytes": 2 ** 29, "flops": 0, "bound": "Memory",
                  "median_ms": 0.133 + i / 100, "reps": 50} for i, (op, k, s) in enumerate(rows)]})


def criterion(home, group, benches, throughput=None, ops=()):
    """criterion 0.5's files of each benchmark of `group` under CRITERION_HOME; a step's name is a parameter
    (BenchmarkId::from_parameter: `value_str`), any other a function (`function_id`); `throughput` may be a
    function of the benchmark's name."""
    for i, name in enumerate(benches):
        new, ns, param = home / group / name / "new", 1.312e5 * (1 + i / 16), any(name in names(op) for op in ops)
        est = lambda x: {"confidence_interval": {"confidence_level": 0.95, "lower_bound": 0.98 * x,  # noqa: E731
                                                 "upper_bound": 1.05 * x}, "point_estimate": x, "standard_error": x / 99}
        dump(new / "benchmark.json", {"group_id": group, "function_id": None if param else name,
                                      "value_str": name if param else None,
                                      "throughput": throughput(name) if callable(throughput) else throughput,
                                      "full_id": f"{group}/{name}", "directory_name": f"{group}/{name}"})
        dump(new / "estimates.json", {"mean": est(1.01 * ns), "median": est(ns), "median_abs_dev": est(ns / 50),
                                      "slope": None, "std_dev": est(ns / 20)})
        dump(new / "sample.json", {"sampling_mode": "Flat", "iters": [63.0, 126.0, 189.0], "times": [ns] * 3})


def ncu(path, kernels, script, labels=None, extra=()):
    """ncu --csv --print-units base of `kernels` (one launch each, in order) with the metrics `script` asks for."""
    text = (ROOT / "scripts/gpu" / script).read_text()
    metrics = [m for ms in re.findall(r"(?:METRICS=|--metrics )([\w.,]+)", text) for m in ms.split(",") if m]
    stalls = re.search(r"printf '(\S+),' ([\w\s\\]+)\)", text)
    metrics += [stalls[1] % w for w in stalls[2].split() if w != "\\"] if stalls else []
    none = lambda k, m: (a := re.search(r"shared(?:_op)?_(ld|st)", m)) and f"shared {a[1]}" not in SHARED.get(k, {f"shared {a[1]}"})  # noqa: E731
    rows = [f'"{i}","4242","test","h200","{k}","1","13","(256, 1, 1)","(8192, 1, 1)","0","9.0","Command line '
            f'profiler metrics","{m}","","{0 if none(k, m) else (i + 1) * 1000 + j:,}"' for i, k in enumerate(kernels)
            for j, m in enumerate(metrics + list(extra))]
    probe = "".join(f"ncu probe: {label}\n" for label in labels or [])
    dump(path, f"==PROF== Connected to process 4242\n{probe}" + "\n".join([NCU_HEAD] + rows) + "\n")


def ptxas(path, entries_, head=""):
    dump(path, head + "".join(
        f"ptxas info    : Compiling entry function '{e}' for 'sm_90a'\nptxas info    : Function properties for {e}\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 32 registers, used 1 barriers, 400 bytes cmem[0]\n" for e in entries_))


def timing(source, op, kernel, shape, ms, **more):
    return {"source": source, "op": op, "kernel": kernel, "shape": shape, "statistic": "median", "ms": ms, **more}


def call(tmp, page, script, stage, lines):
    """The device call's end: scripts/gpu/lib.sh sourced, `stage` (what the script left in $RUN) copied in, the
    verdict `lines`, then the script's own runfile line; returns the run file."""
    run, out, crit, bin_ = tmp / page / "run", tmp / page / "out", tmp / page / "criterion", tmp / "bin"
    for name, body in FAKES.items():
        dump(bin_ / name, f"#!/bin/sh\n{body}\n"), (bin_ / name).chmod(0o755)
    line = re.search(r"^runfile .*$", (ROOT / "scripts/gpu" / script).read_text(), re.M)[0]
    env = dict(os.environ, OUT=str(out), RUN=str(run), B=str(stage), CRIT=str(crit),
               PATH=f"{bin_}{os.pathsep}{os.environ['PATH']}")
    subprocess.run(["bash", "-c", f'source scripts/gpu/lib.sh && cp -r "$B"/. "$RUN" && {lines}\n{line}'],
                   cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return out / "run.json"


def verdicts(binary, log):
    """lib.sh's verdicts of a test binary's log and its sanitizer logs (libtest's summary in each)."""
    tools = "".join(f'printf "%s\\n" "{TB.format(5).strip()}" "{SANITIZER[t]}" >"$RUN/{t}.log" && '
                    f'verdict {t} "$B/{binary}" 0 "$RUN/{t}.log" && ' for t in SANITIZER)
    return f'{tools}tests "$B/{binary}" "{log}"'


def transpose(tmp, stage):
    shapes = ["8192x8192", "16384x16384", "4096x4096", "8192x2048"]
    rows = [("copy", "copy kernel", s) for s in shapes] + [("transpose", k, s) for s in shapes for k in names("transpose")]
    report(tmp / "transpose" / "out", rows)
    crit = tmp / "transpose" / "criterion"
    for s in shapes:
        criterion(crit, f"transpose_{s}", ["roof_copy_kernel", "roof_cuMemcpyDtoD"] + names("transpose"),
                  {"Bytes": 8 * math.prod(map(int, s.split("x")))}, ["transpose"])
    criterion(crit, "transpose_4096x4096_launches", ["one_launch_per_column", f"one_kernel_{names('transpose')[-1]}"],
              {"Bytes": 8 * 4096 ** 2})
    dump(stage / "torch_peers.json", {"copy_GBs": 4100.0, "timings": [
        timing("pytorch", "transpose", "copy_(a.t())", f"{n}x{n}", 0.2, bytes=8 * n * n) for n in (4096, 8192, 16384)]
        + [timing("pytorch", "transpose", "python loop r[i, :] = a[:, i]", "4096x4096", 40.0, bytes=8 * 4096 ** 2)]})
    kernels = ["copy_f32"] + names("transpose", "entry")
    ncu(stage / "ncu.csv", kernels + kernels, "run.sh")
    ptxas(stage / "ptxas.txt", kernels)
    dump(tmp / "transpose" / "out" / "tests.log", "commit abc1234\nname, driver_version\nNVIDIA H200, 580.159.04\n")
    return call(tmp, "transpose", "run.sh", stage, "true")


def softmax(tmp, stage):
    shapes = ["65536x1024", "16384x4096", "4096x32768", "262144x128", "32768x1000", "1024x50000", "512x100000"]
    ks, out, crit = names("softmax"), tmp / "softmax" / "out", tmp / "softmax" / "criterion"
    report(stage, [("softmax", "auto: warp32", s) for s in shapes[:3]])
    for s in shapes:
        criterion(crit, f"softmax_{s}", ["roof_copy_kernel", "roof_cuMemcpyDtoD", "dispatch"] + ks,
                  {"Bytes": 8 * math.prod(map(int, s.split("x")))}, ["softmax"])
    for cols in (128, 1000, 4096, 18432, 32768, 50000, 100000):
        criterion(crit, f"softmax_len_{cols}", ["roof_cuMemcpyDtoD", f"dispatch_{ks[cols % len(ks)]}"] + ks,
                  {"Bytes": 8 * cols * ((1 << 26) // cols)}, ["softmax"])
    cases = {"all -inf": ["-inf"] * 4, "masked (-inf, 0, 1, -inf)": ["0.0", "0.0", "1.0", "0.0"], "one NaN": ["nan"] * 4,
             "one +inf": ["nan"] * 4, "two +inf": ["nan"] * 4, "+-1e30": ["1.0", "0.0", "0.0", "0.0"],
             "all 1e30": ["0.25"] * 4, "1 column, -inf": ["nan"], "1 column, 3.0": ["1.0"]}
    torch = {"values": {"torch": {"version": "2.11.0", "cuda": "13.0", "gpu": "NVIDIA H200"}, "torch_special_values": [
        {"case": k, "input": v, "output": v} for k, v in cases.items()]}, "timings": [
        timing("pytorch", "copy", "copy", str(1 << 28), 0.51, bytes=2 ** 31, reps=50)] + [
        timing("pytorch", "softmax", "torch.softmax", s, 0.1436, bytes=8 * math.prod(map(int, s.split("x"))), reps=50)
        for s in shapes]}
    dump(out / "torch_softmax.json", torch)
    dump(stage / "torch_softmax.json", torch)  # a copy in the second folder counts once
    probes = [(k, s) for s in ["65536x1024", "16384x4096", "4096x32768", "1024x50000", "512x100000"] for k in ks]
    ncu(stage / "ncu.csv", [f"softmax_{k}" for k, s in probes], "softmax.sh", [f"{k} on {s}" for k, s in probes])
    ptxas(out / "ptxas.txt", names("softmax", "entry"))
    dump(out / "tests.log", "".join(
        f'VALUE[] accuracy {{"kernel": "{k}", "shape": "{s}", "max_ulp_near_max": 2.66, "max_row_sum_err": 1.898e-07}}\n'
        for s in shapes for k in ks) + "".join(f'VALUE{{}} dispatch {s} "{ks[i]}"\n' for i, s in enumerate(shapes))
        + TB.format(17))
    return call(tmp, "softmax", "softmax.sh", stage, "grep -o 'ncu probe: .*' \"$RUN/ncu.csv\" | sed 's/^ncu probe: .* on //'"
                ' >"$RUN/ncu-labels.txt" && ' + verdicts("test-softmax", out / "tests.log"))


def nested_sin(tmp, stage):
    out, crit, ks = tmp / "nested_sin" / "out", tmp / "nested_sin" / "criterion", names("nested_sin")
    report(stage, [("nested_sin", k, "2^28") for k in ks])
    criterion(crit, "nested_sin_2_28", ["roof_copy_kernel", "roof_cuMemcpyDtoD"] + ks, {"Bytes": 8 << 28}, ["nested_sin"])
    for group in ("nested_sin_1024", "nested_sin_1024_end_to_end"):
        criterion(crit, group, ["unfused_4_launches", "unfused_graph", "fused_reduced"])
    e2e = [timing("end_to_end", "nested_sin", k, f"2^{n}", 0.1 * m, reps=200, bytes=b)
           for n in range(16, 29) for k, m, b in [("h2d", 1, 4 << n), ("fused_reduced", 2, 8 << n), ("d2h", 1, 4 << n),
                                                  ("gpu_total", 4, None), ("cpu", 9, None)]]
    dump(out / "end_to_end.json", {"gpu": "NVIDIA H200", "sms": 132, "cpu": "Xeon", "cpu_threads": 16,
                                   "kernel": "fused_reduced", "rows": [], "timings": e2e, "values": {
                                       "end_to_end": {"cpu": "Xeon", "cpu_threads": 16, "kernel": "fused_reduced"}}})
    dump(out / "torch_peers.json", {"torch": "2.11.0", "values": {"pytorch": {
        "version": "2.11.0", "compile_s": 9.7, "compiled_bit_equal_to_eager": True}}, "timings": [
        timing("pytorch", "copy", "copy_", "2^28", 0.515, bytes=2 ** 31)] + [
        timing("pytorch", op, k, s, 0.5, bytes=b) for op, k, s, b in [
            ("nested_sin", "unfused", "2^28", 2 ** 31), ("nested_sin", "compiled", "2^28", 2 ** 31),
            ("nested_sin", "unfused", "1024", 8192), ("nested_sin", "graph", "1024", 8192),
            ("nested_sin_host_clock", "unfused", "1024", 8192), ("nested_sin_host_clock", "graph", "1024", 8192)]]})
    kernels = ["copy_f32"] + ["sin_f32"] * 4 + names("nested_sin", "entry")[1:]
    ncu(stage / "ncu.csv", kernels, "nested_sin.sh")
    ptxas(out / "ptxas.txt", names("nested_sin", "entry"))
    row = {"max_ulp": 3.7, "max_eps": 2.6, "worst_x": 1247.47, "max_ulp_moderate": 3.0, "max_abs": 1.4e-7,
           "max_abs_moderate": 1.3e-7, "differ_from_unfused": 0, "max_ulp_from_unfused": 0}
    accuracy = {"inputs": 16777216, "sin_max_ulp": 1.479, "sin_port_bit_identical": True,
                "correctly_rounded4_max_ulp": 3.07, "correctly_rounded4_max_eps": 1.95, **{k: row for k in ks}}
    dump(stage / "head.txt", "commit abc1234\nSat Nov 28 10:40:22 AM UTC 2026\nname, driver_version, memory.total [MiB]\n"
         "NVIDIA H200, 580.159.04, 143771 MiB\ncpu:  Intel(R) Xeon(R) Processor x 16\n"
         "Build cuda_13.0.r13.0/compiler.36424714_0\n")
    dump(stage / "test.log", f"VALUE accuracy {json.dumps(accuracy)}\n" + "".join(
        f'VALUE{{}} accuracy_worst {k} {{"x": 1247.47, "got": -0.24921024, "f64": -0.24921018295439}}\n'
        for k in ["sin"] + ks) + TB.format(12))
    return call(tmp, "nested_sin", "nested_sin.sh", stage, '{ cat "$B/head.txt"; echo; machine "$B/head.txt"; '
                f'cat "$B/test.log"; }} >"$OUT/tests.log" && ' + verdicts("test-nested_sin", "$OUT/tests.log"))


def gemm(tmp, stage):
    out, crit, ks = tmp / "gemm" / "out", tmp / "gemm" / "criterion", names("gemm")
    sizes, tc = [f"{n}x{n}x{n}" for n in (4096, 8192)], ["double_buffered"] + ks[7:]
    report(stage, [("transpose", k, "256x256") for k in names("transpose")])
    awkward = ["4096x4096x4096", "4095x4095x4095", "4097x4097x4097", "4000x4000x4000", "4096x4096x4095",
               "4096x4095x4096", "2048x2048x8192", "8192x8192x256", "1024x1024x1024"]
    for n, s in zip((4096, 8192), sizes):
        criterion(crit, f"gemm_{n}", ks, {"Elements": 2 * n ** 3}, ["gemm"])
    flops = lambda s: 2 * math.prod(map(int, s.split("x")))  # noqa: E731
    # benches/gemm.rs: sgemm, then the FP32-accurate TMA steps (13, 15, 16) alone, `gemm_<name less wgmma_>_shapes`
    for group in ["gemm_shapes", "gemm_tma_3xtf32_shapes", "gemm_direct_3xtf32_shapes", "gemm_split_a_3xtf32_shapes"]:
        criterion(crit, group, awkward, lambda s: {"Elements": flops(s)})
    dump(out / "tc.log", "".join(f"TIMING {json.dumps(timing('gemm_tensor_cores', 'gemm', k, s, 1.2, reps=30, flops=flops(s)))}\n"
                                 for s in sizes for k in tc))
    errors = {k: {s: {"max_over_max_c": 3e-6 * (i + 1), "frobenius": 1e-6 * (i + 1), "nan": 0} for s in sizes}
              for i, k in enumerate(["cublas_sgemm", "cublas_tf32"] + tc)}
    dump(stage / "torch_gemm_tc.json", {"values": {"torch": {"version": "2.11.0", "cuda": "13.0"}, "errors": errors},
                                        "timings": [timing("cublas", "gemm", k, s, 2.7, reps=50, flops=flops(s))
                                                    for s in sizes + ["16384x16384x16384"] for k in ("sgemm", "tf32")]})
    dump(stage / "torch_gemm_shapes.json", {"timings": [timing("cublas", "gemm_shapes", "sgemm", s, 2.7, flops=flops(s))
                                                        for s in awkward]})
    counts = {"nan": 1, "pos_inf": 509, "neg_inf": 491, "finite": 999999}
    dump(stage / "torch_gemm_specials.json", {"values": {"specials": {
        "shape": "1000x1001x1003", "sgemm_runs": ks[-1], "rows": [
            {"input": case, "reference": counts, **{k: {**counts, "off": 0, "err": 7.5e-8 * (j + 1)} for j, k in
                                                    enumerate(["sgemm", "double_buffered", "cublas_sgemm"])}}
            for case in ["finite, uniform(-1,1)", "+inf in A[1][5], B[5][100] = 0",
                         "FLT_MAX in A and B, the rest (-0.5,0.5)", "subnormal row of A x 2^60 column of B"]]}}})
    steps = [e for k, e in zip(ks, names("gemm", "entry")) for e in (["gemm_pack"] * ("tma" in k or "split" in k) + [e])]
    stalls = [f"smsp__average_warps_issue_stalled_{w}_per_issue_active.ratio" for w in ("long_scoreboard", "wait")]
    ncu(stage / "ncu.csv", steps, "gemm.sh", extra=stalls)
    ncu(stage / "ncu-cublas.csv", ["sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_cublas"], "gemm.sh", extra=stalls)
    ptxas(out / "ptxas.txt", names("gemm", "entry"), "### sm_90a\n")
    dump(out / "tests.log", TB.format(40))
    return call(tmp, "gemm", "gemm.sh", stage, verdicts("test-gemm", out / "tests.log"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counters", help="the emulator's counters (--counters-json); made here when not given")
    args = ap.parse_args()
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        counters = pages.Counters(args.counters or pages.emulator_counters(tmp))
        for k in counters.kernels:
            entry = next((s["entry"] for s in pages.steps(k["op"]) if s["name"] == k["kernel"]), k["kernel"])
            SHARED.setdefault(entry, set()).update(a for a in k["totals"] if a.startswith("shared"))
        files = {page: make(tmp, tmp / f"stage-{page}") for page, make in
                 [("transpose", transpose), ("softmax", softmax), ("nested_sin", nested_sin), ("gemm", gemm)]}
        for page, path in files.items():
            bad += [f"docs/templates/{page}.md looks up what one call of its script leaves out: {m}"
                    for m in pages.render(page, counters, str(path))[1]]
        run = pages.Run("softmax", files["softmax"])
        pages.Dry.missing = {}
        crit, gemm_run, t_run = (run.t("warp32", "65536x1024", "criterion", "softmax"), pages.Run("gemm", files["gemm"]),
                                 pages.Run("transpose", files["transpose"]))
        checks = {
            "the report's timing and roof": math.isclose(run.t("auto: warp32", "65536x1024").pct, 100 * 2 ** 29 / 0.143e6 / 4200),
            "criterion's median, mean, samples and launches": math.isclose(crit.ms, 0.1312 * (1 + 6 / 16)) and (
                crit.samples, crit.reps) == (3, 378) and "softmax_65536x1024/warp32" in run.value("criterion_mean"),
            "PyTorch's timing, once": len(run.timings("pytorch", "softmax", "torch.softmax")) == 7,
            "ncu's launch, labelled by its shape": run.ncu("softmax_warp32", "65536x1024")["dram__bytes_read.sum"] == 4000,
            "ncu's repeated launches, numbered": t_run.ncu("copy_f32", "launch 2")["dram__bytes.sum"] > 1000 * (
                1 + len(names("transpose"))) and t_run.ncu("copy_f32") == t_run.ncu("copy_f32", "launch 1"),
            "the verdicts": (run.sanitizer[0]["errors"], run.sanitizer[0]["passed"], run.sanitizer[1]["hazards"],
                             run.tests[0]["passed"]) == (0, 5, 0, 17),
            "the values": (run.value("torch")["version"], run.value("dispatch")["65536x1024"], run.value("nvcc")["build"],
                           run.gpu["driver"]) == ("2.11.0", "warp4", "cuda_13.0.r13.0/compiler.36424714_0", "580.159.04"),
            "TIMING lines and criterion's flops": gemm_run.t("wgmma", "8192x8192x8192", "gemm_tensor_cores").flops
            == 2 * 8192 ** 3 == gemm_run.t("wgmma", "8192x8192x8192", "criterion").flops,
        }
    bad += [f"scripts/gpu/runfile.py: {name} not where the pages read it" for name, ok in checks.items() if not ok]
    print(*bad, sep="\n", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
