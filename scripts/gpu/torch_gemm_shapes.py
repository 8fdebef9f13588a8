"""PyTorch (cuBLAS, TF32 off) at the GEMM shapes of benches/gemm.rs's
`gemm_shapes` group: median of 20 CUDA-event timings after warm-up, as in
scripts/gpu/torch_peers.py."""
import torch

torch.backends.cuda.matmul.allow_tf32 = False
SHAPES = [(4096, 4096, 4096), (4095, 4095, 4095), (4097, 4097, 4097),
          (4096, 4096, 4095), (4096, 4095, 4096), (4000, 4000, 4000)]
for m, n, k in SHAPES:
    a = torch.randn(m, k, device="cuda"); b = torch.randn(k, n, device="cuda")
    for _ in range(3): a @ b
    torch.cuda.synchronize()
    ts = []
    for _ in range(20):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); a @ b; e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    ms = sorted(ts)[len(ts) // 2]
    print(f"torch sgemm {m}x{n}x{k}: {ms:.3f} ms {2 * m * n * k / ms / 1e9:.1f} TFLOP/s")
