"""cuBLAS (through PyTorch) beside our GEMM steps, in the same device call:

- `gemm-tc` (docs/gemm.md's cuBLAS columns and error table): times torch.mm
  at 4096^3, 8192^3 and 16384^3 with TF32 allowed and with it off (SGEMM), CUDA-event
  medians after warm-up; then, for each size N with dumps from
  examples/gemm_tensor_cores.rs in DUMP (a_N.bin, b_N.bin, c_<step>_N.bin:
  raw f32), computes the f64 product on the GPU and reports, for every
  dumped step and for cuBLAS SGEMM and TF32 on the same inputs: max |err|,
  max |err| / max |ref|, and ||err||_F / ||ref||_F. Writes
  OUT/torch_gemm_tc.json, with the run file's `errors` (by output and
  shape: `max_over_max_c`, `frobenius`, `nan`) and `torch` among its values.
- `gemm-shapes`: SGEMM (TF32 off) at the shapes of benches/gemm.rs's
  `gemm_shapes` group, read from that bench's log (LOG, or stdin): median
  of CUDA-event timings after warm-up.
- `gemm-specials`: SGEMM (TF32 off) on the special-value cases that
  `examples/gemm_specials.rs DIR` wrote: per case, the output pattern
  (NaN/+inf/-inf/finite), elements off the FP32 FMA reference's non-finite
  pattern, and the largest error of the finite ones over sum |a b|. Given
  the example's output (LOG), it writes OUT/torch_gemm_specials.json: the
  run file's `specials`, the example's VALUE lines (its shape, the step
  `sgemm` runs, a row per case) with cuBLAS's column added."""
import glob
import json
import os
import re
import sys

import torch

from .timing import bench, event_times_ms, record


def tc(out, dump):
    dev = torch.device("cuda")
    reps = {4096: 50, 8192: 20, 16384: 10}
    p = torch.cuda.get_device_properties(0)
    res = {"gpu": p.name, "torch": torch.__version__, "cuda": torch.version.cuda,
           "values": {"torch": {"version": torch.__version__, "cuda": torch.version.cuda}, "errors": {}}}
    print("GPU", p.name, "torch", torch.__version__, flush=True)

    def stats(fn, iters):
        ts = event_times_ms(fn, iters, warm=10)
        return ts[len(ts) // 2], ts[0], ts[-1]

    def mm(a, b, tf32):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
        return torch.mm(a, b)

    for n in reps:
        g = torch.Generator(device=dev); g.manual_seed(n)
        a = torch.rand(n, n, device=dev, generator=g) * 2 - 1
        b = torch.rand(n, n, device=dev, generator=g) * 2 - 1
        c = torch.empty(n, n, device=dev)
        for name, tf32 in (("sgemm", False), ("tf32", True)):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.set_float32_matmul_precision("high" if tf32 else "highest")
            med, lo, hi = stats(lambda: torch.mm(a, b, out=c), reps[n])
            res[f"{name}_{n}"] = {"median_ms": med, "min_ms": lo, "max_ms": hi, "reps": reps[n],
                                  "TFLOPs": 2 * n**3 / med / 1e9}
            record(res, "gemm", name, f"{n}x{n}x{n}", med, flops=2 * n**3, reps=reps[n], source="cublas")
            print(f"cuBLAS {name:5} {n}^3: median {med:.4f} ms (min {lo:.4f}, max {hi:.4f}, {reps[n]} reps) "
                  f"{2 * n**3 / med / 1e9:.1f} TFLOP/s", flush=True)
        del a, b, c

    if dump:
        for n in reps:
            fa = os.path.join(dump, f"a_{n}.bin")
            if not os.path.exists(fa):
                continue
            load = lambda f: torch.from_file(f, size=n * n, dtype=torch.float32).reshape(n, n).to(dev)  # noqa: E731
            a, b = load(fa), load(os.path.join(dump, f"b_{n}.bin"))
            ref = a.double() @ b.double()
            refmax, refnorm = ref.abs().max().item(), ref.norm().item()
            outs = {"cublas_sgemm": mm(a, b, False), "cublas_tf32": mm(a, b, True)}
            for f in sorted(glob.glob(os.path.join(dump, f"c_*_{n}.bin"))):
                outs[os.path.basename(f)[2:-len(f"_{n}.bin")]] = load(f)
            for name, c in outs.items():
                err = c.double() - ref
                nan = int(torch.isnan(c).sum().item())
                e = {"max_abs": err.abs().max().item(), "max_rel_to_max": err.abs().max().item() / refmax,
                     "fro_rel": err.norm().item() / refnorm, "nan": nan}
                res[f"err_{name}_{n}"] = e
                res["values"]["errors"].setdefault(name, {})[f"{n}x{n}x{n}"] = {
                    "max_over_max_c": e["max_rel_to_max"], "frobenius": e["fro_rel"], "nan": nan}
                print(f"error {name:16} {n}^3: max|err| {e['max_abs']:.3e} (/{refmax:.1f} = {e['max_rel_to_max']:.2e}), "
                      f"||err||/||ref|| {e['fro_rel']:.2e}, NaN {nan}", flush=True)
            del a, b, ref, outs
            torch.cuda.empty_cache()
    json.dump(res, open(os.path.join(out, "torch_gemm_tc.json"), "w"), indent=1)


def shapes(log):
    """Prints each shape's line and writes $OUT/torch_gemm_shapes.json (the
    run file's `cublas` timings)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    res = {}
    text = open(log).read() if log else sys.stdin.read()
    found = list(dict.fromkeys(re.findall(r"gemm_shapes/(\d+)x(\d+)x(\d+)", text)))
    if not found:
        sys.exit("no gemm_shapes/MxNxK benchmarks in the bench log")
    for m, n, k in ((int(x) for x in s) for s in found):
        a = torch.randn(m, k, device="cuda"); b = torch.randn(k, n, device="cuda")
        ms = bench(lambda: a @ b)
        print(f"torch sgemm {m}x{n}x{k}: {ms:.3f} ms {2 * m * n * k / ms / 1e9:.1f} TFLOP/s")
        record(res, "gemm_shapes", "sgemm", f"{m}x{n}x{k}", ms, flops=2 * m * n * k, source="cublas")
    json.dump(res, open(os.path.join(os.environ.get("OUT", "."), "torch_gemm_shapes.json"), "w"), indent=1)


def specials(root, log, out):
    # numpy only here: no other subcommand reads raw files into arrays.
    import numpy as np

    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"{'input':<44} cuBLAS SGEMM ({torch.cuda.get_device_name()}, torch {torch.__version__})")
    cublas = {}
    for case in sorted(os.listdir(root), key=lambda c: int(c[4:])):
        d = os.path.join(root, case)
        name, scalars, dims = open(os.path.join(d, "meta.txt")).read().splitlines()
        alpha, beta = (float(x) for x in scalars.split())
        m, n, k = (int(x) for x in dims.split())
        load = lambda f, t, shape: np.fromfile(os.path.join(d, f), dtype=t).reshape(shape)  # noqa: E731
        a, b, c0 = load("a.f32", np.float32, (m, k)), load("b.f32", np.float32, (k, n)), load("c0.f32", np.float32, (m, n))
        fp32, want, mag = load("fp32.f32", np.float32, (m, n)), load("want.f64", np.float64, (m, n)), load("mag.f64", np.float64, (m, n))
        A, B, C = (torch.from_numpy(x).cuda() for x in (a, b, c0))
        got = torch.addmm(C, A, B, beta=beta, alpha=alpha).cpu().numpy()
        nan, pinf, ninf = np.isnan(got), got == np.inf, got == -np.inf
        fin = np.isfinite(got)
        same = np.where(np.isnan(fp32), nan, np.where(np.isinf(fp32), got == fp32, fin))
        ok = np.isfinite(fp32) & fin & (mag > 0)
        err = (np.abs(got[ok].astype(np.float64) - want[ok]) / mag[ok]).max() if ok.any() else 0.0
        print(f"{name:<44} {nan.sum()}/{pinf.sum()}/{ninf.sum()}/{fin.sum()} off {(~same).sum()} err {err:.1e}")
        cublas[name] = {"nan": int(nan.sum()), "pos_inf": int(pinf.sum()), "neg_inf": int(ninf.sum()),
                        "finite": int(fin.sum()), "off": int((~same).sum()), "err": float(err)}
    if log:
        # The example's VALUE lines: `VALUE specials_run {...}` and a `VALUE[] specials_rows {...}` per case.
        lines = [line.split(" ", 2) for line in open(log) if line.startswith("VALUE")]
        run = next(json.loads(v) for kind, name, v in lines if name == "specials_run")
        rows = [json.loads(v) for kind, name, v in lines if name == "specials_rows"]
        run["rows"] = [{**row, "cublas_sgemm": cublas[row["input"]]} for row in rows]
        json.dump({"values": {"specials": run}}, open(os.path.join(out, "torch_gemm_specials.json"), "w"), indent=1)
