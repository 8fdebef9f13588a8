"""PyTorch (cuBLAS, TF32 off) at the GEMM shapes of benches/gemm.rs's
`gemm_shapes` group, read from that bench's log (the first argument, or
stdin): median of CUDA-event timings after warm-up (torch_timing.bench)."""
import re, sys
import torch
from torch_timing import bench

torch.backends.cuda.matmul.allow_tf32 = False
log = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
shapes = list(dict.fromkeys(re.findall(r"gemm_shapes/(\d+)x(\d+)x(\d+)", log)))
if not shapes:
    sys.exit("no gemm_shapes/MxNxK benchmarks in the bench log")
for m, n, k in ((int(x) for x in s) for s in shapes):
    a = torch.randn(m, k, device="cuda"); b = torch.randn(k, n, device="cuda")
    ms = bench(lambda: a @ b)
    print(f"torch sgemm {m}x{n}x{k}: {ms:.3f} ms {2 * m * n * k / ms / 1e9:.1f} TFLOP/s")
