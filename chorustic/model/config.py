"""Hyperparameters of ChorusTIC (paper App. C.3, Table "Final ChorusTIC architecture").

:meth:`ChorusTICConfig.paper` is the released model exactly (``model_hparams_latest.json`` of the
official checkpoint plus the MantisDA code defaults the JSON does not set); :meth:`ChorusTICConfig.small`
is a version that can be pretrained on a few CPU cores; :meth:`ChorusTICConfig.tiny` is for unit tests.

Ablations are ``dataclasses.replace`` calls::

    cfg = dataclasses.replace(ChorusTICConfig.paper(), use_channel_axis_attention=False)   # no channel axis
    cfg = dataclasses.replace(ChorusTICConfig.paper(), col_embedding_mode="linear")        # no calibration
"""

from __future__ import annotations

import dataclasses
from typing import Any

from chorustic.class_tree import K_MAX

__all__ = ["MANTIS_SCALAR_SCALES", "MODEL_PRESETS", "ChorusTICConfig"]

#: Scales of the multi-scale scalar encoders of the patch tokenizer (Mantis/NuTime default, 9 decades).
MANTIS_SCALAR_SCALES: tuple[float, ...] = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3, 1e4)

_SAMPLING = ("coverage", "random")
_SLOT_PROJECTORS = ("linear", "mlp")
_COL_MODES = ("distribution_aware", "linear")


@dataclasses.dataclass(frozen=True)
class ChorusTICConfig:
    """Every architectural hyperparameter of ChorusTIC. Defaults are the released model's."""

    # --- signal level: patch tokenizer (paper App. B.2; Mantis TokenGeneratorUnit) -------------------
    seq_len: int = 512
    """L_0: every channel is linearly resampled to this length."""
    hidden_dim: int = 512
    """P: signal-encoder width."""
    num_patches: int = 32
    """M: non-overlapping patches per channel (patch size seq_len / num_patches)."""
    scalar_scales: tuple[float, ...] = MANTIS_SCALAR_SCALES
    hidden_dim_scalar_enc: int = 32
    epsilon_scalar_enc: float = 1.1

    # --- signal level: dual-axis encoder (App. B.3) ---------------------------------------------------
    num_dual_axis_layers: int = 3
    temporal_heads: int = 8
    channel_heads: int = 4
    temporal_mlp_dim: int = 512
    channel_mlp_dim: int = 512
    dual_axis_dropout: float = 0.1
    use_channel_axis_attention: bool = True
    """Ablation switch: False replaces every channel block by the identity (temporal blocks kept)."""

    # --- signal level: slot readout (shared summary token; Mantis ViT unit) ---------------------------
    readout_depth: int = 6
    readout_heads: int = 8
    readout_dim_head: int = 128
    readout_mlp_dim: int = 512
    readout_dropout: float = 0.1

    # --- RSSC (App. B.1, B.4) ----------------------------------------------------------------------
    num_groups: int = 4
    """G: sampled groups (views) per episode."""
    group_size: int = 4
    """S: slots per group (channels modelled jointly by channel attention)."""
    slot_dim: int = 32
    """d_s: width of one projected slot; d_h = G * S * d_s."""
    slot_projector: str = "linear"
    """"linear" = LayerNorm + Linear (released); "mlp" = LayerNorm, Linear, GELU, Dropout, Linear."""
    slot_projector_hidden: int = 256
    rssc_sampling: str = "coverage"
    """"coverage" (concatenated permutations, released) or "random" (i.i.d. with replacement)."""
    use_group_embedding: bool = True
    use_slot_embedding: bool = True
    rssc_output_norm: bool = True
    freeze_signal_encoder: bool = True
    """Released configuration: tokenizer, dual-axis encoder and readout frozen (eval mode, no grad)."""

    # --- task level (TabICL v1 layout; App. B.5-B.7) -------------------------------------------------
    max_classes: int = K_MAX
    """K_max: classes the decoder supports natively (more: hierarchical extension)."""
    embed_dim: int = 128
    """d_e: cell embedding width."""
    col_num_blocks: int = 3
    col_nhead: int = 4
    col_num_inds: int = 128
    row_num_blocks: int = 3
    row_nhead: int = 8
    row_num_cls: int = 4
    """K_cls: summary tokens per row; d_u = K_cls * d_e."""
    row_rope_base: float = 100000.0
    icl_num_blocks: int = 12
    icl_nhead: int = 4
    ff_factor: int = 2
    task_dropout: float = 0.0
    activation: str = "gelu"
    norm_first: bool = True
    col_embedding_mode: str = "distribution_aware"
    """Ablation switch: "linear" removes the task-conditioned column calibration (cell embedding only)."""
    context_standardization: bool = False
    """Not part of the released architecture (False there and in ``paper``). True: before the task level,
    every column of H is standardized with the mean and standard deviation of its context rows
    (``(h - mean) / (std + 1e-3)``, clipped to +-10), the per-episode analogue of the scaling TabICL's
    scikit-learn wrapper applies to tabular features. The CPU-trained ``small`` model uses it: trained
    from scratch, without a pretrained encoder, H varies across rows by ~0.1 % of its magnitude and a
    CPU-length run never leaves the label-prior solution (see models/chorustic-small/README.md)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "scalar_scales", tuple(float(s) for s in self.scalar_scales))
        problems = []
        if self.seq_len % self.num_patches:
            problems.append(f"seq_len {self.seq_len} is not a multiple of num_patches {self.num_patches}")
        for name, width, heads in (
            ("hidden_dim/temporal_heads", self.hidden_dim, self.temporal_heads),
            ("hidden_dim/channel_heads", self.hidden_dim, self.channel_heads),
            ("embed_dim/col_nhead", self.embed_dim, self.col_nhead),
            ("embed_dim/row_nhead", self.embed_dim, self.row_nhead),
            ("d_u/icl_nhead", self.d_u, self.icl_nhead),
        ):
            if heads <= 0 or width % heads:
                problems.append(f"{name}: {width} is not divisible by {heads}")
        if self.slot_projector not in _SLOT_PROJECTORS:
            problems.append(f"slot_projector {self.slot_projector!r} not in {_SLOT_PROJECTORS}")
        if self.rssc_sampling not in _SAMPLING:
            problems.append(f"rssc_sampling {self.rssc_sampling!r} not in {_SAMPLING}")
        if self.col_embedding_mode not in _COL_MODES:
            problems.append(f"col_embedding_mode {self.col_embedding_mode!r} not in {_COL_MODES}")
        if self.max_classes < 2:
            problems.append(f"max_classes must be >= 2, got {self.max_classes}")
        if (self.embed_dim // max(self.row_nhead, 1)) % 2:
            problems.append("row head dim (embed_dim / row_nhead) must be even for rotary positions")
        if problems:
            raise ValueError("invalid ChorusTICConfig: " + "; ".join(problems))

    # --- derived sizes ---------------------------------------------------------------------------
    @property
    def patch_size(self) -> int:
        return self.seq_len // self.num_patches

    @property
    def num_slots(self) -> int:
        """N_s = G * S."""
        return self.num_groups * self.group_size

    @property
    def d_h(self) -> int:
        """Width of the RSSC representation, independent of the channel count."""
        return self.num_slots * self.slot_dim

    @property
    def signal_dropout_in_training(self) -> bool:
        """True when training draws dropout masks in the signal encoder (trainable, with dropout): then
        the de-duplicating slot schedule is not exact and every slot is encoded on its own."""
        return not self.freeze_signal_encoder and (self.dual_axis_dropout > 0 or self.readout_dropout > 0)

    @property
    def d_u(self) -> int:
        """Width of the row representation (ICL model dimension)."""
        return self.row_num_cls * self.embed_dim

    # --- presets ---------------------------------------------------------------------------------
    @classmethod
    def paper(cls) -> ChorusTICConfig:
        """The released ChorusTIC (checkpoint step 6000) exactly."""
        return cls()

    @classmethod
    def small(cls) -> ChorusTICConfig:
        """A CPU-trainable ChorusTIC: same architecture, narrower and shallower, encoder trainable.

        About 1.1 M parameters (d_h = 128, d_u = 128); all slots, groups, the hierarchical extension
        and both ablation switches behave as in the paper configuration. Series are resampled to 128
        points in 16 patches: with a trainable tokenizer the convolution maps (L_0 x P per series, kept
        for the backward pass) dominate training memory and time (measured on 2 CPU cores, 12
        episodes x 64 rows x <= 6 channels: 14.0 s and 7.9 GB per step at L_0 = 512, 5.9 s at 128).
        Two heads (16-dim) in column distribution modeling and the row interaction: the same FLOPs as four
        8-dim heads, 26 % less time for the task level on a CPU (attention kernels are slow on 8-dim heads).
        """
        return cls(
            seq_len=128,
            num_patches=16,
            hidden_dim=64,
            num_dual_axis_layers=2,
            temporal_heads=4,
            channel_heads=2,
            temporal_mlp_dim=128,
            channel_mlp_dim=128,
            dual_axis_dropout=0.0,
            readout_depth=2,
            readout_heads=4,
            readout_dim_head=16,
            readout_mlp_dim=128,
            readout_dropout=0.0,
            slot_dim=8,
            slot_projector_hidden=64,
            freeze_signal_encoder=False,
            context_standardization=True,
            embed_dim=32,
            col_num_blocks=2,
            col_nhead=2,
            col_num_inds=32,
            row_num_blocks=2,
            row_nhead=2,
            icl_num_blocks=6,
            icl_nhead=4,
        )

    @classmethod
    def base(cls) -> ChorusTICConfig:
        """A GPU-trainable ChorusTIC sized for about half an hour of one H100 (``chorustic pretrain --plan``).

        The released architecture at half width and about a seventh of the parameters (7.7 M; fp16 weights
        about 15 MB): signal width 256 over the same 32 patches of 512-sample inputs, 2 dual-axis layers,
        a 2-layer readout, 16-dim slots (d_h = 256), a task level of width 64 (d_u = 256) with an 8-block
        ICL. Dropout off: the prior is infinite, and without dropout identical slot groups are encoded once
        (the de-duplicating schedule), several times less signal-encoder work per episode. Trained from
        scratch, so H is standardized by its context rows as in ``small``.
        """
        return cls(
            hidden_dim=256,
            num_dual_axis_layers=2,
            temporal_heads=4,
            channel_heads=4,
            temporal_mlp_dim=512,
            channel_mlp_dim=512,
            dual_axis_dropout=0.0,
            readout_depth=2,
            readout_heads=4,
            readout_dim_head=64,
            readout_mlp_dim=512,
            readout_dropout=0.0,
            slot_dim=16,
            slot_projector_hidden=128,
            freeze_signal_encoder=False,
            context_standardization=True,
            embed_dim=64,
            col_num_blocks=2,
            col_nhead=4,
            col_num_inds=64,
            row_num_blocks=2,
            row_nhead=4,
            icl_num_blocks=8,
            icl_nhead=4,
        )

    @classmethod
    def tiny(cls) -> ChorusTICConfig:
        """A few-thousand-parameter configuration for unit tests (runs in milliseconds)."""
        return cls(
            hidden_dim=16,
            num_dual_axis_layers=1,
            temporal_heads=2,
            channel_heads=2,
            temporal_mlp_dim=16,
            channel_mlp_dim=16,
            dual_axis_dropout=0.0,
            readout_depth=1,
            readout_heads=2,
            readout_dim_head=8,
            readout_mlp_dim=16,
            readout_dropout=0.0,
            hidden_dim_scalar_enc=8,
            slot_dim=2,
            slot_projector_hidden=16,
            freeze_signal_encoder=False,
            embed_dim=8,
            col_num_blocks=1,
            col_nhead=2,
            col_num_inds=4,
            row_num_blocks=1,
            row_nhead=2,
            icl_num_blocks=2,
            icl_nhead=2,
        )

    # --- (de)serialisation -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["scalar_scales"] = list(self.scalar_scales)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ChorusTICConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown ChorusTICConfig keys: {unknown}; known keys: {sorted(known)}")
        return cls(**d)


#: The named configurations (``chorustic pretrain --model-config NAME``).
MODEL_PRESETS = {"paper": ChorusTICConfig.paper, "base": ChorusTICConfig.base, "small": ChorusTICConfig.small,
                 "tiny": ChorusTICConfig.tiny}
