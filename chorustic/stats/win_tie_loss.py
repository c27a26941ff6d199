"""Win/tie/loss counts from the perspective of a reference method (paper App. C.5): a win when the
reference's accuracy on a dataset is strictly higher than the other method's, a loss when it is strictly
lower, a tie on exact equality (at :data:`~chorustic.stats.TIE_DECIMALS` decimals).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from chorustic.stats._common import check_matrix, tie_round

__all__ = ["WinTieLoss", "win_tie_loss", "win_tie_loss_range"]


@dataclasses.dataclass(frozen=True)
class WinTieLoss:
    wins: int
    ties: int
    losses: int

    @property
    def n(self) -> int:
        return self.wins + self.ties + self.losses

    def __str__(self) -> str:
        return f"{self.wins}/{self.ties}/{self.losses}"

    def reachable_from(self, rounded: "WinTieLoss") -> bool:
        """Whether these counts are possible in full precision when ``rounded`` are the counts of the
        rounded accuracies: a rounded tie can hide a win or a loss, a rounded win or loss never changes."""
        return self.n == rounded.n and self.wins >= rounded.wins and self.losses >= rounded.losses


def _pair(reference, other, unit_interval: bool = True) -> tuple[np.ndarray, np.ndarray]:
    frame = check_matrix(
        pd.DataFrame({"reference": np.asarray(reference, float), "other": np.asarray(other, float)}),
        unit_interval=unit_interval,
    )
    frame = tie_round(frame)
    return frame["reference"].to_numpy(), frame["other"].to_numpy()


def win_tie_loss(reference, other, higher_is_better: bool = True) -> WinTieLoss:
    """Counts over paired per-dataset accuracies (array-likes of equal length, no missing values);
    ``higher_is_better=False``: of a loss (log loss), a win is a lower value."""
    ref, oth = _pair(reference, other, unit_interval=higher_is_better)
    if not higher_is_better:
        ref, oth = -ref, -oth
    return WinTieLoss(int((ref > oth).sum()), int((ref == oth).sum()), int((ref < oth).sum()))


def win_tie_loss_range(reference, other, decimals: int = 4) -> tuple[WinTieLoss, WinTieLoss]:
    """For accuracies known to ``decimals`` places: the counts of the rounded values and the most
    extreme full-precision counts (every rounded tie a win, every rounded tie a loss)."""
    ref, oth = _pair(
        np.round(np.asarray(reference, float), decimals), np.round(np.asarray(other, float), decimals)
    )
    wins, ties, losses = int((ref > oth).sum()), int((ref == oth).sum()), int((ref < oth).sum())
    return WinTieLoss(wins, ties, losses), WinTieLoss(wins + ties, 0, losses)
