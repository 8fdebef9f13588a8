"""`nested-sin`: PyTorch's nested sine on the same GPU, in the same call, for
the ratios of docs/nested_sin.md: the copy roof, four torch.sin and
torch.compile at 2^28, and at 1024 elements on CUDA events, on the host clock
and as a CUDA graph. Prints a line each, writes OUT/torch_peers.json (the
report's `--peers` file name, so that the report of the same run reads it;
the run file's `pytorch` among its values). Medians of CUDA-event timings
after warm-up, fp32."""
import json
import os

import torch

from .timing import bench, compile_timed, record, wall_us


def ns(x):
    return torch.sin(torch.sin(torch.sin(torch.sin(x))))


def unfused_and_compiled(x, res):
    """Times four torch.sin on `x` (2^k elements) and torch.compile of them
    into res's `torch_nested_sin_unfused_ms` and
    `torch_nested_sin_compiled_ms`, a line printed each. Returns the compiled
    function and its compile time in s, or None where torch.compile fails
    (printed): the report and docs/nested_sin.md's peers take them alike."""
    n = x.numel()
    ms_u = bench(lambda: ns(x))
    res["torch_nested_sin_unfused_ms"] = ms_u
    record(res, "nested_sin", "unfused", f"2^{n.bit_length() - 1}", ms_u, bytes=2 * n * 4)
    print(f"nested sin, four torch.sin, 2^{n.bit_length() - 1}: {ms_u:.4f} ms (eff {2*n*4/ms_u/1e6:.0f} GB/s)", flush=True)
    try:
        cns, ct = compile_timed(ns, x)
        ms_c = bench(lambda: cns(x))
        res["torch_nested_sin_compiled_ms"] = ms_c
        record(res, "nested_sin", "compiled", f"2^{n.bit_length() - 1}", ms_c, bytes=2 * n * 4)
        print(f"nested sin, torch.compile, 2^{n.bit_length() - 1}: {ms_c:.4f} ms (eff {2*n*4/ms_c/1e6:.0f} GB/s; "
              f"compile {ct:.1f} s)", flush=True)
        return cns, ct
    except Exception as ex:
        print("torch.compile failed:", ex, flush=True)
        return None


def run(out):
    dev = torch.device("cuda")
    res = {}
    p = torch.cuda.get_device_properties(0)
    res["gpu"] = p.name; res["sms"] = p.multi_processor_count; res["torch"] = torch.__version__
    print("GPU", p.name, p.multi_processor_count, "SMs, torch", torch.__version__, flush=True)

    n = 1 << 28
    x = (torch.rand(n, device=dev) * 2e4 - 1e4); y = torch.empty_like(x)
    ms = bench(lambda: y.copy_(x))
    res["copy_ms"] = ms; res["copy_GBs"] = 2 * n * 4 / ms / 1e6
    record(res, "copy", "copy_", "2^28", ms, bytes=2 * n * 4)
    print(f"copy 2^28 f32: {ms:.4f} ms {res['copy_GBs']:.0f} GB/s", flush=True)
    del y
    compiled = unfused_and_compiled(x, res)
    if compiled:
        cns, res["compile_s"] = compiled
        try:
            ok = torch.equal(cns(x[:1 << 20]), ns(x[:1 << 20]))
            res["compiled_bit_equal_to_eager"] = ok
            print(f"torch.compile result bit-equal to four torch.sin on 2^20: {ok}", flush=True)
        except Exception as ex:
            print("torch.compile failed:", ex, flush=True)
    del x
    s = torch.rand(1024, device=dev) * 2e4 - 1e4
    res["torch_nested_sin_1k_us"] = bench(lambda: ns(s), iters=200) * 1000
    record(res, "nested_sin", "unfused", "1024", res["torch_nested_sin_1k_us"] / 1000, bytes=2 * 1024 * 4, reps=200)
    print(f"nested sin 1024, four torch.sin, CUDA events: {res['torch_nested_sin_1k_us']:.2f} us", flush=True)
    res["torch_nested_sin_1k_wall_us"] = wall_us(lambda: ns(s))
    record(res, "nested_sin_host_clock", "unfused", "1024", res["torch_nested_sin_1k_wall_us"] / 1000, bytes=2 * 1024 * 4)
    print(f"nested sin 1024, four torch.sin + synchronize, host clock: {res['torch_nested_sin_1k_wall_us']:.2f} us", flush=True)
    try:
        # Warm-up on a side stream, as CUDA graph capture asks, then capture.
        r = ns(s)
        st = torch.cuda.Stream(); st.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(st):
            for _ in range(3): r = ns(s)
        torch.cuda.current_stream().wait_stream(st)
        g = torch.cuda.CUDAGraph()
        # r holds the graph's output tensor for as long as the graph replays.
        with torch.cuda.graph(g): r = ns(s)
        res["torch_nested_sin_1k_graph_us"] = bench(lambda: g.replay(), iters=200) * 1000
        record(res, "nested_sin", "graph", "1024", res["torch_nested_sin_1k_graph_us"] / 1000, bytes=2 * 1024 * 4,
               reps=200)
        res["torch_nested_sin_1k_graph_wall_us"] = wall_us(lambda: g.replay())
        record(res, "nested_sin_host_clock", "graph", "1024", res["torch_nested_sin_1k_graph_wall_us"] / 1000,
               bytes=2 * 1024 * 4)
        print(f"nested sin 1024 as a CUDA graph: events {res['torch_nested_sin_1k_graph_us']:.2f} us, host clock {res['torch_nested_sin_1k_graph_wall_us']:.2f} us", flush=True)
    except Exception as ex:
        print("CUDA graph failed:", ex, flush=True)
    # The run file's named figures (scripts/gpu/runfile.py).
    res["values"] = {"pytorch": {k: res.get(k) for k in ("torch", "compile_s", "compiled_bit_equal_to_eager")}}
    res["values"]["pytorch"]["version"] = res["values"]["pytorch"].pop("torch")
    json.dump(res, open(os.path.join(out, "torch_peers.json"), "w"), indent=1)
