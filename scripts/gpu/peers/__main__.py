"""PyTorch on the same GPU, in the same device call as our binaries, for
side-by-side ratios: one subcommand per page or run that compares with it.
Every CUDA-event figure is taken the same way (timing.py). Each subcommand
imports torch when it runs, so `--help` works on a machine without it.

    python3 scripts/gpu/peers report            # OUT/torch_peers.json, the report's --peers (run.sh)
    python3 scripts/gpu/peers nested-sin        # OUT/torch_peers.json for docs/nested_sin.md (nested_sin.sh)
    python3 scripts/gpu/peers softmax           # OUT/torch_softmax.json for docs/softmax.md (softmax.sh)
    python3 scripts/gpu/peers gemm-tc [DUMP]    # OUT/torch_gemm_tc.json and tc.log's cuBLAS lines (gemm.sh)
    python3 scripts/gpu/peers gemm-shapes LOG   # SGEMM at the bench's gemm_shapes (gemm.sh, run.sh)
    python3 scripts/gpu/peers gemm-specials DIR [LOG] # SGEMM on examples/gemm_specials.rs's cases (gemm.sh)
    python3 scripts/gpu/peers launch            # the tiny-op launch cost (run.sh, beside 04_launch_overhead)

OUT is --out, else the environment's $OUT, else the current folder. `python3
-m peers` from scripts/gpu (or with it on PYTHONPATH) is the same."""
import argparse
import importlib
import os
import sys
from pathlib import Path

if not __package__:
    # Run as a folder: import this package by name from its parent, rather
    # than its files as top-level modules (where `report` or `timing` could
    # shadow, or be shadowed by, another module of that name).
    sys.path[0] = str(Path(__file__).resolve().parent.parent)


def command(module, function, params):
    """A subcommand's action: imports peers.MODULE (and with it torch) only
    when it runs, and calls FUNCTION with the arguments named PARAMS."""
    def act(args):
        getattr(importlib.import_module(f"peers.{module}"), function)(**{k: getattr(args, k) for k in params})
    return act


def main():
    parser = argparse.ArgumentParser(prog="python3 scripts/gpu/peers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name, module, function, help, *params):
        p = sub.add_parser(name, help=help, description=help)
        p.set_defaults(act=command(module, function, params))
        return p

    def out_option(p):
        p.add_argument("--out", default=os.environ.get("OUT", "."),
                       help="folder of the JSON file (default: $OUT, else the current folder)")

    out_option(add("report", "report", "run", "the report's peers: copy roof, transposes, softmax, nested sine, "
                   "GEMM, host-device copies, a streamed pipeline, launch cost; writes OUT/torch_peers.json", "out"))
    out_option(add("nested-sin", "nested_sin", "run", "docs/nested_sin.md's peers: four torch.sin and torch.compile "
                   "at 2^28, 1024 elements on events, host clock and a CUDA graph; writes OUT/torch_peers.json", "out"))
    out_option(add("softmax", "softmax", "run", "docs/softmax.md's peers: torch.softmax at the bench's shapes and "
                   "on special values; writes OUT/torch_softmax.json", "out"))
    p = add("gemm-tc", "gemm", "tc", "cuBLAS SGEMM and TF32 at 4096^3, 8192^3 and 16384^3, and the errors of the dumped "
            "outputs of examples/gemm_tensor_cores.rs; writes OUT/torch_gemm_tc.json", "out", "dump")
    p.add_argument("dump", nargs="?", metavar="DUMP", help="the folder examples/gemm_tensor_cores.rs dumped into")
    out_option(p)
    p = add("gemm-shapes", "gemm", "shapes", "SGEMM at the shapes of benches/gemm.rs's gemm_shapes group, read "
            "from its log", "log")
    p.add_argument("log", nargs="?", metavar="LOG", help="the bench's log (default: stdin)")
    p = add("gemm-specials", "gemm", "specials", "SGEMM on the special-value cases examples/gemm_specials.rs wrote; "
            "with its output, writes OUT/torch_gemm_specials.json (the run file's `specials`)", "root", "log", "out")
    p.add_argument("root", metavar="DIR", help="the folder examples/gemm_specials.rs wrote")
    p.add_argument("log", nargs="?", metavar="LOG", help="what examples/gemm_specials.rs printed (its VALUE lines)")
    out_option(p)
    add("launch", "launch", "run", "PyTorch's tiny-op launch cost, the median of 5 rounds of 10 000 z.add_(1)")

    args = parser.parse_args()
    args.act(args)


if __name__ == "__main__":
    main()
