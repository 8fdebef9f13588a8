"""cuBLAS beside our tensor-core GEMM steps, in the same device call.

1. Times torch.mm (cuBLAS) at 4096^3 and 8192^3 with TF32 allowed and with
   it off (SGEMM): CUDA-event medians after warm-up.
2. For each size N with dumps from examples/gemm_tensor_cores.rs in DUMP
   (a_N.bin, b_N.bin, c_<step>_N.bin: raw f32), computes the f64 product on
   the GPU and reports, for every dumped step and for cuBLAS SGEMM and TF32
   on the same inputs: max |err|, max |err| / max |ref|, and
   ||err||_F / ||ref||_F.
Writes $OUT/torch_gemm_tc.json."""
import glob, json, os, sys
import torch
from torch_timing import event_times_ms

dev = torch.device("cuda")
out = os.environ.get("OUT", ".")
dump = sys.argv[1] if len(sys.argv) > 1 else None
reps = {4096: 50, 8192: 20}
p = torch.cuda.get_device_properties(0)
res = {"gpu": p.name, "torch": torch.__version__, "cuda": torch.version.cuda}
print("GPU", p.name, "torch", torch.__version__, flush=True)


def bench(fn, iters):
    ts = event_times_ms(fn, iters, warm=10)
    return ts[len(ts) // 2], ts[0], ts[-1]


def mm(a, b, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    return torch.mm(a, b)


for n in (4096, 8192):
    g = torch.Generator(device=dev); g.manual_seed(n)
    a = torch.rand(n, n, device=dev, generator=g) * 2 - 1
    b = torch.rand(n, n, device=dev, generator=g) * 2 - 1
    c = torch.empty(n, n, device=dev)
    for name, tf32 in (("sgemm", False), ("tf32", True)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
        med, lo, hi = bench(lambda: torch.mm(a, b, out=c), reps[n])
        res[f"{name}_{n}"] = {"median_ms": med, "min_ms": lo, "max_ms": hi, "reps": reps[n],
                              "TFLOPs": 2 * n**3 / med / 1e9}
        print(f"cuBLAS {name:5} {n}^3: median {med:.4f} ms (min {lo:.4f}, max {hi:.4f}, {reps[n]} reps) "
              f"{2 * n**3 / med / 1e9:.1f} TFLOP/s", flush=True)
    del a, b, c

if dump:
    for n in (4096, 8192):
        fa = os.path.join(dump, f"a_{n}.bin")
        if not os.path.exists(fa):
            continue
        load = lambda f: torch.from_file(f, size=n * n, dtype=torch.float32).reshape(n, n).to(dev)
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
            print(f"error {name:16} {n}^3: max|err| {e['max_abs']:.3e} (/{refmax:.1f} = {e['max_rel_to_max']:.2e}), "
                  f"||err||/||ref|| {e['fro_rel']:.2e}, NaN {nan}", flush=True)
        del a, b, ref, outs
        torch.cuda.empty_cache()
json.dump(res, open(os.path.join(out, "torch_gemm_tc.json"), "w"), indent=1)
