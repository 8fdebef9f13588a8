"""`launch`: PyTorch's tiny-op launch cost, measured as `report` does (10 000
`z.add_(1)`, host clock until synchronized), but repeated: the median of 5
rounds after a warm-up round, for examples/04_launch_overhead.rs to be
compared with in the same device call. Prints one line."""
import statistics

import torch

from .timing import launch_round_us


def run():
    z = torch.zeros(1, device="cuda")
    rounds = [launch_round_us(z) for _ in range(6)][1:]  # the first round is the warm-up
    print(f"torch tiny-op launch (z.add_(1)): median {statistics.median(rounds):.2f} us/op "
          f"of 5 rounds ({', '.join(f'{r:.2f}' for r in rounds)})")
