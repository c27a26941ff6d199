"""Check (2026-11-25): in how many directions does H vary for univariate series, at initialization?

Every RSSC slot of a univariate series holds the same channel, so the slots of H differ only through their
group and slot embeddings. For each named configuration, freshly initialized (``torch.manual_seed(0)``),
the effective rank (``benchmarks/representation_probes.effective_rank``) of H over the first 40 training
series of GunPoint (aeon's copy), next to ``slot_dim`` and ``d_h``.

    python experiments/slot_rank.py [--configs small base paper]
"""

import argparse
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))


def main() -> None:
    from representation_probes import effective_rank, rssc_features

    from chorustic.data import load_dataset
    from chorustic.model import ChorusTIC
    from chorustic.model.config import MODEL_PRESETS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", nargs="+", default=["small", "base", "paper"])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    X = load_dataset("GunPoint", offline=True).X_train[:40]
    for name in args.configs:
        torch.manual_seed(0)
        model = ChorusTIC(MODEL_PRESETS[name]()).eval()
        H = rssc_features(model, X)[1][0]
        c = model.config
        print(f"{name}: rank of H {effective_rank(H.numpy())} (slot_dim {c.slot_dim}, d_h {c.d_h})", flush=True)


if __name__ == "__main__":
    main()
