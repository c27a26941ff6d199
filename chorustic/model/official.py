"""The released checkpoint's format: key map, hyperparameter parsing, strict loading.

The official ``ChorusTIC.ckpt`` (Hugging Face ``JTF2000/ChorusTIC``) is a ``torch.save`` pickle,
``{"state_dict": ..., "config": ...}`` or a bare state dict, whose names are those of the authors'
modules; ``model_hparams_latest.json`` next to it holds the hyperparameters. This module maps the
names onto ours, one prefix each:

==========================================================  ==========================================
official                                                    ChorusTIC (this package)
==========================================================  ==========================================
``mantis_model.tokgen_unit.``                               ``signal_encoder.patch_tokenizer.``
``mantis_model.dual_axis_encoder.``                         ``signal_encoder.dual_axis_encoder.``
``mantis_model.vit_unit.``                                  ``signal_encoder.slot_readout.``
``pre_mantis_encoder.`` (``group_embedding`` (1,1,G,1,P),   ``rssc.`` (``group_embedding`` (G,P),
``slot_embedding`` (1,1,1,S,P))                             ``slot_embedding`` (S,P))
``task_level_chorus.column_distribution_modeling.``         ``column_distribution_modeling.``
``task_level_chorus.row_wise_feature_interaction.``         ``row_interaction.``
``task_level_chorus.in_context_learning.``                  ``icl.``
``mantis_model.channel_pool.``, ``mantis_model.prj.``       not used by the ChorusTIC forward: checked
                                                            (present, right shapes) and dropped
==========================================================  ==========================================

Loading is strict like the official loader (``--strict_rssc_encoder`` and ``--strict_task_level_chorus``):
every tensor of the file is consumed, every tensor of the model is provided, shapes match; otherwise a
:class:`CheckpointError` lists the missing, unexpected and mis-shaped keys. ``module.`` and
``_orig_mod.`` are removed from every key first (DDP / ``torch.compile`` wrappers).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from chorustic.hub import resolve_checkpoint
from chorustic.model.config import MANTIS_SCALAR_SCALES, ChorusTICConfig

__all__ = [
    "OFFICIAL_PREFIX_MAP",
    "CheckpointError",
    "config_from_official_hparams",
    "find_official_hparams",
    "load_official_checkpoint",
    "load_official_file",
    "load_task_level_from_tabicl",
    "official_key_shapes",
    "official_to_ours",
    "ours_to_official",
    "read_checkpoint_file",
]

HPARAMS_FILENAME = "model_hparams_latest.json"


class CheckpointError(ValueError):
    """A checkpoint does not fit the model (missing/unexpected keys, shapes, configuration)."""


OFFICIAL_PREFIX_MAP: tuple[tuple[str, str], ...] = (
    ("mantis_model.tokgen_unit.", "signal_encoder.patch_tokenizer."),
    ("mantis_model.dual_axis_encoder.", "signal_encoder.dual_axis_encoder."),
    ("mantis_model.vit_unit.", "signal_encoder.slot_readout."),
    ("pre_mantis_encoder.", "rssc."),
    ("task_level_chorus.column_distribution_modeling.", "column_distribution_modeling."),
    ("task_level_chorus.row_wise_feature_interaction.", "row_interaction."),
    ("task_level_chorus.in_context_learning.", "icl."),
)
UNUSED_OFFICIAL_PREFIXES = ("mantis_model.channel_pool.", "mantis_model.prj.")

#: TabICL v1 / v1.1 checkpoint prefixes of the three task-level stages.
TABICL_PREFIX_MAP: tuple[tuple[str, str], ...] = (
    ("col_embedder.", "column_distribution_modeling."),
    ("row_interactor.", "row_interaction."),
    ("icl_predictor.", "icl."),
    ("column_distribution_modeling.", "column_distribution_modeling."),
    ("row_wise_feature_interaction.", "row_interaction."),
    ("in_context_learning.", "icl."),
)
_TABICL_WRAPPERS = (
    "task_level_chorus.",
    "tabicl_model.",
    "tabicl.",
    "raw_model.",
    "model.",
    "module.",
    "_orig_mod.",
)


def _clean_key(key: str) -> str:
    return key.replace("module.", "").replace("_orig_mod.", "")


def official_to_ours(key: str) -> str | None:
    """Our name of an official key; ``None`` for the unused tensors; ``KeyError`` for unknown names."""
    for prefix in UNUSED_OFFICIAL_PREFIXES:
        if key.startswith(prefix):
            return None
    for off, ours in OFFICIAL_PREFIX_MAP:
        if key.startswith(off):
            return ours + key[len(off) :]
    raise KeyError(key)


def ours_to_official(key: str) -> str:
    for off, ours in OFFICIAL_PREFIX_MAP:
        if key.startswith(ours):
            return off + key[len(ours) :]
    raise KeyError(key)


def _official_shape(our_key: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    if our_key == "rssc.group_embedding":
        return (1, 1, shape[0], 1, shape[1])
    if our_key == "rssc.slot_embedding":
        return (1, 1, 1, shape[0], shape[1])
    return shape


def unused_official_shapes(config: ChorusTICConfig) -> dict[str, tuple[int, ...]]:
    """The gated-mean channel pool and ``prj`` head of the released encoder (never used by RSSC)."""
    p = config.hidden_dim
    return {
        "mantis_model.channel_pool.gate.0.weight": (p,),
        "mantis_model.channel_pool.gate.0.bias": (p,),
        "mantis_model.channel_pool.gate.1.weight": (p, p),
        "mantis_model.channel_pool.gate.1.bias": (p,),
        "mantis_model.channel_pool.gate.3.weight": (1, p),
        "mantis_model.channel_pool.gate.3.bias": (1,),
        "mantis_model.prj.0.weight": (p,),
        "mantis_model.prj.0.bias": (p,),
        "mantis_model.prj.1.weight": (p, p),
        "mantis_model.prj.1.bias": (p,),
    }


def official_key_shapes(model_or_config, channel_pool_type: str = "gated_mean") -> dict[str, tuple[int, ...]]:
    """Every key (and shape) an official state dict of this architecture holds."""
    from chorustic.model.chorustic import ChorusTIC

    model = model_or_config if isinstance(model_or_config, ChorusTIC) else None
    if model is None:
        model = ChorusTIC(model_or_config)
    shapes = {ours_to_official(k): _official_shape(k, tuple(v.shape)) for k, v in model.state_dict().items()}
    if channel_pool_type == "gated_mean":
        shapes.update(unused_official_shapes(model.config))
    else:
        shapes.update(
            {
                k: v
                for k, v in unused_official_shapes(model.config).items()
                if k.startswith("mantis_model.prj.")
            }
        )
    return shapes


# ----------------------------------------------------------------------------- hyperparameters
def _dig(d: Mapping, *path: str) -> Any:
    for p in path:
        if not isinstance(d, Mapping) or p not in d:
            return None
        d = d[p]
    return d


def config_from_official_hparams(
    hparams: Mapping[str, Any],
    mantis_args: Mapping[str, Any] | None = None,
    task_override: Mapping[str, Any] | None = None,
) -> ChorusTICConfig:
    """Our config from an official ``model_hparams_latest.json`` (as a dict).

    ``mantis_args``: MantisDA constructor arguments the JSON does not carry (readout depth/heads/...;
    the official loader relies on their code defaults, which are ours). ``task_override``: a task-level
    section stored inside the checkpoint, which takes precedence (as in the official loader). Also
    accepts the golden-vector ``config.json`` layout (``{"model_hparams": ..., "mantis_da_constructor_args_not_in_hparams_json": ...}``).
    """
    if "model_hparams" in hparams and isinstance(hparams["model_hparams"], Mapping):
        mantis_args = mantis_args or hparams.get("mantis_da_constructor_args_not_in_hparams_json")
        hparams = hparams["model_hparams"]
    sig = (
        _dig(hparams, "signal_level_chorus")
        or _dig(hparams, "model_config", "signal_level_chorus")
        or _dig(hparams, "mantis")
        or _dig(hparams, "model_config", "mantis")
    )
    task = (
        _dig(hparams, "task_level_chorus")
        or _dig(hparams, "model_config", "task_level_chorus")
        or _dig(hparams, "icl_predictor", "config")
        or _dig(hparams, "orion", "icl_predictor", "config")
        or _dig(hparams, "model_config", "icl_predictor")
    )
    if sig is None:
        raise CheckpointError(
            "hyperparameters have no signal-level section ('signal_level_chorus' or 'mantis')"
        )
    if str(sig.get("arch", "da")) != "da" or not sig.get("use_dual_axis", True):
        raise CheckpointError(
            f"only the dual-axis signal encoder (arch='da') is supported, got arch={sig.get('arch')!r}"
        )
    kw: dict[str, Any] = {}
    for ours, theirs in (
        ("seq_len", "seq_len"),
        ("hidden_dim", "hidden_dim"),
        ("num_patches", "num_patches"),
        ("num_dual_axis_layers", "num_dual_axis_layers"),
        ("temporal_heads", "temporal_heads"),
        ("channel_heads", "channel_heads"),
        ("temporal_mlp_dim", "temporal_mlp_dim"),
        ("channel_mlp_dim", "channel_mlp_dim"),
        ("dual_axis_dropout", "dual_axis_dropout"),
        ("use_channel_axis_attention", "use_channel_axis_attention"),
    ):
        if theirs in sig:
            kw[ours] = sig[theirs]
    agg = sig.get("channel_set_aggregator") or {}
    if agg and agg.get("type", "random_subchannel_slot_concat") != "random_subchannel_slot_concat":
        raise CheckpointError(f"channel_set_aggregator type {agg.get('type')!r} is not RSSC")
    rssc = agg.get("random_subchannel_slot_concat") or {}
    for ours, theirs in (
        ("num_groups", "num_groups"),
        ("group_size", "group_size"),
        ("slot_dim", "slot_dim"),
        ("slot_projector", "slot_projector_type"),
        ("rssc_sampling", "sampling"),
        ("use_group_embedding", "use_group_embedding"),
        ("use_slot_embedding", "use_slot_embedding"),
        ("rssc_output_norm", "output_norm"),
        ("freeze_signal_encoder", "freeze_mantis"),
    ):
        if theirs in rssc:
            kw[ours] = rssc[theirs]
    margs = dict(mantis_args or {})
    for src in (sig, margs):
        for ours, theirs in (
            ("readout_depth", "transf_depth"),
            ("readout_heads", "transf_num_heads"),
            ("readout_dim_head", "transf_dim_head"),
            ("readout_mlp_dim", "transf_mlp_dim"),
            ("readout_dropout", "transf_dropout"),
            ("hidden_dim_scalar_enc", "hidden_dim_scalar_enc"),
            ("epsilon_scalar_enc", "epsilon_scalar_enc"),
            ("scalar_scales", "scalar_scales"),
        ):
            if theirs in src and src[theirs] is not None:
                kw[ours] = src[theirs]
    task = dict(task or {})
    task.update(dict(task_override or {}))
    aliases = {"nhead": "icl_nhead", "num_blocks": "icl_num_blocks", "dropout": "task_dropout"}
    for theirs, value in task.items():
        ours = aliases.get(theirs, theirs)
        if ours in (
            "max_classes",
            "embed_dim",
            "col_num_blocks",
            "col_nhead",
            "col_num_inds",
            "row_num_blocks",
            "row_nhead",
            "row_num_cls",
            "row_rope_base",
            "icl_num_blocks",
            "icl_nhead",
            "ff_factor",
            "task_dropout",
            "activation",
            "norm_first",
            "col_embedding_mode",
        ):
            kw[ours] = value
    cfg = ChorusTICConfig(**kw)
    if "input_dim" in rssc and int(rssc["input_dim"]) != cfg.hidden_dim:
        raise CheckpointError(f"RSSC input_dim {rssc['input_dim']} != hidden_dim {cfg.hidden_dim}")
    if "output_dim" in rssc and int(rssc["output_dim"]) != cfg.d_h:
        raise CheckpointError(f"RSSC output_dim {rssc['output_dim']} != G*S*slot_dim = {cfg.d_h}")
    return cfg


def find_official_hparams(ckpt_path: Path) -> Path | None:
    """``model_hparams_latest.json`` next to the checkpoint, in its parent, or two levels up."""
    for folder in (ckpt_path.parent, ckpt_path.parent.parent, ckpt_path.parent.parent.parent):
        cand = folder / HPARAMS_FILENAME
        if cand.is_file():
            return cand
    return None


# ----------------------------------------------------------------------------- file reading
def read_checkpoint_file(path: Path) -> Any:
    """A ``.safetensors`` file (dict of tensors) or a torch pickle (loaded with ``weights_only``)."""
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint file {path} does not exist")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # pickles with non-tensor objects in their config
        if os.environ.get("CHORUSTIC_ALLOW_UNSAFE_PICKLE", "1") == "0":
            raise CheckpointError(
                f"{path} is not loadable with torch.load(weights_only=True) ({exc}); set "
                "CHORUSTIC_ALLOW_UNSAFE_PICKLE=1 to trust this file"
            ) from exc
        warnings.warn(
            f"{path}: falling back to torch.load(weights_only=False) (the file holds non-tensor objects); "
            "only load checkpoints from sources you trust",
            stacklevel=2,
        )
        return torch.load(path, map_location="cpu", weights_only=False)


def _split_state_dict(obj: Any, source: str) -> tuple[dict[str, Tensor], dict]:
    if isinstance(obj, Mapping):
        for key in ("state_dict", "model_state_dict", "model"):
            if key in obj and isinstance(obj[key], Mapping):
                cfg = obj.get("config") if isinstance(obj.get("config"), Mapping) else {}
                return {str(k): v for k, v in obj[key].items()}, dict(cfg or {})
        if obj and all(torch.is_tensor(v) for v in obj.values()):
            return {str(k): v for k, v in obj.items()}, {}
    raise CheckpointError(
        f"{source}: no state dict found (expected a dict of tensors or {{'state_dict': ...}})"
    )


def _fmt_keys(keys, limit: int = 25) -> str:
    keys = sorted(keys)
    head = ", ".join(keys[:limit])
    return head + (f", ... ({len(keys) - limit} more)" if len(keys) > limit else "")


#: What to do when a released-format checkpoint does not match the architecture its hyperparameters
#: describe, in the words of the config (a method run's ``params``) and of the Python API.
HPARAMS_ADVICE = (
    f"check the hyperparameters: give the {HPARAMS_FILENAME} that belongs to this checkpoint, in the method "
    "run's config as `params: {hparams_json: <file>}` (in Python: hparams_json=<file>)"
)


def _mismatch_error(source: str, missing, unexpected, shapes, advice: str = HPARAMS_ADVICE) -> CheckpointError:
    """The error of a strict load that does not match: what and what to do first (a long message is cut in
    the middle where it is recorded), then the keys and shapes."""
    lines = [f"{source}: the state dict does not match the ChorusTIC architecture (strict loading): {advice}."]
    if missing:
        lines.append(f"  missing keys ({len(missing)}): {_fmt_keys(missing)}")
    if unexpected:
        lines.append(f"  unexpected keys ({len(unexpected)}): {_fmt_keys(unexpected)}")
    if shapes:
        lines.append(
            f"  shape mismatches ({len(shapes)}): "
            + "; ".join(f"{k}: checkpoint {a} vs model {b}" for k, a, b in shapes[:25])
        )
    return CheckpointError("\n".join(lines))


# ----------------------------------------------------------------------------- official loader
def load_official_checkpoint(
    path_or_state_dict, hparams_json=None, *, map_location: str | torch.device = "cpu"
):
    """Build a :class:`~chorustic.model.ChorusTIC` from the released checkpoint format, strictly.

    ``path_or_state_dict``: a path (``.ckpt``/``.pt`` pickle or ``.safetensors``), an ``hf://`` spec
    (resolved through the Hugging Face cache) or an in-memory state dict / ``{"state_dict": ...}``.
    ``hparams_json``: path, ``hf://`` spec or dict of ``model_hparams_latest.json`` (default: looked up
    next to the checkpoint, then one and two directories up; without it the paper configuration is
    assumed and every shape is still checked). Returns the model in eval mode. Specs are resolved here,
    then :func:`load_official_file` loads the local files.
    """
    if isinstance(path_or_state_dict, (str, os.PathLike)):
        path_or_state_dict = resolve_checkpoint(path_or_state_dict)
    if isinstance(hparams_json, (str, os.PathLike)):
        hparams_json = resolve_checkpoint(hparams_json)
    return load_official_file(path_or_state_dict, hparams_json, map_location=map_location)


def load_official_file(
    path_or_state_dict, hparams_json=None, *, map_location: str | torch.device = "cpu"
):
    """:func:`load_official_checkpoint` on a local file (a :class:`~pathlib.Path`) or an in-memory state
    dict; ``hparams_json`` a local JSON file, a dict or None. Nothing is resolved here."""
    from chorustic.model.chorustic import ChorusTIC

    path: Path | None = None
    if isinstance(path_or_state_dict, (str, os.PathLike)):
        path = Path(path_or_state_dict)
        obj, source = read_checkpoint_file(path), str(path)
    else:
        obj, source = path_or_state_dict, "state dict"
    raw_sd, ckpt_cfg = _split_state_dict(obj, source)
    sd = {_clean_key(k): v for k, v in raw_sd.items()}

    hparams: Mapping | None = None
    hparams_src = None
    if isinstance(hparams_json, Mapping):
        hparams, hparams_src = hparams_json, "dict"
    elif hparams_json is not None:
        hp = Path(hparams_json)
        hparams, hparams_src = json.loads(hp.read_text()), str(hp)
    elif path is not None:
        hp = find_official_hparams(path)
        if hp is not None:
            hparams, hparams_src = json.loads(hp.read_text()), str(hp)
    task_override = ckpt_cfg.get("task_level_chorus") or ckpt_cfg.get("tabicl")
    if (
        hparams is None
        and isinstance(ckpt_cfg, Mapping)
        and (ckpt_cfg.get("signal_level_chorus") or ckpt_cfg.get("model_config"))
    ):
        hparams, hparams_src = ckpt_cfg, "checkpoint config"
    if hparams is not None:
        config = config_from_official_hparams(hparams, task_override=task_override)
    else:
        warnings.warn(
            f"{source}: no {HPARAMS_FILENAME} found; assuming the paper configuration", stacklevel=2
        )
        config = ChorusTICConfig.paper()
        hparams_src = "paper configuration (assumed)"

    pool_type = "gated_mean"
    sig = None
    if hparams is not None:
        h = hparams.get("model_hparams", hparams)
        sig = _dig(h, "signal_level_chorus") or _dig(h, "model_config", "signal_level_chorus")
    if sig and sig.get("channel_pool_type"):
        pool_type = str(sig["channel_pool_type"])
    elif any(k.startswith("mantis_model.channel_pool.") for k in sd) and not any(
        k.startswith("mantis_model.channel_pool.gate.") for k in sd
    ):
        pool_type = "attention"

    model = ChorusTIC(config)
    expected = official_key_shapes(model, pool_type)
    provided = set(sd)
    missing = sorted(set(expected) - provided)
    unexpected = sorted(
        k
        for k in provided - set(expected)
        if not (pool_type != "gated_mean" and k.startswith("mantis_model.channel_pool."))
    )
    shapes = [
        (k, tuple(sd[k].shape), expected[k])
        for k in sorted(provided & set(expected))
        if tuple(sd[k].shape) != expected[k]
    ]
    if missing or unexpected or shapes:
        raise _mismatch_error(source, missing, unexpected, shapes)

    ours: dict[str, Tensor] = {}
    own = model.state_dict()
    dropped = []
    for k, v in sd.items():
        target = official_to_ours(k)
        if target is None:
            dropped.append(k)
            continue
        ours[target] = v.reshape(own[target].shape).to(own[target].dtype)
    model.load_state_dict(ours, strict=True)
    model.to(map_location)
    model.eval()
    model.provenance = {
        "format": "official",
        "source": source,
        "hparams": hparams_src,
        "unused_official_tensors": len(dropped),
    }
    return model


# ----------------------------------------------------------------------------- TabICL task level
_TABICL_V1_CONFIG_KEYS = {
    "max_classes": "max_classes",
    "embed_dim": "embed_dim",
    "col_num_blocks": "col_num_blocks",
    "col_nhead": "col_nhead",
    "col_num_inds": "col_num_inds",
    "row_num_blocks": "row_num_blocks",
    "row_nhead": "row_nhead",
    "row_num_cls": "row_num_cls",
    "row_rope_base": "row_rope_base",
    "icl_num_blocks": "icl_num_blocks",
    "icl_nhead": "icl_nhead",
    "ff_factor": "ff_factor",
    "activation": "activation",
    "norm_first": "norm_first",
}


#: TabICL v2 settings and the values under which a v2 model has the v1 architecture.
_TABICL_V1_COMPATIBLE = {
    "col_affine": lambda v: v is True,
    "col_feature_group": lambda v: v in (False, None),
    "col_target_aware": lambda v: v in (False, None),
    "col_ssmax": lambda v: v in (False, None, "none"),
    "icl_ssmax": lambda v: v in (False, None, "none"),
    "bias_free_ln": lambda v: v in (False, None),
    "row_rope_interleaved": lambda v: v in (True, None),
}


def _strip_wrappers(key: str) -> str:
    changed = True
    while changed:
        changed = False
        for w in _TABICL_WRAPPERS:
            if key.startswith(w):
                key, changed = key[len(w) :], True
    return key


def load_task_level_from_tabicl(model, path_or_state_dict) -> dict[str, Any]:
    """Load the task level (column, row, ICL stages) of ``model`` from a TabICL v1/v1.1 checkpoint.

    Accepts ``{"config": ..., "state_dict": ...}`` files (``tabicl-classifier-v1.1-0506.ckpt``), bare
    state dicts, and wrapped names (``tabicl_model.``, ``tabicl.``, ``task_level_chorus.``, ``module.``).
    Strict over the task level: every task-level tensor of the model must be provided with its shape,
    and every task-level tensor of the file consumed; the stored config must agree with the model's
    (heads cannot be seen from shapes). TabICL v2 checkpoints (tabicl >= 2.0) have another
    architecture and are rejected. Returns a summary dict (also recorded in ``model.provenance``).
    """
    if isinstance(path_or_state_dict, (str, os.PathLike)):
        path = resolve_checkpoint(path_or_state_dict)
        obj, source = read_checkpoint_file(path), str(path)
    else:
        obj, source = path_or_state_dict, "state dict"
    raw_sd, cfg = _split_state_dict(obj, source)
    if isinstance(cfg.get("tabicl"), Mapping):
        cfg = dict(cfg["tabicl"])

    stripped = [_strip_wrappers(_clean_key(str(k))) for k in raw_sd]
    v2_markers = [
        k
        for k in stripped
        if "ssmax" in k
        or "quantile" in k
        or (k.startswith(("col_embedder.", "column_distribution_modeling.")) and "y_encoder" in k)
    ]
    v2_settings = [
        f"{k}={cfg[k]!r}" for k, ok in _TABICL_V1_COMPATIBLE.items() if k in cfg and not ok(cfg[k])
    ]
    if v2_markers or v2_settings:
        raise CheckpointError(
            f"{source} is a TabICL v2 checkpoint ({', '.join(v2_settings + v2_markers[:3])}); its architecture "
            "differs from ChorusTIC's task level. Use a TabICL v1/v1.1 checkpoint "
            "(tabicl-classifier-v1-0208.ckpt or tabicl-classifier-v1.1-0506.ckpt)"
        )
    mismatched = []
    mc = model.config
    for theirs, ours in _TABICL_V1_CONFIG_KEYS.items():
        if theirs in cfg and cfg[theirs] is not None and cfg[theirs] != getattr(mc, ours):
            if isinstance(cfg[theirs], (int, float)) and float(cfg[theirs]) == float(getattr(mc, ours)):
                continue
            mismatched.append(f"{theirs}: checkpoint {cfg[theirs]!r} vs model {getattr(mc, ours)!r}")
    if mismatched:
        raise CheckpointError(
            f"{source}: TabICL configuration differs from the model's task level: " + "; ".join(mismatched)
        )

    task_prefixes = ("column_distribution_modeling.", "row_interaction.", "icl.")
    own = {k: v for k, v in model.state_dict().items() if k.startswith(task_prefixes)}
    mapped: dict[str, Tensor] = {}
    unexpected = []
    for k, v in raw_sd.items():
        key = _strip_wrappers(_clean_key(str(k)))
        if key.startswith(("mantis_model.", "pre_mantis_encoder.")):
            continue  # signal level of a ChorusTIC checkpoint: not part of the task level
        for theirs, ours in TABICL_PREFIX_MAP:
            if key.startswith(theirs):
                mapped[ours + key[len(theirs) :]] = v
                break
        else:
            unexpected.append(str(k))
    unexpected += [k for k in mapped if k not in own]
    missing = sorted(set(own) - set(mapped))
    shapes = [
        (k, tuple(mapped[k].shape), tuple(own[k].shape))
        for k in sorted(set(own) & set(mapped))
        if tuple(mapped[k].shape) != tuple(own[k].shape)
    ]
    if missing or unexpected or shapes:
        raise _mismatch_error(source, missing, unexpected, shapes,
                              "use a TabICL v1/v1.1 checkpoint of the size of the model's task level")
    model.load_state_dict({k: mapped[k].to(own[k].dtype) for k in own}, strict=False)
    info = {"task_level_source": source, "task_level_format": "tabicl-v1", "task_level_tensors": len(own)}
    model.provenance = {**getattr(model, "provenance", {}), **info}
    return info


__all__ += ["HPARAMS_FILENAME", "TABICL_PREFIX_MAP", "UNUSED_OFFICIAL_PREFIXES", "unused_official_shapes"]
_ = MANTIS_SCALAR_SCALES  # re-exported through config; kept for readers of this module
