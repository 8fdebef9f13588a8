"""PyTorch's tiny-op launch cost, measured as scripts/gpu/torch_peers.py
does (10 000 `z.add_(1)`, host clock until synchronized), but repeated: the
median of 5 rounds after a warm-up, for examples/04_launch_overhead.rs to be
compared with in the same device call."""
import statistics, time, torch

z = torch.zeros(1, device="cuda")
rounds = []
for i in range(6):
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(10000):
        z.add_(1)
    torch.cuda.synchronize()
    if i:  # the first round is the warm-up
        rounds.append((time.perf_counter() - t0) / 10000 * 1e6)
print(f"torch tiny-op launch (z.add_(1)): median {statistics.median(rounds):.2f} us/op "
      f"of 5 rounds ({', '.join(f'{r:.2f}' for r in rounds)})")
