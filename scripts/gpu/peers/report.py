"""`report`: PyTorch on the same GPU, for the report's side-by-side ratios
(its `--peers`): copy roof, transposes, softmax, nested sine (eager and
torch.compile), SGEMM and TF32 GEMM, host-device copies, a streamed
pipeline, the tiny-op launch cost and a Python-loop transpose. Prints a
line each, writes OUT/torch_peers.json. Every figure is the median of
CUDA-event timings after warm-up, fp32, TF32 off unless named."""
import json
import os
import time

import torch

from .nested_sin import ns, unfused_and_compiled
from .timing import bench, copy_roof_ms, launch_round_us, record


def run(out):
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    res = {}
    p = torch.cuda.get_device_properties(0)
    res["gpu"] = p.name; res["sms"] = p.multi_processor_count
    print("GPU", p.name, p.multi_processor_count, "SMs", flush=True)

    n = 1 << 28
    ms = copy_roof_ms(n)
    res["copy_GBs"] = 2 * n * 4 / ms / 1e6
    record(res, "copy", "copy_", "1 GiB", ms, bytes=2 * n * 4)
    print(f"copy 1GiB: {ms:.3f} ms {res['copy_GBs']:.0f} GB/s", flush=True)
    for N in (4096, 8192, 16384):
        a = torch.randn(N, N, device=dev); b = torch.empty_like(a)
        ms = bench(lambda: b.copy_(a.t()))
        g = 2 * N * N * 4 / ms / 1e6
        res[f"torch_transpose_{N}_GBs"] = g
        record(res, "transpose", "copy_(a.t())", f"{N}x{N}", ms, bytes=2 * N * N * 4)
        print(f"torch transpose {N}: {ms:.3f} ms {g:.0f} GB/s", flush=True)
        del a, b
    for (R, C) in ((65536, 1024), (16384, 4096), (4096, 32768)):
        a = torch.randn(R, C, device=dev)
        ms = bench(lambda: torch.softmax(a, dim=-1))
        g = 2 * R * C * 4 / ms / 1e6
        res[f"torch_softmax_{R}x{C}_GBs"] = g
        record(res, "softmax", "torch.softmax", f"{R}x{C}", ms, bytes=2 * R * C * 4)
        print(f"torch softmax {R}x{C}: {ms:.3f} ms {g:.0f} GB/s", flush=True)
        del a
    a = torch.randn(1 << 28, device=dev)
    unfused_and_compiled(a, res)
    s = torch.randn(1 << 10, device=dev)
    res["torch_nested_sin_1k_us"] = bench(lambda: ns(s), iters=200) * 1000
    print(f"nested sin 1k elems: {res['torch_nested_sin_1k_us']:.1f} us", flush=True)
    del a
    for N in (4096, 8192):
        A = torch.randn(N, N, device=dev); B = torch.randn(N, N, device=dev)
        torch.backends.cuda.matmul.allow_tf32 = False
        ms = bench(lambda: A @ B, iters=10)
        res[f"torch_sgemm_{N}_TFLOPs"] = 2 * N**3 / ms / 1e9
        record(res, "gemm", "sgemm", f"{N}x{N}x{N}", ms, flops=2 * N**3, source="cublas")
        torch.backends.cuda.matmul.allow_tf32 = True
        ms2 = bench(lambda: A @ B, iters=10)
        res[f"torch_tf32gemm_{N}_TFLOPs"] = 2 * N**3 / ms2 / 1e9
        record(res, "gemm", "tf32", f"{N}x{N}x{N}", ms2, flops=2 * N**3, source="cublas")
        torch.backends.cuda.matmul.allow_tf32 = False
        print(f"gemm {N}: fp32 {res[f'torch_sgemm_{N}_TFLOPs']:.1f} TFLOP/s, tf32 {res[f'torch_tf32gemm_{N}_TFLOPs']:.1f}", flush=True)
        del A, B
    n = 1 << 26
    hp = torch.randn(n).pin_memory(); hg = torch.randn(n); d = torch.empty(n, device=dev)
    for name, h in (("pinned", hp), ("pageable", hg)):
        ms = bench(lambda: d.copy_(h, non_blocking=True), iters=10)
        res[f"h2d_{name}_GBs"] = n * 4 / ms / 1e6
        ms = bench(lambda: h.copy_(d, non_blocking=(name == "pinned")), iters=10)
        res[f"d2h_{name}_GBs"] = n * 4 / ms / 1e6
        print(f"{name}: H2D {res[f'h2d_{name}_GBs']:.1f} GB/s, D2H {res[f'd2h_{name}_GBs']:.1f} GB/s", flush=True)
    t_seq, t_par = pipeline(dev)
    res["pipeline_seq_ms"] = t_seq * 1e3; res["pipeline_streams_ms"] = t_par * 1e3
    print(f"pipeline seq {t_seq*1e3:.1f} ms, streamed {t_par*1e3:.1f} ms, speedup {t_seq/t_par:.2f}x", flush=True)
    z = torch.zeros(1, device=dev)
    res["torch_launch_us"] = launch_round_us(z)
    print(f"torch tiny-op launch: {res['torch_launch_us']:.2f} us/op", flush=True)
    N = 4096
    a = torch.randn(N, N, device=dev); r = torch.empty_like(a)

    def loop_transpose():
        for i in range(N): r[i, :] = a[:, i]
    ms = bench(loop_transpose, iters=3, warm=1)
    res["torch_loop_transpose_4096_ms"] = ms
    record(res, "transpose", "python loop r[i, :] = a[:, i]", "4096x4096", ms, bytes=2 * N * N * 4)
    print(f"loop transpose 4096: {ms:.1f} ms", flush=True)
    json.dump(res, open(os.path.join(out, "torch_peers.json"), "w"), indent=1)


def pipeline(dev, iters=16, size=2048):
    """Upload, square and download `iters` pinned `size`^2 matrices one after
    another on the current stream, then each on a stream of its own: the
    host-clock seconds of each, after one untimed run of both."""
    inp = [torch.randn(size, size).pin_memory() for _ in range(iters)]

    def seq():
        for i in range(iters):
            g = inp[i].to(dev, non_blocking=False); c = g @ g; inp[i].copy_(c, non_blocking=False)
    streams = [torch.cuda.Stream() for _ in range(iters)]

    def par():
        for i in range(iters):
            with torch.cuda.stream(streams[i]):
                g = inp[i].to(dev, non_blocking=True); c = g @ g; inp[i].copy_(c, non_blocking=True)
        torch.cuda.synchronize()
    for f in (seq, par): f()
    torch.cuda.synchronize()
    t0 = time.perf_counter(); seq(); torch.cuda.synchronize(); t_seq = time.perf_counter() - t0
    t0 = time.perf_counter(); par(); torch.cuda.synchronize(); t_par = time.perf_counter() - t0
    return t_seq, t_par
