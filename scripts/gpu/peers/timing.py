"""Timing shared by every subcommand, so that every PyTorch figure beside ours
is taken the same way. `bench` is CUDA-event time: `warm` untimed calls and
at least `WARM_MS` of them (the report's `--warmup-ms`: a tensor-core GEMM
brings the GPU to its power limit and its clock down within about 200 ms, so
both sides are timed at their sustained clock), a synchronize, then `iters`
calls, each between two CUDA events on the current stream and waited for
before the next; the median of those. `wall_us` and
`launch_round_us` are host-clock times, for costs that CUDA events do not
see (the launch and the synchronize). `compile_timed` times torch.compile's
first call on the host clock."""
import time

import torch

WARM_MS = 500.0


def warm_up(fn, warm, warm_ms=WARM_MS):
    """`fn()` at least `warm` times and for at least `warm_ms` of host
    time, synchronized, so that the time is the GPU's."""
    t0, done = time.perf_counter(), 0
    while done < warm or (time.perf_counter() - t0) * 1e3 < warm_ms:
        for _ in range(max(warm, 1)):
            fn()
        done += max(warm, 1)
        torch.cuda.synchronize()


def event_times_ms(fn, iters, warm):
    """The `iters` CUDA-event times of `fn()`, in ms, sorted."""
    warm_up(fn, warm)
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts


def bench(fn, iters=20, warm=3):
    """The median CUDA-event time of `fn()`, in ms."""
    ts = event_times_ms(fn, iters, warm)
    return ts[len(ts) // 2]


def copy_roof_ms(n, **timing):
    """The median time of copying `n` random fp32 values from one device
    tensor into another (2 x 4n bytes moved): PyTorch's copy roof."""
    x = torch.randn(n, device="cuda"); y = torch.empty_like(x)
    return bench(lambda: y.copy_(x), **timing)


def record(res, op, kernel, shape, ms, bytes=None, flops=None, reps=None, source="pytorch"):
    """Adds one timing, as a run file holds it (docs/contributing.md), to
    res["timings"]: scripts/gpu/runfile.py gathers every JSON file's list."""
    res.setdefault("timings", []).append({"source": source, "op": op, "kernel": kernel, "shape": shape,
                                          "statistic": "median", "ms": ms, "reps": reps, "bytes": bytes,
                                          "flops": flops, "warmup_ms": WARM_MS})


def compile_timed(fn, *args):
    """`torch.compile(fn)`, compiled by a first call on `args`, and the host
    time that took, in s."""
    t0 = time.time(); compiled = torch.compile(fn); compiled(*args); torch.cuda.synchronize()
    return compiled, time.time() - t0


def wall_us(fn, iters=2000, warm=50):
    """The median host-clock time of `fn()` and a synchronize, in us, after
    `warm` untimed ones."""
    for _ in range(warm): fn(); torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter(); fn(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t0)
    ts.sort(); return ts[len(ts) // 2] * 1e6


def launch_round_us(z, ops=10000):
    """PyTorch's tiny-op launch cost: `ops` calls of `z.add_(1)` on the host
    clock from a synchronize to the synchronize after the last, in us per
    call."""
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(ops):
        z.add_(1)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / ops * 1e6
