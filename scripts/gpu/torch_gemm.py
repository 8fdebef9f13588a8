"""cuBLAS SGEMM through PyTorch, same device call as our kernels (cut down from
scripts/gpu/torch_peers.py: only the GEMM figures, more repetitions).
Writes $OUT/torch_gemm.json. Median of CUDA-event timings after warm-up."""
import torch, json, os
from torch_timing import event_times_ms
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
dev = torch.device("cuda")
p = torch.cuda.get_device_properties(0)
res = {"gpu": p.name, "sms": p.multi_processor_count, "torch": torch.__version__,
       "cublas_fp32_note": "torch.backends.cuda.matmul.allow_tf32=False, float32_matmul_precision=highest"}
print("GPU", p.name, p.multi_processor_count, "SMs, torch", torch.__version__, flush=True)

def bench(fn, iters, warm=5):
    ts = event_times_ms(fn, iters, warm)
    return ts[len(ts)//2], ts[0], ts[-1]

for N in (4096, 8192):
    g = torch.Generator(device=dev); g.manual_seed(N)
    A = torch.rand(N, N, device=dev, generator=g) * 2 - 1
    B = torch.rand(N, N, device=dev, generator=g) * 2 - 1
    C = torch.empty(N, N, device=dev)
    reps = 30 if N == 4096 else 15
    torch.backends.cuda.matmul.allow_tf32 = False
    med, lo, hi = bench(lambda: torch.mm(A, B, out=C), reps)
    res[f"sgemm_{N}_ms"] = med; res[f"sgemm_{N}_min_ms"] = lo; res[f"sgemm_{N}_max_ms"] = hi; res[f"sgemm_{N}_reps"] = reps
    res[f"sgemm_{N}_TFLOPs"] = 2 * N**3 / med / 1e9
    torch.backends.cuda.matmul.allow_tf32 = True
    med2, _, _ = bench(lambda: torch.mm(A, B, out=C), reps)
    res[f"tf32gemm_{N}_TFLOPs"] = 2 * N**3 / med2 / 1e9
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"gemm {N}: fp32 (TF32 off) {res[f'sgemm_{N}_TFLOPs']:.2f} TFLOP/s ({med:.3f} ms, {reps} reps), "
          f"tf32 {res[f'tf32gemm_{N}_TFLOPs']:.1f} TFLOP/s", flush=True)
    del A, B, C
try:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        A = torch.rand(4096, 4096, device=dev); B = torch.rand(4096, 4096, device=dev)
        torch.mm(A, B); torch.cuda.synchronize()
    names = sorted({e.name for e in prof.events() if "gemm" in e.name.lower() or "sgemm" in e.name.lower()})
    res["cublas_kernels_4096"] = names
    print("cuBLAS kernel(s):", names, flush=True)
except Exception as ex:
    print("profiler failed:", ex, flush=True)
json.dump(res, open(os.path.join(os.environ.get("OUT", "."), "torch_gemm.json"), "w"), indent=1)
