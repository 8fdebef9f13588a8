"""Timing shared by the PyTorch peer scripts (torch_*.py), so that every
PyTorch figure beside ours is taken the same way. `bench` is CUDA-event time:
`warm` untimed calls, a synchronize, then `iters` calls, each between two
CUDA events on the current stream and waited for before the next; the median
of those. `compile_timed` times torch.compile's first call on the host clock.

The scripts import it from their own folder: build.sh copies it into .gpu/
beside torch_peers.py."""
import time

import torch


def event_times_ms(fn, iters, warm):
    """The `iters` CUDA-event times of `fn()`, in ms, sorted."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
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


def compile_timed(fn, *args):
    """`torch.compile(fn)`, compiled by a first call on `args`, and the host
    time that took, in s."""
    t0 = time.time(); compiled = torch.compile(fn); compiled(*args); torch.cuda.synchronize()
    return compiled, time.time() - t0
