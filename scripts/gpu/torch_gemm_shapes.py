"""PyTorch (cuBLAS, TF32 off) at the GEMM shapes of benches/gemm.rs's
`gemm_shapes` group: median of 20 CUDA-event timings after warm-up, as in
scripts/gpu/torch_peers.py."""
import torch
from torch_timing import bench

torch.backends.cuda.matmul.allow_tf32 = False
SHAPES = [(4096, 4096, 4096), (4095, 4095, 4095), (4097, 4097, 4097),
          (4096, 4096, 4095), (4096, 4095, 4096), (4000, 4000, 4000)]
for m, n, k in SHAPES:
    a = torch.randn(m, k, device="cuda"); b = torch.randn(k, n, device="cuda")
    ms = bench(lambda: a @ b)
    print(f"torch sgemm {m}x{n}x{k}: {ms:.3f} ms {2 * m * n * k / ms / 1e9:.1f} TFLOP/s")
