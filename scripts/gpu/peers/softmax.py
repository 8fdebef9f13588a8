"""`softmax`: PyTorch's torch.softmax on the same GPU, in the same device call
as our binaries: the ratios of docs/softmax.md. The copy roof, the report's
three softmax shapes (65536x1024, 16384x4096, 4096x32768) plus the bench's
rows of 128, 1000, 50000 and 100000 columns (median of CUDA-event timings after
warm-up, fp32), and torch's own answers on the special values (all -inf,
NaN, +inf, +-1e30) that docs/softmax.md documents. Prints a table, writes
OUT/torch_softmax.json."""
import json
import os

import torch

from .timing import bench, copy_roof_ms, record

inf, nan = float("inf"), float("nan")
# Special values: what torch.softmax returns, row by row, on the GPU.
CASES = {
    "all -inf": [-inf, -inf, -inf, -inf],
    "masked (-inf, 0, 1, -inf)": [-inf, 0.0, 1.0, -inf],
    "one NaN": [1.0, nan, 2.0, 3.0],
    "one +inf": [1.0, inf, 2.0, 3.0],
    "two +inf": [inf, inf, 0.0, 0.0],
    "+-1e30": [1e30, -1e30, 0.0, 5.0],
    "all 1e30": [1e30, 1e30, 1e30, 1e30],
    "1 column, -inf": [-inf],
    "1 column, 3.0": [3.0],
}
SHAPES = ((65536, 1024), (16384, 4096), (4096, 32768), (262144, 128), (32768, 1000), (1024, 50000), (512, 100000))


def run(out):
    dev = torch.device("cuda")
    p = torch.cuda.get_device_properties(0)
    res = {"gpu": p.name, "sms": p.multi_processor_count, "torch": torch.__version__, "cuda": torch.version.cuda}
    print("GPU", p.name, p.multi_processor_count, "SMs, torch", torch.__version__, flush=True)

    res["semantics"] = {}
    for name, row in CASES.items():
        r = torch.softmax(torch.tensor([row], device=dev), dim=-1).cpu()[0].tolist()
        res["semantics"][name] = {"input": [repr(v) for v in row], "output": [repr(v) for v in r]}
        print(f"torch.softmax({row}) = {r}", flush=True)
    # The run file's named figures (scripts/gpu/runfile.py).
    res["values"] = {"torch": {"version": torch.__version__, "cuda": torch.version.cuda, "gpu": p.name},
                     "torch_special_values": [{"case": k, **v} for k, v in res["semantics"].items()]}

    n = 1 << 28
    ms = copy_roof_ms(n, iters=50, warm=5)
    res["copy_GBs"] = 2 * n * 4 / ms / 1e6
    record(res, "copy", "copy", str(n), ms, bytes=2 * n * 4, reps=50)
    print(f"copy 1 GiB: {ms:.3f} ms {res['copy_GBs']:.0f} GB/s", flush=True)

    for (R, C) in SHAPES:
        a = torch.randn(R, C, device=dev)
        ms = bench(lambda: torch.softmax(a, dim=-1), iters=50, warm=5)
        g = 2 * R * C * 4 / ms / 1e6
        res[f"torch_softmax_{R}x{C}_ms"] = ms
        res[f"torch_softmax_{R}x{C}_GBs"] = g
        record(res, "softmax", "torch.softmax", f"{R}x{C}", ms, bytes=2 * R * C * 4, reps=50)
        print(f"torch softmax {R}x{C}: {ms:.4f} ms {g:.0f} GB/s", flush=True)
        del a
        torch.cuda.empty_cache()

    json.dump(res, open(os.path.join(out, "torch_softmax.json"), "w"), indent=1)
