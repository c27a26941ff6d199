"""Random Subchannel Slot Concatenation (paper Sec. 3.2, App. B.1 and B.4).

RSSC maps a variable-size channel set to a representation of fixed width ``d_h = G * S * d_s``:

1. **Assignment** (:func:`sample_rssc_assignment`): once per episode, N_s = G*S channel indices are
   drawn from the episode's valid channels and reshaped row-major to ``(G, S)``; every context and
   query row of the episode uses the same assignment. Coverage sampling (released): one permutation
   when ``C >= N_s`` (channels beyond N_s are not used by that draw), otherwise ``ceil(N_s / C)``
   independent permutations concatenated and cut to N_s (each channel appears ``floor`` or ``ceil``
   of ``N_s / C`` times; duplicates may share a group); one channel fills every slot. ``"random"``:
   i.i.d. with replacement.
2. The shared group encoder (:mod:`chorustic.model.signal_encoder`) encodes every group.
3. **Composition** (:class:`RSSC`): ``z + e_g + r_s`` (group and slot embeddings), a shared slot
   projector ``P -> d_s``, concatenation in fixed order (group major, slot minor), LayerNorm.

Randomness comes from an explicit ``torch.Generator`` (or the global RNG when none is given); the
draw order (draw-major, then episode; per episode the permutations in sequence) is the official one,
so a generator seeded like the official global RNG reproduces its assignments.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from chorustic.model.config import ChorusTICConfig

__all__ = ["RSSC", "check_group_idx", "sample_rssc_assignment"]


def sample_rssc_assignment(
    channel_mask: Tensor,
    *,
    num_groups: int,
    group_size: int,
    n_draws: int = 1,
    mode: str = "coverage",
    generator: torch.Generator | None = None,
) -> Tensor:
    """Draw RSSC assignments: ``channel_mask (B, C) bool -> group_idx (B, n_draws, G, S) int64``.

    ``group_idx[b, e, g, s]`` is the input channel feeding slot s of group g in draw e of episode b.
    Only channels with ``channel_mask[b, c]`` True are drawn.
    """
    if channel_mask.ndim != 2:
        raise ValueError(f"channel_mask must be (B, C), got shape {tuple(channel_mask.shape)}")
    if mode not in ("coverage", "random"):
        raise ValueError(f"unknown RSSC sampling mode {mode!r} (expected 'coverage' or 'random')")
    mask = channel_mask.detach().to("cpu", torch.bool)
    b_count = mask.shape[0]
    n_slots = num_groups * group_size
    valid = [torch.nonzero(mask[b], as_tuple=False).flatten() for b in range(b_count)]
    for b, v in enumerate(valid):
        if v.numel() == 0:
            raise ValueError(f"episode {b} has no valid channel (channel_mask is all False)")
    out = torch.empty(b_count, n_draws, n_slots, dtype=torch.long)
    for e in range(n_draws):
        for b in range(b_count):
            v = valid[b]
            n = v.numel()
            if n == 1:
                pick = torch.zeros(n_slots, dtype=torch.long)
            elif mode == "random":
                pick = torch.randint(0, n, (n_slots,), generator=generator)
            elif n >= n_slots:
                pick = torch.randperm(n, generator=generator)[:n_slots]
            else:
                reps = math.ceil(n_slots / n)
                pick = torch.cat([torch.randperm(n, generator=generator) for _ in range(reps)])[:n_slots]
            out[b, e] = v[pick]
    return out.view(b_count, n_draws, num_groups, group_size).to(channel_mask.device)


def check_group_idx(
    group_idx: Tensor,
    batch: int,
    n_channels: int,
    num_groups: int,
    group_size: int,
    channel_mask: Tensor | None = None,
) -> Tensor:
    """Validate an injected assignment; return it as ``(B, E, G, S)`` int64."""
    if group_idx.ndim == 3:
        group_idx = group_idx[:, None]
    if (
        group_idx.ndim != 4
        or group_idx.shape[0] != batch
        or tuple(group_idx.shape[2:]) != (num_groups, group_size)
    ):
        raise ValueError(
            f"group_idx must have shape (B={batch}, G={num_groups}, S={group_size}) or "
            f"(B, n_draws, G, S); got {tuple(group_idx.shape)}"
        )
    group_idx = group_idx.long()
    if group_idx.numel() and (int(group_idx.min()) < 0 or int(group_idx.max()) >= n_channels):
        raise ValueError(f"group_idx refers to channels outside 0..{n_channels - 1}")
    if channel_mask is not None:
        flat = group_idx.reshape(batch, -1)
        ok = torch.gather(channel_mask.to(flat.device).bool(), 1, flat)
        if not bool(ok.all()):
            raise ValueError("group_idx assigns a channel that channel_mask marks as absent")
    return group_idx


class RSSC(nn.Module):
    """Fixed-dimensional RSSC composition: ``z (..., G, S, P) -> h (..., d_h)``."""

    def __init__(self, config: ChorusTICConfig) -> None:
        super().__init__()
        self.config = config
        g, s, p = config.num_groups, config.group_size, config.hidden_dim
        if config.use_group_embedding:
            self.group_embedding = nn.Parameter(torch.randn(g, p) * 0.02)
        else:
            self.register_parameter("group_embedding", None)
        if config.use_slot_embedding:
            self.slot_embedding = nn.Parameter(torch.randn(s, p) * 0.02)
        else:
            self.register_parameter("slot_embedding", None)
        if config.slot_projector == "linear":
            self.slot_projector = nn.Sequential(nn.LayerNorm(p), nn.Linear(p, config.slot_dim))
        else:
            self.slot_projector = nn.Sequential(
                nn.LayerNorm(p),
                nn.Linear(p, config.slot_projector_hidden),
                nn.GELU(),
                nn.Dropout(0.1),
                nn.Linear(config.slot_projector_hidden, config.slot_dim),
            )
        self.out_norm = nn.LayerNorm(config.d_h) if config.rssc_output_norm else nn.Identity()

    def sample(
        self, channel_mask: Tensor, n_draws: int = 1, generator: torch.Generator | None = None
    ) -> Tensor:
        """Assignments for each episode: ``(B, n_draws, G, S)``."""
        c = self.config
        return sample_rssc_assignment(
            channel_mask,
            num_groups=c.num_groups,
            group_size=c.group_size,
            n_draws=n_draws,
            mode=c.rssc_sampling,
            generator=generator,
        )

    def forward(self, z: Tensor, return_prenorm: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        u = z
        if self.group_embedding is not None:
            u = u + self.group_embedding[:, None, :]
        if self.slot_embedding is not None:
            u = u + self.slot_embedding[None, :, :]
        prenorm = self.slot_projector(u).flatten(-3)  # group major, slot minor
        h = self.out_norm(prenorm)
        return (h, prenorm) if return_prenorm else h
