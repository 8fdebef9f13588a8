"""cuBLAS SGEMM (PyTorch, TF32 off) on the special-value cases that
`examples/gemm_specials.rs DIR` wrote: per case, the output pattern
(NaN/+inf/-inf/finite), elements off the FP32 FMA reference's non-finite
pattern, and the largest error of the finite ones over sum |a b|."""
import os, sys
import numpy as np
import torch

torch.backends.cuda.matmul.allow_tf32 = False
root = sys.argv[1]
print(f"{'input':<44} cuBLAS SGEMM ({torch.cuda.get_device_name()}, torch {torch.__version__})")
for case in sorted(os.listdir(root), key=lambda c: int(c[4:])):
    d = os.path.join(root, case)
    name, scalars, dims = open(os.path.join(d, "meta.txt")).read().splitlines()
    alpha, beta = (float(x) for x in scalars.split())
    m, n, k = (int(x) for x in dims.split())
    load = lambda f, t, shape: np.fromfile(os.path.join(d, f), dtype=t).reshape(shape)
    a, b, c0 = load("a.f32", np.float32, (m, k)), load("b.f32", np.float32, (k, n)), load("c0.f32", np.float32, (m, n))
    fp32, want, mag = load("fp32.f32", np.float32, (m, n)), load("want.f64", np.float64, (m, n)), load("mag.f64", np.float64, (m, n))
    A, B, C = (torch.from_numpy(x).cuda() for x in (a, b, c0))
    got = torch.addmm(C, A, B, beta=beta, alpha=alpha).cpu().numpy()
    nan, pinf, ninf = np.isnan(got), got == np.inf, got == -np.inf
    fin = np.isfinite(got)
    same = np.where(np.isnan(fp32), nan, np.where(np.isinf(fp32), got == fp32, fin))
    ok = np.isfinite(fp32) & fin & (mag > 0)
    err = (np.abs(got[ok].astype(np.float64) - want[ok]) / mag[ok]).max() if ok.any() else 0.0
    print(f"{name:<44} {nan.sum()}/{pinf.sum()}/{ninf.sum()}/{fin.sum()} off {(~same).sum()} err {err:.1e}")
