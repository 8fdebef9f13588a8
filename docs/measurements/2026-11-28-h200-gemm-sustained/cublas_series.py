"""cuBLAS TF32 (and SGEMM) at N^3: `reps` launches back to back, each between
two CUDA events (the report's protocol: no synchronize between reps), after
`warm` untimed ones. Prints the median of each chunk of 30 and the whole
median, so the clocks' fall under the power limit shows."""
import sys, torch
n, reps, warm, tf32 = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "tf32"
torch.backends.cuda.matmul.allow_tf32 = tf32
torch.set_float32_matmul_precision("high" if tf32 else "highest")
g = torch.Generator(device="cuda").manual_seed(n)
a = torch.rand(n, n, device="cuda", generator=g) * 2 - 1
b = torch.rand(n, n, device="cuda", generator=g) * 2 - 1
c = torch.empty(n, n, device="cuda")
for _ in range(warm):
    torch.mm(a, b, out=c)
torch.cuda.synchronize()
ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
for s, e in ev:
    s.record(); torch.mm(a, b, out=c); e.record()
torch.cuda.synchronize()
ts = [s.elapsed_time(e) for s, e in ev]
med = lambda x: sorted(x)[len(x) // 2]
chunks = [f"{2*n**3/med(ts[i:i+30])/1e9:.0f}" for i in range(0, reps, 30)]
name = "tf32" if tf32 else "sgemm"
print(f"cuBLAS {name} {n}^3 warm {warm} reps {reps}: median {med(ts):.4f} ms {2*n**3/med(ts)/1e9:.1f} TFLOP/s; min {min(ts):.4f}; TFLOP/s by chunk of 30: {' '.join(chunks)}", flush=True)
